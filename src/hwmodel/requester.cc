// SPDX-License-Identifier: MIT
// Requester pipeline: processing unit (fence, ORD, local translation, PSNs), segmenter (MTU
// packets, per-packet payload DMA, staging) and in-order transmission.
#include "requester.h"

#include <algorithm>
#include <cstring>

#include "completer.h"
#include "context_cache.h"
#include "contexts.h"
#include "pcie_link.h"
#include "port.h"
#include "processing_units.h"
#include "translation.h"
#include "transmit_loop.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

namespace {

bool IsRead(const WqeDescriptor& d) { return d.control.opcode == WqeOpcode::kRead; }

// Done before a rewind: a local memory operation that was applied, or a read whose every response
// is in. Such a WQE is not executed twice.
bool AlreadyDone(const WqeDescriptor& d) {
  return d.state == DescriptorState::kCompleted || d.state == DescriptorState::kPlacing;
}

bool IsMemoryOperation(const WqeDescriptor& d) {
  return d.control.opcode == WqeOpcode::kBind || d.control.opcode == WqeOpcode::kFastRegister ||
         d.control.opcode == WqeOpcode::kLocalInvalidate;
}

// Packet opcode for packet `index` of `count` of a send or write message.
PacketOpcode SegmentOpcode(WqeOpcode op, std::uint32_t index, std::uint32_t count) {
  const bool write = op == WqeOpcode::kWrite;
  if (count == 1) return write ? PacketOpcode::kWriteOnly : PacketOpcode::kSendOnly;
  if (index == 0) return write ? PacketOpcode::kWriteFirst : PacketOpcode::kSendFirst;
  if (index + 1 == count) return write ? PacketOpcode::kWriteLast : PacketOpcode::kSendLast;
  return write ? PacketOpcode::kWriteMiddle : PacketOpcode::kSendMiddle;
}

}  // namespace

bool GatherPayload(Nic& nic, const QpContext& qp, const WqeDescriptor& d, std::uint64_t offset,
                   std::uint32_t length, std::byte* out) {
  if (d.control.flags & wqe_flag::kInline) {
    std::memcpy(out, d.inline_data.data() + offset, length);
    return true;
  }
  return GatherSges(nic.Tpt(), qp.pd, {d.sges.data(), d.control.sge_count}, offset, length, out, 0);
}

std::uint32_t Requester::PacketsFor(std::uint64_t bytes) const {
  const std::uint32_t mtu = nic_.Profile().mtu_bytes;
  return bytes == 0 ? 1 : static_cast<std::uint32_t>((bytes + mtu - 1) / mtu);
}

std::uint32_t Requester::PacketBytes(const WqeDescriptor& d, std::uint32_t index) const {
  if (IsRead(d)) return 0;  // a read request carries no payload
  const std::uint64_t offset = std::uint64_t{index} * nic_.Profile().mtu_bytes;
  if (offset >= d.total_length) return 0;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(nic_.Profile().mtu_bytes, d.total_length - offset));
}

// ---- processing unit ------------------------------------------------------------------------------

void Requester::Schedule(QpContext& qp) {
  RequesterState& r = qp.requester;
  if (r.scheduled || r.fence_blocked || (r.halted && r.next_exec == r.halt_at)) return;
  if (qp.state != QpState::kReadyToSend || r.next_exec == qp.fetch.tail) return;
  // The unit runs at most a few WQEs ahead of the segmenter; it resumes as packets leave.
  if (r.next_exec - r.segment_next >= kMaxWqesAhead) return;
  r.scheduled = true;
  const TimePoint now = events_.Now();
  const TimePoint done =
      nic_.Units().Run(qp.qpn, nic_.Profile().wqe_processing, now, nic_.QpContexts().Access(qp.qpn.value, now));
  const Qpn qpn = qp.qpn;
  const std::uint64_t generation = r.generation;
  events_.Schedule(done, EventPriority::kDevice, [this, qpn, generation] { Step(qpn, generation); });
}

