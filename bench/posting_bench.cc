// SPDX-License-Identifier: MIT
// Wall-clock cost of the provider's posting and polling paths (what a consumer's CPU pays per
// call), measured on a connected pair with the functional profile. Simulated time is not measured
// here. The simulation that drains the queues between batches runs with the timer paused.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_config.h"
#include "ndksim/harness.h"

namespace ndksim {
namespace {

using bench::BenchConfig;
using bench::kDepth;

void DrainAll(QpPair& pair, NDK_CQ* cq) {
  pair.fabric().RunUntilIdle();
  NDK_RESULT r[64];
  while (cq->Dispatch->NdkGetCqResults(cq, r, 64) > 0) {
  }
}

// Posts kDepth NdkWrites of 8 B per iteration; every post rings the doorbell (or every 16th when
// `chain` is 16: NDK_OP_FLAG_DEFER on the others).
void PostWrites(benchmark::State& state, ULONG extra_flags, int chain) {
  QpPair pair(BenchConfig());
  QpEnd& a = pair.a();
  auto src = a.Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE sge = src->Sge(0, 8);
  NDK_QP* qp = a.qp;
  const NDK_QP_DISPATCH* d = qp->Dispatch;
  const UINT64 raddr = dst->Address();
  const UINT32 rtoken = dst->RemoteToken();
  for ([[maybe_unused]] auto _ : state) {
    for (ULONG i = 0; i < kDepth; ++i) {
      ULONG flags = extra_flags;
      if (chain > 1 && (i + 1) % static_cast<ULONG>(chain) != 0) flags |= NDK_OP_FLAG_DEFER;
      // Signal one request in 64 so that the CQ stays small; the rest are silent.
      if (i % 64 != 63) flags |= NDK_OP_FLAG_SILENT_SUCCESS;
      NTSTATUS s = d->NdkWrite(qp, nullptr, &sge, 1, raddr, rtoken, flags);
      benchmark::DoNotOptimize(s);
    }
    state.PauseTiming();
    DrainAll(pair, a.initiator_cq);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kDepth);
  state.counters["ns_per_post"] =
      benchmark::Counter(static_cast<double>(kDepth), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_NdkWrite_DoorbellPerPost(benchmark::State& state) { PostWrites(state, 0, 1); }
void BM_NdkWrite_DeferChain16(benchmark::State& state) { PostWrites(state, 0, 16); }
void BM_NdkWrite_Inline_DoorbellPerPost(benchmark::State& state) { PostWrites(state, NDK_OP_FLAG_INLINE, 1); }
void BM_NdkWrite_Inline_DeferChain16(benchmark::State& state) { PostWrites(state, NDK_OP_FLAG_INLINE, 16); }

// Posts kDepth receives per iteration; the peer then consumes them with zero-byte sends (untimed).
void BM_NdkReceive(benchmark::State& state) {
  QpPair pair(BenchConfig());
  QpEnd& b = pair.b();
  QpEnd& a = pair.a();
  auto buf = b.Register(64);
  const NDK_SGE sge = buf->Sge(0, 64);
  NDK_QP* qp = b.qp;
  const NDK_QP_DISPATCH* d = qp->Dispatch;
  for ([[maybe_unused]] auto _ : state) {
    for (ULONG i = 0; i < kDepth; ++i) {
      NTSTATUS s = d->NdkReceive(qp, nullptr, &sge, 1);
      benchmark::DoNotOptimize(s);
    }
    state.PauseTiming();
    for (ULONG i = 0; i < kDepth; ++i) {
      a.Send(nullptr, {}, (i % 64 == 63) ? 0 : NDK_OP_FLAG_SILENT_SUCCESS | ((i + 1) % 16 ? NDK_OP_FLAG_DEFER : 0));
    }
    DrainAll(pair, a.initiator_cq);
    DrainAll(pair, b.receive_cq);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kDepth);
  state.counters["ns_per_post"] =
      benchmark::Counter(static_cast<double>(kDepth), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Reaps kDepth completions per iteration, `range(0)` results per NdkGetCqResults call.
void BM_NdkGetCqResults(benchmark::State& state) {
  QpPair pair(BenchConfig());
  QpEnd& a = pair.a();
  auto src = a.Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE sge = src->Sge(0, 8);
  const auto per_call = static_cast<ULONG>(state.range(0));
  NDK_CQ* cq = a.initiator_cq;
  const NDK_CQ_DISPATCH* d = cq->Dispatch;
  std::vector<NDK_RESULT> results(per_call);
  std::int64_t reaped = 0;
  for ([[maybe_unused]] auto _ : state) {
    state.PauseTiming();
    for (ULONG i = 0; i < kDepth; ++i) {
      a.Write(nullptr, {&sge, 1}, dst->Address(), dst->RemoteToken(), (i + 1) % 16 ? NDK_OP_FLAG_DEFER : 0);
    }
    pair.fabric().RunUntilIdle();
    state.ResumeTiming();
    ULONG got = 0;
    while (got < kDepth) got += d->NdkGetCqResults(cq, results.data(), per_call);
    reaped += got;
  }
  state.SetItemsProcessed(reaped);
  state.counters["ns_per_cqe"] =
      benchmark::Counter(static_cast<double>(kDepth), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_NdkWrite_DoorbellPerPost);
BENCHMARK(BM_NdkWrite_DeferChain16);
BENCHMARK(BM_NdkWrite_Inline_DoorbellPerPost);
BENCHMARK(BM_NdkWrite_Inline_DeferChain16);
BENCHMARK(BM_NdkReceive);
BENCHMARK(BM_NdkGetCqResults)->Arg(1)->Arg(16);

}  // namespace
}  // namespace ndksim
