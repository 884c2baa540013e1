// SPDX-License-Identifier: MIT
// NDK_CQ: creation, the CQ dispatch table, and the poll path that turns CQEs into NDK results
// without locks or allocation (DESIGN.md "CQ ring").
#include "cq.h"

#include <algorithm>
#include <bit>

#include "control.h"
#include "driver.h"
#include "qp.h"
#include "srq.h"
#include "status.h"

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

// The RequestContext of the SRQ WQE an SRQ receive's CQE names, freeing its slot in the SRQ the
// CQE names too: an SRQ WQE belongs to its SRQ, not to the QP it served, which may be gone.
void* RetireSrqWqe(const Driver& driver, const hw::Cqe& cqe) {
  Srq* srq = driver.FindSrq(cqe.srqn);
  return srq != nullptr ? srq->Retire(cqe.wqe_counter) : nullptr;
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
  // An SRQ receive names a WQE of the QP's SRQ; QPContext is still the QP the message arrived on
  // (ndksim's choice, ref §6 item 14).
  if ((cqe.flags & hw::cqe_flag::kSrq) != 0) {
    out.RequestContext = RetireSrqWqe(driver, cqe);
  } else {
    out.RequestContext = receive ? qp.RetireReceive(cqe.wqe_counter) : qp.RetireSend(cqe.wqe_counter, cqe.syndrome == hw::CompletionSyndrome::kSuccess);
  }
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
    // A CQE of a QP the consumer has already closed has nobody to go to (ref §4.4). Its SRQ
    // receive WQE's slot is freed all the same, or the SRQ would shrink by one.
    Qp* qp = driver.FindQp(cqe.qpn);
    if (qp == nullptr) {
      if ((cqe.flags & hw::cqe_flag::kSrq) != 0) (void)RetireSrqWqe(driver, cqe);
      continue;
    }
    Convert(driver, *qp, cqe, results[count]);
    ++count;
  }
  if (index != poll_index_) {
    if (host_cpu_ != nullptr) host_cpu_->Poll(index - poll_index_);  // the caller's core read these CQEs
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
  // ref §4.2: an arm made before the callback of the pending one merges with it: same epoch.
  // acquire: pairs with the exchange in Notify.
  std::uint32_t epoch = pending_arm_.load(std::memory_order_acquire);
  if (epoch == 0) {
    if (++last_arm_ == 0) ++last_arm_;  // 0 means "none pending"
    epoch = last_arm_;
    pending_arm_.store(epoch, std::memory_order_release);
  }
  // The consumer index tells the NIC which entries we have seen: it fires at once if newer ones
  // are already there (ref §4.2 arm-after-poll race).
  GetDriver().RingDoorbell({hw::Doorbell::Kind::kCqArm, kind, number_.value, poll_index_, 0, epoch});
}

