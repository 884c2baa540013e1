// Completion engine: CQE write-back, overrun, arming and notification.
#include "hwmodel/completion_engine.h"

#include "hwmodel/contexts.h"
#include "hwmodel/pcie_link.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

void CompletionEngine::Post(CqNumber cq, const CompletionRecord& record) {
  CqContext* c = nic_.FindCq(cq);
  if (c == nullptr || c->dead) return;  // a dead CQ reports nothing more (ref §3.13)
  ++c->in_flight;
  nic_.Pcie().DmaWrite(sizeof(Cqe), [this, cq, record] { Land(cq, record); });
}

void CompletionEngine::Land(CqNumber number, const CompletionRecord& record) {
  CqContext* cq = nic_.FindCq(number);
  if (cq == nullptr) return;
  --cq->in_flight;
  if (cq->dead) return;
  CompletionQueueMemory& m = cq->memory;
  // acquire: pairs with the driver's release store of its consumer index after reading entries,
  // so a slot counted free here is no longer being read.
  const std::uint32_t consumer = m.consumer_index->load(std::memory_order_acquire);
  if (cq->producer_index - consumer >= m.entry_count) {
    NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), CompletionEngine, "cq {} overrun", number.value);
    cq->dead = true;
    cq->error_status = 0;
    cq->error_pending = true;
    ReportError(*cq);
    // Every QP attached to the CQ becomes unusable (ref §3.13).
    nic_.ForEachQp([&](QpContext& qp) {
      if (qp.send_cq == number || qp.receive_cq == number) nic_.EnterQpError(qp, QpErrorCause::kLocal);
    });
    return;
  }
  const std::uint32_t index = cq->producer_index;
  Cqe& e = m.entries[index & (m.entry_count - 1)];
  e.qpn = record.qpn;
  e.wqe_counter = record.wqe_counter;
  e.byte_count = record.byte_count;
  e.invalidated_key = record.invalidated_key;
  e.vendor_error = record.syndrome == CompletionSyndrome::kSuccess ? 0 : 0x100u + static_cast<std::uint32_t>(record.syndrome);
  e.opcode = record.opcode;
  e.syndrome = record.syndrome;
  e.flags = record.flags;
  // release: pairs with the poller's acquire load of the owner byte; publishes the fields above.
  e.owner.store(OwnerParity(index, m.entry_count), std::memory_order_release);
  ++cq->producer_index;
  ++nic_.MutableCounters().cqes_written;
  const bool error = record.syndrome != CompletionSyndrome::kSuccess;
  const bool solicited = (record.flags & cqe_flag::kSolicited) != 0;
  if (error || solicited) cq->notify_index = cq->producer_index;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), CompletionEngine, "cq {} cqe {} qp {} wqe {} {} {}",
               number.value, index, record.qpn, record.wqe_counter, Name(record.opcode), Name(record.syndrome));
  // Error completions satisfy a SOLICITED arm as well as ANY (ref §4.2).
  if (cq->arm == CqArmKind::kAny || (cq->arm == CqArmKind::kSolicited && (error || solicited))) Notify(*cq);
}

void CompletionEngine::Arm(CqNumber number, CqArmKind kind, std::uint32_t consumer_index) {
  CqContext* cq = nic_.FindCq(number);
  if (cq == nullptr || kind == CqArmKind::kNone) return;
  cq->arm = MergeArm(cq->arm, kind);
  if (cq->dead) {
    if (cq->error_pending) ReportError(*cq);
    return;
  }
  // Entries the host has not consumed yet satisfy the arm at once (ref §4.2: fire immediately when
  // completions arrived since the last notification; this also closes the poll-then-arm race).
  const bool unread_any = cq->producer_index != consumer_index;
  const bool unread_solicited = static_cast<std::int32_t>(cq->notify_index - consumer_index) > 0;
  if ((cq->arm == CqArmKind::kAny && unread_any) || (cq->arm == CqArmKind::kSolicited && unread_solicited)) {
    Notify(*cq);
  }
}

void CompletionEngine::Notify(CqContext& cq) {
  cq.arm = CqArmKind::kNone;  // one-shot
  EventEntry e{};
  e.type = EventType::kCqNotify;
  e.object = cq.number.value;
  nic_.PostEvent(e);
}

void CompletionEngine::ReportError(CqContext& cq) {
  if (cq.arm == CqArmKind::kNone) return;  // reported at the next arm
  cq.arm = CqArmKind::kNone;
  cq.error_pending = false;
  EventEntry e{};
  e.type = EventType::kCqError;
  e.object = cq.number.value;
  e.status = cq.error_status;
  nic_.PostEvent(e);
}

void CompletionEngine::FlushReceives(QpContext& qp) {
  const WorkQueue& rq = qp.receive_queue;
  if (rq.ring == nullptr) return;
  ResponderState& r = qp.responder;
  const std::uint32_t published = rq.ring->PublishedProducerIndex();
  while (published - r.receive_counter * rq.stride_blocks >= rq.stride_blocks) {
    CompletionRecord rec;
    rec.qpn = qp.qpn.value;
    rec.wqe_counter = r.receive_counter;
    rec.opcode = WqeOpcode::kReceive;
    rec.syndrome = CompletionSyndrome::kFlushed;
    rec.flags = cqe_flag::kReceive;
    Post(qp.receive_cq, rec);
    rq.ring->ConsumerRelease(rq.stride_blocks);
    ++r.receive_counter;
  }
}

}  // namespace ndksim::hw
