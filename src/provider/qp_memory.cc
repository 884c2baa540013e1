// SPDX-License-Identifier: MIT
// NDK_QP's memory operations (ref §3.6-3.8): NdkBind, NdkFastRegister and NdkInvalidate, and the
// per send slot state (window bindings, page lists) kept until their WQEs retire.
#include "qp.h"

#include <memory>
#include <utility>
#include <vector>

#include "driver.h"
#include "memory.h"
#include "qp_internal.h"

namespace ndksim::provider {

Qp::MemorySlot& Qp::MemorySlotFor(std::uint32_t counter) {
  if (memory_slots_ == nullptr) memory_slots_ = std::make_unique<MemorySlot[]>(send_.slot_mask + 1);
  return memory_slots_[counter & send_.slot_mask];
}

std::uint64_t* Qp::PageListFor(std::uint32_t page_count) {
  std::vector<std::uint64_t>& pages = MemorySlotFor(send_.posted).pages;
  // The slot is free: the WQE that last used it has retired, so the NIC has read its list.
  if (pages.size() < page_count) pages.resize(page_count);
  return pages.data();
}

void Qp::RecordBind(std::shared_ptr<WindowBinding> binding, Mr& mr) {
  MemorySlot& slot = MemorySlotFor(send_.posted);
  slot.binding = std::move(binding);
  slot.mr = &mr;
  binds_outstanding_.fetch_add(1, std::memory_order_relaxed);
}

void Qp::ResolveBinds(std::uint32_t wqe_counter, bool succeeded) {
  // relaxed: the poller's own earlier store (Retire).
  for (std::uint32_t c = send_.retired.load(std::memory_order_relaxed); c != wqe_counter + 1; ++c) {
    MemorySlot& slot = memory_slots_[c & send_.slot_mask];
    if (slot.binding == nullptr) continue;
    // An unsignaled bind retired by a later CQE executed: had it failed, its own error CQE would
    // have come first.
    const bool executed = c != wqe_counter || succeeded;
    slot.binding->Resolved(*slot.mr, *this,
                           executed ? WindowBinding::Outcome::kExecuted : WindowBinding::Outcome::kFailed);
    slot.binding.reset();
    binds_outstanding_.fetch_sub(1, std::memory_order_relaxed);
  }
}

// ---- memory operations (ref §3.6-3.8). Each validates, then posts; a failure kicks deferred WRs
// (ref §4.3) and changes nothing else. -------------------------------------------------------------

namespace {

using qp_internal::kCommonFlags;

constexpr ULONG kRemoteWrite = NDK_OP_FLAG_ALLOW_REMOTE_WRITE;  // 0x30: includes LOCAL_WRITE
constexpr ULONG kBindFlags = kCommonFlags | NDK_OP_FLAG_ALLOW_REMOTE_READ | kRemoteWrite;
constexpr ULONG kFastRegisterFlags = kCommonFlags | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_LOCAL_WRITE |
                                     kRemoteWrite | NDK_OP_FLAG_RDMA_READ_SINK;

// ref §1.4 bit-test caution: remote write is (flags & 0x30) == 0x30, never a plain AND.
bool WantsRemoteWrite(ULONG flags) { return (flags & kRemoteWrite) == kRemoteWrite; }

std::uint32_t OpAccessBits(ULONG flags) {
  std::uint32_t access = 0;
  if (flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE) access |= hw::access::kLocalWrite;
  if (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ) access |= hw::access::kRemoteRead;
  if (WantsRemoteWrite(flags)) access |= hw::access::kRemoteWrite;
  // ref §1.4: READ_SINK is tolerated where it is not required; the bit then changes nothing.
  if (flags & NDK_OP_FLAG_RDMA_READ_SINK) access |= hw::access::kReadSink;
  return access;
}

bool InsideMr(const Mr& mr, std::uint64_t va, std::uint64_t length) {
  if (va < mr.Address()) return false;
  const std::uint64_t offset = va - mr.Address();
  return offset <= mr.Length() && length <= mr.Length() - offset;
}

NTSTATUS ValidateBind(const Qp& qp, NDK_MR* ndk_mr, NDK_MW* ndk_mw, PVOID va, SIZE_T length, ULONG flags) {
  if (const NTSTATUS s = qp.CheckInitiatorRoom(); s != STATUS_SUCCESS) return s;
  if (ndk_mr == nullptr || ndk_mw == nullptr || (flags & ~kBindFlags) != 0) return STATUS_INVALID_PARAMETER;
  // LOCAL_WRITE (0x10) alone is a FastRegister flag, not a Bind flag.
  if ((flags & kRemoteWrite) == NDK_OP_FLAG_ALLOW_LOCAL_WRITE) return STATUS_INVALID_PARAMETER;
  const Mr& mr = Mr::From(ndk_mr);
  const Mw& mw = Mw::From(ndk_mw);
  if (&mr.GetPd() != &qp.GetPd() || &mw.GetPd() != &qp.GetPd()) return STATUS_INVALID_PARAMETER;
  // A window binds inside an MR registered with NdkRegisterMr (ndksim's status for other MRs).
  if (mr.IsFastRegister() || !mr.Registered()) return STATUS_INVALID_DEVICE_REQUEST;
  const auto address = reinterpret_cast<std::uint64_t>(va);
  // ref §3.6: inside the MR's span; zero-based addresses unsupported.
  if (address == 0 || length > qp.GetDriver().Profile().max_window_bytes || !InsideMr(mr, address, length)) {
    return STATUS_INVALID_PARAMETER;
  }
  // ref §3.6, §6 item 4: remote write on the window needs the MR registered with LOCAL_WRITE.
  if (WantsRemoteWrite(flags) && !(mr.Access() & hw::access::kLocalWrite)) return STATUS_ACCESS_VIOLATION;
  return STATUS_SUCCESS;
}

}  // namespace

namespace qp_internal {

NTSTATUS Bind(NDK_QP* ndk, PVOID context, NDK_MR* ndk_mr, NDK_MW* ndk_mw, PVOID va, SIZE_T length, ULONG flags) {
  Qp& qp = Qp::From(ndk);
  if (const NTSTATUS s = ValidateBind(qp, ndk_mr, ndk_mw, va, length, flags); s != STATUS_SUCCESS) {
    qp.KickDeferred();
    return s;
  }
  Mr& mr = Mr::From(ndk_mr);
  Mw& mw = Mw::From(ndk_mw);
  const hw::MemoryKey key = mw.NextKey();
  // ref §3.6: the token is valid when NdkBind returns; the MR -> MW edge follows the NIC.
  qp.RecordBind(mw.BindPosted(key, mr), mr);
  qp.PostMemory({.opcode = hw::WqeOpcode::kBind,
                 .context = context,
                 .flags = flags,
                 .target_key = key.value,
                 .target_generation = mw.Generation(),
                 .region_key = mr.Token(),
                 .region_generation = mr.Generation(),
                 .address = reinterpret_cast<std::uint64_t>(va),
                 .length = length,
                 .access = OpAccessBits(flags) & (hw::access::kRemoteRead | hw::access::kRemoteWrite)});
  return STATUS_SUCCESS;
}

}  // namespace qp_internal

namespace {

NTSTATUS ValidateFastRegister(const Qp& qp, NDK_MR* ndk_mr, ULONG page_count, const NDK_LOGICAL_ADDRESS* pages,
                              ULONG fbo, SIZE_T length, PVOID base, ULONG flags) {
  if (const NTSTATUS s = qp.CheckInitiatorRoom(); s != STATUS_SUCCESS) return s;
  if (ndk_mr == nullptr || (flags & ~kFastRegisterFlags) != 0) return STATUS_INVALID_PARAMETER;
  Mr& mr = Mr::From(ndk_mr);
  if (&mr.GetPd() != &qp.GetPd()) return STATUS_INVALID_PARAMETER;
  // ref §3.15: only an MR created with FastRegister=TRUE and initialised (ndksim's status).
  if (!mr.IsFastRegister() || mr.PageCapacity() == 0) return STATUS_INVALID_DEVICE_REQUEST;
  // ref §3.7: remote rights need an MR initialised with RemoteAccess=TRUE.
  const ULONG remote_bits = NDK_OP_FLAG_ALLOW_REMOTE_READ | (kRemoteWrite & ~NDK_OP_FLAG_ALLOW_LOCAL_WRITE);
  const bool remote = (flags & remote_bits) != 0;
  if (remote && !mr.RemoteAccess()) return STATUS_ACCESS_VIOLATION;
  // ref §3.7: 1..init-count PAGE_SIZE-aligned pages; Length <= pages*PAGE_SIZE - FBO; the base
  // address is FBO + n*PAGE_SIZE (0 only with FBO 0).
  if (pages == nullptr || page_count == 0 || page_count > mr.PageCapacity()) return STATUS_INVALID_PARAMETER;
  for (ULONG i = 0; i < page_count; ++i) {
    if (pages[i].QuadPart == 0 || (pages[i].QuadPart & (PAGE_SIZE - 1)) != 0) return STATUS_INVALID_PARAMETER;
  }
  const auto address = reinterpret_cast<std::uint64_t>(base);
  const std::uint64_t span = std::uint64_t{page_count} * PAGE_SIZE;
  if (fbo >= PAGE_SIZE || length == 0 || length > span - fbo || address % PAGE_SIZE != fbo ||
      address + length < address) {
    return STATUS_INVALID_PARAMETER;
  }
  return STATUS_SUCCESS;
}

}  // namespace

namespace qp_internal {

NTSTATUS FastRegister(NDK_QP* ndk, PVOID context, NDK_MR* ndk_mr, ULONG page_count,
                      const NDK_LOGICAL_ADDRESS* pages, ULONG fbo, SIZE_T length, PVOID base, ULONG flags) {
  Qp& qp = Qp::From(ndk);
  if (const NTSTATUS s = ValidateFastRegister(qp, ndk_mr, page_count, pages, fbo, length, base, flags);
      s != STATUS_SUCCESS) {
    qp.KickDeferred();
    return s;
  }
  Mr& mr = Mr::From(ndk_mr);
  std::uint64_t* list = qp.PageListFor(page_count);
  for (ULONG i = 0; i < page_count; ++i) list[i] = static_cast<std::uint64_t>(pages[i].QuadPart);
  const hw::MemoryKey key = mr.FastRegisterKey();
  const auto address = reinterpret_cast<std::uint64_t>(base);
  const std::uint32_t access = OpAccessBits(flags);
  qp.PostMemory({.opcode = hw::WqeOpcode::kFastRegister,
                 .context = context,
                 .flags = flags,
                 .target_key = key.value,
                 .target_generation = mr.Generation(),
                 .address = address,
                 .length = length,
                 .access = access,
                 .fbo = fbo,
                 .page_list = list,
                 .page_count = page_count});
  mr.FastRegisterPosted(key, address, length, access);  // ref §3.7: token available on return
  return STATUS_SUCCESS;
}

}  // namespace qp_internal

namespace {

// The token an NdkInvalidate names, or a failure status (ndksim's choices: a non-MR/MW object is
// INVALID_PARAMETER; an MR registered with NdkRegisterMr is INVALID_DEVICE_REQUEST, ref §3.8).
NTSTATUS InvalidateTarget(const Qp& qp, NDK_OBJECT_HEADER* header, std::uint32_t* token, std::uint32_t* generation) {
  if (header == nullptr) return STATUS_INVALID_PARAMETER;
  if (header->ObjectType == NdkObjectTypeMr) {
    const Mr& mr = OwnerOfHeader<Mr, NDK_MR>(header);
    if (&mr.GetPd() != &qp.GetPd()) return STATUS_INVALID_PARAMETER;
    if (!mr.IsFastRegister() || mr.PageCapacity() == 0) return STATUS_INVALID_DEVICE_REQUEST;
    *token = mr.Token();
    *generation = mr.Generation();
    return STATUS_SUCCESS;
  }
  if (header->ObjectType == NdkObjectTypeMw) {
    const Mw& mw = OwnerOfHeader<Mw, NDK_MW>(header);
    if (&mw.GetPd() != &qp.GetPd()) return STATUS_INVALID_PARAMETER;
    *token = mw.Token();
    *generation = mw.Generation();
    return STATUS_SUCCESS;
  }
  return STATUS_INVALID_PARAMETER;
}

}  // namespace

namespace qp_internal {

NTSTATUS Invalidate(NDK_QP* ndk, PVOID context, NDK_OBJECT_HEADER* header, ULONG flags) {
  Qp& qp = Qp::From(ndk);
  std::uint32_t token = 0;
  std::uint32_t generation = 0;
  NTSTATUS s = qp.CheckInitiatorRoom();
  if (s == STATUS_SUCCESS) s = (flags & ~kCommonFlags) != 0 ? STATUS_INVALID_PARAMETER : InvalidateTarget(qp, header, &token, &generation);
  if (s != STATUS_SUCCESS) {
    qp.KickDeferred();
    return s;
  }
  qp.PostMemory({.opcode = hw::WqeOpcode::kLocalInvalidate,
                 .context = context,
                 .flags = flags,
                 .target_key = token,
                 .target_generation = generation});
  // Whether the token was valid is known when the WQE executes (an unbound window or an
  // unregistered FR MR completes with STATUS_INVALID_DEVICE_REQUEST, ref §3.8).
  if (header->ObjectType == NdkObjectTypeMr) OwnerOfHeader<Mr, NDK_MR>(header).InvalidatePosted();
  return STATUS_SUCCESS;
}

}  // namespace qp_internal

}  // namespace ndksim::provider
