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
  QpPair pair(WithProfile(ImpatientProfile()));
  const std::size_t bytes = 256 * 1024;
  auto sink = pair.a().Register(bytes);
  auto source = pair.b().Register(bytes);
  Fill(*source, 4);
  const NDK_SGE s = sink->Sge(0, bytes);
  ASSERT_EQ(pair.a().Read(nullptr, {&s, 1}, source->Address(), source->RemoteToken()), STATUS_SUCCESS);
  const auto r = pair.Drain(pair.a().initiator_cq);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
  EXPECT_TRUE(SameBytes(*sink, *source, bytes));
  // The first response takes longer than the timeout: the read was asked for again, and the
  // responder answered the duplicate request (more responses than the read needs).
  EXPECT_GT(pair.a().node->Counters().retransmissions, 0u);
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

}  // namespace
}  // namespace ndksim
