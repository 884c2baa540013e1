// SPDX-License-Identifier: MIT
// A minimal hand-written driver for testing the hardware model without the provider: it builds
// rings and CQs in host memory, issues NIC commands, writes WQEs and reads CQEs directly.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "hwmodel/completion_engine.h"
#include "hwmodel/contexts.h"
#include "hwmodel/event_queue.h"
#include "hwmodel/host.h"
#include "hwmodel/nic.h"
#include "hwmodel/port.h"
#include "ndksim/profile.h"
#include "ndksim/trace.h"

namespace ndksim::hw::testing {

struct RawCq {
  std::unique_ptr<Cqe[]> entries;
  std::atomic<std::uint32_t> consumer{0};
  std::uint32_t count = 0;
  CqNumber number;

  RawCq(Nic& nic, std::uint32_t n) : entries(new Cqe[n]), count(n) {
    for (std::uint32_t i = 0; i < n; ++i) entries[i].owner.store(1);
    CqCreate c;
    c.memory = {entries.get(), n, &consumer};
    NDKSIM_CHECK(nic.CreateCq(c, &number) == CommandStatus::kOk);
  }
  // Returns the next CQE if the NIC has written it, consuming it.
  bool Poll(Cqe* out) {
    const std::uint32_t i = consumer.load(std::memory_order_relaxed);
    Cqe& e = entries[i & (count - 1)];
    if (e.owner.load(std::memory_order_acquire) != OwnerParity(i, count)) return false;
    out->qpn = e.qpn;
    out->wqe_counter = e.wqe_counter;
    out->byte_count = e.byte_count;
    out->invalidated_key = e.invalidated_key;
    out->opcode = e.opcode;
    out->syndrome = e.syndrome;
    out->flags = e.flags;
    consumer.store(i + 1, std::memory_order_release);
    return true;
  }
};

struct RawQp {
  static constexpr std::uint32_t kDepth = 64;
  static constexpr std::uint32_t kStride = 2;  // 8 segments: control, remote, 6 SGEs
  SpscRing<WqeBlock> sq{kDepth * kStride};
  SpscRing<WqeBlock> rq{kDepth * kStride};
  Qpn qpn;
  std::uint32_t sq_posted = 0;
  std::uint32_t rq_posted = 0;
  Nic* nic = nullptr;

  RawQp(Nic& n, PdNumber pd, CqNumber scq, CqNumber rcq) : nic(&n) {
    QpCreate c;
    c.pd = pd;
    c.send_cq = scq;
    c.receive_cq = rcq;
    c.send_queue = {&sq, kStride};
    c.receive_queue = {&rq, kStride};
    NDKSIM_CHECK(n.CreateQp(c, &qpn) == CommandStatus::kOk);
  }

  // Writes one send-queue WQE and publishes it; rings the doorbell unless `defer`.
  void Post(WqeOpcode op, const std::vector<WqeDataSegment>& sges, std::uint64_t raddr = 0, std::uint32_t rkey = 0,
            std::uint8_t flags = wqe_flag::kSignaled, bool defer = false) {
    std::byte* w = sq.SlotAt(sq_posted * kStride).bytes.data();
    WqeControl ctl{};
    ctl.opcode = op;
    ctl.flags = flags;
    ctl.sge_count = static_cast<std::uint8_t>(sges.size());
    ctl.wqe_counter = sq_posted;
    WqeRemote rem{raddr, rkey, 0};
    std::memcpy(w, &ctl, sizeof ctl);
    std::memcpy(w + 16, &rem, sizeof rem);
    if (!sges.empty()) std::memcpy(w + 32, sges.data(), sges.size() * sizeof(WqeDataSegment));  // none: data() may be null
    ++sq_posted;
    sq.ProducerPublish(kStride);
    if (!defer) Ring();
  }
  void PostInline(WqeOpcode op, const void* data, std::uint32_t len, std::uint64_t raddr = 0, std::uint32_t rkey = 0) {
    std::byte* w = sq.SlotAt(sq_posted * kStride).bytes.data();
    WqeControl ctl{};
    ctl.opcode = op;
    ctl.flags = wqe_flag::kSignaled | wqe_flag::kInline;
    ctl.inline_bytes = len;
    ctl.wqe_counter = sq_posted;
    WqeRemote rem{raddr, rkey, 0};
    std::memcpy(w, &ctl, sizeof ctl);
    std::memcpy(w + 16, &rem, sizeof rem);
    std::memcpy(w + 32, data, len);
    ++sq_posted;
    sq.ProducerPublish(kStride);
    Ring();
  }
  void Ring() { nic->Inbox().Write({Doorbell::Kind::kSendQueue, CqArmKind::kNone, qpn.value, sq.ProducerIndex()}); }
  void PostReceive(const std::vector<WqeDataSegment>& sges) {
    std::byte* w = rq.SlotAt(rq_posted * kStride).bytes.data();
    WqeControl ctl{};
    ctl.opcode = WqeOpcode::kReceive;
    ctl.sge_count = static_cast<std::uint8_t>(sges.size());
    ctl.wqe_counter = rq_posted;
    std::memcpy(w, &ctl, sizeof ctl);
    std::memcpy(w + 16, sges.data(), sges.size() * sizeof(WqeDataSegment));
    ++rq_posted;
    rq.ProducerPublish(kStride);
  }
};

// Two NICs joined back to back, each with a PD, one CQ and one QP, connected to each other.
struct TwoNodeRig {
  EventQueue events;
  Network network;
  Tracer tracer;
  Host host_a{events, profiles::kFunctional};  // the rig posts without host costs
  Host host_b{events, profiles::kFunctional};
  std::unique_ptr<Nic> a;
  std::unique_ptr<Nic> b;
  SpscRing<EventEntry> events_a{64};
  SpscRing<EventEntry> events_b{64};
  int interrupts_a = 0;
  int interrupts_b = 0;
  PdNumber pd_a;
  PdNumber pd_b;
  std::unique_ptr<RawCq> cq_a;
  std::unique_ptr<RawCq> cq_b;
  std::unique_ptr<RawQp> qp_a;
  std::unique_ptr<RawQp> qp_b;

