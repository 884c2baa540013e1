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
#include <span>
#include <vector>

#include "hwmodel/context_table.h"
#include "hwmodel/doorbell_queue.h"
#include "hwmodel/fault_injector.h"
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
struct QpContext;
struct CqContext;
struct SrqContext;

using NodeId = std::uint32_t;

// An IPv4 or IPv6 address as the NIC's management agent routes on it.
struct NetworkAddress {
  std::uint8_t family = 0;  // 4 or 6
  std::array<std::uint8_t, 16> bytes{};
  bool operator==(const NetworkAddress&) const = default;
};

// Memory access rights held by a protection-table entry.
namespace access {
inline constexpr std::uint32_t kLocalWrite = 0x1;
inline constexpr std::uint32_t kRemoteRead = 0x2;
inline constexpr std::uint32_t kRemoteWrite = 0x4;
inline constexpr std::uint32_t kReadSink = 0x8;
}  // namespace access

enum class CommandStatus : std::uint8_t {
  kOk,
  kNoResources,     // NIC table full
  kInvalidArgument, // malformed command
  kInvalidState,    // object not in a state that allows the command
  kNotFound,        // no such object
  kBusy,            // object still referenced
};

struct CqCreate {
  CompletionQueueMemory memory;  // the CQ ring in host memory
  std::uint32_t interrupt_vector = 0;
};

// Interrupt moderation of one CQ: a notification is raised once `count` completions have
// accumulated since an arm was satisfied, or `interval` after it, whichever comes first. A count
// of 0 or 1, or a zero interval, means no moderation; kUnlimited switches a trigger off.
struct CqModeration {
  static constexpr std::uint32_t kUnlimited = 0xFFFFFFFFu;
  std::uint32_t interval_us = 0;
  std::uint32_t count = 0;
  bool Active() const { return interval_us != 0 && count > 1; }
};

struct QpCreate {
  PdNumber pd;
  CqNumber send_cq;
  CqNumber receive_cq;
  WorkQueue send_queue;
  WorkQueue receive_queue;
  std::uint32_t max_inline_bytes = 0;
  SrqNumber srq;  // non-zero: receives come from this SRQ and receive_queue is unused
};

struct SrqCreate {
  PdNumber pd;
  WorkQueue queue;          // the SRQ ring in host memory
  std::uint32_t limit = 0;  // armed limit (0: not armed)
};

// What the connection manager hands the NIC when a QP becomes connected.
struct QpConnect {
  NodeId remote_node = 0;
  Qpn remote_qpn;
  std::uint32_t send_psn = 0;     // first PSN this QP sends
  std::uint32_t receive_psn = 0;  // first PSN this QP expects
  std::uint32_t inbound_read_limit = 0;   // IRD
  std::uint32_t outbound_read_limit = 0;  // ORD
};

struct MemoryRegistration {
  PdNumber pd;
  std::uint64_t virtual_address = 0;  // the identifier consumers put in SGEs and remote addresses
  std::uint64_t length = 0;
  std::byte* host_memory = nullptr;   // where the span lives in host memory (DMA target)
  std::uint32_t access = 0;           // access:: bits
};

// Why a QP enters the error state: decides who else must hear of it.
enum class QpErrorCause : std::uint8_t {
  kConsumer,  // the driver asked (flush, disconnect): nobody else is told
  kLocal,     // this NIC found the error: the peer gets a Terminate, the host an abort event
  kRemote,    // the peer reported or caused it: the host gets an abort event
};

// QP states as the NIC sees them.
enum class QpState : std::uint8_t { kReset, kReadyToReceive, kReadyToSend, kError };

// The two engines of a QP that send packets and read host memory: they wait for the port's
// transmitter and for PCIe read slots in one list, each waiter named by QP and engine.
enum class Engine : std::uint32_t { kRequester = 0, kResponder = 1 };
constexpr std::uint32_t WaiterId(Qpn qpn, Engine e) { return qpn.value << 1 | static_cast<std::uint32_t>(e); }
constexpr Qpn WaiterQpn(std::uint32_t id) { return Qpn{id >> 1}; }
constexpr Engine WaiterEngine(std::uint32_t id) { return static_cast<Engine>(id & 1); }

