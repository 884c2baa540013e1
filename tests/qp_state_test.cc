// SPDX-License-Identifier: MIT
// The QP state machine block (src/hwmodel/qp_state.h): connection, and the error state with who is
// told for each cause, driven directly on two raw NICs.
#include "hwmodel/qp_state.h"

#include <gtest/gtest.h>

#include <vector>

#include "hw_test_driver.h"

namespace ndksim::hw {
namespace {

using testing::Sge;
using testing::TwoNodeRig;

// The host events node a has been sent, by type.
std::vector<EventType> EventsOf(SpscRing<EventEntry>& ring) {
  std::vector<EventType> types;
  EventEntry e;
  while (ring.TryPop(e)) types.push_back(e.type);
  return types;
}

QpContext& ContextOf(Nic& nic, Qpn qpn) {
  QpContext* qp = nic.FindQp(qpn);
  NDKSIM_CHECK(qp != nullptr);
  return *qp;
}

TEST(QpStateMachine, AConnectedQpCannotBeConnectedAgain) {
  TwoNodeRig rig;
  QpConnect again{1, rig.qp_b->qpn, 100, 500, 16, 16};
  EXPECT_EQ(rig.a->QpStates().Connect(ContextOf(*rig.a, rig.qp_a->qpn), again), CommandStatus::kInvalidState);
  EXPECT_EQ(rig.a->QueryQpState(rig.qp_a->qpn), QpState::kReadyToSend);
}

TEST(QpStateMachine, AConsumerErrorTellsNeitherThePeerNorTheHost) {
  TwoNodeRig rig;
  rig.a->QpStates().EnterError(ContextOf(*rig.a, rig.qp_a->qpn), QpErrorCause::kConsumer);
  rig.Run();
  EXPECT_EQ(rig.a->QueryQpState(rig.qp_a->qpn), QpState::kError);
  EXPECT_EQ(rig.b->QueryQpState(rig.qp_b->qpn), QpState::kReadyToSend);
  EXPECT_EQ(rig.a->Counters().packets_sent, 0u);
  EXPECT_TRUE(EventsOf(rig.events_a).empty());
}

TEST(QpStateMachine, ALocalErrorTerminatesThePeerAndTellsTheHost) {
  TwoNodeRig rig;
  rig.a->QpStates().EnterError(ContextOf(*rig.a, rig.qp_a->qpn), QpErrorCause::kLocal);
  rig.Run();
  EXPECT_EQ(rig.a->Counters().packets_sent, 1u);  // the Terminate
  EXPECT_EQ(rig.b->QueryQpState(rig.qp_b->qpn), QpState::kError);
  EXPECT_EQ(EventsOf(rig.events_a), std::vector<EventType>{EventType::kConnectionAbort});
  EXPECT_EQ(EventsOf(rig.events_b), std::vector<EventType>{EventType::kConnectionAbort});  // the peer's, remote
}

TEST(QpStateMachine, ARemoteErrorTellsTheHostButSendsNothing) {
  TwoNodeRig rig;
  rig.a->QpStates().EnterError(ContextOf(*rig.a, rig.qp_a->qpn), QpErrorCause::kRemote);
  rig.Run();
  EXPECT_EQ(rig.a->Counters().packets_sent, 0u);
  EXPECT_EQ(rig.b->QueryQpState(rig.qp_b->qpn), QpState::kReadyToSend);
  EXPECT_EQ(EventsOf(rig.events_a), std::vector<EventType>{EventType::kConnectionAbort});
}

TEST(QpStateMachine, TheErrorStateIsEnteredOnce) {
  TwoNodeRig rig;
  QpContext& qp = ContextOf(*rig.a, rig.qp_a->qpn);
  rig.a->QpStates().EnterError(qp, QpErrorCause::kLocal);
  rig.a->QpStates().EnterError(qp, QpErrorCause::kLocal);
  rig.a->QpStates().EnterError(qp, QpErrorCause::kRemote);
  rig.Run();
  EXPECT_EQ(rig.a->Counters().packets_sent, 1u);
  EXPECT_EQ(EventsOf(rig.events_a).size(), 1u);
}

TEST(QpStateMachine, EnteringErrorFlushesThePostedReceives) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> buf(64);
  const MemoryKey key = rig.Register(*rig.a, rig.pd_a, buf.data(), buf.size(), access::kLocalWrite);
  rig.qp_a->PostReceive({Sge(buf.data(), 64, key)});
  rig.Run();
  rig.a->QpStates().EnterError(ContextOf(*rig.a, rig.qp_a->qpn), QpErrorCause::kConsumer);
  rig.Run();
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kFlushed);
}

TEST(QpStateMachine, TheConsumersErrorOnAQpInErrorFlushesReceivesPostedSince) {
  TwoNodeRig rig;
  rig.a->QpStates().ConsumerError(ContextOf(*rig.a, rig.qp_a->qpn));
  rig.Run();
  std::vector<std::uint8_t> buf(64);
  const MemoryKey key = rig.Register(*rig.a, rig.pd_a, buf.data(), buf.size(), access::kLocalWrite);
  rig.qp_a->PostReceive({Sge(buf.data(), 64, key)});
  rig.a->QpStates().ConsumerError(ContextOf(*rig.a, rig.qp_a->qpn));
  rig.Run();
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kFlushed);
}

}  // namespace
}  // namespace ndksim::hw
