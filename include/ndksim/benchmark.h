// SPDX-License-Identifier: MIT
/// @file
/// Microbenchmarks of a consumer's own posting code, with the simulated RNIC's view of every
/// operation (docs/benchmarking.md). A Google Benchmark of a posting routine:
///
///     void BM_PostWrites(benchmark::State& state) {
///       ndksim::PostingBenchmark bench(state);             // a connected pair, default profile
///       auto src = bench.poster().Register(4096);
///       auto dst = bench.peer().Register(4096);
///       bench.Run(16, [&] { my_post_16_writes(bench.qp(0), *src, *dst); });
///     }
///     BENCHMARK(BM_PostWrites)->UseManualTime();
///     NDKSIM_BENCHMARK_MAIN();
///
/// Each iteration calls the routine once (timed: only the routine), then lets the simulation catch
/// up with the posting thread's simulated clock and reaps completions (not timed). At the end the
/// fabric runs until idle, and the benchmark reports per operation, from the model's own counters:
/// wall time of the routine, simulated host CPU time, simulated time, doorbells, MMIO bytes,
/// WQE-fetch reads, payload DMA bytes, CQE writes, PCIe bytes each way, packets, cache misses, the
/// simulated message rate, and (as the label) the resource that bounded that rate.
///
/// PostingRun is the same measurement without Google Benchmark's loop, for a test or a tool.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ndksim/counters.h"
#include "ndksim/harness.h"
#include "ndksim/host_cpu.h"
#include "ndksim/kernel/environment.h"

namespace ndksim {

/// What a PostingRun measures on: the pair and its QPs, and how the helper keeps the routine's
/// queues going between calls.
struct PostingConfig {
  /// The fabric (its profile: pair.fabric.profile), queue depths, SGE limits, inline size. The
  /// default profile is ConnectX-class; profiles::kFunctional makes every cost zero.
  QpPairConfig pair;
  /// Connected QPs between the two nodes, sharing each side's PD and CQs: qp(0) ... qp(qps - 1).
  std::size_t qps = 1;
  /// Requests allowed in flight (posted, not yet completed by the NIC) over all the QPs, before the
  /// helper runs the simulation to make room for the next call. 0: half of every initiator queue
  /// and at most half a CQ, so a routine that signals at least once per half queue never finds its
  /// queue full, and no CQ overruns between two reaps.
  std::size_t window = 0;
  /// After each call the helper polls the posting side's initiator CQ (on the posting thread's
  /// core, so the polls cost simulated host time) and fails the benchmark on an error completion.
  /// false: the routine polls for itself, before it posts.
  bool reap = true;
  /// Nonzero: the helper keeps every peer QP's receive queue full of receives of this many bytes
  /// and re-posts each one that completes (the routine sends), peer QP i's from the peer's core i.
  std::uint32_t peer_receive_bytes = 0;
  /// The engine runs on its own thread (Fabric::Start) while the routine posts, instead of being
  /// stepped between calls: the routine meets the provider as it would under a threaded test. The
  /// NIC's counters stay exact; the simulated times then depend on how the two threads interleave.
  bool threaded = false;
};

/// One resource of the simulated fabric and the share of the measured stretch it was busy.
struct ResourceBusy {
  std::string name;  ///< e.g. "the wire (a -> b)", "processing unit 3 (a)", "host core 0 (a)"
  /// The share of the run it was busy (read tags: the mean share of the tags held). A host core's
  /// can pass 1: its clock runs ahead of the fabric's when it has more work than the run's length.
  double busy = 0;
};

/// What a run measured. `poster` and `peer` are the two NICs' counters over the run (on a loopback
/// pair, where both ends are one node, everything is in `poster` and `peer` is zero).
struct PostingReport {
  std::uint64_t operations = 0;  ///< the send-queue requests the calls declared
  Duration simulated{};  ///< from the first call's first post until the fabric fell idle
  Duration host{};       ///< simulated CPU time of the posting node's cores (posts, doorbells, polls)
  double wall_seconds = 0;  ///< the routine's own wall time, over all calls
  NicCounters poster;  ///< the posting node's NIC over the run
  NicCounters peer;    ///< the peer's NIC over the run
  std::vector<ResourceBusy> resources;  ///< busiest first

