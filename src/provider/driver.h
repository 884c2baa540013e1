// SPDX-License-Identifier: MIT
// The driver of one simulated node's RNIC: opens and closes NDK adapters, owns the event queue and
// the interrupt/DPC path that drains it, the tables that map NIC identifiers (QPN, CQ number,
// memory token) back to provider objects, and the deferred-work service (DPCs and timers).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hwmodel/host.h"
#include "hwmodel/host_interface.h"
#include "hwmodel/device.h"
#include "hwmodel/ring.h"
#include "ndkpi.h"
#include "ndksim/async_completion.h"
#include "ndksim/trace.h"
#include "index_table.h"
#include "memory.h"
#include "objects.h"
#include "status.h"

namespace ndksim::provider {

class ConnectionManager;
class Cq;
class Qp;
class Srq;

// NDK versions this provider implements (ref §1.1): the highest minor of each major.
inline constexpr NDK_VERSION kHighestVersion1 = {1, 2};
inline constexpr NDK_VERSION kHighestVersion2 = {2, 1};

class Driver {
 public:
  Driver(hw::Device& nic, hw::Host& host, Tracer& tracer,
         AsyncCompletion async_completion = AsyncCompletion::kInline, std::uint64_t seed = 1);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // OPEN_NDK_ADAPTER_HANDLER (ref §1.1, §1.9): major 1 or 2, minor at most what we implement for
  // that major, else NDIS_STATUS_BAD_VERSION. Objects report our highest minor of that major.
  NTSTATUS OpenAdapter(NDK_VERSION version, NDK_ADAPTER** adapter);
  // CLOSE_NDK_ADAPTER_HANDLER: blocking; every object of the adapter is gone when it returns.
  void CloseAdapter(NDK_ADAPTER* adapter);

  // ---- services for the NDK objects ----
  hw::Device& Nic() const { return nic_; }
  hw::Host& Host() const { return host_; }
  const HardwareProfile& Profile() const { return profile_; }
  TimePoint Now() const { return host_.Now(); }

  // The per-request stage log shared with the hardware model (ndksim::Tracer::Requests).
  RequestLog& Requests() { return tracer_.Requests(); }

  template <typename... Args>
  void Trace(fmt::format_string<Args...> format, Args&&... args) {
    NDKSIM_TRACE(tracer_, host_.Now(), nic_.Id(), Provider, format, std::forward<Args>(args)...);
  }

  // Identifier -> object tables. Registered on the control path, looked up from the poll path
  // (any thread) and the interrupt path.
  void RegisterQp(hw::Qpn qpn, Qp* qp);
  void RegisterCq(hw::CqNumber cq, Cq* object);
  void RegisterSrq(hw::SrqNumber srq, Srq* object);
  // The object an identifier names, or nullptr: a table slot holds the newest object of that
  // slot, and an identifier of an older generation (a CQE of a closed QP) does not match it.
  Srq* FindSrq(std::uint32_t srq) const { return Lookup(srqs_, srq_ids_, srq); }
  Qp* FindQp(std::uint32_t qpn) const { return Lookup(qps_, qp_ids_, qpn); }
  Cq* FindCq(std::uint32_t cq) const { return Lookup(cqs_, cq_ids_, cq); }

  MemoryTable& Memory() { return memory_; }
  const CompletionStatusTable& CompletionStatus() const { return completion_status_; }
  ConnectionManager& Cm() { return *cm_; }

  // One MMIO doorbell write from the caller's core (never fails: hw::DoorbellInbox::Write): a
  // doorbell register, or the WQE it carries, written through the doorbell page.
  void RingDoorbell(hw::Doorbell doorbell) {
    doorbell.issued = host_.Cpu().MmioWrite(doorbell.wqe_bytes > 0 ? doorbell.wqe_bytes : kDoorbellRegisterBytes);
    nic_.WriteDoorbell(doorbell);
  }
  static constexpr std::uint32_t kDoorbellRegisterBytes = 8;

