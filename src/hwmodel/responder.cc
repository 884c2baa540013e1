// SPDX-License-Identifier: MIT
// Responder: request validation in the transport's order, data placement by DMA, read responses.
#include "responder.h"

#include <algorithm>
#include <cstring>

#include "completion_engine.h"
#include "context_cache.h"
#include "contexts.h"
#include "pcie_link.h"
#include "port.h"
#include "processing_units.h"
#include "translation.h"
#include "transmit_loop.h"
#include "common/prefetch.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

namespace {

bool IsSend(PacketOpcode op) { return op <= PacketOpcode::kSendOnly; }
bool IsWrite(PacketOpcode op) { return op >= PacketOpcode::kWriteFirst && op <= PacketOpcode::kWriteOnly; }

// The queue a QP's receive WQEs come from: its SRQ if it has one (ref §3.16), else its own.
const WorkQueue* ReceiveQueueOf(Nic& nic, const QpContext& qp) {
  if (qp.srq.value == 0) return qp.receive_queue.ring != nullptr ? &qp.receive_queue : nullptr;
  const SrqContext* srq = nic.FindSrq(qp.srq);
  return srq != nullptr ? &srq->queue : nullptr;
}

// Reads receive WQE `counter` from the host ring: segment 0 is the control segment.
void ReadReceiveWqe(const WorkQueue& rq, std::uint32_t counter, std::uint32_t* sge_count, WqeDataSegment* sges) {
  const std::byte* wqe = rq.ring->SlotAt(counter * rq.stride_blocks).bytes.data();
  WqeControl control;
  std::memcpy(&control, wqe, sizeof control);
  const std::uint32_t room = rq.stride_blocks * static_cast<std::uint32_t>(kSegmentsPerBlock) - 1;
  *sge_count = std::min<std::uint32_t>({control.sge_count, room, kMaxSge});
  CopySegments(sges, wqe + kWqeSegmentBytes, *sge_count);
}

// Not part of the model (simulated time and state are untouched): once receive WQE `counter` is
// taken, the next one, if the host has published it (`published`, in blocks), is asked of the
// host cache, a message before it is read. In threaded mode it was written on another core.
void ReadAheadReceiveWqe(const WorkQueue& rq, std::uint32_t counter, std::uint32_t published) {
  const std::uint32_t next = (counter + 1) * rq.stride_blocks;
  const std::uint32_t ahead = published - next;
  if (ahead >= rq.stride_blocks && ahead <= rq.ring->Capacity()) PrefetchForRead(&rq.ring->SlotAt(next));
}

std::uint64_t TotalLength(const WqeDataSegment* sges, std::uint32_t count) {
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < count; ++i) total += sges[i].length;
  return total;
}

// Posts the CQE of the QP's current receive WQE (`rec` carries status, length and flags) and
// moves on. An SRQ WQE was released when it was taken; the CQE names it and the QP it served.
void CompleteReceive(Nic& nic, QpContext& qp, CompletionRecord rec) {
  ResponderState& r = qp.responder;
  rec.qpn = qp.qpn.value;
  rec.wqe_counter = r.receive_wqe;
  rec.opcode = WqeOpcode::kReceive;
  rec.flags |= cqe_flag::kReceive;
  if (qp.srq.value != 0) {
    rec.flags |= cqe_flag::kSrq;
    rec.srqn = qp.srq.value;
  }
  nic.Cqes().Post(qp.receive_cq, rec, &qp.write_order);  // after the message's data
  r.in_message = false;
  if (qp.srq.value != 0) return;
  qp.receive_queue.ring->ConsumerRelease(qp.receive_queue.stride_blocks);
  ++r.receive_counter;
}

}  // namespace

// ---- the checks, in the order they are applied -----------------------------------------------------

ResponderCheck CheckPsn(const QpContext& qp, const Packet& p) {
  const ResponderState& r = qp.responder;
  const std::int32_t d = Psn::Diff(p.psn, r.expected_psn);
  if (d < 0) return ResponderCheck::kDuplicate;
  if (d > 0) return r.rnr_nak_outstanding ? ResponderCheck::kSilentDiscard : ResponderCheck::kOutOfSequence;
  return ResponderCheck::kAccept;
}

ResponderCheck CheckOpcodeSequence(const QpContext& qp, const Packet& p) {
  const ResponderState& r = qp.responder;
  const OpcodeTraits& t = Traits(p.opcode);
  if (r.in_message) {
    // Inside a message only its Middle and Last packets may come.
    const bool same_kind = IsSend(p.opcode) == IsSend(r.message_kind) && IsWrite(p.opcode) == IsWrite(r.message_kind);
    if (t.first || !same_kind) return ResponderCheck::kBadOpcodeSequence;
  } else if (!t.first) {
    return ResponderCheck::kBadOpcodeSequence;
  }
  return ResponderCheck::kAccept;
}

ResponderCheck CheckSequence(const QpContext& qp, const Packet& p) {
  const ResponderCheck psn = CheckPsn(qp, p);
  return psn != ResponderCheck::kAccept ? psn : CheckOpcodeSequence(qp, p);
}

