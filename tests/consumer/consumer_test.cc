// SPDX-License-Identifier: MIT
// A small request/response protocol tested the way a user's suite does: the shipped fixture and
// matchers, a fault rule, and an NDK consumer's own helper code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include <ndkpi.h>  // as against the WDK: the ndksim::ndksim target puts it on the path
#include <ndksim/faults.h>
#include <ndksim/testing.h>

namespace {

using ::testing::ElementsAre;
using ndksim::testing::IsCompletion;

class RequestResponseTest : public ndksim::testing::ConnectedQpPairTest {
 protected:
  void SetUp() override {
    ConnectedQpPairTest::SetUp();
    request_ = a().Register(64);
    inbox_ = b().Register(64);
    const NDK_SGE rx = inbox_->Sge(0, 64);
    ASSERT_EQ(b().Receive(inbox_.get(), {&rx, 1}), STATUS_SUCCESS);
  }
  std::unique_ptr<ndksim::RegisteredBuffer> request_;  // outlives the pair: the harness allows it
  std::unique_ptr<ndksim::RegisteredBuffer> inbox_;
};

TEST_F(RequestResponseTest, TheRequestArrivesWhole) {
  std::memcpy(request_->Data(), "GET /x", 6);
  const NDK_SGE tx = request_->Sge(0, 6);
  ASSERT_EQ(a().Send(request_.get(), {&tx, 1}), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().receive_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeReceive, inbox_.get())));
  EXPECT_EQ(std::memcmp(inbox_->Data(), "GET /x", 6), 0);
}

TEST_F(RequestResponseTest, ALostRequestIsRetransmitted) {
  ndksim::FaultRule drop;
  drop.action = ndksim::FaultAction::kDrop;
  drop.match.packet = ndksim::PacketClass::kRequest;
  fabric().AddFault(drop);
  const NDK_SGE tx = request_->Sge(0, 6);
  ASSERT_EQ(a().Send(request_.get(), {&tx, 1}), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeSend, request_.get())));
  EXPECT_EQ(a().node->Counters().retransmissions, 1u);
}

}  // namespace
