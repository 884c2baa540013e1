// SPDX-License-Identifier: MIT
// The reliable-connection transport across blocks: acknowledgement requests inside long messages,
// the ACK timer restarting on progress, go-back-N from the first unacknowledged packet, resent
// reads answered again, placements that land whatever happens to the QP, and the read fence
// counted once. Several are regression tests named after the bug they pin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "ndksim/harness.h"

namespace ndksim {
namespace {

void Fill(RegisteredBuffer& buf, std::uint32_t seed) {
  for (std::size_t i = 0; i < buf.Size(); ++i) buf.Data()[i] = static_cast<std::byte>((i * 2654435761u + seed) >> 7);
}

bool SameBytes(RegisteredBuffer& a, RegisteredBuffer& b, std::size_t n) {
  return std::memcmp(a.Data(), b.Data(), n) == 0;
}

QpPairConfig WithProfile(const HardwareProfile& p) {
  QpPairConfig c;
  c.fabric.profile = p;
  return c;
}

// A profile whose ACK timer is far shorter than a long message takes, so the requester times out
// while the responder is still answering: everything resent must still arrive exactly once.
HardwareProfile ImpatientProfile() {
  HardwareProfile p = profiles::kConnectX100GbeRoce;
  p.ack_timeout = Microseconds(1);
  return p;
}

constexpr std::size_t kLongMessage = 8u << 20;  // 8 MiB: 680 us on the wire, longer than the ACK timeout

// Regression: the responder acknowledged only the last packet of a message and the timer restarted
// only when a whole request was acknowledged, so a message longer than the ACK timeout was resent
// from its start forever and failed with IO_TIMEOUT.
TEST(LongMessages, WriteLongerThanTheAckTimeoutCompletesWithoutRetransmission) {
  QpPair pair;
  auto src = pair.a().Register(kLongMessage);
  auto dst = pair.b().Register(kLongMessage);
  Fill(*src, 1);
  const NDK_SGE s = src->Sge(0, kLongMessage);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  const auto r = pair.Collect(pair.a().initiator_cq, 1, Milliseconds(100));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
  EXPECT_TRUE(SameBytes(*src, *dst, kLongMessage));
  EXPECT_EQ(pair.a().node->Counters().retransmissions, 0u);
}

// Regression: a receiver that flushed its QP as soon as it saw a message's receive completion (as
// a consumer that disconnects after its last response does) dropped the ACK that message was still
// due (20 ns after its placement landed), so the sender's request, delivered, never completed as
// such: it was flushed when the sender's own QP closed.
TEST(AckAfterFlush, AMessageReceivedBeforeTheReceiverFlushedIsStillAcknowledged) {
  QpPair pair(WithProfile(profiles::WithoutNoise(profiles::kConnectX100GbeRoce)));
  auto src = pair.a().Register(64);
  auto rx = pair.b().Register(64);
  const NDK_SGE r = rx->Sge(0, 64);
  ASSERT_EQ(pair.b().Receive(nullptr, {&r, 1}), STATUS_SUCCESS);
  const NDK_SGE s = src->Sge(0, 64);
  ASSERT_EQ(pair.a().Send(nullptr, {&s, 1}), STATUS_SUCCESS);
  const auto received = pair.Collect(pair.b().receive_cq, 1);
  ASSERT_EQ(received.size(), 1u);
  ASSERT_EQ(received[0].Status, STATUS_SUCCESS);
  // At once, before the ACK has left: the receiver's QP enters the error state.
  pair.b().qp->Dispatch->NdkFlush(pair.b().qp);
  const auto sent = pair.Collect(pair.a().initiator_cq, 1, Milliseconds(1));
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].Status, STATUS_SUCCESS);
  EXPECT_EQ(pair.a().node->Counters().retransmissions, 0u);
}

