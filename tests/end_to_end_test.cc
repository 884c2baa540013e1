// SPDX-License-Identifier: MIT
// End-to-end tests through the NDK dispatch tables: data integrity of every operation across sizes
// and SGE layouts (two nodes and loopback), completion routing, deferral, inline and remote errors,
// connection set-up and teardown, and determinism of the trace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "common/block_recycler.h"
#include "ndksim/testing.h"

namespace ndksim {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;
using testing::HasBytesTransferred;
using testing::HasQpContext;
using testing::HasRequestContext;
using testing::HasStatus;
using testing::HasType;
using testing::IsCompletion;
using testing::Succeeded;

void Fill(RegisteredBuffer& buf, std::uint32_t seed) {
  for (std::size_t i = 0; i < buf.Size(); ++i) buf.Data()[i] = static_cast<std::byte>((i * 2654435761u + seed) >> 7);
}

// Splits [0, size) of `buf` into `pieces` SGEs of uneven lengths (the first ones are shorter).
std::vector<NDK_SGE> Split(const RegisteredBuffer& buf, ULONG size, int pieces) {
  std::vector<NDK_SGE> sges;
  if (size == 0) return sges;
  ULONG offset = 0;
  for (int i = 0; i < pieces && offset < size; ++i) {
    const ULONG left = size - offset;
    const ULONG len = i + 1 == pieces ? left : std::max<ULONG>(1, left / static_cast<ULONG>(pieces - i + 1));
    sges.push_back(buf.Sge(offset, len));
    offset += len;
  }
  return sges;
}

enum class Op { kSend, kWrite, kRead };
const char* Name(Op op) { return op == Op::kSend ? "Send" : op == Op::kWrite ? "Write" : "Read"; }

using IntegrityParam = std::tuple<Op, ULONG /*size*/, int /*sges*/, bool /*loopback*/>;

class DataIntegrity : public ::testing::TestWithParam<IntegrityParam> {};

TEST_P(DataIntegrity, BytesArriveIntactAndCompletionsAreRouted) {
  const auto [op, size, pieces, loopback] = GetParam();
  QpPairConfig config;
  config.fabric.profile = profiles::kFunctional;
  config.loopback = loopback;
  QpPair pair(config);
  auto src = pair.a().Register(std::max<ULONG>(size, 1));
  auto dst = pair.b().Register(std::max<ULONG>(size, 1));
  Fill(*src, 1);
  Fill(*dst, 2);
  int request = 0;
  int receive = 0;
  switch (op) {
    case Op::kSend: {
      const auto rsges = Split(*dst, size, pieces);
      ASSERT_EQ(pair.b().Receive(&receive, rsges), STATUS_SUCCESS);
      ASSERT_EQ(pair.a().Send(&request, Split(*src, size, pieces)), STATUS_SUCCESS);
      const auto r = pair.Collect(pair.b().receive_cq, 1);
      ASSERT_THAT(r, SizeIs(1));
      EXPECT_THAT(r[0], IsCompletion(NdkOperationTypeReceive, &receive));
      EXPECT_THAT(r[0], HasBytesTransferred(size));
      EXPECT_THAT(r[0], HasQpContext(pair.b().qp_context));
      break;
    }
    case Op::kWrite:
      ASSERT_EQ(pair.a().Write(&request, Split(*src, size, pieces), dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
      break;
    case Op::kRead:
      // Read pulls b's bytes into a's buffer: swap the roles of the buffers for the check below.
      ASSERT_EQ(pair.a().Read(&request, Split(*src, size, pieces), dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
      break;
  }
  const auto r = pair.Collect(pair.a().initiator_cq, 1);
  ASSERT_THAT(r, SizeIs(1));
  const NDK_OPERATION_TYPE type = op == Op::kSend ? NdkOperationTypeSend : op == Op::kWrite ? NdkOperationTypeWrite : NdkOperationTypeRead;
  EXPECT_THAT(r[0], IsCompletion(type, &request));
  EXPECT_THAT(r[0], HasQpContext(pair.a().qp_context));
  EXPECT_EQ(r[0].ProviderErrorCode, 0u);
  EXPECT_EQ(std::memcmp(src->Data(), dst->Data(), size), 0);
  // Nothing else completes anywhere.
  EXPECT_THAT(pair.Drain(pair.a().initiator_cq), SizeIs(0));
  EXPECT_THAT(pair.Drain(pair.b().initiator_cq), SizeIs(0));
  EXPECT_THAT(pair.Drain(pair.a().receive_cq), SizeIs(0));
  EXPECT_THAT(pair.Drain(pair.b().receive_cq), SizeIs(0));
}

INSTANTIATE_TEST_SUITE_P(
    AllOps, DataIntegrity,
    ::testing::Combine(::testing::Values(Op::kSend, Op::kWrite, Op::kRead),
                       ::testing::Values(0u, 1u, 63u, 4096u, 4097u, 65536u, 1u << 20), ::testing::Values(1, 3),
                       ::testing::Bool()),
    [](const auto& info) {
      return fmt::format("{}_{}B_{}sge_{}", Name(std::get<0>(info.param)), std::get<1>(info.param),
                         std::get<2>(info.param), std::get<3>(info.param) ? "loopback" : "twonode");
    });

// The same operations on the timed default profile, to run the data path with real delays.
TEST(DataIntegrityTimed, WriteReadAndSendOnTheDefaultProfile) {
  QpPair pair;
  auto src = pair.a().Register(300000);
  auto back = pair.a().Register(300000);
  auto dst = pair.b().Register(300000);
  Fill(*src, 3);
  const NDK_SGE s = src->Sge(0, 300000);
  const NDK_SGE bk = back->Sge(0, 300000);
  const NDK_SGE d = dst->Sge(0, 300000);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(pair.a().Read(nullptr, {&bk, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_READ_FENCE), STATUS_SUCCESS);
  ASSERT_EQ(pair.b().Receive(nullptr, {&d, 1}), STATUS_SUCCESS);
  ASSERT_EQ(pair.a().Send(nullptr, {&s, 1}), STATUS_SUCCESS);
  const auto r = pair.Collect(pair.a().initiator_cq, 3);
  EXPECT_THAT(r, ElementsAre(HasType(NdkOperationTypeWrite), HasType(NdkOperationTypeRead), HasType(NdkOperationTypeSend)));
  EXPECT_THAT(r, ::testing::Each(Succeeded()));
  EXPECT_EQ(std::memcmp(src->Data(), back->Data(), 300000), 0);
  EXPECT_THAT(pair.Collect(pair.b().receive_cq, 1), ElementsAre(HasBytesTransferred(300000)));
  EXPECT_GT(pair.fabric().Now(), TimePoint{Microseconds(20)});  // 900 KB at 100 Gb/s takes time
}

// Regression: the responder acknowledged on arrival, so the initiator could see a completed write
// while the last bytes were still on their way into the target's memory.
TEST(DataIntegrityTimed, CompletedWriteMeansTheDataIsInTargetMemory) {
  QpPair pair;
  auto src = pair.a().Register(256 * 1024);
  auto dst = pair.b().Register(256 * 1024);
  Fill(*src, 4);
  const NDK_SGE s = src->Sge(0, 256 * 1024);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_THAT(pair.Collect(pair.a().initiator_cq, 1), ElementsAre(Succeeded()));
  EXPECT_EQ(std::memcmp(src->Data(), dst->Data(), 256 * 1024), 0);
}

class EndToEnd : public testing::ConnectedQpPairTest {};

TEST_F(EndToEnd, InitiatorCompletionsArriveInPostingOrder) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 8);
  int ctx[4];
  ASSERT_EQ(a().Write(&ctx[0], {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(a().Read(&ctx[1], {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(a().Write(&ctx[2], {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(a().Read(&ctx[3], {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 4),
              ElementsAre(HasRequestContext(&ctx[0]), HasRequestContext(&ctx[1]), HasRequestContext(&ctx[2]),
                          HasRequestContext(&ctx[3])));
}

TEST_F(EndToEnd, SilentSuccessYieldsNoCompletion) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 8);
  ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(0));
}

TEST_F(EndToEnd, InlineSendCopiesDataAtPostTime) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  std::memcpy(src->Data(), "inline!", 8);
  NDK_SGE s = src->Sge(0, 8);
  s.MemoryRegionToken = 0xdeadbeef;  // ignored with INLINE (ref §1.4)
  const NDK_SGE d = dst->Sge(0, 64);
  ASSERT_EQ(b().Receive(nullptr, {&d, 1}), STATUS_SUCCESS);
  ASSERT_EQ(a().Send(nullptr, {&s, 1}, NDK_OP_FLAG_INLINE), STATUS_SUCCESS);
  std::memcpy(src->Data(), "changed", 8);  // after the post: must not be what arrives
  EXPECT_THAT(pair().Collect(b().receive_cq, 1), ElementsAre(HasBytesTransferred(8)));
  EXPECT_EQ(std::memcmp(dst->Data(), "inline!", 8), 0);
}

TEST_F(EndToEnd, DeferredPostsShareOneDoorbell) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 8);
  const std::uint64_t before = a().node->Counters().doorbells;
  for (int i = 0; i < 15; ++i) {
    ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  }
  ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 16), SizeIs(16));
  EXPECT_EQ(a().node->Counters().doorbells - before, 1u);
}

// ref §4.3 worked example, with writes: W1(DEFER) succeeds, W2(DEFER) fails inline; the provider
// hands W1 to the hardware before returning; exactly one completion appears.
TEST_F(EndToEnd, FailingPostRingsTheDeferredOnes) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE good = src->Sge(0, 8);
  NDK_SGE bad = src->Sge(0, 8);
  bad.MemoryRegionToken ^= 0x00ffff00;
  int first = 0;
  ASSERT_EQ(a().Write(&first, {&good, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  ASSERT_NE(a().Write(nullptr, {&bad, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq), ElementsAre(IsCompletion(NdkOperationTypeWrite, &first)));
}

TEST_F(EndToEnd, TooManySgesFailsInlineAndChangesNothing) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  std::vector<NDK_SGE> sges(pair().config().max_initiator_sge + 1, src->Sge(0, 1));
  const std::uint64_t doorbells = a().node->Counters().doorbells;
  EXPECT_EQ(a().Write(nullptr, sges, dst->Address(), dst->RemoteToken()), STATUS_DATA_OVERRUN);
  EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(0));
  EXPECT_EQ(a().node->Counters().doorbells, doorbells);
}

TEST_F(EndToEnd, LocalSgeOutsideItsRegistrationFailsInline) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(60, 8);  // runs 4 bytes past the end of the MR
  EXPECT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_ACCESS_VIOLATION);
  EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(0));
}

TEST_F(EndToEnd, FullInitiatorQueueRefusesAndRecovers) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 8);
  for (ULONG i = 0; i < pair().config().initiator_queue_depth; ++i) {
    ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  }
  EXPECT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_NO_MORE_ENTRIES);
  // The failing call rang the doorbell for the deferred requests: all complete, and room returns.
  EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(pair().config().initiator_queue_depth));
  EXPECT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(1));
}

