// SPDX-License-Identifier: MIT
#include "context_cache.h"

#include <algorithm>

#include "common/check.h"
#include "hwmodel/noise.h"
#include "pcie_link.h"

namespace ndksim::hw {

ContextCache::ContextCache(std::uint32_t capacity, std::uint32_t ways, std::uint32_t entry_bytes, PcieLink* pcie,
                           std::uint64_t& hits, std::uint64_t& misses)
    : entries_(capacity),
      ways_(capacity == 0 ? 1 : ways),
      sets_(capacity == 0 ? 0 : capacity / ways),
      entry_bytes_(entry_bytes),
      pcie_(pcie),
      hits_(hits),
      misses_(misses) {
  NDKSIM_CHECK(capacity == 0 || (ways >= 1 && capacity % ways == 0 && pcie != nullptr));
}

const ContextCache::Entry* ContextCache::SetOf(std::uint64_t key) const {
  // A mixing hash: consecutive numbers (QPNs, key indexes) land in sets as if at random, so some
  // sets take two keys while others take none, as in a hashed hardware index.
  return &entries_[static_cast<std::size_t>(MixBits(key) % sets_) * ways_];
}

ContextCache::Entry* ContextCache::SetOf(std::uint64_t key) {
  return const_cast<Entry*>(std::as_const(*this).SetOf(key));
}

TimePoint ContextCache::Lookup(std::uint64_t key, TimePoint now) {
  Entry* set = SetOf(key);
  Entry* victim = set;
  ++lookups_;
  for (std::uint32_t w = 0; w < ways_; ++w) {
    Entry& e = set[w];
    if (e.used != 0 && e.key == key) {
      ++hits_;
      e.used = lookups_;
      return std::max(now, e.ready);
    }
    if (e.used < victim->used) victim = &e;  // an empty entry (0) first, else the least recently used
  }
  ++misses_;
  victim->key = key;
  victim->used = lookups_;
  victim->ready = pcie_->DmaReadArrival(entry_bytes_);
  return std::max(now, victim->ready);
}

void ContextCache::Forget(std::uint64_t key) {
  if (sets_ == 0) return;
  Entry* set = SetOf(key);
  for (std::uint32_t w = 0; w < ways_; ++w) {
    if (set[w].used != 0 && set[w].key == key) set[w] = Entry{};
  }
}

bool ContextCache::Holds(std::uint64_t key) const {
  if (sets_ == 0) return false;
  const Entry* set = SetOf(key);
  return std::any_of(set, set + ways_, [&](const Entry& e) { return e.used != 0 && e.key == key; });
}

}  // namespace ndksim::hw
