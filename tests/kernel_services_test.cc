// SPDX-License-Identifier: MIT
// The WDK services of the kernel environment, driven by C code built against its stand-in headers
// (tests/kernel/consumer_services.c): what each service does, on simulated time, and what the
// verifier reports.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernel/consumer_services.h"
#include "kernel/run_check.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"

namespace ndksim::kernel {
namespace {

constexpr std::int32_t kSuccess = 0;
constexpr std::int32_t kTimeout = 0x102;
constexpr std::int32_t kNotFound = static_cast<std::int32_t>(0xC0000225u);
constexpr std::int32_t kNotSupported = static_cast<std::int32_t>(0xC00000BBu);

// Unloads `driver` and runs the environment: the report of the leak check, which must fail.
std::string LeakReportAtUnload(Environment& env, _DRIVER_OBJECT* driver) {
  env.UnloadDriver(driver);
  std::string report;
  EXPECT_EQ(testing::CheckOfRun(env, &report), "LEAK");
  return report;
}

class KernelServices : public ::testing::Test {
 protected:
  KernelServices() {
    std::memset(&g_results, 0, sizeof(g_results));
    node0_ = &fabric_.AddNode({"initiator", {"192.0.2.1"}});
    node1_ = &fabric_.AddNode({"target", {"192.0.2.2"}});
  }

  // Runs `body` as a kernel thread on node 0's machine until every thread has ended.
  void RunOnNode0(const std::function<void()>& body) {
    env_.StartThread("test", body, node0_);
    env_.Run();
  }

  // Runs `scenario` on node 0: the check it fails with ("none" if it fails none); the report is
  // kept in message_.
  std::string CheckOf(void (*scenario)()) {
    env_.StartThread("test", scenario, node0_);
    return testing::CheckOfRun(env_, &message_);
  }

  // The check a violation scenario fails with; the report must name the C file's site.
  std::string ViolationOf(void (*scenario)()) {
    const std::string check = CheckOf(scenario);
    EXPECT_NE(message_.find("consumer_services.c:"), std::string::npos) << message_;
    return check;
  }

  Fabric fabric_{FabricConfig{.seed = 5, .profile = profiles::kConnectX100GbeRoce}};
  Node* node0_ = nullptr;
  Node* node1_ = nullptr;
  Environment env_{fabric_, EnvironmentConfig{.seed = 11}};
  std::string message_;
};

TEST_F(KernelServices, EachKernelThreadPostsFromASimulatedCoreOfItsOwn) {
  std::uint32_t first = 0;
  std::uint32_t second = 0;
  env_.StartThread("first", [&] { first = node0_->CurrentCore(); }, node0_);
  env_.StartThread("second", [&] { second = node0_->CurrentCore(); }, node0_);
  env_.Run();
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(second, 2u);
  EXPECT_EQ(node0_->CurrentCore(), 0u);  // the test's own thread, which runs DPCs and callbacks
}

TEST_F(KernelServices, AnAdapterOpensThroughWskByTheInterfaceIndexOfTheNodesAddress) {
  std::int32_t status = -1;
  RunOnNode0([&] { status = ScenarioOpenAdapterThroughWsk(inet_addr("192.0.2.1")); });
  EXPECT_EQ(status, kSuccess);
  EXPECT_EQ(g_results.if_index, env_.IfIndexOf(*node0_));
  EXPECT_EQ(g_results.ndk_dispatch_bytes, 2 * sizeof(void*));
  EXPECT_GT(g_results.max_receive_sge, 0u);
}

TEST_F(KernelServices, TheLoopbackHasNoNdkAndAnotherMachinesIndexIsNotFound) {
  RunOnNode0([&] { (void)ScenarioOpenAdapterThroughWsk(inet_addr("192.0.2.1")); });
  EXPECT_EQ(g_results.loopback_open_status, kNotSupported);
  EXPECT_EQ(g_results.unknown_open_status, kNotFound);  // node 1's index, seen from node 0
  EXPECT_EQ(g_results.if_index + 1, env_.IfIndexOf(*node1_));
}

// ---- a machine with several RNICs (Environment::AddRnic) ----
class KernelTwoRnics : public ::testing::Test {
 protected:
  KernelTwoRnics() {
    std::memset(&g_results, 0, sizeof(g_results));
    first_ = &fabric_.AddNode({"server-a", {"192.0.2.1"}});
    (void)fabric_.AddNode({"client", {"192.0.2.2"}});
    second_ = &fabric_.AddNode({"server-b", {"192.0.2.11"}});
    env_.AddRnic(*first_, *second_);
    env_.StartThread("test", [] { status_ = ScenarioTwoRnicsOnOneMachine(inet_addr("192.0.2.1"), inet_addr("192.0.2.11")); },
                     first_);
    env_.Run();
  }