// Regression: the ACK timer's event stayed queued after the last acknowledgement, so every
// RunUntilIdle ran on to the 500-us timeout: 64 writes that take microseconds moved the clock
// half a millisecond, and any rate measured around RunUntilIdle was wrong.
TEST(AckTimer, AnIdleFabricStopsAtTheLastCompletion) {
  QpPair pair;
  pair.fabric().RunUntilIdle();
  pair.fabric().Trace().Requests().Enable();
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64 * 64);
  const TimePoint start = pair.fabric().Now();
  for (ULONG i = 0; i < 64; ++i) {
    const NDK_SGE s = src->Sge(0, 64);
    ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address() + i * 64, dst->RemoteToken()), STATUS_SUCCESS);
  }
  ASSERT_EQ(pair.Drain(pair.a().initiator_cq).size(), 64u);
  TimePoint last_cqe = start;
  for (const RequestRecord& r : pair.fabric().Trace().Requests().Records()) {
    ASSERT_TRUE(r.Reached(RequestStage::kCqeWritten));
    last_cqe = std::max(last_cqe, r.At(RequestStage::kCqeWritten));
  }
  EXPECT_EQ(pair.fabric().Now(), last_cqe);
  EXPECT_LT(pair.fabric().Now() - start, Microseconds(50));
}

TEST(LongMessages, ResponderAcknowledgesEverySixteenPacketsInsideAMessage) {
  QpPair pair;
  const std::size_t bytes = 64 * 4096;  // 64 packets of one MTU
  auto src = pair.a().Register(bytes);
  auto dst = pair.b().Register(bytes);
  const NDK_SGE s = src->Sge(0, bytes);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(pair.Collect(pair.a().initiator_cq, 1).size(), 1u);
  // ACKs for packets 16, 32, 48 and 64 (the last).
  EXPECT_EQ(pair.b().node->CountersOf(pair.b().qp)->packets_sent, 4u);
}

// Regression: after the spurious timeout above, a long read was resent, responses already in
// flight were thrown away and the read completed with a hole in its data and STATUS_SUCCESS.
TEST(LongMessages, ReadLongerThanTheAckTimeoutReturnsEveryByte) {
  QpPair pair;
  auto sink = pair.a().Register(kLongMessage);
  auto source = pair.b().Register(kLongMessage);
  Fill(*source, 2);
  const NDK_SGE s = sink->Sge(0, kLongMessage);
  ASSERT_EQ(pair.a().Read(nullptr, {&s, 1}, source->Address(), source->RemoteToken()), STATUS_SUCCESS);
  const auto r = pair.Collect(pair.a().initiator_cq, 1, Milliseconds(100));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
  EXPECT_TRUE(SameBytes(*sink, *source, kLongMessage));
  EXPECT_EQ(pair.a().node->Counters().retransmissions, 0u);
}

TEST(GoBackN, WriteResentAfterTimeoutsArrivesIntactAndCompletesOnce) {
  QpPair pair(WithProfile(ImpatientProfile()));
  const std::size_t bytes = 1u << 20;
  auto src = pair.a().Register(bytes);
  auto dst = pair.b().Register(bytes);
  Fill(*src, 3);
  const NDK_SGE s = src->Sge(0, bytes);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  const auto r = pair.Drain(pair.a().initiator_cq);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
  EXPECT_TRUE(SameBytes(*src, *dst, bytes));
  EXPECT_GT(pair.a().node->Counters().retransmissions, 0u);
}

TEST(GoBackN, ResendStartsAtTheFirstUnacknowledgedPacket) {
  QpPair pair(WithProfile(ImpatientProfile()));
  const std::size_t packets = 256;
  const std::size_t bytes = packets * 4096;
  auto src = pair.a().Register(bytes);
  auto dst = pair.b().Register(bytes);
  const NDK_SGE s = src->Sge(0, bytes);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(pair.Drain(pair.a().initiator_cq).size(), 1u);
  // Every timeout resends at most what was sent since the last ACK request: 16 packets plus what
  // the transmit buffer (16 packets of 4 KiB) and the port had taken. Resending from the start of
  // the message would send the whole message again each time.
  const std::uint64_t retransmissions = pair.a().node->Counters().retransmissions;
  const std::uint64_t sent = pair.a().node->CountersOf(pair.a().qp)->packets_sent;
  ASSERT_GT(retransmissions, 0u);
  EXPECT_LE(sent - packets, retransmissions * 48);
}

