// SPDX-License-Identifier: MIT
// Port, wire and fabric: a NIC's port serializes packets at the link rate; the network carries them
// to the destination node after the propagation delay (and a switch hop when nodes meet at a
// switch). Packets live in a pool shared by the fabric so steady-state traffic does not allocate.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "event_queue.h"
#include "fault_injector.h"
#include "nic.h"
#include "packet.h"

namespace ndksim::hw {

// Recycles Packet objects; references stay valid until the packet is released.
class PacketPool {
 public:
  Packet& Acquire(std::uint32_t* id);
  Packet& Get(std::uint32_t id) { return packets_[id]; }
  void Release(std::uint32_t id);
  std::size_t Allocated() const { return packets_.size(); }

 private:
  std::deque<Packet> packets_;
  std::vector<std::uint32_t> free_;
};

class Network;

class Port {
 public:
  Port(Nic& nic, EventQueue& events, Network& network);

  // Takes ownership of packet `id` and puts it on the wire; returns when its first byte goes out.
  TimePoint Transmit(std::uint32_t id);
  // A packet arrived from the wire: hands it to the responder or the completer once its QP's
  // context is on chip.
  void Receive(std::uint32_t id);

  PacketPool& Pool();
  TimePoint TransmitFreeAt() const { return tx_free_; }
  // Time taken so far (NicBusy): serializing packets onto the wire; the receive pipeline's intake.
  Duration TransmitBusy() const { return transmit_busy_; }
  Duration ReceiveBusy() const { return receive_busy_; }
  // A block has a packet ready while the transmitter is busy: `resume` runs in turn, when the
  // transmitter is free.
  void AwaitTransmitter(Resume resume) { waiters_.Add(std::move(resume)); }

 private:
  Nic& nic_;
  EventQueue& events_;
  Network& network_;
  TimePoint tx_free_{};
  TimePoint rx_free_{};  // the receive pipeline takes its next packet then
  Duration transmit_busy_{};
  Duration receive_busy_{};
  WaitList waiters_;

  // Hands a received packet to the block that takes it.
  void Deliver(std::uint32_t id);
};

// The links between ports. Two nodes are joined back to back; more meet at one switch.
class Network {
 public:
  Network() = default;
  void Attach(Nic& nic);
  Nic* NodeNic(NodeId id) { return id < nics_.size() ? nics_[id] : nullptr; }
  // Which node owns `address`, or nullptr.
  Nic* Resolve(const NetworkAddress& address);
  PacketPool& Pool() { return pool_; }
  bool Switched() const { return nics_.size() > 2; }
  // The fabric's fault rules, consulted by every NIC's hook points.
  FaultInjector& Faults() { return faults_; }

 private:
  std::vector<Nic*> nics_;  // index = node id
  PacketPool pool_;
  FaultInjector faults_;
};

}  // namespace ndksim::hw
