// SPDX-License-Identifier: MIT
// Memory token table, the protection check in the order of the numbered checks, and the memory
// operations (fast register, bind, invalidate) that make entries valid or invalid.
#include "translation.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "hwmodel/noise.h"

namespace ndksim::hw {

namespace {
constexpr std::uint64_t kPageBytes = 4096;  // NDK logical pages (ref §2.3)
// A translation-cache miss reads one 64-B line: an MPT entry, or the MTT entries of 8 pages.
constexpr std::uint32_t kTranslationLineBytes = 64;
constexpr std::uint64_t kPagesPerMttLine = 8;
constexpr std::uint32_t kRemoteRights = access::kRemoteRead | access::kRemoteWrite;
}  // namespace

std::string_view Name(TranslationOutcome o) {
  switch (o) {
    case TranslationOutcome::kOk: return "ok";
    case TranslationOutcome::kBadIndex: return "bad-index";
    case TranslationOutcome::kKeyMismatch: return "key-mismatch";
    case TranslationOutcome::kInvalid: return "invalid";
    case TranslationOutcome::kPdMismatch: return "pd-mismatch";
    case TranslationOutcome::kAccessDenied: return "access-denied";
    case TranslationOutcome::kOutOfBounds: return "out-of-bounds";
  }
  return "?";
}

std::string_view Name(MemoryOpOutcome o) {
  switch (o) {
    case MemoryOpOutcome::kOk: return "ok";
    case MemoryOpOutcome::kBadKey: return "bad-key";
    case MemoryOpOutcome::kWrongKind: return "wrong-kind";
    case MemoryOpOutcome::kNotValid: return "not-valid";
    case MemoryOpOutcome::kPdMismatch: return "pd-mismatch";
    case MemoryOpOutcome::kAccessDenied: return "access-denied";
    case MemoryOpOutcome::kTooManyPages: return "too-many-pages";
    case MemoryOpOutcome::kOutOfBounds: return "out-of-bounds";
  }
  return "?";
}

Translation::Translation(Nic& nic, std::uint64_t seed)
    : nic_(nic),
      mpt_(std::make_unique<ContextCache>(nic.Profile().mpt_cache_entries, nic.Profile().translation_cache_ways,
                                          kTranslationLineBytes, &nic.Pcie(), nic.MutableCounters().mpt_hits,
                                          nic.MutableCounters().mpt_misses)),
      mtt_(std::make_unique<ContextCache>(nic.Profile().mtt_cache_entries, nic.Profile().translation_cache_ways,
                                          kTranslationLineBytes, &nic.Pcie(), nic.MutableCounters().mtt_hits,
                                          nic.MutableCounters().mtt_misses)) {
  entries_.resize(1);  // index 0 reserved: a zero token never matches
  // Key bytes start from a seeded value so tokens differ between seeds but not between runs.
  entries_[0].key = static_cast<std::uint8_t>(seed * 0x9e3779b97f4a7c15ull >> 56);
}

// ---- table management ----------------------------------------------------------------------------

CommandStatus Translation::AllocateIndex(std::uint32_t* index, std::uint32_t* generation) {
  if (!free_indices_.empty()) {
    // Lowest free index first: deterministic and compact.
    auto it = std::min_element(free_indices_.begin(), free_indices_.end());
    *index = *it;
    free_indices_.erase(it);
  } else {
    if (entries_.size() > nic_.Profile().max_mrs) return CommandStatus::kNoResources;
    *index = static_cast<std::uint32_t>(entries_.size());
    Entry e;
    e.key = static_cast<std::uint8_t>(entries_[0].key + *index * 37u);
    entries_.push_back(e);
  }
  Entry& e = entries_[*index];
  e.key = static_cast<std::uint8_t>(e.key + 1);  // a new key byte on every allocation
  if (++e.generation == Translation::kAnyGeneration) ++e.generation;  // 0 never names an allocation
  if (generation != nullptr) *generation = e.generation;
  e.allocated = true;
  e.valid = false;
  e.parent = 0;
  e.bound_windows = 0;
  ++valid_entries_;
  return CommandStatus::kOk;
}

void Translation::Release(std::uint32_t index) {
  Entry& e = entries_[index];
  e.allocated = false;
  e.valid = false;
  --valid_entries_;
  free_indices_.push_back(index);
}

std::uint32_t Translation::Generation(MemoryKey key) const {
  const std::uint32_t index = key.Index();
  if (index == 0 || index >= entries_.size() || !entries_[index].allocated) return kAnyGeneration;
  return entries_[index].generation;
}

Translation::Entry* Translation::Find(MemoryKey key) {
  const std::uint32_t index = key.Index();
  if (index == 0 || index >= entries_.size()) return nullptr;
  return &entries_[index];
}

const Translation::Entry* Translation::Find(MemoryKey key) const {
  const std::uint32_t index = key.Index();
  if (index == 0 || index >= entries_.size()) return nullptr;
  return &entries_[index];
}

TimePoint Translation::Fetch(MemoryKey key, std::uint64_t address, std::uint64_t length, TimePoint now) {
  if (!mpt_->Enabled() && !mtt_->Enabled()) return now;  // every entry on chip
  const std::uint32_t index = key.Index();
  const Entry* e = index < entries_.size() ? &entries_[index] : nullptr;
  const std::uint64_t generation = e != nullptr ? e->generation : 0;
  const std::uint64_t tag = (std::uint64_t{index} << 24) ^ (generation << 52);
  TimePoint ready = mpt_->Access(tag, now);
  if (e == nullptr || !e->allocated || length == 0) return ready;
  const std::uint64_t first = address / kPageBytes / kPagesPerMttLine;
  const std::uint64_t last = (address + length - 1) / kPageBytes / kPagesPerMttLine;
  for (std::uint64_t line = first; line <= last; ++line) ready = std::max(ready, mtt_->Access(MixBits(tag) ^ line, now));
  return ready;
}

TimePoint Translation::FetchSges(std::span<const WqeDataSegment> sges, std::uint64_t offset, std::uint64_t length,
                                 TimePoint now) {
  if (!CachesEnabled()) return now;
  TimePoint ready = now;
  (void)ForEachSgePiece(sges, offset, length,
                        [&](const WqeDataSegment& sge, std::uint64_t at, std::uint64_t n, std::uint64_t) {
                          ready = std::max(ready, Fetch(MemoryKey{sge.local_key}, sge.address + at, n, now));
                          return true;
                        });
  return ready;
}

CommandStatus Translation::Register(const MemoryRegistration& reg, MemoryKey* out, std::uint32_t* generation) {
  if (reg.length == 0 || reg.host_memory == nullptr) return CommandStatus::kInvalidArgument;
  if (reg.virtual_address + reg.length < reg.virtual_address) return CommandStatus::kInvalidArgument;
  std::uint32_t index;
  if (const CommandStatus s = AllocateIndex(&index, generation); s != CommandStatus::kOk) return s;
  Entry& e = entries_[index];
  e.kind = EntryKind::kRegion;
  e.valid = true;
  e.reg = reg;
  *out = MemoryKey::Make(index, e.key);
  return CommandStatus::kOk;
}

CommandStatus Translation::Deregister(MemoryKey key) {
  Entry* e = Find(key);
  if (e == nullptr || !e->allocated || e->kind != EntryKind::kRegion || e->key != key.KeyByte()) {
    return CommandStatus::kNotFound;
  }
  if (e->bound_windows > 0) return CommandStatus::kBusy;
  Release(key.Index());
  return CommandStatus::kOk;
}

CommandStatus Translation::AllocateFastRegister(PdNumber pd, std::uint32_t page_capacity, bool remote_access,
                                                MemoryKey* out, std::uint32_t* generation) {
  if (page_capacity == 0 || page_capacity > nic_.Profile().frmr_page_count) return CommandStatus::kInvalidArgument;
  std::uint32_t index;
  if (const CommandStatus s = AllocateIndex(&index, generation); s != CommandStatus::kOk) return s;
  Entry& e = entries_[index];
  e.kind = EntryKind::kFastRegister;
  e.reg = MemoryRegistration{pd, 0, 0, nullptr, 0};
  // Sized here, on the control path, so that executing a fast register never allocates.
  e.pages.assign(page_capacity, 0);
  e.page_capacity = page_capacity;
  e.remote_allowed = remote_access;
  *out = MemoryKey::Make(index, e.key);
  return CommandStatus::kOk;
}

CommandStatus Translation::AllocateWindow(PdNumber pd, MemoryKey* out, std::uint32_t* generation) {
  std::uint32_t index;
  if (const CommandStatus s = AllocateIndex(&index, generation); s != CommandStatus::kOk) return s;
  Entry& e = entries_[index];
  e.kind = EntryKind::kWindow;
  e.reg = MemoryRegistration{pd, 0, 0, nullptr, 0};
  *out = MemoryKey::Make(index, e.key);
  return CommandStatus::kOk;
}

CommandStatus Translation::AllocatePrivileged(PdNumber pd, MemoryKey* out) {
  std::uint32_t index;
  if (const CommandStatus s = AllocateIndex(&index, nullptr); s != CommandStatus::kOk) return s;
  Entry& e = entries_[index];
  e.kind = EntryKind::kPrivileged;
  // ref §3.15: local read and write on raw logical addresses, never remote access.
  e.reg = MemoryRegistration{pd, 0, 0, nullptr, access::kLocalWrite};
  e.valid = true;
  *out = MemoryKey::Make(index, e.key);
  return CommandStatus::kOk;
}

CommandStatus Translation::Free(MemoryKey key) {
  Entry* e = Find(key);
  // By index only: the owner may have posted a newer key byte that never executed.
  if (e == nullptr || !e->allocated || e->kind == EntryKind::kRegion) return CommandStatus::kNotFound;
  if (e->kind == EntryKind::kWindow && e->valid) Unbind(*e);
  Release(key.Index());
  return CommandStatus::kOk;
}

void Translation::Unbind(Entry& window) {
  Entry& region = entries_[window.parent];
  NDKSIM_CHECK(region.bound_windows > 0);
  --region.bound_windows;
  window.valid = false;
  window.parent = 0;
}

// ---- memory operations ---------------------------------------------------------------------------

MemoryOpOutcome Translation::FastRegister(const FastRegisterRequest& r) {
  Entry* e = Find(r.key);
  // The WQE was posted for one allocation of the entry: a freed or reallocated entry is another.
  if (e == nullptr || !e->allocated || e->generation != r.generation) return MemoryOpOutcome::kBadKey;
  if (e->kind != EntryKind::kFastRegister) return MemoryOpOutcome::kWrongKind;
  if (e->reg.pd != r.pd) return MemoryOpOutcome::kPdMismatch;
  if ((r.access & kRemoteRights) != 0 && !e->remote_allowed) return MemoryOpOutcome::kAccessDenied;
  if (r.page_count == 0 || r.page_count > e->page_capacity) return MemoryOpOutcome::kTooManyPages;
  // ref §3.7: Length <= pages * PAGE_SIZE - FBO; the base address carries the FBO.
  const std::uint64_t span = std::uint64_t{r.page_count} * kPageBytes;
  if (r.fbo >= kPageBytes || r.length > span - r.fbo || r.base_address + r.length < r.base_address) {
    return MemoryOpOutcome::kOutOfBounds;
  }
  // The page list is read from host memory by DMA when the WQE executes (ref §3.7).
  std::copy(r.pages, r.pages + r.page_count, e->pages.begin());
  e->key = r.key.KeyByte();
  e->reg.virtual_address = r.base_address;
  e->reg.length = r.length;
  e->reg.access = r.access;
  e->fbo = r.fbo;
  e->valid = true;
  return MemoryOpOutcome::kOk;
}

MemoryOpOutcome Translation::Bind(const BindRequest& r) {
  Entry* w = Find(r.window);
  if (w == nullptr || !w->allocated || w->generation != r.window_generation) return MemoryOpOutcome::kBadKey;
  if (w->kind != EntryKind::kWindow) return MemoryOpOutcome::kWrongKind;
  Entry* region = Find(r.region);
  if (region == nullptr || !region->allocated || region->key != r.region.KeyByte() ||
      region->generation != r.region_generation) {
    return MemoryOpOutcome::kBadKey;
  }
  if (region->kind != EntryKind::kRegion) return MemoryOpOutcome::kWrongKind;  // a region is valid while allocated
  if (w->reg.pd != r.pd || region->reg.pd != r.pd) return MemoryOpOutcome::kPdMismatch;
  // ref §3.6: remote write through the window needs local write on the region.
  if ((r.access & access::kRemoteWrite) && !(region->reg.access & access::kLocalWrite)) {
    return MemoryOpOutcome::kAccessDenied;
  }
  const std::uint64_t base = region->reg.virtual_address;
  if (r.address < base || r.address - base > region->reg.length || r.length > region->reg.length - (r.address - base)) {
    return MemoryOpOutcome::kOutOfBounds;
  }
  if (w->valid) Unbind(*w);  // a rebind moves the window
  w->key = r.window.KeyByte();
  w->reg.virtual_address = r.address;
  w->reg.length = r.length;
  w->reg.host_memory = region->reg.host_memory + (r.address - base);
  w->reg.access = r.access & kRemoteRights;
  w->parent = r.region.Index();
  w->valid = true;
  ++region->bound_windows;
  return MemoryOpOutcome::kOk;
}

MemoryOpOutcome Translation::CheckInvalidate(MemoryKey key, PdNumber pd, std::uint32_t* generation) const {
  const Entry* e = Find(key);
  if (e == nullptr || !e->allocated || e->key != key.KeyByte()) return MemoryOpOutcome::kBadKey;
  if (*generation != kAnyGeneration && e->generation != *generation) return MemoryOpOutcome::kBadKey;
  // ref §3.8: an MR registered with NdkRegisterMr (and the privileged token) is never invalidated.
  if (e->kind != EntryKind::kFastRegister && e->kind != EntryKind::kWindow) return MemoryOpOutcome::kWrongKind;
  if (!e->valid) return MemoryOpOutcome::kNotValid;
  if (e->reg.pd != pd) return MemoryOpOutcome::kPdMismatch;
  *generation = e->generation;
  return MemoryOpOutcome::kOk;
}

MemoryOpOutcome Translation::Invalidate(MemoryKey key, PdNumber pd, std::uint32_t generation) {
  const MemoryOpOutcome outcome = CheckInvalidate(key, pd, &generation);
  if (outcome == MemoryOpOutcome::kOk) MakeInvalid(*Find(key));
  return outcome;
}

bool Translation::Revoke(MemoryKey key) {
  Entry* e = Find(key);
  if (e == nullptr || !e->allocated || e->key != key.KeyByte() || !e->valid) return false;
  MakeInvalid(*e);
  return true;
}

void Translation::MakeInvalid(Entry& e) {
  if (e.kind == EntryKind::kWindow) {
    Unbind(e);
  } else {
    e.valid = false;
  }
}

// ---- the protection check ------------------------------------------------------------------------

std::byte* Translation::PageHost(const Entry& e, std::uint64_t address, std::uint64_t* in_page) {
  const std::uint64_t list_offset = address - e.reg.virtual_address + e.fbo;
  const std::uint64_t within = list_offset % kPageBytes;
  *in_page = kPageBytes - within;
  return reinterpret_cast<std::byte*>(e.pages[list_offset / kPageBytes] + within);
}

TranslationResult Translation::Check(MemoryKey key, PdNumber pd, std::uint64_t address, std::uint64_t length,
                                     std::uint32_t required) const {
  const std::uint32_t index = key.Index();
  if (index == 0 || index >= entries_.size()) return {TranslationOutcome::kBadIndex};
  const Entry& e = entries_[index];
  if (e.key != key.KeyByte()) return {TranslationOutcome::kKeyMismatch};
  if (!e.valid) return {TranslationOutcome::kInvalid};
  if (e.reg.pd != pd) return {TranslationOutcome::kPdMismatch};
  // ref §1.7: without the requirement any locally writable memory may be a read sink.
  if (!nic_.Profile().read_sink_required) required &= ~access::kReadSink;
  if ((e.reg.access & required) != required) return {TranslationOutcome::kAccessDenied};
  if (e.kind == EntryKind::kPrivileged) {
    // ref §2.2: the address is a logical address, which in one process is the host address.
    if (address == 0 || address + length < address) return {TranslationOutcome::kOutOfBounds};
    return {TranslationOutcome::kOk, reinterpret_cast<std::byte*>(address)};
  }
  // Overflow-safe range check: address >= base and length <= (base + len) - address.
  const std::uint64_t base = e.reg.virtual_address;
  if (address < base) return {TranslationOutcome::kOutOfBounds};
  const std::uint64_t offset = address - base;
  if (offset > e.reg.length || length > e.reg.length - offset) return {TranslationOutcome::kOutOfBounds};
  if (e.kind == EntryKind::kFastRegister) {
    if (length == 0 && offset == e.reg.length) return {TranslationOutcome::kOk, nullptr};
    std::uint64_t in_page;
    return {TranslationOutcome::kOk, PageHost(e, address, &in_page)};
  }
  return {TranslationOutcome::kOk, e.reg.host_memory + offset};
}

template <typename Fn>
bool Translation::ForEachPiece(MemoryKey key, PdNumber pd, std::uint64_t address, std::uint64_t length,
                               std::uint32_t required, Fn&& fn) const {
  const TranslationResult t = Check(key, pd, address, length, required);
  if (!t.Ok()) return false;
  if (length == 0) return true;
  const Entry& e = entries_[key.Index()];
  if (e.kind != EntryKind::kFastRegister) {
    fn(t.host, length);
    return true;
  }
  // A page list maps page by page: consecutive pages may lie anywhere in host memory.
  while (length > 0) {
    std::uint64_t in_page;
    std::byte* host = PageHost(e, address, &in_page);
    const std::uint64_t n = std::min(in_page, length);
    fn(host, n);
    address += n;
    length -= n;
  }
  return true;
}

bool Translation::CopyTo(MemoryKey key, PdNumber pd, std::uint64_t address, const std::byte* source,
                         std::uint64_t length, std::uint32_t required) const {
  return ForEachPiece(key, pd, address, length, required, [&](std::byte* host, std::uint64_t n) {
    std::memcpy(host, source, n);
    source += n;
  });
}

bool Translation::CopyFrom(MemoryKey key, PdNumber pd, std::uint64_t address, std::byte* destination,
                           std::uint64_t length, std::uint32_t required) const {
  return ForEachPiece(key, pd, address, length, required, [&](std::byte* host, std::uint64_t n) {
    std::memcpy(destination, host, n);
    destination += n;
  });
}

}  // namespace ndksim::hw
