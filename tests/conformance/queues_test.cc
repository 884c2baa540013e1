// SPDX-License-Identifier: MIT
// Conformance: queues and completions (ndk-reference §3.9-3.14, §3.16, §4.1, §4.2, §4.7 and the §7
// lines "CQE routing", "Flush", "Arm", "CQ overrun", "Creates", "Error propagation"), plus SRQs.
// Every test goes through the NDK dispatch tables only.
#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "ndksim/testing.h"

namespace ndksim {
namespace {

using ::ndksim::testing::ConnectedQpPairTest;
using ::ndksim::testing::HasBytesTransferred;
using ::ndksim::testing::HasQpContext;
using ::ndksim::testing::HasRequestContext;
using ::ndksim::testing::HasStatus;
using ::ndksim::testing::HasType;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

void* Ctx(std::uintptr_t n) { return reinterpret_cast<void*>(n); }

NDK_ADAPTER_INFO QueryInfo(NDK_ADAPTER* adapter) {
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  EXPECT_EQ(adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size), STATUS_SUCCESS);
  return info;
}

void Arm(NDK_CQ* cq, ULONG type) { cq->Dispatch->NdkArmCq(cq, type); }

// ---- fixtures ------------------------------------------------------------------------------------

// A connected pair with its buffers: `a` sends to `b`, which has registered receive buffers.
class Queues : public ConnectedQpPairTest {
 protected:
  void SetUp() override {
    ConnectedQpPairTest::SetUp();
    abuf_ = a().Register(4096);
    bbuf_ = b().Register(4096);
  }
  void TearDown() override {
    abuf_.reset();
    bbuf_.reset();
    ConnectedQpPairTest::TearDown();
  }
  NDK_SGE ASge(ULONG len = 64) const { return abuf_->Sge(0, len); }
  NDK_SGE BSge(std::size_t slot = 0, ULONG len = 64) const { return bbuf_->Sge(slot * 64, len); }
  void PostReceives(int n, std::uintptr_t first_ctx = 100) {
    for (int i = 0; i < n; ++i) {
      const NDK_SGE s = BSge(static_cast<std::size_t>(i) % 32);
      ASSERT_EQ(b().Receive(Ctx(first_ctx + static_cast<std::uintptr_t>(i)), {&s, 1}), STATUS_SUCCESS);
    }
  }
  void SendFromA(std::uintptr_t ctx, ULONG flags = 0, ULONG len = 16) {
    const NDK_SGE s = ASge(len);
    ASSERT_EQ(a().Send(Ctx(ctx), {&s, 1}, flags), STATUS_SUCCESS);
  }

  std::unique_ptr<RegisteredBuffer> abuf_;
  std::unique_ptr<RegisteredBuffer> bbuf_;
};

// One node, one adapter and PD, no connection: for creates and for objects made by hand.
class QueuesStandalone : public ::testing::Test {
 protected:
  void SetUp() override {
    FabricConfig config;
    config.profile = profiles::kFunctional;
    fabric_ = std::make_unique<Fabric>(config);
    node_ = &fabric_->AddNode({"n", {"192.0.2.1"}});
    ASSERT_EQ(node_->OpenAdapter(NDK_VERSION{2, 1}, &adapter_), STATUS_SUCCESS);
    ASSERT_EQ(adapter_->Dispatch->NdkCreatePd(adapter_, nullptr, nullptr, &pd_), STATUS_SUCCESS);
    ASSERT_EQ(adapter_->Dispatch->NdkCreateCq(adapter_, 64, OnNotify, this, nullptr, nullptr, nullptr, &cq_),
              STATUS_SUCCESS);
    info_ = QueryInfo(adapter_);
  }
  void TearDown() override {
    node_->CloseAdapter(adapter_);
    fabric_.reset();
  }
  static void OnNotify(PVOID ctx, NTSTATUS status) {
    auto* self = static_cast<QueuesStandalone*>(ctx);
    ++self->notifications_;
    self->last_status_ = status;
    if (self->in_notify_) self->in_notify_(status);
  }
  // An unconnected QP on cq_ (its receives can be flushed without a peer).
  NDK_QP* CreateQp(void* qp_context = nullptr) {
    NDK_QP* qp = nullptr;
    EXPECT_EQ(pd_->Dispatch->NdkCreateQp(pd_, cq_, cq_, qp_context, 16, 16, 2, 2, 0, nullptr, nullptr, &qp),
              STATUS_SUCCESS);
    return qp;
  }

