// SPDX-License-Identifier: MIT
// The executive's lookaside lists and blocking locks in the kernel environment, driven by C code
// built against its stand-in headers (tests/kernel/consumer_locks.c): what each does among kernel
// threads on simulated time, and what the verifier reports.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernel/consumer_locks.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"

namespace ndksim::kernel {
namespace {

constexpr std::uint8_t kPassiveLevel = 0;
constexpr std::uint8_t kApcLevel = 1;

class KernelLocks : public ::testing::TestWithParam<std::uint64_t> {
 protected:
  KernelLocks() {
    std::memset(&g_lock_results, 0, sizeof(g_lock_results));
    node_ = &fabric_.AddNode({"host", {"192.0.2.1"}});
  }

  // Runs `body` as a kernel thread, and every thread it starts, until all have ended.
  void Run(const std::function<void()>& body) {
    env_.StartThread("test", body, node_);
    env_.Run();
  }

  // The check a violation scenario fails with; the message must name the C file's site.
  std::string ViolationOf(void (*scenario)()) {
    try {
      Run(scenario);
    } catch (const VerifierError& e) {
      message_ = e.what();
      EXPECT_NE(message_.find("consumer_locks.c:"), std::string::npos) << message_;
      return e.Check();
    }
    return "none";
  }

  Fabric fabric_{FabricConfig{.seed = 5, .profile = profiles::kFunctional}};
  Node* node_ = nullptr;
  std::string message_;  // the last violation's report
  // Every seed's schedule, with the lock services' preemption points on.
  Environment env_{fabric_, EnvironmentConfig{.seed = GetParam(), .preemption = {.events = true, .locks = true}}};
};

// ---- lookaside lists ----

TEST_P(KernelLocks, ALookasideListGivesDistinctEntriesAndCountsThem) {
  Run([] { ScenarioLookasideLists(); });
  EXPECT_EQ(g_lock_results.total_allocates, 3u);
  EXPECT_EQ(g_lock_results.total_frees, 3u);
  EXPECT_TRUE(g_lock_results.entries_distinct);
}

TEST_P(KernelLocks, ALookasideListExCallsItsRoutinesWithItsSize) {
  Run([] { ScenarioLookasideListExWithRoutines(); });
  EXPECT_EQ(g_lock_results.custom_allocates, 1u);
  EXPECT_EQ(g_lock_results.custom_frees, 1u);
  EXPECT_EQ(g_lock_results.entry_size_seen, 48u);
}

TEST_P(KernelLocks, AnEntryLeftOutAtUnloadIsALeakOfTheListsTag) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node_, "leaky", &LookasideLeakDriverEntry);
  env_.Run();
  env_.UnloadDriver(driver);
  try {
    env_.Run();
    FAIL() << "no leak reported";
  } catch (const VerifierError& e) {
    EXPECT_EQ(e.Check(), "LEAK");
    EXPECT_NE(std::string(e.what()).find("Look"), std::string::npos) << e.what();  // the tag, 'kooL'
  }
}

TEST_P(KernelLocks, VerifierReportsAnUninitializedLookasideList) {
  EXPECT_EQ(ViolationOf(&ViolationLookasideNotInitialized), "LOOKASIDE");
}

// ---- fast and guarded mutexes ----

TEST_P(KernelLocks, AFastMutexExcludesAndRunsItsHolderAtApcLevel) {
  Run([] { ScenarioFastMutexExcludes(3, 4); });
  EXPECT_EQ(g_lock_results.counter, 12);  // no increment lost to a holder that paused
  EXPECT_EQ(g_lock_results.irql_held, kApcLevel);
  EXPECT_EQ(g_lock_results.irql_after, kPassiveLevel);
  EXPECT_EQ(g_lock_results.try_while_held, 0);  // another thread's try fails while it is held
}

TEST_P(KernelLocks, AGuardedMutexHoldsAGuardedRegionNotTheIrql) {
  Run([] { ScenarioGuardedMutexDisablesApcs(); });
  EXPECT_EQ(g_lock_results.apcs_disabled_held, 1);
  EXPECT_EQ(g_lock_results.irql_held, kPassiveLevel);
  EXPECT_EQ(g_lock_results.irql_after, 0);  // the region is left with the mutex
}

TEST_P(KernelLocks, VerifierReportsAFastMutexAcquiredTwiceByItsHolder) {
  EXPECT_EQ(ViolationOf(&ViolationFastMutexRecursive), "FAST_MUTEX");
}

TEST_P(KernelLocks, VerifierReportsAFastMutexReleasedUnheld) {
  EXPECT_EQ(ViolationOf(&ViolationFastMutexReleasedUnheld), "FAST_MUTEX");
}

// ---- kernel mutexes and semaphores ----

TEST_P(KernelLocks, AKernelMutexExcludesAndItsOwnerTakesItAgain) {
  Run([] { ScenarioKernelMutexExcludesAndRecurses(3, 4); });
  EXPECT_EQ(g_lock_results.counter, 12);
  EXPECT_EQ(g_lock_results.mutex_state_after, 1);  // free: every acquisition was released
}