ResponderCheck Responder::TakeReceiveWqe(QpContext& qp) {
  if (nic_.InjectFault(FaultPoint::kReceiveWqe, qp.qpn.value) != nullptr || !StartReceive(qp)) {
    return ResponderCheck::kReceiverNotReady;
  }
  return ResponderCheck::kAccept;
}

ResponderCheck Responder::CheckReceiveLength(const QpContext& qp, std::uint32_t length) const {
  const ResponderState& r = qp.responder;
  return r.message_bytes + length > r.receive_capacity ? ResponderCheck::kReceiveOverflow : ResponderCheck::kAccept;
}

ResponderCheck Responder::CheckReceiveAccess(const QpContext& qp, std::uint32_t length) {
  // Every target piece is checked now so the error is reported in order; placement is by DMA.
  const ResponderState& r = qp.responder;
  const std::span<const WqeDataSegment> sges{r.receive_sges.data(), r.receive_sge_count};
  const bool writable = ForEachSgePiece(
      sges, r.message_bytes, length, [&](const WqeDataSegment& sge, std::uint64_t at, std::uint64_t n, std::uint64_t) {
        return nic_.Tpt().Check(MemoryKey{sge.local_key}, qp.pd, sge.address + at, n, access::kLocalWrite).Ok();
      });
  return writable ? ResponderCheck::kAccept : ResponderCheck::kReceiveProtection;
}

ResponderCheck Responder::ScheduleInvalidate(QpContext& qp, std::uint32_t key) {
  // ref §3.2: the token (a fast-register region or a window of this QP's PD) is invalidated
  // before the receive completion is written; an invalid one aborts the connection. Checked now,
  // and taken when the QP's earlier writes have landed: an RDMA write the peer sent before the
  // send-and-invalidate is placed in the region first (messages execute in order), and the host
  // sees the receive completion, which lands after, only once the token is invalid.
  std::uint32_t generation = Translation::kAnyGeneration;
  const MemoryOpOutcome outcome = nic_.Tpt().CheckInvalidate(MemoryKey{key}, qp.pd, &generation);
  if (outcome == MemoryOpOutcome::kOk) {
    const PdNumber pd = qp.pd;
    events_.Schedule(std::max(events_.Now(), qp.write_order.lands), EventPriority::kDevice,
                     [this, key, pd, generation] {
                       // Another invalidation (the host's own, racing) may have come first.
                       (void)nic_.Tpt().Invalidate(MemoryKey{key}, pd, generation);
                     });
    return ResponderCheck::kAccept;
  }
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Translation, "qp {} send-invalidate key {:#x}: {}",
               qp.qpn.value, key, Name(outcome));
  return ResponderCheck::kBadInvalidateKey;
}

ResponderCheck Responder::CheckRemoteAccess(const QpContext& qp, std::uint32_t key, std::uint64_t address,
                                            std::uint32_t length, std::uint32_t required, bool inject) {
  if (length == 0) return ResponderCheck::kAccept;  // a zero-length request touches no memory
  if (inject && nic_.InjectFault(FaultPoint::kRemoteAccess, qp.qpn.value) != nullptr) {
    nic_.Tpt().Revoke(MemoryKey{key});
  }
  const TranslationResult t = nic_.Tpt().Check(MemoryKey{key}, qp.pd, address, length, required);
  if (t.Ok()) return ResponderCheck::kAccept;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Translation, "qp {} {} key {:#x}: {}", qp.qpn.value,
               required == access::kRemoteWrite ? "write" : "read", key, Name(t.outcome));
  return ResponderCheck::kRemoteAccess;
}

ResponderCheck Responder::CheckWriteLength(const QpContext& qp, std::uint32_t length, bool last) const {
  // A write's packets carry exactly the length its first packet announced.
  const std::uint64_t remaining = qp.responder.write_remaining;
  return length > remaining || (last && length != remaining) ? ResponderCheck::kWriteLength : ResponderCheck::kAccept;
}

ResponderCheck Responder::CheckReadLimit(const QpContext& qp, bool duplicate) const {
  // A request that finds the queue full (of replays) is dropped: the requester asks again, by its
  // timer or by the sequence NAK the next request draws.
  const ResponderState& r = qp.responder;
  if (r.reads_tail - r.reads_head == kInboundReadSlots) return ResponderCheck::kReadResourcesBusy;
  // A replay repeats a read the requester counts already (its original may have been answered
  // while the duplicate was on its way), so it takes no IRD resource. More new reads in progress
  // than negotiated is a protocol violation by the requester.
  if (duplicate || r.ReadsInProgress() - r.replays < qp.inbound_read_limit) return ResponderCheck::kAccept;
  return ResponderCheck::kTooManyReads;
}