  static inline std::int32_t status_ = -1;
  Fabric fabric_{FabricConfig{.seed = 5, .profile = profiles::kConnectX100GbeRoce}};
  Node* first_ = nullptr;
  Node* second_ = nullptr;
  Environment env_{fabric_, EnvironmentConfig{.seed = 11}};
};

TEST_F(KernelTwoRnics, TheMachineHasAnInterfaceForEachRnicBesideTheLoopback) {
  EXPECT_EQ(status_, kSuccess);
  EXPECT_EQ(g_results.interface_count, 3u);
  EXPECT_EQ(g_results.if_index, env_.IfIndexOf(*first_));
  EXPECT_EQ(g_results.second_if_index, env_.IfIndexOf(*second_));
}

TEST_F(KernelTwoRnics, EachRnicOpensAsAnAdapterOfItsOwn) {
  EXPECT_EQ(g_results.first_open_status, kSuccess);
  EXPECT_EQ(g_results.second_open_status, kSuccess);
  EXPECT_EQ(g_results.adapters_differ, 1);
}

TEST_F(KernelTwoRnics, AnRnicsLuidConvertsToItsAliasAndNameAndBack) {
  EXPECT_EQ(g_results.alias_status, kSuccess);
  EXPECT_STREQ(g_results.alias, "Ethernet 3");  // the node's index is 2
  EXPECT_EQ(g_results.alias_round_trip, 1);
  EXPECT_EQ(g_results.name_status, kSuccess);
  EXPECT_EQ(std::string(g_results.name), "ethernet_" + std::to_string(env_.IfIndexOf(*second_)));
  EXPECT_EQ(g_results.name_round_trip, 1);
}

TEST_F(KernelTwoRnics, AnAliasBufferTooShortIsRefused) {
  EXPECT_EQ(g_results.short_buffer_status, static_cast<std::int32_t>(0xC0000023u));  // STATUS_BUFFER_TOO_SMALL
}

// A machine's first node heads it: it cannot move into another machine.
TEST(KernelMachines, TheFirstNodeOfAMachineWithSeveralRnicsCannotMove) {
  Fabric fabric(FabricConfig{.seed = 5, .profile = profiles::kFunctional});
  Node& a = fabric.AddNode({"a", {"192.0.2.1"}});
  Node& b = fabric.AddNode({"b", {"192.0.2.2"}});
  Node& c = fabric.AddNode({"c", {"192.0.2.3"}});
  Environment env(fabric, EnvironmentConfig{.seed = 11});
  env.AddRnic(a, b);
  EXPECT_THROW(env.AddRnic(c, a), std::logic_error);
}

TEST_F(KernelServices, ATimerDpcRunsAtDispatchLevelAtItsSimulatedDueTime) {
  RunOnNode0([] { ScenarioTimerDpc(); });
  EXPECT_EQ(g_results.dpc_irql, 2);
  EXPECT_EQ(g_results.dpc_time - g_results.start_time, 1000u);  // 100 us in 100-ns units
  EXPECT_EQ(g_results.wake_time, g_results.dpc_time);
  EXPECT_EQ(g_results.timer_signaled, 1);
}

TEST_F(KernelServices, AWaitWithARelativeTimeoutReturnsTimeoutAtItsDeadline) {
  std::int32_t status = -1;
  RunOnNode0([&] { status = ScenarioWaitTimesOut(); });
  EXPECT_EQ(status, kTimeout);
  EXPECT_EQ(g_results.wake_time - g_results.start_time, 250u);
}

TEST_F(KernelServices, AWorkItemQueuedFromADpcRunsAtPassiveLevel) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node0_, "work", &CleanDriverEntry);
  env_.Run();
  std::int32_t status = -1;
  RunOnNode0([&] { status = ScenarioWorkItemFromDpc(driver); });
  EXPECT_EQ(status, kSuccess);
  EXPECT_EQ(g_results.work_irql, 0);
}

