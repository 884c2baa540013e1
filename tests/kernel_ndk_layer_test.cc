// SPDX-License-Identifier: MIT
// The environment's NDK layer (src/kernel/ndk_interposer.h) in front of a fake provider whose
// entries the tests script: the layer's tables go into every object, callbacks come through it,
// and it reports a provider that breaks NDK's callback rules and a consumer that calls an object
// whose close has started.
#include <gtest/gtest.h>

#include <string>

#include "kernel/kernel_state.h"
#include "kernel/run_check.h"
#include "kernel/site_macros_off.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"

namespace ndksim::kernel {
namespace {

// The fake provider: one adapter, CQ and PD, and what its entries were given.
struct Fake {
  NDK_ADAPTER adapter{};
  NDK_CQ cq{};
  NDK_PD pd{};
  NDK_ADAPTER_DISPATCH adapter_table{};
  NDK_CQ_DISPATCH cq_table{};
  NDK_PD_DISPATCH pd_table{};
  NDK_FN_CQ_NOTIFICATION_CALLBACK notify = nullptr;  // what CreateCq received (the layer's thunk)
  PVOID notify_context = nullptr;
  NDK_FN_CREATE_COMPLETION create_done = nullptr;
  PVOID create_context = nullptr;
};
Fake* g_fake = nullptr;

NTSTATUS CreateCq(NDK_ADAPTER*, ULONG, NDK_FN_CQ_NOTIFICATION_CALLBACK notify, PVOID context, GROUP_AFFINITY*,
                  NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ** cq) {
  g_fake->notify = notify;
  g_fake->notify_context = context;
  *cq = &g_fake->cq;
  return STATUS_SUCCESS;
}

// Pends, and keeps the completion for the test to call.
NTSTATUS CreateCqPending(NDK_ADAPTER*, ULONG, NDK_FN_CQ_NOTIFICATION_CALLBACK, PVOID, GROUP_AFFINITY*,
                         NDK_FN_CREATE_COMPLETION done, PVOID context, NDK_CQ**) {
  g_fake->create_done = done;
  g_fake->create_context = context;
  return STATUS_PENDING;
}

// Breaks ref §4.1: completes through the callback and returns success as well.
NTSTATUS CreatePdTwice(NDK_ADAPTER*, NDK_FN_CREATE_COMPLETION done, PVOID context, NDK_PD** pd) {
  *pd = &g_fake->pd;
  done(context, STATUS_SUCCESS, &g_fake->pd.Header);
  return STATUS_SUCCESS;
}

NTSTATUS CreatePd(NDK_ADAPTER*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD** pd) {
  if (pd == nullptr) return STATUS_INVALID_PARAMETER;
  *pd = &g_fake->pd;
  return STATUS_SUCCESS;
}

NTSTATUS ClosePdPending(NDK_OBJECT_HEADER*, NDK_FN_CLOSE_COMPLETION, PVOID) { return STATUS_PENDING; }

NTSTATUS CreateMr(NDK_PD*, BOOLEAN, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MR**) { return STATUS_NOT_SUPPORTED; }

// Delivers the notification from inside the arm call.
VOID ArmCqNotifyingInline(NDK_CQ*, ULONG) { g_fake->notify(g_fake->notify_context, STATUS_SUCCESS); }

// Finds a result once the test's timer has fired (what a NIC finishing its work looks like).
KTIMER* g_due = nullptr;
ULONG GetCqResultsWhenDue(NDK_CQ*, NDK_RESULT[], ULONG) { return g_due->Header.SignalState != 0 ? 1 : 0; }
ULONG GetCqResultsNever(NDK_CQ*, NDK_RESULT[], ULONG) { return 0; }

// Breaks ref §4.4: the close completes inline whatever is running.
NTSTATUS CloseCqInline(NDK_OBJECT_HEADER*, NDK_FN_CLOSE_COMPLETION, PVOID) { return STATUS_SUCCESS; }

class KernelNdkLayer : public ::testing::Test {
 protected:
  KernelNdkLayer() {
    g_fake = &fake_;
    fake_.adapter.Header.ObjectType = NdkObjectTypeAdapter;
    fake_.adapter.Dispatch = &fake_.adapter_table;
    fake_.cq.Header.ObjectType = NdkObjectTypeCq;
    fake_.cq.Dispatch = &fake_.cq_table;
    fake_.pd.Header.ObjectType = NdkObjectTypePd;
    fake_.pd.Dispatch = &fake_.pd_table;
    fake_.adapter_table.NdkCreateCq = &CreateCq;
    fake_.adapter_table.NdkCreatePd = &CreatePd;
    fake_.cq_table.NdkArmCq = &ArmCqNotifyingInline;
    fake_.cq_table.NdkCloseCq = &CloseCqInline;
    fake_.pd_table.NdkClosePd = &ClosePdPending;
    fake_.pd_table.NdkCreateMr = &CreateMr;
  }
  ~KernelNdkLayer() override { g_fake = nullptr; }