void Responder::Refuse(QpContext& qp, Psn psn, ResponderCheck check, std::uint32_t packet_id) {
  const RequestOutcome& o = Outcome(check);
  const auto release = [&] {
    if (packet_id != kNoPacket) nic_.GetPort().Pool().Release(packet_id);
  };
  if (o.protection_fault) ++nic_.MutableCounters().protection_faults;
  switch (o.action) {
    case RequestAction::kAccept:
      NDKSIM_CHECK(false, "an accepted request is not refused");
      return;
    case RequestAction::kDrop:
      release();
      return;
    case RequestAction::kReacknowledge:
      SendAck(qp, qp.responder.expected_psn + Psn::kMask, AckSyndrome::kAck);
      release();
      return;
    case RequestAction::kNakSequence:
      qp.responder.rnr_nak_outstanding = true;  // discard until the expected PSN comes back
      SendAck(qp, qp.responder.expected_psn, o.nak);
      release();
      return;
    case RequestAction::kNakRnr:
      ++nic_.MutableCounters().rnr_naks_sent;
      qp.responder.rnr_nak_outstanding = true;
      release();
      SendAck(qp, psn, o.nak);
      return;
    case RequestAction::kFail:
      release();
      Fail(qp, psn, o.nak);
      return;
    case RequestAction::kFailReceive:
      release();
      FailReceive(qp, psn, o.receive, o.nak);
      return;
  }
}

void Responder::OnPacket(std::uint32_t packet_id) {
  PacketPool& pool = nic_.GetPort().Pool();
  const Packet& p = pool.Get(packet_id);
  QpContext* qp = nic_.FindQp(p.destination_qpn);
  if (qp == nullptr || qp->state != QpState::kReadyToSend || qp->remote_qpn != p.source_qpn ||
      qp->remote_node != p.source_node) {
    pool.Release(packet_id);  // ResponderCheck::kDropNoQp
    return;
  }
  if (qp->responder.nak_pending && p.opcode != PacketOpcode::kTerminate) {
    Refuse(*qp, p.psn, ResponderCheck::kRefusedEarlier, packet_id);  // nothing after it is taken
    return;
  }
  if (p.opcode == PacketOpcode::kTerminate) {
    NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Responder, "qp {} terminated by peer", qp->qpn.value);
    pool.Release(packet_id);
    nic_.QpStates().EnterError(*qp, QpErrorCause::kRemote);
    return;
  }
  const ResponderCheck check = CheckSequence(*qp, p);
  if (check == ResponderCheck::kDuplicate && p.opcode == PacketOpcode::kReadRequest) {
    // A duplicate read request is executed again (its responses may be what was lost).
    OnReadRequest(*qp, packet_id, /*duplicate=*/true);
    return;
  }
  if (check != ResponderCheck::kAccept) {
    Refuse(*qp, p.psn, check, packet_id);
    return;
  }
  qp->responder.rnr_nak_outstanding = false;
  if (IsSend(p.opcode)) {
    OnSend(*qp, packet_id);
  } else if (IsWrite(p.opcode)) {
    OnWrite(*qp, packet_id);
  } else {
    OnReadRequest(*qp, packet_id, /*duplicate=*/false);
  }
}

bool Responder::StartReceive(QpContext& qp) {
  ResponderState& r = qp.responder;
  if (qp.srq.value != 0) return StartSrqReceive(qp);
  const WorkQueue& rq = qp.receive_queue;
  if (rq.ring == nullptr) return false;
  // acquire (when it looks): the WQE is complete.
  const std::uint32_t published = rq.ring->PublishedThrough((r.receive_counter + 1) * rq.stride_blocks);
  if (published - r.receive_counter * rq.stride_blocks < rq.stride_blocks) return false;
  r.receive_wqe = r.receive_counter;
  ReadReceiveWqe(rq, r.receive_counter, &r.receive_sge_count, r.receive_sges.data());
  ReadAheadReceiveWqe(rq, r.receive_counter, published);
  r.receive_capacity = TotalLength(r.receive_sges.data(), r.receive_sge_count);
  r.message_bytes = 0;
  // Placement of this message waits until the WQE is on the NIC (read ahead, or read now).
  r.placement_ready = std::max(r.placement_ready, ReceiveWqeReady(r.prefetch, rq, r.receive_wqe, &qp.counters));
  return true;
}

bool Responder::StartSrqReceive(QpContext& qp) {
  ResponderState& r = qp.responder;
  SrqContext* srq = nic_.FindSrq(qp.srq);
  if (srq == nullptr) return false;
  const WorkQueue& q = srq->queue;
  // acquire (when it looks): the WQE is complete.
  const std::uint32_t published = q.ring->PublishedThrough((srq->consumed + 1) * q.stride_blocks);
  if (published - srq->consumed * q.stride_blocks < q.stride_blocks) return false;
  // Taken in posting order by whichever attached QP needs one first; released at once (the host
  // frees the slot only when it has polled the CQE).
  r.receive_wqe = srq->consumed++;
  ReadReceiveWqe(q, r.receive_wqe, &r.receive_sge_count, r.receive_sges.data());
  ReadAheadReceiveWqe(q, r.receive_wqe, published);
  q.ring->ConsumerRelease(q.stride_blocks);
  r.receive_capacity = TotalLength(r.receive_sges.data(), r.receive_sge_count);
  r.message_bytes = 0;
  r.placement_ready = std::max(r.placement_ready, ReceiveWqeReady(srq->prefetch, q, r.receive_wqe, &qp.counters));
  nic_.CheckSrqLimit(*srq);  // ref §3.16: the limit event fires when queued WQEs fall below it
  return true;
}