TEST_F(KernelServices, ASystemThreadsObjectIsSignaledWhenItTerminates) {
  std::int32_t status = -1;
  RunOnNode0([&] { status = ScenarioSystemThreadIsWaitable(); });
  EXPECT_EQ(status, kSuccess);
  EXPECT_EQ(g_results.thread_counter, 2);
}

TEST_F(KernelServices, AnMdlOfNonpagedPoolMapsTheBufferItDescribes) {
  std::int32_t status = -1;
  RunOnNode0([&] { status = ScenarioMdlOfPool(); });
  EXPECT_EQ(status, kSuccess);
  EXPECT_EQ(g_results.mdl_system_address_matches, 1);
  EXPECT_EQ(g_results.mdl_byte_count, 8192u);
  EXPECT_EQ(g_results.mdl_byte_offset, 100u);
  EXPECT_EQ(g_results.zeroed, 1);
  EXPECT_EQ(env_.PoolUsage().at("Test").allocations, 0u);
  EXPECT_EQ(env_.PoolUsage().at("Test").total_allocations, 1u);
}

TEST_F(KernelServices, ListOperationsKeepInsertionOrder) {
  int sum = 0;
  RunOnNode0([&] { sum = ScenarioListsKeepOrder(); });
  EXPECT_EQ(sum, 13);
}

TEST_F(KernelServices, RundownWaitsUntilTheLastReferenceIsReleased) {
  std::int32_t status = -1;
  RunOnNode0([&] { status = ScenarioRundownWaitsForRelease(); });
  EXPECT_EQ(status, kSuccess);
  EXPECT_EQ(g_results.wake_time - g_results.start_time, 500u);
  EXPECT_EQ(g_results.acquire_after_rundown, 0);
}

TEST_F(KernelServices, VerifierReportsAWaitAtDispatchLevel) { EXPECT_EQ(ViolationOf(&ViolationWaitAtDispatch), "IRQL"); }

TEST_F(KernelServices, VerifierReportsASpinLockReleasedTwice) {
  EXPECT_EQ(ViolationOf(&ViolationSpinLockReleasedTwice), "SPIN_LOCK");
}

// The second KeReleaseSpinLock runs at PASSIVE_LEVEL (the first restored it): it is named a double
// release, not a release at the wrong IRQL.
TEST_F(KernelServices, ASecondKeReleaseSpinLockIsNamedADoubleRelease) {
  EXPECT_EQ(ViolationOf(&ViolationSpinLockReleasedTwiceAtPassive), "SPIN_LOCK");
  EXPECT_NE(message_.find("is not held (released twice?)"), std::string::npos) << message_;
}

TEST_F(KernelServices, VerifierReportsPagedCodeAtRaisedIrql) {
  EXPECT_EQ(ViolationOf(&ViolationPagedCodeAtDispatch), "IRQL");
}

TEST_F(KernelServices, VerifierReportsAnEventSetAfterItsPoolWasFreed) {
  EXPECT_EQ(ViolationOf(&ViolationSetEventAfterFree), "USE_AFTER_FREE");
}

TEST_F(KernelServices, VerifierReportsPoolFreedWithTheWrongTag) {
  EXPECT_EQ(ViolationOf(&ViolationFreeWithWrongTag), "POOL");
}

TEST_F(KernelServices, VerifierReportsPoolAndAnMdlLeakedAtUnloadByTag) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node0_, "leaky", &LeakyDriverEntry);
  env_.Run();
  ASSERT_EQ(env_.DriverStatus(driver), kSuccess);
  const std::string what = LeakReportAtUnload(env_, driver);
  EXPECT_NE(what.find("pool tag 'Leak': 1 allocation(s), 200 bytes"), std::string::npos) << what;
  EXPECT_NE(what.find("MDL allocated at"), std::string::npos) << what;
}