void Requester::Step(Qpn qpn, std::uint64_t generation) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr) return;
  RequesterState& r = qp->requester;
  if (r.generation != generation) return;  // a rewind or abort already rescheduled the QP
  r.scheduled = false;
  if (qp->state != QpState::kReadyToSend || r.next_exec == qp->fetch.tail) return;
  if (r.halted && r.next_exec == r.halt_at) return;  // a failed WQE: nothing from it on runs
  const std::uint32_t counter = r.next_exec;
  WqeDescriptor& d = qp->Descriptor(counter);
  if (AlreadyDone(d)) {
    // Done before a rewind: its PSNs stay used, so the PSN sequence replays as it was first sent
    // (a later request must not take an acknowledged write's PSN, which the responder would take
    // for a duplicate).
    if (d.packet_count > 0) r.next_psn = d.last_psn + 1;
    ++r.next_exec;
    Pump(*qp);
    Schedule(*qp);
    return;
  }
  NDKSIM_CHECK(d.state == DescriptorState::kFetched);
  // Read fence: this WQE may not start while earlier reads are outstanding (a visible stall,
  // counted once per fenced WQE). ORD: a read waits while the outbound read limit is reached.
  // Either way the WQE has been processed; the completer's "read retired" wakes it.
  if (Stalled(*qp, d)) {
    r.fence_blocked = true;
    if (d.control.flags & wqe_flag::kReadFence) {
      ++nic_.MutableCounters().fence_stalls;
      ++qp->counters.fence_stalls;
      NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Requester, "qp {} wqe {} fence stall, {} read(s) out",
                   qpn.value, counter, r.outstanding_reads);
    }
    return;
  }
  if (d.total_length > nic_.Profile().max_transfer_bytes) {
    FailAtExecution(*qp, counter, CompletionSyndrome::kLocalLengthError);
    return;
  }
  ++nic_.MutableCounters().wqes_executed;
  ++qp->counters.wqes_executed;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Requester, "qp {} wqe {} {} {} B", qpn.value, counter,
               Name(d.control.opcode), d.total_length);
  switch (d.control.opcode) {
    case WqeOpcode::kSend:
    case WqeOpcode::kSendInvalidate:
    case WqeOpcode::kWrite:
      if (!CheckLocalSges(*qp, d, 0)) return;
      break;
    case WqeOpcode::kRead:
      // Read responses are placed into the local SGEs: they need local write access.
      // ref §3.3: and the read-sink right where the profile requires it.
      if (!CheckLocalSges(*qp, d, access::kLocalWrite | access::kReadSink)) return;
      ++r.outstanding_reads;
      break;
    case WqeOpcode::kBind:
    case WqeOpcode::kFastRegister:
    case WqeOpcode::kLocalInvalidate:
      // Applied by the segmenter, in order with the packets before it.
      d.state = DescriptorState::kExecuting;
      ++r.next_exec;
      Pump(*qp);
      Schedule(*qp);
      return;
    default:
      FailAtExecution(*qp, counter, CompletionSyndrome::kInvalidRequest);
      return;
  }
  // Sends and writes use one PSN per packet; a read request one per response packet it asks for.
  const std::uint32_t count = PacketsFor(d.total_length);
  d.packet_count = count;
  d.first_psn = r.next_psn;
  d.last_psn = r.next_psn + (count - 1);
  r.next_psn = r.next_psn + count;
  d.state = DescriptorState::kAwaitingAck;
  ++r.next_exec;
  nic_.Comp().ArmTimer(*qp);
  Pump(*qp);
  Schedule(*qp);
}

void Requester::FailAtExecution(QpContext& qp, std::uint32_t counter, CompletionSyndrome syndrome) {
  // Nothing from this WQE on is executed; the completer reports its error after the requests
  // before it, which may still be acknowledged, have completed.
  qp.requester.halted = true;
  qp.requester.halt_at = counter;
  nic_.Comp().FailInOrder(qp, counter, syndrome);
}

bool Requester::Stalled(const QpContext& qp, const WqeDescriptor& d) const {
  const RequesterState& r = qp.requester;
  if ((d.control.flags & wqe_flag::kReadFence) && r.outstanding_reads > 0) return true;
  return IsRead(d) && r.outstanding_reads >= qp.outbound_read_limit;
}

bool Requester::CheckLocalSges(QpContext& qp, WqeDescriptor& d, std::uint32_t required) {
  if (d.control.flags & wqe_flag::kInline) return true;
  for (std::uint32_t s = 0; s < d.control.sge_count; ++s) {
    const WqeDataSegment& sge = d.sges[s];
    const TranslationResult t = nic_.Tpt().Check(MemoryKey{sge.local_key}, qp.pd, sge.address, sge.length, required);
    if (!t.Ok()) {
      ++nic_.MutableCounters().protection_faults;
      NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Translation, "qp {} local sge {} key {:#x}: {}",
                   qp.qpn.value, s, sge.local_key, Name(t.outcome));
      FailAtExecution(qp, qp.requester.next_exec, CompletionSyndrome::kLocalProtectionError);
      return false;
    }
  }
  return true;
}

