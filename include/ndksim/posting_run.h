// SPDX-License-Identifier: MIT
/// @file
/// The measurement behind posting-path benchmarks, without Google Benchmark: a connected pair to
/// run a consumer's posting routine on (PostingRun), the NIC's and the hosts' view of a stretch of
/// simulated time (NodeMeasurement, PostingReport), and two nodes in a kernel environment for a
/// kernel-mode consumer (KernelPostingRun). ndksim/benchmark.h puts them in Google Benchmark's
/// loop (docs/benchmarking.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ndksim/counters.h"
#include "ndksim/harness.h"
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
  std::string Bound() const;
};

/// What two nodes did over a stretch of simulated time: their NICs' counters, the poster's host
/// cores and every shared resource's busy time, from a snapshot taken at the start. PostingRun
/// takes one; code that drives the fabric itself (a kernel-environment driver, a workload of its
/// own) takes its own and publishes the report with PostingBenchmark::Publish.
class NodeMeasurement {
 public:
  /// Takes the snapshot; the stretch begins at `start` (the fabric's clock then, or the posting
  /// core's clock if that is later).
  NodeMeasurement(Node& poster, Node& peer, TimePoint start);

  /// The poster's counters at the snapshot.
  const NicCounters& PosterBefore() const { return poster_before_; }

  /// The report of the stretch from the start to `end` (read it with the fabric idle, or at least
  /// with the work of `operations` done), per `operations`; `wall_seconds` as the caller measured.
  PostingReport Finish(TimePoint end, std::uint64_t operations, double wall_seconds = 0) const;

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

  static NicCounters Delta(const NicCounters& now, const NicCounters& before);

  static void AddResource(PostingReport& r, std::string name, Duration busy, std::uint32_t servers);

  static void AddNic(PostingReport& r, Node& node, const NicBusy& before, const std::string& direction);
};

/// A connected pair (or `qps` pairs of QPs) to measure a posting routine on.
class PostingRun {
 public:
  /// Makes the pair and its QPs, keeps the peer's receives posted if asked, and starts the engine's
  /// thread if threaded; throws HarnessError if a step fails.
  explicit PostingRun(PostingConfig config = {});
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
  void BeforeCall(std::uint64_t operations);
  /// After the call: the simulation catches up with the posting threads' clocks (the earliest of
  /// the cores that have posted, so calls from several cores overlap as they would on a host),
  /// then completions are reaped and the peer's receives re-posted.
  void AfterCall(std::uint64_t operations);
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
  PostingReport Finish(double wall_seconds = 0);

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
  static PostingConfig Prepared(PostingConfig c);

  void Start();

  /// Threaded: reaps until `done` holds, yielding to the engine's thread; a watchdog (not a
  /// measurement) turns a hang into an error.
  template <typename Done>
  void AwaitCompleted(Node& a, Done done);

  std::uint64_t Completed(Node& a) const {
    return a.Counters().requests_completed - measurement_->PosterBefore().requests_completed;
  }

  void PostPeerReceive(std::size_t q);

  void Reap();
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
  PostingReport Measure(std::uint64_t operations, const std::function<bool()>& done);

 private:
  Fabric fabric_;
  Node& poster_;
  Node& peer_;
  kernel::Environment environment_;
};

}  // namespace ndksim