// The leak check is the environment's own, made at DriverUnload's return: its report names no call
// site of its own (it said "at an unknown site (a call through a pointer)").
TEST_F(KernelServices, ALeakReportClaimsNoCallSite) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node0_, "leaky", &LeakyDriverEntry);
  env_.Run();
  const std::string what = LeakReportAtUnload(env_, driver);
  EXPECT_EQ(what.find("unknown site"), std::string::npos) << what;
  EXPECT_NE(what.find("on kernel thread 'leaky!DriverUnload'"), std::string::npos) << what;
}

TEST_F(KernelServices, ADriverThatFreesEverythingUnloadsSilently) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node0_, "clean", &CleanDriverEntry);
  env_.Run();
  env_.UnloadDriver(driver);
  EXPECT_NO_THROW(env_.Run());
  EXPECT_EQ(env_.PoolUsage().at("Leak").allocations, 0u);
  EXPECT_EQ(g_results.registry_path_chars, std::strlen("\\Registry\\Machine\\System\\CurrentControlSet\\Services\\clean"));
}

// Special pool: guard zones around every block, checked at the free; freed blocks checked for
// writes when they leave quarantine, at their driver's unload, and when a run ends.
TEST_F(KernelServices, SpecialPoolReportsAnOverrunAtTheFree) {
  EXPECT_EQ(ViolationOf(&ViolationOverrunPool), "POOL");
  EXPECT_NE(message_.find("of a 61-byte block allocated at "), std::string::npos) << message_;
  EXPECT_NE(message_.find("written 1 byte(s) past its end (an overrun)"), std::string::npos) << message_;
}

TEST_F(KernelServices, SpecialPoolReportsAnUnderrunAtTheFree) {
  EXPECT_EQ(ViolationOf(&ViolationUnderrunPool), "POOL");
  EXPECT_NE(message_.find("written 4 byte(s) before its start (an underrun)"), std::string::npos) << message_;
}

TEST_F(KernelServices, SpecialPoolReportsAWriteAfterFreeWithBothSites) {
  EXPECT_EQ(ViolationOf(&ViolationWriteAfterFree), "POOL");
  EXPECT_NE(message_.find("a 64-byte block allocated at "), std::string::npos) << message_;
  EXPECT_NE(message_.find(" and freed at "), std::string::npos) << message_;
  EXPECT_NE(message_.find("byte 10 written after the free (a use after free)"), std::string::npos) << message_;
}

// Freeing an event a thread waits on is named as such, with the free's site (it was a deadlock
// report, or memory corruption).
TEST_F(KernelServices, FreeingPoolWithAnEventAThreadWaitsOnIsReported) {
  EXPECT_EQ(ViolationOf(&ViolationFreeEventWithWaiter), "USE_AFTER_FREE");
  EXPECT_NE(message_.find("ExFreePoolWithTag of a "), std::string::npos) << message_;
  EXPECT_NE(message_.find(" waits on an object in it"), std::string::npos) << message_;
}

TEST_F(KernelServices, InitializingAnEventAThreadWaitsOnIsReported) {
  EXPECT_EQ(ViolationOf(&ViolationReinitializeEventWithWaiter), "REINITIALIZED");
  EXPECT_NE(message_.find("KeInitializeEvent of "), std::string::npos) << message_;
}

// Driver Verifier's deadlock detection: a thread took A then B; a DPC takes B then A.
TEST_F(KernelServices, TwoSpinLocksTakenInBothOrdersAreALockOrderInversion) {
  EXPECT_EQ(ViolationOf(&ViolationLockOrderInversion), "LOCK_ORDER");
  EXPECT_NE(message_.find("the reverse of an order taken before"), std::string::npos) << message_;
  EXPECT_NE(message_.find("in TakeAThenB"), std::string::npos) << message_;
  EXPECT_NE(message_.find("in TakeBThenA"), std::string::npos) << message_;  // where the DPC took A
}

TEST_F(KernelServices, TheSameOrderAgainOrALockInitializedAgainIsNoInversion) {
  EXPECT_EQ(CheckOf(&ScenarioLockOrderKeptOrRenewed), "none") << message_;
}