  std::unique_ptr<Fabric> fabric_;
  Node* node_ = nullptr;
  NDK_ADAPTER* adapter_ = nullptr;
  NDK_PD* pd_ = nullptr;
  NDK_CQ* cq_ = nullptr;
  NDK_ADAPTER_INFO info_{};
  int notifications_ = 0;
  NTSTATUS last_status_ = STATUS_SUCCESS;
  std::function<void(NTSTATUS)> in_notify_;
};

// ---- §7 CQE routing --------------------------------------------------------------------------------

TEST_F(Queues, ReceivesGoToTheReceiveCqAndEverythingElseToTheInitiatorCq) {
  PostReceives(1);
  SendFromA(1, 0, 40);
  const NDK_SGE w = ASge(8);
  ASSERT_EQ(a().Write(Ctx(2), {&w, 1}, bbuf_->Address(1024), bbuf_->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq),
              ElementsAre(HasRequestContext(Ctx(1)), HasRequestContext(Ctx(2))));
  EXPECT_THAT(pair().Drain(a().receive_cq), IsEmpty());
  EXPECT_THAT(pair().Drain(b().initiator_cq), IsEmpty());
  const auto r = pair().Drain(b().receive_cq);
  ASSERT_THAT(r, SizeIs(1));
  EXPECT_THAT(r[0], HasStatus(STATUS_SUCCESS));
  EXPECT_THAT(r[0], HasQpContext(b().qp_context));
  EXPECT_THAT(r[0], HasRequestContext(Ctx(100)));
  EXPECT_THAT(r[0], HasBytesTransferred(40));
  EXPECT_THAT(r[0], HasType(NdkOperationTypeReceive));
}

TEST_F(Queues, InitiatorCompletionsEchoQpContextAndComeInPostingOrder) {
  PostReceives(4);
  for (std::uintptr_t i = 1; i <= 4; ++i) SendFromA(i);
  const auto r = pair().Drain(a().initiator_cq);
  EXPECT_THAT(r, ElementsAre(HasRequestContext(Ctx(1)), HasRequestContext(Ctx(2)), HasRequestContext(Ctx(3)),
                             HasRequestContext(Ctx(4))));
  EXPECT_THAT(r, Each(HasQpContext(a().qp_context)));
}

// ---- §3.9 / §7 Flush --------------------------------------------------------------------------------

TEST_F(Queues, FlushCompletesEveryPendingReceiveCancelled) {
  PostReceives(2);
  b().qp->Dispatch->NdkFlush(b().qp);
  const auto r = pair().Drain(b().receive_cq);
  EXPECT_THAT(r, ElementsAre(HasRequestContext(Ctx(100)), HasRequestContext(Ctx(101))));
  EXPECT_THAT(r, Each(HasStatus(STATUS_CANCELLED)));
}

TEST_F(Queues, FlushCompletesPendingInitiatorRequestsCancelled) {
  SendFromA(1);  // no receive at b: the send cannot finish before the flush
  SendFromA(2);
  a().qp->Dispatch->NdkFlush(a().qp);
  const auto r = pair().Drain(a().initiator_cq);
  EXPECT_THAT(r, ElementsAre(HasRequestContext(Ctx(1)), HasRequestContext(Ctx(2))));
  EXPECT_THAT(r, Each(HasStatus(STATUS_CANCELLED)));
}

TEST_F(Queues, FlushAffectsOnlyThatQpEvenOnASharedCq) {
  const auto extra = pair().AddConnectedQps();  // a second QP on b's receive CQ
  PostReceives(2);
  const NDK_SGE s = BSge(10);
  ASSERT_EQ(extra.b->Dispatch->NdkReceive(extra.b, Ctx(900), &s, 1), STATUS_SUCCESS);
  b().qp->Dispatch->NdkFlush(b().qp);
  const auto r = pair().Drain(b().receive_cq);
  EXPECT_THAT(r, ElementsAre(HasRequestContext(Ctx(100)), HasRequestContext(Ctx(101))));
  // The other QP's receive is still there: a send on its connection consumes it.
  const NDK_SGE as = ASge(8);
  ASSERT_EQ(extra.a->Dispatch->NdkSend(extra.a, Ctx(901), &as, 1, 0), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(b().receive_cq), ElementsAre(HasRequestContext(Ctx(900))));
}

// The command interface (and so NdkFlush) runs on the engine thread, here the test's main thread,
// while a second thread posts on the same QP. The poster touches only the ring, its context slots
// and the doorbell FIFO; the fabric runs after both are done. Everything posted completes exactly
// once, CANCELLED (the flush either found it or it was posted to a QP already in error).
TEST_F(Queues, FlushConcurrentWithPostingCompletesEveryRequestExactlyOnce) {
  constexpr int kPosts = 200;
  std::atomic<bool> go{false};
  std::thread poster([&] {
    while (!go.load(std::memory_order_acquire)) {
    }
    for (int i = 0; i < kPosts; ++i) {
      const NDK_SGE s = BSge(static_cast<std::size_t>(i) % 32);
      EXPECT_EQ(b().Receive(Ctx(1000 + static_cast<std::uintptr_t>(i)), {&s, 1}), STATUS_SUCCESS);
    }
  });
  go.store(true, std::memory_order_release);
  b().qp->Dispatch->NdkFlush(b().qp);
  poster.join();
  std::vector<NDK_RESULT_EX> all;
  pair().fabric().RunUntil([&] {
    QpEnd::Poll(b().receive_cq, all);
    return all.size() >= kPosts;
  });
  pair().fabric().RunUntilIdle();
  while (QpEnd::Poll(b().receive_cq, all) > 0) {
  }
  ASSERT_THAT(all, SizeIs(kPosts));
  EXPECT_THAT(all, Each(HasStatus(STATUS_CANCELLED)));
  std::set<void*> seen;
  for (const auto& r : all) seen.insert(r.RequestContext);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kPosts));
}

// ---- §3.10, §4.2 / §7 Arm -------------------------------------------------------------------------

TEST_F(Queues, NoNotificationWithoutAnArm) {
  PostReceives(1);
  SendFromA(1);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 0);
}

TEST_F(Queues, AnArmFiresAtMostOnce) {
  PostReceives(3);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  for (std::uintptr_t i = 1; i <= 3; ++i) SendFromA(i);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
  EXPECT_EQ(b().last_cq_status, STATUS_SUCCESS);
}

TEST_F(Queues, ArmFiresImmediatelyWhenEntriesArrivedSinceTheLastCallback) {
  PostReceives(1);
  SendFromA(1);
  pair().fabric().RunUntilIdle();  // the receive CQE sits unread; no callback has run
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
}

// ref §4.2 race: poll returns 0 -> the hardware adds an entry -> the consumer arms.
TEST_F(Queues, PollEmptyThenHardwareAddsThenArmStillNotifies) {
  PostReceives(1);
  std::vector<NDK_RESULT_EX> r;
  EXPECT_EQ(QpEnd::Poll(b().receive_cq, r), 0u);
  SendFromA(1);
  pair().fabric().RunUntilIdle();
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
}

TEST_F(Queues, SolicitedArmIgnoresUnsolicitedSendsAndFiresForSolicitedOnes) {
  PostReceives(2);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_SOLICITED);
  SendFromA(1);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 0);
  SendFromA(2, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
}

TEST_F(Queues, ErrorCompletionsSatisfyASolicitedArm) {
  PostReceives(1);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_SOLICITED);
  b().qp->Dispatch->NdkFlush(b().qp);  // the receive completes CANCELLED: an error completion
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
}

TEST_F(Queues, ErrorsArmIgnoresCompletions) {
  PostReceives(1);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ERRORS);
  SendFromA(1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 0);
}

// ref §4.2 double-arm merge table, each cell observed through notifications: the merged arm is
// ANY if an unsolicited success notifies, SOLICITED if only a solicited one does, ERRORS if neither.
struct MergeCell {
  ULONG first;
  ULONG second;
  ULONG merged;
};

class ArmMerge : public Queues, public ::testing::WithParamInterface<MergeCell> {};