TEST_F(EndToEnd, BadRemoteTokenFailsAndCancelsEverythingOnBothSides) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  auto rbuf = b().Register(64);
  const NDK_SGE s = src->Sge(0, 8);
  const NDK_SGE r = rbuf->Sge(0, 64);
  int bad = 0;
  int after = 0;
  int recv = 0;
  ASSERT_EQ(b().Receive(&recv, {&r, 1}), STATUS_SUCCESS);
  ASSERT_EQ(a().Write(&bad, {&s, 1}, dst->Address(), dst->RemoteToken() ^ 0x00abcd00), STATUS_SUCCESS);
  ASSERT_EQ(a().Write(&after, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq),
              ElementsAre(::testing::AllOf(HasRequestContext(&bad), HasStatus(STATUS_ACCESS_VIOLATION)),
                          ::testing::AllOf(HasRequestContext(&after), HasStatus(STATUS_CANCELLED))));
  EXPECT_THAT(pair().Drain(b().receive_cq),
              ElementsAre(::testing::AllOf(HasRequestContext(&recv), HasStatus(STATUS_CANCELLED))));
  EXPECT_EQ(b().disconnect_events, 1);
}

TEST_F(EndToEnd, WritePastTheRemoteRegionFails) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 16);
  ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(56), dst->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq), ElementsAre(HasStatus(STATUS_ACCESS_VIOLATION)));
}

