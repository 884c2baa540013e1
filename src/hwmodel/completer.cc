// SPDX-License-Identifier: MIT
// Completer: acknowledgement processing, read-response placement, in-order retirement, retries.
#include "completer.h"

#include <algorithm>
#include <cstring>

#include "completion_engine.h"
#include "contexts.h"
#include "pcie_link.h"
#include "port.h"
#include "requester.h"
#include "translation.h"
#include "wqe_fetch.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

namespace {

bool IsRead(const WqeDescriptor& d) { return d.control.opcode == WqeOpcode::kRead; }

}  // namespace

void Completer::OnPacket(std::uint32_t packet_id) {
  PacketPool& pool = nic_.GetPort().Pool();
  const Packet& p = pool.Get(packet_id);
  QpContext* qp = nic_.FindQp(p.destination_qpn);
  if (qp == nullptr || qp->state != QpState::kReadyToSend) {
    pool.Release(packet_id);  // nothing to complete: late packets for a dead QP are dropped
    return;
  }
  if (p.opcode == PacketOpcode::kAcknowledge) {
    OnAcknowledge(*qp, p);
    pool.Release(packet_id);
    return;
  }
  OnReadResponse(*qp, packet_id);
}

void Completer::OnAcknowledge(QpContext& qp, const Packet& p) {
  switch (p.syndrome) {
    case AckSyndrome::kAck:
      AcknowledgeUpTo(qp, p.psn);
      return;
    case AckSyndrome::kRnrNak: {
      std::uint32_t counter;
      if (!FindByPsn(qp, p.psn, &counter) || qp.completer.rnr_wait) return;
      AcknowledgeUpTo(qp, p.psn + Psn::kMask);  // a NAK acknowledges everything before it
      if (qp.completer.rnr_retries_left == 0) {
        CompleteWithError(qp, counter, CompletionSyndrome::kRnrRetryExceeded);
        return;
      }
      --qp.completer.rnr_retries_left;
      CancelTimer(qp);  // the ACK timer pauses while waiting out the RNR delay
      qp.completer.rnr_wait = true;
      const Qpn qpn = qp.qpn;
      const std::uint64_t generation = qp.completer.timer_generation;
      const Psn psn = p.psn;
      qp.completer.rnr_event = events_.ScheduleAfter(nic_.Profile().rnr_delay, EventPriority::kTimer,
                            [this, qpn, generation, counter, psn] { OnRnrDelayOver(qpn, generation, counter, psn); });
      return;
    }
    case AckSyndrome::kPsnSequenceError: {
      // The responder expects p.psn: everything before it arrived; resend from there.
      std::uint32_t counter;
      if (!FindByPsn(qp, p.psn, &counter)) return;
      AcknowledgeUpTo(qp, p.psn + Psn::kMask);
      ++nic_.MutableCounters().retransmissions;
      ++qp.counters.retransmissions;
      nic_.Req().Rewind(qp, counter, p.psn);
      return;
    }
    default: {
      std::uint32_t counter;
      if (!FindByPsn(qp, p.psn, &counter)) return;
      AcknowledgeUpTo(qp, p.psn + Psn::kMask);
      CompleteWithError(qp, counter, FailedBy(p.syndrome));
      return;
    }
  }
}

void Completer::OnRnrDelayOver(Qpn qpn, std::uint64_t generation, std::uint32_t counter, Psn psn) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr || qp->state != QpState::kReadyToSend || qp->completer.timer_generation != generation) return;
  qp->completer.rnr_wait = false;
  // The request the peer was not ready for may have been acknowledged meanwhile (a delayed copy of
  // it arrived after the peer posted a receive): then there is nothing to resend, and resending
  // from it would rewind to a retired WQE. The ACK timer covers whatever is still outstanding.
  const bool outstanding = static_cast<std::int32_t>(counter - qp->completer.head) >= 0 &&
                           static_cast<std::int32_t>(qp->requester.next_exec - counter) > 0 &&
                           qp->Descriptor(counter).state == DescriptorState::kAwaitingAck;
  if (!outstanding) {
    RestartTimer(*qp);
    return;
  }
  ++nic_.MutableCounters().retransmissions;
  ++qp->counters.retransmissions;
  nic_.Req().Rewind(*qp, counter, psn);
}