TEST_P(ArmMerge, DoubleArmMergesPerTheTable) {
  const MergeCell cell = GetParam();
  PostReceives(2);
  Arm(b().receive_cq, cell.first);
  Arm(b().receive_cq, cell.second);
  SendFromA(1);
  pair().fabric().RunUntilIdle();
  const int after_unsolicited = b().cq_notifications;
  SendFromA(2, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
  pair().fabric().RunUntilIdle();
  const int after_solicited = b().cq_notifications;
  switch (cell.merged) {
    case NDK_CQ_NOTIFY_ANY:
      EXPECT_EQ(after_unsolicited, 1);
      EXPECT_EQ(after_solicited, 1);  // one-shot: the second completion finds no arm
      break;
    case NDK_CQ_NOTIFY_SOLICITED:
      EXPECT_EQ(after_unsolicited, 0);
      EXPECT_EQ(after_solicited, 1);
      break;
    default:
      EXPECT_EQ(after_unsolicited, 0);
      EXPECT_EQ(after_solicited, 0);
      break;
  }
}

constexpr ULONG kAny = NDK_CQ_NOTIFY_ANY;
constexpr ULONG kErrors = NDK_CQ_NOTIFY_ERRORS;
constexpr ULONG kSolicited = NDK_CQ_NOTIFY_SOLICITED;

INSTANTIATE_TEST_SUITE_P(AllNineCells, ArmMerge,
                         ::testing::Values(MergeCell{kAny, kAny, kAny}, MergeCell{kAny, kErrors, kAny},
                                           MergeCell{kAny, kSolicited, kAny}, MergeCell{kErrors, kAny, kAny},
                                           MergeCell{kErrors, kErrors, kErrors},
                                           MergeCell{kErrors, kSolicited, kSolicited},
                                           MergeCell{kSolicited, kAny, kAny},
                                           MergeCell{kSolicited, kErrors, kSolicited},
                                           MergeCell{kSolicited, kSolicited, kSolicited}),
                         [](const ::testing::TestParamInfo<MergeCell>& info) {
                           auto name = [](ULONG t) {
                             return t == kAny ? "Any" : t == kErrors ? "Errors" : "Solicited";
                           };
                           return std::string(name(info.param.first)) + "Then" + name(info.param.second);
                         });

TEST_F(Queues, CallbacksOfOneCqNeverOverlapEvenWhenReArmedInside) {
  PostReceives(3);
  int depth = 0;
  int max_depth = 0;
  b().on_cq_notification = [&](NTSTATUS) {
    max_depth = std::max(max_depth, ++depth);
    // Entries are unread, so this arm is satisfied at once; its callback must wait for ours.
    if (b().cq_notifications < 3) Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
    --depth;
  };
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  SendFromA(1);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(max_depth, 1);
  EXPECT_EQ(b().cq_notifications, 3);
}

TEST_F(Queues, PostingAndReArmingFromInsideTheCallbackWork) {
  PostReceives(1);
  std::vector<NDK_RESULT_EX> got;
  std::uintptr_t next_ctx = 500;
  b().on_cq_notification = [&](NTSTATUS) {
    while (QpEnd::Poll(b().receive_cq, got) > 0) {
    }
    const NDK_SGE s = BSge(1);
    EXPECT_EQ(b().Receive(Ctx(next_ctx++), {&s, 1}), STATUS_SUCCESS);
    Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  };
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  for (std::uintptr_t i = 1; i <= 3; ++i) {
    SendFromA(i);
    pair().fabric().RunUntilIdle();
  }
  EXPECT_THAT(got, ElementsAre(HasRequestContext(Ctx(100)), HasRequestContext(Ctx(500)), HasRequestContext(Ctx(501))));
  EXPECT_THAT(got, Each(HasStatus(STATUS_SUCCESS)));
}

TEST_F(QueuesStandalone, NoCallbackAfterTheCqCloseCompletes) {
  NDK_QP* qp = CreateQp();
  const NDK_SGE s{};
  ASSERT_EQ(qp->Dispatch->NdkReceive(qp, Ctx(1), &s, 0), STATUS_SUCCESS);
  qp->Dispatch->NdkFlush(qp);
  ASSERT_EQ(qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr), STATUS_SUCCESS);
  Arm(cq_, NDK_CQ_NOTIFY_ANY);  // the flushed CQE is unread: a notification is on its way
  EXPECT_EQ(cq_->Dispatch->NdkCloseCq(&cq_->Header, nullptr, nullptr), STATUS_SUCCESS);
  cq_ = nullptr;
  fabric_->RunUntilIdle();
  EXPECT_EQ(notifications_, 0);
}

TEST_F(QueuesStandalone, ClosingTheCqInsideItsCallbackPendsUntilTheCallbackReturns) {
  NDK_QP* qp = CreateQp();
  const NDK_SGE s{};
  ASSERT_EQ(qp->Dispatch->NdkReceive(qp, Ctx(1), &s, 0), STATUS_SUCCESS);
  qp->Dispatch->NdkFlush(qp);
  ASSERT_EQ(qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr), STATUS_SUCCESS);
  bool closed = false;
  bool callback_returned = false;
  bool closed_before_return = false;
  NTSTATUS close_status = STATUS_SUCCESS;
  struct Ctx2 {
    bool* closed;
    bool* callback_returned;
    bool* closed_before_return;
  } c{&closed, &callback_returned, &closed_before_return};
  in_notify_ = [&](NTSTATUS) {
    close_status = cq_->Dispatch->NdkCloseCq(
        &cq_->Header,
        [](PVOID ctx) {
          auto* p = static_cast<Ctx2*>(ctx);
          *p->closed = true;
          *p->closed_before_return = !*p->callback_returned;
        },
        &c);
    callback_returned = true;
  };
  Arm(cq_, NDK_CQ_NOTIFY_ANY);
  fabric_->RunUntilIdle();
  EXPECT_EQ(notifications_, 1);
  EXPECT_EQ(close_status, STATUS_PENDING);
  EXPECT_TRUE(closed);
  EXPECT_FALSE(closed_before_return);
}

// ---- §3.13 / §7 CQ overrun ------------------------------------------------------------------------

class QueuesSmallCq : public Queues {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c = Queues::Config();
    c.cq_depth = 2;  // two CQE slots
    return c;
  }
};

TEST_F(QueuesSmallCq, OverrunNotifiesBufferOverflowAndTheCqReportsNothingMore) {
  PostReceives(4);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ERRORS);
  for (std::uintptr_t i = 1; i <= 3; ++i) SendFromA(i);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
  EXPECT_EQ(b().last_cq_status, STATUS_BUFFER_OVERFLOW);
  const auto before = pair().Drain(b().receive_cq);
  EXPECT_THAT(before, SizeIs(2));
  SendFromA(4);
  EXPECT_THAT(pair().Drain(b().receive_cq), IsEmpty());
}

// Counted per CQ (Node::CqCountersOf): the CQ that overran, with the CQE it lost; b's other CQ
// counts none.
TEST_F(QueuesSmallCq, AnOverrunIsCountedOnTheCqThatOverran) {
  PostReceives(4);
  for (std::uintptr_t i = 1; i <= 3; ++i) SendFromA(i);
  pair().fabric().RunUntilIdle();
  const std::optional<ndksim::CqCounters> c = b().node->CqCountersOf(b().receive_cq);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->cqes_written, 2u);
  EXPECT_EQ(c->overruns, 1u);
  EXPECT_EQ(c->cqes_lost, 1u);
  EXPECT_EQ(c->depth, 2u);
  EXPECT_EQ(b().node->CqCountersOf(b().initiator_cq)->overruns, 0u);
  EXPECT_EQ(a().node->CqCountersOf(b().receive_cq), std::nullopt);  // another node's CQ
}

// The CQ's ring is used pass after pass: each CQE slot's owner bit tells the poller which pass
// wrote it, so a drained slot is never read again and a new one never missed.
TEST_F(QueuesSmallCq, ARingOfTwoUsedForFivePassesGivesEveryCompletionOnceInOrder) {
  std::vector<void*> received;
  for (std::uintptr_t pass = 0; pass < 5; ++pass) {
    PostReceives(2, 100 + 2 * pass);
    SendFromA(1);
    SendFromA(2);
    pair().fabric().RunUntilIdle();
    EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(2));
    for (const NDK_RESULT_EX& r : pair().Drain(b().receive_cq)) received.push_back(r.RequestContext);
  }
  std::vector<void*> expected;
  for (std::uintptr_t i = 100; i < 110; ++i) expected.push_back(Ctx(i));
  EXPECT_EQ(received, expected);
}