TEST_F(EndToEnd, ReadWithoutRemoteReadRightFails) {
  auto src = a().Register(64);
  auto dst = b().Register(64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
  const NDK_SGE s = src->Sge(0, 16);
  ASSERT_EQ(a().Read(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq), ElementsAre(HasStatus(STATUS_ACCESS_VIOLATION)));
}

TEST_F(EndToEnd, PostsAfterAnErrorCompleteCancelled) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 8);
  ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), 0), STATUS_SUCCESS);
  ASSERT_THAT(pair().Drain(a().initiator_cq), ElementsAre(HasStatus(STATUS_ACCESS_VIOLATION)));
  int later = 0;
  ASSERT_EQ(a().Write(&later, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq),
              ElementsAre(::testing::AllOf(HasRequestContext(&later), HasStatus(STATUS_CANCELLED))));
}

TEST_F(EndToEnd, ArmAnyCallsTheNotificationOnce) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 8);
  a().initiator_cq->Dispatch->NdkArmCq(a().initiator_cq, NDK_CQ_NOTIFY_ANY);
  ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  fabric().RunUntilIdle();
  EXPECT_EQ(a().cq_notifications, 1);
  EXPECT_EQ(a().last_cq_status, STATUS_SUCCESS);
}

TEST_F(EndToEnd, DisconnectCompletesAndThePeerHearsOfIt) {
  NTSTATUS status = STATUS_PENDING;
  const NTSTATUS s = a().connector->Dispatch->NdkDisconnect(
      a().connector, [](PVOID ctx, NTSTATUS st) { *static_cast<NTSTATUS*>(ctx) = st; }, &status);
  if (s != STATUS_PENDING) status = s;
  fabric().RunUntilIdle();
  EXPECT_EQ(status, STATUS_SUCCESS);
  EXPECT_EQ(b().disconnect_events, 1);
  EXPECT_EQ(a().disconnect_events, 0);  // no event for one's own disconnect
}

