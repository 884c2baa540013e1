// SPDX-License-Identifier: MIT
// Fault injection (include/ndksim/faults.h): each action at its hook point, with the consequence a
// consumer sees (completion status, data, counters, simulated time); rule matching and windows;
// determinism; and the DESIGN.md invariants under random faults: every successful post yields
// exactly one completion, and data is never placed corrupted.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "ndksim/testing.h"
#include "ndksim/workload.h"

namespace ndksim {
namespace {

using ::ndksim::testing::HasStatus;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr std::uint32_t kNodeA = 0;
constexpr std::uint32_t kNodeB = 1;
constexpr ULONG kBuffer = 64 * 1024;

void* Ctx(std::uintptr_t n) { return reinterpret_cast<void*>(n); }

void Fill(RegisteredBuffer& b, std::uint8_t seed) {
  for (std::size_t i = 0; i < b.Size(); ++i) b.Data()[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
}

bool SameBytes(RegisteredBuffer& x, RegisteredBuffer& y, std::size_t n) {
  return std::memcmp(x.Data(), y.Data(), n) == 0;
}

bool AllZero(RegisteredBuffer& b, std::size_t n) {
  return std::all_of(b.Data(), b.Data() + n, [](std::byte v) { return v == std::byte{0}; });
}

// A rule for `action` at the one hook point where it acts, on `node` (any node when empty).
FaultRule Rule(FaultAction action, std::optional<std::uint32_t> node) {
  FaultRule r;
  r.action = action;
  r.match.node = node;
  return r;
}

// A connected pair on the default (timed) profile, with a source buffer on a and a sink on b.
class Faults : public testing::ConnectedQpPairTest {
 protected:
  void SetUp() override {
    ConnectedQpPairTest::SetUp();
    src_ = a().Register(kBuffer);
    dst_ = b().Register(kBuffer);
    Fill(*src_, 1);
  }
  void TearDown() override {
    src_.reset();
    dst_.reset();
    ConnectedQpPairTest::TearDown();
  }
  QpPairConfig Config() const override {
    QpPairConfig c;
    c.fabric.profile = profiles::kConnectX100GbeRoce;
    return c;
  }
  const HardwareProfile& Profile() { return fabric().Profile(); }
  // Long enough for a request to use up every retry: an ACK timeout per try, and one more.
  Duration RetryBudget() { return Profile().ack_timeout * (Profile().retry_count + 2); }

  NTSTATUS WriteFromA(ULONG bytes, std::uintptr_t ctx = 1) {
    const NDK_SGE sge = src_->Sge(0, bytes);
    return a().Write(Ctx(ctx), {&sge, 1}, dst_->Address(), dst_->RemoteToken());
  }
  NTSTATUS ReadFromB(ULONG bytes, std::uintptr_t ctx = 2) {
    const NDK_SGE sge = src_->Sge(0, bytes);
    return a().Read(Ctx(ctx), {&sge, 1}, dst_->Address(), dst_->RemoteToken());
  }
  NTSTATUS ReceiveAtB(ULONG bytes, std::uintptr_t ctx = 3) {
    const NDK_SGE sge = dst_->Sge(0, bytes);
    return b().Receive(Ctx(ctx), {&sge, 1});
  }
  NTSTATUS SendFromA(ULONG bytes, std::uintptr_t ctx = 4) {
    const NDK_SGE sge = src_->Sge(0, bytes);
    return a().Send(Ctx(ctx), {&sge, 1});
  }
  // The one completion of a's initiator queue, and the simulated time its CQE was polled at.
  NDK_RESULT_EX OneInitiatorCompletion(TimePoint* at = nullptr) {
    std::vector<NDK_RESULT_EX> r = pair().Collect(a().initiator_cq, 1, RetryBudget());
    if (at != nullptr) *at = fabric().Now();
    EXPECT_THAT(r, SizeIs(1));
    pair().fabric().RunUntilIdle();
    EXPECT_THAT(pair().Drain(a().initiator_cq), IsEmpty());  // exactly one
    return r.empty() ? NDK_RESULT_EX{} : r[0];
  }
  QpCounters CountersOfA() { return *a().node->CountersOf(a().qp); }

  static FaultRule Wire(FaultAction action, std::uint32_t node, PacketClass packet = PacketClass::kRequest) {
    FaultRule r = Rule(action, node);
    r.match.packet = packet;
    return r;
  }

  std::unique_ptr<RegisteredBuffer> src_;
  std::unique_ptr<RegisteredBuffer> dst_;
};

// ---- rules ---------------------------------------------------------------------------------------

TEST(FaultRules, TheHookPointFollowsFromTheAction) {
  FaultRule r;
  r.action = FaultAction::kLose;
  EXPECT_EQ(r.Point(), FaultPoint::kDoorbell);
  r.action = FaultAction::kOverrun;
  EXPECT_EQ(r.Point(), FaultPoint::kCqeWrite);
}

TEST_F(Faults, EveryProblemOfARuleIsNamed) {
  FaultRule r = Wire(FaultAction::kDrop, kNodeA);
  r.probability = 0;
  r.count = 0;
  r.until = r.from;
  const std::vector<std::string> errors = Validate(r);
  EXPECT_THAT(errors, SizeIs(3));
  EXPECT_THAT(errors, ::testing::Contains(HasSubstr("probability")));
  EXPECT_THAT(errors, ::testing::Contains(HasSubstr("count")));
  EXPECT_THAT(errors, ::testing::Contains(HasSubstr("until")));
}

TEST_F(Faults, ADelayRuleNeedsAPositiveDelay) {
  EXPECT_THAT(Validate(Wire(FaultAction::kDelay, kNodeA)), ElementsAre(HasSubstr("delay")));
}

TEST_F(Faults, AnUnknownRuleIdIsAConfigurationError) {
  EXPECT_THROW(fabric().RemoveFault(7), ConfigurationError);
  EXPECT_THROW((void)fabric().FaultStatsOf(7), ConfigurationError);
}

TEST_F(Faults, ARefusedRuleChangesNothing) {
  FaultRule bad = Wire(FaultAction::kDrop, kNodeA);
  bad.count = 0;
  EXPECT_THROW(fabric().AddFault(bad), ConfigurationError);
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_EQ(a().node->Counters().faults_injected, 0u);
}

// ---- the wire ------------------------------------------------------------------------------------

TEST_F(Faults, ADroppedWritePacketIsResentAfterTheAckTimeoutAndTheDataLands) {
  const std::uint32_t rule = fabric().AddFault(Wire(FaultAction::kDrop, kNodeA));
  const TimePoint posted = fabric().Now();
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  TimePoint done;
  EXPECT_THAT(OneInitiatorCompletion(&done), HasStatus(STATUS_SUCCESS));
  EXPECT_TRUE(SameBytes(*src_, *dst_, 4096));
  EXPECT_EQ(CountersOfA().retransmissions, 1u);
  EXPECT_GE(done - posted, Profile().ack_timeout);
  EXPECT_EQ(fabric().FaultStatsOf(rule).fired, 1u);
}

TEST_F(Faults, ADroppedAckIsRecoveredAndTheDuplicateIsAcknowledged) {
  fabric().AddFault(Wire(FaultAction::kDrop, kNodeB, PacketClass::kAcknowledge));
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_TRUE(SameBytes(*src_, *dst_, 4096));
  EXPECT_EQ(CountersOfA().retransmissions, 1u);
}

TEST_F(Faults, ADroppedReadResponseIsAskedForAgain) {
  Fill(*dst_, 9);
  fabric().AddFault(Wire(FaultAction::kDrop, kNodeB, PacketClass::kReadResponse));
  ASSERT_EQ(ReadFromB(8192), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_TRUE(SameBytes(*src_, *dst_, 8192));
}

TEST_F(Faults, ACorruptedPacketIsDiscardedByTheIcrcCheckBeforeItIsPlaced) {
  fabric().AddFault(Wire(FaultAction::kCorrupt, kNodeA));
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  fabric().RunFor(Profile().ack_timeout / 2);  // the corrupted packet has arrived, no resend yet
  EXPECT_EQ(b().node->Counters().icrc_errors, 1u);
  EXPECT_TRUE(AllZero(*dst_, 4096));
}

TEST_F(Faults, ACorruptedPacketIsResentAndTheGoodCopyLands) {
  fabric().AddFault(Wire(FaultAction::kCorrupt, kNodeA));
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_TRUE(SameBytes(*src_, *dst_, 4096));
}

TEST_F(Faults, ADelayedPacketIsOvertakenAndTheMessageStillLandsWhole) {
  FaultRule r = Wire(FaultAction::kDelay, kNodeA);
  r.delay = Microseconds(5);
  fabric().AddFault(r);
  ASSERT_EQ(WriteFromA(4 * 4096), STATUS_SUCCESS);  // four packets; the first arrives last
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_TRUE(SameBytes(*src_, *dst_, 4 * 4096));
  EXPECT_GE(b().node->Counters().naks_sent, 1u);  // the gap was seen and NAKed
}

TEST_F(Faults, DroppingEveryResendExhaustsTheRetryCountWithIoTimeout) {
  FaultRule r = Wire(FaultAction::kDrop, kNodeA);
  r.count = kEveryTime;
  fabric().AddFault(r);
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_IO_TIMEOUT));
  EXPECT_EQ(CountersOfA().retransmissions, Profile().retry_count);
}

TEST_F(Faults, ALinkThatComesBackBeforeTheRetriesRunOutLosesNothing) {
  const TimePoint now = fabric().Now();
  fabric().AddFault(LinkDown(kNodeB, now, now + Milliseconds(1)));
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  TimePoint done;
  EXPECT_THAT(OneInitiatorCompletion(&done), HasStatus(STATUS_SUCCESS));
  EXPECT_TRUE(SameBytes(*src_, *dst_, 4096));
  EXPECT_GE(done, now + Milliseconds(1));
}

TEST_F(Faults, ALinkDownForLongerThanTheRetriesFailsTheRequestWithIoTimeout) {
  const TimePoint now = fabric().Now();
  fabric().AddFault(LinkDown(kNodeB, now, now + RetryBudget()));
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_IO_TIMEOUT));
}