TEST_F(QueuesSmallCq, OverrunKillsEveryQpOnTheCq) {
  PostReceives(3);
  for (std::uintptr_t i = 1; i <= 3; ++i) SendFromA(i);
  pair().fabric().RunUntilIdle();
  // b's QP is dead: its initiator requests (on its other, healthy CQ) complete CANCELLED.
  const NDK_SGE s = BSge(20, 8);
  ASSERT_EQ(b().Send(Ctx(7), {&s, 1}), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(b().initiator_cq), ElementsAre(HasStatus(STATUS_CANCELLED)));
}

TEST_F(QueuesSmallCq, AnUnarmedCqReportsItsOverrunAtTheNextArm) {
  PostReceives(3);
  for (std::uintptr_t i = 1; i <= 3; ++i) SendFromA(i);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 0);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
  EXPECT_EQ(b().last_cq_status, STATUS_BUFFER_OVERFLOW);
}

// ---- §3.12 NdkResizeCq ----------------------------------------------------------------------------

TEST_F(QueuesStandalone, ResizeIsAdvertised) {
  EXPECT_NE(info_.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, 0u);
}

TEST_F(QueuesStandalone, ResizeToZeroOrAboveMaxCqDepthIsInvalidParameter) {
  EXPECT_EQ(cq_->Dispatch->NdkResizeCq(cq_, 0, nullptr, nullptr), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(cq_->Dispatch->NdkResizeCq(cq_, info_.MaxCqDepth + 1, nullptr, nullptr), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(cq_->Dispatch->NdkResizeCq(cq_, info_.MaxCqDepth, nullptr, nullptr), STATUS_SUCCESS);
}

TEST_F(QueuesStandalone, ShrinkingBelowTheQueuedEntriesIsBufferOverflowAndChangesNothing) {
  NDK_QP* qp = CreateQp();
  const NDK_SGE s{};
  for (std::uintptr_t i = 1; i <= 3; ++i) ASSERT_EQ(qp->Dispatch->NdkReceive(qp, Ctx(i), &s, 0), STATUS_SUCCESS);
  qp->Dispatch->NdkFlush(qp);
  fabric_->RunUntilIdle();
  EXPECT_EQ(cq_->Dispatch->NdkResizeCq(cq_, 2, nullptr, nullptr), STATUS_BUFFER_OVERFLOW);
  std::vector<NDK_RESULT_EX> r;
  while (QpEnd::Poll(cq_, r) > 0) {
  }
  EXPECT_THAT(r, ElementsAre(HasRequestContext(Ctx(1)), HasRequestContext(Ctx(2)), HasRequestContext(Ctx(3))));
  qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr);
}

// With real latencies some CQEs have landed and others are still in flight when the consumer
// resizes; none is lost and the order is kept.
class QueuesTimed : public Queues {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c;
    c.fabric.profile = profiles::kConnectX100GbeRoce;
    c.cq_depth = 8;
    return c;
  }
};

TEST_F(QueuesTimed, ResizeWhileCompletionsArriveLosesNoneAndKeepsOrder) {
  PostReceives(6);
  for (std::uintptr_t i = 1; i <= 6; ++i) SendFromA(i);
  std::vector<NDK_RESULT_EX> got;
  // Run until the first receive CQE is readable, then take one and resize mid-stream.
  pair().fabric().RunUntil([&] { return QpEnd::Poll(b().receive_cq, got, 1) == 1; });
  ASSERT_THAT(got, SizeIs(1));
  EXPECT_LT(b().node->Counters().cqes_written, 6u);  // some CQEs are still to come
  ASSERT_EQ(b().receive_cq->Dispatch->NdkResizeCq(b().receive_cq, 64, nullptr, nullptr), STATUS_SUCCESS);
  const auto rest = pair().Drain(b().receive_cq);
  got.insert(got.end(), rest.begin(), rest.end());
  ASSERT_THAT(got, SizeIs(6));
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].RequestContext, Ctx(100 + i));
    EXPECT_EQ(got[i].Status, STATUS_SUCCESS);
  }
}

TEST_F(QueuesTimed, ShrinkingWithEntriesQueuedMovesThemToTheNewRing) {
  PostReceives(4);
  for (std::uintptr_t i = 1; i <= 4; ++i) SendFromA(i);
  pair().fabric().RunUntilIdle();
  ASSERT_EQ(b().receive_cq->Dispatch->NdkResizeCq(b().receive_cq, 4, nullptr, nullptr), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(b().receive_cq), ElementsAre(HasRequestContext(Ctx(100)), HasRequestContext(Ctx(101)),
                                                        HasRequestContext(Ctx(102)), HasRequestContext(Ctx(103))));
}

// ---- §3.14 NdkControlCqInterruptModeration ----------------------------------------------------------

TEST_F(QueuesStandalone, ModerationIsAdvertisedAndAccepted) {
  EXPECT_NE(info_.AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, 0u);
  EXPECT_EQ(cq_->Dispatch->NdkControlCqInterruptModeration(cq_, 10, 4), STATUS_SUCCESS);
  EXPECT_EQ(cq_->Dispatch->NdkControlCqInterruptModeration(cq_, 0, 0), STATUS_SUCCESS);
  EXPECT_EQ(cq_->Dispatch->NdkControlCqInterruptModeration(cq_, MAXULONG, 4), STATUS_SUCCESS);
  EXPECT_EQ(cq_->Dispatch->NdkControlCqInterruptModeration(cq_, 10, MAXULONG), STATUS_SUCCESS);
}

TEST_F(QueuesStandalone, ModerationWithBothTriggersOffIsInvalidParameterMix) {
  EXPECT_EQ(cq_->Dispatch->NdkControlCqInterruptModeration(cq_, MAXULONG, MAXULONG), STATUS_INVALID_PARAMETER_MIX);
  EXPECT_EQ(cq_->Dispatch->NdkControlCqInterruptModeration(cq_, MAXULONG, 65), STATUS_INVALID_PARAMETER_MIX);
}

TEST(QueuesModerationCapability, WithoutTheAdapterFlagModerationIsNotSupported) {
  FabricConfig config;
  config.profile = profiles::kFunctional;
  config.profile.cq_interrupt_moderation = false;
  Fabric fabric(config);
  Node& node = fabric.AddNode({"n", {"192.0.2.1"}});
  NDK_ADAPTER* adapter = nullptr;
  ASSERT_EQ(node.OpenAdapter(NDK_VERSION{2, 1}, &adapter), STATUS_SUCCESS);
  EXPECT_EQ(QueryInfo(adapter).AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, 0u);
  NDK_CQ* cq = nullptr;
  ASSERT_EQ(adapter->Dispatch->NdkCreateCq(adapter, 8, [](PVOID, NTSTATUS) {}, nullptr, nullptr, nullptr, nullptr, &cq),
            STATUS_SUCCESS);
  EXPECT_EQ(cq->Dispatch->NdkControlCqInterruptModeration(cq, 10, 4), STATUS_NOT_SUPPORTED);
  node.CloseAdapter(adapter);
}

class QueuesModeration : public Queues {
 protected:
  void SetUp() override {
    Queues::SetUp();
    b().on_cq_notification = [this](NTSTATUS) { notified_at_.push_back(fabric().Now()); };
  }
  NTSTATUS Moderate(ULONG interval, ULONG count) {
    return b().receive_cq->Dispatch->NdkControlCqInterruptModeration(b().receive_cq, interval, count);
  }
  std::vector<TimePoint> notified_at_;
};

