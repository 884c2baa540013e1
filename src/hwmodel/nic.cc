// SPDX-License-Identifier: MIT
// The RNIC: context tables, the command interface, error entry and the event queue to the host.
#include "nic.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "completer.h"
#include "completion_engine.h"
#include "context_cache.h"
#include "contexts.h"
#include "doorbell_unit.h"
#include "hwmodel/host.h"
#include "pcie_link.h"
#include "processing_units.h"
#include "port.h"
#include "qp_state.h"
#include "requester.h"
#include "responder.h"
#include "translation.h"
#include "wqe_fetch.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

namespace {
constexpr std::uint32_t kFirstQpn = 0x40;  // low QPNs are reserved for special QPs on real NICs
// Enough for the doorbells of a busy engine's interval between drains; a larger burst (stepped
// mode lets a consumer post any number before it runs the fabric) spills into the overflow list.
constexpr std::uint32_t kDoorbellFifoEntries = 1u << 10;
constexpr std::uint32_t kMaxSendStrideBlocks = std::bit_ceil(static_cast<std::uint32_t>(
    (kSendWqeHeaderSegments + std::max<std::size_t>(kMaxSge, kMaxInlineBytes / kWqeSegmentBytes) + kSegmentsPerBlock - 1) /
    kSegmentsPerBlock));
}  // namespace

Nic::Nic(NodeId id, const HardwareProfile& profile, EventQueue& events, Host& host, Network& network,
         Tracer& tracer, std::uint64_t seed)
    : inbox_(id, kDoorbellFifoEntries),
      device_(*this, inbox_),
      profile_((ValidateOrThrow(profile), profile)),  // before any block sizes itself from it
      events_(events),
      host_(host),
      network_(network),
      faults_(network.Faults()),
      tracer_(tracer),
      id_(id),
      qps_(kFirstQpn, profile_.max_qps),
      cqs_(1, profile_.max_cqs),
      srqs_(1, profile_.max_cqs),  // the profile has no separate SRQ count: as many as CQs
      pcie_(std::make_unique<PcieLink>(*this, events, seed)),
      qp_contexts_(std::make_unique<ContextCache>(profile_.qp_context_cache_entries, profile_.qp_context_cache_ways,
                                                  profile_.qp_context_bytes,
                                                  pcie_.get(), counters_.qp_context_hits, counters_.qp_context_misses)),
      doorbell_unit_(std::make_unique<DoorbellUnit>(*this, events)),
      wqe_fetch_(std::make_unique<WqeFetch>(*this, events)),
      translation_(std::make_unique<Translation>(*this, seed ^ (std::uint64_t{id} << 32))),
      requester_(std::make_unique<Requester>(*this, events)),
      responder_(std::make_unique<Responder>(*this, events)),
      completer_(std::make_unique<Completer>(*this, events)),
      completion_engine_(std::make_unique<CompletionEngine>(*this, events)),
      port_(std::make_unique<Port>(*this, events, network)),
      units_(std::make_unique<ProcessingUnits>(profile_)),
      qp_states_(std::make_unique<QpStateMachine>(*this, *requester_, *responder_, *completer_, *wqe_fetch_, *port_)) {}

Nic::~Nic() = default;

std::size_t Nic::DrainDoorbells() {
  return inbox_.Drain([this](const Doorbell& d) { doorbell_unit_->OnMmioWrite(d); });
}

const FaultRule* Nic::DecideFault(FaultPoint point, const FaultEvent& event) {
  const FaultRule* rule = faults_.Decide(point, event, events_.Now(), tracer_);
  if (rule != nullptr) ++counters_.faults_injected;
  return rule;
}

bool Nic::OwnsAddress(const NetworkAddress& a) const {
  return std::find(addresses_.begin(), addresses_.end(), a) != addresses_.end();
}


