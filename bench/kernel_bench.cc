// SPDX-License-Identifier: MIT
// The kernel environment's scheduler: what handing over between kernel threads costs.
//   - BM_Kernel_FiberSwitch: one switch from a fiber to another and back (two switches);
//   - BM_Kernel_BlockWakeRoundTrip: two kernel threads that wake each other and block, as a
//     consumer's thread and its completion path do; one round trip is two hand-overs through the
//     scheduler (each a pick and two fiber switches).
//   - BM_Kernel_EventPingPong: the same through the WDK services a consumer calls: two kernel
//     threads of an Environment, each waiting on its own synchronization KEVENT
//     (KeWaitForSingleObject) and setting the other's (KeSetEvent), with the verifier's checks.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "kernel/fiber.h"
#include "kernel/scheduler.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"
#include "ndksim/kernel/wdm.h"

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

}  // namespace
}  // namespace ndksim::kernel
