// SPDX-License-Identifier: MIT
// NDK_QP: creation and destruction, the QP dispatch table, Flush and MarkInError. The posting
// path is in qp_post.cc; bind, fast register and invalidate are in qp_memory.cc.
#include "qp.h"

#include <algorithm>
#include <bit>

#include "common/asymmetric_fence.h"
#include "control.h"
#include "cq.h"
#include "driver.h"
#include "memory.h"
#include "qp_internal.h"
#include "srq.h"
#include "status.h"

namespace ndksim::provider {

namespace {

// ---- queue geometry --------------------------------------------------------------------------

std::uint32_t CeilDiv(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

// Send WQE = control + remote + max(SGE segments, inline payload segments).
std::uint32_t SendStride(std::uint32_t sge, std::uint32_t inline_bytes) {
  const std::uint32_t payload = std::max(sge, CeilDiv(inline_bytes, hw::kWqeSegmentBytes));
  const std::uint32_t segments = static_cast<std::uint32_t>(hw::kSendWqeHeaderSegments) + payload;
  return std::bit_ceil(CeilDiv(segments, hw::kSegmentsPerBlock));
}

// Receive WQE = control + SGE segments.
std::uint32_t ReceiveStride(std::uint32_t sge) {
  return std::bit_ceil(CeilDiv(1 + sge, hw::kSegmentsPerBlock));
}

void InitQueue(WorkQueueState& q, std::uint32_t depth, std::uint32_t max_sge, std::uint32_t stride) {
  const std::uint32_t slots = std::bit_ceil(depth);
  q.ring = std::make_unique<hw::SpscRing<hw::WqeBlock>>(slots * stride);
  q.contexts = std::make_unique<void*[]>(slots);
  q.stride = stride;
  q.depth = depth;
  q.slot_mask = slots - 1;
  q.max_sge = max_sge;
}

}  // namespace

void Qp::MarkInError() {
  // relaxed: a cheap look; whoever set the flag first has already rung for what it could see.
  if (in_error_.load(std::memory_order_relaxed)) return;
  if (in_error_.exchange(true, std::memory_order_seq_cst)) return;
  // The heavy half of the store-load fence whose light half PostReceive runs (see there).
  HeavyFence();
  RingReceiveDoorbell();
}

void Qp::Flush() {
  // ref §3.9: returns at once; the NIC completes everything pending with STATUS_CANCELLED.
  GetDriver().Trace("flush qp {:#x}", qpn_.value);
  GetDriver().Nic().ModifyQpToError(qpn_);
  MarkInError();
}

// ---- dispatch ------------------------------------------------------------------------------------

namespace {

NTSTATUS CloseQp(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion, PVOID context) {
  Qp& qp = OwnerOfHeader<Qp, NDK_QP>(header);
  qp.GetDriver().Trace("close qp {:#x}", qp.Number().value);
  return qp.GetAdapter().Close(qp, completion, context);
}

VOID Flush(NDK_QP* ndk) { Qp::From(ndk).Flush(); }

const NDK_QP_DISPATCH kQpDispatch = {
    Control<Qp, NDK_QP, CloseQp>::Call,
    NdkQueryExtensionNotSupported,
    Control<Qp, NDK_QP, Flush>::Call,
    qp_internal::Send,
    qp_internal::Receive,
    qp_internal::Bind,
    qp_internal::FastRegister,
    qp_internal::Invalidate,
    qp_internal::Read,
    qp_internal::Write,
    qp_internal::SendAndInvalidate,
};

}  // namespace

// ---- creation --------------------------------------------------------------------------------------

NTSTATUS Qp::Create(Pd& pd, NDK_CQ* receive_cq, NDK_CQ* initiator_cq, void* qp_context,
                    const Limits& limits, NDK_QP** out, Srq* srq) {
  Driver& driver = pd.GetDriver();
  const HardwareProfile& p = driver.Profile();
  if (out == nullptr || receive_cq == nullptr || initiator_cq == nullptr) {
    return STATUS_INVALID_PARAMETER;
  }
  // ref §3.16: each limit against the adapter's; a zero depth is invalid too. With an SRQ the
  // receive limits are the SRQ's, checked when it was created.
  const bool own_receive_queue = srq == nullptr;
  if ((own_receive_queue && (limits.receive_depth == 0 || limits.receive_depth > p.max_receive_queue_depth)) ||
      limits.initiator_depth == 0 || limits.initiator_depth > p.max_initiator_queue_depth ||
      limits.receive_sge > p.max_receive_sge || limits.initiator_sge > p.max_initiator_sge ||
      limits.inline_bytes > p.max_inline_bytes) {
    return STATUS_INVALID_PARAMETER;
  }
  Cq& rcq = Cq::From(receive_cq);
  Cq& icq = Cq::From(initiator_cq);
  if (&rcq.GetAdapter() != &pd.GetAdapter() || &icq.GetAdapter() != &pd.GetAdapter()) {
    return STATUS_INVALID_PARAMETER;  // CQs of another adapter
  }
  if (srq != nullptr && &srq->GetPd() != &pd) return STATUS_INVALID_PARAMETER;  // SRQ of another PD
  auto qp = std::make_unique<Qp>(pd, rcq, icq, qp_context, limits, srq);
  const hw::QpCreate create{
      pd.Number(),
      icq.Number(),
      rcq.Number(),
      hw::WorkQueue{qp->send_.ring.get(), qp->send_.stride},
      hw::WorkQueue{qp->receive_.ring.get(), qp->receive_.stride},
      limits.inline_bytes,
      srq != nullptr ? srq->Number() : hw::SrqNumber{},
  };
  const hw::CommandStatus status = driver.Nic().CreateQp(create, &qp->qpn_);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  qp->created_ = true;
  driver.RegisterQp(qp->qpn_, qp.get());
  driver.Trace("create qp {:#x} rq {}x{} sq {}x{} inline {} strides {}/{}", qp->qpn_.value,
               limits.receive_depth, limits.receive_sge, limits.initiator_depth,
               limits.initiator_sge, limits.inline_bytes, qp->receive_.stride, qp->send_.stride);
  *out = pd.GetAdapter().Adopt(std::move(qp)).Ndk();
  return STATUS_SUCCESS;
}

Qp::Qp(Pd& pd, Cq& receive_cq, Cq& initiator_cq, void* qp_context, const Limits& limits, Srq* srq)
    : Object(pd.GetAdapter(), NdkObjectTypeQp),
      pd_(pd),
      receive_cq_(receive_cq),
      initiator_cq_(initiator_cq),
      qp_context_(qp_context),
      srq_(srq) {
  InitNdk(handle_.ndk, pd.Version(), NdkObjectTypeQp, &kQpDispatch);
  handle_.owner = this;
  const HardwareProfile& p = pd.GetDriver().Profile();
  inline_bytes_ = limits.inline_bytes;
  read_sge_ = std::min<std::uint32_t>(limits.initiator_sge, p.max_read_sge);
  max_transfer_ = p.max_transfer_bytes;
  InitQueue(send_, limits.initiator_depth, limits.initiator_sge,
            SendStride(limits.initiator_sge, limits.inline_bytes));
  // With an SRQ the QP has no receive ring of its own (the NIC gets a null one).
  if (srq_ == nullptr) {
    InitQueue(receive_, limits.receive_depth, limits.receive_sge, ReceiveStride(limits.receive_sge));
  }
  // ref §4.4: the QP is a successor of its PD, both CQs and its SRQ.
  pd_.AddSuccessor();
  receive_cq_.AddSuccessor();
  initiator_cq_.AddSuccessor();
  if (srq_ != nullptr) srq_->AddSuccessor();
}

Qp::~Qp() {
  if (created_) {
    Driver& driver = GetDriver();
    driver.RegisterQp(qpn_, nullptr);
    driver.Nic().DestroyQp(qpn_);
  }
  // Binds whose WQEs never retired may or may not have executed before the NIC dropped them.
  if (binds_outstanding_.load(std::memory_order_relaxed) != 0) {
    for (std::uint32_t slot = 0; slot <= send_.slot_mask; ++slot) {
      MemorySlot& m = memory_slots_[slot];
      if (m.binding != nullptr) m.binding->Resolved(*m.mr, *this, WindowBinding::Outcome::kUnknown);
    }
  }
  if (srq_ != nullptr) srq_->ReleaseSuccessor();
  initiator_cq_.ReleaseSuccessor();
  receive_cq_.ReleaseSuccessor();
  pd_.ReleaseSuccessor();
}

}  // namespace ndksim::provider
