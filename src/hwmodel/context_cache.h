// SPDX-License-Identifier: MIT
// On-NIC context caches. An RNIC keeps the state of its objects (QP contexts, memory-key entries,
// page translations) in host memory, and the entries it used last in an on-chip cache. A lookup
// that misses reads the entry over PCIe before the work that needed it can go on, so a NIC that
// cycles through more QPs than its cache holds spends PCIe reads, read tags and time on its misses
// (Kalia et al., ATC 2016; the rc-swarm QP-scalability experiment of FaSST, OSDI 2016).
//
// ContextCache is one such cache: `capacity` entries in sets of `ways`, each entry named by a
// 64-bit key. A key's set is a hash of the key; within its set, a miss replaces the least recently
// used entry. So keys that share a set evict each other before the cache as a whole is full, and
// misses grow gradually with the number of keys in use, as in a hardware cache. A miss issues the
// fill, a DMA read of `entry_bytes`, at once; a lookup of an entry whose fill is still under way
// waits for that fill, it issues no second one. The storage is sized at construction: a lookup
// allocates nothing and costs a scan of one set. Capacity 0 means every entry is on chip (no cache
// is modelled).
#pragma once

#include <cstdint>
#include <vector>

#include "ndksim/time.h"

namespace ndksim::hw {

class PcieLink;

class ContextCache {
 public:
  // `capacity` is a multiple of `ways` (or 0). Fills are DMA reads of `entry_bytes` over `pcie`.
  // Each lookup adds one to `hits` or `misses` (the owner's counters).
  ContextCache(std::uint32_t capacity, std::uint32_t ways, std::uint32_t entry_bytes, PcieLink* pcie,
               std::uint64_t& hits, std::uint64_t& misses);

  // When the entry `key` is on chip for work that needs it at `now`: `now` on a hit (or when the
  // fill already under way lands); on a miss, when the fill issued now lands.
  TimePoint Access(std::uint64_t key, TimePoint now) { return sets_ == 0 ? now : Lookup(key, now); }
  // Forgets `key` (its object was destroyed): a later object that reuses the key misses.
  void Forget(std::uint64_t key);
  // False when the cache has no entries: every entry is on chip.
  bool Enabled() const { return sets_ != 0; }
  // Whether `key` is in the cache now (whether or not its fill has landed).
  bool Holds(std::uint64_t key) const;

 private:
  struct Entry {
    std::uint64_t key = 0;
    std::uint64_t used = 0;  // the lookup count at its last use; 0: the entry is empty
    TimePoint ready{};       // its fill lands then
  };
  TimePoint Lookup(std::uint64_t key, TimePoint now);
  Entry* SetOf(std::uint64_t key);
  const Entry* SetOf(std::uint64_t key) const;

  std::vector<Entry> entries_;  // set-major
  std::uint32_t ways_;
  std::uint32_t sets_;
  std::uint32_t entry_bytes_;
  PcieLink* pcie_;
  std::uint64_t lookups_ = 0;
  std::uint64_t& hits_;
  std::uint64_t& misses_;
};

}  // namespace ndksim::hw
