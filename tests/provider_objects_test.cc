// SPDX-License-Identifier: MIT
// Provider tests through the NDK dispatch tables: adapter open and query, object headers, create
// limits, memory registration, inline posting failures and object lifetime (ref §1.1, §2.1,
// §3.15-3.17, §4.3, §4.4). Each failing call must return its status and change nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "ndksim/testing.h"

namespace ndksim {
namespace {

using ::testing::SizeIs;
using testing::ConnectedQpPairTest;
using testing::HasStatus;
using testing::Succeeded;

void CountClose(PVOID ctx) { ++*static_cast<int*>(ctx); }
void IgnoreCq(PVOID, NTSTATUS) {}

FabricConfig Functional() {
  FabricConfig c;
  c.profile = profiles::kFunctional;
  return c;
}

// ---- version negotiation (ref §1.1) ---------------------------------------------------------------

using VersionCase = std::tuple<NDK_VERSION /*asked*/, NTSTATUS, NDK_VERSION /*granted*/>;
class OpenAdapterVersion : public ::testing::TestWithParam<VersionCase> {};

TEST_P(OpenAdapterVersion, GrantsOurHighestMinorOfTheMajorOrRefuses) {
  const auto [asked, status, granted] = GetParam();
  Fabric fabric(Functional());
  Node& node = fabric.AddNode({"n", {"192.0.2.1"}});
  NDK_ADAPTER* adapter = nullptr;
  ASSERT_EQ(node.OpenAdapter(asked, &adapter), status);
  if (status != STATUS_SUCCESS) return;
  EXPECT_EQ(adapter->Header.Version.Major, granted.Major);
  EXPECT_EQ(adapter->Header.Version.Minor, granted.Minor);
  EXPECT_EQ(adapter->Header.ObjectType, NdkObjectTypeAdapter);
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  ASSERT_EQ(adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size), STATUS_SUCCESS);
  EXPECT_EQ(info.Version.Major, granted.Major);
  EXPECT_EQ(info.Version.Minor, granted.Minor);
  node.CloseAdapter(adapter);
}

INSTANTIATE_TEST_SUITE_P(
    Table, OpenAdapterVersion,
    ::testing::Values(VersionCase{{1, 0}, STATUS_SUCCESS, {1, 2}}, VersionCase{{1, 1}, STATUS_SUCCESS, {1, 2}},
                      VersionCase{{1, 2}, STATUS_SUCCESS, {1, 2}}, VersionCase{{1, 3}, NDIS_STATUS_BAD_VERSION, {}},
                      VersionCase{{2, 0}, STATUS_SUCCESS, {2, 1}}, VersionCase{{2, 1}, STATUS_SUCCESS, {2, 1}},
                      VersionCase{{2, 2}, NDIS_STATUS_BAD_VERSION, {}}, VersionCase{{0, 0}, NDIS_STATUS_BAD_VERSION, {}},
                      VersionCase{{3, 0}, NDIS_STATUS_BAD_VERSION, {}}),
    [](const auto& info) {
      const NDK_VERSION v = std::get<0>(info.param);
      return fmt::format("v{}_{}", v.Major, v.Minor);
    });

// ---- one adapter with a CQ and a PD -------------------------------------------------------------

class ProviderObjects : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = &fabric_.AddNode({"n", {"192.0.2.1"}});
    ASSERT_EQ(node_->OpenAdapter({1, 1}, &adapter_), STATUS_SUCCESS);
    ASSERT_EQ(ad()->NdkCreateCq(adapter_, 64, IgnoreCq, nullptr, nullptr, nullptr, nullptr, &cq_), STATUS_SUCCESS);
    ASSERT_EQ(ad()->NdkCreatePd(adapter_, nullptr, nullptr, &pd_), STATUS_SUCCESS);
  }
  void TearDown() override { node_->CloseAdapter(adapter_); }

  const NDK_ADAPTER_DISPATCH* ad() const { return adapter_->Dispatch; }
  const HardwareProfile& profile() const { return fabric_.Profile(); }
  NTSTATUS CreateQp(ULONG rq, ULONG sq, ULONG rsge, ULONG ssge, ULONG inl, NDK_QP** qp) {
    return pd_->Dispatch->NdkCreateQp(pd_, cq_, cq_, nullptr, rq, sq, rsge, ssge, inl, nullptr, nullptr, qp);
  }

  Fabric fabric_{Functional()};
  Node* node_ = nullptr;
  NDK_ADAPTER* adapter_ = nullptr;
  NDK_CQ* cq_ = nullptr;
  NDK_PD* pd_ = nullptr;
};

