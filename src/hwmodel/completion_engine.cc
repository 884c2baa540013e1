// SPDX-License-Identifier: MIT
// Completion engine: CQE write-back, overrun, arming and notification.
#include "completion_engine.h"

#include <cstdio>

#include <fmt/format.h>

#include "common/prefetch.h"
#include "contexts.h"
#include "pcie_link.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

void CompletionEngine::Post(CqNumber cq, const CompletionRecord& record, WriteOrder* order) {
  CqContext* c = nic_.FindCq(cq);
  if (c == nullptr || c->dead) return;  // a dead CQ reports nothing more (ref §3.13)
  ++c->in_flight;
  QpContext* qp = nic_.FindQp(Qpn{record.qpn});
  nic_.Pcie().DmaWrite(sizeof(Cqe), [this, cq, record] { Land(cq, record); }, qp != nullptr ? &qp->counters : nullptr,
                       order);
}

void CompletionEngine::Kill(CqContext& cq, std::uint32_t status) {
  cq.dead = true;
  cq.error_status = status;
  cq.error_pending = true;
  if (cq.moderation_pending) {
    // The arm a held-back notification satisfied is reported with the error instead.
    cq.moderation_pending = false;
    cq.arm = CqArmKind::kErrors;
  }
  ReportError(cq);
}

void CompletionEngine::FailAll() {
  nic_.ForEachCq([this](CqContext& cq) {
    if (!cq.dead) Kill(cq, cq_error::kFatal);
  });
}

void CompletionEngine::Land(CqNumber number, const CompletionRecord& record) {
  CqContext* cq = nic_.FindCq(number);
  if (cq == nullptr) return;
  --cq->in_flight;
  if (cq->dead) {
    ++cq->counters.cqes_lost;
    return;
  }
  CompletionQueueMemory& m = cq->memory;
  // The consumer index is read only when the one last read leaves no room: it lives on a line
  // the poller writes after every poll, and a CQ with room needs no newer value.
  if (cq->producer_index - cq->consumer_seen >= m.entry_count) {
    // acquire: pairs with the driver's release store of its consumer index after reading
    // entries, so a slot counted free here is no longer being read.
    cq->consumer_seen = m.consumer_index->load(std::memory_order_acquire);
  }
  const bool full = cq->producer_index - cq->consumer_seen >= m.entry_count;
  if (full || nic_.InjectFault(FaultPoint::kCqeWrite, record.qpn) != nullptr) {  // kOverrun
    NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), CompletionEngine, "cq {} overrun", number.value);
    ++nic_.MutableCounters().cq_overruns;
    ++cq->counters.overruns;
    ++cq->counters.cqes_lost;
    // Said once, whether or not anyone armed the CQ or traces: an unarmed CQ's overrun is
    // otherwise seen only as QPs failing.
    fmt::print(stderr,
               "ndksim: node {}: CQ {:#x} overran{}: {} CQEs written, {} polled, {} entries; the CQ and "
               "its QPs have failed (STATUS_BUFFER_OVERFLOW on its next arm)\n",
               nic_.Id(), number.value, full ? "" : " (fault rule)", cq->producer_index, cq->consumer_seen,
               m.entry_count);
    Kill(*cq, cq_error::kOverrun);
    // Every QP attached to the CQ becomes unusable (ref §3.13).
    nic_.ForEachQp([&](QpContext& qp) {
      if (qp.send_cq == number || qp.receive_cq == number) nic_.QpStates().EnterError(qp, QpErrorCause::kLocal);
    });
    return;
  }
  const std::uint32_t index = cq->producer_index;
  // The entry a later CQE will fill: the poller has read it a lap ago (its owner byte, at least)
  // and may still hold the line; taking it back now spares that CQE's stores the wait.
  PrefetchForWrite(&m.entries[(index + WriteAheadFor(m.entry_count)) & (m.entry_count - 1)]);
  Cqe& e = m.entries[index & (m.entry_count - 1)];
  e.qpn = record.qpn;
  e.wqe_counter = record.wqe_counter;
  e.byte_count = record.byte_count;
  e.invalidated_key = record.invalidated_key;
  e.vendor_error = record.syndrome == CompletionSyndrome::kSuccess ? 0 : 0x100u + static_cast<std::uint32_t>(record.syndrome);
  e.opcode = record.opcode;
  e.syndrome = record.syndrome;
  e.flags = record.flags;
  e.srqn = record.srqn;
  // release: pairs with the poller's acquire load of the owner byte; publishes the fields above.
  e.owner.store(OwnerParity(index, m.entry_count), std::memory_order_release);
  ++cq->producer_index;
  ++nic_.MutableCounters().cqes_written;
  ++cq->counters.cqes_written;
  if (QpContext* qp = nic_.FindQp(Qpn{record.qpn}); qp != nullptr) ++qp->counters.completions;
  if (nic_.Trace().Requests().Enabled() && !(record.flags & cqe_flag::kReceive)) {
    nic_.Trace().Requests().Mark(nic_.Id(), record.qpn, record.wqe_counter, RequestStage::kCqeWritten, events_.Now());
  }
  const bool error = record.syndrome != CompletionSyndrome::kSuccess;
  const bool solicited = (record.flags & cqe_flag::kSolicited) != 0;
  if (error || solicited) cq->notify_index = cq->producer_index;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), CompletionEngine, "cq {} cqe {} qp {} wqe {} {} {}",
               number.value, index, record.qpn, record.wqe_counter, Name(record.opcode), Name(record.syndrome));
  if (cq->moderation_pending) {
    // A held-back notification counts completions towards its moderation count (ref §3.14).
    if (++cq->moderation_seen >= cq->moderation.count) Notify(*cq);
    return;
  }
  // Error completions satisfy a SOLICITED arm as well as ANY (ref §4.2).
  if (cq->arm == CqArmKind::kAny || (cq->arm == CqArmKind::kSolicited && (error || solicited))) Satisfy(*cq, 1);
}