// ---- the transport under loss --------------------------------------------------------------------

TEST_F(Faults, ReadsBehindAReadWhoseResponseWasLostCompleteInOrder) {
  Fill(*dst_, 9);
  fabric().AddFault(Wire(FaultAction::kDrop, kNodeB, PacketClass::kReadResponse));
  for (std::uintptr_t i = 0; i < 8; ++i) {
    const NDK_SGE sge = src_->Sge(i * 1024, 1024);
    ASSERT_EQ(a().Read(Ctx(i + 1), {&sge, 1}, dst_->Address(i * 1024), dst_->RemoteToken()), STATUS_SUCCESS);
  }
  const auto r = pair().Collect(a().initiator_cq, 8);
  ASSERT_THAT(r, SizeIs(8));
  for (std::uintptr_t i = 0; i < 8; ++i) {
    EXPECT_EQ(r[i].RequestContext, Ctx(i + 1));
    EXPECT_EQ(r[i].Status, STATUS_SUCCESS);
  }
  EXPECT_TRUE(SameBytes(*src_, *dst_, 8 * 1024));
}

TEST_F(Faults, AWriteAcknowledgedBehindAReadWhoseResponseWasLostIsNotSentAgain) {
  Fill(*dst_, 9);
  fabric().AddFault(Wire(FaultAction::kDrop, kNodeB, PacketClass::kReadResponse));
  const std::uint64_t received_before = b().node->Counters().bytes_received;
  const NDK_SGE sink = src_->Sge(0, 1024);
  ASSERT_EQ(a().Read(Ctx(1), {&sink, 1}, dst_->Address(), dst_->RemoteToken()), STATUS_SUCCESS);
  const NDK_SGE source = src_->Sge(4096, 1024);
  ASSERT_EQ(a().Write(Ctx(2), {&source, 1}, dst_->Address(4096), dst_->RemoteToken()), STATUS_SUCCESS);
  const auto r = pair().Collect(a().initiator_cq, 2);
  EXPECT_THAT(r, ElementsAre(HasStatus(STATUS_SUCCESS), HasStatus(STATUS_SUCCESS)));
  // The read was asked again; the write, acknowledged the first time, was not sent again.
  EXPECT_EQ(b().node->Counters().bytes_received - received_before, 1024u);
}

