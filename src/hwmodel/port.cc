// Port serialization, wire propagation, switch hop and loopback.
#include "hwmodel/port.h"

#include <algorithm>

#include "hwmodel/completer.h"
#include "hwmodel/responder.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

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
    : nic_(nic), events_(events), network_(network) {}

PacketPool& Port::Pool() { return network_.Pool(); }

TimePoint Port::Transmit(std::uint32_t id) {
  Packet& pkt = network_.Pool().Get(id);
  const auto& p = nic_.Profile();
  auto& c = nic_.MutableCounters();
  ++c.packets_sent;
  c.bytes_sent += pkt.payload.size();
  const std::uint64_t wire_bytes = pkt.payload.size() + p.packet_overhead_bytes;
  const TimePoint start = std::max(events_.Now(), tx_free_);
  tx_free_ = start + p.link_rate.TimeFor(wire_bytes);
  TimePoint arrival = tx_free_;
  if (pkt.destination_node != nic_.Id()) {
    arrival += p.propagation_delay;
    if (network_.Switched()) arrival += p.switch_latency + p.propagation_delay;
  }
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Port, "tx {} psn {} qp {} -> n{} {} B, arrives {}",
               Name(pkt.opcode), pkt.psn.value, pkt.destination_qpn.value, pkt.destination_node,
               pkt.payload.size(), arrival);
  Nic* dest = network_.NodeNic(pkt.destination_node);
  NDKSIM_CHECK(dest != nullptr);
  events_.Schedule(arrival, EventPriority::kWire, [dest, id] { dest->GetPort().Receive(id); });
  return start;
}

void Port::Receive(std::uint32_t id) {
  Packet& pkt = network_.Pool().Get(id);
  ++nic_.MutableCounters().packets_received;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Port, "rx {} psn {} qp {} {} B", Name(pkt.opcode),
               pkt.psn.value, pkt.destination_qpn.value, pkt.payload.size());
  // The receiving block owns the packet from here and releases it when its payload is placed.
  if (pkt.opcode == PacketOpcode::kManagement) {
    nic_.DeliverManagementDatagram(pkt.payload);
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