  // Runs `body` as a kernel thread with the fake adapter adopted by the layer; the check a
  // VerifierError names, or "none".
  std::string CheckFailing(const std::function<void(NDK_ADAPTER*)>& body) {
    env_.StartThread("consumer", [this, body] {
      CurrentEnvironment().ndk.AdoptAdapter(&fake_.adapter);
      body(&fake_.adapter);
    });
    return testing::CheckOfRun(env_, &message_);
  }

  NDK_CQ* CreateCqThroughTheLayer(NDK_ADAPTER* adapter, NDK_FN_CQ_NOTIFICATION_CALLBACK notify, PVOID context) {
    NDK_CQ* cq = nullptr;
    EXPECT_EQ(adapter->Dispatch->NdkCreateCq(adapter, 16, notify, context, nullptr, &CreateDone, nullptr, &cq),
              STATUS_SUCCESS);
    return cq;
  }
  static VOID CreateDone(PVOID, NTSTATUS, NDK_OBJECT_HEADER*) {}
  static VOID Notified(PVOID context, NTSTATUS) { ++*static_cast<int*>(context); }
  static VOID CloseDone(PVOID) {}

  Fake fake_;
  Fabric fabric_{FabricConfig{.seed = 1, .profile = profiles::kFunctional}};
  Environment env_{fabric_, EnvironmentConfig{.seed = 3}};
  std::string message_;
};

TEST_F(KernelNdkLayer, ACreatedObjectCarriesTheLayersTableAndItsRecordTheProviders) {
  NDK_CQ* cq = nullptr;
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) { cq = CreateCqThroughTheLayer(adapter, &Notified, nullptr); }),
            "none");
  ASSERT_EQ(cq, &fake_.cq);
  EXPECT_NE(cq->Dispatch, &fake_.cq_table);
  ASSERT_NE(RecordOf(&cq->Header), nullptr);
  EXPECT_EQ(RecordOf(&cq->Header)->provider_dispatch, &fake_.cq_table);
  EXPECT_NE(fake_.adapter.Dispatch, &fake_.adapter_table);
}

TEST_F(KernelNdkLayer, ANotificationReachesTheConsumersCallbackWithItsContext) {
  int notified = 0;
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              NDK_CQ* cq = CreateCqThroughTheLayer(adapter, &Notified, &notified);
              cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
            }),
            "none");
  EXPECT_EQ(notified, 1);
  EXPECT_NE(fake_.notify, &Notified);  // the provider was given the layer's thunk
}

TEST_F(KernelNdkLayer, ACallThatCompletesThroughItsCallbackAndReturnsSuccessIsReported) {
  fake_.adapter_table.NdkCreatePd = &CreatePdTwice;
  EXPECT_EQ(CheckFailing([](NDK_ADAPTER* adapter) {
              NDK_PD* pd = nullptr;
              (void)adapter->Dispatch->NdkCreatePd(adapter, &CreateDone, nullptr, &pd);
            }),
            "NDK_CALLBACK");
  EXPECT_NE(message_.find("NdkCreatePd called its completion callback and returned 0x0"), std::string::npos)
      << message_;
}

// Bad input goes to the provider as it came, and its status back: the layer read the missing
// out-parameter and crashed.
TEST_F(KernelNdkLayer, ACreateWithoutAnOutParameterGetsTheProvidersStatus) {
  NTSTATUS status = STATUS_SUCCESS;
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              status = adapter->Dispatch->NdkCreatePd(adapter, &CreateDone, nullptr, nullptr);
            }),
            "none");
  EXPECT_EQ(status, STATUS_INVALID_PARAMETER);
}

TEST_F(KernelNdkLayer, APendingCreateCompletedTwiceIsReported) {
  fake_.adapter_table.NdkCreateCq = &CreateCqPending;
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              NDK_CQ* cq = nullptr;
              ASSERT_EQ(adapter->Dispatch->NdkCreateCq(adapter, 16, &Notified, nullptr, nullptr, &CreateDone, nullptr,
                                                       &cq),
                        STATUS_PENDING);
              fake_.create_done(fake_.create_context, STATUS_SUCCESS, &fake_.cq.Header);
              fake_.create_done(fake_.create_context, STATUS_SUCCESS, &fake_.cq.Header);
            }),
            "NDK_CALLBACK");
  EXPECT_NE(message_.find("a second completion callback"), std::string::npos) << message_;
}