NicBusy Nic::Busy() const {
  NicBusy b;
  b.pcie_to_nic = pcie_->ToNicBusy();
  b.mmio = pcie_->MmioBusy();
  b.pcie_to_host = pcie_->ToHostBusy();
  b.write_engine = pcie_->WriteEngineBusy();
  b.read_tags = pcie_->ReadTagBusy();
  b.read_tag_count = pcie_->ReadTags();
  b.transmit = port_->TransmitBusy();
  b.receive = port_->ReceiveBusy();
  b.processing_units.reserve(units_->Count());
  for (std::size_t i = 0; i < units_->Count(); ++i) b.processing_units.push_back(units_->Booked(i));
  return b;
}

const QpCounters* Nic::FindQpCounters(Qpn qpn) const {
  const QpContext* qp = qps_.Find(qpn.value);
  return qp != nullptr ? &qp->counters : nullptr;
}

std::optional<CqCounters> Nic::FindCqCounters(CqNumber number) const {
  const CqContext* cq = cqs_.Find(number.value);
  if (cq == nullptr) return std::nullopt;
  CqCounters c = cq->counters;
  c.depth = cq->memory.entry_count;
  return c;
}

CqContext* Nic::FindCq(CqNumber cq) { return cqs_.Find(cq.value); }

void Nic::SetDatagramQueue(SpscRing<ManagementDatagram>* ring) { datagram_ring_ = ring; }

void Nic::EventQueueConsumed() { WriteLandedEvents(); }

void Nic::SetEventQueue(SpscRing<EventEntry>* ring, std::uint32_t interrupt_vector) {
  event_ring_ = ring;
  interrupt_vector_ = interrupt_vector;
}

CommandStatus Nic::CreateCq(const CqCreate& create, CqNumber* out) {
  const CompletionQueueMemory& m = create.memory;
  if (m.entries == nullptr || m.consumer_index == nullptr || m.entry_count == 0 ||
      (m.entry_count & (m.entry_count - 1)) != 0) {
    return CommandStatus::kInvalidArgument;
  }
  std::uint32_t number = 0;
  CqContext* cq = cqs_.Allocate(&number);
  if (cq == nullptr) return CommandStatus::kNoResources;
  cq->number = CqNumber{number};
  cq->memory = m;
  cq->interrupt_vector = create.interrupt_vector;
  cq->producer_index = m.consumer_index->load(std::memory_order_acquire);
  cq->consumer_seen = cq->producer_index;
  cq->notify_index = cq->producer_index;
  *out = cq->number;
  return CommandStatus::kOk;
}

CommandStatus Nic::ResizeCq(CqNumber number, const CompletionQueueMemory& memory, std::uint32_t queued) {
  CqContext* cq = FindCq(number);
  if (cq == nullptr) return CommandStatus::kNotFound;
  if (memory.entries == nullptr || memory.consumer_index == nullptr || memory.entry_count == 0 ||
      (memory.entry_count & (memory.entry_count - 1)) != 0 || queued > memory.entry_count) {
    return CommandStatus::kInvalidArgument;
  }
  // acquire: pairs with the driver's release store after its last read of the old ring.
  const std::uint32_t old_consumer = cq->memory.consumer_index->load(std::memory_order_acquire);
  if (cq->producer_index - old_consumer != queued) return CommandStatus::kInvalidState;
  // An unread solicited or error CQE still satisfies a SOLICITED arm after the move.
  const bool unread_solicited = static_cast<std::int32_t>(cq->notify_index - old_consumer) > 0;
  const std::uint32_t new_consumer = memory.consumer_index->load(std::memory_order_acquire);
  cq->memory = memory;
  cq->producer_index = new_consumer + queued;
  cq->consumer_seen = new_consumer;
  cq->notify_index = unread_solicited ? cq->producer_index : new_consumer;
  return CommandStatus::kOk;
}

CommandStatus Nic::ModerateCq(CqNumber number, const CqModeration& moderation) {
  CqContext* cq = FindCq(number);
  if (cq == nullptr) return CommandStatus::kNotFound;
  if (!profile_.cq_interrupt_moderation) return CommandStatus::kInvalidState;
  completion_engine_->SetModeration(*cq, moderation);
  return CommandStatus::kOk;
}

CommandStatus Nic::DestroyCq(CqNumber number) {
  const CqContext* cq = FindCq(number);
  if (cq == nullptr) return CommandStatus::kNotFound;
  if (cq->qps > 0) return CommandStatus::kBusy;
  cqs_.Free(number.value);
  return CommandStatus::kOk;
}

