// SPDX-License-Identifier: MIT
// Runs the kernel RPC example (examples/kernel_rpc) on a two-node fabric: the target driver loads
// and listens, the initiator driver loads, connects and runs its workload, both unload, and the
// outcome is everything the checks need. Shared by the suite and by the planted-race executable,
// which link different builds of the same drivers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"
#include "rpc.h"

namespace ndksim::kernel_rpc {

inline constexpr const char* kInitiatorAddress = "192.0.2.1";
inline constexpr const char* kTargetAddress = "192.0.2.2";

struct Scenario {
  FabricConfig fabric{};
  kernel::EnvironmentConfig environment{};
  RpcTargetConfig target{};
  RpcInitiatorConfig initiator{};
  // Called once the initiator is connected, before its workload has finished (fault rules that
  // must act on the data path go in here).
  std::function<void(Fabric&, Node& initiator, Node& target)> once_connected;
  // Called once the initiator has completed `after_requests` requests.
  std::function<void(Fabric&, Node& initiator, Node& target)> mid_run;
  std::uint64_t after_requests = 0;
};

// A workload that writes, reads back and echoes, with defaults both drivers accept.
Scenario DefaultScenario();

struct Outcome {
  RpcInitiatorResults initiator{};
  RpcTargetResults target{};
  std::vector<std::uint8_t> disk;  // the target's disk when the initiator was done
  NodeCounters initiator_counters{};
  NodeCounters target_counters{};
  std::map<std::string, kernel::PoolTagUsage> pool;  // after both drivers unloaded
  TimePoint finished{};                              // simulated time the initiator was done
  std::string interleaving;
  std::uint64_t preemption_steps = 0;  // preemption points reached (what PCT's pct_steps should cover)
};

// Loads, runs and unloads both drivers. The environment's errors (VerifierError, DeadlockError)
// and a driver that fails to load (std::runtime_error) propagate.
Outcome RunScenario(const Scenario& scenario);

// The disk contents the initiator's WRITEs leave: the pattern over the blocks written, zero after.
std::vector<std::uint8_t> ExpectedDisk(const Scenario& scenario);

}  // namespace ndksim::kernel_rpc
