// SPDX-License-Identifier: MIT
// Threaded mode against stepped mode, in wall-clock time, on the functional profile:
//   - the WQE rate of one posting thread against the engine's thread (64-B writes, DEFER chains of
//     1, 16 and 64), and the same workload run stepped on one thread;
//   - what a post costs the posting thread while the engine runs, against its stepped cost, and
//     while the engine takes each doorbell as it comes but executes nothing;
//   - one-way latency of a ping-pong between two application threads through the simulator
//     (post -> peer's CQE -> reply), with the engine as fast as possible and paced.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_config.h"
#include "common/cpu_relax.h"
#include "common/prefetch.h"
#include "ndksim/harness.h"

namespace ndksim {
namespace {

using bench::BenchConfig;
using bench::kDepth;
constexpr ULONG kSignalEvery = 64;

// Posts kDepth 64-B writes (a doorbell every `chain` posts, one signaled request in 64).
void PostBatch(NDK_QP* qp, const NDK_SGE& sge, UINT64 raddr, UINT32 rtoken, ULONG chain) {
  const NDK_QP_DISPATCH* d = qp->Dispatch;
  for (ULONG i = 0; i < kDepth; ++i) {
    ULONG flags = 0;
    if (chain > 1 && (i + 1) % chain != 0) flags |= NDK_OP_FLAG_DEFER;
    if (i % kSignalEvery != kSignalEvery - 1) flags |= NDK_OP_FLAG_SILENT_SUCCESS;
    const NTSTATUS s = d->NdkWrite(qp, nullptr, &sge, 1, raddr, rtoken, flags);
    benchmark::DoNotOptimize(s);
  }
}

// The benchmarks of one application thread against the engine's thread keep each on a core of its
// own: the application thread on the first CPU the process may use, the engine's thread on the
// second (EngineThreadConfig::cpu). Left to the scheduler, the two spinning threads were now and
// then put on one core, and the threaded figures fell by a third for as long. A stepped benchmark
// keeps its one thread on the same first CPU. With fewer than two CPUs nothing is pinned.
class CorePair {
 public:
  CorePair() {
    if (pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) != 0) return;
    for (int c = 0; c < CPU_SETSIZE && engine_ < 0; ++c) {
      if (!CPU_ISSET(c, &saved_)) continue;
      if (application_ < 0) {
        application_ = c;
      } else {
        engine_ = c;
      }
    }
    if (engine_ < 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(application_, &one);
    pinned_ = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  }
  CorePair(const CorePair&) = delete;
  CorePair& operator=(const CorePair&) = delete;
  ~CorePair() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
  }
  // The engine's thread goes to the other core, if this thread was pinned.
  void Place(EngineThreadConfig& engine) const {
    if (pinned_) engine.cpu = engine_;
  }
  double Pinned() const { return pinned_ ? 1 : 0; }