void Completer::OnReadResponse(QpContext& qp, std::uint32_t packet_id) {
  PacketPool& pool = nic_.GetPort().Pool();
  const Packet& p = pool.Get(packet_id);
  // Responses are taken strictly in PSN order, across reads too: only the next response of the
  // oldest read still missing some is taken. Anything else is dropped: a response of a read that
  // is complete, flushed or being resent; an earlier one again (a resent read answered twice); or
  // a later one, which means one was lost (the ACK timer then resends from the first missing).
  std::uint32_t counter;
  if (!OldestIncompleteRead(qp, &counter)) {
    pool.Release(packet_id);
    return;
  }
  WqeDescriptor& d = qp.Descriptor(counter);
  const Psn expected = d.first_psn + d.responses_received;
  if (p.psn != expected) {
    const bool gap = expected.Before(p.psn);
    pool.Release(packet_id);
    if (gap) OnReadGap(qp, counter, expected);
    return;
  }
  if (qp.completer.reread_pending && qp.completer.reread_psn == expected) qp.completer.reread_pending = false;
  // A read response implicitly acknowledges every request before the read.
  AcknowledgeUpTo(qp, d.first_psn + Psn::kMask);
  const std::uint64_t offset = std::uint64_t{d.responses_received} * nic_.Profile().mtu_bytes;
  const auto length = static_cast<std::uint32_t>(p.payload.size());
  const bool last = ++d.responses_received == d.packet_count;
  d.response_bytes += length;
  // Responses are taken in order, so every one taken is new data, even when an ACK or NAK has
  // already acknowledged the read request's PSN (a NAK acknowledges requests, not responses).
  if (qp.completer.acknowledged.Before(p.psn)) qp.completer.acknowledged = p.psn;
  MadeProgress(qp);
  if (last) {
    NDKSIM_CHECK(d.response_bytes == d.total_length);
    d.state = DescriptorState::kPlacing;  // no longer resent; completes when its data has landed
    RestartTimer(qp);
  }
  const Qpn qpn = qp.qpn;
  const std::uint32_t wqe = d.control.wqe_counter;
  // A placement once issued lands: data already on its way to host memory cannot be recalled.
  // It is issued when the sink's keys and pages are on chip (at once without a translation cache,
  // in the node's order of writes).
  nic_.MutableCounters().payload_write_bytes += length;
  Translation& tpt = nic_.Tpt();
  const TimePoint translated =
      tpt.FetchSges({d.sges.data(), d.control.sge_count}, offset, length, events_.Now());
  WriteOrder* order = tpt.CachesEnabled() ? &qp.completer.read_placement : nullptr;
  nic_.Pcie().DmaWrite(length, [this, qpn, counter, wqe, offset, packet_id, last] {
    PacketPool& pkt_pool = nic_.GetPort().Pool();
    QpContext* q = nic_.FindQp(qpn);
    WqeDescriptor* rd = q != nullptr ? &q->Descriptor(counter) : nullptr;
    // A read flushed meanwhile (the QP entered the error state) has no target any more.
    if (rd == nullptr || rd->control.wqe_counter != wqe || rd->state == DescriptorState::kFree ||
        rd->state == DescriptorState::kCompleted) {
      pkt_pool.Release(packet_id);
      return;
    }
    const Packet& pkt = pkt_pool.Get(packet_id);
    // ref §3.3: read sinks need the read-sink right where the profile requires it.
    const bool placed = ScatterSges(nic_.Tpt(), q->pd, {rd->sges.data(), rd->control.sge_count}, offset,
                                    pkt.payload.data(), pkt.payload.size(), access::kLocalWrite | access::kReadSink);
    pkt_pool.Release(packet_id);
    if (!placed) {
      ++nic_.MutableCounters().protection_faults;
      CompleteWithError(*q, counter, CompletionSyndrome::kLocalProtectionError);
      return;
    }
    if (!last) return;
    if (nic_.Trace().Requests().Enabled()) {
      nic_.Trace().Requests().Mark(nic_.Id(), qpn.value, wqe, RequestStage::kLastBytePlaced, events_.Now());
    }
    if ((rd->control.flags & wqe_flag::kReadLocalInvalidate) && rd->control.sge_count > 0) {
      // ref §1.4: a successful read invalidates the token of its first local SGE. A token that
      // cannot be invalidated (an NdkRegisterMr region) is left alone.
      (void)nic_.Tpt().Invalidate(MemoryKey{rd->sges[0].local_key}, q->pd);
    }
    rd->state = DescriptorState::kCompleted;
    nic_.Req().OnReadRetired(*q);
    Retire(*q);
  }, &qp.counters, order, translated);
}

