// SPDX-License-Identifier: MIT
/// @file
/// The simulator's front door: a fabric of simulated nodes, each with one RNIC, joined by links,
/// and the clock that drives them. Consumers open NDK_ADAPTERs on nodes and run simulated time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ndkpi.h"
#include "ndksim/async_completion.h"
#include "ndksim/counters.h"
#include "ndksim/faults.h"
#include "ndksim/host_cpu.h"
#include "ndksim/profile.h"
#include "ndksim/time.h"
#include "ndksim/trace.h"

/// ndksim's public API: a fabric of simulated RNICs that NDK consumers open as adapters, and the
/// tools to test and measure those consumers on it.
namespace ndksim {

namespace sim {
struct NodeAccess;  // the simulator's own tests reach the NIC behind a node
}

/// Why Fabric::RunUntil stopped.
enum class RunStop : std::uint8_t {
  kDone,       ///< the predicate held
  kIdle,       ///< nothing was left to do, and the predicate did not hold
  kTimeLimit,  ///< the time limit passed, and the predicate did not hold
};
/// The name of `stop`: "done", "idle" or "time limit".
std::string_view Name(RunStop stop);

/// What Fabric::RunUntil returns: true (as a condition) exactly when the predicate held.
struct RunResult {
  RunStop stop = RunStop::kDone;                                     ///< why RunUntil stopped
  explicit operator bool() const { return stop == RunStop::kDone; }  ///< whether the predicate held
  bool operator==(const RunResult&) const = default;                 ///< results compare by `stop`
  bool operator==(RunStop s) const { return stop == s; }             ///< whether it stopped for `s`
};
std::ostream& operator<<(std::ostream& os, const RunResult& r);  ///< "done", "idle", "time limit"

/// How the engine's own thread runs (Fabric::Start).
struct EngineThreadConfig {
  /// 0 (the default): as fast as possible. Simulated time moves only with the work: when nothing
  /// is due now, the engine jumps to the next event, and when nothing is scheduled at all it waits
  /// for the next doorbell or control call without letting time pass.
  /// Greater than 0: paced. Simulated time follows the wall clock, `pace` wall-clock seconds to
  /// one simulated second (1: real time; 100: a hundred times slower than the modelled hardware),
  /// so retransmission and RNR timers keep a realistic relation to application threads that
  /// compute between posts. A doorbell is taken at the simulated time its wall-clock arrival
  /// maps to. If the engine falls behind, events run late in wall time, never out of order.
  double pace = 0;
  /// How long an idle engine spins, looking for doorbells and control calls, before it parks its
  /// thread (a parked engine costs no CPU; the next doorbell or call wakes it).
  std::chrono::microseconds spin{50};
  /// The CPU the engine's thread runs on, or -1 (the default): wherever the operating system puts
  /// it. A busy engine polls its doorbells and wants a core of its own; pinning keeps the
  /// scheduler from putting it on the core of an application thread that spins too. It must be a
  /// CPU the process may be scheduled on (Linux: online, and in its cpuset); otherwise Start
  /// throws ConfigurationError and the fabric stays stepped.
  int cpu = -1;
};

/// How Fabric::Stop ends the engine's thread.
enum class StopMode : std::uint8_t {
  kDrain,  ///< run until nothing is scheduled and no doorbell or control call is waiting
  kNow,    ///< stop between two events; what is scheduled stays scheduled (stepped runs resume it)
};

/// What the engine did (Fabric::ThreadStats): its thread since Start; in stepped mode, the doorbell
/// figures count from the fabric's creation (or the last Stop).
struct EngineThreadStats {
  std::uint64_t events = 0;           ///< events run
  std::uint64_t commands = 0;         ///< control calls run from the mailbox
  std::uint64_t doorbell_drains = 0;  ///< times it took doorbells from a node's inbox
  std::uint64_t inbox_visits = 0;     ///< times it looked into a node's inbox (only nodes that had
                                      ///< doorbells since the engine last idled are looked into)
  std::uint64_t parks = 0;            ///< times it parked its thread for want of work
};

/// What a Fabric is made with.
struct FabricConfig {
  std::uint64_t seed = 1;  ///< every random choice of the model derives from it
  HardwareProfile profile = profiles::kConnectX100GbeRoce;      ///< the RNIC every node has
  AsyncCompletion async_completion = AsyncCompletion::kInline;  ///< see AsyncCompletion
};

/// What Fabric::AddNode makes a node with.
struct NodeConfig {
  std::string name;  ///< Node::Name; empty: "node0", "node1", ... by the node's index
  /// IPv4 ("192.0.2.1") or IPv6 ("2001:db8::1") addresses owned by the node's NIC.
  std::vector<std::string> addresses;
};

/// Counters of one node's NIC.
using NodeCounters = NicCounters;

/// One simulated machine of a fabric: its RNIC, which consumers open as an NDK adapter, and its
/// host CPU. Made by Fabric::AddNode; the fabric owns it.
class Node {
 public:
  /// The node's name (NodeConfig::name).
  std::string_view Name() const;
  /// The node's position in Fabric::AddNode order: what FaultMatch::node and link_of name.
  std::uint32_t Index() const;
  /// The addresses the node was configured with, as given.
  const std::vector<std::string>& Addresses() const;
  /// A ready socket address for NdkListen/NdkConnect: the node's first configured address of
  /// `family` (AF_INET or AF_INET6) with `port`. Throws ConfigurationError if it has none.
  /// `length`, if set, receives the size to pass with it.
  SOCKADDR_INET SocketAddress(USHORT port, ADDRESS_FAMILY family = AF_INET, ULONG* length = nullptr) const;
  /// The NDIS open path (OPEN_NDK_ADAPTER_HANDLER): NDIS_STATUS_BAD_VERSION unless the major
  /// version is 1 or 2 and the minor does not exceed what the provider implements.
  NTSTATUS OpenAdapter(NDK_VERSION version, NDK_ADAPTER** adapter);
  /// The NDIS close path (CLOSE_NDK_ADAPTER_HANDLER). Blocking: every callback of every descendant
  /// object has returned when it returns.
  void CloseAdapter(NDK_ADAPTER* adapter);
  /// The counters of the node's RNIC so far (ndksim/counters.h).
  NodeCounters Counters() const;
  /// How long each shared resource of the node's RNIC has been taken so far (ndksim/counters.h).
  NicBusy Busy() const;
  /// Counters of one QP of this node (doorbells, MMIO, DMA, packets, fence stalls, completions);
  /// nullopt for a QP of another node or one already closed.
  std::optional<QpCounters> CountersOf(NDK_QP* qp) const;
  /// Counters of one CQ of this node (CQEs written and lost, overrun, notifications; depth);
  /// nullopt for a CQ of another node or one already closed.
  std::optional<CqCounters> CqCountersOf(NDK_CQ* cq) const;
  /// The NIC's number for a QP of this node (what FaultMatch::qpn names); nullopt for a QP of
  /// another node.
  std::optional<std::uint32_t> QpNumber(NDK_QP* qp) const;