void CompletionEngine::Satisfy(CqContext& cq, std::uint32_t completions) {
  cq.arm = CqArmKind::kNone;  // one-shot: cleared when triggered (ref §4.2)
  const CqModeration& m = cq.moderation;
  if (!m.Active() || completions >= m.count) {
    Notify(cq);
    return;
  }
  cq.moderation_pending = true;
  cq.moderation_seen = completions;
  if (m.interval_us == CqModeration::kUnlimited) return;  // count-only
  const std::uint64_t generation = ++cq.moderation_generation;
  const CqNumber number = cq.number;
  events_.ScheduleAfter(Microseconds(m.interval_us), EventPriority::kTimer,
                        [this, number, generation] { OnModerationTimer(number, generation); });
}

void CompletionEngine::OnModerationTimer(CqNumber number, std::uint64_t generation) {
  CqContext* cq = nic_.FindCq(number);
  if (cq == nullptr || !cq->moderation_pending || cq->moderation_generation != generation) return;
  Notify(*cq);
}

void CompletionEngine::SetModeration(CqContext& cq, const CqModeration& moderation) {
  cq.moderation = moderation;
  if (!cq.moderation_pending) return;
  // Latest call wins (ref §3.14): a held-back notification is judged by the new setting, and
  // never waits longer than the new interval from now.
  if (!moderation.Active() || cq.moderation_seen >= moderation.count) {
    Notify(cq);
    return;
  }
  const std::uint64_t generation = ++cq.moderation_generation;
  if (moderation.interval_us == CqModeration::kUnlimited) return;
  const CqNumber number = cq.number;
  events_.ScheduleAfter(Microseconds(moderation.interval_us), EventPriority::kTimer,
                        [this, number, generation] { OnModerationTimer(number, generation); });
}

void CompletionEngine::Arm(CqNumber number, CqArmKind kind, std::uint32_t consumer_index, std::uint32_t epoch) {
  CqContext* cq = nic_.FindCq(number);
  if (cq == nullptr || kind == CqArmKind::kNone) return;
  // A doorbell of an arm already notified: the consumer merged it into that arm (ref §4.2), whose
  // callback it has, or is about to get.
  if (epoch != 0 && epoch == cq->satisfied_epoch) return;
  cq->arm = MergeArm(cq->arm, kind);
  cq->arm_epoch = epoch;
  if (cq->dead) {
    if (cq->error_pending) ReportError(*cq);
    return;
  }
  // Entries the host has not consumed yet satisfy the arm at once (ref §4.2: fire immediately when
  // completions arrived since the last notification; this also closes the poll-then-arm race).
  if (cq->moderation_pending) return;  // a notification is already on its way
  const bool unread_any = cq->producer_index != consumer_index;
  const bool unread_solicited = static_cast<std::int32_t>(cq->notify_index - consumer_index) > 0;
  if ((cq->arm == CqArmKind::kAny && unread_any) || (cq->arm == CqArmKind::kSolicited && unread_solicited)) {
    Satisfy(*cq, cq->producer_index - consumer_index);
  }
}

void CompletionEngine::Notify(CqContext& cq) {
  cq.arm = CqArmKind::kNone;  // one-shot
  cq.moderation_pending = false;
  ++cq.moderation_generation;  // a moderation timer still running has nothing left to do
  cq.satisfied_epoch = cq.arm_epoch;
  ++cq.counters.notifications;
  EventEntry e{};
  e.type = EventType::kCqNotify;
  e.object = cq.number.value;
  e.arm_epoch = cq.arm_epoch;
  nic_.PostEvent(e);
}

void CompletionEngine::ReportError(CqContext& cq) {
  if (cq.arm == CqArmKind::kNone) return;  // reported at the next arm
  cq.arm = CqArmKind::kNone;
  cq.error_pending = false;
  cq.satisfied_epoch = cq.arm_epoch;
  EventEntry e{};
  e.type = EventType::kCqError;
  e.object = cq.number.value;
  e.status = cq.error_status;
  e.arm_epoch = cq.arm_epoch;
  nic_.PostEvent(e);
}

}  // namespace ndksim::hw