void Completer::OnReadGap(QpContext& qp, std::uint32_t counter, Psn expected) {
  // Responses leave the responder in PSN order and the wire keeps it, so a later one means the
  // one at `expected` was lost: ask again from it now instead of waiting for the ACK timer
  // (IBTA's implied NAK). Once per gap: the rest of the lost stream keeps arriving meanwhile.
  CompleterState& c = qp.completer;
  if (c.reread_pending && c.reread_psn == expected) return;
  c.reread_pending = true;
  c.reread_psn = expected;
  // The read's responses acknowledge every request before it.
  AcknowledgeUpTo(qp, qp.Descriptor(counter).first_psn + Psn::kMask);
  if (qp.state != QpState::kReadyToSend || qp.Descriptor(counter).state != DescriptorState::kAwaitingAck) return;
  ++nic_.MutableCounters().retransmissions;
  ++qp.counters.retransmissions;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Completer, "qp {} read response gap at psn {}, read again",
               qp.qpn.value, expected.value);
  nic_.Req().Rewind(qp, counter, expected);
}

void Completer::NoteProgress(QpContext& qp, Psn psn) {
  CompleterState& c = qp.completer;
  if (!c.acknowledged.Before(psn)) return;
  c.acknowledged = psn;
  MadeProgress(qp);
}

void Completer::MadeProgress(QpContext& qp) {
  // The peer has taken something new: the retry budgets start again and so does the ACK timer,
  // even when no whole request has been acknowledged yet (a long message in progress).
  CompleterState& c = qp.completer;
  c.retries_left = nic_.Profile().retry_count;
  c.rnr_retries_left = nic_.Profile().rnr_retry_count;
  RestartTimer(qp);
}

void Completer::AcknowledgeUpTo(QpContext& qp, Psn psn) {
  NoteProgress(qp, psn);
  bool completed = false;
  for (std::uint32_t c = qp.completer.head; c != qp.requester.next_exec; ++c) {
    WqeDescriptor& d = qp.Descriptor(c);
    if (d.state == DescriptorState::kCompleted || d.state == DescriptorState::kPlacing) continue;
    if (d.state != DescriptorState::kAwaitingAck || !d.last_psn.AtOrBefore(psn)) break;
    if (IsRead(d)) continue;  // reads finish only with their last response
    d.state = DescriptorState::kCompleted;
    completed = true;
  }
  if (completed) Retire(qp);
}

void Completer::Retire(QpContext& qp) {
  CompleterState& c = qp.completer;
  std::uint32_t retired = 0;
  while (c.head != qp.fetch.tail && qp.Descriptor(c.head).state == DescriptorState::kCompleted) {
    WqeDescriptor& d = qp.Descriptor(c.head);
    const bool failed = d.syndrome != CompletionSyndrome::kSuccess;
    if (failed || (d.control.flags & wqe_flag::kSignaled)) {
      CompletionRecord rec;
      rec.qpn = qp.qpn.value;
      rec.wqe_counter = d.control.wqe_counter;
      rec.opcode = d.control.opcode;
      rec.syndrome = d.syndrome;
      rec.byte_count = d.total_length;
      nic_.Cqes().Post(qp.send_cq, rec);
    }
    NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Completer, "qp {} retire wqe {} {}", qp.qpn.value,
                 d.control.wqe_counter, Name(d.syndrome));
    const bool deferred = c.deferred_error && c.head == c.deferred_counter;
    d.state = DescriptorState::kFree;
    qp.send_queue.ring->ConsumerRelease(qp.send_queue.stride_blocks);
    ++c.head;
    ++retired;
    ++qp.counters.requests_completed;
    ++nic_.MutableCounters().requests_completed;
    if (deferred) {
      // The failed WQE's turn: everything before it has completed. Now the QP fails, and the
      // requests after it are flushed (the peer is told: the error was found here).
      c.deferred_error = false;
      nic_.QpStates().EnterError(qp, QpErrorCause::kLocal);
      return;
    }
  }
  if (retired == 0) return;
  // The last request awaiting acknowledgement is gone: the ACK timer stops.
  std::uint32_t oldest;
  if (c.timer_armed && !OldestAwaiting(qp, &oldest)) DisarmTimer(qp);
  nic_.Req().OnRetired(qp);
  nic_.Fetch().Kick(qp);
}

