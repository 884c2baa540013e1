// SPDX-License-Identifier: MIT
// The kernel environment's fibers and its deterministic scheduler of kernel threads.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernel/fiber.h"
#include "kernel/scheduler.h"

namespace ndksim::kernel {
namespace {

// ---- fibers ----

struct PingPong {
  Fiber* home = nullptr;
  Fiber* fiber = nullptr;
  std::vector<int> log;
};

void PingPongBody(void* p) {
  auto& s = *static_cast<PingPong*>(p);
  for (int i = 0; i < 3; ++i) {
    s.log.push_back(2 * i + 1);
    Fiber::Switch(*s.fiber, *s.home);
  }
  s.log.push_back(100);
  Fiber::Switch(*s.fiber, *s.home, /*from_finished=*/true);
}

TEST(Fiber, SwitchesToAFiberAndBackKeepingEachSidesState) {
  PingPong s;
  Fiber home{Fiber::ThisThread{}};
  Fiber fiber(&PingPongBody, &s, 64 * 1024);
  s.home = &home;
  s.fiber = &fiber;
  for (int i = 0; i < 4; ++i) {
    s.log.push_back(2 * i);
    Fiber::Switch(home, fiber);
  }
  EXPECT_EQ(s.log, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 100}));
}

// ---- scheduler ----

TEST(KernelScheduler, RunsEveryThreadToItsEnd) {
  Scheduler s(1);
  int done = 0;
  for (int i = 0; i < 5; ++i) s.Create("t" + std::to_string(i), [&] { ++done; });
  s.Run();
  EXPECT_EQ(done, 5);
  EXPECT_EQ(s.Picks().size(), 5u);
}

// Four threads that each yield ten times: the log of who ran when is the interleaving.
std::vector<int> Interleaving(std::uint64_t seed) {
  Scheduler s(seed);
  std::vector<int> log;
  for (int id = 0; id < 4; ++id) {
    s.Create("worker", [&s, &log, id] {
      for (int i = 0; i < 10; ++i) {
        log.push_back(id);
        s.Yield();
      }
    });
  }
  s.Run();
  return log;
}

TEST(KernelScheduler, TheSameSeedGivesTheSameInterleaving) {
  const std::vector<int> first = Interleaving(7);
  EXPECT_EQ(first.size(), 40u);
  EXPECT_EQ(Interleaving(7), first);
}

TEST(KernelScheduler, AnotherSeedGivesAnotherInterleaving) {
  EXPECT_NE(Interleaving(8), Interleaving(7));
}

TEST(KernelScheduler, ABlockedThreadRunsAgainOnlyOnceWoken) {
  Scheduler s(3);
  std::vector<std::string> log;
  bool blocking = false;
  const Scheduler::ThreadId waiter = s.Create("waiter", [&] {
    log.push_back("waiter blocks");
    blocking = true;
    s.Block("the signal");
    log.push_back("waiter woken");
  });
  s.Create("signaller", [&] {
    while (!blocking) s.Yield();
    for (int i = 0; i < 3; ++i) s.Yield();  // the waiter stays blocked meanwhile
    log.push_back("signal");
    s.Wake(waiter);
  });
  s.Run();
  EXPECT_EQ(log, (std::vector<std::string>{"waiter blocks", "signal", "waiter woken"}));
}

TEST(KernelScheduler, WhenEveryThreadIsBlockedTheIdleHookMayWakeOne) {
  Scheduler s(4);
  int idle_calls = 0;
  bool resumed = false;
  const Scheduler::ThreadId sleeper = s.Create("sleeper", [&] {
    s.Block("a timer");
    resumed = true;
  });
  s.SetIdleHook([&] {
    ++idle_calls;
    s.Wake(sleeper);  // as a timer firing in simulated time would
    return true;
  });
  s.Run();
  EXPECT_TRUE(resumed);
  EXPECT_EQ(idle_calls, 1);
}

TEST(KernelScheduler, ADeadlockFailsRunNamingEachWaiterAndWhatItWaitsFor) {
  Scheduler s(5);
  s.Create("connector", [&] { s.Block("event 'connected'"); });
  s.Create("acceptor", [&] { s.Block("event 'request'"); });
  s.SetIdleHook([] { return false; });
  try {
    s.Run();
    FAIL() << "Run returned";
  } catch (const DeadlockError& e) {
    const std::string report = e.what();
    EXPECT_NE(report.find("seed 5"), std::string::npos) << report;
    EXPECT_NE(report.find("'connector' waits for event 'connected'"), std::string::npos) << report;
    EXPECT_NE(report.find("'acceptor' waits for event 'request'"), std::string::npos) << report;
  }
}

TEST(KernelScheduler, AnExceptionInAThreadEndsRunAndIsRethrown) {
  Scheduler s(6);
  s.Create("thrower", [] { throw std::logic_error("from a kernel thread"); });
  EXPECT_THROW(s.Run(), std::logic_error);
}

TEST(KernelScheduler, AFailingIdleHookEndsRunWithItsError) {
  Scheduler s(10);
  s.Create("sleeper", [&] { s.Block("a timer"); });
  s.SetIdleHook([]() -> bool { throw std::runtime_error("the simulation failed"); });
  try {
    s.Run();
    FAIL() << "Run returned";
  } catch (const DeadlockError& e) {
    FAIL() << "reported a deadlock instead: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the simulation failed");
  }
}

TEST(KernelScheduler, AThreadMayCreateThreads) {
  Scheduler s(9);
  int ran = 0;
  s.Create("parent", [&] {
    for (int i = 0; i < 3; ++i) s.Create("child", [&] { ++ran; });
  });
  s.Run();
  EXPECT_EQ(ran, 3);
}

}  // namespace
}  // namespace ndksim::kernel