  /// @name Host CPU

  /// The node's host CPU (docs/model.md, "The host CPU"): its number of cores, the calling thread's
  /// core here (ndksim/host_cpu.h: an unbound thread that asks is numbered as if it had posted),
  /// when a core is next free (its clock), how much time its posting and polling work has taken
  /// so far (interruptions that struck that work included), and how many interruptions (the
  /// profile's noise) held that work up, for how long in all. `core` is taken modulo CoreCount().
  ///@{
  std::uint32_t CoreCount() const;
  std::uint32_t CurrentCore() const;
  TimePoint CoreClock(std::uint32_t core) const;
  Duration CoreBusy(std::uint32_t core) const;
  std::uint64_t CoreInterruptions(std::uint32_t core) const;
  Duration CoreInterruptedTime(std::uint32_t core) const;
  ///@}

  struct Impl;
  /// Made by Fabric::AddNode, not by consumers.
  explicit Node(std::unique_ptr<Impl> impl);
  ~Node();

 private:
  friend struct sim::NodeAccess;
  friend class Fabric;
  std::optional<std::uint32_t> QpNumberNow(NDK_QP* qp) const;
  std::optional<QpCounters> CountersOfNow(NDK_QP* qp) const;
  std::optional<CqCounters> CqCountersOfNow(NDK_CQ* cq) const;
  std::unique_ptr<Impl> impl_;
};

/// The simulated fabric: its nodes, the links between them, and the clock and event loop that
/// drive them, stepped by the calls below or on a thread of its own (Start).
class Fabric {
 public:
  /// Throws ConfigurationError if the profile is invalid.
  explicit Fabric(FabricConfig config = {});
  /// Closes every adapter still open on every node, as CloseAdapter does: objects close, pending
  /// requests are cancelled, and consumer callbacks (request completions with STATUS_CANCELLED,
  /// disconnect events) may run from inside the destructor. Close your objects first, or keep
  /// what those callbacks touch alive until the fabric is gone.
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  /// Adds a node. Nodes are joined back to back when there are two, through one switch otherwise.
  /// Throws ConfigurationError for an unparsable or duplicate address.
  Node& AddNode(const NodeConfig& config);
  /// The node at `index` in AddNode order; throws std::out_of_range past the last.
  Node& GetNode(std::size_t index);
  /// How many nodes AddNode has added.
  std::size_t NodeCount() const;