TEST(GoBackN, ReadResentAfterATimeoutIsAnsweredAgainAndCompletesOnce) {
  HardwareProfile p = profiles::kConnectX100GbeRoce;
  p.ack_timeout = Microseconds(10);
  QpPair pair(WithProfile(p));
  const std::size_t bytes = 256 * 1024;  // 64 responses, about 22 us on the wire
  auto sink = pair.a().Register(bytes);
  auto source = pair.b().Register(bytes);
  Fill(*source, 4);
  // b's link goes down 5 us into the read, until after its last response: nothing arrives after
  // the gap to show it, so the requester asks again only when its timer expires (three resends
  // are lost with the link; the fourth is answered).
  const TimePoint t0 = pair.fabric().Now();
  pair.fabric().AddFault(LinkDown(*pair.b().node, t0 + Microseconds(5), t0 + Microseconds(40)));
  const NDK_SGE s = sink->Sge(0, bytes);
  ASSERT_EQ(pair.a().Read(nullptr, {&s, 1}, source->Address(), source->RemoteToken()), STATUS_SUCCESS);
  const auto r = pair.Drain(pair.a().initiator_cq);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
  EXPECT_TRUE(SameBytes(*sink, *source, bytes));
  EXPECT_EQ(pair.a().node->Counters().retransmissions, 4u);
  // The responder answered the duplicate request: more responses than the read needs.
  EXPECT_GT(pair.b().node->CountersOf(pair.b().qp)->packets_sent, bytes / 4096);
}

