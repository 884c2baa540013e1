// The simulator's front door: a fabric of simulated nodes, each with one RNIC, joined by links,
// and the clock that drives them. Consumers open NDK_ADAPTERs on nodes and run simulated time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ndkpi.h"
#include "ndksim/counters.h"
#include "ndksim/faults.h"
#include "ndksim/profile.h"
#include "ndksim/time.h"
#include "ndksim/trace.h"

namespace ndksim {

namespace hw {
class Nic;
}

// How the provider completes a call that may complete asynchronously (ref §3.0, §4.5): every
// create, request (listen, connect failure, complete-connect, register/deregister MR, resize CQ,
// ...) and close that the consumer gave a completion callback. Calls without a callback always
// complete inline. Connect, accept and disconnect pend by nature in every mode.
enum class AsyncCompletion : std::uint8_t {
  kInline,        // complete inline whenever the call allows it (the default)
  kPending,       // return STATUS_PENDING and call back from a DPC, after the call returned
  kPendingInCall, // call back from inside the call, then return STATUS_PENDING (ref §4.4 example)
  kMixed,         // per call, a seeded choice between kInline and kPending
};

struct FabricConfig {
  std::uint64_t seed = 1;  // every random choice of the model derives from it
  HardwareProfile profile = profiles::kConnectX100GbeRoce;
  AsyncCompletion async_completion = AsyncCompletion::kInline;
};

struct NodeConfig {
  std::string name;
  // IPv4 ("192.0.2.1") or IPv6 ("2001:db8::1") addresses owned by the node's NIC.
  std::vector<std::string> addresses;
};

// Counters of one node's NIC.
using NodeCounters = NicCounters;

class Node {
 public:
  std::string_view Name() const;
  // The NDIS open path (OPEN_NDK_ADAPTER_HANDLER): NDIS_STATUS_BAD_VERSION unless the major
  // version is 1 or 2 and the minor does not exceed what the provider implements.
  NTSTATUS OpenAdapter(NDK_VERSION version, NDK_ADAPTER** adapter);
  // The NDIS close path (CLOSE_NDK_ADAPTER_HANDLER). Blocking: every callback of every descendant
  // object has returned when it returns.
  void CloseAdapter(NDK_ADAPTER* adapter);
  NodeCounters Counters() const;
  // Counters of one QP of this node (doorbells, MMIO, DMA, packets, fence stalls, completions);
  // nullopt for a QP of another node or one already closed.
  std::optional<QpCounters> CountersOf(NDK_QP* qp) const;
  // The NIC's number for a QP of this node (what FaultMatch::qpn names); nullopt for a QP of
  // another node.
  std::optional<std::uint32_t> QpNumber(NDK_QP* qp) const;
  hw::Nic& Nic();

  struct Impl;
  explicit Node(std::unique_ptr<Impl> impl);
  ~Node();

 private:
  std::unique_ptr<Impl> impl_;
};

class Fabric {
 public:
  // Throws ConfigurationError if the profile is invalid.
  explicit Fabric(FabricConfig config = {});
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // Adds a node. Nodes are joined back to back when there are two, through one switch otherwise.
  // Throws ConfigurationError for an unparsable or duplicate address.
  Node& AddNode(const NodeConfig& config);
  Node& GetNode(std::size_t index);
  std::size_t NodeCount() const;

  TimePoint Now() const;
  // Runs until nothing is left to do. Returns the number of events run.
  std::uint64_t RunUntilIdle();
  // Runs everything scheduled up to Now() + d, then sets the clock to Now() + d.
  std::uint64_t RunFor(Duration d);
  // Runs until `done()` holds (checked after every event), nothing is left to do, or `limit` of
  // simulated time has passed. Returns whether `done()` held.
  bool RunUntil(const std::function<bool()>& done, Duration limit = Milliseconds(1000));

  std::uint64_t Seed() const;
  const HardwareProfile& Profile() const;
  Tracer& Trace();

  // Fault injection (include/ndksim/faults.h). A rule acts from the moment it is added; rules
  // are consulted in the order they were added. Throws ConfigurationError, naming every problem,
  // for an invalid rule.
  std::uint32_t AddFault(const FaultRule& rule);
  // Stops the rule; its statistics stay readable. Throws ConfigurationError for an unknown id.
  void RemoveFault(std::uint32_t id);
  // Throws ConfigurationError for an unknown id.
  FaultStats FaultStatsOf(std::uint32_t id) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ndksim