void Completer::CompleteWithError(QpContext& qp, std::uint32_t counter, CompletionSyndrome syndrome) {
  WqeDescriptor& d = qp.Descriptor(counter);
  const bool read_out = d.state == DescriptorState::kAwaitingAck || d.state == DescriptorState::kPlacing;
  if (read_out && IsRead(d)) nic_.Req().OnReadFailed(qp);
  d.state = DescriptorState::kCompleted;
  d.syndrome = syndrome;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Completer, "qp {} wqe {} failed: {}", qp.qpn.value,
               d.control.wqe_counter, Name(syndrome));
  // Errors found here (local checks, retry exhaustion) must reach the peer; errors the peer
  // reported by NAK are already known there.
  const bool peer_knows = syndrome == CompletionSyndrome::kRemoteAccessError ||
                          syndrome == CompletionSyndrome::kRemoteInvalidRequest ||
                          syndrome == CompletionSyndrome::kRemoteOperationError;
  nic_.QpStates().EnterError(qp, peer_knows ? QpErrorCause::kRemote : QpErrorCause::kLocal);
}

void Completer::FailInOrder(QpContext& qp, std::uint32_t counter, CompletionSyndrome syndrome) {
  bool earlier_in_flight = false;
  for (std::uint32_t c = qp.completer.head; c != counter; ++c) {
    const DescriptorState state = qp.Descriptor(c).state;
    if (state != DescriptorState::kCompleted && state != DescriptorState::kPlacing) {
      earlier_in_flight = true;
      break;
    }
  }
  if (!earlier_in_flight) {
    CompleteWithError(qp, counter, syndrome);
    return;
  }
  WqeDescriptor& d = qp.Descriptor(counter);
  d.state = DescriptorState::kCompleted;
  d.syndrome = syndrome;
  qp.completer.deferred_error = true;
  qp.completer.deferred_counter = counter;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Completer, "qp {} wqe {} failed: {}, reported after earlier requests",
               qp.qpn.value, d.control.wqe_counter, Name(syndrome));
}

void Completer::CompleteLocal(QpContext& qp, std::uint32_t counter) {
  qp.Descriptor(counter).state = DescriptorState::kCompleted;
  Retire(qp);
}

void Completer::FlushFetched(QpContext& qp) {
  // The WQEs awaiting acknowledgement are the completer's to flush; the requester flushes those
  // still in its stages. A read whose every response is in (kPlacing) completes when its data
  // has landed, successfully: the error came after it (a responder answers in PSN order).
  for (std::uint32_t c = qp.completer.head; c != qp.fetch.tail; ++c) {
    WqeDescriptor& d = qp.Descriptor(c);
    if (d.state != DescriptorState::kAwaitingAck) continue;
    d.state = DescriptorState::kCompleted;
    d.syndrome = CompletionSyndrome::kFlushed;
  }
  // An error held for its turn comes after this one: it is flushed like the rest.
  if (qp.completer.deferred_error) {
    qp.Descriptor(qp.completer.deferred_counter).syndrome = CompletionSyndrome::kFlushed;
    qp.completer.deferred_error = false;
  }
  nic_.Req().OnFlushed(qp);
  Retire(qp);
}

void Completer::OnConnect(QpContext& qp, Psn send_psn) {
  CompleterState& c = qp.completer;
  c.acknowledged = send_psn + Psn::kMask;  // nothing sent yet
  c.retries_left = nic_.Profile().retry_count;
  c.rnr_retries_left = nic_.Profile().rnr_retry_count;
  c.reread_pending = false;
  c.deferred_error = false;
}

void Completer::StopTimer(QpContext& qp) {
  CancelTimer(qp);
}

void Completer::CancelTimer(QpContext& qp) {
  CompleterState& c = qp.completer;
  ++c.timer_generation;  // events already running or queued elsewhere find themselves stale
  c.timer_armed = false;
  if (c.timer_event_pending) events_.Cancel(c.timer_event);
  c.timer_event_pending = false;
  if (c.rnr_wait) events_.Cancel(c.rnr_event);
}

