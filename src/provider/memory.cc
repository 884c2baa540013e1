// NDK_PD and NDK_MR: protection domains, memory registration (ref §3.15) and the driver's table
// of registrations used by the posting path.
#include "provider/memory.h"

#include "provider/driver.h"
#include "provider/qp.h"
#include "provider/status.h"

namespace ndksim::provider {

// ---- MemoryTable -------------------------------------------------------------------------------

void MemoryTable::Publish(hw::MemoryKey key, hw::PdNumber pd, std::uint64_t address,
                          std::uint64_t length, std::uint32_t access) {
  MemoryEntry& e = entries_.Slot(key.Index());
  e.pd = pd.value;
  e.access = access;
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

NTSTATUS CreateMr(NDK_PD* ndk, BOOLEAN fast_register, NDK_FN_CREATE_COMPLETION, PVOID,
                  NDK_MR** out) {
  return Mr::Create(Pd::From(ndk), fast_register, out);
}

NTSTATUS CreateMw(NDK_PD*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MW**) {
  return STATUS_NOT_SUPPORTED;
}

NTSTATUS CreateSrq(NDK_PD*, ULONG, ULONG, ULONG, NDK_FN_SRQ_NOTIFICATION_CALLBACK, PVOID,
                   GROUP_AFFINITY*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_SRQ**) {
  return STATUS_NOT_SUPPORTED;  // MaxSrqDepth is reported as 0
}

NTSTATUS CreateQp(NDK_PD* ndk, NDK_CQ* receive_cq, NDK_CQ* initiator_cq, PVOID qp_context,
                  ULONG receive_depth, ULONG initiator_depth, ULONG receive_sge,
                  ULONG initiator_sge, ULONG inline_bytes, NDK_FN_CREATE_COMPLETION, PVOID,
                  NDK_QP** out) {
  const Qp::Limits limits{receive_depth, initiator_depth, receive_sge, initiator_sge, inline_bytes};
  return Qp::Create(Pd::From(ndk), receive_cq, initiator_cq, qp_context, limits, out);
}

NTSTATUS CreateQpWithSrq(NDK_PD*, NDK_CQ*, NDK_CQ*, NDK_SRQ*, PVOID, ULONG, ULONG, ULONG,
                         NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP**) {
  return STATUS_NOT_SUPPORTED;
}

VOID GetPrivilegedMemoryRegionToken(NDK_PD*, UINT32*) {}  // not supported yet

const NDK_PD_DISPATCH kPdDispatch = {
    ClosePd,
    NdkQueryExtensionNotSupported,
    CreateMr,
    CreateMw,
    CreateSrq,
    CreateQp,
    CreateQpWithSrq,
    GetPrivilegedMemoryRegionToken,
};

}  // namespace

NTSTATUS Pd::Create(Adapter& adapter, NDK_PD** out) {
  if (out == nullptr) return STATUS_INVALID_PARAMETER;
  Driver& driver = adapter.GetDriver();
  hw::PdNumber number;
  const hw::CommandStatus status = driver.Nic().AllocatePd(&number);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  Pd& pd = adapter.Adopt(std::make_unique<Pd>(adapter, number));
  driver.Trace("create pd {}", number.value);
  *out = pd.Ndk();
  return STATUS_SUCCESS;
}

Pd::Pd(Adapter& adapter, hw::PdNumber number) : Object(adapter, NdkObjectTypePd), number_(number) {
  InitNdk(handle_.ndk, adapter.Version(), NdkObjectTypePd, &kPdDispatch);
  handle_.owner = this;
}

Pd::~Pd() { GetDriver().Nic().FreePd(number_); }

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

NTSTATUS RegisterMr(NDK_MR* ndk, MDL* mdl, SIZE_T length, ULONG flags, NDK_FN_REQUEST_COMPLETION,
                    PVOID) {
  return Mr::From(ndk).Register(mdl, length, flags);
}

NTSTATUS DeregisterMr(NDK_MR* ndk, NDK_FN_REQUEST_COMPLETION, PVOID) {
  return Mr::From(ndk).Deregister();
}

NTSTATUS InitializeFastRegisterMr(NDK_MR*, ULONG, BOOLEAN, NDK_FN_REQUEST_COMPLETION, PVOID) {
  return STATUS_NOT_SUPPORTED;
}

// Local token = remote token = the NIC's memory key (the token index selects the NIC's table entry).
UINT32 GetRemoteTokenFromMr(NDK_MR* ndk) { return Mr::From(ndk).Token(); }
UINT32 GetLocalTokenFromMr(NDK_MR* ndk) { return Mr::From(ndk).Token(); }

const NDK_MR_DISPATCH kMrDispatch = {
    CloseMr,
    NdkQueryExtensionNotSupported,
    RegisterMr,
    DeregisterMr,
    InitializeFastRegisterMr,
    GetRemoteTokenFromMr,
    GetLocalTokenFromMr,
};

}  // namespace

NTSTATUS Mr::Create(Pd& pd, BOOLEAN fast_register, NDK_MR** out) {
  if (out == nullptr) return STATUS_INVALID_PARAMETER;
  if (fast_register) return STATUS_NOT_SUPPORTED;  // fast-register MRs come with NdkFastRegister
  Mr& mr = pd.GetAdapter().Adopt(std::make_unique<Mr>(pd));
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
  if (registered_) Deregister();
  pd_.ReleaseSuccessor();
}

NTSTATUS Mr::Register(const MDL* mdl, SIZE_T length, ULONG flags) {
  Driver& driver = GetDriver();
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
  const hw::CommandStatus status = driver.Nic().RegisterMemory(reg, &key);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  key_ = key;
  registered_ = true;
  driver.Memory().Publish(key, pd_.Number(), va, length, access);
  // No VA in the trace: host addresses differ between runs, traces must not (DESIGN.md).
  driver.Trace("register mr {:#x} length {} access {:#x}", key.value, length, access);
  return STATUS_SUCCESS;
}

NTSTATUS Mr::Deregister() {
  Driver& driver = GetDriver();
  if (!registered_) return STATUS_INVALID_DEVICE_STATE;
  const hw::CommandStatus status = driver.Nic().DeregisterMemory(key_);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  driver.Memory().Revoke(key_);
  registered_ = false;
  driver.Trace("deregister mr {:#x}", key_.value);
  return STATUS_SUCCESS;
}

}  // namespace ndksim::provider
