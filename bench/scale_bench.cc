// SPDX-License-Identifier: MIT
// How the simulator's cost grows with what exists, stepped:
//   - BM_Scale_QpPairs/N: N connected QP pairs between two nodes (queues of 64, 4 SGEs; 16,384 is
//     as many as one node's ephemeral ports allow, as on Windows): wall time
//     to connect and to tear down one pair, and heap bytes per pair (glibc's mallinfo2, so
//     everything the provider, the NIC and the harness allocate for it);
//   - BM_Scale_Nodes/N: a fabric of N nodes, each with an adapter open: heap bytes and wall time
//     per node;
//   - BM_Scale_AllQpsInFlight/N: 64-B writes on N connected QPs, every QP holding a chain of 16
//     writes at once: writes per wall-clock second (functional profile), to set beside N = 1;
//   - BM_Scale_64InFlightAmongQps/N: the same writes, 64 chains at a time moving over N QPs;
//   - BM_Scale_OneActiveAmongIdle/N: the same writes on one QP while N - 1 other connected QPs
//     stay idle;
//   - BM_Scale_Swarm/M/V: rc-swarm's workload on the Connect-IB preset (ndksim/swarm.h): M machines,
//     14 threads each, every machine reading 32 B from every other over 14 * M * V QPs per machine,
//     every QP active: simulated reads per wall-clock second, with the QP-context cache missing;
//   - BM_Floor_PageFault: what the first touch of a fresh 4-KiB page costs on this machine, with no
//     simulator at all: the floor under creating anything that needs new memory.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ndksim/harness.h"
#include "ndksim/swarm.h"

namespace ndksim {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

QpPairConfig SmallQueues() {
  QpPairConfig c;
  c.fabric.profile = profiles::kFunctional;
  c.initiator_queue_depth = 64;
  c.receive_queue_depth = 64;
  c.max_initiator_sge = 4;
  c.max_receive_sge = 4;
  c.cq_depth = 4096;
  return c;
}

void BM_Scale_QpPairs(benchmark::State& state) {
  const auto pairs = static_cast<std::size_t>(state.range(0));
  double connect_us = 0;
  double teardown_us = 0;
  double bytes = 0;
  for ([[maybe_unused]] auto _ : state) {
    auto pair = std::make_unique<QpPair>(SmallQueues());
    const std::size_t heap_before = HeapBytes();
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 1; i < pairs; ++i) pair->AddConnectedQps();
    const Clock::time_point connected = Clock::now();
    bytes += static_cast<double>(HeapBytes() - heap_before);
    pair.reset();
    const Clock::time_point gone = Clock::now();
    connect_us += std::chrono::duration<double, std::micro>(connected - start).count();
    teardown_us += std::chrono::duration<double, std::micro>(gone - connected).count();
  }
  // The first pair comes with the fabric; the figures are per added pair.
  const double added = static_cast<double>(state.iterations()) * static_cast<double>(pairs - 1);
  state.counters["connect_us_per_pair"] = connect_us / added;
  state.counters["teardown_us_per_pair"] = teardown_us / added;
  state.counters["KiB_per_pair"] = bytes / added / 1024.0;
}
BENCHMARK(BM_Scale_QpPairs)->Arg(65)->Arg(1025)->Arg(16384)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Scale_Nodes(benchmark::State& state) {
  const auto nodes = static_cast<std::size_t>(state.range(0));
  double us = 0;
  double bytes = 0;
  for ([[maybe_unused]] auto _ : state) {
    FabricConfig config;
    config.profile = profiles::kFunctional;
    auto fabric = std::make_unique<Fabric>(config);
    std::vector<NDK_ADAPTER*> adapters(nodes, nullptr);
    const std::size_t heap_before = HeapBytes();
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < nodes; ++i) {
      const std::size_t k = i + 1;  // 10.0.0.1 onwards
      Node& n = fabric->AddNode({fmt::format("n{}", i), {fmt::format("10.{}.{}.{}", k >> 16, (k >> 8) & 255, k & 255)}});
      if (n.OpenAdapter(NDK_VERSION{1, 2}, &adapters[i]) != STATUS_SUCCESS) state.SkipWithError("open failed");
    }
    us += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    bytes += static_cast<double>(HeapBytes() - heap_before);
    for (std::size_t i = 0; i < nodes; ++i) {
      if (adapters[i] != nullptr) fabric->GetNode(i).CloseAdapter(adapters[i]);
    }
  }
  const double made = static_cast<double>(state.iterations()) * static_cast<double>(nodes);
  state.counters["us_per_node"] = us / made;
  state.counters["KiB_per_node"] = bytes / made / 1024.0;
}
BENCHMARK(BM_Scale_Nodes)->Arg(256)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Posts `chains` DEFER chains of kChain 64-B writes (the last of each signaled), chain c on QP
// (first + c) % qps.size(), runs the fabric until idle and reaps the chains' completions; false if
// one is missing.
constexpr std::size_t kChain = 16;
bool WriteChains(QpPair& pair, const std::vector<NDK_QP*>& qps, std::size_t first, std::size_t chains,
                 const NDK_SGE& sge, const RegisteredBuffer& dst) {
  for (std::size_t c = 0; c < chains; ++c) {
    NDK_QP* qp = qps[(first + c) % qps.size()];
    for (std::size_t i = 0; i < kChain; ++i) {
      const ULONG flags = i + 1 == kChain ? 0 : (NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS);
      qp->Dispatch->NdkWrite(qp, nullptr, &sge, 1, dst.Address(), dst.RemoteToken(), flags);
    }
  }
  pair.fabric().RunUntilIdle();
  NDK_CQ* cq = pair.a().initiator_cq;
  NDK_RESULT r[64];
  for (std::size_t got = 0; got < chains;) {
    const ULONG n = cq->Dispatch->NdkGetCqResults(cq, r, 64);
    if (n == 0) return false;
    got += n;
  }
  return true;
}

