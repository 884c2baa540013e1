// SPDX-License-Identifier: MIT
// Simulated message rate of posting patterns on the default (ConnectX-class) profile: what the
// model says a real RNIC would sustain, not what this CPU does. Each benchmark streams 8-B writes
// and reports `sim_Mpps` (simulated messages per simulated microsecond) next to the wall-clock
// cost of simulating them. Kalia et al. (USENIX ATC 2016) measured the directions on real NICs:
// doorbell batching helps when doorbells and per-WQE processing are the bottleneck, inlining when
// DMA reads are. Each QP posts from a core of its own, so the NIC, not one posting core, is what
// the patterns compare (the posting core's own bound is in docs/model.md, "The host CPU").
#include <benchmark/benchmark.h>

#include <memory>

#include "ndksim/workload.h"

namespace ndksim {
namespace {

constexpr std::size_t kMessagesPerQp = 2000;

// args: QPs, post list (requests per doorbell), inline (0/1)
void SimulatedWriteRate(benchmark::State& state) {
  WorkloadConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  c.op = Operation::kWrite;
  c.bytes = 8;
  c.qps = static_cast<int>(state.range(0));
  c.cores = c.qps;
  c.post_list = static_cast<std::size_t>(state.range(1));
  c.signal_every = 16;
  c.window = 256;
  c.inline_size = state.range(2) != 0 ? 8 : 0;
  const std::size_t messages = kMessagesPerQp * static_cast<std::size_t>(c.qps);
  double mpps = 0;
  std::unique_ptr<Workload> w;
  for ([[maybe_unused]] auto _ : state) {
    state.PauseTiming();  // closing the last run's QPs and connecting new ones is not part of the rate
    w.reset();
    w = std::make_unique<Workload>(c);
    state.ResumeTiming();
    mpps = Workload::Mpps(messages, w->Stream(messages));
  }
  state.counters["sim_Mpps"] = mpps;
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * messages));
}

BENCHMARK(SimulatedWriteRate)
    ->ArgNames({"qps", "post_list", "inline"})
    ->Args({1, 1, 1})    // a doorbell per request
    ->Args({1, 16, 1})   // doorbell batching: per-WQE processing is the bottleneck
    ->Args({16, 16, 0})  // 16 QPs, payload gathered by DMA: read tags are the bottleneck
    ->Args({16, 16, 1})  // 16 QPs, inline: no payload reads
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ndksim