TEST_F(ProviderObjects, HeadersCarryVersionTypeAndZeroReserved) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(pd_->Dispatch->NdkCreateMr(pd_, FALSE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  const NDK_OBJECT_HEADER* headers[] = {&cq_->Header, &pd_->Header, &mr->Header};
  const NDK_OBJECT_TYPE types[] = {NdkObjectTypeCq, NdkObjectTypePd, NdkObjectTypeMr};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(headers[i]->Version.Major, 1);
    EXPECT_EQ(headers[i]->Version.Minor, 2);
    EXPECT_EQ(headers[i]->ObjectType, types[i]);
    for (PVOID p : headers[i]->NdkReserved.rf) EXPECT_EQ(p, nullptr);
  }
}

TEST_F(ProviderObjects, QueryAdapterInfoFollowsTheBufferProtocolAndTheProfile) {
  ULONG size = 0;
  EXPECT_EQ(ad()->NdkQueryAdapterInfo(adapter_, nullptr, &size), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
  NDK_ADAPTER_INFO info{};
  size = sizeof info - 1;
  EXPECT_EQ(ad()->NdkQueryAdapterInfo(adapter_, &info, &size), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
  size = sizeof info + 8;
  ASSERT_EQ(ad()->NdkQueryAdapterInfo(adapter_, &info, &size), STATUS_SUCCESS);
  EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
  const HardwareProfile& p = profile();
  EXPECT_EQ(info.VendorId, p.vendor_id);
  EXPECT_EQ(info.MaxInitiatorRequestSge, p.max_initiator_sge);
  EXPECT_EQ(info.MaxReadRequestSge, p.max_read_sge);
  EXPECT_EQ(info.MaxCqDepth, p.max_cq_depth);
  EXPECT_EQ(info.MaxInlineDataSize, p.max_inline_bytes);
  EXPECT_EQ(info.MaxSrqDepth, p.max_srq_depth);
  EXPECT_EQ(info.MaxCallerData, p.max_caller_data);
  EXPECT_EQ(info.AdapterFlags, ULONG{NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED | NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED |
                                     NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED | NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED |
                                     NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED |
                                     NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED |
                                     NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED});
  EXPECT_EQ(info.RdmaTechnology, NdkRoCEv2);
}

TEST_F(ProviderObjects, UnsupportedSlotsSayNotSupported) {
  NDK_EXTENSION_INTERFACE ext{};
  GUID id{};
  EXPECT_EQ(ad()->NdkQueryExtension(&adapter_->Header, &id, {1, 0}, &ext), STATUS_NOT_SUPPORTED);
}

TEST_F(ProviderObjects, CreateCqChecksDepthAndCallback) {
  NDK_CQ* cq = nullptr;
  EXPECT_EQ(ad()->NdkCreateCq(adapter_, 0, IgnoreCq, nullptr, nullptr, nullptr, nullptr, &cq), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(ad()->NdkCreateCq(adapter_, profile().max_cq_depth + 1, IgnoreCq, nullptr, nullptr, nullptr, nullptr, &cq),
            STATUS_INVALID_PARAMETER);
  EXPECT_EQ(ad()->NdkCreateCq(adapter_, 8, nullptr, nullptr, nullptr, nullptr, nullptr, &cq), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(cq, nullptr);
  ASSERT_EQ(ad()->NdkCreateCq(adapter_, 1, IgnoreCq, nullptr, nullptr, nullptr, nullptr, &cq), STATUS_SUCCESS);
  EXPECT_EQ(cq->Dispatch->NdkCloseCq(&cq->Header, nullptr, nullptr), STATUS_SUCCESS);
}

// Each ref §3.16 limit one past the adapter's, and zero depths.
enum class QpLimit { kReceiveDepth, kInitiatorDepth, kReceiveSge, kInitiatorSge, kInline, kZeroReceive, kZeroInitiator };
class CreateQpLimit : public ProviderObjects, public ::testing::WithParamInterface<QpLimit> {};

TEST_P(CreateQpLimit, IsInvalidParameter) {
  const HardwareProfile& p = profile();
  ULONG v[5] = {4, 4, 1, 1, 0};
  switch (GetParam()) {
    case QpLimit::kReceiveDepth: v[0] = p.max_receive_queue_depth + 1; break;
    case QpLimit::kInitiatorDepth: v[1] = p.max_initiator_queue_depth + 1; break;
    case QpLimit::kReceiveSge: v[2] = p.max_receive_sge + 1; break;
    case QpLimit::kInitiatorSge: v[3] = p.max_initiator_sge + 1; break;
    case QpLimit::kInline: v[4] = p.max_inline_bytes + 1; break;
    case QpLimit::kZeroReceive: v[0] = 0; break;
    case QpLimit::kZeroInitiator: v[1] = 0; break;
  }
  NDK_QP* qp = nullptr;
  EXPECT_EQ(CreateQp(v[0], v[1], v[2], v[3], v[4], &qp), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(qp, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Limits, CreateQpLimit,
                         ::testing::Values(QpLimit::kReceiveDepth, QpLimit::kInitiatorDepth, QpLimit::kReceiveSge,
                                           QpLimit::kInitiatorSge, QpLimit::kInline, QpLimit::kZeroReceive,
                                           QpLimit::kZeroInitiator));

TEST_F(ProviderObjects, CreateQpAtTheLimitsSucceedsAndNullCqsAreRefused) {
  const HardwareProfile& p = profile();
  NDK_QP* qp = nullptr;
  EXPECT_EQ(pd_->Dispatch->NdkCreateQp(pd_, nullptr, cq_, nullptr, 4, 4, 1, 1, 0, nullptr, nullptr, &qp),
            STATUS_INVALID_PARAMETER);
  ASSERT_EQ(CreateQp(p.max_receive_queue_depth, p.max_initiator_queue_depth, p.max_receive_sge, p.max_initiator_sge,
                     p.max_inline_bytes, &qp),
            STATUS_SUCCESS);
  EXPECT_EQ(qp->Header.ObjectType, NdkObjectTypeQp);
  EXPECT_EQ(qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr), STATUS_SUCCESS);
}

// ---- memory registration (ref §3.15) --------------------------------------------------------------

class Registration : public ProviderObjects {
 protected:
  void SetUp() override {
    ProviderObjects::SetUp();
    ASSERT_EQ(pd_->Dispatch->NdkCreateMr(pd_, FALSE, nullptr, nullptr, &mr_), STATUS_SUCCESS);
    MmInitializeMdl(&mdl_, buffer_.data(), buffer_.size());
  }
  NTSTATUS Register(MDL* mdl, SIZE_T length, ULONG flags) {
    return mr_->Dispatch->NdkRegisterMr(mr_, mdl, length, flags, nullptr, nullptr);
  }
  std::vector<std::byte> buffer_ = std::vector<std::byte>(8192);
  MDL mdl_{};
  NDK_MR* mr_ = nullptr;
};

TEST_F(Registration, BadArgumentsAreRefusedAndChangeNothing) {
  EXPECT_EQ(Register(&mdl_, 0, 0), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(Register(&mdl_, buffer_.size() + 1, 0), STATUS_INVALID_BUFFER_SIZE);
  EXPECT_EQ(Register(&mdl_, 16, 0x10), STATUS_INVALID_PARAMETER);  // unknown bit
  EXPECT_EQ(Register(&mdl_, 16, 0x4), STATUS_INVALID_PARAMETER);   // half of REMOTE_WRITE
  EXPECT_EQ(mr_->Dispatch->NdkDeregisterMr(mr_, nullptr, nullptr), STATUS_INVALID_DEVICE_STATE);
  ASSERT_EQ(Register(&mdl_, 16, NDK_MR_FLAG_ALLOW_REMOTE_WRITE), STATUS_SUCCESS);
}

TEST_F(Registration, ChainedMdlMustBeVirtuallyContiguous) {
  MDL first{};
  MDL second{};
  MmInitializeMdl(&first, buffer_.data(), 4096);
  MmInitializeMdl(&second, buffer_.data() + 4096, 4096);
  first.Next = &second;
  ASSERT_EQ(Register(&first, 8192, NDK_MR_FLAG_ALLOW_LOCAL_WRITE), STATUS_SUCCESS);
  ASSERT_EQ(mr_->Dispatch->NdkDeregisterMr(mr_, nullptr, nullptr), STATUS_SUCCESS);
  MmInitializeMdl(&second, buffer_.data() + 4100, 4000);
  EXPECT_EQ(Register(&first, 8000, NDK_MR_FLAG_ALLOW_LOCAL_WRITE), STATUS_INVALID_PARAMETER);
  // A gap beyond the registered span does not matter.
  EXPECT_EQ(Register(&first, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE), STATUS_SUCCESS);
}

TEST_F(Registration, RegisteringTwiceIsInvalidDeviceStateAndTokensMatch) {
  ASSERT_EQ(Register(&mdl_, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE), STATUS_SUCCESS);
  EXPECT_EQ(Register(&mdl_, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE), STATUS_INVALID_DEVICE_STATE);
  EXPECT_EQ(mr_->Dispatch->NdkGetLocalTokenFromMr(mr_), mr_->Dispatch->NdkGetRemoteTokenFromMr(mr_));
}

// ---- object lifetime (ref §4.4) -------------------------------------------------------------------

TEST_F(ProviderObjects, ClosingAPdWithALiveMrPendsUntilTheMrCloses) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(pd_->Dispatch->NdkCreateMr(pd_, FALSE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  int closed = 0;
  ASSERT_EQ(pd_->Dispatch->NdkClosePd(&pd_->Header, CountClose, &closed), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(closed, 0);
  EXPECT_EQ(mr->Dispatch->NdkCloseMr(&mr->Header, nullptr, nullptr), STATUS_SUCCESS);
  EXPECT_EQ(closed, 0);  // never from inside the successor's close call
  fabric_.RunUntilIdle();
  EXPECT_EQ(closed, 1);
  pd_ = nullptr;
}

TEST_F(ProviderObjects, ClosingACqUsedByAQpPendsUntilTheQpCloses) {
  NDK_QP* qp = nullptr;
  ASSERT_EQ(CreateQp(4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
  int closed = 0;
  ASSERT_EQ(cq_->Dispatch->NdkCloseCq(&cq_->Header, CountClose, &closed), STATUS_PENDING);
  ASSERT_EQ(qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr), STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(closed, 1);
}

TEST_F(ProviderObjects, AdapterCloseCompletesPendingClosesAndEndsEverything) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(pd_->Dispatch->NdkCreateMr(pd_, FALSE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  int closed = 0;
  ASSERT_EQ(pd_->Dispatch->NdkClosePd(&pd_->Header, CountClose, &closed), STATUS_PENDING);
  node_->CloseAdapter(adapter_);
  EXPECT_EQ(closed, 1);  // blocking close: every callback has returned
  fabric_.RunUntilIdle();
  EXPECT_EQ(closed, 1);
  ASSERT_EQ(node_->OpenAdapter({2, 1}, &adapter_), STATUS_SUCCESS);  // for TearDown
}

// ---- inline posting failures (ref §4.1, §4.3; NDSPI analogues) ------------------------------------

class PostingFailures : public ConnectedQpPairTest {};

TEST_F(PostingFailures, FlagsNotAllowedForTheOperationAreInvalidParameter) {
  auto buf = a().Register(64);
  const NDK_SGE s = buf->Sge(0, 8);
  EXPECT_EQ(a().Write(nullptr, {&s, 1}, buf->Address(), 0, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(a().Read(nullptr, {&s, 1}, buf->Address(), 0, NDK_OP_FLAG_INLINE), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(a().Send(nullptr, {&s, 1}, NDK_OP_FLAG_ALLOW_REMOTE_READ), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(a().Send(nullptr, {&s, 1}, 0x80000000u), STATUS_INVALID_PARAMETER);
  EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(0));
}

TEST_F(PostingFailures, MissingSglAndOversizedInlineAreRefused) {
  auto buf = a().Register(4096);
  EXPECT_EQ(a().qp->Dispatch->NdkSend(a().qp, nullptr, nullptr, 1, 0), STATUS_INVALID_PARAMETER);
  const NDK_SGE big = buf->Sge(0, pair().config().inline_data_size + 1);
  EXPECT_EQ(a().Send(nullptr, {&big, 1}, NDK_OP_FLAG_INLINE), STATUS_BUFFER_OVERFLOW);
  NDK_SGE too_much[2] = {buf->Sge(0, 4096), buf->Sge(0, 4096)};
  too_much[1].Length = 0xffffffffu;  // the sum passes MaxTransferLength
  EXPECT_EQ(a().Send(nullptr, too_much), STATUS_BUFFER_OVERFLOW);
  EXPECT_EQ(b().qp->Dispatch->NdkReceive(b().qp, nullptr, nullptr, 2), STATUS_INVALID_PARAMETER);
  EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(0));
}

TEST_F(PostingFailures, ReceiveWithTooManySgesIsDataOverrun) {
  auto buf = b().Register(4096);
  std::vector<NDK_SGE> sges(pair().config().max_receive_sge + 1, buf->Sge(0, 8));
  EXPECT_EQ(b().Receive(nullptr, sges), STATUS_DATA_OVERRUN);
}

TEST_F(PostingFailures, StaleOrForeignTokensAreAccessViolations) {
  auto buf = a().Register(64);
  const NDK_SGE stale = buf->Sge(0, 8);
  ASSERT_EQ(buf->Mr()->Dispatch->NdkDeregisterMr(buf->Mr(), nullptr, nullptr), STATUS_SUCCESS);
  EXPECT_EQ(a().Send(nullptr, {&stale, 1}), STATUS_ACCESS_VIOLATION);
  NDK_SGE zero_length = stale;
  zero_length.Length = 0;
  EXPECT_EQ(a().Send(nullptr, {&zero_length, 1}), STATUS_ACCESS_VIOLATION);  // token still checked
  // b's buffer belongs to b's PD, not to a's QP's.
  auto other = b().Register(64);
  const NDK_SGE foreign = other->Sge(0, 8);
  EXPECT_EQ(a().Send(nullptr, {&foreign, 1}), STATUS_ACCESS_VIOLATION);
  EXPECT_THAT(pair().Drain(a().initiator_cq), SizeIs(0));
}

TEST_F(PostingFailures, AFailingMemoryOperationStillHandsDeferredWorkToTheNic) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 64);
  ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  // ref §3.8: an NdkRegisterMr MR is never invalidated (ndksim: STATUS_INVALID_DEVICE_REQUEST).
  EXPECT_EQ(a().qp->Dispatch->NdkInvalidate(a().qp, nullptr, &src->Mr()->Header, 0), STATUS_INVALID_DEVICE_REQUEST);
  EXPECT_THAT(pair().Drain(a().initiator_cq), ::testing::ElementsAre(Succeeded()));
}

TEST_F(PostingFailures, ArmWithAnUnknownTypeDoesNothing) {
  a().initiator_cq->Dispatch->NdkArmCq(a().initiator_cq, 7);
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 64);
  ASSERT_EQ(a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  fabric().RunUntilIdle();
  EXPECT_EQ(a().cq_notifications, 0);
}

TEST_F(PostingFailures, FlushCancelsPostedReceives) {
  auto buf = b().Register(64);
  const NDK_SGE s = buf->Sge(0, 64);
  int r1 = 0;
  int r2 = 0;
  ASSERT_EQ(b().Receive(&r1, {&s, 1}), STATUS_SUCCESS);
  ASSERT_EQ(b().Receive(&r2, {&s, 1}), STATUS_SUCCESS);
  b().qp->Dispatch->NdkFlush(b().qp);
  const auto r = pair().Drain(b().receive_cq);
  ASSERT_THAT(r, SizeIs(2));
  EXPECT_THAT(r[0], HasStatus(STATUS_CANCELLED));
  EXPECT_EQ(r[0].RequestContext, &r1);
  EXPECT_EQ(r[1].RequestContext, &r2);
  EXPECT_THAT(r[1], HasStatus(STATUS_CANCELLED));
}

// Invariant: every successful post yields one completion, also on a QP already in error, where
// no incoming send will ever make the NIC read the receive queue.
TEST_F(PostingFailures, ReceivesPostedAfterAFlushAreCancelledToo) {
  auto buf = b().Register(64);
  const NDK_SGE s = buf->Sge(0, 64);
  b().qp->Dispatch->NdkFlush(b().qp);
  fabric().RunUntilIdle();
  int r1 = 0;
  ASSERT_EQ(b().Receive(&r1, {&s, 1}), STATUS_SUCCESS);
  const auto r = pair().Drain(b().receive_cq);
  ASSERT_THAT(r, SizeIs(1));
  EXPECT_THAT(r[0], HasStatus(STATUS_CANCELLED));
  EXPECT_EQ(r[0].RequestContext, &r1);
}

TEST_F(PostingFailures, PlainResultsCarryTheSameCompletions) {
  auto src = a().Register(64);
  auto dst = b().Register(64);
  const NDK_SGE s = src->Sge(0, 64);
  int ctx = 0;
  ASSERT_EQ(a().Write(&ctx, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  fabric().RunUntilIdle();
  NDK_RESULT r[4];
  ASSERT_EQ(a().initiator_cq->Dispatch->NdkGetCqResults(a().initiator_cq, r, 4), 1u);
  EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
  EXPECT_EQ(r[0].RequestContext, &ctx);
  EXPECT_EQ(r[0].QPContext, a().qp_context);
  EXPECT_EQ(a().initiator_cq->Dispatch->NdkGetCqResults(a().initiator_cq, r, 4), 0u);
}

}  // namespace
}  // namespace ndksim
