// SPDX-License-Identifier: MIT
// End to end, stepped: what a consumer's test loop gets out of the simulator per wall-clock second.
// One QP, 64-B writes: post a window of kDepth (a doorbell every 16, one request in 64 signaled),
// run the fabric until idle, reap the completions. Counters per batch:
//   - items_per_second: writes simulated per wall-clock second;
//   - events_per_op: engine events per write;
//   - sim_ns_per_op: simulated time per write, from the batch's first post to the fabric's idle.
// range(0) selects the profile: 0 functional (the hardware takes no simulated time), 1 the default.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "bench_config.h"
#include "ndksim/harness.h"

namespace ndksim {
namespace {

using bench::kDepth;

void BM_EndToEnd_Write64(benchmark::State& state) {
  QpPairConfig config = bench::BenchConfig();
  config.fabric.profile = state.range(0) == 0 ? profiles::kFunctional : profiles::kConnectX100GbeRoce;
  QpPair pair(config);
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE sge = src->Sge(0, 64);
  NDK_QP* qp = pair.a().qp;
  NDK_CQ* cq = pair.a().initiator_cq;
  constexpr ULONG kChain = 16;
  constexpr ULONG kSignalEvery = 64;
  pair.fabric().RunUntilIdle();  // whatever connecting left scheduled is not part of the figure
  std::uint64_t events = 0;
  Duration simulated{};
  for ([[maybe_unused]] auto _ : state) {
    const TimePoint start = pair.fabric().Now();
    for (ULONG i = 0; i < kDepth; ++i) {
      ULONG flags = 0;
      if ((i + 1) % kChain != 0) flags |= NDK_OP_FLAG_DEFER;
      if (i % kSignalEvery != kSignalEvery - 1) flags |= NDK_OP_FLAG_SILENT_SUCCESS;
      const NTSTATUS s = qp->Dispatch->NdkWrite(qp, nullptr, &sge, 1, dst->Address(), dst->RemoteToken(), flags);
      benchmark::DoNotOptimize(s);
    }
    events += pair.fabric().RunUntilIdle();
    simulated += pair.fabric().Now() - start;
    NDK_RESULT r[16];
    for (ULONG got = 0; got < kDepth / kSignalEvery;) {
      const ULONG n = cq->Dispatch->NdkGetCqResults(cq, r, 16);
      if (n == 0) state.SkipWithError("a signaled write did not complete");
      got += n;
      if (n == 0) break;
    }
  }
  const auto ops = static_cast<double>(state.iterations()) * kDepth;
  state.SetItemsProcessed(static_cast<std::int64_t>(ops));
  state.counters["events_per_op"] = static_cast<double>(events) / ops;
  state.counters["sim_ns_per_op"] = static_cast<double>(simulated.count()) / 1000.0 / ops;
}
BENCHMARK(BM_EndToEnd_Write64)->ArgName("default_profile")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace ndksim
