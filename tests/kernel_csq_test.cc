// SPDX-License-Identifier: MIT
// Cancel-safe IRP queues (IoCsq*) and remove locks (Io*RemoveLock*), driven as a Windows program
// drives a driver that uses them: IOCTLs queued in the driver's IO_CSQ, drained by its worker
// thread, cancelled with CancelIoEx, and a removal that waits out the IRPs holding the remove lock
// (tests/kernel/consumer_csq.c is the driver).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>

#include "kernel/consumer_csq.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"

namespace ndksim::kernel {
namespace {

constexpr std::int32_t kSuccess = 0;
constexpr std::int32_t kPending = 0x103;
constexpr std::int32_t kCancelled = static_cast<std::int32_t>(0xC0000120u);
constexpr std::int32_t kDeviceBusy = static_cast<std::int32_t>(0x80000011u);
constexpr std::int32_t kDeletePending = static_cast<std::int32_t>(0xC0000056u);
constexpr std::int32_t kNotFound = static_cast<std::int32_t>(0xC0000225u);
constexpr std::string_view kLink = "\\\\.\\NdksimCsqTest";

// A queued IOCTL: the request, and where its CsqTestResult comes back.
struct Queued {
  PendingIo io;
  CsqTestResult* result = nullptr;
};

// One machine with the driver loaded, and the buffers of the requests it was sent (they must
// outlive the requests).
class Rig {
 public:
  explicit Rig(EnvironmentConfig config = {.seed = 7}) : env_(fabric_, config) {
    node_ = &fabric_.AddNode({"machine", {"192.0.2.1"}});
    driver_ = env_.LoadDriver(*node_, "csqtest", &CsqTestDriverEntry);
    // Not Run: the driver's worker thread waits for as long as the driver is loaded.
    env_.RunUntil([this] { return env_.DriverStatus(driver_) != kPending; });
    EXPECT_EQ(env_.DriverStatus(driver_), kSuccess);
  }

  Environment& Env() { return env_; }
  std::int32_t DriverStatus() const { return env_.DriverStatus(driver_); }

  DeviceHandle Open() {
    DeviceHandle handle;
    EXPECT_EQ(env_.OpenDevice(*node_, kLink, &handle).status, kSuccess);
    return handle;
  }

  // CSQ_TEST_QUEUE (or `code`) with `value`, overlapped.
  Queued Queue(DeviceHandle handle, std::uint32_t value, std::uint32_t code = CSQ_TEST_QUEUE) {
    const std::uint32_t& input = inputs_.emplace_back(value);
    CsqTestResult& output = results_.emplace_back();
    return Queued{env_.StartDeviceIoControl(handle, code, std::as_bytes(std::span(&input, 1)),
                                            std::as_writable_bytes(std::span(&output, 1))),
                  &output};
  }

  // `code` without input, waited for; its ULONGLONG output in *output, if given.
  IoResult Control(DeviceHandle handle, std::uint32_t code, std::uint64_t* output = nullptr) {
    std::uint64_t& out = outputs_.emplace_back();
    const IoResult r = env_.DeviceIoControl(handle, code, {}, std::as_writable_bytes(std::span(&out, 1)));
    if (output != nullptr) *output = out;
    return r;
  }

  // `code` started without waiting for it; its ULONGLONG output goes to *output.
  PendingIo Start(DeviceHandle handle, std::uint32_t code, std::uint64_t** output) {
    std::uint64_t& out = outputs_.emplace_back();
    *output = &out;
    return env_.StartDeviceIoControl(handle, code, {}, std::as_writable_bytes(std::span(&out, 1)));
  }

  // The check the run fails with while `code` is sent; the report in *report.
  std::string CheckOf(std::uint32_t code, std::string* report) {
    const DeviceHandle handle = Open();
    try {
      (void)Control(handle, code);
    } catch (const VerifierError& e) {
      *report = e.what();
      return e.Check();
    }
    return "none";
  }