 private:
  cpu_set_t saved_{};
  int application_ = -1;
  int engine_ = -1;
  bool pinned_ = false;
};

// Reaps the batch's kDepth / kSignalEvery signaled completions, spinning on the CQ.
void ReapBatch(NDK_CQ* cq) {
  NDK_RESULT r[16];
  for (ULONG got = 0; got < kDepth / kSignalEvery;) {
    const ULONG n = cq->Dispatch->NdkGetCqResults(cq, r, 16);
    got += n;
    if (n == 0) CpuRelax();  // not sched_yield, which slowed the engine's core
  }
}

// A pace at which simulated time stands still while a batch is posted (a wall-clock second per
// simulated nanosecond): the engine's thread takes each doorbell as it comes (the MMIO write's
// arrival is scheduled), but no event falls due, so no WQE is fetched or executed.
constexpr double kFrozenPace = 1e9;

// Posts a batch, then waits for its completions; items are WQEs. End to end (real time), or with
// `posts_only` the posting thread's own cost: only the posting calls are timed (manual time), not
// the wait for the completions (threaded) or the engine's run (stepped). With `doorbells_only`
// (threaded) the engine is frozen while the batch is posted (kFrozenPace); the batch then runs
// stepped, untimed, and the engine's thread starts again.
void Writes(benchmark::State& state, bool threaded, bool posts_only, bool doorbells_only = false) {
  const auto chain = static_cast<ULONG>(state.range(0));
  QpPair pair(BenchConfig());
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE sge = src->Sge(0, 64);
  const CorePair cores;
  EngineThreadConfig engine;
  if (doorbells_only) engine.pace = kFrozenPace;
  cores.Place(engine);
  if (threaded) pair.fabric().Start(engine);
  std::uint64_t stepped_events = 0;
  for ([[maybe_unused]] auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    PostBatch(pair.a().qp, sge, dst->Address(), dst->RemoteToken(), chain);
    if (posts_only) {
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (doorbells_only) {
      pair.fabric().Stop(StopMode::kNow);
      pair.fabric().RunUntilIdle();
      pair.fabric().Start(engine);
    }
    if (!threaded) stepped_events += pair.fabric().RunUntilIdle();
    ReapBatch(pair.a().initiator_cq);
  }
  std::uint64_t events = stepped_events;
  if (threaded) {
    const EngineThreadStats st = pair.fabric().ThreadStats();
    state.counters["engine_parks"] = static_cast<double>(st.parks);
    events = st.events;
    pair.fabric().Stop();
  }
  state.counters["pinned"] = cores.Pinned();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kDepth);
  if (!doorbells_only) {
    state.counters["events_per_wqe"] =
        static_cast<double>(events) / (static_cast<double>(state.iterations()) * static_cast<double>(kDepth));
  }
  if (posts_only) {
    state.counters["ns_per_post"] = benchmark::Counter(
        static_cast<double>(kDepth), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  }
}

void BM_Stepped_Write64(benchmark::State& state) { Writes(state, false, false); }

// The same stepped workload (chain 16) on a fabric with `range(0)` more nodes that do nothing
// (1,022 makes a fabric of 1,024): the engine touches only the nodes that have doorbells, so the
// rate does not fall with them.
void BM_Stepped_Write64_IdleNodes(benchmark::State& state) {
  QpPair pair(BenchConfig());
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    const std::int64_t k = i + 1;  // 10.0.0.1 onwards
    pair.fabric().AddNode({"idle" + std::to_string(i), {fmt::format("10.{}.{}.{}", k >> 16, (k >> 8) & 255, k & 255)}});
  }
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE sge = src->Sge(0, 64);
  for ([[maybe_unused]] auto _ : state) {
    PostBatch(pair.a().qp, sge, dst->Address(), dst->RemoteToken(), 16);
    pair.fabric().RunUntilIdle();
    ReapBatch(pair.a().initiator_cq);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kDepth);
}
BENCHMARK(BM_Stepped_Write64_IdleNodes)->Arg(0)->Arg(254)->Arg(1022)->UseRealTime();
void BM_Threaded_Write64(benchmark::State& state) { Writes(state, true, false); }
BENCHMARK(BM_Stepped_Write64)->Arg(1)->Arg(16)->Arg(64)->UseRealTime();
BENCHMARK(BM_Threaded_Write64)->Arg(1)->Arg(16)->Arg(64)->UseRealTime();

// The posting thread's own cost (ns_per_post).
void BM_Stepped_PostCost(benchmark::State& state) { Writes(state, false, true); }
void BM_Threaded_PostCost(benchmark::State& state) { Writes(state, true, true); }
BENCHMARK(BM_Stepped_PostCost)->Arg(1)->Arg(16)->UseManualTime();
BENCHMARK(BM_Threaded_PostCost)->Arg(1)->Arg(16)->UseManualTime();

// The same posting thread while the engine's thread takes every doorbell but executes nothing
// (kFrozenPace): what the posting path itself pays for handing its doorbells across, without the
// engine concurrently reading and executing the WQEs of the same queue.
void BM_Threaded_PostCost_DoorbellsOnly(benchmark::State& state) { Writes(state, true, true, true); }
// A fixed number of batches: each is followed by an untimed stepped run and a thread restart,
// which the benchmark's own iteration count (chosen from the timed part alone) would multiply.
BENCHMARK(BM_Threaded_PostCost_DoorbellsOnly)->Arg(1)->Arg(16)->Iterations(1000)->UseManualTime();

// What crossing between the two cores costs on this machine, with no simulator at all: the floor
// under every threaded figure above and below.
//   - HandOff: two threads pass a counter back and forth through two cache lines; one_way_ns is
//     half a round trip (what a ping-pong pays per hand-off, each way).
//   - StreamSlots: one thread fills 64-B slots of a 1,024-slot ring and publishes each with a
//     release store of its producer index, as a post does, while another thread reads each slot
//     as soon as it is published (range(0) = 1) or once `range(0)` slots are waiting; ns_per_slot
//     is the producer's cost.
void BM_CrossCore_HandOff(benchmark::State& state) {
  struct alignas(64) Line {
    std::atomic<std::int64_t> value{0};
  };
  Line ping;
  Line pong;
  std::atomic<bool> quit{false};
  std::thread peer([&] {
    for (std::int64_t seen = 0;;) {
      std::int64_t v = 0;
      while ((v = ping.value.load(std::memory_order_acquire)) == seen) {
        if (quit.load(std::memory_order_relaxed)) return;
      }
      seen = v;
      pong.value.store(v, std::memory_order_release);
    }
  });
  std::int64_t n = 0;
  for ([[maybe_unused]] auto _ : state) {
    ping.value.store(++n, std::memory_order_release);
    while (pong.value.load(std::memory_order_acquire) != n) {
    }
  }
  quit = true;
  peer.join();
  state.counters["one_way_ns"] = benchmark::Counter(
      2.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CrossCore_HandOff)->UseRealTime();

void BM_CrossCore_StreamSlots(benchmark::State& state) {
  constexpr std::uint32_t kSlots = 1024;
  const auto lag = static_cast<std::uint32_t>(state.range(0));
  struct alignas(64) Slot {
    std::array<std::uint64_t, 8> words;
  };
  std::vector<Slot> ring(kSlots);
  alignas(64) std::atomic<std::uint32_t> produced{0};
  alignas(64) std::atomic<std::uint32_t> consumed{0};
  std::atomic<bool> quit{false};
  std::thread consumer([&] {
    std::uint64_t sum = 0;
    for (std::uint32_t next = 0; !quit.load(std::memory_order_relaxed);) {
      const std::uint32_t p = produced.load(std::memory_order_acquire);
      if (p - next < lag) continue;
      for (; next != p; ++next) sum += ring[next % kSlots].words[0];
      consumed.store(next, std::memory_order_release);
    }
    benchmark::DoNotOptimize(sum);
  });
  constexpr std::uint32_t kPerIteration = 1024;
  std::uint32_t i = 0;
  std::uint32_t room_until = 0;  // slots below this index are known free
  for ([[maybe_unused]] auto _ : state) {
    for (std::uint32_t k = 0; k < kPerIteration; ++k, ++i) {
      while (i >= room_until) room_until = consumed.load(std::memory_order_acquire) + kSlots - lag;
      Slot& s = ring[i % kSlots];
      for (std::uint64_t& w : s.words) w = i;
      produced.store(i + 1, std::memory_order_release);
    }
  }
  quit = true;
  consumer.join();
  state.counters["ns_per_slot"] = benchmark::Counter(
      static_cast<double>(kPerIteration), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CrossCore_StreamSlots)->Arg(1)->Arg(16)->Arg(64)->UseRealTime();

// What a post pays because another core reads the line it writes, with no simulator: per item,
// the producer writes six words of one 64-B line in a ring of 1,024 lines 256 B apart (a WQE's
// first line), makes `range(1)` further stores (what the rest of a post stores: its stack frames,
// the context slot, the indices), and publishes the item with a release store of its index. With
// `range(0)` = 1 another thread reads each line as it is published (the engine fetching the WQE);
// with 0 it reads only the index. A line the reader holds must be taken back before the producer's
// store to it can leave the store buffer, and every later store waits behind it. With `range(2)`
// = 1 the producer takes the line of the item kWriteAheadItems ahead for writing as it starts
// each item (common/prefetch.h), as the posting path does.
void BM_CrossCore_LinesReadBehind(benchmark::State& state) {
  constexpr std::uint32_t kItems = 1024;
  constexpr std::uint32_t kLinesPerItem = 4;
  const bool reader_reads_lines = state.range(0) != 0;
  const auto further_stores = static_cast<std::size_t>(state.range(1));
  const bool prefetch = state.range(2) != 0;
  struct alignas(64) Line {
    std::array<std::uint64_t, 8> words;
  };
  std::vector<Line> ring(std::size_t{kItems} * kLinesPerItem);
  alignas(64) std::atomic<std::uint32_t> published{0};
  alignas(64) std::atomic<std::uint32_t> consumed{0};
  std::atomic<bool> quit{false};
  std::thread reader([&] {
    std::uint64_t sum = 0;
    for (std::uint32_t next = 0; !quit.load(std::memory_order_relaxed);) {
      const std::uint32_t p = published.load(std::memory_order_acquire);
      if (reader_reads_lines) {
        for (; next != p; ++next) sum += ring[(next % kItems) * kLinesPerItem].words[0];
      }
      next = p;
      consumed.store(next, std::memory_order_release);
    }
    benchmark::DoNotOptimize(sum);
  });
  std::array<std::uint64_t, 64> scratch{};
  std::uint32_t i = 0;
  std::uint32_t room_until = 0;  // items below this index are known free
  for ([[maybe_unused]] auto _ : state) {
    for (std::uint32_t k = 0; k < kItems; ++k, ++i) {
      while (i >= room_until) room_until = consumed.load(std::memory_order_acquire) + kItems;
      if (prefetch) PrefetchForWrite(&ring[((i + kWriteAheadItems) % kItems) * kLinesPerItem]);
      Line& line = ring[(i % kItems) * kLinesPerItem];
      for (std::size_t w = 0; w < 6; ++w) line.words[w] = i;
      for (std::size_t s = 0; s < further_stores; ++s) {
        scratch[s] = i + s;
        benchmark::ClobberMemory();  // each is a store of its own, as a post's are
      }
      published.store(i + 1, std::memory_order_release);
    }
  }
  quit = true;
  reader.join();
  benchmark::DoNotOptimize(scratch);
  state.counters["ns_per_item"] = benchmark::Counter(
      static_cast<double>(kItems), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CrossCore_LinesReadBehind)->ArgsProduct({{0, 1}, {16, 32}, {0, 1}})->UseRealTime();

// A pair for ping-pong: 8-B messages, 32 receives posted on each side.
struct PingPongPair {
  static QpPairConfig Config() {
    QpPairConfig config = BenchConfig();
    config.initiator_queue_depth = 64;
    config.receive_queue_depth = 64;
    return config;
  }
  PingPongPair() {
    for (int i = 0; i < 32; ++i) {
      a.qp->Dispatch->NdkReceive(a.qp, nullptr, &a_sge, 1);
      b.qp->Dispatch->NdkReceive(b.qp, nullptr, &b_sge, 1);
    }
  }
  QpPair pair{Config()};
  QpEnd& a = pair.a();
  QpEnd& b = pair.b();
  std::unique_ptr<RegisteredBuffer> a_buf = a.Register(64);
  std::unique_ptr<RegisteredBuffer> b_buf = b.Register(64);
  NDK_SGE a_sge = a_buf->Sge(0, 8);
  NDK_SGE b_sge = b_buf->Sge(0, 8);
};

// Ping-pong: this thread sends 8 B to B; B's thread waits for the receive and sends 8 B back;
// this thread waits for that receive. One iteration is a round trip; one_way_us is half of it.
// With `one_thread`, this thread plays B as well (no echo thread): the engine and one application
// thread, so that a machine with two cores runs every thread on a core of its own.
void PingPong(benchmark::State& state, double pace, bool one_thread = false) {
  PingPongPair p;
  QpPair& pair = p.pair;
  QpEnd& a = p.a;
  QpEnd& b = p.b;
  const NDK_SGE a_sge = p.a_sge;
  const NDK_SGE b_sge = p.b_sge;
  // Waits for one receive on `end`, posts it again and reaps the send completions on the way.
  // Three busy threads (this, the echo, the engine) may share fewer cores: they yield.
  auto await_message = [one_thread](QpEnd& end, const NDK_SGE& sge, const std::atomic<bool>* quit) {
    NDK_RESULT r;
    for (;;) {
      if (end.receive_cq->Dispatch->NdkGetCqResults(end.receive_cq, &r, 1) == 1) break;
      if (quit != nullptr && quit->load(std::memory_order_relaxed)) return false;
      if (!one_thread) std::this_thread::yield();
    }
    end.qp->Dispatch->NdkReceive(end.qp, nullptr, &sge, 1);
    while (end.initiator_cq->Dispatch->NdkGetCqResults(end.initiator_cq, &r, 1) == 1) {
    }
    return true;
  };
  // With one application thread, it and the engine's thread each have a core (CorePair); with two,
  // three busy threads share the cores as the scheduler decides.
  std::unique_ptr<CorePair> cores;
  if (one_thread) cores = std::make_unique<CorePair>();
  EngineThreadConfig engine;
  engine.pace = pace;
  if (cores != nullptr) cores->Place(engine);
  pair.fabric().Start(engine);
  std::atomic<bool> quit{false};
  std::thread echo;
  if (!one_thread) {
    echo = std::thread([&] {
      while (await_message(b, b_sge, &quit)) {
        b.qp->Dispatch->NdkSend(b.qp, nullptr, &b_sge, 1, NDK_OP_FLAG_INLINE);
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  for ([[maybe_unused]] auto _ : state) {
    a.qp->Dispatch->NdkSend(a.qp, nullptr, &a_sge, 1, NDK_OP_FLAG_INLINE);
    if (one_thread) {
      await_message(b, b_sge, nullptr);
      b.qp->Dispatch->NdkSend(b.qp, nullptr, &b_sge, 1, NDK_OP_FLAG_INLINE);
    }
    await_message(a, a_sge, nullptr);
  }
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
  quit = true;
  if (echo.joinable()) echo.join();
  const EngineThreadStats st = pair.fabric().ThreadStats();
  pair.fabric().Stop(StopMode::kNow);
  const double messages = 2.0 * static_cast<double>(state.iterations());
  state.counters["one_way_us"] = elapsed.count() / messages;
  state.counters["events_per_message"] = static_cast<double>(st.events) / messages;
  state.counters["engine_parks"] = static_cast<double>(st.parks);
  state.counters["pinned"] = cores != nullptr ? cores->Pinned() : 0;
}

// The same ping-pong in stepped mode, on one thread: what the simulation itself costs per message.
void BM_Stepped_PingPong(benchmark::State& state) {
  const CorePair cores;
  PingPongPair p;
  QpPair& pair = p.pair;
  QpEnd& a = p.a;
  QpEnd& b = p.b;
  const NDK_SGE a_sge = p.a_sge;
  const NDK_SGE b_sge = p.b_sge;
  auto await_message = [&pair](QpEnd& end, const NDK_SGE& sge) {
    NDK_RESULT r;
    pair.fabric().RunUntil([&] { return end.receive_cq->Dispatch->NdkGetCqResults(end.receive_cq, &r, 1) == 1; });
    end.qp->Dispatch->NdkReceive(end.qp, nullptr, &sge, 1);
    while (end.initiator_cq->Dispatch->NdkGetCqResults(end.initiator_cq, &r, 1) == 1) {
    }
  };
  const auto start = std::chrono::steady_clock::now();
  for ([[maybe_unused]] auto _ : state) {
    a.qp->Dispatch->NdkSend(a.qp, nullptr, &a_sge, 1, NDK_OP_FLAG_INLINE);
    await_message(b, b_sge);
    b.qp->Dispatch->NdkSend(b.qp, nullptr, &b_sge, 1, NDK_OP_FLAG_INLINE);
    await_message(a, a_sge);
  }
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
  state.counters["one_way_us"] = elapsed.count() / (2.0 * static_cast<double>(state.iterations()));
  state.counters["pinned"] = cores.Pinned();
}
BENCHMARK(BM_Stepped_PingPong)->UseRealTime();

void BM_Threaded_PingPong(benchmark::State& state) { PingPong(state, 0); }
void BM_Threaded_PingPong_PacedRealTime(benchmark::State& state) { PingPong(state, 1.0); }
void BM_Threaded_PingPong_OneApplicationThread(benchmark::State& state) { PingPong(state, 0, true); }
BENCHMARK(BM_Threaded_PingPong)->UseRealTime();
BENCHMARK(BM_Threaded_PingPong_OneApplicationThread)->UseRealTime();
BENCHMARK(BM_Threaded_PingPong_PacedRealTime)->UseRealTime();

}  // namespace
}  // namespace ndksim