TEST_F(QueuesModeration, CountModerationHoldsTheNotificationUntilCountCompletions) {
  ASSERT_EQ(Moderate(MAXULONG, 3), STATUS_SUCCESS);
  PostReceives(3);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  SendFromA(1);
  SendFromA(2);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 0);
  SendFromA(3);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
}

TEST_F(QueuesModeration, IntervalModerationDelaysTheNotificationByTheIntervalOfSimulatedTime) {
  ASSERT_EQ(Moderate(50, MAXULONG), STATUS_SUCCESS);
  PostReceives(1);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  SendFromA(1);
  std::vector<NDK_RESULT_EX> r;
  pair().fabric().RunUntil([&] { return QpEnd::Poll(b().receive_cq, r) > 0; });
  const TimePoint landed = fabric().Now();
  pair().fabric().RunUntilIdle();
  ASSERT_THAT(notified_at_, SizeIs(1));
  EXPECT_EQ(notified_at_[0] - landed, Microseconds(50));
}

TEST_F(QueuesModeration, CountOfOneMeansNoModeration) {
  ASSERT_EQ(Moderate(MAXULONG, 1), STATUS_SUCCESS);
  PostReceives(1);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  SendFromA(1);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
}

TEST_F(QueuesModeration, TheLatestCallWinsForAHeldNotification) {
  ASSERT_EQ(Moderate(MAXULONG, 10), STATUS_SUCCESS);
  PostReceives(1);
  Arm(b().receive_cq, NDK_CQ_NOTIFY_ANY);
  SendFromA(1);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 0);
  ASSERT_EQ(Moderate(0, 0), STATUS_SUCCESS);  // moderation off: the held notification goes now
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().cq_notifications, 1);
}

// ---- §3.16 / §7 Creates: each limit + 1 => STATUS_INVALID_PARAMETER --------------------------------

struct LimitCase {
  const char* name;
  NTSTATUS (*create)(QueuesStandalone& t, const NDK_ADAPTER_INFO& info, ULONG over);
};

class CreateLimits : public QueuesStandalone, public ::testing::WithParamInterface<LimitCase> {
 public:
  NDK_PD* Pd() { return pd_; }
  NDK_CQ* Cq() { return cq_; }
  NDK_ADAPTER* Adapter() { return adapter_; }
  NDK_SRQ* MakeSrq() {
    NDK_SRQ* srq = nullptr;
    EXPECT_EQ(pd_->Dispatch->NdkCreateSrq(pd_, 16, 2, 0, nullptr, nullptr, nullptr, nullptr, nullptr, &srq),
              STATUS_SUCCESS);
    return srq;
  }
};

NTSTATUS MakeQp(CreateLimits& t, ULONG rd, ULONG id, ULONG rs, ULONG is, ULONG inl) {
  NDK_QP* qp = nullptr;
  NDK_PD* pd = t.Pd();
  const NTSTATUS s = pd->Dispatch->NdkCreateQp(pd, t.Cq(), t.Cq(), nullptr, rd, id, rs, is, inl, nullptr, nullptr, &qp);
  if (s == STATUS_SUCCESS) qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr);
  return s;
}

NTSTATUS MakeQpWithSrq(CreateLimits& t, ULONG id, ULONG is, ULONG inl) {
  NDK_SRQ* srq = t.MakeSrq();
  NDK_QP* qp = nullptr;
  NDK_PD* pd = t.Pd();
  const NTSTATUS s = pd->Dispatch->NdkCreateQpWithSrq(pd, t.Cq(), t.Cq(), srq, nullptr, id, is, inl, nullptr, nullptr, &qp);
  if (s == STATUS_SUCCESS) qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr);
  srq->Dispatch->NdkCloseSrq(&srq->Header, nullptr, nullptr);
  return s;
}

NTSTATUS MakeSrq(CreateLimits& t, ULONG depth, ULONG sge) {
  NDK_SRQ* srq = nullptr;
  NDK_PD* pd = t.Pd();
  const NTSTATUS s = pd->Dispatch->NdkCreateSrq(pd, depth, sge, 0, nullptr, nullptr, nullptr, nullptr, nullptr, &srq);
  if (s == STATUS_SUCCESS) srq->Dispatch->NdkCloseSrq(&srq->Header, nullptr, nullptr);
  return s;
}

NTSTATUS MakeCq(CreateLimits& t, ULONG depth) {
  NDK_CQ* cq = nullptr;
  NDK_ADAPTER* ad = t.Adapter();
  const NTSTATUS s =
      ad->Dispatch->NdkCreateCq(ad, depth, [](PVOID, NTSTATUS) {}, nullptr, nullptr, nullptr, nullptr, &cq);
  if (s == STATUS_SUCCESS) cq->Dispatch->NdkCloseCq(&cq->Header, nullptr, nullptr);
  return s;
}

TEST_P(CreateLimits, TheLimitIsAcceptedAndLimitPlusOneIsInvalidParameter) {
  auto& t = static_cast<CreateLimits&>(*this);
  EXPECT_EQ(GetParam().create(t, info_, 0), STATUS_SUCCESS);
  EXPECT_EQ(GetParam().create(t, info_, 1), STATUS_INVALID_PARAMETER);
}

// Each case builds the object with every other parameter small and valid, and the one under test
// at its adapter maximum + `over`. Large depths use the functional profile's limits.
INSTANTIATE_TEST_SUITE_P(
    EveryLimit, CreateLimits,
    ::testing::Values(
        LimitCase{"CqDepth",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeCq(static_cast<CreateLimits&>(t), i.MaxCqDepth + o);
                  }},
        LimitCase{"QpReceiveQueueDepth",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeQp(static_cast<CreateLimits&>(t), i.MaxReceiveQueueDepth + o, 4, 1, 1, 0);
                  }},
        LimitCase{"QpInitiatorQueueDepth",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeQp(static_cast<CreateLimits&>(t), 4, i.MaxInitiatorQueueDepth + o, 1, 1, 0);
                  }},
        LimitCase{"QpReceiveSge",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeQp(static_cast<CreateLimits&>(t), 4, 4, i.MaxReceiveRequestSge + o, 1, 0);
                  }},
        LimitCase{"QpInitiatorSge",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeQp(static_cast<CreateLimits&>(t), 4, 4, 1, i.MaxInitiatorRequestSge + o, 0);
                  }},
        LimitCase{"QpInlineDataSize",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeQp(static_cast<CreateLimits&>(t), 4, 4, 1, 1, i.MaxInlineDataSize + o);
                  }},
        LimitCase{"QpWithSrqInitiatorQueueDepth",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeQpWithSrq(static_cast<CreateLimits&>(t), i.MaxInitiatorQueueDepth + o, 1, 0);
                  }},
        LimitCase{"QpWithSrqInitiatorSge",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeQpWithSrq(static_cast<CreateLimits&>(t), 4, i.MaxInitiatorRequestSge + o, 0);
                  }},
        LimitCase{"QpWithSrqInlineDataSize",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeQpWithSrq(static_cast<CreateLimits&>(t), 4, 1, i.MaxInlineDataSize + o);
                  }},
        LimitCase{"SrqDepth",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeSrq(static_cast<CreateLimits&>(t), i.MaxSrqDepth + o, 1);
                  }},
        LimitCase{"SrqReceiveSge",
                  [](QueuesStandalone& t, const NDK_ADAPTER_INFO& i, ULONG o) {
                    return MakeSrq(static_cast<CreateLimits&>(t), 4, i.MaxReceiveRequestSge + o);
                  }}),
    [](const ::testing::TestParamInfo<LimitCase>& info) { return std::string(info.param.name); });