TEST_F(Faults, AResponseBehindALostOneIsNotTaken) {
  Fill(*dst_, 9);
  fabric().AddFault(Wire(FaultAction::kDrop, kNodeB, PacketClass::kReadResponse));
  // The second response shows the gap and the first read is asked for again at once (implied
  // NAK); that request is lost too, so nothing more arrives before the ACK timer.
  FaultRule reread = Wire(FaultAction::kDrop, kNodeA);
  reread.skip = 2;
  fabric().AddFault(reread);
  for (std::uintptr_t i = 0; i < 2; ++i) {
    const NDK_SGE sge = src_->Sge(i * 1024, 1024);
    ASSERT_EQ(a().Read(Ctx(i + 1), {&sge, 1}, dst_->Address(i * 1024), dst_->RemoteToken()), STATUS_SUCCESS);
  }
  std::memset(src_->Data(), 0, kBuffer);  // the reads' sinks
  fabric().RunFor(Profile().ack_timeout / 2);  // the second response has arrived, out of order
  EXPECT_TRUE(AllZero(*src_, 2 * 1024));
}

TEST(FaultsOnStreams, ReadsStreamThroughTenPercentLoss) {
  WorkloadConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  c.op = Operation::kRead;
  c.bytes = 1024;
  c.qps = 2;
  c.post_list = 4;
  c.window = 128;
  Workload w(c);
  FaultRule loss;
  loss.action = FaultAction::kDrop;
  loss.count = kEveryTime;
  loss.probability = 0.1;
  const std::uint32_t rule = w.fabric().AddFault(loss);
  EXPECT_NO_THROW(w.Stream(2000));  // every read completes, successfully
  EXPECT_GT(w.fabric().FaultStatsOf(rule).fired, 100u);
}