// N connected QPs of one pair, with 64-B buffers on both sides; the CQs hold a completion per QP.
struct ManyQps {
  explicit ManyQps(std::size_t count, ULONG depth) : pair(Config(count, depth)) {
    qps.push_back(pair.a().qp);
    for (std::size_t i = 1; i < count; ++i) qps.push_back(pair.AddConnectedQps().a);
    src = pair.a().Register(64);
    dst = pair.b().Register(64);
  }
  static QpPairConfig Config(std::size_t count, ULONG depth) {
    QpPairConfig config = SmallQueues();
    config.initiator_queue_depth = depth;
    config.cq_depth = static_cast<ULONG>(std::max<std::size_t>(4096, 2 * count));
    return config;
  }
  QpPair pair;
  std::vector<NDK_QP*> qps;
  std::unique_ptr<RegisteredBuffer> src;
  std::unique_ptr<RegisteredBuffer> dst;
};

// Every QP holds outstanding work: each batch gives every one of the N QPs a chain of 16 writes
// (and, below 64 QPs, as many chains each as make 64), all in flight together before the fabric
// runs. So the batch grows with N, and what is measured is the cost of a write when N QPs have
// work at once. items_per_second: writes per wall-clock second; set it beside N = 1.
void BM_Scale_AllQpsInFlight(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const std::size_t chains = std::max<std::size_t>(count, 64);
  ManyQps m(count, static_cast<ULONG>(std::max<std::size_t>(64, kChain * chains / count)));
  const NDK_SGE sge = m.src->Sge(0, 64);
  for ([[maybe_unused]] auto _ : state) {
    if (!WriteChains(m.pair, m.qps, 0, chains, sge, *m.dst)) state.SkipWithError("a signaled write did not complete");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kChain * chains));
  state.counters["writes_in_flight"] = static_cast<double>(kChain * chains);
}
BENCHMARK(BM_Scale_AllQpsInFlight)->Arg(1)->Arg(64)->Arg(1024)->Arg(16384)->UseRealTime();