void Completer::ArmTimer(QpContext& qp) {
  if (qp.completer.timer_armed || qp.completer.rnr_wait) return;
  RestartTimer(qp);
}

void Completer::RestartTimer(QpContext& qp) {
  CompleterState& c = qp.completer;
  std::uint32_t oldest;
  c.timer_armed = OldestAwaiting(qp, &oldest);
  if (!c.timer_armed) {
    DisarmTimer(qp);
    return;
  }
  c.timer_deadline = events_.Now() + nic_.Profile().ack_timeout;
  if (!c.timer_event_pending) ScheduleTimer(qp);
}

void Completer::DisarmTimer(QpContext& qp) {
  // Nothing awaits an acknowledgement: the timer's event goes, so that it neither runs for nothing
  // nor keeps an idle fabric's clock moving to it.
  CompleterState& c = qp.completer;
  c.timer_armed = false;
  if (c.timer_event_pending) events_.Cancel(c.timer_event);
  c.timer_event_pending = false;
}

void Completer::ScheduleTimer(QpContext& qp) {
  CompleterState& c = qp.completer;
  c.timer_event_pending = true;
  const Qpn qpn = qp.qpn;
  const std::uint64_t generation = c.timer_generation;
  c.timer_event =
      events_.Schedule(c.timer_deadline, EventPriority::kTimer, [this, qpn, generation] { OnTimeout(qpn, generation); });
}

void Completer::OnTimeout(Qpn qpn, std::uint64_t generation) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr || qp->state != QpState::kReadyToSend || qp->completer.timer_generation != generation) return;
  CompleterState& c = qp->completer;
  c.timer_event_pending = false;
  if (!c.timer_armed) return;
  if (events_.Now() < c.timer_deadline) {
    ScheduleTimer(*qp);  // restarted since this event was queued: sleep until the new deadline
    return;
  }
  c.timer_armed = false;
  std::uint32_t oldest;
  if (!OldestAwaiting(*qp, &oldest)) return;
  if (c.retries_left == 0) {
    CompleteWithError(*qp, oldest, CompletionSyndrome::kTransportRetryExceeded);
    return;
  }
  --c.retries_left;
  c.reread_pending = false;  // the resend asks again; a gap after it may ask once more
  ++nic_.MutableCounters().retransmissions;
  ++qp->counters.retransmissions;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Completer, "qp {} ack timeout, resend from wqe {}",
               qpn.value, oldest);
  nic_.Req().Rewind(*qp, oldest, ResendPoint(*qp, oldest));
}

Psn Completer::ResendPoint(const QpContext& qp, std::uint32_t counter) const {
  const WqeDescriptor& d = qp.Descriptor(counter);
  if (IsRead(d)) return d.first_psn + d.responses_received;
  // Packets up to the newest acknowledged PSN arrived; those of this WQE are not sent again.
  const Psn next = qp.completer.acknowledged + 1;
  return next.Before(d.first_psn) || d.last_psn.Before(next) ? d.first_psn : next;
}

bool Completer::FindByPsn(QpContext& qp, Psn psn, std::uint32_t* counter) {
  for (std::uint32_t c = qp.completer.head; c != qp.requester.next_exec; ++c) {
    const WqeDescriptor& d = qp.Descriptor(c);
    if (d.state != DescriptorState::kAwaitingAck) continue;
    if (!psn.Before(d.first_psn) && psn.AtOrBefore(d.last_psn)) {
      *counter = c;
      return true;
    }
  }
  return false;
}

bool Completer::OldestIncompleteRead(QpContext& qp, std::uint32_t* counter) {
  for (std::uint32_t c = qp.completer.head; c != qp.requester.next_exec; ++c) {
    const WqeDescriptor& d = qp.Descriptor(c);
    if (IsRead(d) && d.state == DescriptorState::kAwaitingAck) {
      *counter = c;
      return true;
    }
  }
  return false;
}

bool Completer::OldestAwaiting(QpContext& qp, std::uint32_t* counter) {
  for (std::uint32_t c = qp.completer.head; c != qp.requester.next_exec; ++c) {
    if (qp.Descriptor(c).state == DescriptorState::kAwaitingAck) {
      *counter = c;
      return true;
    }
  }
  return false;
}

}  // namespace ndksim::hw
