// Requester pipeline: fence and ORD checks, local SGE translation, payload gather by DMA,
// segmentation into packets with PSNs.
#include "hwmodel/requester.h"

#include <algorithm>
#include <cstring>

#include "hwmodel/completer.h"
#include "hwmodel/contexts.h"
#include "hwmodel/pcie_link.h"
#include "hwmodel/port.h"
#include "hwmodel/translation.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

namespace {

bool IsRead(const WqeDescriptor& d) { return d.control.opcode == WqeOpcode::kRead; }

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
  std::uint64_t skip = offset;
  for (std::uint32_t s = 0; s < d.control.sge_count && length > 0; ++s) {
    const WqeDataSegment& sge = d.sges[s];
    if (skip >= sge.length) {
      skip -= sge.length;
      continue;
    }
    const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(sge.length - skip, length));
    if (!nic.Tpt().CopyFrom(MemoryKey{sge.local_key}, qp.pd, sge.address + skip, out, n, 0)) return false;
    out += n;
    length -= n;
    skip = 0;
  }
  return length == 0;
}

std::uint32_t Requester::PacketsFor(std::uint64_t bytes) const {
  const std::uint32_t mtu = nic_.Profile().mtu_bytes;
  return bytes == 0 ? 1 : static_cast<std::uint32_t>((bytes + mtu - 1) / mtu);
}

void Requester::Schedule(QpContext& qp) {
  RequesterState& r = qp.requester;
  if (r.scheduled || r.executing || r.fence_blocked) return;
  if (qp.state != QpState::kReadyToSend || r.next_exec == r.tail) return;
  r.scheduled = true;
  // One processing unit serves all QPs; each WQE occupies it for the profile's cycle count.
  const Duration cost = nic_.Profile().nic_clock.ToDuration(nic_.Profile().wqe_processing);
  processing_free_ = std::max(events_.Now(), processing_free_) + cost;
  const Qpn qpn = qp.qpn;
  const std::uint64_t generation = r.generation;
  events_.Schedule(processing_free_, EventPriority::kDevice, [this, qpn, generation] { Step(qpn, generation); });
}

void Requester::Step(Qpn qpn, std::uint64_t generation) {
  QpContext* qp = nic_.FindQp(qpn);
  if (qp == nullptr) return;
  RequesterState& r = qp->requester;
  if (r.generation != generation) return;  // a rewind or abort already rescheduled the QP
  r.scheduled = false;
  if (qp->state != QpState::kReadyToSend || r.executing || r.next_exec == r.tail) return;
  WqeDescriptor& d = qp->Descriptor(r.next_exec);
  if (d.state == DescriptorState::kCompleted) {
    // A local memory operation that finished before a rewind: it is not executed twice.
    ++r.next_exec;
    Schedule(*qp);
    return;
  }
  NDKSIM_CHECK(d.state == DescriptorState::kFetched);
  // Read fence: this WQE may not start while earlier reads are outstanding (a visible stall).
  if ((d.control.flags & wqe_flag::kReadFence) && r.outstanding_reads > 0) {
    r.fence_blocked = true;
    ++nic_.MutableCounters().fence_stalls;
    NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Requester, "qp {} wqe {} fence stall, {} read(s) out",
                 qpn.value, r.next_exec, r.outstanding_reads);
    return;
  }
  // ORD: a read waits while the outbound read limit is reached.
  if (IsRead(d) && r.outstanding_reads >= qp->outbound_read_limit) {
    r.fence_blocked = true;
    return;
  }
  if (d.total_length > nic_.Profile().max_transfer_bytes) {
    nic_.Comp().CompleteWithError(*qp, r.next_exec, CompletionSyndrome::kLocalLengthError);
    return;
  }
  ++nic_.MutableCounters().wqes_executed;
  d.state = DescriptorState::kExecuting;
  r.executing = true;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Requester, "qp {} wqe {} {} {} B", qpn.value,
               r.next_exec, Name(d.control.opcode), d.total_length);
  switch (d.control.opcode) {
    case WqeOpcode::kSend:
    case WqeOpcode::kSendInvalidate:
    case WqeOpcode::kWrite:
      ExecuteSendOrWrite(*qp, d);
      return;
    case WqeOpcode::kRead:
      ExecuteRead(*qp, d);
      return;
    case WqeOpcode::kBind:
    case WqeOpcode::kFastRegister:
    case WqeOpcode::kLocalInvalidate:
      ExecuteMemoryOperation(*qp, d);
      return;
    default:
      r.executing = false;
      nic_.Comp().CompleteWithError(*qp, r.next_exec, CompletionSyndrome::kInvalidRequest);
      return;
  }
}

