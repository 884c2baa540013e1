// SPDX-License-Identifier: MIT
// Doorbell registers: record the newest producer index, charge the QP's processing unit, and hand
// the QP to WQE fetch (or take the WQE the MMIO write carried).
#include "doorbell_unit.h"

#include <algorithm>

#include "completion_engine.h"
#include "context_cache.h"
#include "contexts.h"
#include "pcie_link.h"
#include "processing_units.h"
#include "responder.h"
#include "wqe_fetch.h"
#include "common/prefetch.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

void DoorbellUnit::OnCreate(QpContext& qp) {
  // The register starts at the ring's producer index: nothing is posted yet.
  qp.doorbell.index = qp.send_queue.ring->ProducerIndex();
  qp.doorbell.arrived = qp.doorbell.index;
}

void DoorbellUnit::ReadAheadWqes(const QpContext& qp, std::uint32_t index) {
  // Not part of the model (simulated time and state are untouched): the host cache is asked for
  // the first line of the newest WQEs the doorbell covers, which WQE fetch reads a few events
  // later. In threaded mode those lines were just written on the posting thread's core.
  const std::uint32_t stride = qp.send_queue.stride_blocks;
  const std::uint32_t covered = (index - qp.doorbell.arrived) / stride;
  const std::uint32_t count = std::min(covered, kReadAheadWqes);
  for (std::uint32_t i = 1; i <= count; ++i) {
    PrefetchForRead(&qp.send_queue.ring->SlotAt(index - i * stride));
  }
}

void DoorbellUnit::OnMmioWrite(const Doorbell& doorbell) {
  // The write leaves its core at doorbell.issued (host_cpu), which may be ahead of the engine's
  // clock: a thread's posts queue on its core's timeline. It reaches the link then, in turn with
  // whatever else is on the link at that time.
  if (doorbell.issued > events_.Now()) {
    events_.Schedule(doorbell.issued, EventPriority::kHost, [this, doorbell] { OnMmioWrite(doorbell); });
    return;
  }
  ++nic_.MutableCounters().doorbells;
  QpContext* qp = doorbell.kind == Doorbell::Kind::kSendQueue ? nic_.FindQp(Qpn{doorbell.object}) : nullptr;
  std::uint32_t bytes = 8;  // a doorbell register write
  if (qp != nullptr) {
    ++qp->counters.doorbells;
    // A doorbell that carries its WQE writes the whole WQE through the register window.
    if (doorbell.wqe_bytes > 0) bytes = doorbell.wqe_bytes;
    ReadAheadWqes(*qp, doorbell.index);
  }
  const TimePoint arrival = nic_.Pcie().MmioWrite(bytes, qp != nullptr ? &qp->counters : nullptr);
  events_.Schedule(arrival, EventPriority::kHost, [this, doorbell] { OnArrival(doorbell); });
}

void DoorbellUnit::OnArrival(const Doorbell& doorbell) {
  // A failed NIC takes no more work; CQ arms still reach it, so that each CQ's fatal error is
  // reported through its next arm like any other CQ error.
  if (nic_.Fatal() && doorbell.kind != Doorbell::Kind::kCqArm) return;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Doorbell, "{} doorbell object {} index {}",
               Doorbell::Name(doorbell.kind), doorbell.object, doorbell.index);
  switch (doorbell.kind) {
    case Doorbell::Kind::kSendQueue: {
      QpContext* qp = nic_.FindQp(Qpn{doorbell.object});
      if (qp == nullptr) return;  // a doorbell for a destroyed QP is ignored, as hardware does
      // kLose: the write never reaches the register; a later doorbell covers these WQEs.
      if (nic_.InjectFault(FaultPoint::kDoorbell, doorbell.object) != nullptr) return;
      // Indices are free-running; a late doorbell never moves the register backwards.
      DoorbellState& r = qp->doorbell;
      if (static_cast<std::int32_t>(doorbell.index - r.arrived) > 0) {
        RequestLog& log = nic_.Trace().Requests();
        if (log.Enabled()) {
          const std::uint32_t stride = qp->send_queue.stride_blocks;
          for (std::uint32_t b = r.arrived; b != doorbell.index; b += stride) {
            log.Mark(nic_.Id(), qp->qpn.value, b / stride, RequestStage::kDoorbell, events_.Now());
          }
        }
        r.arrived = doorbell.index;
      }
      // The QP's processing unit handles the doorbell (context lookup, scheduling); only then does
      // the register take the new index and WQE fetch see the WQEs it covers.
      const Qpn qpn = qp->qpn;
      const TimePoint now = events_.Now();
      const TimePoint handled =
          nic_.Units().Run(qpn, nic_.Profile().doorbell_processing, now, nic_.QpContexts().Access(qpn.value, now));
      const std::uint32_t index = doorbell.index;
      const bool has_wqe = doorbell.wqe_bytes > 0;
      events_.Schedule(handled, EventPriority::kDevice, [this, qpn, has_wqe, index] {
        QpContext* q = nic_.FindQp(qpn);
        if (q == nullptr) return;
        const bool ahead = static_cast<std::int32_t>(index - q->doorbell.index) > 0;
        if (ahead) {
          q->doorbell.index = index;
          // The register holds the index the host published before it rang: the NIC's copy of
          // the producer index is at least that.
          q->send_queue.ring->ConsumerLearnPublished(index);
        }
        if (has_wqe && ahead && nic_.Fetch().TakeFromDoorbell(*q, index)) return;
        nic_.Fetch().Kick(*q);
      });
      return;
    }
    case Doorbell::Kind::kReceiveQueue: {
      // Receive WQEs are read when sends need them (and read ahead); a receive doorbell only
      // matters to a QP in error, whose newly posted receives must be flushed.
      QpContext* qp = nic_.FindQp(Qpn{doorbell.object});
      if (qp != nullptr && qp->state == QpState::kError) nic_.Resp().FlushReceives(*qp);
      return;
    }
    case Doorbell::Kind::kCqArm:
      nic_.Cqes().Arm(CqNumber{doorbell.object}, doorbell.arm, doorbell.index, doorbell.arm_epoch);
      return;
  }
}

}  // namespace ndksim::hw