// The consumer closes the CQ from its own notification callback, which NDK allows; the close
// must then pend until the callback returns, and this provider completes it inline.
TEST_F(KernelNdkLayer, ACloseThatCompletesWhileTheObjectsCallbackRunsIsReported) {
  static NDK_CQ* closing;
  const auto close_from_callback = [](PVOID, NTSTATUS) {
    (void)closing->Dispatch->NdkCloseCq(&closing->Header, &CloseDone, nullptr);
  };
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              closing = CreateCqThroughTheLayer(adapter, close_from_callback, nullptr);
              closing->Dispatch->NdkArmCq(closing, NDK_CQ_NOTIFY_ANY);
            }),
            "NDK_CALLBACK");
  EXPECT_NE(message_.find("the close of a CQ completed (its close returned 0x0) while 1 of its callbacks still ran"),
            std::string::npos)
      << message_;
}

TEST_F(KernelNdkLayer, ANotificationAfterTheCloseCompletedIsReported) {
  int notified = 0;
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              NDK_CQ* cq = CreateCqThroughTheLayer(adapter, &Notified, &notified);
              ASSERT_EQ(cq->Dispatch->NdkCloseCq(&cq->Header, &CloseDone, nullptr), STATUS_SUCCESS);
              fake_.notify(fake_.notify_context, STATUS_SUCCESS);  // the provider, too late
            }),
            "NDK_CALLBACK");
  EXPECT_EQ(notified, 0);  // the layer did not pass it on
  EXPECT_NE(message_.find("a notification callback of a CQ after its close completed"), std::string::npos)
      << message_;
}

TEST_F(KernelNdkLayer, ACallOnAnObjectWhoseCloseHasStartedIsReportedAndNotPassedOn) {
  EXPECT_EQ(CheckFailing([](NDK_ADAPTER* adapter) {
              NDK_PD* pd = nullptr;
              ASSERT_EQ(adapter->Dispatch->NdkCreatePd(adapter, &CreateDone, nullptr, &pd), STATUS_SUCCESS);
              ASSERT_EQ(pd->Dispatch->NdkClosePd(&pd->Header, &CloseDone, nullptr), STATUS_PENDING);
              NDK_MR* mr = nullptr;
              (void)pd->Dispatch->NdkCreateMr(pd, TRUE, &CreateDone, nullptr, &mr);
            }),
            "NDK_CLOSED");
  EXPECT_NE(message_.find("NdkCreateMr on a PD that is closing"), std::string::npos) << message_;
}

// A thread that spins on NdkGetCqResults never waits, so without the layer simulated time would
// never move and the loop would never end.
TEST_F(KernelNdkLayer, ABusyPollerLetsSimulatedTimeMoveUntilItsResultArrives) {
  fake_.cq_table.NdkGetCqResults = &GetCqResultsWhenDue;
  KTIMER due;
  g_due = &due;
  ULONGLONG found_at = 0;
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              KeInitializeTimerEx(&due, NotificationTimer);
              LARGE_INTEGER in;
              in.QuadPart = -100;  // 10 us
              KeSetTimerEx(&due, in, 0, nullptr);
              NDK_CQ* cq = CreateCqThroughTheLayer(adapter, &Notified, nullptr);
              NDK_RESULT result;
              while (cq->Dispatch->NdkGetCqResults(cq, &result, 1) == 0) {
              }
              found_at = KeQueryInterruptTime();
            }),
            "none");
  EXPECT_EQ(found_at, 100u);  // exactly when the result became there to find
}

TEST_F(KernelNdkLayer, ABusyPollerThatNothingWillEverSatisfyIsADeadlock) {
  fake_.cq_table.NdkGetCqResults = &GetCqResultsNever;
  env_.StartThread("poller", [this] {
    CurrentEnvironment().ndk.AdoptAdapter(&fake_.adapter);
    NDK_CQ* cq = CreateCqThroughTheLayer(&fake_.adapter, &Notified, nullptr);
    NDK_RESULT result;
    while (cq->Dispatch->NdkGetCqResults(cq, &result, 1) == 0) {
    }
  });
  try {
    env_.Run();
    ADD_FAILURE() << "no deadlock";
  } catch (const DeadlockError& e) {
    EXPECT_NE(std::string(e.what()).find("'poller' waits for a CQ to poll (NdkGetCqResults keeps finding nothing"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ndksim::kernel