// Counters of one NIC (include/ndksim/counters.h), updated by the block that owns each.
using NicCounters = ::ndksim::NicCounters;

class Nic {
 public:
  Nic(NodeId id, const HardwareProfile& profile, EventQueue& events, Host& host, Network& network,
      Tracer& tracer, std::uint64_t seed);
  ~Nic();
  Nic(const Nic&) = delete;
  Nic& operator=(const Nic&) = delete;

  NodeId Id() const { return id_; }
  const HardwareProfile& Profile() const { return profile_; }

  // ---- MMIO: callable from any thread; delivered to the doorbell unit by the engine ----
  // Never fails: a consumer may legally post any number of doorbelled requests before the engine
  // next runs (in stepped mode, before the next RunUntil*). Writes go through the lock-free FIFO;
  // when it is full they queue, in order, in an overflow list that grows with them (a lock, off
  // the steady-state path).
  void WriteDoorbell(const Doorbell& doorbell);
  // Engine side: moves queued doorbell writes into the model at the current simulated time, in
  // the order they were written. Returns how many were taken.
  std::size_t DrainDoorbells();

  // ---- command interface: synchronous, engine thread / stepped mode only ----
  void SetEventQueue(SpscRing<EventEntry>* ring, std::uint32_t interrupt_vector);
  CommandStatus CreateCq(const CqCreate& create, CqNumber* out);
  // Switches `cq` to a new ring whose first `queued` entries the host has already filled with the
  // unread CQEs of the old one (consumer index 0). CQE writes still in flight land in the new ring,
  // after those, in order. kInvalidState if `queued` is not what the NIC wrote and the host has
  // not consumed.
  CommandStatus ResizeCq(CqNumber cq, const CompletionQueueMemory& memory, std::uint32_t queued);
  // Latest setting wins; a notification already held back is re-evaluated against it.
  CommandStatus ModerateCq(CqNumber cq, const CqModeration& moderation);
  CommandStatus DestroyCq(CqNumber cq);
  CommandStatus AllocatePd(PdNumber* out);
  CommandStatus FreePd(PdNumber pd);
  CommandStatus CreateQp(const QpCreate& create, Qpn* out);
  CommandStatus ConnectQp(Qpn qpn, const QpConnect& connect);  // -> ReadyToSend
  // Flushes everything the host has published on the QP's queues, now and whenever called again.
  CommandStatus ModifyQpToError(Qpn qpn);
  CommandStatus DestroyQp(Qpn qpn);
  // Shared receive queues (ref §3.16). ArmSrqLimit (re)arms the one-shot limit event; it fires
  // at once if fewer than `limit` WQEs are queued. DestroySrq is kBusy while a QP uses it.
  CommandStatus CreateSrq(const SrqCreate& create, SrqNumber* out);
  CommandStatus ArmSrqLimit(SrqNumber srq, std::uint32_t limit);
  // Switches `srq` to a larger ring that holds the same WQEs at the same free-running indices and
  // whose consumer index is where the NIC is (resize, ref §3.16). kInvalidArgument otherwise.
  CommandStatus ReplaceSrqQueue(SrqNumber srq, const WorkQueue& queue);
  CommandStatus DestroySrq(SrqNumber srq);
  QpState QueryQpState(Qpn qpn) const;
  // `generation` (optional): the allocation's generation, which memory-operation WQEs name
  // (Translation::Register).
  CommandStatus RegisterMemory(const MemoryRegistration& reg, MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus DeregisterMemory(MemoryKey key);  // kBusy while windows are bound inside
  // Protection entries that a WQE makes valid later (ref §3.6, §3.7), and the privileged entry of
  // a PD (ref §3.15). The key returned is the entry's current token; the WQE names the next one.
  CommandStatus AllocateFastRegisterKey(PdNumber pd, std::uint32_t page_capacity, bool remote_access,
                                        MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus AllocateWindowKey(PdNumber pd, MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus AllocatePrivilegedKey(PdNumber pd, MemoryKey* out);
  CommandStatus FreeMemoryKey(MemoryKey key);
  // Sends a connection-management datagram to whoever owns `destination`. False if no node
  // owns it (the fabric has no route).
  bool SendManagementDatagram(const NetworkAddress& destination, std::span<const std::byte> bytes);

  // ---- wiring, done by the fabric ----
  Port& GetPort() { return *port_; }
  void AddAddress(const NetworkAddress& a) { addresses_.push_back(a); }
  const std::vector<NetworkAddress>& Addresses() const { return addresses_; }
  bool OwnsAddress(const NetworkAddress& a) const;

  const NicCounters& Counters() const { return counters_; }

  // ---- used by the blocks ----
  NicCounters& MutableCounters() { return counters_; }
  EventQueue& Events() { return events_; }
  Tracer& Trace() { return tracer_; }
  // How QPNs, CQ numbers and SRQ numbers are laid out (host_interface.h IdLayout), for the
  // driver's own lookup tables.
  const IdLayout& QpIds() const { return qps_.Layout(); }
  const IdLayout& CqIds() const { return cqs_.Layout(); }
  const IdLayout& SrqIds() const { return srqs_.Layout(); }
  QpContext* FindQp(Qpn qpn);
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
  // A fault hook point of this NIC: the fault rule that acts on this event (counted in
  // faults_injected and traced), or nullptr. One test when no rule is armed at `point`.
  const FaultRule* InjectFault(FaultPoint point, std::uint32_t qpn, std::uint32_t peer = 0,
                               PacketClass packet = PacketClass::kAny) {
    if (!faults_.Armed(point)) return nullptr;
    return DecideFault(point, FaultEvent{id_, qpn, peer, packet});
  }
  // Counters of a live QP, or nullptr.
  const QpCounters* FindQpCounters(Qpn qpn) const;
  // Writes an event-queue entry to host memory and raises the interrupt.
  void PostEvent(const EventEntry& entry);
  // Moves a QP to the error state (once) and flushes it; who is told depends on the cause.
  void EnterQpError(QpContext& qp, QpErrorCause cause);
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
  MpscQueue<Doorbell> doorbell_fifo_;  // first: it is cache-line aligned
  // Doorbells written while the FIFO was full, and every one after them until the engine has taken
  // them (so the writes of one thread stay in order).
  std::atomic<bool> doorbell_overflow_active_{false};
  std::mutex doorbell_overflow_mutex_;
  std::vector<Doorbell> doorbell_overflow_;
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

  SpscRing<EventEntry>* event_ring_ = nullptr;
  std::deque<EventEntry> pending_events_;  // written to the event ring when their DMA lands

  // Identifiers carry their slot's generation (IdLayout): doorbells, events, CQEs and packets
  // that name a destroyed entry find nothing, even after its slot is reused.
  ContextTable<QpContext> qps_;
  ContextTable<CqContext> cqs_;
  ContextTable<SrqContext> srqs_;
  std::uint32_t next_pd_ = 1;

  std::unique_ptr<PcieLink> pcie_;
  std::unique_ptr<DoorbellUnit> doorbell_unit_;
  std::unique_ptr<WqeFetch> wqe_fetch_;
  std::unique_ptr<Translation> translation_;
  std::unique_ptr<Requester> requester_;
  std::unique_ptr<Responder> responder_;
  std::unique_ptr<Completer> completer_;
  std::unique_ptr<CompletionEngine> completion_engine_;
  std::unique_ptr<Port> port_;
  std::unique_ptr<ProcessingUnits> units_;
};

}  // namespace ndksim::hw