  // Deferred work: a DPC (now, after the current call returns) or a kernel timer. Whoever starts
  // work cancels it when it stops caring (e.g. the object dies), so late events find nothing.
  WorkId QueueDpc(std::function<void()> fn);
  // Runs queued work now (if it is still queued): adapter close drains its pending completions.
  void RunNow(WorkId id) { RunWork(id); }

  // ref §3.0, §4.5: how the next maybe-asynchronous call completes, per the fabric's setting.
  // kMixed draws from a generator seeded by the fabric seed and the node, so runs repeat.
  enum class Completion : std::uint8_t { kInline, kDpc, kInCall };
  Completion ChooseCompletion();
  WorkId StartTimer(Duration delay, std::function<void()> fn);
  void Cancel(WorkId id);

 private:
  // An identifier's entry in one of the tables above: the object, checked against the whole
  // identifier (hot path: two loads and a compare).
  template <typename T>
  struct Registered {
    std::atomic<T*> object{nullptr};
    std::atomic<std::uint32_t> id{0};
  };
  template <typename T>
  static T* Lookup(const IndexTable<Registered<T>>& table, const hw::IdLayout& layout, std::uint32_t id) {
    const auto* slot = table.Find(layout.Slot(id));
    if (slot == nullptr) return nullptr;
    // acquire: pairs with the release store in Register; the object is fully constructed.
    T* object = slot->object.load(std::memory_order_acquire);
    return object != nullptr && slot->id.load(std::memory_order_relaxed) == id ? object : nullptr;
  }
  template <typename T>
  static void Register(IndexTable<Registered<T>>& table, const hw::IdLayout& layout, std::uint32_t id, T* object) {
    Registered<T>& slot = table.Slot(layout.Slot(id));
    if (object == nullptr) {
      // A slot only forgets the object it holds (a newer one may hold it already).
      if (slot.id.load(std::memory_order_relaxed) == id) slot.object.store(nullptr, std::memory_order_release);
      return;
    }
    slot.object.store(nullptr, std::memory_order_relaxed);
    slot.id.store(id, std::memory_order_relaxed);
    // release: pairs with the acquire load in Lookup; publishes the object and its id.
    slot.object.store(object, std::memory_order_release);
  }

  void OnInterrupt(std::uint32_t vector);
  void DrainEventQueue();
  void DispatchEvent(const hw::EventEntry& entry);
  WorkId AddWork(std::function<void()> fn);
  void RunWork(WorkId id);

  // The event queue holds this many entries; the NIC sees a full ring as back-pressure.
  static constexpr std::uint32_t kEventQueueEntries = 1024;
  static constexpr std::uint32_t kDatagramEntries = 32;

  hw::SpscRing<hw::EventEntry> event_queue_;  // first: it is cache-line aligned
  hw::SpscRing<hw::ManagementDatagram> datagrams_;  // one per kManagement event, in order
  hw::Device& nic_;
  // What the driver reads from the device once, at start, as a driver queries its adapter's
  // capabilities: the poll and posting paths use them without a call into the NIC.
  const HardwareProfile& profile_;
  const hw::IdLayout qp_ids_;
  const hw::IdLayout cq_ids_;
  const hw::IdLayout srq_ids_;
  hw::Host& host_;
  Tracer& tracer_;
  CompletionStatusTable completion_status_;

  IndexTable<Registered<Qp>> qps_;
  IndexTable<Registered<Cq>> cqs_;
  IndexTable<Registered<Srq>> srqs_;
  MemoryTable memory_;
  std::unique_ptr<ConnectionManager> cm_;
  std::vector<std::unique_ptr<Adapter>> adapters_;

  std::uint64_t completion_rng_;  // splitmix64 state for kMixed

  std::unordered_map<WorkId, std::function<void()>> work_;
  WorkId next_work_ = 1;
  // Events queued on the host capture a weak reference to this, so an event that outlives the
  // driver (the fabric tearing down mid-run) does nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  const AsyncCompletion async_completion_;
  bool drain_queued_ = false;
};

}  // namespace ndksim::provider