TEST_F(KernelServices, ATryBlockRunsItsExceptHandlerNeverAndItsFinallyBlockAfterIt) {
  std::int32_t steps = 0;
  RunOnNode0([&] { steps = ScenarioTryExceptFinally(); });
  EXPECT_EQ(steps, 1011);
}

// The exception a probe raises cannot reach an __except handler here: the run fails with it.
TEST_F(KernelServices, AProbeOfAMisalignedBufferIsReportedAsTheExceptionItRaises) {
  EXPECT_EQ(ViolationOf(&ViolationProbeMisaligned), "RAISE");
  EXPECT_NE(message_.find("ProbeForRead of 4 bytes at "), std::string::npos) << message_;
  EXPECT_NE(message_.find("raises 0x80000002"), std::string::npos) << message_;
}

// A wild write in consumer code fails the run with a report (the thread, its IRQL, the
// interleaving) instead of killing the process.
TEST_F(KernelServices, AWriteThroughNullOnAKernelThreadIsReportedAsACrash) {
  EXPECT_EQ(CheckOf(&CrashWriteThroughNull), "CRASH");
  EXPECT_NE(message_.find("SIGSEGV at address 0x0"), std::string::npos) << message_;
  EXPECT_NE(message_.find("on kernel thread 'test' at IRQL 0"), std::string::npos) << message_;
  EXPECT_NE(message_.find("interleaving: "), std::string::npos) << message_;
}

TEST_F(KernelServices, AKernelThreadThatOverflowsItsStackIsReportedAsACrash) {
  EXPECT_EQ(CheckOf(&CrashStackOverflow), "CRASH");
  EXPECT_NE(message_.find("on kernel thread 'test'"), std::string::npos) << message_;
}

// A timer another driver keeps set (in its own static storage, not pool) is not the unloading
// driver's leak.
TEST_F(KernelServices, AnotherDriversTimerIsNotTheUnloadingDriversLeak) {
  _DRIVER_OBJECT* heartbeat = env_.LoadDriver(*node0_, "heartbeat", &HeartbeatDriverEntry);
  _DRIVER_OBJECT* clean = env_.LoadDriver(*node0_, "clean", &CleanDriverEntry);
  env_.Run();
  env_.UnloadDriver(clean);
  EXPECT_NO_THROW(env_.Run());
  env_.UnloadDriver(heartbeat);
  EXPECT_NO_THROW(env_.Run());
}

// ---- provider callbacks run for the driver that owns their object ----
// The callback driver (tests/kernel/consumer_services.c) creates a PD whose create the provider
// pends and completes from its own context; the callback queues a work item that opens a second
// adapter of the machine.
class KernelCallbacks : public ::testing::Test {
 protected:
  KernelCallbacks() {
    std::memset(&g_results, 0, sizeof(g_results));
    node0_ = &fabric_.AddNode({"initiator", {"192.0.2.1"}});
    (void)fabric_.AddNode({"target", {"192.0.2.2"}});
    g_results.callback_driver_ipv4 = inet_addr("192.0.2.1");
  }

  // Loads the callback driver and runs: the check that fails the run ("none" if none); the
  // report is kept in message_.
  std::string CheckOfLoading() {
    driver_ = env_.LoadDriver(*node0_, "callbacks", &CallbackDriverEntry);
    return testing::CheckOfRun(env_, &message_);
  }

  // Loads the driver, runs its DriverEntry to the end; its status.
  std::int32_t Load(Environment::DriverEntry entry) {
    driver_ = env_.LoadDriver(*node0_, "callbacks", entry);
    env_.Run();
    return env_.DriverStatus(driver_);
  }

  Fabric fabric_{FabricConfig{.seed = 5, .profile = profiles::kConnectX100GbeRoce,
                              .async_completion = AsyncCompletion::kPending}};
  Node* node0_ = nullptr;
  Environment env_{fabric_, EnvironmentConfig{.seed = 11}};
  _DRIVER_OBJECT* driver_ = nullptr;
  std::string message_;
};

constexpr std::int32_t kPending = 0x103;