// ref §4.7, issue policy: the status of a remote protection error follows the transport
// personality of the profile. RoCE reports ACCESS_VIOLATION (above); iWARP reports REMOTE_RESOURCES.
TEST(TransportPersonality, IWarpReportsARemoteProtectionErrorAsRemoteResources) {
  QpPairConfig config;
  config.fabric.profile = profiles::kIWarp;
  QpPair pair(config);
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE s = src->Sge(0, 8);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken() ^ 0x00abcd00), STATUS_SUCCESS);
  EXPECT_THAT(pair.Collect(pair.a().initiator_cq, 1), ElementsAre(HasStatus(STATUS_REMOTE_RESOURCES)));
}

TEST(Connection, Ipv6PairConnectsAndMovesData) {
  QpPairConfig config;
  config.fabric.profile = profiles::kFunctional;
  config.ipv6 = true;
  QpPair pair(config);
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  Fill(*src, 9);
  const NDK_SGE s = src->Sge(0, 64);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair.Collect(pair.a().initiator_cq, 1), ElementsAre(Succeeded()));
  EXPECT_EQ(std::memcmp(src->Data(), dst->Data(), 64), 0);
}

TEST(Connection, NobodyListeningIsRefused) {
  QpPairConfig config;
  config.fabric.profile = profiles::kFunctional;
  QpPair pair(config);
  // A second QP on a tries port 9999 of b, where nobody listens.
  NDK_QP* qp = nullptr;
  NDK_CONNECTOR* conn = nullptr;
  QpEnd& a = pair.a();
  ASSERT_EQ(a.pd->Dispatch->NdkCreateQp(a.pd, a.receive_cq, a.initiator_cq, nullptr, 4, 4, 1, 1, 0, nullptr, nullptr, &qp),
            STATUS_SUCCESS);
  ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, nullptr, nullptr, &conn), STATUS_SUCCESS);
  SOCKADDR_INET src;
  SOCKADDR_INET dst;
  const ULONG src_len = pair.Address(pair.a(), 0, &src);
  const ULONG dst_len = pair.Address(pair.b(), 9999, &dst);
  NTSTATUS status = STATUS_PENDING;
  NTSTATUS s = conn->Dispatch->NdkConnect(conn, qp, reinterpret_cast<PSOCKADDR>(&src), src_len,
                                          reinterpret_cast<PSOCKADDR>(&dst), dst_len, 4, 4, nullptr, 0,
                                          [](PVOID ctx, NTSTATUS st) { *static_cast<NTSTATUS*>(ctx) = st; }, &status);
  if (s != STATUS_PENDING) status = s;
  pair.fabric().RunUntilIdle();
  EXPECT_EQ(status, STATUS_CONNECTION_REFUSED);
  conn->Dispatch->NdkCloseConnector(&conn->Header, nullptr, nullptr);
  qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr);
}

TEST(Connection, PostingOnAnUnconnectedQpIsRefusedInline) {
  QpPairConfig config;
  config.fabric.profile = profiles::kFunctional;
  QpPair pair(config);
  QpEnd& a = pair.a();
  NDK_QP* qp = nullptr;
  ASSERT_EQ(a.pd->Dispatch->NdkCreateQp(a.pd, a.receive_cq, a.initiator_cq, nullptr, 4, 4, 1, 1, 0, nullptr, nullptr, &qp),
            STATUS_SUCCESS);
  auto buf = a.Register(64);
  const NDK_SGE s = buf->Sge(0, 8);
  EXPECT_EQ(qp->Dispatch->NdkSend(qp, nullptr, &s, 1, 0), STATUS_CONNECTION_INVALID);
  EXPECT_EQ(qp->Dispatch->NdkWrite(qp, nullptr, &s, 1, buf->Address(), buf->RemoteToken(), 0), STATUS_CONNECTION_INVALID);
  EXPECT_EQ(qp->Dispatch->NdkRead(qp, nullptr, &s, 1, buf->Address(), buf->RemoteToken(), 0), STATUS_CONNECTION_INVALID);
  // Receives may be posted before the connection exists.
  EXPECT_EQ(qp->Dispatch->NdkReceive(qp, nullptr, &s, 1), STATUS_SUCCESS);
  EXPECT_THAT(pair.Drain(a.initiator_cq), SizeIs(0));
  qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr);
}