TimePoint Responder::ReceiveWqeReady(ReceivePrefetch& pf, const WorkQueue& q, std::uint32_t counter,
                                     QpCounters* account) {
  const TimePoint now = events_.Now();
  if (pf.in_flight_end != pf.landed_end && pf.in_flight_lands <= now) pf.landed_end = pf.in_flight_end;
  const auto before = [](std::uint32_t a, std::uint32_t b) { return static_cast<std::int32_t>(a - b) < 0; };
  // The host's published index (WQEs), read only when a read-ahead is considered: the line is
  // the host's, written with every receive it posts.
  std::uint32_t published = 0;
  bool looked = false;
  const auto published_wqes = [&] {
    if (!looked) {
      published = q.ring->PublishedProducerIndex() / q.stride_blocks;
      looked = true;
    }
    return published;
  };
  // Reads WQEs [from, published), at most a prefetch's worth, by one DMA read.
  const auto read_ahead = [&](std::uint32_t from) {
    const std::uint32_t count = std::min(published_wqes() - from, kReceivePrefetchWqes);
    pf.in_flight_end = from + count;
    pf.in_flight_lands = nic_.Pcie().DmaReadArrival(std::uint64_t{count} * q.stride_blocks * kWqeBlockBytes, account);
  };
  TimePoint ready = now;
  if (!before(counter, pf.landed_end)) {
    if (before(counter, pf.in_flight_end)) {
      ready = pf.in_flight_lands;
    } else {
      // Not read ahead (the queue was empty when the NIC last looked): read it now, on demand.
      pf.landed_end = counter;
      read_ahead(counter);
      ready = pf.in_flight_lands;
    }
  }
  // Keep the cache topped up: read ahead once fewer than half of a prefetch's worth remain.
  const bool idle = pf.in_flight_end == pf.landed_end;
  if (idle && static_cast<std::int32_t>(pf.landed_end - (counter + 1)) < static_cast<std::int32_t>(kReceivePrefetchWqes / 2) &&
      before(pf.landed_end, published_wqes())) {
    read_ahead(pf.landed_end);
  }
  return ready;
}

void Responder::OnSend(QpContext& qp, std::uint32_t packet_id) {
  PacketPool& pool = nic_.GetPort().Pool();
  const Packet& p = pool.Get(packet_id);
  ResponderState& r = qp.responder;
  const Psn psn = p.psn;
  const RequestRef request{p.source_node, p.source_qpn.value, p.trace_wqe};
  if (Traits(p.opcode).first) {
    const ResponderCheck check = TakeReceiveWqe(qp);
    if (check != ResponderCheck::kAccept) {
      Refuse(qp, psn, check, packet_id);
      return;
    }
    r.in_message = true;
    r.message_kind = p.opcode;
  }
  const auto length = static_cast<std::uint32_t>(p.payload.size());
  ResponderCheck check = CheckReceiveLength(qp, length);
  if (check == ResponderCheck::kAccept) check = CheckReceiveAccess(qp, length);
  if (check != ResponderCheck::kAccept) {
    Refuse(qp, psn, check, packet_id);
    return;
  }
  const std::uint64_t offset = r.message_bytes;
  const std::uint32_t counter = r.receive_wqe;
  const Qpn qpn = qp.qpn;
  // Placement waits for the receive WQE (r.placement_ready) and for its keys and pages on chip.
  const TimePoint placement = std::max(
      r.placement_ready,
      nic_.Tpt().FetchSges({r.receive_sges.data(), r.receive_sge_count}, offset, length, events_.Now()));
  r.message_bytes += length;
  nic_.MutableCounters().payload_write_bytes += length;
  nic_.Pcie().DmaWrite(
      length,
      [this, qpn, counter, offset, packet_id] {
        PacketPool& pkt_pool = nic_.GetPort().Pool();
        QpContext* q = nic_.FindQp(qpn);
        const WorkQueue* rq = q != nullptr ? ReceiveQueueOf(nic_, *q) : nullptr;
        // A placement once issued lands, whatever happens to the QP meanwhile: the CQE of an
        // earlier message that succeeded is behind it. The WQE is still in host memory: the host
        // reuses the slot only after its CQE, which lands after this.
        if (q != nullptr && rq != nullptr) {
          std::uint32_t count;
          std::array<WqeDataSegment, kMaxSge> sges;
          ReadReceiveWqe(*rq, counter, &count, sges.data());
          const Packet& pkt = pkt_pool.Get(packet_id);
          (void)ScatterSges(nic_.Tpt(), q->pd, {sges.data(), count}, offset, pkt.payload.data(), pkt.payload.size(),
                            access::kLocalWrite);
        }
        pkt_pool.Release(packet_id);
      },
      &qp.counters, &qp.write_order, placement);
  r.expected_psn = psn + 1;
  const Packet& pkt = pool.Get(packet_id);
  if (!Traits(pkt.opcode).last) {
    if (pkt.ack_request) AckWhenPlaced(qp, psn, nullptr);
    return;
  }
  // Message complete: the receive CQE is written after the data (posted writes stay ordered).
  CompletionRecord rec;
  rec.qpn = qp.qpn.value;
  rec.wqe_counter = counter;
  rec.opcode = WqeOpcode::kReceive;
  rec.syndrome = CompletionSyndrome::kSuccess;
  rec.byte_count = static_cast<std::uint32_t>(r.message_bytes);
  rec.flags = cqe_flag::kReceive;
  if (pkt.solicited) rec.flags |= cqe_flag::kSolicited;
  if (pkt.has_invalidate_key) {
    // The packet stays with its placement, which releases it.
    const ResponderCheck invalidated = ScheduleInvalidate(qp, pkt.invalidate_key);
    if (invalidated != ResponderCheck::kAccept) {
      Refuse(qp, psn, invalidated);
      return;
    }
    rec.flags |= cqe_flag::kInvalidated;
    rec.invalidated_key = pkt.invalidate_key;
  }
  CompleteReceive(nic_, qp, rec);  // names the WQE in its queue (RQ or SRQ)
  AckWhenPlaced(qp, psn, &request);
}

