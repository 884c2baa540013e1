// SPDX-License-Identifier: MIT
// Translation and protection: the NIC's table of memory tokens. Every DMA the NIC does on behalf of
// a token goes through Check(), which applies the checks in a fixed order, one outcome per check.
// Entries are registered regions, fast-register regions (a page list), memory windows bound inside
// a region, and one privileged entry per PD that maps raw logical addresses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "context_cache.h"
#include "hwmodel/host_interface.h"
#include "nic.h"

namespace ndksim::hw {

enum class TranslationOutcome : std::uint8_t {
  kOk,
  kBadIndex,      // 1. no table entry at the token's index
  kKeyMismatch,   // 2. the key byte does not match the entry (stale token)
  kInvalid,       // 3. entry exists but is not valid (deregistered, invalidated, unbound)
  kPdMismatch,    // 4. entry belongs to another protection domain
  kAccessDenied,  // 5. the entry lacks a right the access needs
  kOutOfBounds,   // 6. [address, address + length) is not inside the registration
};
std::string_view Name(TranslationOutcome o);

// Outcome of a memory operation the NIC executes (fast register, bind, invalidate), in check order.
enum class MemoryOpOutcome : std::uint8_t {
  kOk,
  kBadKey,         // 1. no such entry, or the key byte does not name it
  kWrongKind,      // 2. the entry is not of a kind the operation applies to
  kNotValid,       // 3. invalidate: the region is not registered / the window is not bound
  kPdMismatch,     // 4. the entry (or the bind's region) belongs to another PD than the QP's
  kAccessDenied,   // 5. rights the entry may not grant (remote on a local-only FR region; remote
                   //    write on a window over a region without local write)
  kTooManyPages,   // 6. fast register: more pages than the region was sized for
  kOutOfBounds,    // 7. the range does not fit (window outside its region; FR past the page list)
};
std::string_view Name(MemoryOpOutcome o);

enum class EntryKind : std::uint8_t { kRegion, kFastRegister, kWindow, kPrivileged };

struct TranslationResult {
  TranslationOutcome outcome = TranslationOutcome::kOk;
  std::byte* host = nullptr;  // host memory of the first byte when kOk
  bool Ok() const { return outcome == TranslationOutcome::kOk; }
};

// A fast-register WQE as the NIC executes it (ref §3.7).
struct FastRegisterRequest {
  MemoryKey key;                      // the region's token with its new key byte
  std::uint32_t generation = 0;       // the allocation of the entry the WQE was posted for
  PdNumber pd;                        // the posting QP's PD
  std::uint64_t base_address = 0;     // virtual address of the first byte
  std::uint64_t length = 0;
  std::uint32_t fbo = 0;              // offset of the first byte in page 0
  std::uint32_t access = 0;           // access:: bits
  const std::uint64_t* pages = nullptr;  // logical (= host) address of each page
  std::uint32_t page_count = 0;
};

// A bind WQE as the NIC executes it (ref §3.6).
struct BindRequest {
  MemoryKey window;     // the window's token with its new key byte
  std::uint32_t window_generation = 0;  // the allocations the WQE was posted for
  MemoryKey region;     // the registered region it is bound inside
  std::uint32_t region_generation = 0;
  PdNumber pd;          // the posting QP's PD
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  std::uint32_t access = 0;  // access:: remote bits
};

class Translation {
 public:
  Translation(Nic& nic, std::uint64_t seed);