MemoryOpOutcome Requester::ApplyMemoryOperation(const QpContext& qp, const WqeDescriptor& d) {
  const MemoryKey target{d.control.invalidate_key};
  if (d.control.opcode == WqeOpcode::kLocalInvalidate) return nic_.Tpt().Invalidate(target, qp.pd);
  if (d.control.sge_count < 1) return MemoryOpOutcome::kBadKey;  // malformed WQE
  WqeMemorySegment m;
  std::memcpy(&m, &d.sges[0], sizeof m);
  if (d.control.opcode == WqeOpcode::kBind) {
    return nic_.Tpt().Bind({target, MemoryKey{d.remote.remote_key}, qp.pd, d.remote.remote_address, m.length,
                            m.access});
  }
  if (d.control.sge_count < 2) return MemoryOpOutcome::kBadKey;
  WqePageListSegment list;
  std::memcpy(&list, &d.sges[1], sizeof list);
  // The page list is host memory the NIC reads by DMA (counted; its latency is in wqe_processing).
  ++nic_.MutableCounters().dma_reads;
  nic_.MutableCounters().dma_read_bytes += std::uint64_t{list.page_count} * sizeof(std::uint64_t);
  return nic_.Tpt().FastRegister({target, qp.pd, d.remote.remote_address, m.length, d.remote.reserved, m.access,
                                  reinterpret_cast<const std::uint64_t*>(list.page_list), list.page_count});
}

void Requester::ExecuteMemoryOperation(QpContext& qp, WqeDescriptor& d) {
  RequesterState& r = qp.requester;
  const std::uint32_t counter = r.next_exec;
  const MemoryOpOutcome outcome = ApplyMemoryOperation(qp, d);
  r.executing = false;
  if (outcome != MemoryOpOutcome::kOk) {
    NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Translation, "qp {} wqe {} {} key {:#x}: {}", qp.qpn.value,
                 counter, Name(d.control.opcode), d.control.invalidate_key, Name(outcome));
    // ref §3.8 (NDSPI analogue): a malformed memory operation, e.g. invalidating an unbound window.
    nic_.Comp().CompleteWithError(qp, counter, CompletionSyndrome::kInvalidRequest);
    return;
  }
  // Local operations need no acknowledgement: done now, retired in posting order.
  ++r.next_exec;
  nic_.Comp().CompleteLocal(qp, counter);
  Schedule(qp);
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
      qp.requester.executing = false;
      nic_.Comp().CompleteWithError(qp, qp.requester.next_exec, CompletionSyndrome::kLocalProtectionError);
      return false;
    }
  }
  return true;
}

void Requester::ExecuteSendOrWrite(QpContext& qp, WqeDescriptor& d) {
  if (!CheckLocalSges(qp, d, 0)) return;
  const std::uint32_t counter = qp.requester.next_exec;
  if ((d.control.flags & wqe_flag::kInline) || d.total_length == 0) {
    EmitMessage(qp, counter);  // no payload DMA: inline data came with the WQE
    return;
  }
  const Qpn qpn = qp.qpn;
  const std::uint64_t generation = qp.requester.generation;
  nic_.Pcie().DmaRead(d.total_length, [this, qpn, counter, generation] {
    QpContext* q = nic_.FindQp(qpn);
    // A rewind or an error since the read was issued makes it stale.
    if (q == nullptr || q->state != QpState::kReadyToSend || q->requester.generation != generation) return;
    EmitMessage(*q, counter);
  });
}

void Requester::EmitMessage(QpContext& qp, std::uint32_t counter) {
  RequesterState& r = qp.requester;
  WqeDescriptor& d = qp.Descriptor(counter);
  const std::uint32_t mtu = nic_.Profile().mtu_bytes;
  const std::uint32_t count = PacketsFor(d.total_length);
  d.packet_count = count;
  d.first_psn = r.next_psn;
  d.last_psn = r.next_psn + (count - 1);
  PacketPool& pool = nic_.GetPort().Pool();
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t offset = std::uint64_t{i} * mtu;
    const auto len = static_cast<std::uint32_t>(std::min<std::uint64_t>(mtu, d.total_length - std::min<std::uint64_t>(offset, d.total_length)));
    std::uint32_t id;
    Packet& p = pool.Acquire(&id);
    p.source_node = nic_.Id();
    p.destination_node = qp.remote_node;
    p.source_qpn = qp.qpn;
    p.destination_qpn = qp.remote_qpn;
    p.opcode = SegmentOpcode(d.control.opcode, i, count);
    p.psn = r.next_psn;
    r.next_psn = r.next_psn + 1;
    const bool last = i + 1 == count;
    p.solicited = last && (d.control.flags & wqe_flag::kSolicited);
    p.has_invalidate_key = last && d.control.opcode == WqeOpcode::kSendInvalidate;
    p.invalidate_key = d.control.invalidate_key;
    p.remote_address = d.remote.remote_address;
    p.remote_key = d.remote.remote_key;
    p.dma_length = d.total_length;
    p.syndrome = AckSyndrome::kAck;
    p.trace_wqe = d.control.wqe_counter;
    p.payload.resize(len);
    if (!GatherPayload(nic_, qp, d, offset, len, p.payload.data())) {
      // The token went away between the check and the DMA: a local protection error.
      pool.Release(id);
      r.executing = false;
      nic_.Comp().CompleteWithError(qp, counter, CompletionSyndrome::kLocalProtectionError);
      return;
    }
    const TimePoint on_wire = nic_.GetPort().Transmit(id);
    if (i == 0) MarkFirstByte(qp, d, on_wire);
  }
  Finish(qp, d);
}

