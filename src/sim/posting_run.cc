// SPDX-License-Identifier: MIT
// The posting-path measurement (ndksim/posting_run.h): the run's pair and its window, the
// catch-up of the simulation with the posting cores' clocks, the reaping, and the report of what
// each resource of both nodes did.
#include "ndksim/posting_run.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ndksim/host_cpu.h"

namespace ndksim {

std::string PostingReport::Bound() const {
  if (resources.empty()) return "nothing measured";
  const ResourceBusy& top = resources.front();
  std::string bound = top.busy >= 0.75 ? fmt::format("{} {:.0f}%", top.name, 100 * top.busy)
                                       : fmt::format("latency (busiest: {} {:.0f}%)", top.name, 100 * top.busy);
  // A cache is no resource of its own: its misses are PCIe reads and units waiting. Say so when
  // they are frequent enough to be part of the story.
  const double misses = PerOp(poster.qp_context_misses + poster.mpt_misses + poster.mtt_misses +
                              peer.qp_context_misses + peer.mpt_misses + peer.mtt_misses);
  if (misses >= 0.05) bound += fmt::format(", {:.2f} cache misses/op", misses);
  return bound;
}

NodeMeasurement::NodeMeasurement(Node& poster, Node& peer, TimePoint start)
    : poster_(poster),
      peer_(peer),
      start_(start),
      poster_before_(poster.Counters()),
      peer_before_(peer.Counters()),
      poster_busy_before_(poster.Busy()),
      peer_busy_before_(peer.Busy()) {
  for (std::uint32_t c = 0; c < poster.CoreCount(); ++c) core_busy_before_.push_back(poster.CoreBusy(c));
  for (std::uint32_t c = 0; c < peer.CoreCount(); ++c) peer_core_busy_before_.push_back(peer.CoreBusy(c));
}

PostingReport NodeMeasurement::Finish(TimePoint end, std::uint64_t operations, double wall_seconds) const {
  PostingReport r;
  r.operations = operations;
  r.wall_seconds = wall_seconds;
  r.simulated = end - start_;
  r.poster = Delta(poster_.Counters(), poster_before_);
  if (&poster_ != &peer_) r.peer = Delta(peer_.Counters(), peer_before_);  // loopback: all in `poster`
  for (std::uint32_t c = 0; c < poster_.CoreCount(); ++c) {
    const Duration busy = poster_.CoreBusy(c) - core_busy_before_[c];
    r.host += busy;
    AddResource(r, fmt::format("host core {} ({})", c, poster_.Name()), busy, 1);
  }
  if (&poster_ != &peer_) {
    // The peer's cores re-post receives and answer: they may bound the rate too.
    for (std::uint32_t c = 0; c < peer_.CoreCount(); ++c) {
      AddResource(r, fmt::format("host core {} ({})", c, peer_.Name()), peer_.CoreBusy(c) - peer_core_busy_before_[c], 1);
    }
  }
  AddNic(r, poster_, poster_busy_before_, fmt::format("{} -> {}", poster_.Name(), peer_.Name()));
  if (&poster_ != &peer_) AddNic(r, peer_, peer_busy_before_, fmt::format("{} -> {}", peer_.Name(), poster_.Name()));
  std::stable_sort(r.resources.begin(), r.resources.end(),
                   [](const ResourceBusy& x, const ResourceBusy& y) { return x.busy > y.busy; });
  return r;
}

NicCounters NodeMeasurement::Delta(const NicCounters& now, const NicCounters& before) {
  // Every field is a std::uint64_t counter: subtract them one by one.
  constexpr std::size_t kFields = sizeof(NicCounters) / sizeof(std::uint64_t);
  static_assert(sizeof(NicCounters) == kFields * sizeof(std::uint64_t) && std::is_trivially_copyable_v<NicCounters>);
  using Fields = std::array<std::uint64_t, kFields>;
  Fields n = std::bit_cast<Fields>(now);
  const Fields b = std::bit_cast<Fields>(before);
  for (std::size_t i = 0; i < kFields; ++i) n[i] -= b[i];
  return std::bit_cast<NicCounters>(n);
}

void NodeMeasurement::AddResource(PostingReport& r, std::string name, Duration busy, std::uint32_t servers) {
  if (r.simulated <= Duration::zero() || servers == 0) return;
  const double share = static_cast<double>(busy.count()) /
                       (static_cast<double>(r.simulated.count()) * static_cast<double>(servers));
  r.resources.push_back(ResourceBusy{std::move(name), share});
}

void NodeMeasurement::AddNic(PostingReport& r, Node& node, const NicBusy& before, const std::string& direction) {
  const NicBusy now = node.Busy();
  const std::string n(node.Name());
  // The link towards the NIC carries the host's MMIO writes and the read completions: named for
  // the one that took most of it.
  const Duration to_nic = now.pcie_to_nic - before.pcie_to_nic;
  const Duration mmio = now.mmio - before.mmio;
  AddResource(r, fmt::format("PCIe to the NIC, mostly {} ({})", 2 * mmio >= to_nic ? "MMIO writes" : "read completions", n),
              to_nic, 1);
  AddResource(r, fmt::format("PCIe to the host ({})", n), now.pcie_to_host - before.pcie_to_host, 1);
  AddResource(r, fmt::format("DMA write engine ({})", n), now.write_engine - before.write_engine, 1);
  AddResource(r, fmt::format("PCIe read tags ({})", n), now.read_tags - before.read_tags, now.read_tag_count);
  AddResource(r, fmt::format("the wire ({})", direction), now.transmit - before.transmit, 1);
  AddResource(r, fmt::format("receive pipeline ({})", n), now.receive - before.receive, 1);
  std::size_t busiest = 0;
  Duration most{};
  for (std::size_t u = 0; u < now.processing_units.size(); ++u) {
    const Duration d = now.processing_units[u] - before.processing_units[u];
    if (d > most) {
      most = d;
      busiest = u;
    }
  }
  AddResource(r, fmt::format("processing unit {} ({})", busiest, n), most, 1);
}

PostingRun::PostingRun(PostingConfig config) : config_(Prepared(std::move(config))), pair_(config_.pair) {
  qa_.push_back(pair_.a().qp);
  qb_.push_back(pair_.b().qp);
  for (std::size_t i = 1; i < config_.qps; ++i) {
    const QpPair::ExtraQps e = pair_.AddConnectedQps();
    qa_.push_back(e.a);
    qb_.push_back(e.b);
  }
  if (config_.window == 0) {
    // Half of every initiator queue, and no more completions than half a CQ holds: the helper
    // reaps between calls, and a CQ that overran would fail its QPs.
    config_.window = std::max<std::size_t>(
        1, std::min<std::size_t>(config_.pair.initiator_queue_depth / 2 * qa_.size(), config_.pair.cq_depth / 2));
  }
  if (config_.peer_receive_bytes > 0) {
    receive_buffer_ = pair_.b().Register(config_.peer_receive_bytes);
    for (std::size_t q = 0; q < qb_.size(); ++q) {
      for (ULONG k = 0; k < config_.pair.receive_queue_depth; ++k) PostPeerReceive(q);
    }
  }
  pair_.fabric().RunUntilIdle();
  if (config_.threaded) pair_.fabric().Start();
}

void PostingRun::BeforeCall(std::uint64_t operations) {
  if (!started_) Start();
  Node& a = *pair_.a().node;
  const std::uint64_t room = config_.window > operations ? config_.window - operations : 0;
  if (config_.threaded) {
    AwaitCompleted(a, [&] { return posted_ - Completed(a) <= room; });
    return;
  }
  if (posted_ - Completed(a) > room) {
    const RunResult r = fabric().RunUntil([&] { return posted_ - Completed(a) <= room; }, Milliseconds(1000));
    if (!r) {
      throw HarnessError(fmt::format("PostingRun: {} requests still in flight after 1 s of simulated time",
                                     posted_ - Completed(a)),
                         STATUS_IO_TIMEOUT);
    }
    Reap();
  }
}

void PostingRun::AfterCall(std::uint64_t operations) {
  posted_ += operations;
  if (config_.threaded) {
    Reap();
    return;
  }
  Node& a = *pair_.a().node;
  used_cores_[a.CurrentCore() % a.CoreCount()] = true;
  TimePoint clock = TimePoint::max();
  for (std::uint32_t c = 0; c < a.CoreCount(); ++c) {
    if (used_cores_[c]) clock = std::min(clock, a.CoreClock(c));
  }
  if (clock > fabric().Now()) fabric().RunFor(clock - fabric().Now());
  Reap();
}

PostingReport PostingRun::Finish(double wall_seconds) {
  if (!started_) Start();
  if (config_.threaded) {
    Node& a = *pair_.a().node;
    AwaitCompleted(a, [&] { return Completed(a) >= posted_; });
    fabric().Stop(StopMode::kDrain);
  }
  fabric().RunUntilIdle();
  Reap();
  PostingReport r = measurement_->Finish(fabric().Now(), posted_, wall_seconds);
  if (r.poster.requests_completed != posted_) {
    throw HarnessError(fmt::format("PostingRun: the calls declared {} requests, the NIC completed {}", posted_,
                                   r.poster.requests_completed),
                       STATUS_INVALID_PARAMETER);
  }
  return r;
}

PostingConfig PostingRun::Prepared(PostingConfig c) {
  if (c.peer_receive_bytes > 0) {
    const std::size_t receives = std::max<std::size_t>(c.qps, 1) * c.pair.receive_queue_depth;
    c.pair.cq_depth = static_cast<ULONG>(
        std::min<std::size_t>(std::max<std::size_t>(c.pair.cq_depth, receives), c.pair.fabric.profile.max_cq_depth));
  }
  return c;
}

void PostingRun::Start() {
  started_ = true;
  Node& a = *pair_.a().node;
  measurement_.emplace(a, *pair_.b().node, std::max(fabric().Now(), a.CoreClock(a.CurrentCore())));
  used_cores_.assign(a.CoreCount(), false);
}

template <typename Done>
void PostingRun::AwaitCompleted(Node& a, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    Reap();
    if (std::chrono::steady_clock::now() > deadline) {
      throw HarnessError(fmt::format("PostingRun: {} requests still in flight after 60 s", posted_ - Completed(a)),
                         STATUS_IO_TIMEOUT);
    }
    std::this_thread::yield();
  }
}

