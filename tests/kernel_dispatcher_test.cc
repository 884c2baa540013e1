// SPDX-License-Identifier: MIT
// The kernel environment's events and waits, over its scheduler, with a clock the test moves.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kernel/dispatcher.h"
#include "kernel/scheduler.h"

namespace ndksim::kernel {
namespace {

using Kind = DispatcherObject::Kind;

// A scheduler, its dispatcher, and simulated time that moves only when every thread is blocked,
// to the earliest deadline of a wait (as the environment does with the fabric's clock).
struct Rig {
  explicit Rig(std::uint64_t seed = 1) : scheduler(seed), dispatcher(scheduler, [this] { return now; }) {
    scheduler.SetIdleHook([this] {
      const std::optional<TimePoint> next = dispatcher.NextDeadline();
      if (!next) return false;
      now = *next;
      return dispatcher.ExpireDue(now);
    });
  }
  WaitOutcome WaitOne(DispatcherObject& o, std::optional<TimePoint> deadline = std::nullopt) {
    DispatcherObject* objects[] = {&o};
    return dispatcher.Wait(objects, WaitType::kAny, deadline);
  }
  TimePoint now{};
  Scheduler scheduler;
  Dispatcher dispatcher;
};

TEST(KernelEvents, ANotificationEventReleasesEveryWaiterAndStaysSignaled) {
  Rig r;
  DispatcherObject event;
  Dispatcher::InitializeEvent(event, Kind::kNotificationEvent, false);
  int waiting = 0;
  int released = 0;
  for (int i = 0; i < 3; ++i) {
    r.scheduler.Create("waiter", [&] {
      ++waiting;
      EXPECT_FALSE(r.WaitOne(event).timed_out);
      ++released;
    });
  }
  r.scheduler.Create("setter", [&] {
    while (waiting < 3) r.scheduler.Yield();
    EXPECT_EQ(r.dispatcher.SetEvent(event), 0);
  });
  r.scheduler.Run();
  EXPECT_EQ(released, 3);
  EXPECT_EQ(event.signal_state, 1);
}

TEST(KernelEvents, ASynchronizationEventReleasesOneWaiterPerSignalAndResets) {
  Rig r;
  DispatcherObject event;
  Dispatcher::InitializeEvent(event, Kind::kSynchronizationEvent, false);
  int waiting = 0;
  int released = 0;
  for (int i = 0; i < 3; ++i) {
    r.scheduler.Create("waiter", [&] {
      ++waiting;
      r.WaitOne(event);
      ++released;
    });
  }
  r.scheduler.Create("setter", [&] {
    while (waiting < 3) r.scheduler.Yield();
    for (int signal = 1; signal <= 3; ++signal) {
      EXPECT_EQ(r.dispatcher.SetEvent(event), 0);
      EXPECT_EQ(event.signal_state, 0);  // taken by the one waiter it released
      while (released < signal) r.scheduler.Yield();
      for (int i = 0; i < 5; ++i) r.scheduler.Yield();
      EXPECT_EQ(released, signal);
    }
  });
  r.scheduler.Run();
  EXPECT_EQ(released, 3);
}

// Which waiter a synchronization event releases: the same for a seed, different across seeds.
int FirstReleased(std::uint64_t seed) {
  Rig r(seed);
  DispatcherObject event;
  Dispatcher::InitializeEvent(event, Kind::kSynchronizationEvent, false);
  int waiting = 0;
  int first = -1;
  for (int id = 0; id < 4; ++id) {
    r.scheduler.Create("waiter", [&, id] {
      ++waiting;
      r.WaitOne(event);
      if (first < 0) first = id;
      r.dispatcher.SetEvent(event);  // pass it on, so that everyone ends
    });
  }
  r.scheduler.Create("setter", [&] {
    while (waiting < 4) r.scheduler.Yield();
    r.dispatcher.SetEvent(event);
  });
  r.scheduler.Run();
  return first;
}

TEST(KernelEvents, WhichWaiterASynchronizationEventReleasesIsTheSeedsChoice) {
  std::set<int> seen;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const int first = FirstReleased(seed);
    EXPECT_EQ(FirstReleased(seed), first) << "seed " << seed;
    seen.insert(first);
  }
  EXPECT_GE(seen.size(), 2u);
}

TEST(KernelEvents, AWaitOnASignaledEventReturnsAtOnceAndASynchronizationEventIsTaken) {
  Rig r;
  DispatcherObject notification;
  DispatcherObject synchronization;
  Dispatcher::InitializeEvent(notification, Kind::kNotificationEvent, true);
  Dispatcher::InitializeEvent(synchronization, Kind::kSynchronizationEvent, true);
  // Outside any kernel thread: a satisfied wait never blocks.
  EXPECT_FALSE(r.WaitOne(notification).timed_out);
  EXPECT_FALSE(r.WaitOne(synchronization).timed_out);
  EXPECT_EQ(notification.signal_state, 1);
  EXPECT_EQ(synchronization.signal_state, 0);
}

TEST(KernelEvents, AWaitForAnyReportsTheObjectThatSatisfiedIt) {
  Rig r;
  DispatcherObject a;
  DispatcherObject b;
  Dispatcher::InitializeEvent(a, Kind::kNotificationEvent, false);
  Dispatcher::InitializeEvent(b, Kind::kSynchronizationEvent, false);
  WaitOutcome outcome;
  bool waiting = false;
  r.scheduler.Create("waiter", [&] {
    DispatcherObject* objects[] = {&a, &b};
    waiting = true;
    outcome = r.dispatcher.Wait(objects, WaitType::kAny, std::nullopt);
  });
  r.scheduler.Create("setter", [&] {
    while (!waiting) r.scheduler.Yield();
    r.dispatcher.SetEvent(b);
  });
  r.scheduler.Run();
  EXPECT_FALSE(outcome.timed_out);
  EXPECT_EQ(outcome.index, 1u);
  EXPECT_EQ(b.signal_state, 0);
}

TEST(KernelEvents, AWaitForAllEndsOnlyWhenEveryObjectIsSignaled) {
  Rig r;
  DispatcherObject a;
  DispatcherObject b;
  Dispatcher::InitializeEvent(a, Kind::kSynchronizationEvent, false);
  Dispatcher::InitializeEvent(b, Kind::kNotificationEvent, false);
  std::vector<std::string> log;
  bool waiting = false;
  r.scheduler.Create("waiter", [&] {
    DispatcherObject* objects[] = {&a, &b};
    waiting = true;
    EXPECT_FALSE(r.dispatcher.Wait(objects, WaitType::kAll, std::nullopt).timed_out);
    log.push_back("released");
  });
  r.scheduler.Create("setter", [&] {
    while (!waiting) r.scheduler.Yield();
    r.dispatcher.SetEvent(a);
    for (int i = 0; i < 3; ++i) r.scheduler.Yield();
    log.push_back("a set");
    r.dispatcher.SetEvent(b);
  });
  r.scheduler.Run();
  EXPECT_EQ(log, (std::vector<std::string>{"a set", "released"}));
  EXPECT_EQ(a.signal_state, 0);  // the wait took the synchronization event
  EXPECT_EQ(b.signal_state, 1);
}

TEST(KernelEvents, AWaitTimesOutAtItsDeadlineInSimulatedTime) {
  Rig r;
  DispatcherObject event;
  Dispatcher::InitializeEvent(event, Kind::kNotificationEvent, false);
  WaitOutcome outcome;
  TimePoint woke{};
  r.scheduler.Create("waiter", [&] {
    outcome = r.WaitOne(event, TimePoint{Microseconds(250)});
    woke = r.now;
  });
  r.scheduler.Run();
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_EQ(woke, TimePoint{Microseconds(250)});
  EXPECT_EQ(event.first, nullptr);  // its wait block is gone from the event
}

TEST(KernelEvents, ADeadlineThatHasPassedOnlyLooks) {
  Rig r;
  r.now = TimePoint{Microseconds(5)};
  DispatcherObject event;
  Dispatcher::InitializeEvent(event, Kind::kNotificationEvent, false);
  EXPECT_TRUE(r.WaitOne(event, r.now).timed_out);  // outside any kernel thread: no block
}

TEST(KernelEvents, SetAndResetReturnThePreviousState) {
  Rig r;
  DispatcherObject event;
  Dispatcher::InitializeEvent(event, Kind::kNotificationEvent, false);
  EXPECT_EQ(r.dispatcher.SetEvent(event), 0);
  EXPECT_EQ(r.dispatcher.SetEvent(event), 1);
  EXPECT_EQ(Dispatcher::ResetEvent(event), 1);
  EXPECT_EQ(Dispatcher::ResetEvent(event), 0);
}

TEST(KernelEvents, ADeadlockReportSaysWhichEventEachThreadWaitsFor) {
  Rig r;
  DispatcherObject event;
  Dispatcher::InitializeEvent(event, Kind::kSynchronizationEvent, false);
  r.scheduler.Create("accept", [&] { r.WaitOne(event); });
  try {
    r.scheduler.Run();
    FAIL() << "Run returned";
  } catch (const DeadlockError& e) {
    EXPECT_NE(std::string(e.what()).find("'accept' waits for any of 1: synchronization event"), std::string::npos)
        << e.what();
  }
}

// A thread abandoned in a wait (its run ended in a deadlock) leaves its frames on its stack. The
// next thread whose stack is mapped where that one was must find it clean: under
// AddressSanitizer the abandoned frames' redzones used to stay poisoned, and the next wait's
// locals "overflowed" into them.
TEST(KernelEvents, AThreadAbandonedInAWaitLeavesItsStackCleanForTheNext) {
  {
    Rig deadlocked(11);
    DispatcherObject never;
    Dispatcher::InitializeEvent(never, Kind::kNotificationEvent, false);
    deadlocked.scheduler.Create("stuck", [&] { deadlocked.WaitOne(never); });
    EXPECT_THROW(deadlocked.scheduler.Run(), DeadlockError);
  }
  Rig next(12);
  DispatcherObject event;
  Dispatcher::InitializeEvent(event, Kind::kNotificationEvent, false);
  WaitOutcome outcome;
  next.scheduler.Create("timed", [&] { outcome = next.WaitOne(event, TimePoint{Microseconds(1)}); });
  next.scheduler.Run();
  EXPECT_TRUE(outcome.timed_out);
}

}  // namespace
}  // namespace ndksim::kernel
