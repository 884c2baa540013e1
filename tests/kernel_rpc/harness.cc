// SPDX-License-Identifier: MIT
#include "kernel_rpc/harness.h"

#include <arpa/inet.h>

#include <stdexcept>

namespace ndksim::kernel_rpc {

Scenario DefaultScenario() {
  Scenario s;
  s.fabric.seed = 1;
  s.target.ipv4 = inet_addr(kTargetAddress);
  s.target.port = 4420;
  s.target.disk_blocks = 64;
  s.target.receive_depth = RPC_MAX_QUEUE_DEPTH;
  s.target.invalidate_reads = 1;
  s.initiator.ipv4 = inet_addr(kInitiatorAddress);
  s.initiator.target_ipv4 = s.target.ipv4;
  s.initiator.port = s.target.port;
  s.initiator.submitters = 2;
  s.initiator.queue_depth = 4;
  s.initiator.write_count = 16;
  // Three blocks a request: every third range crosses a page of the disk, so the target's SGE
  // lists have two entries there.
  s.initiator.blocks_per_io = 3;
  s.initiator.echo_count = 8;
  s.initiator.pattern_seed = 0x5EED;
  return s;
}

Outcome RunScenario(const Scenario& scenario) {
  Fabric fabric(scenario.fabric);
  Node& initiator_node = fabric.AddNode({"initiator", {kInitiatorAddress}});
  Node& target_node = fabric.AddNode({"target", {kTargetAddress}});
  kernel::Environment env(fabric, scenario.environment);
  RpcTargetConfigure(&scenario.target);
  RpcInitiatorConfigure(&scenario.initiator);
  const RpcInitiatorResults& results = *RpcInitiatorGetResults();

  // The target listens before the initiator connects.
  _DRIVER_OBJECT* target = env.LoadDriver(target_node, "rpc_target", &RpcTargetDriverEntry);
  env.RunUntil([&] { return env.DriverStatus(target) != 0x103; });
  if (env.DriverStatus(target) != 0) throw std::runtime_error("the target driver did not load");
  _DRIVER_OBJECT* initiator = env.LoadDriver(initiator_node, "rpc_initiator", &RpcInitiatorDriverEntry);
  // Its DriverEntry resets the results, which a previous run left behind.
  env.RunUntil([&] { return env.DriverStatus(initiator) != 0x103; });
  if (env.DriverStatus(initiator) != 0) throw std::runtime_error("the initiator driver did not load");
  if (scenario.once_connected) {
    env.RunUntil([&] { return results.connected != 0 || results.done != 0; });
    scenario.once_connected(fabric, initiator_node, target_node);
  }
  if (scenario.mid_run) {
    env.RunUntil([&] { return results.completed >= scenario.after_requests || results.done != 0; });
    scenario.mid_run(fabric, initiator_node, target_node);
  }
  env.RunUntil([&] { return results.done != 0; });

  Outcome outcome;
  outcome.finished = env.Now();
  std::size_t bytes = 0;
  const std::uint8_t* disk = RpcTargetDisk(&bytes);
  outcome.disk.assign(disk, disk + bytes);
  env.UnloadDriver(initiator);
  env.UnloadDriver(target);
  env.Run();
  outcome.initiator = results;
  outcome.target = *RpcTargetGetResults();
  outcome.initiator_counters = initiator_node.Counters();
  outcome.target_counters = target_node.Counters();
  outcome.pool = env.PoolUsage();
  outcome.interleaving = env.Interleaving();
  outcome.preemption_steps = env.PreemptionSteps();
  return outcome;
}

std::vector<std::uint8_t> ExpectedDisk(const Scenario& scenario) {
  std::vector<std::uint8_t> disk(std::size_t{scenario.target.disk_blocks} * RPC_BLOCK_SIZE, 0);
  const std::uint64_t blocks = std::uint64_t{scenario.initiator.write_count} * scenario.initiator.blocks_per_io;
  for (std::uint64_t lba = 0; lba < blocks; ++lba) {
    for (std::uint32_t at = 0; at < RPC_BLOCK_SIZE; ++at) {
      disk[lba * RPC_BLOCK_SIZE + at] = RpcPatternByte(scenario.initiator.pattern_seed, lba, at);
    }
  }
  return disk;
}

}  // namespace ndksim::kernel_rpc