// ---- doorbells -----------------------------------------------------------------------------------

TEST_F(Faults, ALostDoorbellLeavesTheRequestInTheRingUntilTheNextDoorbell) {
  fabric().AddFault(Rule(FaultAction::kLose, kNodeA));
  ASSERT_EQ(WriteFromA(64, 1), STATUS_SUCCESS);
  fabric().RunUntilIdle();
  EXPECT_THAT(pair().Drain(a().initiator_cq), IsEmpty());
  EXPECT_EQ(CountersOfA().wqes_executed, 0u);
  ASSERT_EQ(WriteFromA(64, 2), STATUS_SUCCESS);  // its doorbell names both WQEs
  const auto r2 = pair().Collect(a().initiator_cq, 2);
  EXPECT_THAT(r2, ElementsAre(::ndksim::testing::HasRequestContext(Ctx(1)),
                              ::ndksim::testing::HasRequestContext(Ctx(2))));
}

TEST_F(Faults, AFlushCompletesARequestALostDoorbellStranded) {
  fabric().AddFault(Rule(FaultAction::kLose, std::nullopt));
  ASSERT_EQ(WriteFromA(64), STATUS_SUCCESS);
  fabric().RunUntilIdle();
  a().qp->Dispatch->NdkFlush(a().qp);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_CANCELLED));
}

// ---- receive WQEs --------------------------------------------------------------------------------

FaultRule ForceRnr(std::uint64_t count) {
  FaultRule r = Rule(FaultAction::kForceRnr, kNodeB);
  r.count = count;
  return r;
}

TEST_F(Faults, AForcedRnrIsRetriedAfterTheRnrDelayAndTheSendSucceeds) {
  fabric().AddFault(ForceRnr(1));
  ASSERT_EQ(ReceiveAtB(256), STATUS_SUCCESS);
  const TimePoint posted = fabric().Now();
  ASSERT_EQ(SendFromA(256), STATUS_SUCCESS);
  TimePoint done;
  EXPECT_THAT(OneInitiatorCompletion(&done), HasStatus(STATUS_SUCCESS));
  EXPECT_EQ(b().node->Counters().rnr_naks_sent, 1u);
  EXPECT_GE(done - posted, Profile().rnr_delay);
  EXPECT_TRUE(SameBytes(*src_, *dst_, 256));
}

TEST_F(Faults, ForcingRnrPastTheRnrRetryCountFailsTheSendWithIoTimeout) {
  fabric().AddFault(ForceRnr(kEveryTime));
  ASSERT_EQ(ReceiveAtB(256), STATUS_SUCCESS);
  ASSERT_EQ(SendFromA(256), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_IO_TIMEOUT));
  EXPECT_EQ(b().node->Counters().rnr_naks_sent, Profile().rnr_retry_count + 1u);
}

