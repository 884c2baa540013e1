// SPDX-License-Identifier: MIT
// The per-node driver: adapter open/close, the interrupt service routine and the DPC that drains
// the event queue and dispatches its entries, identifier tables, doorbells and deferred work.
#include "driver.h"

#include <algorithm>
#include <span>

#include "common/check.h"
#include "hwmodel/noise.h"
#include "connection.h"
#include "cq.h"
#include "qp.h"
#include "srq.h"

namespace ndksim::provider {

namespace {

// ref §1.1: the consumer names a major and the lowest minor it accepts; we answer with our highest
// minor of that major, or BAD_VERSION when we lack the major or that minor.
bool Negotiate(NDK_VERSION requested, NDK_VERSION* granted) {
  for (const NDK_VERSION ours : {kHighestVersion1, kHighestVersion2}) {
    if (requested.Major == ours.Major && requested.Minor <= ours.Minor) {
      *granted = ours;
      return true;
    }
  }
  return false;
}

}  // namespace

Driver::Driver(hw::Device& nic, hw::Host& host, Tracer& tracer, AsyncCompletion async_completion,
               std::uint64_t seed)
    : event_queue_(kEventQueueEntries),
      datagrams_(kDatagramEntries),
      nic_(nic),
      profile_(nic.Profile()),
      qp_ids_(nic.QpIds()),
      cq_ids_(nic.CqIds()),
      srq_ids_(nic.SrqIds()),
      host_(host),
      tracer_(tracer),
      completion_status_(profile_.remote_access_error),
      cm_(std::make_unique<ConnectionManager>(*this)),
      completion_rng_(seed ^ (0x9e3779b97f4a7c15ull * (nic.Id() + 1))),
      async_completion_(async_completion) {
  nic_.SetEventQueue(&event_queue_, /*interrupt_vector=*/0);
  nic_.SetDatagramQueue(&datagrams_);
  host_.SetInterruptHandler([this](std::uint32_t vector) { OnInterrupt(vector); });
}

Driver::~Driver() {
  while (!adapters_.empty()) CloseAdapter(adapters_.back()->Ndk());
  host_.SetInterruptHandler(nullptr);
  nic_.SetEventQueue(nullptr, 0);
  nic_.SetDatagramQueue(nullptr);
}

NTSTATUS Driver::OpenAdapter(NDK_VERSION version, NDK_ADAPTER** adapter) {
  if (adapter == nullptr) return STATUS_INVALID_PARAMETER;
  NDK_VERSION granted{};
  if (!Negotiate(version, &granted)) {
    Trace("open adapter {}.{}: bad version", version.Major, version.Minor);
    return NDIS_STATUS_BAD_VERSION;
  }
  adapters_.push_back(std::make_unique<Adapter>(*this, granted));
  *adapter = adapters_.back()->Ndk();
  Trace("open adapter {}.{} -> {}.{}", version.Major, version.Minor, granted.Major, granted.Minor);
  return STATUS_SUCCESS;
}

void Driver::CloseAdapter(NDK_ADAPTER* adapter) {
  const auto it = std::find_if(adapters_.begin(), adapters_.end(),
                               [adapter](const auto& a) { return a->Ndk() == adapter; });
  NDKSIM_CHECK(it != adapters_.end());
  (*it)->CloseAll();
  adapters_.erase(it);
  Trace("close adapter");
}

void Driver::RegisterQp(hw::Qpn qpn, Qp* qp) { Register(qps_, qp_ids_, qpn.value, qp); }

void Driver::RegisterCq(hw::CqNumber cq, Cq* object) { Register(cqs_, cq_ids_, cq.value, object); }

void Driver::RegisterSrq(hw::SrqNumber srq, Srq* object) { Register(srqs_, srq_ids_, srq.value, object); }

// ---- interrupts and the event queue -----------------------------------------------------------

void Driver::OnInterrupt(std::uint32_t /*vector*/) {
  // Like a real ISR, only schedule the DPC: the drain runs after whatever raised the interrupt
  // has returned, so consumer callbacks never run inside a provider or NIC call.
  if (drain_queued_) return;
  drain_queued_ = true;
  QueueDpc([this] {
    drain_queued_ = false;
    DrainEventQueue();
  });
}

void Driver::DrainEventQueue() {
  while (const hw::EventEntry* slot = event_queue_.ConsumerPeek()) {
    // Copy and release first: the handlers run consumer callbacks that may make the NIC post
    // more events into this ring.
    const hw::EventEntry entry = *slot;
    event_queue_.ConsumerRelease();
    DispatchEvent(entry);
  }
  // The consumer doorbell of the event queue: events the NIC held back for want of room follow.
  nic_.EventQueueConsumed();
}

void Driver::DispatchEvent(const hw::EventEntry& entry) {
  switch (entry.type) {
    case hw::EventType::kCqNotify:
      if (Cq* cq = FindCq(entry.object)) cq->Notify(STATUS_SUCCESS, entry.arm_epoch);
      return;
    case hw::EventType::kCqError:
      if (Cq* cq = FindCq(entry.object)) cq->Notify(CqErrorToNtStatus(entry.status), entry.arm_epoch);
      return;
    case hw::EventType::kQpFatal:
      // The failing CQEs tell the consumer; the peer learns through its own abort event.
      Trace("qp {:#x} entered the error state", entry.object);
      if (Qp* qp = FindQp(entry.object)) qp->MarkInError();
      return;
    case hw::EventType::kConnectionAbort: {
      Qp* qp = FindQp(entry.object);
      Trace("qp {:#x} connection aborted", entry.object);
      if (qp == nullptr) return;
      qp->MarkInError();
      if (Connector* connector = qp->BoundConnector()) connector->OnConnectionAbort();
      return;
    }
    case hw::EventType::kSrqLimit:
      if (Srq* srq = FindSrq(entry.object)) srq->Notify(STATUS_SUCCESS);
      return;
    case hw::EventType::kSrqError:
      // ref §3.16: the SRQ and every QP on it are dead.
      if (Srq* srq = FindSrq(entry.object)) srq->Notify(STATUS_INTERNAL_ERROR);
      return;
    case hw::EventType::kManagement: {
      // The NIC writes the datagram before its event. Copy and release it first, like the event.
      hw::ManagementDatagram datagram;
      if (!datagrams_.TryPop(datagram)) {
        Trace("management event without a datagram");
        return;
      }
      const std::size_t n = std::min<std::size_t>(datagram.bytes, datagram.payload.size());
      cm_->OnDatagram(std::span<const std::byte>(datagram.payload.data(), n), entry.object);
      return;
    }
  }
  Trace("unknown event type {}", static_cast<unsigned>(entry.type));
}

// ---- asynchronous completion (ref §3.0, §4.5) ----------------------------------------------------

Driver::Completion Driver::ChooseCompletion() {
  switch (async_completion_) {
    case AsyncCompletion::kInline: return Completion::kInline;
    case AsyncCompletion::kPending: return Completion::kDpc;
    case AsyncCompletion::kPendingInCall: return Completion::kInCall;
    case AsyncCompletion::kMixed: break;
  }
  // splitmix64: cheap, and every node's sequence is fixed by the fabric seed.
  return (hw::SplitMix64Next(completion_rng_) & 1) != 0 ? Completion::kDpc : Completion::kInline;
}

// ---- deferred work -------------------------------------------------------------------------------

WorkId Driver::AddWork(std::function<void()> fn) {
  const WorkId id = next_work_++;
  work_.emplace(id, std::move(fn));
  return id;
}

WorkId Driver::QueueDpc(std::function<void()> fn) {
  const WorkId id = AddWork(std::move(fn));
  host_.QueueDpc([alive = std::weak_ptr<bool>(alive_), this, id] {
    if (!alive.expired()) RunWork(id);
  });
  return id;
}

WorkId Driver::StartTimer(Duration delay, std::function<void()> fn) {
  const WorkId id = AddWork(std::move(fn));
  host_.ScheduleTimer(delay, [alive = std::weak_ptr<bool>(alive_), this, id] {
    if (!alive.expired()) RunWork(id);
  });
  return id;
}

void Driver::Cancel(WorkId id) { work_.erase(id); }

void Driver::RunWork(WorkId id) {
  const auto it = work_.find(id);
  if (it == work_.end()) return;  // cancelled
  std::function<void()> fn = std::move(it->second);
  work_.erase(it);
  fn();
}

}  // namespace ndksim::provider