// Regression: a receive whose message had arrived completed with success, but its data was not
// placed when the QP entered the error state (a later message failed) before the DMA landed.
TEST(Placement, SuccessfulReceiveHoldsItsDataWhenALaterMessageFails) {
  QpPair pair;
  auto src = pair.a().Register(4096);
  auto rx1 = pair.b().Register(4096);
  auto rx2 = pair.b().Register(4096);
  Fill(*src, 5);
  const NDK_SGE r1 = rx1->Sge(0, 1024);
  const NDK_SGE r2 = rx2->Sge(0, 16);  // too small for the second message
  ASSERT_EQ(pair.b().Receive(nullptr, {&r1, 1}), STATUS_SUCCESS);
  ASSERT_EQ(pair.b().Receive(nullptr, {&r2, 1}), STATUS_SUCCESS);
  const NDK_SGE s1 = src->Sge(0, 1024);
  const NDK_SGE s2 = src->Sge(0, 64);
  ASSERT_EQ(pair.a().Send(nullptr, {&s1, 1}, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  ASSERT_EQ(pair.a().Send(nullptr, {&s2, 1}), STATUS_SUCCESS);
  const auto r = pair.Drain(pair.b().receive_cq);
  ASSERT_GE(r.size(), 2u);
  ASSERT_EQ(r[0].Status, STATUS_SUCCESS);
  EXPECT_EQ(r[0].BytesTransferred, 1024u);
  EXPECT_TRUE(SameBytes(*src, *rx1, 1024));
  EXPECT_NE(r[1].Status, STATUS_SUCCESS);
}

// Regression: every read that retired while a fenced WQE waited woke it to be processed (and
// counted) again.
TEST(ReadFence, IsCountedOncePerFencedRequest) {
  QpPair pair;
  auto src = pair.a().Register(4096);
  auto dst = pair.b().Register(4096);
  const NDK_SGE s = src->Sge(0, 64);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(pair.a().Read(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  }
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_READ_FENCE),
            STATUS_SUCCESS);
  ASSERT_EQ(pair.Collect(pair.a().initiator_cq, 5).size(), 5u);
  EXPECT_EQ(pair.a().node->CountersOf(pair.a().qp)->fence_stalls, 1u);
}

// A 64-KiB read and then a write, with or without a read fence on the write: the times the read's
// last byte was placed and the write's first byte left.
struct FenceTimes {
  TimePoint read_placed;
  TimePoint write_on_wire;
  std::uint64_t fence_stalls = 0;
};

FenceTimes ReadThenWrite(ULONG write_flags) {
  QpPair pair(WithProfile(profiles::kConnectX100GbeRoce));
  pair.fabric().Trace().Requests().Enable();
  auto local = pair.a().Register(65536);
  auto remote = pair.b().Register(65536);
  const NDK_SGE r = local->Sge(0, 65536);
  const NDK_SGE w = local->Sge(0, 64);
  EXPECT_EQ(pair.a().Read(nullptr, {&r, 1}, remote->Address(), remote->RemoteToken(), NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  EXPECT_EQ(pair.a().Write(nullptr, {&w, 1}, remote->Address(), remote->RemoteToken(), write_flags), STATUS_SUCCESS);
  EXPECT_EQ(pair.Collect(pair.a().initiator_cq, 2).size(), 2u);
  const RequestLog& log = pair.fabric().Trace().Requests();
  const std::uint32_t node = 0;
  const std::uint32_t qpn = log.Records().front().qpn;
  const RequestRecord* read = log.Find(node, qpn, 0);
  const RequestRecord* write = log.Find(node, qpn, 1);
  if (read == nullptr || write == nullptr) return {};
  return {read->At(RequestStage::kLastBytePlaced), write->At(RequestStage::kFirstByteOnWire),
          pair.a().node->CountersOf(pair.a().qp)->fence_stalls};
}

TEST(ReadFence, HoldsTheWriteUntilTheReadsDataHasLanded) {
  const FenceTimes t = ReadThenWrite(NDK_OP_FLAG_READ_FENCE);
  EXPECT_GE(t.write_on_wire, t.read_placed);
  EXPECT_EQ(t.fence_stalls, 1u);
}

TEST(ReadFence, WithoutItTheWriteOvertakesTheReadsResponses) {
  const FenceTimes t = ReadThenWrite(0);
  EXPECT_LT(t.write_on_wire, t.read_placed);
  EXPECT_EQ(t.fence_stalls, 0u);
}

// ---- read responses lost and reads asked again (IBTA's implied NAK, duplicate RDMA READs) ----

constexpr std::size_t kMtu = 4096;

// One read of `bytes` from b into a on the pair's first QP, the second of its responses lost on
// the wire. Returns the completions after at most `limit` of simulated time.
std::vector<NDK_RESULT_EX> ReadLosingItsSecondResponse(QpPair& pair, RegisteredBuffer& sink, RegisteredBuffer& source,
                                                       Duration limit) {
  pair.fabric().AddFault(DropPackets(PacketClass::kReadResponse).At(*pair.b().node).After(1));
  const NDK_SGE s = sink.Sge(0, sink.Size());
  EXPECT_EQ(pair.a().Read(nullptr, {&s, 1}, source.Address(), source.RemoteToken()), STATUS_SUCCESS);
  return pair.Collect(pair.a().initiator_cq, 1, limit);
}

// Regression: a read whose response was lost waited for the ACK timer, although the next
// response, arriving with a later PSN, already showed the gap.
TEST(ImpliedNak, ALostReadResponseIsAskedForAgainWithoutWaitingForTheAckTimer) {
  QpPair pair;
  auto sink = pair.a().Register(16 * kMtu);
  auto source = pair.b().Register(16 * kMtu);
  Fill(*source, 5);
  const TimePoint start = pair.fabric().Now();
  const auto r = ReadLosingItsSecondResponse(pair, *sink, *source, Microseconds(50));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
  EXPECT_TRUE(SameBytes(*sink, *source, 16 * kMtu));
  EXPECT_LT(pair.fabric().Now() - start, Microseconds(20));
}

TEST(ImpliedNak, TheResponsesAfterTheGapAskOnlyOnce) {
  QpPair pair;
  auto sink = pair.a().Register(16 * kMtu);
  auto source = pair.b().Register(16 * kMtu);
  ASSERT_EQ(ReadLosingItsSecondResponse(pair, *sink, *source, Milliseconds(1)).size(), 1u);
  // Fourteen responses arrived after the gap; one read request was sent again.
  EXPECT_EQ(pair.a().node->Counters().retransmissions, 1u);
}

// `reads` reads of `bytes` each, posted back to back on the pair's first QP; returns their
// completions (all of them, or what came within `limit`).
std::vector<NDK_RESULT_EX> PostReads(QpPair& pair, RegisteredBuffer& sink, RegisteredBuffer& source, std::size_t reads,
                                     std::size_t bytes, Duration limit) {
  for (std::size_t i = 0; i < reads; ++i) {
    const NDK_SGE s = sink.Sge(i * bytes, static_cast<ULONG>(bytes));
    EXPECT_EQ(pair.a().Read(reinterpret_cast<void*>(i + 1), {&s, 1}, source.Address() + i * bytes, source.RemoteToken()),
              STATUS_SUCCESS);
  }
  return pair.Collect(pair.a().initiator_cq, reads, limit);
}

// Regression: a duplicate read request was answered behind every response still queued, so the
// responses of the reads after it were sent twice (once in the lost stream, which the requester
// drops, and once more after the duplicates of those reads). The responder now drops the queued
// reads from the duplicate's PSN on, as IBTA has it. Four reads of four responses, the second
// lost: answering the duplicates behind the queue sends 16 + 3 + 12 = 31 responses.
TEST(DuplicateRead, DropsTheResponsesQueuedFromItsPsnOn) {
  QpPair pair;
  constexpr std::size_t kReads = 4;
  constexpr std::size_t kBytes = 4 * kMtu;
  auto sink = pair.a().Register(kReads * kBytes);
  auto source = pair.b().Register(kReads * kBytes);
  Fill(*source, 6);
  pair.fabric().AddFault(DropPackets(PacketClass::kReadResponse).At(*pair.b().node).After(1));
  const auto r = PostReads(pair, *sink, *source, kReads, kBytes, Milliseconds(1));
  ASSERT_EQ(r.size(), kReads);
  for (std::size_t i = 0; i < kReads; ++i) {
    EXPECT_EQ(r[i].Status, STATUS_SUCCESS);
    EXPECT_EQ(r[i].RequestContext, reinterpret_cast<void*>(i + 1));
  }
  EXPECT_TRUE(SameBytes(*sink, *source, kReads * kBytes));
  EXPECT_LT(pair.b().node->CountersOf(pair.b().qp)->packets_sent, 16u + 3u + 12u);
}

// The responses of the first reads are held up on the wire longer than the ACK timer, so all 16
// are asked for again while their responses are in flight; those responses complete the reads,
// and new reads follow while the replays are still queued. Replays take no inbound read resource,
// so the new reads are within the IRD.
TEST(DuplicateRead, ReplaysTakeNoInboundReadResource) {
  HardwareProfile p = profiles::kConnectX100GbeRoce;
  p.ack_timeout = Microseconds(5);
  QpPair pair(WithProfile(p));
  constexpr std::size_t kReads = 64;
  constexpr std::size_t kBytes = kMtu;
  auto sink = pair.a().Register(kReads * kBytes);
  auto source = pair.b().Register(kReads * kBytes);
  Fill(*source, 7);
  const TimePoint t0 = pair.fabric().Now();
  pair.fabric().AddFault(
      DelayPackets(Microseconds(8), PacketClass::kReadResponse).At(*pair.b().node).Always().Between(t0, t0 + Microseconds(3)));
  const auto r = PostReads(pair, *sink, *source, kReads, kBytes, Milliseconds(1));
  ASSERT_EQ(r.size(), kReads);
  for (const NDK_RESULT_EX& c : r) EXPECT_EQ(c.Status, STATUS_SUCCESS);
  EXPECT_TRUE(SameBytes(*sink, *source, kReads * kBytes));
  EXPECT_GT(pair.a().node->Counters().retransmissions, 0u);
}

// ---- the ACK timer of a real RNIC ----

// The default profile's ACK timeout is IBTA's local ACK timeout 4.096 us x 2^14 = 67.1 ms, the
// value perftest and most verbs applications give their QPs: a write whose only packet is lost is
// sent again that long after it left, and completes a round trip later.
TEST(AckTimer, TheDefaultTimeoutIsTheLocalAckTimeoutOfExponentFourteen) {
  QpPair pair;
  pair.fabric().Trace().Requests().Enable();
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  pair.fabric().AddFault(DropPackets(PacketClass::kRequest).At(*pair.a().node));
  const NDK_SGE s = src->Sge(0, 64);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(pair.Collect(pair.a().initiator_cq, 1, Milliseconds(100)).size(), 1u);
  const RequestRecord& w = pair.fabric().Trace().Requests().Records().front();
  const Duration taken = w.At(RequestStage::kCqeWritten) - w.At(RequestStage::kFirstByteOnWire);
  EXPECT_EQ(profiles::kConnectX100GbeRoce.ack_timeout, Nanoseconds(4096) * 16384);
  EXPECT_GE(taken, Nanoseconds(4096) * 16384);
  EXPECT_LT(taken, Nanoseconds(4096) * 16384 + Microseconds(5));
  EXPECT_EQ(pair.a().node->Counters().retransmissions, 1u);
}

// ---- the transport at scale ----

// The scale run of a NIC with thousands of connections: 4,096 QPs, each with 16 reads and 16
// writes outstanding at once, all complete, on the default profile, and nothing is sent twice.
// (With a 500-us ACK timer the reads waited longer than the timer behind each other, and every
// QP resent its reads for nothing.)
TEST(TransportAtScale, FourThousandQpsWithSixteenReadsAndSixteenWritesEachResendNothing) {
  constexpr std::size_t kQps = 4096;
  constexpr std::size_t kEach = 16;
  QpPairConfig config;
  config.initiator_queue_depth = 2 * kEach;
  config.receive_queue_depth = 1;
  config.max_initiator_sge = 1;
  config.max_receive_sge = 1;
  config.cq_depth = 1u << 17;
  QpPair pair(config);
  std::vector<NDK_QP*> qps{pair.a().qp};
  for (std::size_t i = 1; i < kQps; ++i) qps.push_back(pair.AddConnectedQps().a);
  constexpr std::size_t kBytes = 64;
  auto local = pair.a().Register(kQps * 2 * kEach * kBytes);
  auto remote = pair.b().Register(kQps * 2 * kEach * kBytes);
  Fill(*local, 8);
  Fill(*remote, 9);
  for (std::size_t q = 0; q < kQps; ++q) {
    for (std::size_t i = 0; i < kEach; ++i) {
      const std::size_t read_at = (q * 2 * kEach + i) * kBytes;
      const std::size_t write_at = read_at + kEach * kBytes;
      const NDK_SGE rs = local->Sge(read_at, kBytes);
      const NDK_SGE ws = local->Sge(write_at, kBytes);
      ASSERT_EQ(qps[q]->Dispatch->NdkRead(qps[q], nullptr, &rs, 1, remote->Address() + read_at, remote->RemoteToken(),
                                          NDK_OP_FLAG_DEFER),
                STATUS_SUCCESS);
      ASSERT_EQ(qps[q]->Dispatch->NdkWrite(qps[q], nullptr, &ws, 1, remote->Address() + write_at,
                                           remote->RemoteToken(), i + 1 == kEach ? 0 : NDK_OP_FLAG_DEFER),
                STATUS_SUCCESS);
    }
  }
  const auto r = pair.Collect(pair.a().initiator_cq, kQps * 2 * kEach, Milliseconds(50));
  ASSERT_EQ(r.size(), kQps * 2 * kEach);
  EXPECT_TRUE(std::all_of(r.begin(), r.end(), [](const NDK_RESULT_EX& c) { return c.Status == STATUS_SUCCESS; }));
  EXPECT_TRUE(SameBytes(*local, *remote, kQps * 2 * kEach * kBytes));
  EXPECT_EQ(pair.a().node->Counters().retransmissions, 0u);
  EXPECT_EQ(pair.b().node->Counters().retransmissions, 0u);
}

}  // namespace
}  // namespace ndksim