// ---- remote access -------------------------------------------------------------------------------

FaultRule InvalidateToken() { return Rule(FaultAction::kInvalidateToken, kNodeB); }

TEST_F(Faults, AWriteWhoseTokenIsInvalidatedInFlightFailsWithTheRemoteAccessError) {
  fabric().AddFault(InvalidateToken());
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_ACCESS_VIOLATION));
  EXPECT_TRUE(AllZero(*dst_, 4096));
}

TEST_F(Faults, AReadWhoseTokenIsInvalidatedInFlightFailsWithTheRemoteAccessError) {
  fabric().AddFault(InvalidateToken());
  ASSERT_EQ(ReadFromB(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_ACCESS_VIOLATION));
}

TEST_F(Faults, ATokenInvalidatedInFlightStaysInvalid) {
  fabric().AddFault(InvalidateToken());  // acts once
  ASSERT_EQ(WriteFromA(64), STATUS_SUCCESS);
  ASSERT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_ACCESS_VIOLATION));
  const auto extra = pair().AddConnectedQps();
  const NDK_SGE sge = src_->Sge(0, 64);
  ASSERT_EQ(extra.a->Dispatch->NdkWrite(extra.a, Ctx(9), &sge, 1, dst_->Address(), dst_->RemoteToken(), 0),
            STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_ACCESS_VIOLATION));
}

// ---- completion queues ---------------------------------------------------------------------------

TEST_F(Faults, AnInjectedOverrunKillsTheCqAndTheNextArmReportsBufferOverflow) {
  fabric().AddFault(Rule(FaultAction::kOverrun, kNodeA));
  ASSERT_EQ(WriteFromA(64), STATUS_SUCCESS);
  fabric().RunUntilIdle();
  EXPECT_THAT(pair().Drain(a().initiator_cq), IsEmpty());
  a().initiator_cq->Dispatch->NdkArmCq(a().initiator_cq, NDK_CQ_NOTIFY_ANY);
  fabric().RunUntilIdle();
  EXPECT_EQ(a().cq_notifications, 1);
  EXPECT_EQ(a().last_cq_status, STATUS_BUFFER_OVERFLOW);
}

// ---- DMA -----------------------------------------------------------------------------------------

FaultRule FailPayloadRead() { return Rule(FaultAction::kFailDma, kNodeA); }

TEST_F(Faults, AFailedPayloadReadCompletesTheRequestWithInternalError) {
  fabric().AddFault(FailPayloadRead());
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_INTERNAL_ERROR));
  EXPECT_TRUE(AllZero(*dst_, 4096));
}

TEST_F(Faults, AFailedPayloadReadFlushesTheRequestsBehindIt) {
  fabric().AddFault(FailPayloadRead());
  ASSERT_EQ(WriteFromA(4096, 1), STATUS_SUCCESS);
  ASSERT_EQ(WriteFromA(4096, 2), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 2),
              ElementsAre(HasStatus(STATUS_INTERNAL_ERROR), HasStatus(STATUS_CANCELLED)));
}

TEST_F(Faults, AFailedPayloadReadFlushesThePeersReceives) {
  fabric().AddFault(FailPayloadRead());
  ASSERT_EQ(ReceiveAtB(256), STATUS_SUCCESS);
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().receive_cq, 1), ElementsAre(HasStatus(STATUS_CANCELLED)));
}

// "Drop every request" matches the Terminate too, which travels as a request: the peer of the
// failed QP never hears of it, and its receive stays posted.
TEST_F(Faults, ARuleDroppingRequestsAlsoDropsTheTerminate) {
  fabric().AddFault(FailPayloadRead());
  fabric().AddFault(DropPackets(PacketClass::kRequest).At(*a().node).Always());
  ASSERT_EQ(ReceiveAtB(256), STATUS_SUCCESS);
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_INTERNAL_ERROR));
  EXPECT_THAT(pair().Drain(b().receive_cq), IsEmpty());
}

// ---- the adapter ---------------------------------------------------------------------------------

FaultRule FailAdapter(std::uint32_t node, TimePoint at) {
  FaultRule r = Rule(FaultAction::kFailAdapter, node);
  r.from = at;
  return r;
}

