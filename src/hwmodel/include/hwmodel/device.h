// SPDX-License-Identifier: MIT
// The RNIC as its driver sees it, and all the driver sees of it: a PCI function with MMIO doorbell
// registers (DoorbellInbox), a synchronous command interface for control operations, an event
// queue in host memory that it fills and signals with interrupts, and the host memory it reaches
// by DMA (the rings and formats of host_interface.h). The provider programs against this header
// and host_interface.h only; the NIC's blocks are out of its reach (the build gives it no path to
// their headers).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "hwmodel/doorbell_queue.h"
#include "hwmodel/host_interface.h"
#include "ndksim/profile.h"

namespace ndksim::hw {

class Nic;

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

// QP states as the NIC sees them.
enum class QpState : std::uint8_t { kReset, kReadyToReceive, kReadyToSend, kError };

// MMIO doorbell writes on their way from the host's CPUs to the NIC's doorbell unit: a lock-free
// multi-producer FIFO that never refuses a write. A consumer may legally post any number of
// doorbelled requests before the engine next runs (in stepped mode, before the next RunUntil*);
// when the FIFO is full, writes queue in order in an overflow list that grows with them (a lock,
// off the steady-state path).
//
// Whoever runs the engine watches the inboxes that have had doorbells and drains them; the first
// write into an inbox nobody watches calls the ready hook (SetReadyHook), so the engine starts
// watching it. While it is watched, a write costs the push and one look at a flag the engine does
// not write. The engine stops watching an inbox when it goes idle (StopWatching).
class DoorbellInbox {  // NOLINT(clang-analyzer-optin.performance.Padding): the flags on lines of their own
 public:
  // Called, on the writing thread, when a write finds the inbox unwatched.
  using ReadyHook = void (*)(void* context, DoorbellInbox& inbox);

  DoorbellInbox(NodeId node, std::uint32_t fifo_entries) : fifo_(fifo_entries), node_(node) {}
  DoorbellInbox(const DoorbellInbox&) = delete;
  DoorbellInbox& operator=(const DoorbellInbox&) = delete;

  NodeId Node() const { return node_; }
  // Wiring, before any doorbell is written.
  void SetReadyHook(ReadyHook hook, void* context) {
    hook_ = hook;
    hook_context_ = context;
  }

  // Any thread; never fails.
  void Write(const Doorbell& doorbell) {
    // acquire: pairs with the release stores in WriteOverflow and Drain; once a writer has gone
    // to the overflow list, writes keep going there until the engine has taken the list.
    if (overflow_active_.load(std::memory_order_acquire) || !fifo_.TryPush(doorbell)) WriteOverflow(doorbell);
    // relaxed: while the engine watches, this flag stays true and its line stays shared (the
    // engine does not write it), so the look is cheap. The exchange decides which writer calls
    // the hook. No fence orders the push before this look (it would cost every post a full
    // store-buffer drain): a write racing with StopWatching may find the flag still set just as
    // the engine stops watching. StopWatching's caller looks once more later (Recheck), and the
    // push is visible by then.
    if (!watched_.load(std::memory_order_relaxed) && !watched_.exchange(true, std::memory_order_acq_rel) &&
        hook_ != nullptr) {
      hook_(hook_context_, *this);
    }
  }

  // Engine side, while it watches: hands every queued doorbell to `deliver`, in the order they
  // were written, and returns how many.
  template <typename Deliver>
  std::size_t Drain(Deliver&& deliver) {
    std::size_t n = 0;
    Doorbell d;
    while (fifo_.TryPop(d)) {
      deliver(d);
      ++n;
    }
    // relaxed: a cheap look; the lock orders what matters.
    if (!overflow_active_.load(std::memory_order_relaxed)) return n;
    TakeOverflow(taken_);
    for (const Doorbell& o : taken_) deliver(o);
    n += taken_.size();
    // Writes that found the FIFO again after the list was taken come after it.
    while (fifo_.TryPop(d)) {
      deliver(d);
      ++n;
    }
    return n;
  }

  // Engine side: doorbells are waiting.
  bool Pending() const { return !fifo_.Empty() || overflow_active_.load(std::memory_order_acquire); }

