// Protection domains and memory regions (NDK_PD, NDK_MR), and the driver's table of registered
// memory that lets the posting path check local SGEs inline.
#pragma once

#include <atomic>
#include <cstdint>

#include "hwmodel/host_interface.h"
#include "hwmodel/nic.h"
#include "ndkpi.h"
#include "provider/index_table.h"
#include "provider/objects.h"

namespace ndksim::provider {

// What the driver remembers of each live registration, indexed by token index (token >> 8).
struct MemoryEntry {
  static constexpr std::uint64_t kValid = std::uint64_t{1} << 32;
  // kValid | token while registered, 0 otherwise. Written last on registration (release) and
  // first on deregistration, so a reader that matches it sees the fields below for that token.
  std::atomic<std::uint64_t> tagged_token{0};
  std::uint32_t pd = 0;
  std::uint32_t access = 0;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
};

class MemoryTable {
 public:
  void Publish(hw::MemoryKey key, hw::PdNumber pd, std::uint64_t address, std::uint64_t length,
               std::uint32_t access);
  void Revoke(hw::MemoryKey key);

  // ref §2.2, §4.1: a non-inline SGE must name, by its token, a live registration of the QP's
  // PD that covers [VirtualAddress, VirtualAddress + Length). A zero-length SGE is still checked
  // for its token. Hot path: O(1), no locks, no allocation.
  bool CoversLocal(const NDK_SGE& sge, hw::PdNumber pd) const {
    const hw::MemoryKey key{sge.MemoryRegionToken};
    const MemoryEntry* e = entries_.Find(key.Index());
    if (e == nullptr) return false;
    // acquire: pairs with the release store in Publish; the fields below belong to this token.
    if (e->tagged_token.load(std::memory_order_acquire) != (MemoryEntry::kValid | key.value)) {
      return false;  // never registered, deregistered, or stale key byte
    }
    if (e->pd != pd.value) return false;
    const auto va = reinterpret_cast<std::uint64_t>(sge.VirtualAddress);
    if (va < e->address) return false;
    const std::uint64_t offset = va - e->address;  // overflow-safe range check
    return offset <= e->length && sge.Length <= e->length - offset;
  }

 private:
  IndexTable<MemoryEntry> entries_;
};

class Pd final : public Object {
 public:
  static NTSTATUS Create(Adapter& adapter, NDK_PD** out);
  Pd(Adapter& adapter, hw::PdNumber number);
  ~Pd() override;

  static Pd& From(NDK_PD* ndk) { return OwnerOf<Pd>(ndk); }
  NDK_PD* Ndk() { return &handle_.ndk; }
  hw::PdNumber Number() const { return number_; }

 private:
  Handle<NDK_PD, Pd> handle_;
  hw::PdNumber number_;
};

class Mr final : public Object {
 public:
  static NTSTATUS Create(Pd& pd, BOOLEAN fast_register, NDK_MR** out);
  explicit Mr(Pd& pd);
  ~Mr() override;

  static Mr& From(NDK_MR* ndk) { return OwnerOf<Mr>(ndk); }
  NDK_MR* Ndk() { return &handle_.ndk; }

  NTSTATUS Register(const MDL* mdl, SIZE_T length, ULONG flags);
  NTSTATUS Deregister();
  UINT32 Token() const { return key_.value; }

 private:
  Handle<NDK_MR, Mr> handle_;
  Pd& pd_;
  bool registered_ = false;
  hw::MemoryKey key_;
};

}  // namespace ndksim::provider