TEST_F(Faults, AnAdapterRuleNeedsAnExistingNode) {
  FaultRule r = FailAdapter(kNodeA, fabric().Now());
  r.match.node = 5;
  EXPECT_THROW(fabric().AddFault(r), ConfigurationError);
  r.match.node.reset();
  EXPECT_THROW(fabric().AddFault(r), ConfigurationError);
}

TEST_F(Faults, AFailedAdapterReportsInternalErrorOnTheNextArmOfEachCq) {
  fabric().AddFault(FailAdapter(kNodeA, fabric().Now() + Microseconds(1)));
  fabric().RunUntilIdle();
  EXPECT_EQ(a().cq_notifications, 0);  // nothing was armed
  a().initiator_cq->Dispatch->NdkArmCq(a().initiator_cq, NDK_CQ_NOTIFY_ANY);
  a().receive_cq->Dispatch->NdkArmCq(a().receive_cq, NDK_CQ_NOTIFY_ERRORS);
  fabric().RunUntilIdle();
  EXPECT_EQ(a().cq_notifications, 2);
  EXPECT_EQ(a().last_cq_status, STATUS_INTERNAL_ERROR);
}

TEST_F(Faults, AFailedAdapterFailsAnArmedCqAtOnce) {
  a().initiator_cq->Dispatch->NdkArmCq(a().initiator_cq, NDK_CQ_NOTIFY_ERRORS);
  fabric().AddFault(FailAdapter(kNodeA, fabric().Now() + Microseconds(1)));
  fabric().RunUntilIdle();
  EXPECT_EQ(a().cq_notifications, 1);
  EXPECT_EQ(a().last_cq_status, STATUS_INTERNAL_ERROR);
}

TEST_F(Faults, AFailedAdapterAbortsItsConnections) {
  fabric().AddFault(FailAdapter(kNodeA, fabric().Now()));
  fabric().RunUntilIdle();
  EXPECT_EQ(a().disconnect_events, 1);
}

TEST_F(Faults, AFailedAdapterPutsNothingOnTheWire) {
  fabric().AddFault(FailAdapter(kNodeA, fabric().Now()));
  fabric().RunUntilIdle();
  const std::uint64_t received = b().node->Counters().packets_received;
  (void)WriteFromA(4096);
  fabric().RunUntilIdle();
  EXPECT_EQ(b().node->Counters().packets_received, received);
  EXPECT_TRUE(AllZero(*dst_, 4096));
}

TEST_F(Faults, ThePeerOfAFailedAdapterTimesOut) {
  fabric().AddFault(FailAdapter(kNodeA, fabric().Now()));
  fabric().RunUntilIdle();
  const NDK_SGE sge = dst_->Sge(0, 64);
  ASSERT_EQ(b().Write(Ctx(7), {&sge, 1}, src_->Address(), src_->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().initiator_cq, 1, RetryBudget()), ElementsAre(HasStatus(STATUS_IO_TIMEOUT)));
}

TEST_F(Faults, AConnectionAttemptFromAFailedAdapterNeverReachesThePeerAndTimesOut) {
  NDK_QP* qp = nullptr;
  ASSERT_EQ(a().pd->Dispatch->NdkCreateQp(a().pd, a().receive_cq, a().initiator_cq, nullptr, 16, 16, 1, 1, 0, nullptr,
                                          nullptr, &qp),
            STATUS_SUCCESS);
  NDK_CONNECTOR* connector = nullptr;
  ASSERT_EQ(a().adapter->Dispatch->NdkCreateConnector(a().adapter, nullptr, nullptr, &connector), STATUS_SUCCESS);
  fabric().AddFault(FailAdapter(kNodeA, fabric().Now()));
  fabric().RunUntilIdle();
  SOCKADDR_INET src;
  SOCKADDR_INET dst;
  const ULONG src_len = pair().Address(a(), 0, &src);
  const ULONG dst_len = pair().Address(b(), pair().config().port, &dst);
  struct Done {
    NTSTATUS status = STATUS_PENDING;
    static void On(PVOID ctx, NTSTATUS s) { static_cast<Done*>(ctx)->status = s; }
  } done;
  const NTSTATUS s = connector->Dispatch->NdkConnect(connector, qp, reinterpret_cast<PSOCKADDR>(&src), src_len,
                                                     reinterpret_cast<PSOCKADDR>(&dst), dst_len, 1, 1, nullptr, 0,
                                                     Done::On, &done);
  ASSERT_EQ(s, STATUS_PENDING);
  const std::uint64_t peer_interrupts = b().node->Counters().interrupts;
  fabric().RunUntilIdle();
  EXPECT_EQ(done.status, STATUS_IO_TIMEOUT);
  EXPECT_EQ(b().node->Counters().interrupts, peer_interrupts);  // no connect request arrived
  connector->Dispatch->NdkCloseConnector(&connector->Header, nullptr, nullptr);
  qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr);
  fabric().RunUntilIdle();
}

