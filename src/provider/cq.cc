// NDK_CQ: creation, the CQ dispatch table, and the poll path that turns CQEs into NDK results
// without locks or allocation (DESIGN.md "CQ ring").
#include "provider/cq.h"

#include <algorithm>
#include <bit>

#include "provider/driver.h"
#include "provider/qp.h"
#include "provider/status.h"

namespace ndksim::provider {

namespace {

// NDK_RESULT_EX.Type of a completed WQE (ref §1.3). Receives are refined by the CQE flags.
constexpr std::array<NDK_OPERATION_TYPE, hw::kWqeOpcodeNames.size()> kOperationType = {
    NdkOperationTypeSend,          // Send
    NdkOperationTypeSend,          // SendInvalidate: the sender sees a plain Send (ref §3.2)
    NdkOperationTypeWrite,         // Write
    NdkOperationTypeRead,          // Read
    NdkOperationTypeBind,          // Bind
    NdkOperationTypeFastRegister,  // FastRegister
    NdkOperationTypeInvalidate,    // LocalInvalidate
    NdkOperationTypeReceive,       // Receive
};
static_assert(kOperationType.size() == static_cast<std::size_t>(hw::WqeOpcode::kReceive) + 1);

NDK_OPERATION_TYPE OperationType(const hw::Cqe& cqe) {
  if (cqe.flags & hw::cqe_flag::kReceive) {
    return (cqe.flags & hw::cqe_flag::kInvalidated) ? NdkOperationTypeReceiveAndInvalidate
                                                     : NdkOperationTypeReceive;
  }
  const auto i = static_cast<std::size_t>(cqe.opcode);
  return i < kOperationType.size() ? kOperationType[i] : NdkOperationTypeSend;
}

// The fields NDK_RESULT and NDK_RESULT_EX share.
template <typename Result>
void FillCommon(const Driver& driver, Qp& qp, const hw::Cqe& cqe, Result& out) {
  const bool receive = (cqe.flags & hw::cqe_flag::kReceive) != 0;
  // ref §4.7: an error completion means the QP is in error (receives posted later need flushing).
  if (cqe.syndrome != hw::CompletionSyndrome::kSuccess) qp.MarkInError();
  out.Status = driver.CompletionStatus()(cqe.syndrome);
  // ref §2.4: defined for receives only; 0 elsewhere keeps results deterministic.
  out.BytesTransferred = receive ? cqe.byte_count : 0;
  out.QPContext = qp.Context();
  out.RequestContext = receive ? qp.RetireReceive(cqe.wqe_counter) : qp.RetireSend(cqe.wqe_counter);
}

void Convert(const Driver& driver, Qp& qp, const hw::Cqe& cqe, NDK_RESULT& out) {
  FillCommon(driver, qp, cqe, out);
}

void Convert(const Driver& driver, Qp& qp, const hw::Cqe& cqe, NDK_RESULT_EX& out) {
  FillCommon(driver, qp, cqe, out);
  out.Type = OperationType(cqe);
  // ref §2.4: 0 on success; on failure the NIC's diagnostic (0 = none given).
  out.ProviderErrorCode = out.Status == STATUS_SUCCESS ? 0 : cqe.vendor_error;
  out.TypeSpecificCompletionOutput =
      out.Type == NdkOperationTypeReceiveAndInvalidate ? cqe.invalidated_key : 0;
}

}  // namespace

template <typename Result>
ULONG Cq::Poll(Result* results, ULONG capacity) {
  if (results == nullptr) return 0;
  const Driver& driver = GetDriver();
  const std::uint32_t mask = entry_count_ - 1;
  std::uint32_t index = poll_index_;
  ULONG count = 0;
  while (count < capacity) {
    const hw::Cqe& cqe = entries_[index & mask];
    // acquire: pairs with the completion engine's release store of the owner byte; the other
    // fields of this CQE are written before it and read after this load.
    if (cqe.owner.load(std::memory_order_acquire) != hw::OwnerParity(index, entry_count_)) break;
    ++index;
    // A CQE of a QP the consumer has already closed has nobody to go to (ref §4.4).
    Qp* qp = driver.FindQp(cqe.qpn);
    if (qp == nullptr) continue;
    Convert(driver, *qp, cqe, results[count]);
    ++count;
  }
  if (index != poll_index_) {
    poll_index_ = index;
    // release: pairs with the NIC's acquire load of the consumer index; our reads of the
    // consumed CQEs happen before it may overwrite them.
    consumer_index_.store(index, std::memory_order_release);
  }
  return count;
}

template ULONG Cq::Poll<NDK_RESULT>(NDK_RESULT*, ULONG);
template ULONG Cq::Poll<NDK_RESULT_EX>(NDK_RESULT_EX*, ULONG);

void Cq::Arm(ULONG type) {
  hw::CqArmKind kind;
  switch (type) {
    case NDK_CQ_NOTIFY_ERRORS: kind = hw::CqArmKind::kErrors; break;
    case NDK_CQ_NOTIFY_ANY: kind = hw::CqArmKind::kAny; break;
    case NDK_CQ_NOTIFY_SOLICITED: kind = hw::CqArmKind::kSolicited; break;
    default: return;  // not a notification type: nothing to arm
  }
  // The consumer index tells the NIC which entries we have seen: it fires at once if newer ones
  // are already there (ref §4.2 arm-after-poll race).
  GetDriver().RingDoorbell({hw::Doorbell::Kind::kCqArm, kind, number_.value, poll_index_});
}

void Cq::Notify(NTSTATUS status) {
  // Runs on the engine thread from the event DPC, one event at a time: callbacks of one CQ never
  // overlap (ref §4.2).
  notify_(notify_context_, status);
}

// ---- creation ----------------------------------------------------------------------------------

namespace {

NTSTATUS CloseCq(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion, PVOID context) {
  Cq& cq = OwnerOfHeader<Cq, NDK_CQ>(header);
  cq.GetDriver().Trace("close cq {}", cq.Number().value);
  return cq.GetAdapter().Close(cq, completion, context);
}

NTSTATUS ResizeCq(NDK_CQ*, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID) {
  return STATUS_NOT_SUPPORTED;  // ref §3.12: only with NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED
}

VOID ArmCq(NDK_CQ* ndk, ULONG type) { Cq::From(ndk).Arm(type); }

ULONG GetCqResults(NDK_CQ* ndk, NDK_RESULT results[], ULONG n) {
  return Cq::From(ndk).Poll(results, n);
}

NTSTATUS ControlCqInterruptModeration(NDK_CQ*, ULONG, ULONG) {
  return STATUS_NOT_SUPPORTED;  // ref §3.14: mandated without the adapter flag
}

ULONG GetCqResultsEx(NDK_CQ* ndk, NDK_RESULT_EX results[], ULONG n) {
  return Cq::From(ndk).Poll(results, n);
}

const NDK_CQ_DISPATCH kCqDispatch = {
    CloseCq,
    NdkQueryExtensionNotSupported,
    ResizeCq,
    ArmCq,
    GetCqResults,
    ControlCqInterruptModeration,
    GetCqResultsEx,
};

}  // namespace

NTSTATUS Cq::Create(Adapter& adapter, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notify,
                    void* notify_context, NDK_CQ** out) {
  Driver& driver = adapter.GetDriver();
  if (out == nullptr || notify == nullptr) return STATUS_INVALID_PARAMETER;
  if (depth == 0 || depth > driver.Profile().max_cq_depth) return STATUS_INVALID_PARAMETER;
  // At least two entries so that the owner parity of a one-entry ring still alternates usefully.
  const auto entry_count = std::bit_ceil(std::max<std::uint32_t>(depth, 2));
  auto cq = std::make_unique<Cq>(adapter, entry_count, notify, notify_context);
  const hw::CqCreate create{
      hw::CompletionQueueMemory{cq->entries_.get(), entry_count, &cq->consumer_index_},
      /*interrupt_vector=*/0};
  const hw::CommandStatus status = driver.Nic().CreateCq(create, &cq->number_);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  cq->created_ = true;
  driver.RegisterCq(cq->number_, cq.get());
  driver.Trace("create cq {} depth {} entries {}", cq->number_.value, depth, entry_count);
  *out = adapter.Adopt(std::move(cq)).Ndk();
  return STATUS_SUCCESS;
}

Cq::Cq(Adapter& adapter, std::uint32_t entry_count, NDK_FN_CQ_NOTIFICATION_CALLBACK notify,
       void* notify_context)
    : Object(adapter, NdkObjectTypeCq),
      notify_(notify),
      notify_context_(notify_context),
      entry_count_(entry_count),
      entries_(std::make_unique<hw::Cqe[]>(entry_count)) {
  InitNdk(handle_.ndk, adapter.Version(), NdkObjectTypeCq, &kCqDispatch);
  handle_.owner = this;
  // Owner 1 is "not yet written" for pass 0 (OwnerParity(i, n) == 0 for i < n). relaxed: the
  // CreateCq command hands the memory to the NIC after this.
  for (std::uint32_t i = 0; i < entry_count; ++i) entries_[i].owner.store(1, std::memory_order_relaxed);
}

Cq::~Cq() {
  if (!created_) return;
  Driver& driver = GetDriver();
  driver.RegisterCq(number_, nullptr);
  driver.Nic().DestroyCq(number_);
}

}  // namespace ndksim::provider
