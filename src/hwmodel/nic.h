// SPDX-License-Identifier: MIT
// The RNIC: owns the hardware blocks and the NIC's context tables, and exposes what a driver can
// touch: MMIO doorbells and a synchronous command interface for control operations. The NIC never
// calls the driver; it reaches the host only through DMA into host memory and interrupts.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "context_table.h"
#include "fault_injector.h"
#include "qp_state.h"
#include "hwmodel/device.h"
#include "hwmodel/host_interface.h"
#include "ndksim/counters.h"
#include "ndksim/profile.h"
#include "ndksim/time.h"

namespace ndksim {
class Tracer;
}

namespace ndksim::hw {

class EventQueue;
class Host;
class PcieLink;
class DoorbellUnit;
class WqeFetch;
class Translation;
class Requester;
class Responder;
class Completer;
class CompletionEngine;
class Port;
class Network;
class ProcessingUnits;
class ContextCache;
struct QpContext;
struct CqContext;
struct SrqContext;


// Counters of one NIC (include/ndksim/counters.h), updated by the block that owns each.
using NicCounters = ::ndksim::NicCounters;

// The doorbell inbox is cache-line aligned, so the class's size is a multiple of 64 bytes: up to a
// line of tail padding is what that alignment costs, not a member order to fix.
class Nic {  // NOLINT(clang-analyzer-optin.performance.Padding)
 public:
  Nic(NodeId id, const HardwareProfile& profile, EventQueue& events, Host& host, Network& network,
      Tracer& tracer, std::uint64_t seed);
  ~Nic();
  Nic(const Nic&) = delete;
  Nic& operator=(const Nic&) = delete;

  NodeId Id() const { return id_; }
  const HardwareProfile& Profile() const { return profile_; }

  // The driver's view of this NIC (device.h): doorbell registers and the command interface.
  Device& GetDevice() { return device_; }
  DoorbellInbox& Inbox() { return inbox_; }
  // Engine side: moves queued doorbell writes into the model at the current simulated time, in
  // the order they were written. Returns how many were taken.
  std::size_t DrainDoorbells();

