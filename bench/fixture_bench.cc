// SPDX-License-Identifier: MIT
// What one consumer unit test costs: the shipped fixture's life (ndksim::testing::ConnectedQpPairTest
// makes a QpPair in SetUp and destroys it in TearDown) around ten signaled 64-B writes, each
// collected from the CQ, with the fixture's defaults on the functional profile. One iteration is one
// test. Counters:
//   - items_per_second: tests per wall-clock second on one core;
//   - page_faults_per_test: minor page faults per test (getrusage), the cost of a heap that is
//     handed back to the system at teardown and faulted in again by the next test.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdint>

#include "ndksim/harness.h"

namespace ndksim {
namespace {

long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

void BM_Fixture_TenWritesTest(benchmark::State& state) {
  QpPairConfig config;  // ConnectedQpPairTest::Config()'s: the defaults on the functional profile
  config.fabric.profile = profiles::kFunctional;
  const long faults_before = MinorFaults();
  for ([[maybe_unused]] auto _ : state) {
    QpPair pair(config);  // SetUp
    auto src = pair.a().Register(4096);
    auto dst = pair.b().Register(4096);
    for (int i = 0; i < 10; ++i) {
      const NDK_SGE sge = src->Sge(64 * static_cast<std::size_t>(i), 64);
      const NTSTATUS s = pair.a().Write(nullptr, {&sge, 1}, dst->Address(64 * static_cast<std::size_t>(i)),
                                        dst->RemoteToken());
      if (s != STATUS_SUCCESS) state.SkipWithError("a write was refused");
    }
    if (pair.Collect(pair.a().initiator_cq, 10).size() != 10) state.SkipWithError("a write did not complete");
    benchmark::DoNotOptimize(dst->Data()[64 * 9]);
  }  // TearDown: the pair and its buffers go
  state.SetItemsProcessed(state.iterations());
  state.counters["page_faults_per_test"] =
      static_cast<double>(MinorFaults() - faults_before) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_Fixture_TenWritesTest)->UseRealTime();

}  // namespace
}  // namespace ndksim