MemoryOpOutcome Requester::ApplyMemoryOperation(QpContext& qp, const WqeDescriptor& d) {
  const MemoryKey target{d.control.invalidate_key};
  const std::uint32_t generation = d.control.inline_bytes;  // of the target entry
  if (d.control.opcode == WqeOpcode::kLocalInvalidate) return nic_.Tpt().Invalidate(target, qp.pd, generation);
  if (d.control.sge_count < 1) return MemoryOpOutcome::kBadKey;  // malformed WQE
  WqeMemorySegment m;
  std::memcpy(&m, &d.sges[0], sizeof m);
  if (d.control.opcode == WqeOpcode::kBind) {
    return nic_.Tpt().Bind({target, generation, MemoryKey{d.remote.remote_key}, d.remote.reserved, qp.pd,
                            d.remote.remote_address, m.length, m.access});
  }
  if (d.control.sge_count < 2) return MemoryOpOutcome::kBadKey;
  WqePageListSegment list;
  std::memcpy(&list, &d.sges[1], sizeof list);
  // The page list is host memory the NIC reads by DMA. The read occupies the link and a tag; its
  // latency is folded into wqe_processing, so the registration applies now.
  (void)nic_.Pcie().DmaReadArrival(std::uint64_t{list.page_count} * sizeof(std::uint64_t), &qp.counters);
  return nic_.Tpt().FastRegister({target, generation, qp.pd, d.remote.remote_address, m.length, d.remote.reserved, m.access,
                                  reinterpret_cast<const std::uint64_t*>(list.page_list), list.page_count});
}

bool Requester::ExecuteMemoryOperation(QpContext& qp, std::uint32_t counter) {
  const WqeDescriptor& d = qp.Descriptor(counter);
  const MemoryOpOutcome outcome = ApplyMemoryOperation(qp, d);
  if (outcome != MemoryOpOutcome::kOk) {
    NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Translation, "qp {} wqe {} {} key {:#x}: {}", qp.qpn.value,
                 counter, Name(d.control.opcode), d.control.invalidate_key, Name(outcome));
    // ref §3.8 (NDSPI analogue): a malformed memory operation, e.g. invalidating an unbound window.
    nic_.Comp().CompleteWithError(qp, counter, CompletionSyndrome::kInvalidRequest);
    return false;
  }
  // Local operations need no acknowledgement: done now, retired in posting order.
  nic_.Comp().CompleteLocal(qp, counter);
  return true;
}

// ---- segmenter and transmitter ------------------------------------------------------------------

void Requester::Pump(QpContext& qp) {
  const std::uint64_t generation = qp.requester.generation;
  for (;;) {
    if (qp.state != QpState::kReadyToSend || qp.requester.generation != generation) return;
    const bool segmented = Segment(qp);
    if (qp.state != QpState::kReadyToSend || qp.requester.generation != generation) return;
    const bool drained = Drain(qp);
    if (!segmented && !drained) break;
  }
  Schedule(qp);
}

bool Requester::Segment(QpContext& qp) {
  RequesterState& r = qp.requester;
  const std::uint32_t buffer = nic_.Profile().qp_transmit_buffer_bytes;
  bool progress = false;
  while (r.segment_next != r.next_exec) {
    const std::uint32_t counter = r.segment_next;
    WqeDescriptor& d = qp.Descriptor(counter);
    if (AlreadyDone(d)) {  // done before a rewind (see Step)
      ++r.segment_next;
      continue;
    }
    if (IsMemoryOperation(d)) {
      if (r.staged_head != r.staged_tail) return progress;  // earlier packets still read their payload
      if (!ExecuteMemoryOperation(qp, counter)) return true;
      // Done at once; if it retired, retirement already moved the segmenter past it.
      if (r.segment_next == counter) ++r.segment_next;
      progress = true;
      continue;
    }
    // A read is one request packet; its responses carry the data.
    const std::uint32_t packets = IsRead(d) ? 1 : d.packet_count;
    while (r.segment_packet < packets) {
      const std::uint32_t bytes = PacketBytes(d, r.segment_packet);
      const bool empty = r.staged_head == r.staged_tail;
      if (r.staged_tail - r.staged_head == kStagedPackets || (!empty && r.staged_bytes + bytes > buffer)) {
        return progress;  // the transmit buffer is full; packets leaving make room
      }
      // Payload is read ahead only while the link has room for it, so a WQE fetch is never
      // queued behind a long backlog of payload reads.
      const bool needs_read = bytes > 0 && !(d.control.flags & wqe_flag::kInline);
      if (needs_read && nic_.Pcie().ReadSlotAt() > events_.Now()) {
        if (!r.tag_wait_scheduled) {
          r.tag_wait_scheduled = true;
          const Qpn qpn = qp.qpn;
          nic_.Pcie().AwaitReadSlot([this, qpn] { OnReadSlotFree(qpn); });
        }
        return progress;
      }
      StagePacket(qp, counter, r.segment_packet, bytes);
      if (qp.state != QpState::kReadyToSend) return true;
      ++r.segment_packet;
      progress = true;
    }
    r.segment_packet = 0;
    ++r.segment_next;
  }
  return progress;
}