void Requester::ExecuteRead(QpContext& qp, WqeDescriptor& d) {
  // Read responses are placed into the local SGEs: they need local write access.
  // ref §3.3: and the read-sink right where the profile requires it.
  if (!CheckLocalSges(qp, d, access::kLocalWrite | access::kReadSink)) return;
  RequesterState& r = qp.requester;
  const std::uint32_t count = PacketsFor(d.total_length);
  d.packet_count = count;
  d.first_psn = r.next_psn;
  d.last_psn = r.next_psn + (count - 1);
  d.response_bytes = 0;
  std::uint32_t id;
  Packet& p = nic_.GetPort().Pool().Acquire(&id);
  p.source_node = nic_.Id();
  p.destination_node = qp.remote_node;
  p.source_qpn = qp.qpn;
  p.destination_qpn = qp.remote_qpn;
  p.opcode = PacketOpcode::kReadRequest;
  p.psn = r.next_psn;
  p.solicited = false;
  p.has_invalidate_key = false;
  p.remote_address = d.remote.remote_address;
  p.remote_key = d.remote.remote_key;
  p.dma_length = d.total_length;
  p.syndrome = AckSyndrome::kAck;
  // A read request consumes one PSN per response packet it asks for.
  r.next_psn = r.next_psn + count;
  ++r.outstanding_reads;
  p.trace_wqe = d.control.wqe_counter;
  MarkFirstByte(qp, d, nic_.GetPort().Transmit(id));
  Finish(qp, d);
}

void Requester::MarkFirstByte(const QpContext& qp, const WqeDescriptor& d, TimePoint on_wire) {
  RequestLog& log = nic_.Trace().Requests();
  if (log.Enabled()) log.Mark(nic_.Id(), qp.qpn.value, d.control.wqe_counter, RequestStage::kFirstByteOnWire, on_wire);
}

void Requester::Finish(QpContext& qp, WqeDescriptor& d) {
  RequesterState& r = qp.requester;
  d.state = DescriptorState::kAwaitingAck;
  ++r.next_exec;
  r.executing = false;
  nic_.Comp().ArmTimer(qp);
  Schedule(qp);
}

void Requester::OnReadRetired(QpContext& qp) {
  RequesterState& r = qp.requester;
  if (r.outstanding_reads > 0) --r.outstanding_reads;
  if (r.fence_blocked) {
    r.fence_blocked = false;
    Schedule(qp);
  }
}

void Requester::Rewind(QpContext& qp, std::uint32_t counter) {
  RequesterState& r = qp.requester;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Requester, "qp {} rewind to wqe {}", qp.qpn.value, counter);
  for (std::uint32_t c = counter; c != r.next_exec; ++c) {
    WqeDescriptor& d = qp.Descriptor(c);
    if (d.state == DescriptorState::kAwaitingAck) {
      if (IsRead(d) && r.outstanding_reads > 0) --r.outstanding_reads;
      d.state = DescriptorState::kFetched;
    } else if (d.state == DescriptorState::kExecuting) {
      d.state = DescriptorState::kFetched;
    }
  }
  // Every WQE from `counter` was sent and not yet acknowledged, so its first PSN is where
  // retransmission restarts.
  r.next_psn = qp.Descriptor(counter).first_psn;
  r.next_exec = counter;
  r.executing = false;
  r.fence_blocked = false;
  r.scheduled = false;
  ++r.generation;
  Schedule(qp);
}

void Requester::Abort(QpContext& qp) {
  qp.requester.executing = false;
  qp.requester.fence_blocked = false;
  qp.requester.scheduled = false;
  ++qp.requester.generation;
}

}  // namespace ndksim::hw