  // Engine side: stops watching a drained inbox. Returns true if the engine must go on watching
  // it after all (a doorbell came in meanwhile and no writer saw the inbox unwatched).
  bool StopWatching() {
    // seq_cst, and the fence: the store is ordered before the look at the FIFO below.
    watched_.store(false, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return Recheck();
  }
  // Engine side, on an inbox it stopped watching: true if doorbells are waiting that no writer
  // reported (see Write), in which case the engine watches it again.
  bool Recheck() {
    if (!Pending()) return false;
    // acq_rel: against a writer's exchange; exactly one of us takes the inbox back.
    return !watched_.exchange(true, std::memory_order_acq_rel);
  }

  // Intrusive link for the engine's list of inboxes to watch (owned by whoever installs the hook).
  DoorbellInbox* next_ready = nullptr;

 private:
  void WriteOverflow(const Doorbell& doorbell);
  void TakeOverflow(std::vector<Doorbell>& out);

  MpscQueue<Doorbell> fifo_;  // first: it is cache-line aligned
  // On a line of its own: writers read it on every doorbell, the engine writes it only when it
  // starts or stops watching.
  alignas(kCacheLineBytes) std::atomic<bool> watched_{false};
  alignas(kCacheLineBytes) std::atomic<bool> overflow_active_{false};
  NodeId node_;
  ReadyHook hook_ = nullptr;
  void* hook_context_ = nullptr;
  std::mutex overflow_mutex_;
  std::vector<Doorbell> overflow_;
  std::vector<Doorbell> taken_;  // engine side: the overflow list being delivered
};

// The driver's handle on its NIC. Doorbell writes are inline (the posting hot path: no lock, no
// virtual call); every command is one call into the NIC, synchronous, made on the engine's thread
// or while the engine is not running (the provider's control calls are serialised with the engine
// before they get here).
class Device {
 public:
  Device(Nic& nic, DoorbellInbox& inbox) : nic_(nic), inbox_(inbox) {}
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  NodeId Id() const;
  const HardwareProfile& Profile() const;
  // How QPNs, CQ numbers and SRQ numbers are laid out (host_interface.h IdLayout), for the
  // driver's own lookup tables.
  const IdLayout& QpIds() const;
  const IdLayout& CqIds() const;
  const IdLayout& SrqIds() const;
  const std::vector<NetworkAddress>& Addresses() const;
  bool OwnsAddress(const NetworkAddress& a) const;

  // ---- MMIO: any thread; the engine takes the write at its current simulated time ----
  void WriteDoorbell(const Doorbell& doorbell) { inbox_.Write(doorbell); }

  // ---- command interface ----
  void SetEventQueue(SpscRing<EventEntry>* ring, std::uint32_t interrupt_vector);
  // Where management datagrams go, one per kManagement event (without it they are dropped).
  void SetDatagramQueue(SpscRing<ManagementDatagram>* ring);
  // The driver has taken entries from the event and datagram rings (the event queue's consumer
  // doorbell). An event that found either ring full waits on the NIC, with those behind it, in
  // order, and is written now if there is room: nothing is lost or reordered.
  void EventQueueConsumed();
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
  // Shared receive queues. ArmSrqLimit (re)arms the one-shot limit event; it fires at once if
  // fewer than `limit` WQEs are queued. DestroySrq is kBusy while a QP uses it.
  CommandStatus CreateSrq(const SrqCreate& create, SrqNumber* out);
  CommandStatus ArmSrqLimit(SrqNumber srq, std::uint32_t limit);
  // Switches `srq` to a larger ring that holds the same WQEs at the same free-running indices and
  // whose consumer index is where the NIC is. kInvalidArgument otherwise.
  CommandStatus ReplaceSrqQueue(SrqNumber srq, const WorkQueue& queue);
  CommandStatus DestroySrq(SrqNumber srq);
  QpState QueryQpState(Qpn qpn) const;
  // `generation` (optional): the allocation's generation, which memory-operation WQEs name.
  CommandStatus RegisterMemory(const MemoryRegistration& reg, MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus DeregisterMemory(MemoryKey key);  // kBusy while windows are bound inside
  // Protection entries that a WQE makes valid later (fast-register, memory windows), and the
  // privileged entry of a PD. The key returned is the entry's current token; the WQE names the
  // next one.
  CommandStatus AllocateFastRegisterKey(PdNumber pd, std::uint32_t page_capacity, bool remote_access,
                                        MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus AllocateWindowKey(PdNumber pd, MemoryKey* out, std::uint32_t* generation = nullptr);
  CommandStatus AllocatePrivilegedKey(PdNumber pd, MemoryKey* out);
  CommandStatus FreeMemoryKey(MemoryKey key);
  // Sends a connection-management datagram to whoever owns `destination`. False if no node
  // owns it (the fabric has no route).
  bool SendManagementDatagram(const NetworkAddress& destination, std::span<const std::byte> bytes);

 private:
  Nic& nic_;
  DoorbellInbox& inbox_;
};

}  // namespace ndksim::hw