  // Each allocation of a table entry has a generation, returned through `generation`: memory
  // operations name it, so that one posted for an entry since freed (its index reused, perhaps
  // with a key byte that matches again) fails instead of acting on the new entry.
  CommandStatus Register(const MemoryRegistration& reg, MemoryKey* out, std::uint32_t* generation = nullptr);
  // kBusy while windows are bound inside the region (NDSPI analogue, ref §3.6).
  CommandStatus Deregister(MemoryKey key);
  // Entries made valid later by a WQE (fast register, bind), and the privileged entry of a PD.
  CommandStatus AllocateFastRegister(PdNumber pd, std::uint32_t page_capacity, bool remote_access,
                                     MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus AllocateWindow(PdNumber pd, MemoryKey* out, std::uint32_t* generation = nullptr);
  // The generation of the live allocation at `key`'s index (0: none).
  std::uint32_t Generation(MemoryKey key) const;
  CommandStatus AllocatePrivileged(PdNumber pd, MemoryKey* out);
  // Frees an entry made by one of the Allocate* calls, named by index (a bound window is unbound
  // first).
  CommandStatus Free(MemoryKey key);

  // Memory operations, executed in order with the QP's other requests.
  MemoryOpOutcome FastRegister(const FastRegisterRequest& request);
  MemoryOpOutcome Bind(const BindRequest& request);
  // Local invalidate, remote invalidate (send with invalidate) and read-local-invalidate share it:
  // only fast-register regions and windows of `pd` can be invalidated (ref §3.2, §3.8). A local
  // invalidate WQE names the entry's generation too; the others have only the token.
  static constexpr std::uint32_t kAnyGeneration = 0;
  MemoryOpOutcome Invalidate(MemoryKey key, PdNumber pd, std::uint32_t generation = kAnyGeneration);
  // What Invalidate would answer now, changing nothing; with kOk, the entry's generation, for an
  // Invalidate made later that must not touch a reallocation of the entry.
  MemoryOpOutcome CheckInvalidate(MemoryKey key, PdNumber pd, std::uint32_t* generation) const;
  // Fault injection: the entry `key` names stops translating, whatever its kind, as a racing
  // invalidate or deregistration would leave it. A region stays registered (deregistration works
  // as usual); a fast-register region or window is valid again after its next fast register or
  // bind. False if `key` names no live entry.
  bool Revoke(MemoryKey key);

  // The protection check: `required` is a set of access:: bits (0 = local read only). kReadSink
  // is required only when the profile says read sinks need the right (ref §1.7, §3.3).
  TranslationResult Check(MemoryKey key, PdNumber pd, std::uint64_t address, std::uint64_t length,
                          std::uint32_t required) const;
  // Check, then copy between the checked range and a flat buffer. A fast-register region maps
  // through its page list, whose pages need not be contiguous in host memory.
  bool CopyTo(MemoryKey key, PdNumber pd, std::uint64_t address, const std::byte* source,
              std::uint64_t length, std::uint32_t required) const;
  bool CopyFrom(MemoryKey key, PdNumber pd, std::uint64_t address, std::byte* destination,
                std::uint64_t length, std::uint32_t required) const;

  std::size_t ValidEntries() const { return valid_entries_; }

  // The on-chip caches of the key table (MPT) and the page translations (MTT, 64-B lines of 8
  // page entries), as in context_cache.h: when the entry of `key` and the translations of
  // [address, address + length) are on chip for work at `now`. Misses read them over PCIe. A key
  // that names no live entry costs its MPT lookup alone (the check that follows refuses it).
  TimePoint Fetch(MemoryKey key, std::uint64_t address, std::uint64_t length, TimePoint now);
  // The same for the local side of a transfer: the keys and pages of bytes [offset, offset +
  // length) of a message laid out over `sges` (a payload gathered, a read response or an inbound
  // send placed), one Fetch per piece.
  TimePoint FetchSges(std::span<const WqeDataSegment> sges, std::uint64_t offset, std::uint64_t length, TimePoint now);
  // False when no translation cache is modelled: every key and page is on chip, Fetch answers now.
  bool CachesEnabled() const { return mpt_->Enabled() || mtt_->Enabled(); }

 private:
  struct Entry {
    bool allocated = false;  // in use (a region is allocated exactly while it is registered)
    std::uint32_t generation = 0;  // allocations of this entry so far; the live one's number
    bool valid = false;
    std::uint8_t key = 0;
    EntryKind kind = EntryKind::kRegion;
    MemoryRegistration reg;  // pd, range, host memory of the first byte (not for FR), access
    // Fast register: capacity and the current page list.
    std::vector<std::uint64_t> pages;
    std::uint32_t page_capacity = 0;
    std::uint32_t fbo = 0;
    bool remote_allowed = false;
    // Windows: the region bound to; regions: how many windows are bound inside.
    std::uint32_t parent = 0;
    std::uint32_t bound_windows = 0;
  };

  CommandStatus AllocateIndex(std::uint32_t* index, std::uint32_t* generation);
  void Release(std::uint32_t index);
  Entry* Find(MemoryKey key);
  const Entry* Find(MemoryKey key) const;
  void Unbind(Entry& window);
  // The entry stops translating: a window is unbound, anything else marked invalid.
  void MakeInvalid(Entry& e);
  // Host address of byte `address` of a fast-register entry and how many bytes follow it in the
  // same page.
  static std::byte* PageHost(const Entry& e, std::uint64_t address, std::uint64_t* in_page);
  template <typename Fn>
  bool ForEachPiece(MemoryKey key, PdNumber pd, std::uint64_t address, std::uint64_t length,
                    std::uint32_t required, Fn&& fn) const;

  Nic& nic_;
  // Keyed by the entry's index and generation (and the line), so a re-registration never finds
  // its predecessor's lines.
  std::unique_ptr<ContextCache> mpt_;
  std::unique_ptr<ContextCache> mtt_;
  std::vector<Entry> entries_;           // index = token index; index 0 is never handed out
  std::vector<std::uint32_t> free_indices_;
  std::size_t valid_entries_ = 0;
};

// The bytes [offset, offset + length) of a message laid out over a list of SGEs, piece by piece:
// calls `piece(sge, offset_in_sge, n, offset_in_range)` for each part in order. False if `piece`
// returns false or the SGEs end first.
template <typename Fn>
bool ForEachSgePiece(std::span<const WqeDataSegment> sges, std::uint64_t offset, std::uint64_t length, Fn&& piece) {
  std::uint64_t skip = offset;
  std::uint64_t done = 0;
  for (const WqeDataSegment& sge : sges) {
    if (done == length) break;
    if (skip >= sge.length) {
      skip -= sge.length;
      continue;
    }
    const std::uint64_t n = std::min<std::uint64_t>(sge.length - skip, length - done);
    if (!piece(sge, skip, n, done)) return false;
    done += n;
    skip = 0;
  }
  return done == length;
}

// Copies message bytes [offset, offset + length) out of, or into, host memory named by `sges`,
// through translation with the `required` rights. False if a translation fails.
inline bool GatherSges(const Translation& tpt, PdNumber pd, std::span<const WqeDataSegment> sges, std::uint64_t offset,
                       std::uint64_t length, std::byte* out, std::uint32_t required) {
  return ForEachSgePiece(sges, offset, length, [&](const WqeDataSegment& sge, std::uint64_t at, std::uint64_t n, std::uint64_t done) {
    return tpt.CopyFrom(MemoryKey{sge.local_key}, pd, sge.address + at, out + done, n, required);
  });
}
inline bool ScatterSges(const Translation& tpt, PdNumber pd, std::span<const WqeDataSegment> sges, std::uint64_t offset,
                        const std::byte* data, std::uint64_t length, std::uint32_t required) {
  return ForEachSgePiece(sges, offset, length, [&](const WqeDataSegment& sge, std::uint64_t at, std::uint64_t n, std::uint64_t done) {
    return tpt.CopyTo(MemoryKey{sge.local_key}, pd, sge.address + at, data + done, n, required);
  });
}

}  // namespace ndksim::hw