  // ---- command interface (device.h says what each command does): engine thread only ----
  void SetEventQueue(SpscRing<EventEntry>* ring, std::uint32_t interrupt_vector);
  void SetDatagramQueue(SpscRing<ManagementDatagram>* ring);
  void EventQueueConsumed();
  CommandStatus CreateCq(const CqCreate& create, CqNumber* out);
  CommandStatus ResizeCq(CqNumber cq, const CompletionQueueMemory& memory, std::uint32_t queued);
  CommandStatus ModerateCq(CqNumber cq, const CqModeration& moderation);
  CommandStatus DestroyCq(CqNumber cq);
  CommandStatus AllocatePd(PdNumber* out);
  CommandStatus FreePd(PdNumber pd);
  CommandStatus CreateQp(const QpCreate& create, Qpn* out);
  CommandStatus ConnectQp(Qpn qpn, const QpConnect& connect);  // -> ReadyToSend
  CommandStatus ModifyQpToError(Qpn qpn);
  CommandStatus DestroyQp(Qpn qpn);
  CommandStatus CreateSrq(const SrqCreate& create, SrqNumber* out);
  CommandStatus ArmSrqLimit(SrqNumber srq, std::uint32_t limit);
  CommandStatus ReplaceSrqQueue(SrqNumber srq, const WorkQueue& queue);
  CommandStatus DestroySrq(SrqNumber srq);
  QpState QueryQpState(Qpn qpn) const;
  CommandStatus RegisterMemory(const MemoryRegistration& reg, MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus DeregisterMemory(MemoryKey key);  // kBusy while windows are bound inside
  CommandStatus AllocateFastRegisterKey(PdNumber pd, std::uint32_t page_capacity, bool remote_access,
                                        MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus AllocateWindowKey(PdNumber pd, MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus AllocatePrivilegedKey(PdNumber pd, MemoryKey* out);
  CommandStatus FreeMemoryKey(MemoryKey key);
  bool SendManagementDatagram(const NetworkAddress& destination, std::span<const std::byte> bytes);

  // ---- wiring, done by the fabric ----
  Port& GetPort() { return *port_; }
  void AddAddress(const NetworkAddress& a) { addresses_.push_back(a); }
  const std::vector<NetworkAddress>& Addresses() const { return addresses_; }
  bool OwnsAddress(const NetworkAddress& a) const;

  const NicCounters& Counters() const { return counters_; }
  // How long each shared resource has been taken so far (gathered from the blocks that own them).
  NicBusy Busy() const;

  // ---- used by the blocks ----
  NicCounters& MutableCounters() { return counters_; }
  EventQueue& Events() { return events_; }
  Tracer& Trace() { return tracer_; }
  // How QPNs, CQ numbers and SRQ numbers are laid out (host_interface.h IdLayout), for the
  // driver's own lookup tables.
  const IdLayout& QpIds() const { return qps_.Layout(); }
  const IdLayout& CqIds() const { return cqs_.Layout(); }
  const IdLayout& SrqIds() const { return srqs_.Layout(); }
  QpContext* FindQp(Qpn qpn) { return qps_.Find(qpn.value); }
  CqContext* FindCq(CqNumber cq);
  SrqContext* FindSrq(SrqNumber srq);
  // Raises the limit event of `srq` if it is armed and fewer than its limit WQEs are queued.
  void CheckSrqLimit(SrqContext& srq);
  PcieLink& Pcie() { return *pcie_; }
  DoorbellUnit& Doorbells() { return *doorbell_unit_; }
  WqeFetch& Fetch() { return *wqe_fetch_; }
  Translation& Tpt() { return *translation_; }
  Requester& Req() { return *requester_; }
  Responder& Resp() { return *responder_; }
  Completer& Comp() { return *completer_; }
  CompletionEngine& Cqes() { return *completion_engine_; }
  ProcessingUnits& Units() { return *units_; }
  // The on-chip QP-context cache (context_cache.h): when a QP's context is there for work now.
  ContextCache& QpContexts() { return *qp_contexts_; }
  // A fault hook point of this NIC: the fault rule that acts on this event (counted in
  // faults_injected and traced), or nullptr. One test when no rule is armed at `point`.
  const FaultRule* InjectFault(FaultPoint point, std::uint32_t qpn, std::uint32_t peer = 0,
                               PacketClass packet = PacketClass::kAny) {
    if (!faults_.Armed(point)) return nullptr;
    return DecideFault(point, FaultEvent{id_, qpn, peer, packet});
  }
  // Counters of a live QP, or nullptr.
  const QpCounters* FindQpCounters(Qpn qpn) const;
  // Counters of a live CQ (its depth filled in), or nullopt.
  std::optional<CqCounters> FindCqCounters(CqNumber cq) const;
  // Writes an event-queue entry to host memory and raises the interrupt.
  void PostEvent(const EventEntry& entry);
  // The QP state machine (qp_state.h): connection, and the error state whoever causes it.
  QpStateMachine& QpStates() { return *qp_states_; }
  // A catastrophic error (fault injection): every CQ dies with a fatal error, every SRQ reports
  // one, every QP enters the error state, and from then on the NIC sends, receives and takes
  // work no more (CQ arms still report the error). The command interface still works, so the
  // driver can tear down.
  void EnterFatal();
  bool Fatal() const { return fatal_; }
  // Calls `fn` for every live QP.
  template <typename Fn>
  void ForEachQp(Fn&& fn) {
    qps_.ForEach(fn);
  }
  // Calls `fn` for every live CQ.
  template <typename Fn>
  void ForEachCq(Fn&& fn) {
    cqs_.ForEach(fn);
  }
  // Delivers an incoming management datagram to the host.
  void DeliverManagementDatagram(std::span<const std::byte> bytes, NodeId source);

 private:
  DoorbellInbox inbox_;  // first: it is cache-line aligned
  Device device_;
  HardwareProfile profile_;
  EventQueue& events_;
  Host& host_;
  Network& network_;
  FaultInjector& faults_;  // the fabric's, held by the network
  Tracer& tracer_;
  NicCounters counters_;
  std::vector<NetworkAddress> addresses_;
  NodeId id_;
  std::uint32_t interrupt_vector_ = 0;
  bool fatal_ = false;

  const FaultRule* DecideFault(FaultPoint point, const FaultEvent& event);

  // Writes the events whose DMA has landed into the event ring, in order, each followed by an
  // interrupt; an event that finds its ring (or its datagram's) full waits, and so do those
  // behind it, until the driver has made room (EventQueueConsumed).
  void WriteLandedEvents();

  SpscRing<EventEntry>* event_ring_ = nullptr;
  SpscRing<ManagementDatagram>* datagram_ring_ = nullptr;
  std::deque<EventEntry> pending_events_;             // DMA on its way or landed, in order
  std::deque<ManagementDatagram> pending_datagrams_;  // those of the kManagement events among them
  std::size_t landed_events_ = 0;                     // the first this many have landed

  // Identifiers carry their slot's generation (IdLayout): doorbells, events, CQEs and packets
  // that name a destroyed entry find nothing, even after its slot is reused.
  ContextTable<QpContext> qps_;
  ContextTable<CqContext> cqs_;
  ContextTable<SrqContext> srqs_;
  std::uint32_t next_pd_ = 1;

  std::unique_ptr<PcieLink> pcie_;
  std::unique_ptr<ContextCache> qp_contexts_;
  std::unique_ptr<DoorbellUnit> doorbell_unit_;
  std::unique_ptr<WqeFetch> wqe_fetch_;
  std::unique_ptr<Translation> translation_;
  std::unique_ptr<Requester> requester_;
  std::unique_ptr<Responder> responder_;
  std::unique_ptr<Completer> completer_;
  std::unique_ptr<CompletionEngine> completion_engine_;
  std::unique_ptr<Port> port_;
  std::unique_ptr<ProcessingUnits> units_;
  std::unique_ptr<QpStateMachine> qp_states_;  // last: it drives the blocks above
};

}  // namespace ndksim::hw
