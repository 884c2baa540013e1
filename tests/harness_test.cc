// SPDX-License-Identifier: MIT
// The consumer-side helpers (harness.h, testing.h) in the orders users naturally write them: a
// buffer kept as a fixture member, a buffer that outlives its pair, a buffer made after close.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "ndksim/harness.h"
#include "ndksim/testing.h"

namespace ndksim {
namespace {

// Regression: a RegisteredBuffer member of a ConnectedQpPairTest subclass is destroyed after
// TearDown has closed the pair, and its destructor used to call through the freed MR (a
// heap-use-after-free under AddressSanitizer). The pair now closes its buffers' MRs first.
class BufferMemberTest : public testing::ConnectedQpPairTest {
 protected:
  void SetUp() override {
    ConnectedQpPairTest::SetUp();
    buffer_ = a().Register(256);
  }
  std::unique_ptr<RegisteredBuffer> buffer_;
};

TEST_F(BufferMemberTest, OutlivesThePairThatRegisteredIt) {
  const NDK_SGE sge = buffer_->Sge(0, 256);
  ASSERT_EQ(a().Write(nullptr, {&sge, 1}, buffer_->Address(), buffer_->RemoteToken()), STATUS_SUCCESS);
  EXPECT_EQ(pair().Collect(a().initiator_cq, 1).size(), 1u);
  // TearDown closes the pair, then the member goes: nothing is touched after it is freed.
}

// Regression: a SetUp() override that forgot the base left the pair null, and the first a() in the
// test body died with SIGSEGV and no message. Now it fails the test saying what to do.
class ForgetsTheBaseSetUpTest : public testing::ConnectedQpPairTest {
 protected:
  void SetUp() override {}
};

TEST_F(ForgetsTheBaseSetUpTest, UsingTheEndsSaysToCallTheBaseSetUp) {
  EXPECT_THAT([&] { a(); }, ::testing::ThrowsMessage<std::logic_error>(
                                ::testing::HasSubstr("must call ConnectedQpPairTest::SetUp() first")));
}

// Regression: a() in the fixture's constructor, before SetUp, was a SIGSEGV too.
class UsesTheEndsInItsConstructorTest : public testing::ConnectedQpPairTest {
 protected:
  UsesTheEndsInItsConstructorTest() {
    try {
      fabric();
    } catch (const std::logic_error& e) {
      message_ = e.what();
    }
  }
  std::string message_;
};

TEST_F(UsesTheEndsInItsConstructorTest, IsToldTheConstructorCannotUseThem) {
  EXPECT_THAT(message_, ::testing::HasSubstr("the test's constructor cannot use pair(), a(), b() or fabric()"));
}

// The fault rules a test added are in its XML report (property ndksim_fault_rules), failed or not.
class RecordsItsFaultRulesTest : public testing::ConnectedQpPairTest {
 protected:
  void TearDown() override {
    ConnectedQpPairTest::TearDown();
    const ::testing::TestResult* result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
    std::string rules;
    for (int i = 0; i < result->test_property_count(); ++i) {
      if (std::string(result->GetTestProperty(i).key()) == "ndksim_fault_rules") rules = result->GetTestProperty(i).value();
    }
    EXPECT_THAT(rules, ::testing::HasSubstr("drop"));
  }
};

TEST_F(RecordsItsFaultRulesTest, ARuleItAddedIsInTheReport) { fabric().AddFault(DropPackets().Times(1)); }

// Regression: a QpPairConfig field the adapter refuses gave "NdkCreateCq failed:
// STATUS_INVALID_PARAMETER" without saying which field.
TEST(QpPairConfigErrors, AZeroCqDepthIsNamedWithTheAdaptersRange) {
  QpPairConfig c;
  c.cq_depth = 0;
  EXPECT_THAT([&] { QpPair pair(c); },
              ::testing::ThrowsMessage<HarnessError>(::testing::AllOf(
                  ::testing::HasSubstr("NdkCreateCq (QpPairConfig::cq_depth is 0; the adapter takes 1 to "),
                  ::testing::HasSubstr("NDK_ADAPTER_INFO::MaxCqDepth"))));
}

TEST(QpPairConfigErrors, AnInlineSizeAboveTheAdaptersIsNamed) {
  QpPairConfig c;
  c.inline_data_size = 1u << 20;
  EXPECT_THAT([&] { QpPair pair(c); },
              ::testing::ThrowsMessage<HarnessError>(::testing::HasSubstr(
                  "NdkCreateQp (QpPairConfig::inline_data_size is 1048576; the adapter takes 0 to ")));
}

TEST(RegisteredBufferLifetime, KeepsItsMemoryAfterThePairCloses) {
  std::unique_ptr<RegisteredBuffer> buffer;
  {
    QpPair pair;
    buffer = pair.a().Register(64);
    buffer->Data()[63] = std::byte{0x5a};
    EXPECT_TRUE(buffer->IsOpen());
  }
  EXPECT_FALSE(buffer->IsOpen());
  EXPECT_EQ(buffer->Data()[63], std::byte{0x5a});
}

TEST(RegisteredBufferLifetime, ItsTokenAfterThePairClosesIsRefusedByName) {
  std::unique_ptr<RegisteredBuffer> buffer;
  {
    QpPair pair;
    buffer = pair.b().Register(64);
  }
  try {
    (void)buffer->RemoteToken();
    FAIL() << "a closed buffer gave a token";
  } catch (const HarnessError& e) {
    EXPECT_EQ(e.Status(), STATUS_INVALID_DEVICE_STATE);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("its MR was closed with its QpPair side) failed: STATUS_INVALID_DEVICE_STATE"));
  }
}

TEST(RegisteredBufferLifetime, ABufferDestroyedFirstLeavesThePairToCloseTheRest) {
  QpPair pair;
  auto first = pair.a().Register(64);
  auto second = pair.a().Register(64);
  first.reset();  // deregisters itself; the pair's close must not touch it again
  EXPECT_TRUE(second->IsOpen());
}

// ---- Fabric::RunUntil says why it stopped ------------------------------------------------------

TEST(RunUntil, SaysThePredicateHeld) {
  Fabric fabric;
  EXPECT_EQ(fabric.RunUntil([] { return true; }), RunStop::kDone);
}

TEST(RunUntil, SaysTheFabricWentIdle) {
  Fabric fabric;
  const RunResult r = fabric.RunUntil([] { return false; });
  EXPECT_EQ(r, RunStop::kIdle);
  EXPECT_FALSE(r);
}

TEST(RunUntil, SaysTheTimeLimitPassed) {
  QpPair pair;
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE sge = src->Sge(0, 64);
  pair.fabric().AddFault(DropPackets().Always());  // the write keeps being resent
  ASSERT_EQ(pair.a().Write(nullptr, {&sge, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  const TimePoint start = pair.fabric().Now();
  EXPECT_EQ(pair.fabric().RunUntil([] { return false; }, Microseconds(5)), RunStop::kTimeLimit);
  EXPECT_EQ(pair.fabric().Now(), start + Microseconds(5));
}

TEST(RunUntil, PrintsItsReason) {
  EXPECT_EQ(::testing::PrintToString(RunResult{RunStop::kTimeLimit}), "time limit");
}

// ---- a node's addresses ----------------------------------------------------------------------

TEST(NodeAddresses, AnIpv4SocketAddressCarriesThePort) {
  Fabric fabric;
  Node& n = fabric.AddNode({"n", {"2001:db8::5", "192.0.2.5"}});
  ULONG length = 0;
  const SOCKADDR_INET a = n.SocketAddress(4791, AF_INET, &length);
  EXPECT_EQ(length, sizeof(SOCKADDR_IN));
  EXPECT_EQ(a.Ipv4.sin_family, AF_INET);
  EXPECT_EQ(ntohs(a.Ipv4.sin_port), 4791);
  EXPECT_EQ(ntohl(a.Ipv4.sin_addr.s_addr), 0xc0000205u);
}

TEST(NodeAddresses, AnIpv6SocketAddressCarriesThePort) {
  Fabric fabric;
  Node& n = fabric.AddNode({"n", {"192.0.2.5", "2001:db8::5"}});
  ULONG length = 0;
  const SOCKADDR_INET a = n.SocketAddress(80, AF_INET6, &length);
  EXPECT_EQ(length, sizeof(SOCKADDR_IN6));
  EXPECT_EQ(a.Ipv6.sin6_family, AF_INET6);
  EXPECT_EQ(ntohs(a.Ipv6.sin6_port), 80);
  EXPECT_EQ(a.Ipv6.sin6_addr.s6_addr[15], 5);
}

TEST(NodeAddresses, AFamilyTheNodeLacksIsAConfigurationError) {
  Fabric fabric;
  Node& n = fabric.AddNode({"v4only", {"192.0.2.5"}});
  EXPECT_THROW((void)n.SocketAddress(80, AF_INET6), ConfigurationError);
}

TEST(NodeAddresses, ListenAndConnectTakeThemAsTheyAre) {
  Fabric fabric;
  Node& a = fabric.AddNode({"a", {"192.0.2.1"}});
  Node& b = fabric.AddNode({"b", {"192.0.2.2"}});
  NDK_ADAPTER* adapter = nullptr;
  ASSERT_EQ(b.OpenAdapter({2, 1}, &adapter), STATUS_SUCCESS);
  NDK_LISTENER* listener = nullptr;
  ASSERT_EQ(adapter->Dispatch->NdkCreateListener(adapter, [](PVOID, NDK_CONNECTOR*) {}, nullptr, nullptr, nullptr,
                                                 &listener),
            STATUS_SUCCESS);
  ULONG length = 0;
  SOCKADDR_INET at = b.SocketAddress(5000, AF_INET, &length);
  EXPECT_EQ(listener->Dispatch->NdkListen(listener, reinterpret_cast<PSOCKADDR>(&at), length, nullptr, nullptr),
            STATUS_SUCCESS);
  EXPECT_EQ(a.Index(), 0u);
  EXPECT_EQ(b.Index(), 1u);
  b.CloseAdapter(adapter);
}

// ---- fault-rule builders ---------------------------------------------------------------------

TEST(FaultBuilders, NameTheNodeAndQpByObject) {
  QpPair pair;
  const FaultRule r = DropPackets(PacketClass::kRequest).OnQp(*pair.a().node, pair.a().qp).Times(3);
  EXPECT_EQ(r.action, FaultAction::kDrop);
  EXPECT_EQ(r.Point(), FaultPoint::kWire);
  EXPECT_EQ(r.match.node, pair.a().node->Index());
  EXPECT_EQ(r.match.qpn, pair.a().node->QpNumber(pair.a().qp));
  EXPECT_EQ(r.match.packet, PacketClass::kRequest);
  EXPECT_EQ(r.count, 3u);
}

TEST(FaultBuilders, AQpOfAnotherNodeIsAConfigurationError) {
  QpPair pair;
  EXPECT_THROW((void)ForceRnr().OnQp(*pair.a().node, pair.b().qp), ConfigurationError);
}

TEST(FaultBuilders, EachActionGetsItsOwnHookPoint) {
  Fabric fabric;
  Node& n = fabric.AddNode({"n", {"192.0.2.1"}});
  EXPECT_EQ(CorruptPackets().Point(), FaultPoint::kWire);
  EXPECT_EQ(DelayPackets(Microseconds(1)).delay, Microseconds(1));
  EXPECT_EQ(LoseDoorbells().Point(), FaultPoint::kDoorbell);
  EXPECT_EQ(ForceRnr().Point(), FaultPoint::kReceiveWqe);
  EXPECT_EQ(InvalidateTokenInFlight().Point(), FaultPoint::kRemoteAccess);
  EXPECT_EQ(OverrunCq().Point(), FaultPoint::kCqeWrite);
  EXPECT_EQ(FailDmaRead().Point(), FaultPoint::kPayloadRead);
  EXPECT_EQ(FailAdapter(n, TimePoint{} + Microseconds(3)).Point(), FaultPoint::kAdapter);
  EXPECT_EQ(LinkDown(n, TimePoint{}, TimePoint{} + Microseconds(3)).match.link_of, 0u);
}

TEST(FaultBuilders, ADroppedRequestIsResent) {
  QpPair pair;
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  const std::uint32_t id = pair.fabric().AddFault(DropPackets(PacketClass::kRequest).At(*pair.a().node));
  const NDK_SGE sge = src->Sge(0, 64);
  ASSERT_EQ(pair.a().Write(nullptr, {&sge, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(pair.Collect(pair.a().initiator_cq, 1).size(), 1u);
  EXPECT_EQ(pair.fabric().FaultStatsOf(id).fired, 1u);
  EXPECT_EQ(pair.a().node->Counters().retransmissions, 1u);
}

TEST(FaultBuilders, TheFabricDescribesItsRulesAndWhatTheyDid) {
  QpPair pair;
  pair.fabric().AddFault(ForceRnr().At(*pair.b().node).Times(2));
  EXPECT_EQ(pair.fabric().DescribeFaults(),
            "fault 0: " + ToString(ForceRnr().At(*pair.b().node).Times(2)) + ": fired 0 of 0 considered\n");
}

}  // namespace
}  // namespace ndksim