void PostingRun::PostPeerReceive(std::size_t q) {
  const NDK_SGE sge = receive_buffer_->Sge(0, config_.peer_receive_bytes);
  NDK_QP* qp = qb_[q];
  // Each peer QP's receives are re-posted from a core of its own, as a server spreads its
  // connections over its cores: the peer's posting cost does not pile up on one core.
  const ScopedCore on(static_cast<std::uint32_t>(q));
  // The receive's context names its QP, so its completion says which queue to refill.
  const NTSTATUS s = qp->Dispatch->NdkReceive(qp, reinterpret_cast<void*>(q + 1), &sge, 1);
  if (s != STATUS_SUCCESS) throw HarnessError("PostingRun: NdkReceive on the peer", s);
}

void PostingRun::Reap() {
  std::array<NDK_RESULT, 64> results{};
  const auto poll = [&](NDK_CQ* cq) {
    return cq->Dispatch->NdkGetCqResults(cq, results.data(), static_cast<ULONG>(results.size()));
  };
  if (config_.reap) {
    NDK_CQ* cq = pair_.a().initiator_cq;
    for (ULONG n = poll(cq); n > 0; n = poll(cq)) {
      for (ULONG i = 0; i < n; ++i) {
        if (results[i].Status != STATUS_SUCCESS) throw HarnessError("PostingRun: a request completed", results[i].Status);
      }
    }
  }
  if (config_.peer_receive_bytes > 0) {
    NDK_CQ* cq = pair_.b().receive_cq;
    for (ULONG n = poll(cq); n > 0; n = poll(cq)) {
      for (ULONG i = 0; i < n; ++i) {
        if (results[i].Status != STATUS_SUCCESS) {
          throw HarnessError("PostingRun: a peer receive completed", results[i].Status);
        }
        PostPeerReceive(reinterpret_cast<std::uintptr_t>(results[i].RequestContext) - 1);
      }
    }
  }
}

PostingReport KernelPostingRun::Measure(std::uint64_t operations, const std::function<bool()>& done) {
  const NodeMeasurement measurement(poster_, peer_, environment_.Now());
  const auto t0 = std::chrono::steady_clock::now();
  environment_.RunUntil(done);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return measurement.Finish(environment_.Now(), operations, wall);
}

}  // namespace ndksim
