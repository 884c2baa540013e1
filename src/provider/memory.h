// SPDX-License-Identifier: MIT
// Protection domains and memory regions (NDK_PD, NDK_MR), and the driver's table of registered
// memory that lets the posting path check local SGEs inline.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "hwmodel/host_interface.h"
#include "hwmodel/device.h"
#include "ndkpi.h"
#include "index_table.h"
#include "objects.h"

namespace ndksim::provider {

// What the driver remembers of each live registration, indexed by token index (token >> 8).
struct MemoryEntry {
  static constexpr std::uint64_t kValid = std::uint64_t{1} << 32;
  // kValid | token while registered, 0 otherwise. Written last on registration (release) and
  // first on deregistration, so a reader that matches it sees the fields below for that token.
  std::atomic<std::uint64_t> tagged_token{0};
  std::uint32_t pd = 0;
  std::uint32_t access = 0;
  bool privileged = false;  // the PD's privileged token: any logical address (ref §2.2)
  std::uint64_t address = 0;
  std::uint64_t length = 0;
};

class MemoryTable {
 public:
  void Publish(hw::MemoryKey key, hw::PdNumber pd, std::uint64_t address, std::uint64_t length,
               std::uint32_t access, bool privileged = false);
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
    if (e->privileged) return sge.VirtualAddress != nullptr;  // a logical address, unbounded
    const auto va = reinterpret_cast<std::uint64_t>(sge.VirtualAddress);
    if (va < e->address) return false;
    const std::uint64_t offset = va - e->address;  // overflow-safe range check
    return offset <= e->length && sge.Length <= e->length - offset;
  }

 private:
  IndexTable<MemoryEntry> entries_;
};

class Mr;
class Qp;

// What the NIC may map through one window, and the edges (ref §4.4 MR -> MW) that keep those MRs
// open. Edges move when the hardware moves: a posted bind takes an edge on its MR; the outcome,
// learnt when the bind's WQE retires, keeps it (executed) or drops it (failed); once no bind is
// outstanding and the newest executed one is known for certain, every other edge goes. Posted
// binds hold it too (a QP's record of a bind may outlive the window). Control and poll paths of
// one thread, like the rest of the object lifetime machinery.
struct WindowBinding {
  bool open = true;              // false once the window is closed: the NIC has unbound it
  std::vector<Mr*> edges;        // one per edge taken, oldest first
  std::uint32_t outstanding = 0; // binds posted whose outcome is not known yet
  Mr* newest_executed = nullptr; // of the binds known executed since the edges last settled
  const Qp* executed_on = nullptr;
  bool uncertain = false;        // binds of several QPs executed, or an outcome is unknown

  enum class Outcome : std::uint8_t { kExecuted, kFailed, kUnknown };
  void Posted(Mr& mr);
  void Resolved(Mr& mr, const Qp& qp, Outcome outcome);
  void Close();  // releases every edge

 private:
  void Drop(Mr& mr);  // releases one edge on `mr`
  void Settle();
};

class Pd final : public Object {
 public:
  static NTSTATUS Create(Adapter& adapter, NDK_PD** out);
  Pd(Adapter& adapter, hw::PdNumber number);
  ~Pd() override;

  static Pd& From(NDK_PD* ndk) { return OwnerOf<Pd>(ndk); }
  NDK_PD* Ndk() { return &handle_.ndk; }
  hw::PdNumber Number() const { return number_; }
  UINT32 PrivilegedToken() const { return privileged_key_.value; }

 private:
  Handle<NDK_PD, Pd> handle_;
  hw::PdNumber number_;
  hw::MemoryKey privileged_key_;  // ref §3.15: one per PD, allocated with it
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
  // The generation of the NIC's protection entry (hw::Translation): memory operations name it.
  std::uint32_t Generation() const { return generation_; }
  Pd& GetPd() const { return pd_; }

  // ---- regions registered with NdkRegisterMr (bind targets) ----
  bool Registered() const { return registered_; }
  std::uint64_t Address() const { return address_; }
  std::uint64_t Length() const { return length_; }
  std::uint32_t Access() const { return access_; }

  // ---- fast-register regions (ref §3.7, §3.15) ----
  bool IsFastRegister() const { return fast_register_; }
  NTSTATUS InitializeFastRegister(ULONG page_count, BOOLEAN remote_access);
  std::uint32_t PageCapacity() const { return page_capacity_; }
  bool RemoteAccess() const { return remote_access_; }
  // The token the next fast register installs: the same one, or with the profile's
  // rotate_fast_register_keys a new key byte on the same index.
  hw::MemoryKey FastRegisterKey() const;
  // A fast register was posted: its token is the MR's token from now on (ref §3.7).
  void FastRegisterPosted(hw::MemoryKey key, std::uint64_t address, std::uint64_t length, std::uint32_t access);
  // An invalidate was posted: local posts with the token fail inline from now on.
  void InvalidatePosted();

 private:
  Handle<NDK_MR, Mr> handle_;
  Pd& pd_;
  bool registered_ = false;
  hw::MemoryKey key_;
  std::uint32_t generation_ = 0;
  std::uint64_t address_ = 0;
  std::uint64_t length_ = 0;
  std::uint32_t access_ = 0;
  bool fast_register_ = false;
  bool fr_allocated_ = false;
  bool remote_access_ = false;
  std::uint32_t page_capacity_ = 0;
};

// A memory window (NDK_MW, ref §3.6): a NIC protection entry bound inside a registered MR by a
// Bind work request.
class Mw final : public Object {
 public:
  static NTSTATUS Create(Pd& pd, NDK_MW** out);
  Mw(Pd& pd, hw::MemoryKey key, std::uint32_t generation);
  ~Mw() override;

  static Mw& From(NDK_MW* ndk) { return OwnerOf<Mw>(ndk); }
  NDK_MW* Ndk() { return &handle_.ndk; }
  Pd& GetPd() const { return pd_; }
  UINT32 Token() const { return key_.value; }
  std::uint32_t Generation() const { return generation_; }
  hw::MemoryKey NextKey() const { return hw::MemoryKey::Make(key_.Index(), static_cast<std::uint8_t>(key_.KeyByte() + 1)); }
  // A bind was posted: the window's token changes at once (ref §3.6: valid when NdkBind returns),
  // and the window takes an edge on the MR (ref §4.4 MR -> MW) until the bind's outcome is known.
  // Returns the binding, which the QP resolves when the bind's WQE retires.
  std::shared_ptr<WindowBinding> BindPosted(hw::MemoryKey key, Mr& mr);

 private:
  Handle<NDK_MW, Mw> handle_;
  Pd& pd_;
  hw::MemoryKey key_;
  std::uint32_t generation_;
  std::shared_ptr<WindowBinding> binding_ = std::make_shared<WindowBinding>();
};

}  // namespace ndksim::provider
