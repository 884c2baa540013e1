// SPDX-License-Identifier: MIT
// Port serialization, wire propagation, switch hop and loopback.
#include "port.h"

#include <algorithm>

#include "completer.h"
#include "context_cache.h"
#include "contexts.h"
#include "responder.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

namespace {

PacketClass ClassOf(PacketOpcode op) {
  if (op == PacketOpcode::kAcknowledge) return PacketClass::kAcknowledge;
  if (Traits(op).is_request) return PacketClass::kRequest;
  return PacketClass::kReadResponse;
}

}  // namespace

Packet& PacketPool::Acquire(std::uint32_t* id) {
  if (free_.empty()) {
    *id = static_cast<std::uint32_t>(packets_.size());
    packets_.emplace_back();
  } else {
    *id = free_.back();
    free_.pop_back();
  }
  Packet& p = packets_[*id];
  // Reset every header field but keep the payload's capacity.
  std::vector<std::byte> payload = std::move(p.payload);
  p = Packet{};
  payload.clear();
  p.payload = std::move(payload);
  return p;
}

void PacketPool::Release(std::uint32_t id) { free_.push_back(id); }

Port::Port(Nic& nic, EventQueue& events, Network& network)
    : nic_(nic),
      events_(events),
      network_(network),
      waiters_(events, [this] { return tx_free_; }) {}

PacketPool& Port::Pool() { return network_.Pool(); }

TimePoint Port::Transmit(std::uint32_t id) {
  if (nic_.Fatal()) {
    network_.Pool().Release(id);  // a failed NIC puts nothing on the wire
    return events_.Now();
  }
  Packet& pkt = network_.Pool().Get(id);
  const auto& p = nic_.Profile();
  auto& c = nic_.MutableCounters();
  ++c.packets_sent;
  c.bytes_sent += pkt.payload.size();
  if (QpContext* qp = nic_.FindQp(pkt.source_qpn); qp != nullptr) {
    ++qp->counters.packets_sent;
    qp->counters.bytes_sent += pkt.payload.size();
  }
  const std::uint64_t wire_bytes = pkt.payload.size() + p.packet_overhead_bytes + ExtensionHeaderBytes(p.transport, pkt);
  const TimePoint start = std::max(events_.Now(), tx_free_);
  const Duration serialization = p.link_rate.TimeFor(wire_bytes);
  tx_free_ = start + serialization;
  transmit_busy_ += serialization;
  Nic* dest = network_.NodeNic(pkt.destination_node);
  NDKSIM_CHECK(dest != nullptr);
  const HardwareProfile& d = dest->Profile();
  // The receiver takes the packet once its last bit is in (store and forward), then its receive
  // pipeline handles it. Loopback turns around inside the NIC, without MAC or PHY.
  TimePoint arrival = tx_free_ + d.nic_clock.ToDuration(d.packet_processing);
  if (pkt.destination_node != nic_.Id()) {
    arrival += p.port_transmit_latency + p.propagation_delay + d.port_receive_latency;
    if (network_.Switched()) arrival += p.switch_latency + p.propagation_delay;
  }
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Port, "tx {} psn {} qp {} -> n{} {} B, arrives {}",
               Name(pkt.opcode), pkt.psn.value, pkt.destination_qpn.value, pkt.destination_node,
               pkt.payload.size(), arrival);
  const TimePoint first_byte_out = pkt.destination_node != nic_.Id() ? start + p.port_transmit_latency : start;
  if (const FaultRule* rule =
          nic_.InjectFault(FaultPoint::kWire, pkt.source_qpn.value, pkt.destination_node, ClassOf(pkt.opcode))) {
    switch (rule->action) {
      case FaultAction::kDrop:
        network_.Pool().Release(id);  // sent, and lost on the way
        return first_byte_out;
      case FaultAction::kCorrupt:
        // One bit flips; the ICRC over the packet no longer matches.
        pkt.corrupted = true;
        if (!pkt.payload.empty()) pkt.payload[pkt.psn.value % pkt.payload.size()] ^= std::byte{0x01};
        break;
      case FaultAction::kDelay:
        arrival += rule->delay;
        break;
      case FaultAction::kLose:
      case FaultAction::kForceRnr:
      case FaultAction::kInvalidateToken:
      case FaultAction::kOverrun:
      case FaultAction::kFailDma:
      case FaultAction::kFailAdapter:
        // A rule acts only at its action's hook point (FaultRule::Point), and these do not act here.
        NDKSIM_CHECK(!"a non-wire fault action reached the wire hook");
        break;
    }
  }
  events_.Schedule(arrival, EventPriority::kWire, [dest, id] { dest->GetPort().Receive(id); });
  return first_byte_out;
}

void Port::Receive(std::uint32_t id) {
  if (nic_.Fatal()) {
    network_.Pool().Release(id);  // nor takes anything from it
    return;
  }
  Packet& pkt = network_.Pool().Get(id);
  auto& c = nic_.MutableCounters();
  ++c.packets_received;
  c.bytes_received += pkt.payload.size();
  if (QpContext* qp = nic_.FindQp(pkt.destination_qpn); qp != nullptr) {
    ++qp->counters.packets_received;
    qp->counters.bytes_received += pkt.payload.size();
  }
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Port, "rx {} psn {} qp {} {} B", Name(pkt.opcode),
               pkt.psn.value, pkt.destination_qpn.value, pkt.payload.size());
  if (pkt.corrupted) {
    // The invariant CRC does not match: the packet is discarded before any block sees it, and the
    // sender's transport recovers as for a lost packet.
    ++c.icrc_errors;
    NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Port, "rx psn {} qp {}: ICRC error, discarded", pkt.psn.value,
                 pkt.destination_qpn.value);
    network_.Pool().Release(id);
    return;
  }
  // The receive pipeline takes in one packet per receive_packet_interval; a packet that finds it
  // busy waits its turn. It needs the destination QP's context: a packet whose context is not on
  // chip waits for it, while packets for other QPs go on.
  if (pkt.opcode != PacketOpcode::kManagement) {
    const TimePoint now = events_.Now();
    const TimePoint intake = std::max(now, rx_free_);
    const Duration interval = nic_.Profile().nic_clock.ToDuration(nic_.Profile().receive_packet_interval);
    rx_free_ = intake + interval;
    receive_busy_ += interval;
    const TimePoint context = nic_.QpContexts().Access(pkt.destination_qpn.value, intake);
    if (context > now) {
      events_.Schedule(context, EventPriority::kWire, [this, id] { Deliver(id); });
      return;
    }
  }
  Deliver(id);
}

void Port::Deliver(std::uint32_t id) {
  if (nic_.Fatal()) {
    network_.Pool().Release(id);
    return;
  }
  const Packet& pkt = network_.Pool().Get(id);
  // The receiving block owns the packet from here and releases it when its payload is placed.
  if (pkt.opcode == PacketOpcode::kManagement) {
    nic_.DeliverManagementDatagram(pkt.payload, pkt.source_node);
    network_.Pool().Release(id);
  } else if (Traits(pkt.opcode).is_request) {
    nic_.Resp().OnPacket(id);
  } else {
    nic_.Comp().OnPacket(id);
  }
}

void Network::Attach(Nic& nic) {
  NDKSIM_CHECK(nic.Id() == nics_.size());
  nics_.push_back(&nic);
}

Nic* Network::Resolve(const NetworkAddress& address) {
  for (Nic* nic : nics_) {
    if (nic->OwnsAddress(address)) return nic;
  }
  return nullptr;
}

}  // namespace ndksim::hw
