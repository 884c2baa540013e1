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
  NDK_MR mr{};
  NDK_QP qp{};
  NDK_ADAPTER_DISPATCH adapter_table{};
  NDK_CQ_DISPATCH cq_table{};
  NDK_PD_DISPATCH pd_table{};
  NDK_MR_DISPATCH mr_table{};
  NDK_QP_DISPATCH qp_table{};
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

NTSTATUS CreateFastRegisterMr(NDK_PD*, BOOLEAN, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MR** mr) {
  *mr = &g_fake->mr;
  return STATUS_SUCCESS;
}
NTSTATUS InitializeFastRegisterMr(NDK_MR*, ULONG, BOOLEAN, NDK_FN_REQUEST_COMPLETION, PVOID) { return STATUS_SUCCESS; }
NTSTATUS CreateQp(NDK_PD*, NDK_CQ*, NDK_CQ*, PVOID, ULONG, ULONG, ULONG, ULONG, ULONG, NDK_FN_CREATE_COMPLETION, PVOID,
                  NDK_QP** qp) {
  *qp = &g_fake->qp;
  return STATUS_SUCCESS;
}
// The provider's answers to the posts the tests make: a fast register it refuses (as ndksim's
// provider refuses a breach of the rules), and a send it takes.
NTSTATUS FastRegisterRefused(NDK_QP*, PVOID, NDK_MR*, ULONG, const NDK_LOGICAL_ADDRESS*, ULONG, SIZE_T, PVOID, ULONG) {
  return STATUS_INVALID_PARAMETER;
}
NTSTATUS SendTaken(NDK_QP*, PVOID, const NDK_SGE*, ULONG, ULONG) { return STATUS_SUCCESS; }

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
    fake_.mr.Header.ObjectType = NdkObjectTypeMr;
    fake_.mr.Dispatch = &fake_.mr_table;
    fake_.qp.Header.ObjectType = NdkObjectTypeQp;
    fake_.qp.Dispatch = &fake_.qp_table;
    fake_.mr_table.NdkInitializeFastRegisterMr = &InitializeFastRegisterMr;
    fake_.qp_table.NdkFastRegister = &FastRegisterRefused;
    fake_.qp_table.NdkSend = &SendTaken;
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
  static VOID RequestDone(PVOID, NTSTATUS) {}

  // A PD, a QP created with 2 SGEs and 64 inline bytes, and a fast-register MR initialized for
  // 2 pages, all through the layer (fake_.pd_table's CreateMr gives fake_.mr).
  struct Objects {
    NDK_QP* qp = nullptr;
    NDK_MR* mr = nullptr;
  };
  Objects CreateQpAndFastRegisterMr(NDK_ADAPTER* adapter) {
    fake_.pd_table.NdkCreateMr = &CreateFastRegisterMr;
    fake_.pd_table.NdkCreateQp = &CreateQp;
    Objects made;
    NDK_PD* pd = nullptr;
    EXPECT_EQ(adapter->Dispatch->NdkCreatePd(adapter, &CreateDone, nullptr, &pd), STATUS_SUCCESS);
    NDK_CQ* cq = CreateCqThroughTheLayer(adapter, &Notified, nullptr);
    EXPECT_EQ(pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 8, 8, 2, 2, 64, &CreateDone, nullptr, &made.qp),
              STATUS_SUCCESS);
    EXPECT_EQ(pd->Dispatch->NdkCreateMr(pd, TRUE, &CreateDone, nullptr, &made.mr), STATUS_SUCCESS);
    EXPECT_EQ(made.mr->Dispatch->NdkInitializeFastRegisterMr(made.mr, 2, TRUE, &RequestDone, nullptr),
              STATUS_SUCCESS);
    return made;
  }
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


namespace argument_rules {

// Two pages, as NdkBuildLAM would give them.
const NDK_LOGICAL_ADDRESS kPages[2] = {{.QuadPart = 0x10000}, {.QuadPart = 0x11000}};
NDK_SGE Sge(ULONG length) {
  NDK_SGE sge{};
  sge.Length = length;
  return sge;
}

}  // namespace argument_rules

TEST_F(KernelNdkLayer, AFastRegisterWhoseFirstByteOffsetIsNotBelowThePageSizeIsReportedWithItsCallSite) {
  NTSTATUS status = STATUS_PENDING;
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              const Objects o = CreateQpAndFastRegisterMr(adapter);
              status = o.qp->Dispatch->NdkFastRegister(o.qp, nullptr, o.mr, 2, argument_rules::kPages, 5000, 100,
                                                       reinterpret_cast<PVOID>(0x20000 + 5000), 0);
            }),
            "NDK_ARGUMENT");
  EXPECT_EQ(status, STATUS_PENDING);  // the report unwound the thread where the call returned
  EXPECT_NE(message_.find("NdkFastRegister: FBO 5000 is not below PAGE_SIZE (4096)"), std::string::npos) << message_;
  EXPECT_NE(message_.find("the provider returned 0xc000000d"), std::string::npos) << message_;
  // The call site: the calling code's object and offset, for addr2line.
  EXPECT_NE(message_.find(", called from "), std::string::npos) << message_;
  EXPECT_NE(message_.find("ndksim_tests+0x"), std::string::npos) << message_;
}

