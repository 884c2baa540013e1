// SPDX-License-Identifier: MIT
// NDK_PD, NDK_MR and NDK_MW: protection domains and their privileged token, memory registration and
// fast-register regions (ref §3.15), memory windows (ref §3.6), and the driver's table of
// registrations used by the posting path.
#include "memory.h"

#include "control.h"
#include "driver.h"
#include "qp.h"
#include "srq.h"
#include "status.h"

namespace ndksim::provider {

// ---- MemoryTable -------------------------------------------------------------------------------

void MemoryTable::Publish(hw::MemoryKey key, hw::PdNumber pd, std::uint64_t address,
                          std::uint64_t length, std::uint32_t access, bool privileged) {
  MemoryEntry& e = entries_.Slot(key.Index());
  e.pd = pd.value;
  e.access = access;
  e.privileged = privileged;
  e.address = address;
  e.length = length;
  // release: pairs with the acquire load in CoversLocal; the fields above are visible to any
  // poster that sees this token.
  e.tagged_token.store(MemoryEntry::kValid | key.value, std::memory_order_release);
}

void MemoryTable::Revoke(hw::MemoryKey key) {
  MemoryEntry& e = entries_.Slot(key.Index());
  // release: pairs with the acquire load in CoversLocal; later posts with this token fail.
  e.tagged_token.store(0, std::memory_order_release);
}

// ---- PD ----------------------------------------------------------------------------------------

namespace {

NTSTATUS ClosePd(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion, PVOID context) {
  Pd& pd = OwnerOfHeader<Pd, NDK_PD>(header);
  pd.GetDriver().Trace("close pd {}", pd.Number().value);
  return pd.GetAdapter().Close(pd, completion, context);
}

NTSTATUS CreateMr(NDK_PD* ndk, BOOLEAN fast_register, NDK_FN_CREATE_COMPLETION completion,
                  PVOID context, NDK_MR** out) {
  Pd& pd = Pd::From(ndk);
  return CreateMaybeAsync(pd.GetAdapter(), completion, context, out,
                          [&](NDK_MR** o) { return Mr::Create(pd, fast_register, o); });
}

NTSTATUS CreateMw(NDK_PD* ndk, NDK_FN_CREATE_COMPLETION completion, PVOID context, NDK_MW** out) {
  Pd& pd = Pd::From(ndk);
  return CreateMaybeAsync(pd.GetAdapter(), completion, context, out,
                          [&](NDK_MW** o) { return Mw::Create(pd, o); });
}

NTSTATUS CreateSrq(NDK_PD* ndk, ULONG depth, ULONG max_sge, ULONG threshold,
                   NDK_FN_SRQ_NOTIFICATION_CALLBACK notify, PVOID notify_context,
                   GROUP_AFFINITY* /*affinity: a hint*/, NDK_FN_CREATE_COMPLETION completion,
                   PVOID context, NDK_SRQ** out) {
  Pd& pd = Pd::From(ndk);
  return CreateMaybeAsync(pd.GetAdapter(), completion, context, out, [&](NDK_SRQ** o) {
    return Srq::Create(pd, depth, max_sge, threshold, notify, notify_context, o);
  });
}

NTSTATUS CreateQp(NDK_PD* ndk, NDK_CQ* receive_cq, NDK_CQ* initiator_cq, PVOID qp_context,
                  ULONG receive_depth, ULONG initiator_depth, ULONG receive_sge,
                  ULONG initiator_sge, ULONG inline_bytes, NDK_FN_CREATE_COMPLETION completion,
                  PVOID context, NDK_QP** out) {
  const Qp::Limits limits{receive_depth, initiator_depth, receive_sge, initiator_sge, inline_bytes};
  Pd& pd = Pd::From(ndk);
  return CreateMaybeAsync(pd.GetAdapter(), completion, context, out, [&](NDK_QP** o) {
    return Qp::Create(pd, receive_cq, initiator_cq, qp_context, limits, o);
  });
}

// ref §3.16: as NdkCreateQp without the receive-queue limits; receives come from `srq`.
NTSTATUS CreateQpWithSrq(NDK_PD* ndk, NDK_CQ* receive_cq, NDK_CQ* initiator_cq, NDK_SRQ* srq,
                         PVOID qp_context, ULONG initiator_depth, ULONG initiator_sge,
                         ULONG inline_bytes, NDK_FN_CREATE_COMPLETION completion, PVOID context,
                         NDK_QP** out) {
  if (srq == nullptr) return STATUS_INVALID_PARAMETER;
  const Qp::Limits limits{0, initiator_depth, 0, initiator_sge, inline_bytes};
  Pd& pd = Pd::From(ndk);
  Srq& shared = Srq::From(srq);
  return CreateMaybeAsync(pd.GetAdapter(), completion, context, out, [&](NDK_QP** o) {
    return Qp::Create(pd, receive_cq, initiator_cq, qp_context, limits, o, &shared);
  });
}

// ref §3.15: the PD's one privileged token (local read+write on logical addresses, never remote).
VOID GetPrivilegedMemoryRegionToken(NDK_PD* ndk, UINT32* token) {
  if (token != nullptr) *token = Pd::From(ndk).PrivilegedToken();
}

const NDK_PD_DISPATCH kPdDispatch = {
    Control<Pd, NDK_PD, ClosePd>::Call,
    NdkQueryExtensionNotSupported,
    Control<Pd, NDK_PD, CreateMr>::Call,
    Control<Pd, NDK_PD, CreateMw>::Call,
    Control<Pd, NDK_PD, CreateSrq>::Call,
    Control<Pd, NDK_PD, CreateQp>::Call,
    Control<Pd, NDK_PD, CreateQpWithSrq>::Call,
    Control<Pd, NDK_PD, GetPrivilegedMemoryRegionToken>::Call,
};

}  // namespace

NTSTATUS Pd::Create(Adapter& adapter, NDK_PD** out) {
  if (out == nullptr) return STATUS_INVALID_PARAMETER;
  Driver& driver = adapter.GetDriver();
  hw::PdNumber number;
  const hw::CommandStatus status = driver.Nic().AllocatePd(&number);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  hw::MemoryKey privileged;
  if (const hw::CommandStatus s = driver.Nic().AllocatePrivilegedKey(number, &privileged); s != hw::CommandStatus::kOk) {
    driver.Nic().FreePd(number);
    return CommandToNtStatus(s);
  }
  Pd& pd = adapter.Adopt(std::make_unique<Pd>(adapter, number));
  pd.privileged_key_ = privileged;
  // ref §2.2: SGEs with this token carry logical addresses; no range applies.
  driver.Memory().Publish(privileged, number, 0, 0, hw::access::kLocalWrite, /*privileged=*/true);
  driver.Trace("create pd {}", number.value);
  *out = pd.Ndk();
  return STATUS_SUCCESS;
}

Pd::Pd(Adapter& adapter, hw::PdNumber number) : Object(adapter, NdkObjectTypePd), number_(number) {
  InitNdk(handle_.ndk, adapter.Version(), NdkObjectTypePd, &kPdDispatch);
  handle_.owner = this;
}

Pd::~Pd() {
  Driver& driver = GetDriver();
  if (privileged_key_.value != 0) {
    driver.Memory().Revoke(privileged_key_);
    driver.Nic().FreeMemoryKey(privileged_key_);
  }
  driver.Nic().FreePd(number_);
}

// ---- MR ----------------------------------------------------------------------------------------

namespace {

constexpr ULONG kKnownMrFlags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                                NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_RDMA_READ_SINK;
constexpr ULONG kRemoteWriteOnlyBit = NDK_MR_FLAG_ALLOW_REMOTE_WRITE & ~NDK_MR_FLAG_ALLOW_LOCAL_WRITE;

// ref §1.5: flags are ORs of the defined values; REMOTE_WRITE (0x5) carries LOCAL_WRITE, so its
// 0x4 bit alone is not a flag anybody can pass.
bool ValidMrFlags(ULONG flags) {
  if ((flags & ~kKnownMrFlags) != 0) return false;
  const bool remote_write_bit = (flags & kRemoteWriteOnlyBit) != 0;
  return !remote_write_bit || (flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE) != 0;
}

std::uint32_t AccessBits(ULONG flags) {
  std::uint32_t access = 0;
  if (flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE) access |= hw::access::kLocalWrite;
  if (flags & NDK_MR_FLAG_ALLOW_REMOTE_READ) access |= hw::access::kRemoteRead;
  // ref §1.5 bit-test caution: a plain AND would match LOCAL_WRITE alone.
  if ((flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == NDK_MR_FLAG_ALLOW_REMOTE_WRITE) {
    access |= hw::access::kRemoteWrite;
  }
  if (flags & NDK_MR_FLAG_RDMA_READ_SINK) access |= hw::access::kReadSink;
  return access;
}

// ref §3.15: the span starts at the first MDL's virtual address and must be virtually contiguous
// across the pieces it reaches into, and fit in the chain.
NTSTATUS CheckMdlSpan(const MDL* mdl, SIZE_T length) {
  SIZE_T covered = 0;
  auto expected_next = reinterpret_cast<std::uintptr_t>(MmGetMdlVirtualAddress(mdl));
  for (const MDL* piece = mdl; piece != nullptr; piece = piece->Next) {
    const auto va = reinterpret_cast<std::uintptr_t>(MmGetMdlVirtualAddress(piece));
    if (covered < length && va != expected_next) return STATUS_INVALID_PARAMETER;
    covered += MmGetMdlByteCount(piece);
    expected_next = va + MmGetMdlByteCount(piece);
  }
  // NDSPI analogue: a length beyond the buffer is STATUS_INVALID_BUFFER_SIZE.
  return length > covered ? STATUS_INVALID_BUFFER_SIZE : STATUS_SUCCESS;
}

NTSTATUS CloseMr(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion, PVOID context) {
  Mr& mr = OwnerOfHeader<Mr, NDK_MR>(header);
  mr.GetDriver().Trace("close mr {:#x}", mr.Token());
  return mr.GetAdapter().Close(mr, completion, context);
}

// Both may pend per the async setting (ref §3.0); FinishRequest keeps failures inline.
NTSTATUS RegisterMr(NDK_MR* ndk, MDL* mdl, SIZE_T length, ULONG flags,
                    NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  Mr& mr = Mr::From(ndk);
  return mr.GetAdapter().FinishRequest(mr, mr.Register(mdl, length, flags), completion, context);
}

NTSTATUS DeregisterMr(NDK_MR* ndk, NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  Mr& mr = Mr::From(ndk);
  return mr.GetAdapter().FinishRequest(mr, mr.Deregister(), completion, context);
}

NTSTATUS InitializeFastRegisterMr(NDK_MR* ndk, ULONG page_count, BOOLEAN remote_access,
                                  NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  Mr& mr = Mr::From(ndk);
  return mr.GetAdapter().FinishRequest(mr, mr.InitializeFastRegister(page_count, remote_access), completion,
                                       context);
}

// Local token = remote token = the NIC's memory key (the token index selects the NIC's table entry).
UINT32 GetRemoteTokenFromMr(NDK_MR* ndk) { return Mr::From(ndk).Token(); }
UINT32 GetLocalTokenFromMr(NDK_MR* ndk) { return Mr::From(ndk).Token(); }

const NDK_MR_DISPATCH kMrDispatch = {
    Control<Mr, NDK_MR, CloseMr>::Call,
    NdkQueryExtensionNotSupported,
    Control<Mr, NDK_MR, RegisterMr>::Call,
    Control<Mr, NDK_MR, DeregisterMr>::Call,
    Control<Mr, NDK_MR, InitializeFastRegisterMr>::Call,
    GetRemoteTokenFromMr,
    GetLocalTokenFromMr,
};

}  // namespace

NTSTATUS Mr::Create(Pd& pd, BOOLEAN fast_register, NDK_MR** out) {
  if (out == nullptr) return STATUS_INVALID_PARAMETER;
  Mr& mr = pd.GetAdapter().Adopt(std::make_unique<Mr>(pd));
  // ref §3.15: TRUE = only InitializeFastRegisterMr/NdkFastRegister; FALSE = only NdkRegisterMr.
  mr.fast_register_ = fast_register != FALSE;
  pd.GetDriver().Trace("create mr on pd {}", pd.Number().value);
  *out = mr.Ndk();
  return STATUS_SUCCESS;
}

Mr::Mr(Pd& pd) : Object(pd.GetAdapter(), NdkObjectTypeMr), pd_(pd) {
  InitNdk(handle_.ndk, pd.Version(), NdkObjectTypeMr, &kMrDispatch);
  handle_.owner = this;
  pd_.AddSuccessor();
}

Mr::~Mr() {
  // The MR -> MW edges (WindowBinding) keep an MR open while the NIC may map a window inside it,
  // so the NIC never refuses this deregistration.
  if (registered_) NDKSIM_CHECK(Deregister() == STATUS_SUCCESS);
  if (fr_allocated_) {
    GetDriver().Memory().Revoke(key_);
    GetDriver().Nic().FreeMemoryKey(key_);
  }
  pd_.ReleaseSuccessor();
}

NTSTATUS Mr::Register(const MDL* mdl, SIZE_T length, ULONG flags) {
  Driver& driver = GetDriver();
  if (fast_register_) return STATUS_INVALID_DEVICE_REQUEST;  // ref §3.15: an FR MR never registers
  if (registered_) return STATUS_INVALID_DEVICE_STATE;
  if (mdl == nullptr || length == 0 || !ValidMrFlags(flags)) return STATUS_INVALID_PARAMETER;
  if (length > driver.Profile().max_registration_bytes) return STATUS_INVALID_PARAMETER;
  const auto va = reinterpret_cast<std::uint64_t>(MmGetMdlVirtualAddress(mdl));
  if (va == 0) return STATUS_INVALID_PARAMETER;  // ref §3.15: zero-based VAs are unsupported
  if (const NTSTATUS s = CheckMdlSpan(mdl, length); s != STATUS_SUCCESS) return s;

  const std::uint32_t access = AccessBits(flags);
  // In one process the VA is also where the bytes live: the NIC's DMA target.
  const hw::MemoryRegistration reg{pd_.Number(), va, length,
                                   static_cast<std::byte*>(MmGetMdlVirtualAddress(mdl)), access};
  hw::MemoryKey key;
  const hw::CommandStatus status = driver.Nic().RegisterMemory(reg, &key, &generation_);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  key_ = key;
  registered_ = true;
  address_ = va;
  length_ = length;
  access_ = access;
  driver.Memory().Publish(key, pd_.Number(), va, length, access);
  // No VA in the trace: host addresses differ between runs, traces must not (DESIGN.md).
  driver.Trace("register mr {:#x} length {} access {:#x}", key.value, length, access);
  return STATUS_SUCCESS;
}

NTSTATUS Mr::Deregister() {
  Driver& driver = GetDriver();
  if (fast_register_) return STATUS_INVALID_DEVICE_REQUEST;
  if (!registered_) return STATUS_INVALID_DEVICE_STATE;
  // NDSPI analogue (ref §3.6): kBusy -> STATUS_DEVICE_BUSY while a window is bound inside.
  const hw::CommandStatus status = driver.Nic().DeregisterMemory(key_);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  driver.Memory().Revoke(key_);
  registered_ = false;
  driver.Trace("deregister mr {:#x}", key_.value);
  return STATUS_SUCCESS;
}

NTSTATUS Mr::InitializeFastRegister(ULONG page_count, BOOLEAN remote_access) {
  Driver& driver = GetDriver();
  if (!fast_register_) return STATUS_INVALID_DEVICE_REQUEST;  // ref §3.15
  if (page_count == 0) return STATUS_INVALID_PARAMETER;
  if (page_count > driver.Profile().frmr_page_count) return STATUS_IMPLEMENTATION_LIMIT;
  // May be called again (ref §3.15): the new entry replaces the old one.
  hw::MemoryKey key;
  std::uint32_t generation = 0;
  const hw::CommandStatus status =
      driver.Nic().AllocateFastRegisterKey(pd_.Number(), page_count, remote_access != FALSE, &key, &generation);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  if (fr_allocated_) {
    driver.Memory().Revoke(key_);
    driver.Nic().FreeMemoryKey(key_);
  }
  key_ = key;
  generation_ = generation;
  fr_allocated_ = true;
  remote_access_ = remote_access != FALSE;
  page_capacity_ = page_count;
  driver.Trace("initialize fr mr {:#x} pages {} remote {}", key.value, page_count, remote_access_);
  return STATUS_SUCCESS;
}

void Mr::FastRegisterPosted(hw::MemoryKey key, std::uint64_t address, std::uint64_t length, std::uint32_t access) {
  Driver& driver = GetDriver();
  driver.Memory().Revoke(key_);
  key_ = key;
  driver.Memory().Publish(key, pd_.Number(), address, length, access);
}

hw::MemoryKey Mr::FastRegisterKey() const {
  if (!GetDriver().Profile().rotate_fast_register_keys) return key_;
  return hw::MemoryKey::Make(key_.Index(), static_cast<std::uint8_t>(key_.KeyByte() + 1));
}

void Mr::InvalidatePosted() { GetDriver().Memory().Revoke(key_); }

// ---- MW ----------------------------------------------------------------------------------------

namespace {

NTSTATUS CloseMw(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion, PVOID context) {
  Mw& mw = OwnerOfHeader<Mw, NDK_MW>(header);
  mw.GetDriver().Trace("close mw {:#x}", mw.Token());
  return mw.GetAdapter().Close(mw, completion, context);
}

// ref §3.6: valid as soon as NdkBind returns (the bind posted the new key byte).
UINT32 GetRemoteTokenFromMw(NDK_MW* ndk) { return Mw::From(ndk).Token(); }

const NDK_MW_DISPATCH kMwDispatch = {
    Control<Mw, NDK_MW, CloseMw>::Call,
    NdkQueryExtensionNotSupported,
    GetRemoteTokenFromMw,
};

}  // namespace

NTSTATUS Mw::Create(Pd& pd, NDK_MW** out) {
  if (out == nullptr) return STATUS_INVALID_PARAMETER;
  Driver& driver = pd.GetDriver();
  hw::MemoryKey key;
  std::uint32_t generation = 0;
  const hw::CommandStatus status = driver.Nic().AllocateWindowKey(pd.Number(), &key, &generation);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  Mw& mw = pd.GetAdapter().Adopt(std::make_unique<Mw>(pd, key, generation));
  driver.Trace("create mw {:#x} on pd {}", key.value, pd.Number().value);
  *out = mw.Ndk();
  return STATUS_SUCCESS;
}

Mw::Mw(Pd& pd, hw::MemoryKey key, std::uint32_t generation)
    : Object(pd.GetAdapter(), NdkObjectTypeMw), pd_(pd), key_(key), generation_(generation) {
  InitNdk(handle_.ndk, pd.Version(), NdkObjectTypeMw, &kMwDispatch);
  handle_.owner = this;
  pd_.AddSuccessor();
}

Mw::~Mw() {
  // The NIC unbinds the window now; binds still queued for it fail on its generation.
  GetDriver().Nic().FreeMemoryKey(key_);
  binding_->Close();
  pd_.ReleaseSuccessor();
}

std::shared_ptr<WindowBinding> Mw::BindPosted(hw::MemoryKey key, Mr& mr) {
  key_ = key;
  binding_->Posted(mr);
  return binding_;
}

// ---- window bindings -----------------------------------------------------------------------------

void WindowBinding::Posted(Mr& mr) {
  mr.AddSuccessor();
  edges.push_back(&mr);
  ++outstanding;
}

void WindowBinding::Resolved(Mr& mr, const Qp& qp, Outcome outcome) {
  if (!open) return;  // the close released every edge
  NDKSIM_CHECK(outstanding > 0);
  --outstanding;
  switch (outcome) {
    case Outcome::kExecuted:
      // Binds of one QP execute in posting order; across QPs the NIC's order is not known here.
      if (executed_on != nullptr && executed_on != &qp) uncertain = true;
      executed_on = &qp;
      newest_executed = &mr;
      break;
    case Outcome::kFailed:
      Drop(mr);  // the window never moved to `mr`
      break;
    case Outcome::kUnknown:
      uncertain = true;  // the QP closed first: the bind may or may not have executed
      break;
  }
  Settle();
}

void WindowBinding::Settle() {
  if (outstanding != 0 || newest_executed == nullptr || uncertain) return;
  // The NIC maps the window inside the newest executed bind's MR, and nothing else.
  std::vector<Mr*> keep;
  bool kept = false;
  for (Mr* mr : edges) {
    if (mr == newest_executed && !kept) {
      kept = true;
      keep.push_back(mr);
    } else {
      mr->ReleaseSuccessor();
    }
  }
  edges = std::move(keep);
  newest_executed = nullptr;
  executed_on = nullptr;
}

void WindowBinding::Drop(Mr& mr) {
  for (auto it = edges.begin(); it != edges.end(); ++it) {
    if (*it == &mr) {
      edges.erase(it);
      mr.ReleaseSuccessor();
      return;
    }
  }
}

void WindowBinding::Close() {
  open = false;
  for (Mr* mr : edges) mr->ReleaseSuccessor();
  edges.clear();
}

}  // namespace ndksim::provider