CommandStatus Nic::AllocatePd(PdNumber* out) {
  *out = PdNumber{next_pd_++};
  return CommandStatus::kOk;
}

CommandStatus Nic::FreePd(PdNumber) { return CommandStatus::kOk; }

CommandStatus Nic::CreateQp(const QpCreate& create, Qpn* out) {
  CqContext* send_cq = FindCq(create.send_cq);
  CqContext* receive_cq = FindCq(create.receive_cq);
  if (send_cq == nullptr || receive_cq == nullptr) return CommandStatus::kNotFound;
  // A send-queue WQE takes a power-of-two number of 64-B blocks, no more than the largest WQE
  // (the most SGEs or the most inline bytes) needs, and the ring holds at least one.
  const std::uint32_t stride = create.send_queue.stride_blocks;
  if (create.send_queue.ring == nullptr || stride == 0 || (stride & (stride - 1)) != 0 ||
      stride > kMaxSendStrideBlocks || create.send_queue.ring->Capacity() < stride) {
    return CommandStatus::kInvalidArgument;
  }
  SrqContext* srq = nullptr;
  if (create.srq.value != 0) {
    srq = FindSrq(create.srq);
    if (srq == nullptr) return CommandStatus::kNotFound;
    if (srq->pd != create.pd) return CommandStatus::kInvalidArgument;
  }
  std::uint32_t number = 0;
  QpContext* qp = qps_.Allocate(&number);
  if (qp == nullptr) return CommandStatus::kNoResources;
  // The CQs and the SRQ count their QPs: they cannot be destroyed while one uses them.
  ++send_cq->qps;
  ++receive_cq->qps;
  if (srq != nullptr) ++srq->qps;
  qp->qpn = Qpn{number};
  qp->state = QpState::kReset;
  qp->pd = create.pd;
  qp->send_cq = create.send_cq;
  qp->receive_cq = create.receive_cq;
  qp->send_queue = create.send_queue;
  qp->receive_queue = create.receive_queue;
  qp->max_inline_bytes = create.max_inline_bytes;
  qp->srq = create.srq;
  // One descriptor per WQE the send queue can hold (up to kDescriptorSlots), each with room for
  // the data segments of one WQE slot.
  qp->SizeDescriptors(std::min(kDescriptorSlots, create.send_queue.ring->Capacity() / stride),
                      static_cast<std::uint32_t>(stride * kSegmentsPerBlock - kSendWqeHeaderSegments));
  doorbell_unit_->OnCreate(*qp);
  wqe_fetch_->OnCreate(*qp);
  *out = qp->qpn;
  NDKSIM_TRACE(tracer_, events_.Now(), id_, Requester, "create qp {}", qp->qpn.value);
  return CommandStatus::kOk;
}

CommandStatus Nic::ConnectQp(Qpn qpn, const QpConnect& connect) {
  QpContext* qp = FindQp(qpn);
  if (qp == nullptr) return CommandStatus::kNotFound;
  return qp_states_->Connect(*qp, connect);
}

CommandStatus Nic::ModifyQpToError(Qpn qpn) {
  QpContext* qp = FindQp(qpn);
  if (qp == nullptr) return CommandStatus::kNotFound;
  qp_states_->ConsumerError(*qp);
  return CommandStatus::kOk;
}

SrqContext* Nic::FindSrq(SrqNumber srq) { return srqs_.Find(srq.value); }

CommandStatus Nic::CreateSrq(const SrqCreate& create, SrqNumber* out) {
  if (create.queue.ring == nullptr || create.queue.stride_blocks == 0) return CommandStatus::kInvalidArgument;
  std::uint32_t number = 0;
  SrqContext* srq = srqs_.Allocate(&number);
  if (srq == nullptr) return CommandStatus::kNoResources;
  srq->number = SrqNumber{number};
  srq->pd = create.pd;
  srq->queue = create.queue;
  srq->consumed = create.queue.ring->ConsumerIndex() / create.queue.stride_blocks;
  *out = srq->number;
  // Armed, but first judged when a WQE is taken: a new SRQ is empty by nature.
  srq->limit = create.limit;
  srq->armed = create.limit != 0;
  return CommandStatus::kOk;
}