  /// `count` per operation (0 when there were none).
  double PerOp(std::uint64_t count) const {
    return operations == 0 ? 0 : static_cast<double>(count) / static_cast<double>(operations);
  }
  /// Simulated operations per simulated microsecond (M operations per second).
  double SimulatedMops() const {
    return simulated <= Duration::zero() ? 0
                                         : static_cast<double>(operations) * 1e6 / static_cast<double>(simulated.count());
  }
  /// The resource that bounded the simulated rate: the busiest one, if it was busy at least 75% of
  /// the time; otherwise the rate was bound by latency (the requests in flight), and this says so.
  std::string Bound() const {
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
};

/// What two nodes did over a stretch of simulated time: their NICs' counters, the poster's host
/// cores and every shared resource's busy time, from a snapshot taken at the start. PostingRun
/// takes one; code that drives the fabric itself (a kernel-environment driver, a workload of its
/// own) takes its own and publishes the report with PostingBenchmark::Publish.
class NodeMeasurement {
 public:
  /// Takes the snapshot; the stretch begins at `start` (the fabric's clock then, or the posting
  /// core's clock if that is later).
  NodeMeasurement(Node& poster, Node& peer, TimePoint start)
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

  /// The poster's counters at the snapshot.
  const NicCounters& PosterBefore() const { return poster_before_; }