TEST_F(QueuesStandalone, ZeroDepthsAreInvalidParameter) {
  NDK_CQ* cq = nullptr;
  EXPECT_EQ(adapter_->Dispatch->NdkCreateCq(adapter_, 0, OnNotify, this, nullptr, nullptr, nullptr, &cq),
            STATUS_INVALID_PARAMETER);
  NDK_QP* qp = nullptr;
  EXPECT_EQ(pd_->Dispatch->NdkCreateQp(pd_, cq_, cq_, nullptr, 0, 4, 1, 1, 0, nullptr, nullptr, &qp),
            STATUS_INVALID_PARAMETER);
  EXPECT_EQ(pd_->Dispatch->NdkCreateQp(pd_, cq_, cq_, nullptr, 4, 0, 1, 1, 0, nullptr, nullptr, &qp),
            STATUS_INVALID_PARAMETER);
  NDK_SRQ* srq = nullptr;
  EXPECT_EQ(pd_->Dispatch->NdkCreateSrq(pd_, 0, 1, 0, nullptr, nullptr, nullptr, nullptr, nullptr, &srq),
            STATUS_INVALID_PARAMETER);
  EXPECT_EQ(cq, nullptr);
  EXPECT_EQ(qp, nullptr);
  EXPECT_EQ(srq, nullptr);
}

// ---- §4.7 / §7 Error propagation ----------------------------------------------------------------

TEST_F(Queues, TheFirstErrorCancelsEverythingElseOnThatQpAndThePeersReceives) {
  PostReceives(2);
  const NDK_SGE w = ASge(8);
  // A write through a token the peer never issued: the first error.
  ASSERT_EQ(a().Write(Ctx(1), {&w, 1}, bbuf_->Address(0), bbuf_->RemoteToken() ^ 0x5500u), STATUS_SUCCESS);
  SendFromA(2);
  SendFromA(3);
  const auto r = pair().Drain(a().initiator_cq);
  ASSERT_THAT(r, SizeIs(3));
  EXPECT_NE(r[0].Status, STATUS_SUCCESS);
  EXPECT_NE(r[0].Status, STATUS_CANCELLED);
  EXPECT_THAT(r[1], HasStatus(STATUS_CANCELLED));
  EXPECT_THAT(r[2], HasStatus(STATUS_CANCELLED));
  // Posted later on the dead QP: CANCELLED as well.
  SendFromA(4);
  EXPECT_THAT(pair().Drain(a().initiator_cq), ElementsAre(HasStatus(STATUS_CANCELLED)));
  // The peer's posted receives are flushed.
  const auto peer = pair().Drain(b().receive_cq);
  EXPECT_THAT(peer, SizeIs(2));
  EXPECT_THAT(peer, Each(HasStatus(STATUS_CANCELLED)));
}

TEST_F(Queues, AnInlinePostingFailureLeavesTheQpUsable) {
  PostReceives(1);
  std::vector<NDK_SGE> many(pair().config().max_initiator_sge + 1, ASge(1));
  EXPECT_EQ(a().Send(Ctx(1), many), STATUS_DATA_OVERRUN);  // ndksim: too many SGEs
  SendFromA(2);
  EXPECT_THAT(pair().Drain(a().initiator_cq), ElementsAre(HasRequestContext(Ctx(2))));
  EXPECT_THAT(pair().Drain(a().initiator_cq), IsEmpty());
}

TEST_F(Queues, AFullQueueFailsInlineWithNoMoreEntries) {
  for (ULONG i = 0; i < pair().config().receive_queue_depth; ++i) {
    const NDK_SGE s = BSge(0);
    ASSERT_EQ(b().Receive(Ctx(i), {&s, 1}), STATUS_SUCCESS);
  }
  const NDK_SGE s = BSge(0);
  EXPECT_EQ(b().Receive(Ctx(9999), {&s, 1}), STATUS_NO_MORE_ENTRIES);
}

// ref §4.7 RNR: the send retries while the peer has no receive, then fails with IO_TIMEOUT; the
// receiver sees nothing (no receive was posted to complete).
TEST_F(Queues, ASendWithNoReceivePostedFailsWithIoTimeoutAfterTheRnrRetries) {
  SendFromA(1);
  const auto r = pair().Drain(a().initiator_cq);
  ASSERT_THAT(r, SizeIs(1));
  EXPECT_THAT(r[0], HasStatus(STATUS_IO_TIMEOUT));
  EXPECT_THAT(pair().Drain(b().receive_cq), IsEmpty());
}

TEST_F(Queues, AReceivePostedWithinTheRnrWindowIsUsed) {
  SendFromA(1);
  pair().fabric().RunFor(Nanoseconds(2));  // a couple of RNR retries (functional rnr_delay: 1 ns)
  PostReceives(1);
  EXPECT_THAT(pair().Drain(a().initiator_cq), ElementsAre(HasStatus(STATUS_SUCCESS)));
  EXPECT_THAT(pair().Drain(b().receive_cq), ElementsAre(HasRequestContext(Ctx(100))));
}

// ---- §3.16 SRQ ------------------------------------------------------------------------------------

class QueuesSrq : public Queues {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c = Queues::Config();
    c.srq_depth = 16;
    return c;
  }
  void PostSrq(int n, std::uintptr_t first_ctx = 200) {
    for (int i = 0; i < n; ++i) {
      const NDK_SGE s = BSge(static_cast<std::size_t>(i) % 32);
      ASSERT_EQ(b().SrqReceive(Ctx(first_ctx + static_cast<std::uintptr_t>(i)), {&s, 1}), STATUS_SUCCESS);
    }
  }
  // Closes b's QP while the SRQ lives on (its connector first: QP -> connector, ref §4.4).
  void CloseB() {
    b().connector->Dispatch->NdkCloseConnector(&b().connector->Header, nullptr, nullptr);
    b().connector = nullptr;
    ASSERT_EQ(b().qp->Dispatch->NdkCloseQp(&b().qp->Header, nullptr, nullptr), STATUS_SUCCESS);
    b().qp = nullptr;
  }
};

TEST_F(QueuesSrq, MaxSrqDepthIsReported) {
  EXPECT_EQ(QueryInfo(b().adapter).MaxSrqDepth, fabric().Profile().max_srq_depth);
  EXPECT_GT(QueryInfo(b().adapter).MaxSrqDepth, 0u);
}