void Responder::OnWrite(QpContext& qp, std::uint32_t packet_id) {
  PacketPool& pool = nic_.GetPort().Pool();
  const Packet& p = pool.Get(packet_id);
  ResponderState& r = qp.responder;
  const Psn psn = p.psn;
  const RequestRef request{p.source_node, p.source_qpn.value, p.trace_wqe};
  const auto length = static_cast<std::uint32_t>(p.payload.size());
  if (Traits(p.opcode).first) {
    // RETH: the whole target range is checked once, on the first packet.
    const ResponderCheck check =
        CheckRemoteAccess(qp, p.remote_key, p.remote_address, p.dma_length, access::kRemoteWrite, /*inject=*/true);
    if (check != ResponderCheck::kAccept) {
      Refuse(qp, psn, check, packet_id);
      return;
    }
    r.write_address = p.remote_address;
    r.write_key = p.remote_key;
    // Placement waits until the key and the pages of the range are on chip.
    r.write_translated = nic_.Tpt().Fetch(MemoryKey{p.remote_key}, p.remote_address, p.dma_length, events_.Now());
    r.write_remaining = p.dma_length;
    r.in_message = !Traits(p.opcode).last;
    r.message_kind = p.opcode;
  }
  const bool last = Traits(p.opcode).last;
  const bool ack_request = p.ack_request;
  if (const ResponderCheck check = CheckWriteLength(qp, length, last); check != ResponderCheck::kAccept) {
    Refuse(qp, psn, check, packet_id);
    return;
  }
  const std::uint64_t address = r.write_address;
  const std::uint32_t key = r.write_key;
  const PdNumber pd = qp.pd;
  r.write_address += length;
  r.write_remaining -= length;
  if (length > 0) {
    nic_.MutableCounters().payload_write_bytes += length;
    nic_.Pcie().DmaWrite(length, [this, pd, address, key, packet_id] {
      PacketPool& pkt_pool = nic_.GetPort().Pool();
      const Packet& pkt = pkt_pool.Get(packet_id);
      // Translated again at placement: a token invalidated in flight places nothing.
      (void)nic_.Tpt().CopyTo(MemoryKey{key}, pd, address, pkt.payload.data(), pkt.payload.size(),
                              access::kRemoteWrite);
      pkt_pool.Release(packet_id);
    }, &qp.counters, &qp.write_order, r.write_translated);
  } else {
    pool.Release(packet_id);
  }
  r.expected_psn = psn + 1;
  if (last) {
    r.in_message = false;
    AckWhenPlaced(qp, psn, &request);
  } else if (ack_request) {
    AckWhenPlaced(qp, psn, nullptr);
  }
}

void Responder::OnReadRequest(QpContext& qp, std::uint32_t packet_id, bool duplicate) {
  PacketPool& pool = nic_.GetPort().Pool();
  const Packet& p = pool.Get(packet_id);
  ResponderState& r = qp.responder;
  const Psn psn = p.psn;
  const std::uint64_t address = p.remote_address;
  const std::uint32_t key = p.remote_key;
  const std::uint32_t length = p.dma_length;
  pool.Release(packet_id);
  ResponderCheck check = CheckRemoteAccess(qp, key, address, length, access::kRemoteRead, /*inject=*/!duplicate);
  if (check == ResponderCheck::kAccept && duplicate) DropReadsFrom(qp, psn);
  if (check == ResponderCheck::kAccept) check = CheckReadLimit(qp, duplicate);
  if (check != ResponderCheck::kAccept) {
    Refuse(qp, psn, check);
    return;
  }
  const std::uint32_t mtu = nic_.Profile().mtu_bytes;
  const std::uint32_t count = length == 0 ? 1 : (length + mtu - 1) / mtu;
  if (!duplicate) r.expected_psn = psn + count;
  // The read joins the queue now, so that a duplicate arriving meanwhile finds it; the QP's
  // processing unit sets it up in its turn, then its responses are read and sent in order.
  // CheckReadLimit bounds the reads queued here.
  NDKSIM_CHECK(r.reads_tail - r.reads_head < kInboundReadSlots);
  if (duplicate) ++r.replays;
  InboundRead& read = r.reads[r.reads_tail++ % kInboundReadSlots];
  read = InboundRead{address, key, length, psn, count, TimePoint::max(), duplicate};
  SetUpNextRead(qp);
}