TEST_P(KernelLocks, ASemaphoreAdmitsAsManyHoldersAsItsCount) {
  Run([] { ScenarioSemaphoreAdmitsItsCount(4); });
  EXPECT_EQ(g_lock_results.max_readers_inside, 2);
  EXPECT_EQ(g_lock_results.readers_inside, 0);
}

TEST_P(KernelLocks, VerifierReportsAKernelMutexReleasedUnheld) {
  EXPECT_EQ(ViolationOf(&ViolationKernelMutexReleasedUnheld), "MUTEX");
}

TEST_P(KernelLocks, VerifierReportsASemaphoreReleasedAboveItsLimit) {
  EXPECT_EQ(ViolationOf(&ViolationSemaphoreAboveItsLimit), "SEMAPHORE");
}

// ---- executive resources ----

TEST_P(KernelLocks, ResourceReadersShareAndAWriterIsAlone) {
  Run([] { ScenarioResourceReadersShareWritersExclude(3); });
  EXPECT_EQ(g_lock_results.max_readers_inside, 3);
  EXPECT_EQ(g_lock_results.max_inside_with_writer, 1);
}

TEST_P(KernelLocks, AnExclusiveWaiterGoesBeforeALaterSharedAcquirer) {
  Run([] { ScenarioResourceExclusiveWaiterGoesFirst(); });
  EXPECT_EQ(std::string(g_lock_results.order, static_cast<std::size_t>(g_lock_results.order_length)), "ABC");
  EXPECT_EQ(g_lock_results.exclusive_waiters_seen, 1u);
}

TEST_P(KernelLocks, AResourceHolderMayAcquireItAgainAndReleasesEachAcquisition) {
  Run([] { ScenarioResourceRecursion(); });
  EXPECT_EQ(g_lock_results.exclusive_seen, 1);
  EXPECT_EQ(g_lock_results.shared_count, 3u);
}

TEST_P(KernelLocks, VerifierReportsAResourceAcquiredOutsideACriticalRegion) {
  EXPECT_EQ(ViolationOf(&ViolationResourceOutsideCriticalRegion), "RESOURCE");
}

TEST_P(KernelLocks, VerifierReportsAResourceDeletedWhileHeld) {
  EXPECT_EQ(ViolationOf(&ViolationResourceDeletedWhileHeld), "RESOURCE");
}

TEST_P(KernelLocks, VerifierReportsAnExclusiveAcquisitionByASharedHolder) {
  EXPECT_EQ(ViolationOf(&ViolationResourceSharedThenExclusive), "RESOURCE");
}

// ---- push locks ----

TEST_P(KernelLocks, PushLockReadersShareAndAWriterIsAlone) {
  Run([] { ScenarioPushLockReadersShare(3); });
  EXPECT_EQ(g_lock_results.max_readers_inside, 3);
  EXPECT_EQ(g_lock_results.max_inside_with_writer, 1);
}

TEST_P(KernelLocks, VerifierReportsAPushLockAcquiredTwiceByItsHolder) {
  EXPECT_EQ(ViolationOf(&ViolationPushLockRecursive), "PUSH_LOCK");
}

// ---- lock order: every kind of lock, as Driver Verifier's deadlock detection orders them ----

TEST_P(KernelLocks, AFastMutexAndAResourceTakenInBothOrdersAreALockOrderInversion) {
  EXPECT_EQ(ViolationOf(&ViolationMutexAndResourceInBothOrders), "LOCK_ORDER");
  const std::string& message = message_;
  EXPECT_NE(message.find("fast mutex "), std::string::npos) << message;
  EXPECT_NE(message.find(" acquired while holding resource "), std::string::npos) << message;
  EXPECT_NE(message.find("in MutexThenResource"), std::string::npos) << message;  // the earlier order's site
  EXPECT_NE(message.find("in ResourceThenMutex"), std::string::npos) << message;  // the inversion's
}

TEST_P(KernelLocks, AKernelMutexAndAPushLockTakenInBothOrdersAreALockOrderInversion) {
  EXPECT_EQ(ViolationOf(&ViolationKernelMutexAndPushLockInBothOrders), "LOCK_ORDER");
  const std::string& message = message_;
  EXPECT_NE(message.find("kernel mutex "), std::string::npos) << message;
  EXPECT_NE(message.find(" acquired while holding push lock "), std::string::npos) << message;
  EXPECT_NE(message.find("in KernelMutexThenPushLock"), std::string::npos) << message;
}

TEST_P(KernelLocks, TheSameOrderATryOrLocksInitializedAgainAreNoInversion) {
  EXPECT_EQ(ViolationOf(&ScenarioWaitableLockOrderKeptTriedOrRenewed), "none");
}

INSTANTIATE_TEST_SUITE_P(Seeds, KernelLocks, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace ndksim::kernel
