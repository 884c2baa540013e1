// SPDX-License-Identifier: MIT
// Kernel threads over a fabric: waits move simulated time only when every thread is blocked, and
// a completion's callback (in the simulation, like a DPC) releases a waiting thread.
#include <gtest/gtest.h>

#include <cstring>

#include "kernel/dispatcher.h"
#include "ndksim/kernel/environment.h"
#include "ndksim/harness.h"

namespace ndksim::kernel {
namespace {

using Kind = DispatcherObject::Kind;

TEST(KernelEnvironment, AWaitWithATimeoutMovesTheFabricsClockToItsDeadline) {
  Fabric fabric;
  fabric.AddNode({"a", {"192.0.2.1"}});
  Environment env(fabric, EnvironmentConfig{.seed = 1});
  DispatcherObject never;
  Dispatcher::InitializeEvent(never, Kind::kNotificationEvent, false);
  const TimePoint start = fabric.Now();
  WaitOutcome outcome;
  env.Run("waiter", [&] {
    DispatcherObject* objects[] = {&never};
    outcome = env.Objects().Wait(objects, WaitType::kAny, start + Microseconds(40));
  });
  EXPECT_TRUE(outcome.timed_out);
  EXPECT_EQ(fabric.Now(), start + Microseconds(40));
}

// A kernel thread posts a signaled write, arms its CQ and waits on an event; the CQ's
// notification callback, run by the simulation, sets the event. The thread wakes with the write
// complete, at the simulated time the completion took, and its bytes placed.
TEST(KernelEnvironment, ACompletionCallbackReleasesTheThreadWaitingForIt) {
  QpPair pair;
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  std::memset(src->Data(), 0x5A, 64);
  Environment env(pair.fabric(), EnvironmentConfig{.seed = 2});
  DispatcherObject completed;
  Dispatcher::InitializeEvent(completed, Kind::kSynchronizationEvent, false);
  pair.a().on_cq_notification = [&](NTSTATUS) { env.Objects().SetEvent(completed); };
  const TimePoint start = pair.fabric().Now();
  TimePoint woke{};
  ULONG results = 0;
  env.Run("initiator", [&] {
    NDK_CQ* cq = pair.a().initiator_cq;
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
    const NDK_SGE sge = src->Sge(0, 64);
    ASSERT_EQ(pair.a().Write(nullptr, {&sge, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
    DispatcherObject* objects[] = {&completed};
    EXPECT_FALSE(env.Objects().Wait(objects, WaitType::kAny, std::nullopt).timed_out);
    woke = env.Now();
    NDK_RESULT r[4];
    results = cq->Dispatch->NdkGetCqResults(cq, r, 4);
  });
  EXPECT_EQ(results, 1u);
  EXPECT_GT(woke, start);
  for (std::size_t i = 0; i < 64; ++i) ASSERT_EQ(dst->Data()[i], std::byte{0x5A}) << i;
}

TEST(KernelEnvironment, AThreadWaitingForAnEventNothingWillSetIsADeadlock) {
  Fabric fabric;
  fabric.AddNode({"a", {"192.0.2.1"}});
  Environment env(fabric, EnvironmentConfig{.seed = 3});
  DispatcherObject never;
  Dispatcher::InitializeEvent(never, Kind::kNotificationEvent, false);
  EXPECT_THROW(env.Run("waiter",
                       [&] {
                         DispatcherObject* objects[] = {&never};
                         env.Objects().Wait(objects, WaitType::kAny, std::nullopt);
                       }),
               DeadlockError);
}

}  // namespace
}  // namespace ndksim::kernel
