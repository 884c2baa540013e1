// Doorbell registers: record the newest producer index and hand the QP to WQE fetch.
#include "hwmodel/doorbell_unit.h"

#include "hwmodel/completion_engine.h"
#include "hwmodel/contexts.h"
#include "hwmodel/pcie_link.h"
#include "hwmodel/wqe_fetch.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

void DoorbellUnit::OnMmioWrite(const Doorbell& doorbell) {
  ++nic_.MutableCounters().doorbells;
  const TimePoint arrival = nic_.Pcie().MmioWrite(8);
  events_.Schedule(arrival, EventPriority::kHost, [this, doorbell] { OnArrival(doorbell); });
}

void DoorbellUnit::OnArrival(const Doorbell& doorbell) {
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Doorbell, "doorbell kind {} object {} index {}",
               static_cast<int>(doorbell.kind), doorbell.object, doorbell.index);
  switch (doorbell.kind) {
    case Doorbell::Kind::kSendQueue: {
      QpContext* qp = nic_.FindQp(Qpn{doorbell.object});
      if (qp == nullptr) return;  // a doorbell for a destroyed QP is ignored, as hardware does
      // Indices are free-running; a late doorbell never moves the register backwards.
      const auto ahead = static_cast<std::int32_t>(doorbell.index - qp->requester.doorbell_index);
      if (ahead > 0) {
        RequestLog& log = nic_.Trace().Requests();
        if (log.Enabled()) {
          const std::uint32_t stride = qp->send_queue.stride_blocks;
          for (std::uint32_t b = qp->requester.doorbell_index; b != doorbell.index; b += stride) {
            log.Mark(nic_.Id(), qp->qpn.value, b / stride, RequestStage::kDoorbell, events_.Now());
          }
        }
        qp->requester.doorbell_index = doorbell.index;
      }
      nic_.Fetch().Kick(*qp);
      return;
    }
    case Doorbell::Kind::kReceiveQueue: {
      // Receive queues are read on demand; a receive doorbell only matters to a QP in error,
      // whose newly posted receives must be flushed.
      QpContext* qp = nic_.FindQp(Qpn{doorbell.object});
      if (qp != nullptr && qp->state == QpState::kError) nic_.Cqes().FlushReceives(*qp);
      return;
    }
    case Doorbell::Kind::kCqArm:
      nic_.Cqes().Arm(CqNumber{doorbell.object}, doorbell.arm, doorbell.index);
      return;
  }
}

}  // namespace ndksim::hw