class FaultsWithSrq : public Faults {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c = Faults::Config();
    c.srq_depth = 16;
    return c;
  }
};

TEST_F(FaultsWithSrq, AFailedAdapterGivesEachSrqCallbackInternalError) {
  fabric().AddFault(FailAdapter(kNodeB, fabric().Now()));
  fabric().RunUntilIdle();
  EXPECT_EQ(b().srq_notifications, 1);
  EXPECT_EQ(b().last_srq_status, STATUS_INTERNAL_ERROR);
}

// ---- matching ------------------------------------------------------------------------------------

TEST_F(Faults, ARuleForOneQpLeavesTheOthersAlone) {
  const auto extra = pair().AddConnectedQps();
  FaultRule r = Wire(FaultAction::kDrop, kNodeA, PacketClass::kAny);
  r.match.qpn = *a().node->QpNumber(extra.a);
  r.count = kEveryTime;
  fabric().AddFault(r);
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_EQ(CountersOfA().retransmissions, 0u);
}

TEST_F(Faults, SkipLetsTheFirstMatchingEventsThrough) {
  FaultRule r = Wire(FaultAction::kDrop, kNodeA);
  r.skip = 2;
  const std::uint32_t rule = fabric().AddFault(r);
  ASSERT_EQ(WriteFromA(4 * 4096), STATUS_SUCCESS);
  fabric().RunFor(Profile().ack_timeout / 2);
  // Packets 0 and 1 passed, packet 2 was dropped; the rule, spent, no longer looks at packet 3.
  EXPECT_EQ(fabric().FaultStatsOf(rule).fired, 1u);
  EXPECT_EQ(fabric().FaultStatsOf(rule).considered, 3u);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_TRUE(SameBytes(*src_, *dst_, 4 * 4096));
}

TEST_F(Faults, ARuleOutsideItsTimeWindowNeverActs) {
  FaultRule r = Wire(FaultAction::kDrop, kNodeA, PacketClass::kAny);
  r.from = fabric().Now() + Milliseconds(1000);
  r.count = kEveryTime;
  const std::uint32_t rule = fabric().AddFault(r);
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_EQ(fabric().FaultStatsOf(rule).considered, 0u);
}

TEST_F(Faults, ARemovedRuleStopsActing) {
  FaultRule r = Wire(FaultAction::kDrop, kNodeA, PacketClass::kAny);
  r.count = kEveryTime;
  const std::uint32_t rule = fabric().AddFault(r);
  fabric().RemoveFault(rule);
  ASSERT_EQ(WriteFromA(4096), STATUS_SUCCESS);
  EXPECT_THAT(OneInitiatorCompletion(), HasStatus(STATUS_SUCCESS));
  EXPECT_EQ(fabric().FaultStatsOf(rule).fired, 0u);
}

TEST_F(Faults, EveryDecisionIsTraced) {
  fabric().Trace().Enable(TraceBlock::kFaults);
  fabric().AddFault(Wire(FaultAction::kDrop, kNodeA));
  ASSERT_EQ(WriteFromA(64), STATUS_SUCCESS);
  (void)OneInitiatorCompletion();
  EXPECT_THAT(fabric().Trace().Lines(), ElementsAre(HasSubstr("rule 0 drop at wire")));
}

// ---- determinism and the invariants under random faults ------------------------------------------

// A mixed stream on a fresh pair with random drops, corruption and delays on both nodes: returns
// every completion's (context, status) and the time the last one was polled.
struct StormOutcome {
  std::vector<std::pair<void*, NTSTATUS>> completions;
  TimePoint end{};
  std::uint64_t faults = 0;
  bool data_intact = true;
};