void Responder::SetUpNextRead(QpContext& qp) {
  ResponderState& r = qp.responder;
  if (r.setup_pending || r.awaiting_context || r.setup_next == r.reads_tail) return;
  const TimePoint now = events_.Now();
  if (r.read_context_free > now) {
    // The QP's read context is still turning its last read around: take the next one then. The
    // unit is not held meanwhile; other QPs' work goes on.
    r.awaiting_context = true;
    const Qpn qpn = qp.qpn;
    events_.Schedule(r.read_context_free, EventPriority::kDevice, [this, qpn] {
      QpContext* q = nic_.FindQp(qpn);
      if (q == nullptr || q->state != QpState::kReadyToSend) return;
      q->responder.awaiting_context = false;
      SetUpNextRead(*q);
    });
    return;
  }
  const auto& p = nic_.Profile();
  r.read_context_free = now + p.nic_clock.ToDuration(p.read_context_turnaround);
  InboundRead& read = r.reads[r.setup_next++ % kInboundReadSlots];
  // The unit needs the QP's context, and the key and pages the read names.
  const TimePoint on_chip = std::max(nic_.QpContexts().Access(qp.qpn.value, now),
                                     nic_.Tpt().Fetch(MemoryKey{read.key}, read.address, read.length, now));
  read.start = nic_.Units().Run(qp.qpn, p.read_response_processing, now, on_chip);
  r.setup_pending = true;
  const Qpn qpn = qp.qpn;
  const std::uint32_t generation = r.setup_generation;
  events_.Schedule(read.start, EventPriority::kDevice, [this, qpn, generation] { OnReadSetUp(qpn, generation); });
}

void Responder::DropReadsFrom(QpContext& qp, Psn psn) {
  ResponderState& r = qp.responder;
  // The ring is in PSN order: the first read whose last response is at `psn` or later, and every
  // read after it, go.
  std::uint32_t from = r.reads_head;
  while (from != r.reads_tail) {
    const InboundRead& read = r.reads[from % kInboundReadSlots];
    if (!(read.first + (read.count - 1)).Before(psn)) break;
    ++from;
  }
  if (from == r.reads_tail) return;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Responder, "qp {} duplicate read psn {}: {} queued read(s) dropped",
               qp.qpn.value, psn.value, r.reads_tail - from);
  for (std::uint32_t s = r.responses_head; s != r.responses_tail; ++s) {
    StagedResponse& staged = r.responses[s % kStagedPackets];
    if (staged.read - r.reads_head >= from - r.reads_head) staged.discarded = true;
  }
  for (std::uint32_t i = from; i != r.reads_tail; ++i) {
    if (r.reads[i % kInboundReadSlots].replay) --r.replays;
  }
  if (r.read_cursor - r.reads_head >= from - r.reads_head) {
    r.read_cursor = from;
    r.read_packet = 0;
  }
  if (r.setup_next - r.reads_head > from - r.reads_head) {
    // The unit's work on a dropped read is lost (its time stays spent); reads not yet given to
    // the unit cost it nothing.
    if (r.setup_pending && r.setup_next - 1 - r.reads_head >= from - r.reads_head) {
      r.setup_pending = false;
      ++r.setup_generation;
    }
    r.setup_next = from;
  }
  r.reads_tail = from;
}

void Responder::OnReadSetUp(Qpn qpn, std::uint32_t generation) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr || qp->state != QpState::kReadyToSend || qp->responder.setup_generation != generation) return;
  qp->responder.setup_pending = false;
  SetUpNextRead(*qp);
  PumpResponses(*qp);
}

void Responder::PumpResponses(QpContext& qp) {
  for (;;) {
    if (qp.state != QpState::kReadyToSend) return;
    const bool read = ReadResponseData(qp);
    if (qp.state != QpState::kReadyToSend) return;
    const bool sent = SendResponses(qp);
    if (!read && !sent) return;
  }
}