// Same seed and same calls give the same trace, line for line.
std::vector<std::string> TraceOfAScenario(std::uint64_t seed) {
  QpPairConfig config;
  config.fabric.seed = seed;
  QpPair pair(config);
  pair.fabric().Trace().EnableAll();
  auto src = pair.a().Register(20000);
  auto dst = pair.b().Register(20000);
  Fill(*src, 5);
  const NDK_SGE s = src->Sge(0, 20000);
  const NDK_SGE d = dst->Sge(0, 20000);
  pair.b().Receive(nullptr, {&d, 1});
  pair.a().Send(nullptr, {&s, 1});
  pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_DEFER);
  pair.a().Read(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken());
  pair.fabric().RunUntilIdle();
  return pair.fabric().Trace().Lines();
}

TEST(Determinism, SameSeedSameCallsSameTrace) {
  const auto first = TraceOfAScenario(42);
  const auto second = TraceOfAScenario(42);
  ASSERT_GT(first.size(), 50u);
  EXPECT_EQ(first, second);
}

// Every kind of request, many of each, with other lengths, flags and contexts than the scenario's:
// what it leaves in the rings, CQEs and tables it gives back differs from what the scenario writes.
void DirtyTheRecycledBlocks() {
  QpPairConfig config;
  config.fabric.seed = 7;
  QpPair pair(config);
  auto src = pair.a().Register(20000);
  auto dst = pair.b().Register(20000);
  Fill(*src, 77);
  for (std::uintptr_t i = 0; i < 200; ++i) {
    const NDK_SGE sges[3] = {src->Sge(i, 100 + static_cast<ULONG>(i)), src->Sge(1000 + i, 7), src->Sge(5000, 3)};
    const NDK_SGE d = dst->Sge(i * 50, 9000);
    (void)pair.b().Receive(reinterpret_cast<void*>(0xBAD0000 + i), {&d, 1});
    const ULONG flags = (i % 3 == 0 ? NDK_OP_FLAG_SILENT_SUCCESS : 0) | (i % 5 == 0 ? NDK_OP_FLAG_READ_FENCE : 0);
    (void)pair.a().Send(reinterpret_cast<void*>(0xDEAD0000 + i), sges, flags);
    (void)pair.a().Write(reinterpret_cast<void*>(0xBEEF0000 + i), sges, dst->Address(i), dst->RemoteToken(), flags);
    (void)pair.a().Read(reinterpret_cast<void*>(0xF00D0000 + i), {sges, 2}, dst->Address(i * 3), dst->RemoteToken());
    if (i % 16 == 15) pair.fabric().RunUntilIdle();
  }
  pair.fabric().RunUntilIdle();
}

// Large blocks go from one fabric to the next without being cleared (common/block_recycler.h):
// nothing in the model may read a byte of them before writing it, or a test would behave
// differently after another test than alone.
TEST(Determinism, AFabricOnRecycledMemoryGivesTheTraceOfOneOnFreshMemory) {
  BlockRecycler::Release();
  const auto fresh = TraceOfAScenario(42);
  BlockRecycler::Release();
  DirtyTheRecycledBlocks();
  // The scenario takes the dirtied blocks: it finds as many kept as it gives back after it.
  const std::size_t dirtied = BlockRecycler::Cached().first;
  const auto recycled = TraceOfAScenario(42);
  EXPECT_GT(dirtied, 0u);
  EXPECT_EQ(BlockRecycler::Cached().first, dirtied);
  ASSERT_GT(fresh.size(), 50u);
  EXPECT_EQ(fresh, recycled);
}

TEST(Determinism, TheSeedReachesTheModel) {
  // A different seed gives a different trace: the seed is used, not ignored.
  EXPECT_NE(TraceOfAScenario(42), TraceOfAScenario(43));
}

}  // namespace
}  // namespace ndksim