 private:
  Fabric fabric_{FabricConfig{.seed = 3, .profile = profiles::kFunctional}};
  Node* node_ = nullptr;
  Environment env_;
  _DRIVER_OBJECT* driver_ = nullptr;
  std::deque<std::uint32_t> inputs_;
  std::deque<CsqTestResult> results_;
  std::deque<std::uint64_t> outputs_;
};

// KeQueryInterruptTime's units since time zero: 100 ns.
std::uint64_t InterruptTime(TimePoint t) {
  return static_cast<std::uint64_t>(t.time_since_epoch().count() / Nanoseconds(100).count());
}

TEST(KernelCsq, QueuedIrpsPendUntilTheWorkerCompletesThemInOrder) {
  Rig rig;
  const DeviceHandle handle = rig.Open();
  const Queued first = rig.Queue(handle, 11);
  const Queued second = rig.Queue(handle, 22);
  const Queued third = rig.Queue(handle, 33);
  EXPECT_FALSE(rig.Env().IoCompleted(first.io));
  EXPECT_EQ(g_csq_counts.queued, 3);
  EXPECT_EQ(rig.Control(handle, CSQ_TEST_DRAIN).status, kSuccess);
  for (const Queued& q : {first, second, third}) EXPECT_EQ(rig.Env().WaitIo(q.io).status, kSuccess);
  EXPECT_EQ(first.result->value, 11u);
  EXPECT_EQ(first.result->sequence, 1u);
  EXPECT_EQ(second.result->value, 22u);
  EXPECT_EQ(second.result->sequence, 2u);
  EXPECT_EQ(third.result->value, 33u);
  EXPECT_EQ(third.result->sequence, 3u);
  EXPECT_EQ(g_csq_counts.queued, 0);
}

TEST(KernelCsq, CancelIoCompletesAQueuedIrpThroughCompleteCanceledIrp) {
  Rig rig;
  const DeviceHandle handle = rig.Open();
  const Queued a = rig.Queue(handle, 1);
  rig.Env().CancelIo(handle);
  EXPECT_EQ(rig.Env().WaitIo(a.io).status, kCancelled);
  EXPECT_EQ(g_csq_counts.cancelled, 1);
  EXPECT_EQ(g_csq_counts.completed, 0);
}

TEST(KernelCsq, ACancelledIrpIsNoLongerInTheQueue) {
  Rig rig;
  const DeviceHandle cancelled = rig.Open();
  const DeviceHandle other = rig.Open();
  const Queued a = rig.Queue(cancelled, 1);
  const Queued b = rig.Queue(other, 2);
  rig.Env().CancelIo(cancelled);
  EXPECT_EQ(g_csq_counts.queued, 1);
  EXPECT_EQ(rig.Control(other, CSQ_TEST_DRAIN).status, kSuccess);
  EXPECT_EQ(rig.Env().WaitIo(b.io).status, kSuccess);
  EXPECT_EQ(b.result->sequence, 1u);  // the worker found only b
  EXPECT_EQ(g_csq_counts.completed, 1);
  EXPECT_EQ(rig.Env().WaitIo(a.io).status, kCancelled);
}

// The worker's IoCsqRemoveNextIrp can run while a cancel of the queue's first IRP is under way:
// IoCancelIrp has taken the IRP's cancel routine, and the routine waits for the queue's lock. The
// worker must pass that IRP over (its canceller completes it) and take the next. Preemption at spin
// locks lets the worker run in that window; which seeds put it there is the scheduler's draw, so
// the test runs a fixed set and needs the window in at least one.
TEST(KernelCsq, RemoveNextIrpSkipsAnIrpBeingCancelled) {
  int windows = 0;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    Rig rig({.seed = seed, .preemption = PreemptionPoints{.spin_locks = true}});
    ASSERT_EQ(rig.DriverStatus(), kSuccess);
    const DeviceHandle cancelled = rig.Open();
    const DeviceHandle other = rig.Open();
    const Queued a = rig.Queue(cancelled, 1);
    const Queued b = rig.Queue(other, 2);
    ASSERT_EQ(rig.Control(other, CSQ_TEST_DRAIN).status, kSuccess);  // the worker is runnable, not yet run
    rig.Env().CancelIo(cancelled);                                     // races the worker
    const IoResult ra = rig.Env().WaitIo(a.io);
    const IoResult rb = rig.Env().WaitIo(b.io);
    if (g_csq_counts.peeks_past == 0) continue;  // the worker never met a in the window
    ++windows;
    EXPECT_EQ(ra.status, kCancelled) << "seed " << seed;
    EXPECT_EQ(rb.status, kSuccess) << "seed " << seed;
    EXPECT_EQ(b.result->value, 2u) << "seed " << seed;
    EXPECT_EQ(g_csq_counts.completed, 1) << "seed " << seed;
    EXPECT_EQ(g_csq_counts.cancelled, 1) << "seed " << seed;
    EXPECT_EQ(g_csq_counts.queued, 0) << "seed " << seed;
  }
  EXPECT_GT(windows, 0);  // 9 of the 16 seeds
}

TEST(KernelCsq, InsertIrpExRefusalIsReturnedAndQueuesNothing) {
  Rig rig;
  const DeviceHandle handle = rig.Open();
  std::deque<Queued> queued;
  for (std::uint32_t i = 1; i <= CSQ_TEST_QUEUE_LIMIT; ++i) queued.push_back(rig.Queue(handle, i));
  const Queued refused = rig.Queue(handle, 99);
  ASSERT_TRUE(rig.Env().IoCompleted(refused.io));  // not pending: the callback's status came back
  EXPECT_EQ(rig.Env().WaitIo(refused.io).status, kDeviceBusy);
  EXPECT_EQ(g_csq_counts.queued, static_cast<std::int32_t>(CSQ_TEST_QUEUE_LIMIT));
  EXPECT_EQ(rig.Control(handle, CSQ_TEST_DRAIN).status, kSuccess);
  for (const Queued& q : queued) EXPECT_EQ(rig.Env().WaitIo(q.io).status, kSuccess);
  EXPECT_EQ(g_csq_counts.completed, static_cast<std::int32_t>(CSQ_TEST_QUEUE_LIMIT));
}

TEST(KernelCsq, RemoveIrpTakesTheIrpItsContextNames) {
  Rig rig;
  const DeviceHandle handle = rig.Open();
  const Queued a = rig.Queue(handle, 1);
  const Queued named = rig.Queue(handle, 2, CSQ_TEST_NOTIFY);
  const Queued b = rig.Queue(handle, 3);
  EXPECT_EQ(rig.Control(handle, CSQ_TEST_TAKE).status, kSuccess);
  EXPECT_EQ(rig.Env().WaitIo(named.io).status, kSuccess);
  EXPECT_EQ(named.result->value, 2u);
  EXPECT_EQ(g_csq_counts.queued, 2);  // a and b, still queued
  (void)a;
  (void)b;
}

TEST(KernelCsq, RemoveIrpFindsNothingOnceTheContextsIrpWasCancelled) {
  Rig rig;
  const DeviceHandle cancelled = rig.Open();
  const DeviceHandle other = rig.Open();
  const Queued named = rig.Queue(cancelled, 2, CSQ_TEST_NOTIFY);
  rig.Env().CancelIo(cancelled);
  EXPECT_EQ(rig.Env().WaitIo(named.io).status, kCancelled);
  // A later IRP, queued without the context (it may well get the cancelled IRP's memory), is not
  // the context's.
  const Queued later = rig.Queue(other, 3);
  EXPECT_EQ(rig.Control(other, CSQ_TEST_TAKE).status, kNotFound);
  EXPECT_EQ(g_csq_counts.queued, 1);
  (void)later;
}

// IRP_MJ_CLEANUP takes out the closing open's IRPs with IoCsqRemoveNextIrp(FileObject): the peek
// context reaches the driver's CsqPeekNextIrp.
TEST(KernelCsq, CleanupCompletesOnlyTheClosingHandlesIrps) {
  Rig rig;
  const DeviceHandle closing = rig.Open();
  const DeviceHandle other = rig.Open();
  const Queued a = rig.Queue(other, 1);
  const Queued b = rig.Queue(closing, 2);
  EXPECT_EQ(rig.Env().CloseDevice(closing).status, kSuccess);
  EXPECT_EQ(rig.Env().WaitIo(b.io).status, kCancelled);
  EXPECT_EQ(g_csq_counts.cleaned_up, 1);
  EXPECT_EQ(g_csq_counts.queued, 1);  // a, another open's, stays
  (void)a;
}

TEST(KernelRemoveLock, AnIoctlAfterTheRemoveStartedIsRefusedWithDeletePending) {
  Rig rig;
  const DeviceHandle handle = rig.Open();
  const Queued held = rig.Queue(handle, 1);  // holds the remove lock while queued
  std::uint64_t* removed_at = nullptr;
  const PendingIo remove = rig.Start(handle, CSQ_TEST_REMOVE, &removed_at);
  rig.Env().RunFor(Microseconds(10));  // the removal's work item is waiting
  ASSERT_FALSE(rig.Env().IoCompleted(remove));
  EXPECT_EQ(rig.Control(handle, CSQ_TEST_DRAIN).status, kDeletePending);
  rig.Env().RunFor(Microseconds(10));
  EXPECT_EQ(g_csq_counts.completed, 0);  // the DRAIN never reached the worker
  (void)held;
}

TEST(KernelRemoveLock, TheRemoveWaitsUntilTheOutstandingAcquisitionsAreReleased) {
  Rig rig;
  const DeviceHandle holder = rig.Open();
  const DeviceHandle remover = rig.Open();
  const Queued held = rig.Queue(holder, 1);
  std::uint64_t* removed_at = nullptr;
  const PendingIo remove = rig.Start(remover, CSQ_TEST_REMOVE, &removed_at);
  rig.Env().RunFor(Milliseconds(1));
  EXPECT_FALSE(rig.Env().IoCompleted(remove));
  const TimePoint released = rig.Env().Now();
  rig.Env().CancelIo(holder);  // the queued IRP completes and gives the lock back
  EXPECT_EQ(rig.Env().WaitIo(held.io).status, kCancelled);
  EXPECT_EQ(rig.Env().WaitIo(remove).status, kSuccess);
  EXPECT_EQ(*removed_at, InterruptTime(released));  // woken by that release, not before
  EXPECT_GE(*removed_at, InterruptTime(TimePoint{} + Milliseconds(1)));
}

TEST(KernelRemoveLock, TheRemoveOfAnIdleDeviceReturnsAtOnce) {
  Rig rig;
  const DeviceHandle handle = rig.Open();
  const TimePoint started = rig.Env().Now();
  std::uint64_t removed_at = 0;
  EXPECT_EQ(rig.Control(handle, CSQ_TEST_REMOVE, &removed_at).status, kSuccess);
  EXPECT_EQ(removed_at, InterruptTime(started));
}

TEST(KernelRemoveLock, AReleaseMoreOftenThanAcquiredIsReported) {
  Rig rig;
  std::string report;
  EXPECT_EQ(rig.CheckOf(CSQ_TEST_RELEASE_TWICE, &report), "REMOVE_LOCK");
  EXPECT_NE(report.find("released more often than it was acquired"), std::string::npos) << report;
  EXPECT_NE(report.find("consumer_csq.c"), std::string::npos) << report;  // the release's site
}

TEST(KernelRemoveLock, AReleaseUnderATagNeverAcquiredIsReported) {
  Rig rig;
  std::string report;
  EXPECT_EQ(rig.CheckOf(CSQ_TEST_RELEASE_OTHER_TAG, &report), "REMOVE_LOCK");
  EXPECT_NE(report.find("never acquired"), std::string::npos) << report;
}

TEST(KernelRemoveLock, ASecondReleaseAndWaitIsReported) {
  Rig rig;
  std::string report;
  EXPECT_EQ(rig.CheckOf(CSQ_TEST_REMOVE_TWICE, &report), "REMOVE_LOCK");
  EXPECT_NE(report.find("IoReleaseRemoveLockAndWait of remove lock"), std::string::npos) << report;
  EXPECT_NE(report.find("a second time"), std::string::npos) << report;
}

TEST(KernelRemoveLock, ReleaseAndWaitAbovePassiveLevelIsReported) {
  Rig rig;
  std::string report;
  EXPECT_EQ(rig.CheckOf(CSQ_TEST_REMOVE_AT_DISPATCH, &report), "IRQL");
  EXPECT_NE(report.find("IoReleaseRemoveLockAndWait called at IRQL 2"), std::string::npos) << report;
}

}  // namespace
}  // namespace ndksim::kernel