bool Responder::ReadResponseData(QpContext& qp) {
  ResponderState& r = qp.responder;
  const std::uint32_t mtu = nic_.Profile().mtu_bytes;
  const std::uint32_t buffer = nic_.Profile().qp_transmit_buffer_bytes;
  bool progress = false;
  while (r.read_cursor != r.reads_tail) {
    const InboundRead& read = r.reads[r.read_cursor % kInboundReadSlots];
    if (read.start > events_.Now()) return progress;  // OnReadSetUp resumes at its start
    while (r.read_packet < read.count) {
      const std::uint32_t offset = r.read_packet * mtu;
      const std::uint32_t bytes = std::min(mtu, read.length - std::min(offset, read.length));
      const bool empty = r.responses_head == r.responses_tail;
      if (r.responses_tail - r.responses_head == kStagedPackets || (!empty && r.responses_bytes + bytes > buffer)) {
        return progress;  // the response buffer is full; responses leaving make room
      }
      // Like the requester's payload reads: data is read ahead only while the link has room, so
      // a long read does not hold the node's read tags and completions far into the future.
      if (bytes > 0 && nic_.Pcie().ReadSlotAt() > events_.Now()) {
        if (!r.response_tag_wait_scheduled) {
          r.response_tag_wait_scheduled = true;
          const Qpn qpn = qp.qpn;
          nic_.Pcie().AwaitReadSlot([this, qpn] { OnReadSlotFree(qpn); });
        }
        return progress;
      }
      const std::uint32_t slot = r.responses_tail++;
      r.responses[slot % kStagedPackets] = StagedResponse{r.read_cursor, r.read_packet, bytes, bytes == 0, false};
      r.responses_bytes += bytes;
      if (bytes > 0) {
        const Qpn qpn = qp.qpn;
        nic_.MutableCounters().payload_read_bytes += bytes;
        nic_.Pcie().DmaRead(bytes, [this, qpn, slot] { OnResponseData(qpn, slot); }, &qp.counters);
      }
      ++r.read_packet;
      progress = true;
    }
    r.read_packet = 0;
    ++r.read_cursor;
  }
  return progress;
}

void Responder::OnResponseData(Qpn qpn, std::uint32_t slot) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr || qp->state != QpState::kReadyToSend) return;  // no responses from a QP in error
  qp->responder.responses[slot % kStagedPackets].ready = true;
  PumpResponses(*qp);
}

bool Responder::SendResponses(QpContext& qp) {
  ResponderState& r = qp.responder;
  const Qpn qpn = qp.qpn;
  // Responses share the port with the requester's packets: the next waits for the current one.
  return TransmitInOrder(
      nic_.GetPort(), events_.Now(), r.response_drain_scheduled,
      [&]() -> std::optional<StagedHead> {
        if (r.responses_head == r.responses_tail) return std::nullopt;
        const StagedResponse& s = r.responses[r.responses_head % kStagedPackets];
        if (!s.ready) return StagedHead::kNotReady;
        // Asked again by a duplicate: its read is gone from the ring.
        return s.discarded ? StagedHead::kDiscard : StagedHead::kReady;
      },
      [&] {
        r.responses_bytes -= r.responses[r.responses_head % kStagedPackets].bytes;
        ++r.responses_head;
      },
      [&] {
        const StagedResponse s = r.responses[r.responses_head % kStagedPackets];
        ++r.responses_head;
        r.responses_bytes -= s.bytes;
        const InboundRead& read = r.reads[s.read % kInboundReadSlots];
        if (s.index + 1 == read.count) {
          ++r.reads_head;  // the slot is reused only by a later read, after this call
          if (read.replay) --r.replays;
        }
        if (!SendReadResponse(qp, read, s.index, s.bytes)) return false;
        if (r.nak_pending && r.ReadsInProgress() == 0) {
          FailNow(qp, r.nak_psn, r.nak_syndrome);  // every earlier read is answered: the NAK's turn
          return false;
        }
        return true;
      },
      [this, qpn] { return Resume([this, qpn] { OnTransmitterFree(qpn); }); });
}

void Responder::OnTransmitterFree(Qpn qpn) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr || !qp->responder.response_drain_scheduled) return;
  qp->responder.response_drain_scheduled = false;
  PumpResponses(*qp);
}

void Responder::OnReadSlotFree(Qpn qpn) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr || !qp->responder.response_tag_wait_scheduled) return;
  qp->responder.response_tag_wait_scheduled = false;
  PumpResponses(*qp);
}

bool Responder::SendReadResponse(QpContext& qp, const InboundRead& read, std::uint32_t index, std::uint32_t length) {
  const std::uint64_t address = read.address + std::uint64_t{index} * nic_.Profile().mtu_bytes;
  const Psn psn = read.first + index;
  if (length > 0) {
    const TranslationResult t = nic_.Tpt().Check(MemoryKey{read.key}, qp.pd, address, length, access::kRemoteRead);
    if (!t.Ok()) {
      FailNow(qp, psn, AckSyndrome::kRemoteAccessError);  // invalidated while the read was in flight
      return false;
    }
  }
  std::uint32_t id;
  Packet& p = nic_.GetPort().Pool().Acquire(&id);
  p.source_node = nic_.Id();
  p.destination_node = qp.remote_node;
  p.source_qpn = qp.qpn;
  p.destination_qpn = qp.remote_qpn;
  p.opcode = read.count == 1          ? PacketOpcode::kReadResponseOnly
             : index == 0             ? PacketOpcode::kReadResponseFirst
             : index + 1 == read.count ? PacketOpcode::kReadResponseLast
                                       : PacketOpcode::kReadResponseMiddle;
  p.psn = psn;
  p.syndrome = AckSyndrome::kAck;
  p.payload.resize(length);
  // The bytes are as host memory is when the packet leaves (its DMA has completed). A
  // fast-register region maps page by page, so the copy goes through translation.
  if (length > 0) (void)nic_.Tpt().CopyFrom(MemoryKey{read.key}, qp.pd, address, p.payload.data(), length, access::kRemoteRead);
  nic_.GetPort().Transmit(id);
  return true;
}