TEST_F(KernelNdkLayer, AFastRegisterThatKeepsTheRulesIsNotReported) {
  fake_.qp_table.NdkFastRegister = [](NDK_QP*, PVOID, NDK_MR*, ULONG, const NDK_LOGICAL_ADDRESS*, ULONG, SIZE_T, PVOID,
                                      ULONG) -> NTSTATUS { return STATUS_SUCCESS; };
  NTSTATUS status = STATUS_PENDING;
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              const Objects o = CreateQpAndFastRegisterMr(adapter);
              // The last byte of the second page: offset 100 and 8,092 bytes.
              status = o.qp->Dispatch->NdkFastRegister(o.qp, nullptr, o.mr, 2, argument_rules::kPages, 100, 8092,
                                                       reinterpret_cast<PVOID>(0x7000064), NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
            }),
            "none")
      << message_;
  EXPECT_EQ(status, STATUS_SUCCESS);
}

TEST_F(KernelNdkLayer, AFastRegisterOfMorePagesThanTheMrWasInitializedForIsReported) {
  const NDK_LOGICAL_ADDRESS three[3] = {{.QuadPart = 0x10000}, {.QuadPart = 0x11000}, {.QuadPart = 0x12000}};
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              const Objects o = CreateQpAndFastRegisterMr(adapter);
              (void)o.qp->Dispatch->NdkFastRegister(o.qp, nullptr, o.mr, 3, three, 0, 100, reinterpret_cast<PVOID>(0x30000),
                                                    0);
            }),
            "NDK_ARGUMENT");
  EXPECT_NE(message_.find("AdapterPageCount 3 exceeds the 2 pages NdkInitializeFastRegisterMr gave the MR"),
            std::string::npos)
      << message_;
}

TEST_F(KernelNdkLayer, AFastRegisterWhoseBaseAddressIsNotAtItsFirstByteOffsetIsReported) {
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              const Objects o = CreateQpAndFastRegisterMr(adapter);
              (void)o.qp->Dispatch->NdkFastRegister(o.qp, nullptr, o.mr, 2, argument_rules::kPages, 16, 100,
                                                    reinterpret_cast<PVOID>(0x30000), 0);
            }),
            "NDK_ARGUMENT");
  EXPECT_NE(message_.find("BaseVirtualAddress 0x30000 is not FBO + n * PAGE_SIZE: its offset in a page is 0, FBO is 16"),
            std::string::npos)
      << message_;
}

// The provider takes the send (this one does not check the flag); the layer reports it all the same.
TEST_F(KernelNdkLayer, ASendWithAFlagOnlyMemoryOperationsAcceptIsReported) {
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              const Objects o = CreateQpAndFastRegisterMr(adapter);
              const NDK_SGE sge = argument_rules::Sge(8);
              (void)o.qp->Dispatch->NdkSend(o.qp, nullptr, &sge, 1, NDK_OP_FLAG_ALLOW_REMOTE_READ);
            }),
            "NDK_ARGUMENT");
  EXPECT_NE(message_.find("NdkSend: Flags 0x8 has bits 0x8 that this call does not accept (ref §1.4); the provider "
                          "returned 0x00000000"),
            std::string::npos)
      << message_;
}

TEST_F(KernelNdkLayer, ASendOfMoreSgesThanTheQpWasCreatedWithIsReported) {
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              const Objects o = CreateQpAndFastRegisterMr(adapter);
              const NDK_SGE sges[3] = {argument_rules::Sge(8), argument_rules::Sge(8), argument_rules::Sge(8)};
              (void)o.qp->Dispatch->NdkSend(o.qp, nullptr, sges, 3, 0);
            }),
            "NDK_ARGUMENT");
  EXPECT_NE(message_.find("nSge 3 exceeds the MaxInitiatorRequestSge of 2 the queue was created with"),
            std::string::npos)
      << message_;
}

// INLINE lets the SGE count exceed the limit; the bytes must fit the QP's inline size.
TEST_F(KernelNdkLayer, AnInlineSendOfMoreSgesThanTheLimitWithinTheInlineSizeIsNotReported) {
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              const Objects o = CreateQpAndFastRegisterMr(adapter);
              const NDK_SGE sges[3] = {argument_rules::Sge(16), argument_rules::Sge(16), argument_rules::Sge(32)};
              EXPECT_EQ(o.qp->Dispatch->NdkSend(o.qp, nullptr, sges, 3, NDK_OP_FLAG_INLINE), STATUS_SUCCESS);
            }),
            "none")
      << message_;
}

// A consumer that calls through a pointer of its own is reported the same way.
TEST_F(KernelNdkLayer, ACallThroughTheConsumersOwnPointerIsReportedWithItsReturnAddress) {
  EXPECT_EQ(CheckFailing([&](NDK_ADAPTER* adapter) {
              const Objects o = CreateQpAndFastRegisterMr(adapter);
              const NDK_FN_FAST_REGISTER fast_register = o.qp->Dispatch->NdkFastRegister;
              (void)fast_register(o.qp, nullptr, o.mr, 2, argument_rules::kPages, 4096, 100,
                                  reinterpret_cast<PVOID>(0x30000), 0);
            }),
            "NDK_ARGUMENT");
  EXPECT_NE(message_.find("FBO 4096 is not below PAGE_SIZE"), std::string::npos) << message_;
  EXPECT_NE(message_.find(", called from "), std::string::npos) << message_;
  EXPECT_NE(message_.find("ndksim_tests+0x"), std::string::npos) << message_;
}

}  // namespace
}  // namespace ndksim::kernel