TEST_F(KernelCallbacks, AnIoWorkItemQueuedFromACallbackOpensAnAdapterOfItsDriversMachine) {
  EXPECT_EQ(Load(&CallbackDriverEntry), kSuccess);
  EXPECT_EQ(g_results.create_status, kPending);
  EXPECT_EQ(g_results.callback_irql, 2);  // the provider called back at DISPATCH_LEVEL
  EXPECT_EQ(g_results.work_open_status, kSuccess);
  env_.UnloadDriver(driver_);
  EXPECT_NO_THROW(env_.Run());
}

TEST_F(KernelCallbacks, AnExWorkItemQueuedFromACallbackRunsOnTheCallbacksMachine) {
  EXPECT_EQ(Load(&CallbackExWorkItemDriverEntry), kSuccess);
  EXPECT_EQ(g_results.work_open_status, kSuccess);
  env_.UnloadDriver(driver_);
  EXPECT_NO_THROW(env_.Run());
}

// A timer's DPC runs from simulated time, on no thread: it runs for the driver that initialized
// it, so the work item it queues runs on that driver's machine.
TEST_F(KernelCallbacks, AWorkItemQueuedFromATimersDpcRunsOnTheMachineOfTheDpcsDriver) {
  g_results.callback_from_timer = 1;
  EXPECT_EQ(Load(&CallbackExWorkItemDriverEntry), kSuccess);
  EXPECT_EQ(g_results.work_open_status, kSuccess);
  env_.UnloadDriver(driver_);
  EXPECT_NO_THROW(env_.Run());
}

// The callback goes on to write through NULL after its NT_ASSERT: the run stops at the assertion,
// with its report, instead of the process dying.
TEST_F(KernelCallbacks, AFailedAssertionInACallbackStopsTheRunThere) {
  g_results.assert_in_callback = 1;
  EXPECT_EQ(CheckOfLoading(), "ASSERT");
  EXPECT_NE(message_.find("NT_ASSERT(Header == NULL) failed, at "), std::string::npos) << message_;
  EXPECT_NE(message_.find("consumer_services.c:"), std::string::npos) << message_;
  EXPECT_NE(message_.find("in PdCreated"), std::string::npos) << message_;
  EXPECT_NE(message_.find("at IRQL 2"), std::string::npos) << message_;
}

TEST_F(KernelCallbacks, AWriteThroughNullInACallbackIsReportedAsACrash) {
  g_results.crash_in_callback = 1;
  EXPECT_EQ(CheckOfLoading(), "CRASH");
  EXPECT_NE(message_.find("SIGSEGV at address 0x0"), std::string::npos) << message_;
  EXPECT_NE(message_.find("on the DPC context at IRQL 2"), std::string::npos) << message_;
}

TEST_F(KernelCallbacks, PoolACallbackAllocatesIsItsDriversAndALeakOfItIsReportedAtUnload) {
  ASSERT_EQ(Load(&CallbackLeakyDriverEntry), kSuccess);
  const std::string what = LeakReportAtUnload(env_, driver_);
  EXPECT_NE(what.find("driver 'callbacks'"), std::string::npos) << what;
  EXPECT_NE(what.find("pool tag 'Cabk': 1 allocation(s), 61 bytes"), std::string::npos) << what;
}

// The order three system threads run in, for one seed.
std::string OrderFor(std::uint64_t seed) {
  std::memset(&g_results, 0, sizeof(g_results));
  Fabric fabric(FabricConfig{.seed = 1, .profile = profiles::kFunctional});
  Environment env(fabric, EnvironmentConfig{.seed = seed});
  env.Run("test", [] { ScenarioThreeSystemThreads(); });
  return std::to_string(g_results.order[0]) + std::to_string(g_results.order[1]) + std::to_string(g_results.order[2]);
}

TEST(KernelSchedule, TheSameSeedGivesTheSameInterleaving) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) EXPECT_EQ(OrderFor(seed), OrderFor(seed)) << "seed " << seed;
}

TEST(KernelSchedule, SeedsExploreDifferentOrdersOfRunnableThreads) {
  std::set<std::string> orders;
  for (std::uint64_t seed = 1; seed <= 32; ++seed) orders.insert(OrderFor(seed));
  EXPECT_EQ(orders.size(), 6u);  // every permutation of three threads
}

}  // namespace
}  // namespace ndksim::kernel