void Requester::StagePacket(QpContext& qp, std::uint32_t counter, std::uint32_t index, std::uint32_t bytes) {
  RequesterState& r = qp.requester;
  const WqeDescriptor& d = qp.Descriptor(counter);
  std::uint32_t id;
  Packet& p = nic_.GetPort().Pool().Acquire(&id);
  p.source_node = nic_.Id();
  p.destination_node = qp.remote_node;
  p.source_qpn = qp.qpn;
  p.destination_qpn = qp.remote_qpn;
  p.remote_address = d.remote.remote_address;
  p.remote_key = d.remote.remote_key;
  p.dma_length = d.total_length;
  p.syndrome = AckSyndrome::kAck;
  p.trace_wqe = d.control.wqe_counter;
  if (IsRead(d)) {
    // A resent read asks only for the responses it has not received yet.
    const std::uint64_t skip = std::uint64_t{d.responses_received} * nic_.Profile().mtu_bytes;
    p.opcode = PacketOpcode::kReadRequest;
    p.psn = d.first_psn + d.responses_received;
    p.remote_address += skip;
    p.dma_length -= static_cast<std::uint32_t>(std::min<std::uint64_t>(skip, d.total_length));
  } else {
    const bool last = index + 1 == d.packet_count;
    p.opcode = SegmentOpcode(d.control.opcode, index, d.packet_count);
    p.psn = d.first_psn + index;
    p.ack_request = last || (index + 1) % kAckRequestInterval == 0;
    p.solicited = last && (d.control.flags & wqe_flag::kSolicited);
    p.has_invalidate_key = last && d.control.opcode == WqeOpcode::kSendInvalidate;
    p.invalidate_key = d.control.invalidate_key;
    p.payload.resize(bytes);
  }
  const std::uint32_t slot = r.staged_tail++;
  StagedPacket& s = r.staged[slot % kStagedPackets];
  s = StagedPacket{id, counter, index, bytes, false};
  r.staged_bytes += bytes;
  // Inline data came with the WQE and a read request has no payload: ready at once.
  if (bytes == 0 || (d.control.flags & wqe_flag::kInline)) {
    if (bytes > 0) GatherPayload(nic_, qp, d, std::uint64_t{index} * nic_.Profile().mtu_bytes, bytes, p.payload.data());
    s.ready = true;
    return;
  }
  // The read goes out when the payload's keys and pages are on chip; the QP's later packets wait
  // behind it in the ring, other QPs' reads go on meanwhile.
  const TimePoint now = events_.Now();
  const TimePoint translated = nic_.Tpt().FetchSges({d.sges.data(), d.control.sge_count},
                                                    std::uint64_t{index} * nic_.Profile().mtu_bytes, bytes, now);
  if (translated == now) {
    ReadPayload(qp, slot, bytes);
    return;
  }
  const Qpn qpn = qp.qpn;
  const std::uint64_t generation = r.generation;
  events_.Schedule(translated, EventPriority::kDevice, [this, qpn, generation, slot, bytes] {
    QpContext* q = nic_.FindQp(qpn);
    // A rewind or an error meanwhile emptied the ring (its packet is released): nothing to read.
    if (q == nullptr || q->state != QpState::kReadyToSend || q->requester.generation != generation) return;
    ReadPayload(*q, slot, bytes);
  });
}