CommandStatus Nic::ArmSrqLimit(SrqNumber number, std::uint32_t limit) {
  SrqContext* srq = FindSrq(number);
  if (srq == nullptr) return CommandStatus::kNotFound;
  if (limit == 0) return CommandStatus::kInvalidArgument;
  srq->limit = limit;
  srq->armed = true;
  CheckSrqLimit(*srq);  // already below: fires at once (ref §3.16)
  return CommandStatus::kOk;
}

void Nic::CheckSrqLimit(SrqContext& srq) {
  if (!srq.armed) return;
  const WorkQueue& q = srq.queue;
  // acquire (inside PublishedProducerIndex): counts only complete WQEs.
  const std::uint32_t queued = q.ring->PublishedProducerIndex() / q.stride_blocks - srq.consumed;
  if (queued >= srq.limit) return;
  srq.armed = false;  // one-shot
  NDKSIM_TRACE(tracer_, events_.Now(), id_, Responder, "srq {} below limit {} ({} queued)", srq.number.value,
               srq.limit, queued);
  EventEntry e{};
  e.type = EventType::kSrqLimit;
  e.object = srq.number.value;
  PostEvent(e);
}

CommandStatus Nic::ReplaceSrqQueue(SrqNumber number, const WorkQueue& queue) {
  SrqContext* srq = FindSrq(number);
  if (srq == nullptr) return CommandStatus::kNotFound;
  const WorkQueue& old = srq->queue;
  if (queue.ring == nullptr || queue.stride_blocks != old.stride_blocks ||
      queue.ring->ConsumerIndex() != old.ring->ConsumerIndex() ||
      queue.ring->PublishedProducerIndex() != old.ring->PublishedProducerIndex()) {
    return CommandStatus::kInvalidArgument;
  }
  // WQE reads (takes and placements still in flight) look the queue up when they run, so from
  // now on they read the new ring.
  srq->queue = queue;
  return CommandStatus::kOk;
}

CommandStatus Nic::DestroySrq(SrqNumber number) {
  const SrqContext* srq = FindSrq(number);
  if (srq == nullptr) return CommandStatus::kNotFound;
  if (srq->qps > 0) return CommandStatus::kBusy;
  srqs_.Free(number.value);
  return CommandStatus::kOk;
}

CommandStatus Nic::DestroyQp(Qpn qpn) {
  QpContext* qp = FindQp(qpn);
  if (qp == nullptr) return CommandStatus::kNotFound;
  requester_->Abort(*qp);  // releases the packets it staged
  --FindCq(qp->send_cq)->qps;
  --FindCq(qp->receive_cq)->qps;
  if (SrqContext* srq = FindSrq(qp->srq); srq != nullptr) --srq->qps;
  qps_.Free(qpn.value);
  qp_contexts_->Forget(qpn.value);
  return CommandStatus::kOk;
}

QpState Nic::QueryQpState(Qpn qpn) const {
  const QpContext* qp = qps_.Find(qpn.value);
  return qp != nullptr ? qp->state : QpState::kReset;
}

CommandStatus Nic::RegisterMemory(const MemoryRegistration& reg, MemoryKey* out, std::uint32_t* generation) {
  return translation_->Register(reg, out, generation);
}

CommandStatus Nic::DeregisterMemory(MemoryKey key) { return translation_->Deregister(key); }

CommandStatus Nic::AllocateFastRegisterKey(PdNumber pd, std::uint32_t page_capacity, bool remote_access,
                                           MemoryKey* out, std::uint32_t* generation) {
  return translation_->AllocateFastRegister(pd, page_capacity, remote_access, out, generation);
}

CommandStatus Nic::AllocateWindowKey(PdNumber pd, MemoryKey* out, std::uint32_t* generation) {
  return translation_->AllocateWindow(pd, out, generation);
}