  /// The current simulated time.
  TimePoint Now() const;
  /// Runs until nothing is left to do. Returns the number of events run.
  std::uint64_t RunUntilIdle();
  /// Runs everything scheduled up to Now() + d, then sets the clock to Now() + d.
  std::uint64_t RunFor(Duration d);
  /// Runs until `done()` holds (checked after every event), nothing is left to do, or `limit` of
  /// simulated time has passed, and says which (`if (fabric.RunUntil(...))` tests that it held).
  RunResult RunUntil(const std::function<bool()>& done, Duration limit = Milliseconds(1000));

  // ---- threaded mode ----
  /// Runs the engine on a thread of its own, the same event loop as the stepped calls. From then on
  /// application threads post and poll concurrently while the engine serves doorbells, control
  /// calls from any thread reach it through its mailbox, and every consumer callback runs on the
  /// engine's thread, one at a time. The stepped calls (RunUntilIdle, RunFor, RunUntil) and
  /// AddNode throw ConfigurationError until Stop. Not deterministic: threads interleave as the OS
  /// schedules them. Throws ConfigurationError if the engine already runs, if a trace or the
  /// request log is enabled (they are stepped-mode tools), or for an invalid config.
  void Start(const EngineThreadConfig& config = {});
  /// Ends the thread (kDrain: once the fabric is idle; kNow: between two events) and returns to
  /// stepped mode. Call it from an application thread, not from a consumer callback. A running
  /// fabric stops (kNow) before it is destroyed.
  void Stop(StopMode mode = StopMode::kDrain);
  /// Whether the engine runs on its own thread (between Start and Stop).
  bool Running() const;
  /// What the engine has done (EngineThreadStats).
  EngineThreadStats ThreadStats() const;

  /// The seed the fabric was made with (FabricConfig::seed).
  std::uint64_t Seed() const;
  /// The hardware profile every node's RNIC models (FabricConfig::profile).
  const HardwareProfile& Profile() const;
  /// The fabric's tracer: trace lines per hardware block and the per-request log (trace.h).
  Tracer& Trace();

  /// Fault injection (include/ndksim/faults.h). A rule acts from the moment it is added; rules
  /// are consulted in the order they were added. Throws ConfigurationError, naming every problem,
  /// for an invalid rule.
  std::uint32_t AddFault(const FaultRule& rule);
  /// Stops the rule; its statistics stay readable. Throws ConfigurationError for an unknown id.
  void RemoveFault(std::uint32_t id);
  /// Throws ConfigurationError for an unknown id.
  FaultStats FaultStatsOf(std::uint32_t id) const;
  /// Every rule added so far, one line each with its id, the rule and its statistics, e.g.
  /// "fault 0: FaultRule{wire: drop, node 0, request packets, count 1}: fired 1 of 1 considered".
  /// ConnectedQpPairTest prints it when a test fails.
  std::string DescribeFaults() const;

  struct Impl;

 private:
  // The calls above, run serialised with the engine.
  std::uint32_t AddFaultNow(const FaultRule& rule);
  void RemoveFaultNow(std::uint32_t id);
  FaultStats FaultStatsOfNow(std::uint32_t id) const;
  std::string DescribeFaultsNow() const;

  std::unique_ptr<Impl> impl_;
};

}  // namespace ndksim