void Requester::ReadPayload(QpContext& qp, std::uint32_t slot, std::uint32_t bytes) {
  const Qpn qpn = qp.qpn;
  const std::uint64_t generation = qp.requester.generation;
  nic_.MutableCounters().payload_read_bytes += bytes;
  nic_.Pcie().DmaRead(bytes, [this, qpn, generation, slot] { OnPayloadRead(qpn, generation, slot); }, &qp.counters);
}

void Requester::OnPayloadRead(Qpn qpn, std::uint64_t generation, std::uint32_t slot) {
  QpContext* qp = nic_.FindQp(qpn);
  // A rewind or an error since the read was issued makes it stale (its packet is released).
  if (qp == nullptr || qp->state != QpState::kReadyToSend || qp->requester.generation != generation) return;
  StagedPacket& s = qp->requester.staged[slot % kStagedPackets];
  const WqeDescriptor& d = qp->Descriptor(s.counter);
  Packet& p = nic_.GetPort().Pool().Get(s.packet_id);
  const std::uint64_t offset = std::uint64_t{s.index} * nic_.Profile().mtu_bytes;
  if (nic_.InjectFault(FaultPoint::kPayloadRead, qpn.value) != nullptr) {
    // The read came back with an uncorrectable error: the request fails, the QP with it.
    nic_.Comp().CompleteWithError(*qp, s.counter, CompletionSyndrome::kLocalQpOperationError);
    return;
  }
  // The bytes are copied as host memory is now, when the DMA completes.
  if (!GatherPayload(nic_, *qp, d, offset, s.bytes, p.payload.data())) {
    // The token went away between the check and the DMA: a local protection error.
    ++nic_.MutableCounters().protection_faults;
    nic_.Comp().CompleteWithError(*qp, s.counter, CompletionSyndrome::kLocalProtectionError);
    return;
  }
  s.ready = true;
  Pump(*qp);
}

bool Requester::Drain(QpContext& qp) {
  RequesterState& r = qp.requester;
  Port& port = nic_.GetPort();
  const Qpn qpn = qp.qpn;
  return TransmitInOrder(
      port, events_.Now(), r.drain_scheduled,
      [&]() -> std::optional<StagedHead> {
        if (r.staged_head == r.staged_tail) return std::nullopt;
        const StagedPacket& s = r.staged[r.staged_head % kStagedPackets];
        if (s.ready) return StagedHead::kReady;
        NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Requester, "qp {} wqe {} payload not in yet, {} staged",
                     qp.qpn.value, s.counter, r.staged_tail - r.staged_head);
        return StagedHead::kNotReady;
      },
      [] {},  // the requester discards nothing it staged: a rewind empties the ring instead
      [&] {
        const StagedPacket& s = r.staged[r.staged_head % kStagedPackets];
        const std::uint32_t counter = s.counter;
        const bool first = s.index == 0;
        r.staged_bytes -= s.bytes;
        ++r.staged_head;
        const TimePoint on_wire = port.Transmit(s.packet_id);
        RequestLog& log = nic_.Trace().Requests();
        if (first && log.Enabled()) {
          log.Mark(nic_.Id(), qp.qpn.value, qp.Descriptor(counter).control.wqe_counter, RequestStage::kFirstByteOnWire,
                   on_wire);
        }
        return true;
      },
      [this, qpn] { return Resume([this, qpn] { OnTransmitterFree(qpn); }); });
}

void Requester::OnTransmitterFree(Qpn qpn) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr || !qp->requester.drain_scheduled) return;  // stale: rewound or aborted since
  qp->requester.drain_scheduled = false;
  if (qp->state == QpState::kReadyToSend) Pump(*qp);
}

void Requester::OnReadSlotFree(Qpn qpn) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr || !qp->requester.tag_wait_scheduled) return;
  qp->requester.tag_wait_scheduled = false;
  if (qp->state == QpState::kReadyToSend) Pump(*qp);
}

// ---- messages -------------------------------------------------------------------------------------

void Requester::OnConnect(QpContext& qp, Psn send_psn) { qp.requester.next_psn = send_psn; }

void Requester::OnRetired(QpContext& qp) {
  RequesterState& r = qp.requester;
  const std::uint32_t head = qp.completer.head;
  // A rewind leaves the pipeline behind requests that were already done (a write acknowledged
  // after a read whose responses were lost); once they retire, it must not visit their freed
  // descriptors (head <= segment_next <= next_exec).
  const auto behind_head = [&](std::uint32_t c) { return static_cast<std::int32_t>(c - head) < 0; };
  if (behind_head(r.next_exec)) r.next_exec = head;
  if (behind_head(r.segment_next)) {
    r.segment_next = head;
    r.segment_packet = 0;
  }
}