void Cq::Notify(NTSTATUS status, std::uint32_t epoch) {
  // ref §4.4: no notification once the consumer has asked to close the CQ.
  if (Closing()) return;
  // One callback per arm (ref §4.2): a notification of an epoch already called back, or of none
  // pending, is dropped. acq_rel: pairs with Arm's load and store.
  std::uint32_t expected = epoch;
  if (epoch == 0 || !pending_arm_.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
  // Runs on the engine thread from the event DPC, one event at a time: callbacks of one CQ never
  // overlap (ref §4.2), and one that arrives while another runs waits for the next event.
  in_callback_ = true;
  notify_(notify_context_, status);
  // Still alive: a close from inside the callback pends on in_callback_ and finishes in a DPC.
  in_callback_ = false;
}

std::uint32_t Cq::QueuedEntries() const {
  std::uint32_t n = 0;
  // acquire: as in Poll; an entry counted here has all its fields written.
  while (n < entry_count_ &&
         entries_[(poll_index_ + n) & (entry_count_ - 1)].owner.load(std::memory_order_acquire) ==
             hw::OwnerParity(poll_index_ + n, entry_count_)) {
    ++n;
  }
  return n;
}

NTSTATUS Cq::Resize(ULONG depth) {
  Driver& driver = GetDriver();
  if (depth == 0 || depth > driver.Profile().max_cq_depth) return STATUS_INVALID_PARAMETER;
  const std::uint32_t queued = QueuedEntries();
  if (queued > depth) return STATUS_BUFFER_OVERFLOW;  // NDSPI analogue: CQ left unchanged
  const auto entry_count = std::bit_ceil(std::max<std::uint32_t>(depth, 2));
  CqeArray entries(entry_count);
  // The consumer index runs on across the resize: slot j is next written for the first index
  // i >= poll_index_ with i % entry_count == j, so it starts as "not yet written" for that pass.
  for (std::uint32_t k = 0; k < entry_count; ++k) {
    const std::uint32_t i = poll_index_ + k;
    entries[i & (entry_count - 1)].owner.store(hw::OwnerParity(i, entry_count) ^ 1u,
                                               std::memory_order_relaxed);
  }
  // The unread entries move first, in order; CQEs still in flight land after them (ref §3.12:
  // no completion is lost).
  for (std::uint32_t k = 0; k < queued; ++k) {
    const std::uint32_t i = poll_index_ + k;
    const hw::Cqe& from = entries_[i & (entry_count_ - 1)];
    hw::Cqe& to = entries[i & (entry_count - 1)];
    to.qpn = from.qpn;
    to.wqe_counter = from.wqe_counter;
    to.byte_count = from.byte_count;
    to.invalidated_key = from.invalidated_key;
    to.vendor_error = from.vendor_error;
    to.opcode = from.opcode;
    to.syndrome = from.syndrome;
    to.flags = from.flags;
    to.srqn = from.srqn;
    to.owner.store(hw::OwnerParity(i, entry_count), std::memory_order_relaxed);
  }
  const hw::CompletionQueueMemory memory{entries.get(), entry_count, &consumer_index_};
  const hw::CommandStatus status = driver.Nic().ResizeCq(number_, memory, queued);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  entries_ = std::move(entries);
  entry_count_ = entry_count;
  depth_ = depth;
  driver.Trace("resize cq {} depth {} entries {} moved {}", number_.value, depth, entry_count, queued);
  return STATUS_SUCCESS;
}

NTSTATUS Cq::ControlModeration(ULONG interval_us, ULONG count) {
  Driver& driver = GetDriver();
  // ref §3.14: mandated without the adapter flag, never returned with it.
  if (!driver.Profile().cq_interrupt_moderation) return STATUS_NOT_SUPPORTED;
  const bool count_off = count == MAXULONG || count > depth_;
  if (interval_us == MAXULONG && count_off) return STATUS_INVALID_PARAMETER_MIX;
  const hw::CqModeration moderation{interval_us, count_off ? hw::CqModeration::kUnlimited : count};
  const hw::CommandStatus status = driver.Nic().ModerateCq(number_, moderation);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  driver.Trace("moderate cq {} interval {}us count {}", number_.value, interval_us, count);
  return STATUS_SUCCESS;
}

// ---- creation ----------------------------------------------------------------------------------

namespace {

NTSTATUS CloseCq(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion, PVOID context) {
  Cq& cq = OwnerOfHeader<Cq, NDK_CQ>(header);
  cq.GetDriver().Trace("close cq {}", cq.Number().value);
  return cq.GetAdapter().Close(cq, completion, context);
}

// The command interface is synchronous; the report may still pend per the async setting (ref §3.0).
NTSTATUS ResizeCq(NDK_CQ* ndk, ULONG depth, NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  Cq& cq = Cq::From(ndk);
  return cq.GetAdapter().FinishRequest(cq, cq.Resize(depth), completion, context);
}

VOID ArmCq(NDK_CQ* ndk, ULONG type) { Cq::From(ndk).Arm(type); }

ULONG GetCqResults(NDK_CQ* ndk, NDK_RESULT results[], ULONG n) {
  return Cq::From(ndk).Poll(results, n);
}

NTSTATUS ControlCqInterruptModeration(NDK_CQ* ndk, ULONG interval_us, ULONG count) {
  return Cq::From(ndk).ControlModeration(interval_us, count);
}

ULONG GetCqResultsEx(NDK_CQ* ndk, NDK_RESULT_EX results[], ULONG n) {
  return Cq::From(ndk).Poll(results, n);
}

const NDK_CQ_DISPATCH kCqDispatch = {
    Control<Cq, NDK_CQ, CloseCq>::Call,
    NdkQueryExtensionNotSupported,
    Control<Cq, NDK_CQ, ResizeCq>::Call,
    Control<Cq, NDK_CQ, ArmCq>::Call,
    GetCqResults,
    Control<Cq, NDK_CQ, ControlCqInterruptModeration>::Call,
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
  auto cq = std::make_unique<Cq>(adapter, depth, entry_count, notify, notify_context);
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

Cq::Cq(Adapter& adapter, std::uint32_t depth, std::uint32_t entry_count,
       NDK_FN_CQ_NOTIFICATION_CALLBACK notify, void* notify_context)
    : Object(adapter, NdkObjectTypeCq),
      notify_(notify),
      notify_context_(notify_context),
      depth_(depth),
      entry_count_(entry_count),
      entries_(entry_count) {
  InitNdk(handle_.ndk, adapter.Version(), NdkObjectTypeCq, &kCqDispatch);
  handle_.owner = this;
  if (hw::HostCpu& cpu = GetDriver().Host().Cpu(); cpu.Enabled()) host_cpu_ = &cpu;
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