TEST_F(QueuesSrq, ASendConsumesAnSrqReceiveAndTheResultNamesTheArrivingQp) {
  PostSrq(1);
  SendFromA(1, 0, 24);
  const auto r = pair().Drain(b().receive_cq);
  ASSERT_THAT(r, SizeIs(1));
  EXPECT_THAT(r[0], HasStatus(STATUS_SUCCESS));
  EXPECT_THAT(r[0], HasRequestContext(Ctx(200)));
  EXPECT_THAT(r[0], HasQpContext(b().qp_context));
  EXPECT_THAT(r[0], HasBytesTransferred(24));
}

// A resize moves the unread CQEs to the new ring whole: an SRQ receive's names its SRQ, without
// which its request context was lost (the SRQ field was not moved).
TEST_F(QueuesSrq, AnSrqReceivesCompletionQueuedAcrossAResizeKeepsItsRequestContext) {
  PostSrq(2);
  SendFromA(1, 0, 24);
  pair().fabric().RunUntilIdle();
  ASSERT_EQ(b().receive_cq->Dispatch->NdkResizeCq(b().receive_cq, 64, nullptr, nullptr), STATUS_SUCCESS);
  const auto r = pair().Drain(b().receive_cq);
  ASSERT_THAT(r, SizeIs(1));
  EXPECT_THAT(r[0], HasRequestContext(Ctx(200)));
  EXPECT_THAT(r[0], HasBytesTransferred(24));
}

TEST_F(QueuesSrq, QpsSharingAnSrqTakeItsReceivesInPostingOrder) {
  const auto extra = pair().AddConnectedQps();
  PostSrq(2);
  const NDK_SGE s = ASge(8);
  ASSERT_EQ(extra.a->Dispatch->NdkSend(extra.a, Ctx(1), &s, 1, 0), STATUS_SUCCESS);
  pair().fabric().RunUntilIdle();
  SendFromA(2);
  const auto r = pair().Drain(b().receive_cq);
  EXPECT_THAT(r, ElementsAre(HasRequestContext(Ctx(200)), HasRequestContext(Ctx(201))));
  EXPECT_THAT(r, Each(HasStatus(STATUS_SUCCESS)));
}

TEST_F(QueuesSrq, TheThresholdNotificationFiresOnceWhenQueuedReceivesFallBelowIt) {
  PostSrq(3);
  ASSERT_EQ(b().srq->Dispatch->NdkModifySrq(b().srq, 0, 2, nullptr, nullptr), STATUS_SUCCESS);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().srq_notifications, 0);  // 3 queued: not below 2
  SendFromA(1);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().srq_notifications, 0);  // 2 queued
  SendFromA(2);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().srq_notifications, 1);  // 1 queued: below 2
  EXPECT_EQ(b().last_srq_status, STATUS_SUCCESS);
  SendFromA(3);
  pair().fabric().RunUntilIdle();
  EXPECT_EQ(b().srq_notifications, 1);  // one-shot
}

TEST_F(QueuesSrq, NdkReceiveOnAQpWithAnSrqIsRefused) {
  const NDK_SGE s = BSge(0);
  EXPECT_EQ(b().Receive(Ctx(1), {&s, 1}), STATUS_INVALID_DEVICE_REQUEST);
}

TEST_F(QueuesSrq, FlushingAQpLeavesSrqReceivesOnTheSrq) {
  const auto extra = pair().AddConnectedQps();
  PostSrq(2);
  b().qp->Dispatch->NdkFlush(b().qp);
  EXPECT_THAT(pair().Drain(b().receive_cq), IsEmpty());
  // Both are still there for the other QP on the SRQ.
  const NDK_SGE s = ASge(8);
  ASSERT_EQ(extra.a->Dispatch->NdkSend(extra.a, Ctx(1), &s, 1, 0), STATUS_SUCCESS);
  ASSERT_EQ(extra.a->Dispatch->NdkSend(extra.a, Ctx(2), &s, 1, 0), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(b().receive_cq), ElementsAre(HasRequestContext(Ctx(200)), HasRequestContext(Ctx(201))));
}

TEST_F(QueuesSrq, ACompletionOfAClosedQpStillFreesItsSrqSlot) {
  PostSrq(16);  // the SRQ is full
  SendFromA(1);
  pair().fabric().RunUntilIdle();  // b's QP took the first SRQ WQE; its CQE waits unpolled
  CloseB();
  EXPECT_THAT(pair().Drain(b().receive_cq), IsEmpty());  // nobody to deliver it to (ref §4.4)
  const NDK_SGE s = BSge(0);
  EXPECT_EQ(b().SrqReceive(Ctx(300), {&s, 1}), STATUS_SUCCESS);
  EXPECT_EQ(b().SrqReceive(Ctx(301), {&s, 1}), STATUS_NO_MORE_ENTRIES);
}

TEST_F(QueuesSrq, ClosingAQpInTheMiddleOfAnSrqReceiveFreesItsSlot) {
  const auto source = a().Register(16384);
  const auto sink = b().Register(16384);
  const NDK_SGE r = sink->Sge(0, 16384);
  ASSERT_EQ(b().SrqReceive(Ctx(300), {&r, 1}), STATUS_SUCCESS);
  PostSrq(15);  // the SRQ is full
  const NDK_SGE s = source->Sge(0, 16384);
  ASSERT_EQ(a().Send(Ctx(1), {&s, 1}, 0), STATUS_SUCCESS);
  // Four 4-KiB packets: stop once the first has been placed, with the receive WQE in use.
  // The QP's own counter: the node's also holds the connection set-up datagrams.
  const auto payload_in = [&] { return b().node->CountersOf(b().qp)->bytes_received; };
  ASSERT_TRUE(pair().fabric().RunUntil([&] { return payload_in() >= 4096; }));
  ASSERT_LT(payload_in(), 16384u);
  CloseB();
  EXPECT_THAT(pair().Drain(b().receive_cq), IsEmpty());
  const NDK_SGE one = BSge(0);
  EXPECT_EQ(b().SrqReceive(Ctx(301), {&one, 1}), STATUS_SUCCESS);
  EXPECT_EQ(b().SrqReceive(Ctx(302), {&one, 1}), STATUS_NO_MORE_ENTRIES);
}

TEST_F(QueuesSrq, SrqReceiveInlineFailures) {
  std::vector<NDK_SGE> many(pair().config().max_receive_sge + 1, BSge(0));
  EXPECT_EQ(b().SrqReceive(Ctx(1), many), STATUS_DATA_OVERRUN);
  PostSrq(16);
  const NDK_SGE s = BSge(0);
  EXPECT_EQ(b().SrqReceive(Ctx(2), {&s, 1}), STATUS_NO_MORE_ENTRIES);
  NDK_SGE bad = BSge(0);
  bad.MemoryRegionToken ^= 0x7700u;
  EXPECT_EQ(a().srq->Dispatch->NdkSrqReceive(a().srq, Ctx(3), &bad, 1), STATUS_ACCESS_VIOLATION);
}