void Requester::OnReadFailed(QpContext& qp) {
  RequesterState& r = qp.requester;
  if (r.outstanding_reads > 0) --r.outstanding_reads;
}

void Requester::OnFlushed(QpContext& qp) {
  RequesterState& r = qp.requester;
  // Every WQE still in the requester's stages completes as flushed (the completer retires it).
  for (std::uint32_t c = qp.completer.head; c != qp.fetch.tail; ++c) {
    WqeDescriptor& d = qp.Descriptor(c);
    if (d.state != DescriptorState::kFetched && d.state != DescriptorState::kExecuting) continue;
    d.state = DescriptorState::kCompleted;
    d.syndrome = CompletionSyndrome::kFlushed;
  }
  r.next_exec = qp.fetch.tail;
  r.segment_next = qp.fetch.tail;
  r.segment_packet = 0;
  r.outstanding_reads = 0;
  r.halted = false;
}

void Requester::OnReadRetired(QpContext& qp) {
  RequesterState& r = qp.requester;
  if (r.outstanding_reads > 0) --r.outstanding_reads;
  if (!r.fence_blocked || Stalled(qp, qp.Descriptor(r.next_exec))) return;
  // The stalled WQE was processed before it stalled: it goes on now, at no further unit cost.
  r.fence_blocked = false;
  r.scheduled = true;
  const Qpn qpn = qp.qpn;
  const std::uint64_t generation = r.generation;
  events_.Schedule(events_.Now(), EventPriority::kDevice, [this, qpn, generation] { Step(qpn, generation); });
}

void Requester::ReleaseStaged(QpContext& qp) {
  RequesterState& r = qp.requester;
  PacketPool& pool = nic_.GetPort().Pool();
  for (std::uint32_t i = r.staged_head; i != r.staged_tail; ++i) pool.Release(r.staged[i % kStagedPackets].packet_id);
  r.staged_head = r.staged_tail = 0;
  r.staged_bytes = 0;
  r.drain_scheduled = false;
  r.tag_wait_scheduled = false;
}

void Requester::Rewind(QpContext& qp, std::uint32_t counter, Psn from) {
  RequesterState& r = qp.requester;
  // Only an unretired request is resent (a retired one's descriptor may already serve another).
  NDKSIM_CHECK(static_cast<std::int32_t>(counter - qp.completer.head) >= 0 &&
               static_cast<std::int32_t>(r.next_exec - counter) > 0);
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Requester, "qp {} rewind to wqe {} psn {}", qp.qpn.value,
               counter, from.value);
  WqeDescriptor& first = qp.Descriptor(counter);
  const auto resume = static_cast<std::uint32_t>(std::max(0, Psn::Diff(from, first.first_psn)));
  for (std::uint32_t c = counter; c != r.next_exec; ++c) {
    WqeDescriptor& d = qp.Descriptor(c);
    if (d.state == DescriptorState::kAwaitingAck) {
      if (IsRead(d) && r.outstanding_reads > 0) --r.outstanding_reads;
      d.state = DescriptorState::kFetched;
    } else if (d.state == DescriptorState::kExecuting) {
      d.state = DescriptorState::kFetched;
    }
    // Responses of later reads are asked for again; those the first one already has are kept.
    if (c != counter && IsRead(d) && d.state == DescriptorState::kFetched) {
      d.responses_received = 0;
      d.response_bytes = 0;
    }
  }
  // Every WQE from `counter` keeps its PSNs; go-back-N resends from packet `resume` of the first
  // (a read is asked again for the responses it lacks).
  r.next_psn = first.first_psn;
  ReleaseStaged(qp);
  r.next_exec = counter;
  r.segment_next = counter;
  r.segment_packet = IsRead(first) ? 0 : std::min(resume, first.packet_count);
  r.fence_blocked = false;
  r.scheduled = false;
  ++r.generation;
  Schedule(qp);
}

void Requester::Abort(QpContext& qp) {
  ReleaseStaged(qp);
  qp.requester.fence_blocked = false;
  qp.requester.scheduled = false;
  ++qp.requester.generation;
}

}  // namespace ndksim::hw