StormOutcome Storm(std::uint64_t seed, int requests) {
  QpPairConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  c.fabric.seed = seed;
  c.shared_cq = true;
  QpPair pair(c);
  auto src = pair.a().Register(kBuffer);
  auto dst = pair.b().Register(kBuffer);
  auto back = pair.a().Register(kBuffer);
  Fill(*src, 3);
  for (FaultAction action : {FaultAction::kDrop, FaultAction::kCorrupt, FaultAction::kDelay}) {
    FaultRule r = Rule(action, std::nullopt);
    r.count = kEveryTime;
    r.probability = 0.05;
    if (action == FaultAction::kDelay) r.delay = Microseconds(3);
    pair.fabric().AddFault(r);
  }
  StormOutcome out;
  std::vector<NDK_RESULT_EX> results;
  for (int i = 0; i < requests; ++i) {
    const ULONG bytes = 1024u << (i % 5);  // 1..16 KiB: one to four packets
    const NDK_SGE s = src->Sge(0, bytes);
    const NDK_SGE d = dst->Sge(0, bytes);
    const NDK_SGE r = back->Sge(0, bytes);
    NTSTATUS status = STATUS_SUCCESS;
    switch (i % 3) {
      case 0: status = pair.a().Write(Ctx(i + 1), {&s, 1}, dst->Address(), dst->RemoteToken()); break;
      case 1:
        if (pair.b().Receive(Ctx(100000 + i), {&d, 1}) != STATUS_SUCCESS) out.data_intact = false;
        status = pair.a().Send(Ctx(i + 1), {&s, 1});
        break;
      default:
        std::memcpy(dst->Data(), src->Data(), bytes);  // what the read must bring back
        status = pair.a().Read(Ctx(i + 1), {&r, 1}, dst->Address(), dst->RemoteToken());
        break;
    }
    if (status != STATUS_SUCCESS) out.data_intact = false;
    // Every request's data must be whole once it completes.
    const auto done = pair.Collect(pair.a().initiator_cq, 1, c.fabric.profile.ack_timeout * (c.fabric.profile.retry_count + 2));
    results.insert(results.end(), done.begin(), done.end());
    if (i % 3 != 1 && !SameBytes(*src, i % 3 == 0 ? *dst : *back, bytes)) out.data_intact = false;
    if (i % 3 == 1) {
      pair.fabric().RunUntilIdle();
      if (!SameBytes(*src, *dst, bytes)) out.data_intact = false;
    }
    std::memset(dst->Data(), 0, bytes);
    std::memset(back->Data(), 0, bytes);
  }
  pair.fabric().RunUntilIdle();
  std::vector<NDK_RESULT_EX> rest = pair.Drain(pair.a().initiator_cq);
  results.insert(results.end(), rest.begin(), rest.end());
  for (const NDK_RESULT_EX& r : results) {
    // Receive completions share the CQ only on b; a's CQ holds initiator completions alone.
    out.completions.emplace_back(r.RequestContext, r.Status);
  }
  out.end = pair.fabric().Now();
  out.faults = pair.a().node->Counters().faults_injected + pair.b().node->Counters().faults_injected;
  return out;
}

TEST(FaultStorm, EverySuccessfulPostCompletesExactlyOnceWithItsDataIntact) {
  constexpr int kRequests = 150;
  const StormOutcome o = Storm(11, kRequests);
  ASSERT_GT(o.faults, 40u);  // the storm really happened
  ASSERT_THAT(o.completions, SizeIs(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(o.completions[static_cast<std::size_t>(i)].first, Ctx(i + 1));
    EXPECT_EQ(o.completions[static_cast<std::size_t>(i)].second, STATUS_SUCCESS);
  }
  EXPECT_TRUE(o.data_intact);
}

TEST(FaultStorm, TheSameSeedGivesTheSameRun) {
  const StormOutcome x = Storm(5, 60);
  const StormOutcome y = Storm(5, 60);
  EXPECT_EQ(x.faults, y.faults);
  EXPECT_EQ(x.end, y.end);
  EXPECT_EQ(x.completions, y.completions);
}

TEST(FaultStorm, AnotherSeedGivesAnotherRun) {
  EXPECT_NE(Storm(5, 60).end, Storm(6, 60).end);
}

}  // namespace
}  // namespace ndksim