CommandStatus Nic::AllocatePrivilegedKey(PdNumber pd, MemoryKey* out) {
  return translation_->AllocatePrivileged(pd, out);
}

CommandStatus Nic::FreeMemoryKey(MemoryKey key) { return translation_->Free(key); }

void Nic::EnterFatal() {
  if (fatal_) return;
  fatal_ = true;
  NDKSIM_TRACE(tracer_, events_.Now(), id_, Faults, "catastrophic error: the NIC stops");
  completion_engine_->FailAll();
  srqs_.ForEach([this](const SrqContext& srq) {
    EventEntry e{};
    e.type = EventType::kSrqError;
    e.object = srq.number.value;
    PostEvent(e);
  });
  ForEachQp([this](QpContext& qp) {
    if (qp.state != QpState::kError) qp_states_->EnterError(qp, QpErrorCause::kLocal);
  });
}

void Nic::PostEvent(const EventEntry& entry) {
  // The entry is written to the event queue by DMA; the MSI-X write that follows it is ordered
  // behind it, so the host never sees the interrupt before the entry.
  pending_events_.push_back(entry);
  std::size_t bytes = kEventEntryBytes;
  if (entry.type == EventType::kManagement) bytes += pending_datagrams_.back().bytes;
  pcie_->DmaWrite(bytes, [this] {
    ++landed_events_;
    WriteLandedEvents();
  });
}

void Nic::WriteLandedEvents() {
  for (; landed_events_ > 0; --landed_events_) {
    NDKSIM_CHECK(!pending_events_.empty(), "{} events landed, none pending", landed_events_);
    const EventEntry& e = pending_events_.front();
    const bool datagram = e.type == EventType::kManagement;
    if (datagram) NDKSIM_CHECK(!pending_datagrams_.empty(), "a management event without its datagram");
    // Without a ring (no driver) the entry is dropped, as a write to unmapped memory would be.
    const bool deliver = event_ring_ != nullptr && (!datagram || datagram_ring_ != nullptr);
    if (deliver && (event_ring_->ProducerSlot() == nullptr ||
                    (datagram && datagram_ring_->ProducerSlot() == nullptr))) {
      return;  // full: the driver has not caught up; it says when it has (EventQueueConsumed)
    }
    if (deliver) {
      // The datagram first: the driver reads it when it sees the event.
      if (datagram) NDKSIM_CHECK(datagram_ring_->TryPush(pending_datagrams_.front()));
      NDKSIM_CHECK(event_ring_->TryPush(e));
    }
    pending_events_.pop_front();
    if (datagram) pending_datagrams_.pop_front();
    if (!deliver) continue;
    ++counters_.interrupts;
    host_.RaiseInterrupt(interrupt_vector_);
  }
}

bool Nic::SendManagementDatagram(const NetworkAddress& destination, std::span<const std::byte> bytes) {
  Nic* dest = network_.Resolve(destination);
  if (dest == nullptr || bytes.size() > kManagementPayloadBytes) return false;
  if (fatal_) return true;  // a failed NIC sends nothing; the connection attempt times out
  std::uint32_t id;
  Packet& p = port_->Pool().Acquire(&id);
  p.source_node = id_;
  p.destination_node = dest->Id();
  p.opcode = PacketOpcode::kManagement;
  p.payload.assign(bytes.begin(), bytes.end());
  // Management traffic is light; it is modelled as a fixed end-to-end latency.
  events_.ScheduleAfter(profile_.management_latency, EventPriority::kWire,
                        [dest, id] { dest->GetPort().Receive(id); });
  return true;
}

void Nic::DeliverManagementDatagram(std::span<const std::byte> bytes, NodeId source) {
  ManagementDatagram& d = pending_datagrams_.emplace_back();
  d.bytes = static_cast<std::uint32_t>(std::min(bytes.size(), kManagementPayloadBytes));
  // An empty datagram (a hostile node may send one) has no bytes to copy, and maybe no pointer.
  std::copy_n(bytes.begin(), d.bytes, d.payload.begin());
  EventEntry e{};
  e.type = EventType::kManagement;
  e.object = source;
  PostEvent(e);
}

}  // namespace ndksim::hw