  /// The report of the stretch from the start to `end` (read it with the fabric idle, or at least
  /// with the work of `operations` done), per `operations`; `wall_seconds` as the caller measured.
  PostingReport Finish(TimePoint end, std::uint64_t operations, double wall_seconds = 0) const {
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

 private:
  Node& poster_;
  Node& peer_;
  TimePoint start_;
  NicCounters poster_before_;
  NicCounters peer_before_;
  NicBusy poster_busy_before_;
  NicBusy peer_busy_before_;
  std::vector<Duration> core_busy_before_;
  std::vector<Duration> peer_core_busy_before_;

  static NicCounters Delta(const NicCounters& now, const NicCounters& before) {
    // Every field is a std::uint64_t counter: subtract them one by one.
    constexpr std::size_t kFields = sizeof(NicCounters) / sizeof(std::uint64_t);
    static_assert(sizeof(NicCounters) == kFields * sizeof(std::uint64_t) && std::is_trivially_copyable_v<NicCounters>);
    using Fields = std::array<std::uint64_t, kFields>;
    Fields n = std::bit_cast<Fields>(now);
    const Fields b = std::bit_cast<Fields>(before);
    for (std::size_t i = 0; i < kFields; ++i) n[i] -= b[i];
    return std::bit_cast<NicCounters>(n);
  }

  static void AddResource(PostingReport& r, std::string name, Duration busy, std::uint32_t servers) {
    if (r.simulated <= Duration::zero() || servers == 0) return;
    const double share = static_cast<double>(busy.count()) /
                         (static_cast<double>(r.simulated.count()) * static_cast<double>(servers));
    r.resources.push_back(ResourceBusy{std::move(name), share});
  }

  static void AddNic(PostingReport& r, Node& node, const NicBusy& before, const std::string& direction) {
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
};

/// A connected pair (or `qps` pairs of QPs) to measure a posting routine on.
class PostingRun {
 public:
  /// Makes the pair and its QPs, keeps the peer's receives posted if asked, and starts the engine's
  /// thread if threaded; throws HarnessError if a step fails.
  explicit PostingRun(PostingConfig config = {}) : config_(Prepared(std::move(config))), pair_(config_.pair) {
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
  PostingRun(const PostingRun&) = delete;
  PostingRun& operator=(const PostingRun&) = delete;
  virtual ~PostingRun() = default;

  QpPair& pair() { return pair_; }                            ///< the connected pair
  Fabric& fabric() { return pair_.fabric(); }                 ///< its fabric
  QpEnd& poster() { return pair_.a(); }                       ///< side "a", whose routine is measured
  QpEnd& peer() { return pair_.b(); }                         ///< side "b"
  std::size_t qps() const { return qa_.size(); }              ///< QPs on each side (PostingConfig::qps)
  NDK_QP* qp(std::size_t i) const { return qa_.at(i); }       ///< the poster's QP `i`
  NDK_QP* peer_qp(std::size_t i) const { return qb_.at(i); }  ///< the peer's QP connected to qp(i)
  const PostingConfig& config() const { return config_; }     ///< the configuration, its window filled in

  /// Before a call that posts `operations` send-queue requests: runs the simulation until they fit
  /// in the window. The first call starts the measurement.
  void BeforeCall(std::uint64_t operations) {
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
  /// After the call: the simulation catches up with the posting threads' clocks (the earliest of
  /// the cores that have posted, so calls from several cores overlap as they would on a host),
  /// then completions are reaped and the peer's receives re-posted.
  void AfterCall(std::uint64_t operations) {
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
  /// Calls `post` once, between BeforeCall and AfterCall.
  template <typename Post>
  void Call(std::uint64_t operations, Post&& post) {
    BeforeCall(operations);
    std::forward<Post>(post)();
    AfterCall(operations);
  }

  /// Ends the measurement: runs until every request has completed and the fabric is idle, and
  /// says what it cost. `wall_seconds` is the routine's own wall time, as the caller measured it.
  /// Throws HarnessError if the NIC completed a different number of requests than were declared.
  PostingReport Finish(double wall_seconds = 0) {
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

 private:
  PostingConfig config_;
  QpPair pair_;
  std::vector<NDK_QP*> qa_;
  std::vector<NDK_QP*> qb_;
  std::unique_ptr<RegisteredBuffer> receive_buffer_;
  bool started_ = false;
  std::uint64_t posted_ = 0;
  std::optional<NodeMeasurement> measurement_;
  std::vector<bool> used_cores_;  ///< the posting node's cores that have posted since Start

  /// With receives kept posted at the peer, its CQs must hold every one of them: closing the pair
  /// flushes those still posted, each with a completion.
  static PostingConfig Prepared(PostingConfig c) {
    if (c.peer_receive_bytes > 0) {
      const std::size_t receives = std::max<std::size_t>(c.qps, 1) * c.pair.receive_queue_depth;
      c.pair.cq_depth = static_cast<ULONG>(
          std::min<std::size_t>(std::max<std::size_t>(c.pair.cq_depth, receives), c.pair.fabric.profile.max_cq_depth));
    }
    return c;
  }

  void Start() {
    started_ = true;
    Node& a = *pair_.a().node;
    measurement_.emplace(a, *pair_.b().node, std::max(fabric().Now(), a.CoreClock(a.CurrentCore())));
    used_cores_.assign(a.CoreCount(), false);
  }

  /// Threaded: reaps until `done` holds, yielding to the engine's thread; a watchdog (not a
  /// measurement) turns a hang into an error.
  template <typename Done>
  void AwaitCompleted(Node& a, Done done) {
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

  std::uint64_t Completed(Node& a) const {
    return a.Counters().requests_completed - measurement_->PosterBefore().requests_completed;
  }

  void PostPeerReceive(std::size_t q) {
    const NDK_SGE sge = receive_buffer_->Sge(0, config_.peer_receive_bytes);
    NDK_QP* qp = qb_[q];
    // Each peer QP's receives are re-posted from a core of its own, as a server spreads its
    // connections over its cores: the peer's posting cost does not pile up on one core.
    const ScopedCore on(static_cast<std::uint32_t>(q));
    // The receive's context names its QP, so its completion says which queue to refill.
    const NTSTATUS s = qp->Dispatch->NdkReceive(qp, reinterpret_cast<void*>(q + 1), &sge, 1);
    if (s != STATUS_SUCCESS) throw HarnessError("PostingRun: NdkReceive on the peer", s);
  }

  void Reap() {
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

};

/// Two nodes of a fabric in a kernel environment, for a benchmark of a kernel-mode consumer
/// (docs/benchmarking.md, "Kernel drivers"): load its drivers with environment().LoadDriver on
/// poster() and peer(), bring them to where the measured work begins, then Measure it.
class KernelPostingRun {
 public:
  /// Nodes "a" and "b" on a fabric made with `fabric`, in an environment made with `environment`.
  explicit KernelPostingRun(FabricConfig fabric = {}, kernel::EnvironmentConfig environment = {})
      : fabric_(std::move(fabric)),
        poster_(fabric_.AddNode({"a", {"192.0.2.1", "2001:db8::1"}})),
        peer_(fabric_.AddNode({"b", {"192.0.2.2", "2001:db8::2"}})),
        environment_(fabric_, environment) {}

  Fabric& fabric() { return fabric_; }  ///< the fabric of both nodes
  Node& poster() { return poster_; }  ///< "a", 192.0.2.1: the node whose posting is measured
  Node& peer() { return peer_; }      ///< "b", 192.0.2.2
  kernel::Environment& environment() { return environment_; }  ///< the kernel environment the drivers run in

  /// Runs the environment until `done` holds, and reports that stretch per `operations`. Its wall
  /// time is the whole stretch's: the environment runs the drivers and the fabric together.
  PostingReport Measure(std::uint64_t operations, const std::function<bool()>& done) {
    const NodeMeasurement measurement(poster_, peer_, environment_.Now());
    const auto t0 = std::chrono::steady_clock::now();
    environment_.RunUntil(done);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return measurement.Finish(environment_.Now(), operations, wall);
  }

 private:
  Fabric fabric_;
  Node& poster_;
  Node& peer_;
  kernel::Environment environment_;
};

/// PostingRun inside a Google Benchmark: Run() is the benchmark's loop, and the figures per
/// operation become the benchmark's counters (docs/benchmarking.md lists them).
class PostingBenchmark : public PostingRun {
 public:
  /// A PostingRun made with `config`, measured for the benchmark whose state is `state`.
  explicit PostingBenchmark(benchmark::State& state, PostingConfig config = {})
      : PostingRun(std::move(config)), state_(state) {}

  /// The benchmark loop: each iteration calls `post`, which posts `operations` send-queue
  /// requests. Only `post` is timed (register the benchmark with ->UseManualTime() so the Time
  /// column is that time; the counter wall_ns is that time per operation either way).
  /// A failure (an error completion, a hang, operations that do not match what the NIC completed)
  /// ends the benchmark with Google Benchmark's error report (SkipWithError), not the program.
  template <typename Post>
  void Run(std::uint64_t operations, Post&& post) {
    try {
      double wall = 0;
      for ([[maybe_unused]] auto _ : state_) {
        BeforeCall(operations);
        const auto t0 = std::chrono::steady_clock::now();
        post();
        const auto t1 = std::chrono::steady_clock::now();
        const double seconds = std::chrono::duration<double>(t1 - t0).count();
        state_.SetIterationTime(seconds);
        wall += seconds;
        AfterCall(operations);
      }
      Publish(Finish(wall));
    } catch (const std::exception& e) {
      state_.SkipWithError(e.what());
    }
  }

  /// Sets the benchmark's counters and label from a report.
  void Publish(const PostingReport& r) { Publish(state_, r); }
  /// The same for any benchmark, e.g. one that measures a kernel-environment driver with its own
  /// NodeMeasurement.
  static void Publish(benchmark::State& state, const PostingReport& r) {
    auto& c = state.counters;
    const auto ops = static_cast<double>(r.operations);
    c["wall_ns"] = ops == 0 ? 0 : r.wall_seconds * 1e9 / ops;
    c["host_ns"] = ops == 0 ? 0 : static_cast<double>(r.host.count()) / 1e3 / ops;
    c["sim_ns"] = ops == 0 ? 0 : static_cast<double>(r.simulated.count()) / 1e3 / ops;
    c["sim_Mops"] = r.SimulatedMops();
    c["doorbells"] = r.PerOp(r.poster.doorbells);
    c["mmio_B"] = r.PerOp(r.poster.mmio_write_bytes);
    c["wqe_reads"] = r.PerOp(r.poster.wqe_fetch_reads);
    c["payload_B"] = r.PerOp(r.poster.payload_read_bytes + r.poster.payload_write_bytes + r.peer.payload_read_bytes +
                             r.peer.payload_write_bytes);
    c["cqes"] = r.PerOp(r.poster.cqes_written + r.peer.cqes_written);
    c["pcie_dn_B"] = r.PerOp(r.poster.pcie_to_nic_bytes);
    c["pcie_up_B"] = r.PerOp(r.poster.pcie_to_host_bytes);
    c["packets"] = r.PerOp(r.poster.packets_sent + r.peer.packets_sent);
    c["ctx_miss"] = r.PerOp(r.poster.qp_context_misses + r.peer.qp_context_misses);
    c["tpt_miss"] = r.PerOp(r.poster.mpt_misses + r.poster.mtt_misses + r.peer.mpt_misses + r.peer.mtt_misses);
    state.SetItemsProcessed(static_cast<std::int64_t>(r.operations));
    state.SetLabel("bound: " + r.Bound());
  }

 private:
  benchmark::State& state_;
};

/// Prints the benchmarks as the console reporter does, then compares each benchmark of a family
/// (one function, several arguments) with the family's first: the counters that changed, the
/// simulated rate, and what bounded it before and after.
class PostingComparisonReporter : public benchmark::ConsoleReporter {
 public:
  /// Keeps the runs (Record), then reports them as the console reporter does.
  void ReportRuns(const std::vector<Run>& runs) override {
    Record(runs);
    ConsoleReporter::ReportRuns(runs);
  }
  /// Keeps the runs to compare (those that measured something).
  void Record(const std::vector<Run>& runs) {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && !r.error_occurred) runs_.push_back(r);
    }
  }
  /// Ends the console report, then prints the comparisons.
  void Finalize() override {
    ConsoleReporter::Finalize();
    PrintComparisons(GetOutputStream());
  }

  /// Writes to `out`, for each benchmark of a family after its first, what changed from the first.
  void PrintComparisons(std::ostream& out) const {
    std::map<std::string, const Run*> first;
    for (const Run& r : runs_) {
      auto [it, inserted] = first.try_emplace(r.run_name.function_name, &r);
      if (inserted) continue;
      const Run& base = *it->second;
      out << fmt::format("\n{} -> {}\n", base.benchmark_name(), r.benchmark_name());
      const auto line = [&](std::string_view counter, std::string_view shown) {
        const auto was = base.counters.find(std::string(counter));
        const auto is = r.counters.find(std::string(counter));
        if (was == base.counters.end() || is == r.counters.end()) return;
        const double x = was->second.value;
        const double y = is->second.value;
        if (std::abs(y - x) <= 0.005 * std::max(std::abs(x), std::abs(y))) return;  // unchanged
        out << fmt::format("  {:<18} {:>10.3f} -> {:.3f}\n", shown, x, y);
      };
      for (const auto& [counter, shown] : kShown) line(counter, shown);
      for (const auto& entry : r.counters) {  // the benchmark's own counters
        const std::string& counter = entry.first;
        const bool known = std::any_of(std::begin(kShown), std::end(kShown),
                                       [&](const auto& k) { return k.first == counter; });
        if (!known && counter != "items_per_second" && counter != "bytes_per_second") line(counter, counter);
      }
      out << fmt::format("  {:<18} {} -> {}\n", "bound by", Strip(base.report_label), Strip(r.report_label));
    }
  }

 private:
  std::vector<Run> runs_;
  /// PostingBenchmark's counters, in the order a comparison shows them, with their units.
  static constexpr std::pair<std::string_view, std::string_view> kShown[] = {
      {"sim_Mops", "sim Mops/s"},      {"sim_ns", "sim ns/op"},         {"host_ns", "host ns/op"},
      {"wall_ns", "wall ns/op"},       {"doorbells", "doorbells/op"},   {"mmio_B", "MMIO B/op"},
      {"wqe_reads", "WQE reads/op"},   {"payload_B", "payload B/op"},   {"cqes", "CQEs/op"},
      {"pcie_dn_B", "PCIe down B/op"}, {"pcie_up_B", "PCIe up B/op"},   {"packets", "packets/op"},
      {"ctx_miss", "ctx misses/op"},   {"tpt_miss", "TPT misses/op"},
  };
  static std::string Strip(const std::string& label) {
    const std::string prefix = "bound: ";
    return label.rfind(prefix, 0) == 0 ? label.substr(prefix.size()) : label;
  }
};

/// Runs the benchmarks registered in the program with PostingComparisonReporter (or, with a
/// --benchmark_format other than console, as BENCHMARK_MAIN does).
inline int RunPostingBenchmarks(int argc, char** argv) {
  bool console = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--benchmark_format=", 0) == 0 && arg != "--benchmark_format=console") console = false;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (console) {
    PostingComparisonReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace ndksim

/// main() for a posting-path benchmark program: the benchmarks, then the comparisons.
#define NDKSIM_BENCHMARK_MAIN()                                                        \
  int main(int argc, char** argv) { return ::ndksim::RunPostingBenchmarks(argc, argv); } \
  int main(int, char**)
