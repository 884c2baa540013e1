// SPDX-License-Identifier: MIT
// Benchmarks for the host-interface queues: single-thread cost per operation, cross-thread
// throughput and round-trip latency of SpscRing, and single-thread cost of MpscQueue.
// Kept apart from the tests (STYLE.md point 24); numbers here are never asserted.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "hwmodel/doorbell_queue.h"
#include "hwmodel/ring.h"

namespace ndksim::hw {
namespace {

constexpr uint32_t kRingCapacity = 1024;

// A 64-byte WQE-like slot, the size the provider's SQ will use.
struct BenchWqe {
  uint64_t words[8];
};

// One push then one pop on the same thread: the bare cost of the index arithmetic and the
// cache-hit path, with no cross-core traffic.
void BM_SpscPushPopSameThread(benchmark::State& state) {
  SpscRing<uint64_t> ring(kRingCapacity);
  uint64_t value = 0;
  for ([[maybe_unused]] auto _ : state) {
    bool pushed = ring.TryPush(value);
    benchmark::DoNotOptimize(pushed);
    bool popped = ring.TryPop(value);
    benchmark::DoNotOptimize(popped);
    benchmark::DoNotOptimize(value);
    ++value;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpscPushPopSameThread);

// The provider's post path shape: build a WQE in the slot, publish; then the engine's shape:
// peek in place, release. Same thread.
void BM_SpscInPlaceWqeSameThread(benchmark::State& state) {
  SpscRing<BenchWqe> ring(kRingCapacity);
  uint64_t n = 0;
  for ([[maybe_unused]] auto _ : state) {
    BenchWqe* slot = ring.ProducerSlot();
    slot->words[0] = n;
    slot->words[7] = ~n;
    ring.ProducerPublish();
    const BenchWqe* seen = ring.ConsumerPeek();
    benchmark::DoNotOptimize(seen->words[0]);
    ring.ConsumerRelease();
    ++n;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * int64_t{sizeof(BenchWqe)});
}
BENCHMARK(BM_SpscInPlaceWqeSameThread);

// Throughput: a producer thread streams exactly as many items as the loop will pop, and the
// benchmark thread pops one per iteration. Spins without yielding, so it needs two free cores;
// on a loaded machine the number says more about the scheduler than about the ring.
void BM_SpscCrossThreadThroughput(benchmark::State& state) {
  SpscRing<uint64_t> ring(kRingCapacity);
  const uint64_t total = state.max_iterations;
  std::thread producer([&ring, total] {
    for (uint64_t i = 0; i < total; ++i) {
      while (!ring.TryPush(i)) {
      }
    }
  });
  uint64_t value = 0;
  for ([[maybe_unused]] auto _ : state) {
    while (!ring.TryPop(value)) {
    }
    benchmark::DoNotOptimize(value);
  }
  producer.join();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpscCrossThreadThroughput)->UseRealTime();

// Latency: one item to an echo thread and back through a second ring, one in flight at a time.
// Each iteration is a full round trip, i.e. two one-way handoffs.
void BM_SpscCrossThreadRoundTrip(benchmark::State& state) {
  SpscRing<uint64_t> request(kRingCapacity);
  SpscRing<uint64_t> response(kRingCapacity);
  const uint64_t total = state.max_iterations;
  std::thread echo([&request, &response, total] {
    uint64_t value = 0;
    for (uint64_t i = 0; i < total; ++i) {
      while (!request.TryPop(value)) {
      }
      while (!response.TryPush(value)) {
      }
    }
  });
  uint64_t n = 0;
  for ([[maybe_unused]] auto _ : state) {
    while (!request.TryPush(n)) {
    }
    uint64_t back = 0;
    while (!response.TryPop(back)) {
    }
    benchmark::DoNotOptimize(back);
    ++n;
  }
  echo.join();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpscCrossThreadRoundTrip)->UseRealTime();

// One doorbell in and out on the same thread: the uncontended CAS path plus the consumer's
// sequence check.
void BM_MpscPushPopSameThread(benchmark::State& state) {
  MpscQueue<uint64_t> queue(kRingCapacity);
  uint64_t value = 0;
  for ([[maybe_unused]] auto _ : state) {
    bool pushed = queue.TryPush(value);
    benchmark::DoNotOptimize(pushed);
    bool popped = queue.TryPop(value);
    benchmark::DoNotOptimize(popped);
    benchmark::DoNotOptimize(value);
    ++value;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MpscPushPopSameThread);

}  // namespace
}  // namespace ndksim::hw
