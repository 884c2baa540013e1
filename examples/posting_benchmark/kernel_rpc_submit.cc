// SPDX-License-Identifier: MIT
// A posting-path benchmark of a kernel-mode consumer (docs/benchmarking.md, "Kernel drivers"): the
// block-storage initiator of examples/kernel_rpc, unmodified, whose submit path posts a
// fast-register of the request's buffer (DEFER) and the request's send in one chain, under a spin
// lock, from system threads of the kernel environment. The target answers each WRITE with an RDMA
// READ of the lent buffer and a send-and-invalidate.
//
//   ndksim-example-kernel-rpc-benchmark [--benchmark_min_time=0.2]
//
// One benchmark iteration is the whole workload: 2,000 WRITE requests. The kernel environment runs
// the drivers' threads and the fabric together, so the wall time here is the whole run's per
// request, not the submit path's alone; the simulated figures and the NIC's counters are per
// request, for the initiator's node and the target's.
#include <arpa/inet.h>

#include <cstdint>
#include <stdexcept>

#include <ndksim/benchmark.h>
#include <ndksim/kernel/environment.h>

#include "rpc_loader.h"

namespace {

constexpr std::uint32_t kWrites = 2000;

// args: queue depth (requests in flight), blocks per request (512 B each)
void BM_KernelRpcSubmit(benchmark::State& state) {
  const auto depth = static_cast<std::uint32_t>(state.range(0));
  const auto blocks = static_cast<std::uint32_t>(state.range(1));
  ndksim::PostingReport report;
  for ([[maybe_unused]] auto _ : state) {
    ndksim::KernelPostingRun run(ndksim::FabricConfig{.seed = 1});
    const RpcTargetConfig target_config{.ipv4 = inet_addr("192.0.2.2"), .port = 4420, .disk_blocks = kWrites * blocks,
                                        .receive_depth = depth, .invalidate_reads = 1};
    const RpcInitiatorConfig initiator_config{.ipv4 = inet_addr("192.0.2.1"), .target_ipv4 = target_config.ipv4,
                                              .port = 4420, .submitters = 2, .queue_depth = depth,
                                              .write_count = kWrites, .blocks_per_io = blocks, .echo_count = 0,
                                              .pattern_seed = 7};
    const RpcDrivers drivers =
        RpcLoadConnected(run.environment(), run.peer(), run.poster(), target_config, initiator_config);
    const RpcInitiatorResults& results = *drivers.results;
    // The measured stretch: from the connection to the last WRITE's completion.
    report = run.Measure(kWrites, [&] { return results.writes == kWrites || results.done != 0; });
    state.SetIterationTime(report.wall_seconds);
    if (results.writes != kWrites) throw std::runtime_error("a WRITE request failed");
    RpcUnload(run.environment(), drivers);  // the READs of the workload, then the teardown
  }
  ndksim::PostingBenchmark::Publish(state, report);
}
BENCHMARK(BM_KernelRpcSubmit)
    ->ArgNames({"depth", "blocks"})
    ->Args({1, 1})   // one request at a time: each waits for the last one's answer
    ->Args({16, 1})  // 16 in flight
    ->Args({16, 8})  // 16 in flight, 4 KiB each
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

NDKSIM_BENCHMARK_MAIN();