// 64 chains in flight at a time among N connected QPs: batch after batch moves on to the next 64,
// so over the batches every QP is used, but only 64 hold work at once. (This is what earlier
// versions reported as "all active".)
void BM_Scale_64InFlightAmongQps(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kChains = 64;
  ManyQps m(count, static_cast<ULONG>(std::max<std::size_t>(64, kChain * kChains / count)));
  const NDK_SGE sge = m.src->Sge(0, 64);
  std::size_t next = 0;
  for ([[maybe_unused]] auto _ : state) {
    if (!WriteChains(m.pair, m.qps, next, kChains, sge, *m.dst)) state.SkipWithError("a signaled write did not complete");
    next = (next + kChains) % count;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kChain * kChains));
}
BENCHMARK(BM_Scale_64InFlightAmongQps)->Arg(1)->Arg(64)->Arg(1024)->Arg(16384)->UseRealTime();

void BM_Scale_Swarm(benchmark::State& state) {
  SwarmConfig c;
  c.fabric.profile = profiles::kConnectIbFdr;
  c.machines = static_cast<int>(state.range(0));
  c.vms = static_cast<int>(state.range(1));
  Swarm swarm(c);
  (void)swarm.Run(Microseconds(20), Microseconds(1));  // warm: windows full, caches in use
  double reads = 0;
  for ([[maybe_unused]] auto _ : state) {
    const SwarmResult r = swarm.Run(Duration::zero(), Microseconds(20));
    for (double rate : r.rate_per_machine) reads += rate * 20;  // M/s over 20 us
  }
  state.counters["qps_per_machine"] = static_cast<double>(swarm.QpsPerMachine());
  state.SetItemsProcessed(static_cast<std::int64_t>(reads));
}
BENCHMARK(BM_Scale_Swarm)->Args({6, 1})->Args({6, 15})->Args({11, 9})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Scale_OneActiveAmongIdle(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  constexpr ULONG kWindow = 64;  // the queue's depth
  QpPair pair(SmallQueues());
  for (std::size_t i = 1; i < count; ++i) pair.AddConnectedQps();
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE sge = src->Sge(0, 64);
  NDK_QP* qp = pair.a().qp;
  NDK_CQ* cq = pair.a().initiator_cq;
  for ([[maybe_unused]] auto _ : state) {
    for (ULONG i = 0; i < kWindow; ++i) {
      const bool last = (i + 1) % kChain == 0;
      const ULONG flags = last ? 0 : (NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS);
      qp->Dispatch->NdkWrite(qp, nullptr, &sge, 1, dst->Address(), dst->RemoteToken(), flags);
    }
    pair.fabric().RunUntilIdle();
    NDK_RESULT r[64];
    for (ULONG got = 0; got < kWindow / kChain;) {
      const ULONG n = cq->Dispatch->NdkGetCqResults(cq, r, 64);
      if (n == 0) {
        state.SkipWithError("a signaled write did not complete");
        break;
      }
      got += n;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kWindow);
}
BENCHMARK(BM_Scale_OneActiveAmongIdle)->Arg(1)->Arg(1024)->Arg(16384)->UseRealTime();

void BM_Floor_PageFault(benchmark::State& state) {
  constexpr std::size_t kPage = 4096;
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  std::size_t pages = 0;
  double touching_us = 0;
  for ([[maybe_unused]] auto _ : state) {
    void* region = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) {
      state.SkipWithError("mmap failed");
      break;
    }
    auto* bytes = static_cast<volatile char*>(region);
    const Clock::time_point start = Clock::now();
    for (std::size_t i = 0; i < kBytes; i += kPage) bytes[i] = 1;
    touching_us += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    munmap(region, kBytes);
    pages += kBytes / kPage;
  }
  state.counters["us_per_fault"] = touching_us / static_cast<double>(pages);
}
BENCHMARK(BM_Floor_PageFault)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace ndksim
