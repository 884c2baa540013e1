// SPDX-License-Identifier: MIT
// For C++ programs that run the kernel RPC example (benchmarks, examples): loads its two drivers
// into a kernel environment, connected, and unloads them again.
#ifndef NDKSIM_EXAMPLES_KERNEL_RPC_RPC_LOADER_H_
#define NDKSIM_EXAMPLES_KERNEL_RPC_RPC_LOADER_H_

#include <ndksim/kernel/environment.h>

#include "rpc.h"

struct RpcDrivers {
  _DRIVER_OBJECT* target = nullptr;
  _DRIVER_OBJECT* initiator = nullptr;
  const RpcInitiatorResults* results = nullptr;  // the initiator's, while it is loaded
};

// Configures and loads the target on `target_node`, then the initiator on `initiator_node`, and runs
// the environment until the initiator has connected (or given up: results->done).
inline RpcDrivers RpcLoadConnected(ndksim::kernel::Environment& env, ndksim::Node& target_node,
                                   ndksim::Node& initiator_node, const RpcTargetConfig& target,
                                   const RpcInitiatorConfig& initiator) {
  RpcTargetConfigure(&target);
  RpcInitiatorConfigure(&initiator);
  RpcDrivers d;
  d.results = RpcInitiatorGetResults();
  d.target = env.LoadDriver(target_node, "rpc_target", &RpcTargetDriverEntry);
  env.RunUntil([&] { return env.DriverStatus(d.target) != STATUS_PENDING; });
  d.initiator = env.LoadDriver(initiator_node, "rpc_initiator", &RpcInitiatorDriverEntry);
  env.RunUntil([&] { return env.DriverStatus(d.initiator) != STATUS_PENDING; });
  env.RunUntil([&] { return d.results->connected != 0 || d.results->done != 0; });
  return d;
}

// Lets the initiator finish its workload and close, then unloads both drivers.
inline void RpcUnload(ndksim::kernel::Environment& env, const RpcDrivers& d) {
  env.RunUntil([&] { return d.results->done != 0; });
  env.UnloadDriver(d.initiator);
  env.UnloadDriver(d.target);
  env.Run();
}

#endif  // NDKSIM_EXAMPLES_KERNEL_RPC_RPC_LOADER_H_