void Responder::SendAck(QpContext& qp, Psn psn, AckSyndrome syndrome) {
  if (syndrome != AckSyndrome::kAck) ++nic_.MutableCounters().naks_sent;
  std::uint32_t id;
  Packet& p = nic_.GetPort().Pool().Acquire(&id);
  p.source_node = nic_.Id();
  p.destination_node = qp.remote_node;
  p.source_qpn = qp.qpn;
  p.destination_qpn = qp.remote_qpn;
  p.opcode = PacketOpcode::kAcknowledge;
  p.psn = psn;
  p.syndrome = syndrome;
  p.solicited = false;
  p.has_invalidate_key = false;
  nic_.GetPort().Transmit(id);
}

void Responder::AckWhenPlaced(QpContext& qp, Psn psn, const RequestRef* request) {
  const TimePoint placed = std::max({nic_.Pcie().LastWriteLandsAt(), qp.write_order.lands, events_.Now()});
  RequestLog& log = nic_.Trace().Requests();
  if (request != nullptr && log.Enabled()) {
    log.Mark(request->node, request->qpn, request->wqe, RequestStage::kLastBytePlaced, placed);
  }
  const TimePoint ack_at = placed + nic_.Profile().ack_turnaround;
  if (ack_at <= events_.Now()) {
    SendAck(qp, psn, AckSyndrome::kAck);
    return;
  }
  // The ACK is committed: its message is placed and completes as received. It leaves even if the
  // QP enters the error state meanwhile (a consumer's disconnect or flush seen in the CQE's wake),
  // so the peer's request completes as delivered instead of being flushed for want of an ACK. A
  // QP that is gone (closed, or its number reused) sends nothing.
  const Qpn qpn = qp.qpn;
  events_.Schedule(ack_at, EventPriority::kDevice, [this, qpn, psn] {
    QpContext* q = nic_.FindQp(qpn);
    if (q != nullptr && (q->state == QpState::kReadyToSend || q->state == QpState::kError)) {
      SendAck(*q, psn, AckSyndrome::kAck);
    }
  });
}

void Responder::FailReceive(QpContext& qp, Psn psn, CompletionSyndrome receive, AckSyndrome nak) {
  CompletionRecord rec;
  rec.syndrome = receive;
  CompleteReceive(nic_, qp, rec);
  Fail(qp, psn, nak);
}

void Responder::Fail(QpContext& qp, Psn psn, AckSyndrome syndrome) {
  ResponderState& r = qp.responder;
  if (r.ReadsInProgress() == 0) {
    FailNow(qp, psn, syndrome);
    return;
  }
  if (r.nak_pending) return;  // nothing after the first refused request counts
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Responder, "qp {} psn {} refused, NAK after {} read(s)",
               qp.qpn.value, psn.value, r.ReadsInProgress());
  r.nak_pending = true;
  r.nak_psn = psn;
  r.nak_syndrome = syndrome;
}

void Responder::FailNow(QpContext& qp, Psn psn, AckSyndrome syndrome) {
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Responder, "qp {} psn {} refused ({})", qp.qpn.value,
               psn.value, Name(syndrome));
  SendAck(qp, psn, syndrome);
  // The peer learns of the error from the NAK; this side flushes its own queues.
  nic_.QpStates().EnterError(qp, QpErrorCause::kRemote);
}

void Responder::OnConnect(QpContext& qp, Psn receive_psn) { qp.responder.expected_psn = receive_psn; }

void Responder::FlushReceives(QpContext& qp) {
  ResponderState& r = qp.responder;
  if (qp.srq.value != 0) {
    // SRQ WQEs belong to the SRQ, not the QP (ref §3.9): only one this QP had already taken for
    // a message it will never finish completes, flushed; the rest stay for other QPs.
    if (!r.in_message) return;
    r.in_message = false;
    CompletionRecord rec;
    rec.qpn = qp.qpn.value;
    rec.wqe_counter = r.receive_wqe;
    rec.opcode = WqeOpcode::kReceive;
    rec.syndrome = CompletionSyndrome::kFlushed;
    rec.flags = cqe_flag::kReceive | cqe_flag::kSrq;
    rec.srqn = qp.srq.value;
    nic_.Cqes().Post(qp.receive_cq, rec, &qp.write_order);
    return;
  }
  const WorkQueue& rq = qp.receive_queue;
  if (rq.ring == nullptr) return;
  const std::uint32_t published = rq.ring->PublishedProducerIndex();
  while (published - r.receive_counter * rq.stride_blocks >= rq.stride_blocks) {
    CompletionRecord rec;
    rec.qpn = qp.qpn.value;
    rec.wqe_counter = r.receive_counter;
    rec.opcode = WqeOpcode::kReceive;
    rec.syndrome = CompletionSyndrome::kFlushed;
    rec.flags = cqe_flag::kReceive;
    nic_.Cqes().Post(qp.receive_cq, rec, &qp.write_order);
    rq.ring->ConsumerRelease(rq.stride_blocks);
    ++r.receive_counter;
  }
}

}  // namespace ndksim::hw
