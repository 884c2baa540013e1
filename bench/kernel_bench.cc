// SPDX-License-Identifier: MIT
// The kernel environment's scheduler: what handing over between kernel threads costs.
//   - BM_Kernel_FiberSwitch: one switch from a fiber to another and back (two switches);
//   - BM_Kernel_BlockWakeRoundTrip: two kernel threads that wake each other and block, as a
//     consumer's thread and its completion path do; one round trip is two hand-overs through the
//     scheduler (each a pick and two fiber switches).
//   - BM_Kernel_EventPingPong: the same through the WDK services a consumer calls: two kernel
//     threads of an Environment, each waiting on its own synchronization KEVENT
//     (KeWaitForSingleObject) and setting the other's (KeSetEvent), with the verifier's checks.
//   - BM_Kernel_RpcEchoRoundTrips: the kernel RPC example (examples/kernel_rpc), its initiator and
//     target drivers on two nodes: ECHO requests, one submitter thread, queue depth 1. A round trip
//     is a request send, the target's thread woken to answer, and the response's completion.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <stdexcept>

#include "kernel/fiber.h"
#include "kernel/scheduler.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"
#include "ndksim/kernel/wdm.h"
#include "rpc_loader.h"

namespace ndksim::kernel {
namespace {

struct Switcher {
  Fiber* home = nullptr;
  Fiber* fiber = nullptr;
};

void SwitchBack(void* p) {
  auto& s = *static_cast<Switcher*>(p);
  for (;;) Fiber::Switch(*s.fiber, *s.home);
}

void BM_Kernel_FiberSwitch(benchmark::State& state) {
  Switcher s;
  Fiber home{Fiber::ThisThread{}};
  Fiber fiber(&SwitchBack, &s, 64 * 1024);
  s.home = &home;
  s.fiber = &fiber;
  for ([[maybe_unused]] auto _ : state) Fiber::Switch(home, fiber);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Kernel_FiberSwitch);

void BM_Kernel_BlockWakeRoundTrip(benchmark::State& state) {
  for ([[maybe_unused]] auto _ : state) {
    state.PauseTiming();
    constexpr int kRoundTrips = 100'000;
    Scheduler s(1);
    Scheduler::ThreadId ping = Scheduler::kNone;
    Scheduler::ThreadId pong = Scheduler::kNone;
    bool pong_waiting = false;
    ping = s.Create("ping", [&] {
      for (int i = 0; i < kRoundTrips; ++i) {
        while (!pong_waiting) s.Yield();
        pong_waiting = false;
        s.Wake(pong);
        s.Block("pong");
      }
      while (!pong_waiting) s.Yield();
      s.Wake(pong);
    });
    pong = s.Create("pong", [&] {
      for (int i = 0; i <= kRoundTrips; ++i) {
        pong_waiting = true;
        s.Block("ping");
        if (i < kRoundTrips) s.Wake(ping);
      }
    });
    state.ResumeTiming();
    s.Run();
    state.SetItemsProcessed(state.items_processed() + kRoundTrips);
  }
  state.counters["round_trips_per_second"] =
      benchmark::Counter(static_cast<double>(state.items_processed()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Kernel_BlockWakeRoundTrip)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Kernel_EventPingPong(benchmark::State& state) {
  for ([[maybe_unused]] auto _ : state) {
    state.PauseTiming();
    constexpr int kRoundTrips = 100'000;
    Fabric fabric(FabricConfig{.seed = 1, .profile = profiles::kFunctional});
    Environment env(fabric, EnvironmentConfig{.seed = 1});
    KEVENT ping_event;
    KEVENT pong_event;
    state.ResumeTiming();
    env.Run("ping", [&] {
      KeInitializeEvent(&ping_event, SynchronizationEvent, FALSE);
      KeInitializeEvent(&pong_event, SynchronizationEvent, FALSE);
      env.StartThread("pong", [&] {
        for (int i = 0; i < kRoundTrips; ++i) {
          KeWaitForSingleObject(&pong_event, Executive, KernelMode, FALSE, nullptr);
          KeSetEvent(&ping_event, IO_NO_INCREMENT, FALSE);
        }
      });
      for (int i = 0; i < kRoundTrips; ++i) {
        KeSetEvent(&pong_event, IO_NO_INCREMENT, FALSE);
        KeWaitForSingleObject(&ping_event, Executive, KernelMode, FALSE, nullptr);
      }
    });
    state.SetItemsProcessed(state.items_processed() + kRoundTrips);
  }
  state.counters["round_trips_per_second"] =
      benchmark::Counter(static_cast<double>(state.items_processed()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Kernel_EventPingPong)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Kernel_RpcEchoRoundTrips(benchmark::State& state) {
  constexpr std::uint32_t kEchoes = 20'000;
  for ([[maybe_unused]] auto _ : state) {
    state.PauseTiming();
    Fabric fabric(FabricConfig{.seed = 1});
    Node& initiator_node = fabric.AddNode({"initiator", {"192.0.2.1"}});
    Node& target_node = fabric.AddNode({"target", {"192.0.2.2"}});
    Environment env(fabric, EnvironmentConfig{.seed = 1});
    const RpcTargetConfig target_config{.ipv4 = inet_addr("192.0.2.2"), .port = 4420, .disk_blocks = 8,
                                        .receive_depth = 1, .invalidate_reads = 1};
    const RpcInitiatorConfig initiator_config{.ipv4 = inet_addr("192.0.2.1"), .target_ipv4 = target_config.ipv4,
                                              .port = 4420, .submitters = 1, .queue_depth = 1, .write_count = 0,
                                              .blocks_per_io = 1, .echo_count = kEchoes, .pattern_seed = 0};
    const RpcDrivers drivers = RpcLoadConnected(env, target_node, initiator_node, target_config, initiator_config);
    const RpcInitiatorResults& results = *drivers.results;
    state.ResumeTiming();
    env.RunUntil([&] { return results.completed == kEchoes || results.done != 0; });
    state.PauseTiming();
    if (results.succeeded != kEchoes) throw std::runtime_error("an echo failed");
    RpcUnload(env, drivers);
    state.SetItemsProcessed(state.items_processed() + kEchoes);
    state.ResumeTiming();
  }
  state.counters["round_trips_per_second"] =
      benchmark::Counter(static_cast<double>(state.items_processed()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Kernel_RpcEchoRoundTrips)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace ndksim::kernel