  explicit TwoNodeRig(const HardwareProfile& profile = profiles::kFunctional, std::uint32_t cq_entries = 256,
                      std::uint64_t seed = 1) {
    a = std::make_unique<Nic>(0, profile, events, host_a, network, tracer, seed);
    b = std::make_unique<Nic>(1, profile, events, host_b, network, tracer, seed);
    network.Attach(*a);
    network.Attach(*b);
    a->SetEventQueue(&events_a, 0);
    b->SetEventQueue(&events_b, 0);
    host_a.SetInterruptHandler([this](std::uint32_t) { ++interrupts_a; });
    host_b.SetInterruptHandler([this](std::uint32_t) { ++interrupts_b; });
    NDKSIM_CHECK(a->AllocatePd(&pd_a) == CommandStatus::kOk);
    NDKSIM_CHECK(b->AllocatePd(&pd_b) == CommandStatus::kOk);
    cq_a = std::make_unique<RawCq>(*a, cq_entries);
    cq_b = std::make_unique<RawCq>(*b, cq_entries);
    qp_a = std::make_unique<RawQp>(*a, pd_a, cq_a->number, cq_a->number);
    qp_b = std::make_unique<RawQp>(*b, pd_b, cq_b->number, cq_b->number);
    QpConnect ca{1, qp_b->qpn, 100, 500, 16, 16};
    QpConnect cb{0, qp_a->qpn, 500, 100, 16, 16};
    NDKSIM_CHECK(a->ConnectQp(qp_a->qpn, ca) == CommandStatus::kOk);
    NDKSIM_CHECK(b->ConnectQp(qp_b->qpn, cb) == CommandStatus::kOk);
  }

  MemoryKey Register(Nic& nic, PdNumber pd, void* buf, std::size_t len, std::uint32_t access) {
    MemoryKey key;
    MemoryRegistration r{pd, reinterpret_cast<std::uint64_t>(buf), len, static_cast<std::byte*>(buf), access};
    NDKSIM_CHECK(nic.RegisterMemory(r, &key) == CommandStatus::kOk);
    return key;
  }

  // Node a's DMA read of `bytes`, alone on the link: how long it takes.
  Duration TimeDmaRead(std::uint64_t bytes) {
    const TimePoint start = events.Now();
    TimePoint done{};
    a->Pcie().DmaRead(bytes, [&] { done = events.Now(); });
    Run();
    return done - start;
  }

  void Run() {
    for (;;) {
      a->DrainDoorbells();
      b->DrainDoorbells();
      if (events.Empty()) return;
      events.RunOne();
    }
  }
};

inline WqeDataSegment Sge(const void* p, std::uint32_t len, MemoryKey key) {
  return WqeDataSegment{reinterpret_cast<std::uint64_t>(p), len, key.value};
}

// The functional profile with only the PCIe link timed, in round numbers: 8 bytes per ns.
inline HardwareProfile PcieOnlyProfile() {
  HardwareProfile p = profiles::kFunctional;
  p.pcie_dma_read_latency = Nanoseconds(500);
  p.pcie_dma_write_latency = Nanoseconds(200);
  p.pcie_mmio_write_latency = Nanoseconds(100);
  p.pcie_bandwidth = GigabitsPerSecond(64);  // 8 bytes per ns: easy arithmetic
  return p;
}

}  // namespace ndksim::hw::testing