TEST_F(QueuesSrq, ModifySrqDepthRules) {
  NDK_SRQ* srq = b().srq;
  const ULONG max = QueryInfo(b().adapter).MaxSrqDepth;
  EXPECT_EQ(srq->Dispatch->NdkModifySrq(srq, max + 1, 0, nullptr, nullptr), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(srq->Dispatch->NdkModifySrq(srq, 0, 0, nullptr, nullptr), STATUS_SUCCESS);  // unchanged
  PostSrq(16);  // still depth 16
  const NDK_SGE s = BSge(0);
  EXPECT_EQ(b().SrqReceive(Ctx(1), {&s, 1}), STATUS_NO_MORE_ENTRIES);
}

TEST_F(QueuesSrq, GrowingTheSrqKeepsQueuedAndInFlightReceives) {
  PostSrq(10);
  for (std::uintptr_t i = 1; i <= 3; ++i) SendFromA(i);
  pair().fabric().RunUntilIdle();  // three taken and completed, not polled yet
  ASSERT_EQ(b().srq->Dispatch->NdkModifySrq(b().srq, 64, 0, nullptr, nullptr), STATUS_SUCCESS);
  PostSrq(40, 210);  // more than the old ring could hold
  for (std::uintptr_t i = 4; i <= 50; ++i) SendFromA(i);
  const auto r = pair().Drain(b().receive_cq);
  ASSERT_THAT(r, SizeIs(50));
  for (std::size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].RequestContext, Ctx(200 + i));
    EXPECT_EQ(r[i].Status, STATUS_SUCCESS);
  }
}

struct SrqEvents {
  int calls = 0;
  NTSTATUS last = STATUS_PENDING;
  static void On(PVOID ctx, NTSTATUS status) {
    auto* self = static_cast<SrqEvents*>(ctx);
    ++self->calls;
    self->last = status;
  }
};

// An SRQ with a notification callback, on b's PD, with one QP of a fresh connection is more than
// the harness gives; these use an unconnected SRQ and drive consumption through a QP on it.
class QueuesSrqNotify : public QueuesStandalone {
 protected:
  void SetUp() override {
    QueuesStandalone::SetUp();
    ASSERT_EQ(pd_->Dispatch->NdkCreateSrq(pd_, 8, 1, 0, SrqEvents::On, &events_, nullptr, nullptr, nullptr, &srq_),
              STATUS_SUCCESS);
  }
  void Post(int n) {
    const NDK_SGE s{};
    for (int i = 0; i < n; ++i) ASSERT_EQ(srq_->Dispatch->NdkSrqReceive(srq_, Ctx(1), &s, 0), STATUS_SUCCESS);
  }
  NTSTATUS Modify(ULONG depth, ULONG threshold) {
    return srq_->Dispatch->NdkModifySrq(srq_, depth, threshold, nullptr, nullptr);
  }
  NDK_SRQ* srq_ = nullptr;
  SrqEvents events_;
};

TEST_F(QueuesSrqNotify, ArmingAThresholdAboveTheQueuedCountFiresAtOnce) {
  Post(1);
  ASSERT_EQ(Modify(0, 2), STATUS_SUCCESS);
  fabric_->RunUntilIdle();
  EXPECT_EQ(events_.calls, 1);
  EXPECT_EQ(events_.last, STATUS_SUCCESS);
}

TEST_F(QueuesSrqNotify, ArmingAtOrBelowTheQueuedCountDoesNotFire) {
  Post(3);
  ASSERT_EQ(Modify(0, 3), STATUS_SUCCESS);  // 3 queued: not below 3
  fabric_->RunUntilIdle();
  EXPECT_EQ(events_.calls, 0);
}

TEST_F(QueuesSrqNotify, ThresholdZeroKeepsThresholdAndArming) {
  Post(1);
  ASSERT_EQ(Modify(0, 2), STATUS_SUCCESS);
  fabric_->RunUntilIdle();
  ASSERT_EQ(events_.calls, 1);  // one-shot: now disarmed
  ASSERT_EQ(Modify(0, 0), STATUS_SUCCESS);  // does not re-arm
  fabric_->RunUntilIdle();
  EXPECT_EQ(events_.calls, 1);
}

TEST_F(QueuesSrqNotify, ModifySrqAboveMaxIsInvalidParameter) {
  EXPECT_EQ(Modify(info_.MaxSrqDepth + 1, 0), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(Modify(8, 0), STATUS_SUCCESS);
}

TEST_F(QueuesSrqNotify, ClosingAnSrqWhileAQpUsesItPendsUntilTheQpCloses) {
  NDK_QP* qp = nullptr;
  ASSERT_EQ(pd_->Dispatch->NdkCreateQpWithSrq(pd_, cq_, cq_, srq_, nullptr, 4, 1, 0, nullptr, nullptr, &qp),
            STATUS_SUCCESS);
  bool closed = false;
  EXPECT_EQ(srq_->Dispatch->NdkCloseSrq(&srq_->Header, [](PVOID c) { *static_cast<bool*>(c) = true; }, &closed),
            STATUS_PENDING);
  fabric_->RunUntilIdle();
  EXPECT_FALSE(closed);
  qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr);
  fabric_->RunUntilIdle();
  EXPECT_TRUE(closed);
}

TEST_F(QueuesSrqNotify, SrqReceiveRejectsAMissingListAndTooMuchData) {
  EXPECT_EQ(srq_->Dispatch->NdkSrqReceive(srq_, Ctx(1), nullptr, 1), STATUS_INVALID_PARAMETER);
  NDK_SGE huge{};
  huge.Length = info_.MaxTransferLength;
  const NDK_SGE two[2] = {huge, huge};
  EXPECT_EQ(srq_->Dispatch->NdkSrqReceive(srq_, Ctx(1), two, 1), STATUS_ACCESS_VIOLATION);  // not registered
  NDK_SRQ* wide = nullptr;
  ASSERT_EQ(pd_->Dispatch->NdkCreateSrq(pd_, 4, 2, 0, nullptr, nullptr, nullptr, nullptr, nullptr, &wide),
            STATUS_SUCCESS);
  EXPECT_EQ(wide->Dispatch->NdkSrqReceive(wide, Ctx(1), two, 2), STATUS_BUFFER_OVERFLOW);
  wide->Dispatch->NdkCloseSrq(&wide->Header, nullptr, nullptr);
}

TEST_F(QueuesSrqNotify, CreateQpWithSrqRejectsAnSrqOfAnotherPd) {
  NDK_PD* other = nullptr;
  ASSERT_EQ(adapter_->Dispatch->NdkCreatePd(adapter_, nullptr, nullptr, &other), STATUS_SUCCESS);
  NDK_QP* qp = nullptr;
  EXPECT_EQ(other->Dispatch->NdkCreateQpWithSrq(other, cq_, cq_, srq_, nullptr, 4, 1, 0, nullptr, nullptr, &qp),
            STATUS_INVALID_PARAMETER);
  EXPECT_EQ(qp, nullptr);
}

TEST_F(QueuesSrqNotify, CreateQpWithSrqRejectsAMissingSrq) {
  NDK_QP* qp = nullptr;
  EXPECT_EQ(pd_->Dispatch->NdkCreateQpWithSrq(pd_, cq_, cq_, nullptr, nullptr, 4, 1, 0, nullptr, nullptr, &qp),
            STATUS_INVALID_PARAMETER);
}

}  // namespace
}  // namespace ndksim
