// SPDX-License-Identifier: MIT
// Conformance: memory operations — send with invalidate (ref §3.2), memory windows (§3.6), fast
// register (§3.7), invalidate (§3.8), privileged token and LAMs (§2.2, §2.3, §3.15), the memory
// flags of §1.4/§1.5 (read sink, read-local-invalidate, DEFER §4.3). One rule per test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "ndksim/harness.h"
#include "ndksim/testing.h"

namespace ndksim::conformance {
namespace {

using ::ndksim::testing::HasRequestContext;
using ::ndksim::testing::HasStatus;
using ::ndksim::testing::HasType;
using ::ndksim::testing::IsCompletion;
using ::ndksim::testing::Succeeded;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::SizeIs;

// Page-aligned host memory, for fast registration and LAMs.
class Pages {
 public:
  explicit Pages(std::size_t count)
      : bytes_(count * PAGE_SIZE), data_(static_cast<std::byte*>(std::aligned_alloc(PAGE_SIZE, count * PAGE_SIZE))) {
    std::memset(data_.get(), 0, bytes_);
  }
  std::byte* Data(std::size_t offset = 0) { return data_.get() + offset; }
  NDK_LOGICAL_ADDRESS Page(std::size_t i) const {
    NDK_LOGICAL_ADDRESS a{};
    a.QuadPart = static_cast<LONG64>(reinterpret_cast<std::uintptr_t>(data_.get() + i * PAGE_SIZE));
    return a;
  }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::size_t bytes_;
  std::unique_ptr<std::byte, Free> data_;
};

int g_ctx[16];  // distinct request contexts
void* Ctx(int i) { return &g_ctx[i]; }

class Memory : public ::ndksim::testing::ConnectedQpPairTest {
 protected:
  static NDK_MR* NewFrMr(QpEnd& e, ULONG pages, BOOLEAN remote) {
    NDK_MR* mr = nullptr;
    EXPECT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, TRUE, nullptr, nullptr, &mr), STATUS_SUCCESS);
    EXPECT_EQ(mr->Dispatch->NdkInitializeFastRegisterMr(mr, pages, remote, nullptr, nullptr), STATUS_SUCCESS);
    return mr;
  }
  static NDK_MW* NewMw(QpEnd& e) {
    NDK_MW* mw = nullptr;
    EXPECT_EQ(e.pd->Dispatch->NdkCreateMw(e.pd, nullptr, nullptr, &mw), STATUS_SUCCESS);
    return mw;
  }
  static NTSTATUS Bind(QpEnd& e, void* ctx, NDK_MR* mr, NDK_MW* mw, const void* va, SIZE_T len, ULONG flags) {
    return e.qp->Dispatch->NdkBind(e.qp, ctx, mr, mw, const_cast<void*>(va), len, flags);
  }
  static NTSTATUS FastRegister(QpEnd& e, void* ctx, NDK_MR* mr, const std::vector<NDK_LOGICAL_ADDRESS>& pages,
                               ULONG fbo, SIZE_T len, std::uint64_t base, ULONG flags) {
    return e.qp->Dispatch->NdkFastRegister(e.qp, ctx, mr, static_cast<ULONG>(pages.size()), pages.data(), fbo, len,
                                           reinterpret_cast<PVOID>(base), flags);
  }
  static NTSTATUS Invalidate(QpEnd& e, void* ctx, NDK_OBJECT_HEADER* object, ULONG flags = 0) {
    return e.qp->Dispatch->NdkInvalidate(e.qp, ctx, object, flags);
  }
  static NTSTATUS SendAndInvalidate(QpEnd& e, void* ctx, const NDK_SGE& sge, UINT32 token, ULONG flags = 0) {
    return e.qp->Dispatch->NdkSendAndInvalidate(e.qp, ctx, &sge, 1, flags, token);
  }
  static UINT32 Token(NDK_MW* mw) { return mw->Dispatch->NdkGetRemoteTokenFromMw(mw); }
  static UINT32 Token(NDK_MR* mr) { return mr->Dispatch->NdkGetRemoteTokenFromMr(mr); }
  static UINT32 LocalToken(NDK_MR* mr) { return mr->Dispatch->NdkGetLocalTokenFromMr(mr); }

  // A window of b over [64, 64 + 128) of `buf`, bound and completed.
  NDK_MW* BoundWindow(RegisteredBuffer& buf, ULONG flags) {
    NDK_MW* mw = NewMw(b());
    EXPECT_EQ(Bind(b(), Ctx(0), buf.Mr(), mw, buf.Data() + 64, 128, flags), STATUS_SUCCESS);
    EXPECT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeBind, Ctx(0))));
    return mw;
  }
  // b's FR MR over `pages` (in this order), registered at base `base` and completed.
  NDK_MR* RegisteredFrMr(Pages& pages, std::vector<NDK_LOGICAL_ADDRESS> list, ULONG fbo, SIZE_T len,
                         ULONG flags = NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE) {
    NDK_MR* mr = NewFrMr(b(), 4, TRUE);
    const auto base = static_cast<std::uint64_t>(list[0].QuadPart) + fbo;
    EXPECT_EQ(FastRegister(b(), Ctx(1), mr, list, fbo, len, base, flags), STATUS_SUCCESS);
    EXPECT_THAT(pair().Collect(b().initiator_cq, 1),
                ElementsAre(IsCompletion(NdkOperationTypeFastRegister, Ctx(1))));
    (void)pages;
    return mr;
  }
  // a writes `len` bytes of `src` to (address, token) at b and returns a's completion.
  NDK_RESULT_EX WriteTo(RegisteredBuffer& src, std::uint64_t address, UINT32 token, ULONG len) {
    const NDK_SGE s = src.Sge(0, len);
    EXPECT_EQ(a().Write(Ctx(2), {&s, 1}, address, token), STATUS_SUCCESS);
    auto r = pair().Collect(a().initiator_cq, 1);
    EXPECT_THAT(r, SizeIs(1));
    return r.empty() ? NDK_RESULT_EX{} : r[0];
  }
  NDK_QP* UnconnectedQp(QpEnd& e) {
    NDK_QP* qp = nullptr;
    EXPECT_EQ(e.pd->Dispatch->NdkCreateQp(e.pd, e.receive_cq, e.initiator_cq, nullptr, 4, 4, 1, 1, 0, nullptr,
                                          nullptr, &qp),
              STATUS_SUCCESS);
    return qp;
  }
};

// ---- NdkSendAndInvalidate (ref §3.2, §7) ----------------------------------------------------------

class SendAndInvalidateTest : public Memory {
 protected:
  void SetUp() override {
    Memory::SetUp();
    target_ = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    window_ = BoundWindow(*target_, NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    sink_ = b().Register(256);
    src_ = a().Register(256);
    std::memset(src_->Data(), 0x5a, 256);
    const NDK_SGE r = sink_->Sge(0, 256);
    ASSERT_EQ(b().Receive(Ctx(3), {&r, 1}), STATUS_SUCCESS);
  }
  void TearDown() override {
    // Buffers go before the pair closes its adapters.
    src_.reset();
    sink_.reset();
    target_.reset();
    Memory::TearDown();
  }
  std::unique_ptr<RegisteredBuffer> target_;
  NDK_MW* window_ = nullptr;
  std::unique_ptr<RegisteredBuffer> sink_;
  std::unique_ptr<RegisteredBuffer> src_;
};

TEST_F(SendAndInvalidateTest, SenderCompletionTypeIsSend) {
  ASSERT_EQ(SendAndInvalidate(a(), Ctx(4), src_->Sge(0, 32), Token(window_)), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeSend, Ctx(4))));
}

TEST_F(SendAndInvalidateTest, ReceiverGetsReceiveAndInvalidateWithTheToken) {
  const UINT32 token = Token(window_);
  ASSERT_EQ(SendAndInvalidate(a(), Ctx(4), src_->Sge(0, 32), token), STATUS_SUCCESS);
  auto r = pair().Collect(b().receive_cq, 1);
  ASSERT_THAT(r, ElementsAre(IsCompletion(NdkOperationTypeReceiveAndInvalidate, Ctx(3))));
  EXPECT_EQ(r[0].Type & NdkOperationTypeReceive, NdkOperationTypeReceive);  // ref §1.3
  EXPECT_EQ(static_cast<UINT32>(r[0].TypeSpecificCompletionOutput), token);
  EXPECT_EQ(r[0].BytesTransferred, 32u);
}

TEST_F(SendAndInvalidateTest, LaterInvalidateOfTheTokenFails) {
  ASSERT_EQ(SendAndInvalidate(a(), Ctx(4), src_->Sge(0, 32), Token(window_)), STATUS_SUCCESS);
  ASSERT_THAT(pair().Collect(b().receive_cq, 1), SizeIs(1));
  ASSERT_EQ(Invalidate(b(), Ctx(5), &window_->Header), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().initiator_cq, 1),
              ElementsAre(AllOf(HasStatus(STATUS_INVALID_DEVICE_REQUEST), HasRequestContext(Ctx(5)))));
}

TEST_F(SendAndInvalidateTest, LaterRemoteAccessThroughTheTokenFails) {
  const UINT32 token = Token(window_);
  ASSERT_EQ(SendAndInvalidate(a(), Ctx(4), src_->Sge(0, 32), token), STATUS_SUCCESS);
  ASSERT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(Succeeded()));
  EXPECT_THAT(WriteTo(*src_, target_->Address(64), token, 16), HasStatus(STATUS_ACCESS_VIOLATION));
  EXPECT_EQ(std::to_integer<int>(target_->Data()[64]), 0);
}

TEST_F(SendAndInvalidateTest, PlainGetCqResultsStillDeliversItAndTheTokenIsInvalid) {
  const UINT32 token = Token(window_);
  ASSERT_EQ(SendAndInvalidate(a(), Ctx(4), src_->Sge(0, 32), token), STATUS_SUCCESS);
  NDK_RESULT r{};
  ASSERT_TRUE(fabric().RunUntil(
      [&] { return b().receive_cq->Dispatch->NdkGetCqResults(b().receive_cq, &r, 1) == 1; }));
  EXPECT_EQ(r.Status, STATUS_SUCCESS);
  EXPECT_EQ(r.RequestContext, Ctx(3));
  EXPECT_EQ(r.BytesTransferred, 32u);
  ASSERT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(Succeeded()));  // the send
  EXPECT_THAT(WriteTo(*src_, target_->Address(64), token, 16), HasStatus(STATUS_ACCESS_VIOLATION));
}

// Messages execute in order at the responder: a write sent before the send-and-invalidate that
// takes its region back is placed before the token goes invalid. On a profile with PCIe latency
// the invalidation took effect at the send's arrival, before the write's data had crossed PCIe,
// and the write placed nothing though it completed with success.
class SendAndInvalidateWithLatency : public SendAndInvalidateTest {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c = SendAndInvalidateTest::Config();
    c.fabric.profile = profiles::kConnectX100GbeRoce;
    return c;
  }
};

TEST_F(SendAndInvalidateWithLatency, AWriteSentJustBeforeIsPlacedBeforeTheTokenGoesInvalid) {
  Pages pages(1);
  NDK_MR* fr = RegisteredFrMr(pages, {pages.Page(0)}, 0, PAGE_SIZE);
  const UINT32 token = Token(fr);
  const NDK_SGE data = src_->Sge(0, 64);
  ASSERT_EQ(a().Write(Ctx(2), {&data, 1}, reinterpret_cast<std::uint64_t>(pages.Data()), token), STATUS_SUCCESS);
  ASSERT_EQ(SendAndInvalidate(a(), Ctx(4), src_->Sge(0, 32), token), STATUS_SUCCESS);
  ASSERT_THAT(pair().Collect(b().receive_cq, 1),
              ElementsAre(IsCompletion(NdkOperationTypeReceiveAndInvalidate, Ctx(3))));
  EXPECT_EQ(std::memcmp(pages.Data(), src_->Data(), 64), 0);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 2), ElementsAre(Succeeded(), Succeeded()));
}

TEST_F(SendAndInvalidateTest, FastRegisteredRegionTokenIsInvalidatedToo) {
  Pages pages(1);
  NDK_MR* fr = RegisteredFrMr(pages, {pages.Page(0)}, 0, PAGE_SIZE);
  const UINT32 token = Token(fr);
  ASSERT_EQ(SendAndInvalidate(a(), Ctx(4), src_->Sge(0, 32), token), STATUS_SUCCESS);
  auto r = pair().Collect(b().receive_cq, 1);
  ASSERT_THAT(r, ElementsAre(IsCompletion(NdkOperationTypeReceiveAndInvalidate, Ctx(3))));
  EXPECT_EQ(static_cast<UINT32>(r[0].TypeSpecificCompletionOutput), token);
  ASSERT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(Succeeded()));  // the send
  EXPECT_THAT(WriteTo(*src_, reinterpret_cast<std::uint64_t>(pages.Data()), token, 16),
              HasStatus(STATUS_ACCESS_VIOLATION));
}

TEST_F(SendAndInvalidateTest, InvalidTokenAtTheReceiverAbortsTheConnection) {
  const NDK_SGE second = sink_->Sge(0, 256);
  ASSERT_EQ(b().Receive(Ctx(6), {&second, 1}), STATUS_SUCCESS);
  // An NdkRegisterMr region cannot be invalidated remotely (ref §3.2: it must be an FR MR or MW).
  ASSERT_EQ(SendAndInvalidate(a(), Ctx(4), src_->Sge(0, 32), target_->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(HasStatus(STATUS_ACCESS_VIOLATION)));
  EXPECT_THAT(pair().Collect(b().receive_cq, 2),
              ElementsAre(AllOf(HasStatus(STATUS_ACCESS_VIOLATION), HasRequestContext(Ctx(3))),
                          AllOf(HasStatus(STATUS_CANCELLED), HasRequestContext(Ctx(6)))));
}

TEST_F(SendAndInvalidateTest, OnUnconnectedQpIsConnectionInvalid) {
  NDK_QP* qp = UnconnectedQp(a());
  const NDK_SGE s = src_->Sge(0, 8);
  EXPECT_EQ(qp->Dispatch->NdkSendAndInvalidate(qp, nullptr, &s, 1, 0, Token(window_)), STATUS_CONNECTION_INVALID);
}

// ---- memory windows (ref §3.6, §3.8) --------------------------------------------------------------

TEST_F(Memory, BindCompletesWithTypeBind) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = NewMw(b());
  ASSERT_EQ(Bind(b(), Ctx(0), buf->Mr(), mw, buf->Data(), 4096, NDK_OP_FLAG_ALLOW_REMOTE_READ), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeBind, Ctx(0))));
}

TEST_F(Memory, WindowTokenIsValidAsSoonAsBindReturns) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  auto src = a().Register(64);
  std::memset(src->Data(), 7, 64);
  NDK_MW* mw = NewMw(b());
  const UINT32 before = Token(mw);
  ASSERT_EQ(Bind(b(), nullptr, buf->Mr(), mw, buf->Data(), 4096, NDK_OP_FLAG_ALLOW_REMOTE_WRITE), STATUS_SUCCESS);
  const UINT32 token = Token(mw);  // no simulated time has passed
  EXPECT_NE(token, before);
  EXPECT_THAT(WriteTo(*src, buf->Address(100), token, 64), Succeeded());
  EXPECT_EQ(std::to_integer<int>(buf->Data()[100]), 7);
}

TEST_F(Memory, RemoteReadThroughAWindowReturnsItsBytes) {
  auto buf = b().Register(4096, 0);  // no rights of its own: the window grants remote read
  std::memset(buf->Data() + 64, 0x33, 128);
  NDK_MW* mw = BoundWindow(*buf, NDK_OP_FLAG_ALLOW_REMOTE_READ);
  auto sink = a().Register(128);
  const NDK_SGE s = sink->Sge(0, 128);
  ASSERT_EQ(a().Read(Ctx(2), {&s, 1}, buf->Address(64), Token(mw)), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeRead, Ctx(2))));
  EXPECT_EQ(std::to_integer<int>(sink->Data()[127]), 0x33);
}

TEST_F(Memory, WindowGrantsOnlyItsRange) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = BoundWindow(*buf, NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
  auto src = a().Register(64);
  EXPECT_THAT(WriteTo(*src, buf->Address(64 + 100), Token(mw), 64), HasStatus(STATUS_ACCESS_VIOLATION));
}

TEST_F(Memory, WindowWithoutRemoteWriteRefusesWrites) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = BoundWindow(*buf, NDK_OP_FLAG_ALLOW_REMOTE_READ);
  auto src = a().Register(64);
  EXPECT_THAT(WriteTo(*src, buf->Address(64), Token(mw), 16), HasStatus(STATUS_ACCESS_VIOLATION));
}

TEST_F(Memory, BindRemoteWriteOnMrWithoutLocalWriteIsAccessViolationInline) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_REMOTE_READ);
  NDK_MW* mw = NewMw(b());
  const UINT32 before = Token(mw);
  EXPECT_EQ(Bind(b(), nullptr, buf->Mr(), mw, buf->Data(), 64, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
            STATUS_ACCESS_VIOLATION);
  EXPECT_EQ(Token(mw), before);  // nothing changed
  EXPECT_THAT(pair().Drain(b().initiator_cq), SizeIs(0));
}

TEST_F(Memory, BindRemoteReadNeedsNoRightOnTheMr) {
  auto buf = b().Register(4096, 0);
  NDK_MW* mw = NewMw(b());
  EXPECT_EQ(Bind(b(), nullptr, buf->Mr(), mw, buf->Data(), 64, NDK_OP_FLAG_ALLOW_REMOTE_READ), STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(b().initiator_cq), ElementsAre(Succeeded()));
}

TEST_F(Memory, BindOutsideTheMrIsInvalidParameter) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = NewMw(b());
  EXPECT_EQ(Bind(b(), nullptr, buf->Mr(), mw, buf->Data() + 4000, 200, NDK_OP_FLAG_ALLOW_REMOTE_READ),
            STATUS_INVALID_PARAMETER);
  EXPECT_THAT(pair().Drain(b().initiator_cq), SizeIs(0));
}

TEST_F(Memory, LocalWriteAloneIsNotABindFlag) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = NewMw(b());
  EXPECT_EQ(Bind(b(), nullptr, buf->Mr(), mw, buf->Data(), 64, NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
            STATUS_INVALID_PARAMETER);
}

TEST_F(Memory, BindOnAnUnconnectedQpIsConnectionInvalid) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = NewMw(b());
  NDK_QP* qp = UnconnectedQp(b());
  EXPECT_EQ(qp->Dispatch->NdkBind(qp, nullptr, buf->Mr(), mw, buf->Data(), 64, NDK_OP_FLAG_ALLOW_REMOTE_READ),
            STATUS_CONNECTION_INVALID);
}

TEST_F(Memory, InvalidateOfABoundWindowCompletesWithTypeInvalidate) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = BoundWindow(*buf, NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
  ASSERT_EQ(Invalidate(b(), Ctx(5), &mw->Header), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeInvalidate, Ctx(5))));
}

TEST_F(Memory, RemoteAccessThroughAnInvalidatedWindowIsAFatalQpError) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = BoundWindow(*buf, NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
  ASSERT_EQ(Invalidate(b(), Ctx(5), &mw->Header), STATUS_SUCCESS);
  ASSERT_THAT(pair().Collect(b().initiator_cq, 1), SizeIs(1));
  auto src = a().Register(64);
  EXPECT_THAT(WriteTo(*src, buf->Address(64), Token(mw), 16), HasStatus(STATUS_ACCESS_VIOLATION));
  // The QP is in error: a later post is flushed.
  const NDK_SGE s = src->Sge(0, 8);
  ASSERT_EQ(a().Send(Ctx(7), {&s, 1}), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(HasStatus(STATUS_CANCELLED)));
}

TEST_F(Memory, InvalidateOfAnUnboundWindowCompletesWithInvalidDeviceRequest) {
  NDK_MW* mw = NewMw(b());
  ASSERT_EQ(Invalidate(b(), Ctx(5), &mw->Header), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().initiator_cq, 1),
              ElementsAre(AllOf(HasStatus(STATUS_INVALID_DEVICE_REQUEST), HasType(NdkOperationTypeInvalidate))));
}

TEST_F(Memory, DeregisteringAnMrWithABoundWindowIsDeviceBusy) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = BoundWindow(*buf, NDK_OP_FLAG_ALLOW_REMOTE_READ);
  EXPECT_EQ(buf->Mr()->Dispatch->NdkDeregisterMr(buf->Mr(), nullptr, nullptr), STATUS_DEVICE_BUSY);
  // Still registered: the window still works, and after invalidating it deregistration succeeds.
  ASSERT_EQ(Invalidate(b(), nullptr, &mw->Header), STATUS_SUCCESS);
  ASSERT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(Succeeded()));
  EXPECT_EQ(buf->Mr()->Dispatch->NdkDeregisterMr(buf->Mr(), nullptr, nullptr), STATUS_SUCCESS);
}

// ref §4.4 MR -> MW edge: a window bound to an MR is a successor of the MR; the MR's close pends
// until the window is closed.
TEST_F(Memory, ClosingAnMrWithABoundWindowPendsUntilTheWindowCloses) {
  std::vector<std::byte> storage(4096);
  MDL mdl;
  MmInitializeMdl(&mdl, storage.data(), storage.size());
  NDK_MR* mr = nullptr;
  ASSERT_EQ(b().pd->Dispatch->NdkCreateMr(b().pd, FALSE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  ASSERT_EQ(mr->Dispatch->NdkRegisterMr(mr, &mdl, storage.size(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, nullptr),
            STATUS_SUCCESS);
  NDK_MW* mw = NewMw(b());
  ASSERT_EQ(Bind(b(), nullptr, mr, mw, storage.data(), 64, NDK_OP_FLAG_ALLOW_REMOTE_READ), STATUS_SUCCESS);
  ASSERT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(Succeeded()));
  bool closed = false;
  const NTSTATUS s = mr->Dispatch->NdkCloseMr(&mr->Header, [](PVOID c) { *static_cast<bool*>(c) = true; }, &closed);
  ASSERT_EQ(s, STATUS_PENDING);
  fabric().RunUntilIdle();
  EXPECT_FALSE(closed);
  ASSERT_EQ(mw->Dispatch->NdkCloseMw(&mw->Header, nullptr, nullptr), STATUS_SUCCESS);
  fabric().RunUntilIdle();
  EXPECT_TRUE(closed);
}

TEST_F(Memory, SilentSuccessBindWritesNoCompletion) {
  auto buf = b().Register(4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  NDK_MW* mw = NewMw(b());
  ASSERT_EQ(Bind(b(), nullptr, buf->Mr(), mw, buf->Data(), 64, NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_SILENT_SUCCESS),
            STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(b().initiator_cq), SizeIs(0));
}

// ---- fast register (ref §3.7, §3.8, §3.15) -----------------------------------------------------

TEST_F(Memory, InitializeBeyondFrmrPageCountIsImplementationLimit) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(b().pd->Dispatch->NdkCreateMr(b().pd, TRUE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  const ULONG limit = pair().config().fabric.profile.frmr_page_count;
  EXPECT_EQ(mr->Dispatch->NdkInitializeFastRegisterMr(mr, limit + 1, TRUE, nullptr, nullptr),
            STATUS_IMPLEMENTATION_LIMIT);
  EXPECT_EQ(mr->Dispatch->NdkInitializeFastRegisterMr(mr, limit, TRUE, nullptr, nullptr), STATUS_SUCCESS);
}

TEST_F(Memory, FastRegisterCompletesWithTypeFastRegisterAndMapsThePageList) {
  Pages pages(2);
  // Pages in reverse order: the registered range is not contiguous in host memory.
  NDK_MR* mr = RegisteredFrMr(pages, {pages.Page(1), pages.Page(0)}, 0, 2 * PAGE_SIZE);
  auto src = a().Register(256);
  for (int i = 0; i < 256; ++i) src->Data()[i] = static_cast<std::byte>(i);
  const auto base = static_cast<std::uint64_t>(pages.Page(1).QuadPart);
  // 128 bytes before and after the first page boundary of the registered range.
  EXPECT_THAT(WriteTo(*src, base + PAGE_SIZE - 128, Token(mr), 256), Succeeded());
  EXPECT_EQ(std::to_integer<int>(pages.Data(PAGE_SIZE + PAGE_SIZE - 1)[0]), 127);  // last byte of page 1
  EXPECT_EQ(std::to_integer<int>(pages.Data(0)[0]), 128);                         // first byte of page 0
}

TEST_F(Memory, RemoteTokenIsAvailableWhenFastRegisterReturns) {
  Pages pages(1);
  NDK_MR* mr = NewFrMr(b(), 1, TRUE);
  const UINT32 before = Token(mr);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  ASSERT_EQ(FastRegister(b(), nullptr, mr, {pages.Page(0)}, 0, PAGE_SIZE, base, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
            STATUS_SUCCESS);
  const UINT32 token = Token(mr);
  EXPECT_EQ(token, before);  // the token read after initialisation (keys rotate only when the profile says so)
  EXPECT_EQ(LocalToken(mr), token);
  auto src = a().Register(64);
  std::memset(src->Data(), 9, 64);
  EXPECT_THAT(WriteTo(*src, base, token, 64), Succeeded());
  EXPECT_EQ(std::to_integer<int>(pages.Data()[63]), 9);
}

TEST_F(Memory, FastRegisteredRegionServesLocalSges) {
  Pages pages(1);
  NDK_MR* mr = RegisteredFrMr(pages, {pages.Page(0)}, 0, PAGE_SIZE, NDK_OP_FLAG_ALLOW_LOCAL_WRITE);
  std::memset(pages.Data(), 0x44, 64);
  auto sink = a().Register(64);
  const NDK_SGE r = sink->Sge(0, 64);
  ASSERT_EQ(a().Receive(Ctx(3), {&r, 1}), STATUS_SUCCESS);
  NDK_SGE s{};
  s.VirtualAddress = pages.Data();
  s.Length = 64;
  s.MemoryRegionToken = LocalToken(mr);
  ASSERT_EQ(b().Send(Ctx(4), {&s, 1}), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().receive_cq, 1), ElementsAre(Succeeded()));
  EXPECT_EQ(std::to_integer<int>(sink->Data()[63]), 0x44);
}

TEST_F(Memory, FastRegisterWithFboAddressesFromTheOffset) {
  Pages pages(1);
  NDK_MR* mr = RegisteredFrMr(pages, {pages.Page(0)}, 100, 200);
  auto src = a().Register(64);
  std::memset(src->Data(), 5, 64);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart) + 100;
  EXPECT_THAT(WriteTo(*src, base, Token(mr), 64), Succeeded());
  EXPECT_EQ(std::to_integer<int>(pages.Data()[100]), 5);
  EXPECT_EQ(std::to_integer<int>(pages.Data()[99]), 0);
}

TEST_F(Memory, FastRegisterAtBaseZeroIsAllowedWithFboZero) {
  Pages pages(1);
  NDK_MR* mr = NewFrMr(b(), 1, TRUE);
  ASSERT_EQ(FastRegister(b(), Ctx(1), mr, {pages.Page(0)}, 0, PAGE_SIZE, 0, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
            STATUS_SUCCESS);
  auto src = a().Register(64);
  std::memset(src->Data(), 6, 64);
  EXPECT_THAT(WriteTo(*src, 16, Token(mr), 8), Succeeded());
  EXPECT_EQ(std::to_integer<int>(pages.Data()[16]), 6);
}

// Each ref §3.7 rule broken once: INVALID_PARAMETER inline, nothing posted.
TEST_F(Memory, FastRegisterArgumentRulesAreInvalidParameter) {
  Pages pages(3);
  NDK_MR* mr = NewFrMr(b(), 2, TRUE);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  const std::vector<NDK_LOGICAL_ADDRESS> two = {pages.Page(0), pages.Page(1)};
  // Length > pages * PAGE_SIZE - FBO.
  EXPECT_EQ(FastRegister(b(), nullptr, mr, two, 8, 2 * PAGE_SIZE - 7, base + 8, 0), STATUS_INVALID_PARAMETER);
  // Base address not FBO + n * PAGE_SIZE (and 0 with a non-zero FBO).
  EXPECT_EQ(FastRegister(b(), nullptr, mr, two, 8, 64, base + 16, 0), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(FastRegister(b(), nullptr, mr, two, 8, 64, 0, 0), STATUS_INVALID_PARAMETER);
  // A page that is not PAGE_SIZE aligned.
  NDK_LOGICAL_ADDRESS odd = pages.Page(1);
  odd.QuadPart += 8;
  EXPECT_EQ(FastRegister(b(), nullptr, mr, {pages.Page(0), odd}, 0, 64, base, 0), STATUS_INVALID_PARAMETER);
  // More pages than NdkInitializeFastRegisterMr sized the MR for.
  EXPECT_EQ(FastRegister(b(), nullptr, mr, {pages.Page(0), pages.Page(1), pages.Page(2)}, 0, 64, base, 0),
            STATUS_INVALID_PARAMETER);
  EXPECT_THAT(pair().Drain(b().initiator_cq), SizeIs(0));
}

TEST_F(Memory, RemoteFlagsOnAnMrInitialisedWithoutRemoteAccessAreAccessViolation) {
  Pages pages(1);
  NDK_MR* mr = NewFrMr(b(), 1, FALSE);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  EXPECT_EQ(FastRegister(b(), nullptr, mr, {pages.Page(0)}, 0, 64, base, NDK_OP_FLAG_ALLOW_REMOTE_READ),
            STATUS_ACCESS_VIOLATION);
  EXPECT_EQ(FastRegister(b(), nullptr, mr, {pages.Page(0)}, 0, 64, base, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
            STATUS_ACCESS_VIOLATION);
  EXPECT_EQ(FastRegister(b(), Ctx(1), mr, {pages.Page(0)}, 0, 64, base, NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
            STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeFastRegister, Ctx(1))));
}

TEST_F(Memory, FastRegisterOnAnNdkRegisterMrIsInvalidDeviceRequest) {
  Pages pages(1);
  auto buf = b().Register(64);
  EXPECT_EQ(FastRegister(b(), nullptr, buf->Mr(), {pages.Page(0)}, 0, 64,
                         static_cast<std::uint64_t>(pages.Page(0).QuadPart), 0),
            STATUS_INVALID_DEVICE_REQUEST);
}

TEST_F(Memory, RegisterMrOnAFastRegisterMrIsInvalidDeviceRequest) {
  NDK_MR* mr = NewFrMr(b(), 1, TRUE);
  std::vector<std::byte> bytes(64);
  MDL mdl;
  MmInitializeMdl(&mdl, bytes.data(), bytes.size());
  EXPECT_EQ(mr->Dispatch->NdkRegisterMr(mr, &mdl, 64, 0, nullptr, nullptr), STATUS_INVALID_DEVICE_REQUEST);
}

TEST_F(Memory, InvalidateOfAFastRegisteredMrCompletesWithTypeInvalidateAndKillsTheToken) {
  Pages pages(1);
  NDK_MR* mr = RegisteredFrMr(pages, {pages.Page(0)}, 0, PAGE_SIZE);
  const UINT32 token = Token(mr);
  ASSERT_EQ(Invalidate(b(), Ctx(5), &mr->Header), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeInvalidate, Ctx(5))));
  auto src = a().Register(64);
  EXPECT_THAT(WriteTo(*src, reinterpret_cast<std::uint64_t>(pages.Data()), token, 8),
              HasStatus(STATUS_ACCESS_VIOLATION));
}

TEST_F(Memory, TheTokenReadAfterInitializeStaysValidAcrossFastRegisterCycles) {
  // Consumers read the token once, after NdkInitializeFastRegisterMr, and cache it.
  Pages pages(1);
  NDK_MR* mr = NewFrMr(b(), 1, TRUE);
  const UINT32 cached = Token(mr);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  auto src = a().Register(64);
  for (int cycle = 0; cycle < 3; ++cycle) {
    ASSERT_EQ(FastRegister(b(), nullptr, mr, {pages.Page(0)}, 0, 64, base, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
              STATUS_SUCCESS);
    EXPECT_EQ(Token(mr), cached);
    EXPECT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(Succeeded()));
    EXPECT_THAT(WriteTo(*src, base, cached, 8), Succeeded()) << "cycle " << cycle;
    ASSERT_EQ(Invalidate(b(), nullptr, &mr->Header), STATUS_SUCCESS);
    EXPECT_THAT(pair().Collect(b().initiator_cq, 1), ElementsAre(Succeeded()));
  }
}

TEST_F(Memory, InvalidateOfAnNdkRegisterMrIsInvalidDeviceRequestInline) {
  auto buf = b().Register(64);
  EXPECT_EQ(Invalidate(b(), nullptr, &buf->Mr()->Header), STATUS_INVALID_DEVICE_REQUEST);
  EXPECT_THAT(pair().Drain(b().initiator_cq), SizeIs(0));
}

TEST_F(Memory, InvalidateOfANonMemoryObjectIsInvalidParameter) {
  EXPECT_EQ(Invalidate(b(), nullptr, &b().pd->Header), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(Invalidate(b(), nullptr, nullptr), STATUS_INVALID_PARAMETER);
}

// ref §4.3 worked example, exactly: FR#1(DEFER) -> SUCCESS; FR#2(DEFER) -> failure; the consumer
// does not post the Send; the provider kicks FR#1; exactly one completion (FR#1), none for FR#2.
TEST_F(Memory, DeferWorkedExample) {
  Pages pages(2);
  NDK_MR* mr1 = NewFrMr(a(), 1, TRUE);
  NDK_MR* mr2 = NewFrMr(a(), 1, TRUE);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  ASSERT_EQ(FastRegister(a(), Ctx(1), mr1, {pages.Page(0)}, 0, 64, base, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  ASSERT_NE(FastRegister(a(), Ctx(2), mr2, {pages.Page(0), pages.Page(1)}, 0, 64, base, NDK_OP_FLAG_DEFER),
            STATUS_SUCCESS);
  EXPECT_THAT(pair().Drain(a().initiator_cq), ElementsAre(IsCompletion(NdkOperationTypeFastRegister, Ctx(1))));
}

// ref §1.4 READ_FENCE on a memory operation: the invalidate of a read's sink waits for the read.
TEST_F(Memory, ReadFenceHoldsAnInvalidateUntilEarlierReadsFinish) {
  Pages pages(1);
  NDK_MR* sink = NewFrMr(a(), 1, FALSE);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  ASSERT_EQ(FastRegister(a(), Ctx(1), sink, {pages.Page(0)}, 0, 64, base, NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
            STATUS_SUCCESS);
  auto remote = b().Register(64);
  std::memset(remote->Data(), 0x3e, 64);
  NDK_SGE s{};
  s.VirtualAddress = pages.Data();
  s.Length = 64;
  s.MemoryRegionToken = LocalToken(sink);
  ASSERT_EQ(a().Read(Ctx(2), {&s, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(Invalidate(a(), Ctx(5), &sink->Header, NDK_OP_FLAG_READ_FENCE), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 3),
              ElementsAre(IsCompletion(NdkOperationTypeFastRegister, Ctx(1)), IsCompletion(NdkOperationTypeRead, Ctx(2)),
                          IsCompletion(NdkOperationTypeInvalidate, Ctx(5))));
  EXPECT_EQ(std::to_integer<int>(pages.Data()[63]), 0x3e);
}

// ---- privileged token and LAMs (ref §2.2, §2.3, §3.15) ---------------------------------------------

TEST_F(Memory, BuildLamReportsPageSizePagesAndTheFbo) {
  Pages pages(3);
  MDL mdl;
  MmInitializeMdl(&mdl, pages.Data(100), 2 * PAGE_SIZE);  // touches 3 pages
  alignas(8) std::byte storage[64];
  auto* lam = reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(storage);
  ULONG size = sizeof storage;
  ULONG fbo = 0;
  ASSERT_EQ(a().adapter->Dispatch->NdkBuildLAM(a().adapter, &mdl, 2 * PAGE_SIZE, nullptr, nullptr, lam, &size, &fbo),
            STATUS_SUCCESS);
  EXPECT_EQ(lam->AdapterPageCount, 3u);
  EXPECT_EQ(fbo, 100u);
  EXPECT_EQ(size, offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + 3 * sizeof(NDK_LOGICAL_ADDRESS));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(lam->AdapterPageArray[i].QuadPart, pages.Page(i).QuadPart);
  a().adapter->Dispatch->NdkReleaseLAM(a().adapter, lam);
}

TEST_F(Memory, BuildLamWithATooSmallBufferReportsTheRequiredSize) {
  Pages pages(2);
  MDL mdl;
  MmInitializeMdl(&mdl, pages.Data(), 2 * PAGE_SIZE);
  NDK_LOGICAL_ADDRESS_MAPPING lam{};
  ULONG size = sizeof lam;  // room for one page
  ULONG fbo = 0;
  EXPECT_EQ(a().adapter->Dispatch->NdkBuildLAM(a().adapter, &mdl, 2 * PAGE_SIZE, nullptr, nullptr, &lam, &size, &fbo),
            STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(size, offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + 2 * sizeof(NDK_LOGICAL_ADDRESS));
}

TEST_F(Memory, BuildLamOfANonContiguousMdlIsInvalidParameter) {
  Pages pages(3);
  MDL first;
  MDL second;
  MmInitializeMdl(&first, pages.Data(), PAGE_SIZE);
  MmInitializeMdl(&second, pages.Data(2 * PAGE_SIZE), PAGE_SIZE);  // a hole of one page
  first.Next = &second;
  alignas(8) std::byte storage[64];
  ULONG size = sizeof storage;
  ULONG fbo = 0;
  EXPECT_EQ(a().adapter->Dispatch->NdkBuildLAM(a().adapter, &first, 2 * PAGE_SIZE, nullptr, nullptr,
                                                reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(storage), &size, &fbo),
            STATUS_INVALID_PARAMETER);
}

TEST_F(Memory, PrivilegedTokenIsOnePerPd) {
  UINT32 t1 = 0;
  UINT32 t2 = 0;
  a().pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(a().pd, &t1);
  a().pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(a().pd, &t2);
  EXPECT_NE(t1, 0u);
  EXPECT_EQ(t1, t2);
}

TEST_F(Memory, PrivilegedTokenSgesCarryLogicalAddresses) {
  Pages pages(1);
  std::memset(pages.Data(), 0x71, PAGE_SIZE);
  MDL mdl;
  MmInitializeMdl(&mdl, pages.Data(200), 64);
  NDK_LOGICAL_ADDRESS_MAPPING lam{};
  ULONG size = sizeof lam;
  ULONG fbo = 0;
  ASSERT_EQ(a().adapter->Dispatch->NdkBuildLAM(a().adapter, &mdl, 64, nullptr, nullptr, &lam, &size, &fbo),
            STATUS_SUCCESS);
  UINT32 privileged = 0;
  a().pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(a().pd, &privileged);
  auto sink = b().Register(64);
  const NDK_SGE r = sink->Sge(0, 64);
  ASSERT_EQ(b().Receive(Ctx(3), {&r, 1}), STATUS_SUCCESS);
  NDK_SGE s{};
  s.LogicalAddress.QuadPart = lam.AdapterPageArray[0].QuadPart + fbo;
  s.Length = 64;
  s.MemoryRegionToken = privileged;
  ASSERT_EQ(a().Send(Ctx(4), {&s, 1}), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(b().receive_cq, 1), ElementsAre(Succeeded()));
  EXPECT_EQ(std::to_integer<int>(sink->Data()[0]), 0x71);
}

TEST_F(Memory, PrivilegedTokenNeverGrantsRemoteAccess) {
  Pages pages(1);
  UINT32 privileged = 0;
  b().pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(b().pd, &privileged);
  auto src = a().Register(64);
  EXPECT_THAT(WriteTo(*src, reinterpret_cast<std::uint64_t>(pages.Data()), privileged, 8),
              HasStatus(STATUS_ACCESS_VIOLATION));
  EXPECT_EQ(std::to_integer<int>(pages.Data()[0]), 0);
}

// ---- read-local-invalidate (ref §1.4, §1.7) --------------------------------------------------------

TEST_F(Memory, AdapterReportsReadLocalInvalidateFromTheProfile) {
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  ASSERT_EQ(a().adapter->Dispatch->NdkQueryAdapterInfo(a().adapter, &info, &size), STATUS_SUCCESS);
  EXPECT_NE(info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED, 0u);
  EXPECT_NE(info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, 0u);
}

TEST_F(Memory, ReadLocalInvalidateInvalidatesTheFirstLocalSgeToken) {
  Pages pages(1);
  NDK_MR* sink = NewFrMr(a(), 1, FALSE);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  ASSERT_EQ(FastRegister(a(), nullptr, sink, {pages.Page(0)}, 0, PAGE_SIZE, base, NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
            STATUS_SUCCESS);
  auto remote = b().Register(64);
  std::memset(remote->Data(), 0x2c, 64);
  NDK_SGE s{};
  s.VirtualAddress = pages.Data();
  s.Length = 64;
  s.MemoryRegionToken = LocalToken(sink);
  ASSERT_EQ(a().Read(Ctx(2), {&s, 1}, remote->Address(), remote->RemoteToken(), NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE),
            STATUS_SUCCESS);
  ASSERT_THAT(pair().Collect(a().initiator_cq, 2), ElementsAre(Succeeded(), IsCompletion(NdkOperationTypeRead, Ctx(2))));
  EXPECT_EQ(std::to_integer<int>(pages.Data()[63]), 0x2c);
  // The token is already invalid: invalidating it again is a malformed request (ref §3.8).
  ASSERT_EQ(Invalidate(a(), Ctx(5), &sink->Header), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(HasStatus(STATUS_INVALID_DEVICE_REQUEST)));
}

class MemoryWithoutReadLocalInvalidate : public Memory {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c = Memory::Config();
    c.fabric.profile.read_local_invalidate = false;
    return c;
  }
};

TEST_F(MemoryWithoutReadLocalInvalidate, TheFlagIsIgnoredAndNotReported) {
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  ASSERT_EQ(a().adapter->Dispatch->NdkQueryAdapterInfo(a().adapter, &info, &size), STATUS_SUCCESS);
  EXPECT_EQ(info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED, 0u);
  Pages pages(1);
  NDK_MR* sink = NewFrMr(a(), 1, FALSE);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  ASSERT_EQ(FastRegister(a(), nullptr, sink, {pages.Page(0)}, 0, PAGE_SIZE, base,
                         NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_SILENT_SUCCESS),
            STATUS_SUCCESS);
  auto remote = b().Register(64);
  NDK_SGE s{};
  s.VirtualAddress = pages.Data();
  s.Length = 64;
  s.MemoryRegionToken = LocalToken(sink);
  ASSERT_EQ(a().Read(nullptr, {&s, 1}, remote->Address(), remote->RemoteToken(), NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE),
            STATUS_SUCCESS);
  ASSERT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(Succeeded()));
  ASSERT_EQ(Invalidate(a(), Ctx(5), &sink->Header), STATUS_SUCCESS);  // still valid: this succeeds
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(IsCompletion(NdkOperationTypeInvalidate, Ctx(5))));
}

// ---- read sinks (ref §1.5, §1.7, §3.3) ----------------------------------------------------------------

TEST_F(Memory, ReadSinkFlagsAreToleratedWhenNotRequired) {
  auto sink = a().Register(64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK);
  auto plain = a().Register(64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  auto remote = b().Register(64);
  const NDK_SGE s[2] = {sink->Sge(0, 32), plain->Sge(0, 32)};
  ASSERT_EQ(a().Read(nullptr, {s, 2}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(Succeeded()));
  Pages pages(1);
  NDK_MR* fr = NewFrMr(a(), 1, FALSE);
  EXPECT_EQ(FastRegister(a(), nullptr, fr, {pages.Page(0)}, 0, 64, static_cast<std::uint64_t>(pages.Page(0).QuadPart),
                         NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_RDMA_READ_SINK),
            STATUS_SUCCESS);
}

class MemoryOnIWarp : public Memory {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c = Memory::Config();
    c.fabric.profile = profiles::kIWarp;
    return c;
  }
};

TEST_F(MemoryOnIWarp, ReadSinkNotRequiredIsNotReported) {
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  ASSERT_EQ(a().adapter->Dispatch->NdkQueryAdapterInfo(a().adapter, &info, &size), STATUS_SUCCESS);
  EXPECT_EQ(info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, 0u);
}

TEST_F(MemoryOnIWarp, ReadIntoMemoryWithoutTheReadSinkRightFails) {
  auto sink = a().Register(64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  auto remote = b().Register(64);
  const NDK_SGE s = sink->Sge(0, 64);
  ASSERT_EQ(a().Read(nullptr, {&s, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(HasStatus(STATUS_ACCESS_VIOLATION)));
}

TEST_F(MemoryOnIWarp, ReadIntoAReadSinkMrSucceeds) {
  auto sink = a().Register(64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK);
  auto remote = b().Register(64);
  std::memset(remote->Data(), 0x1f, 64);
  const NDK_SGE s = sink->Sge(0, 64);
  ASSERT_EQ(a().Read(nullptr, {&s, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(Succeeded()));
  EXPECT_EQ(std::to_integer<int>(sink->Data()[0]), 0x1f);
}

TEST_F(MemoryOnIWarp, ReadIntoAFastRegisteredReadSinkSucceeds) {
  Pages pages(1);
  NDK_MR* fr = NewFrMr(a(), 1, FALSE);
  const auto base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
  ASSERT_EQ(FastRegister(a(), nullptr, fr, {pages.Page(0)}, 0, 64, base,
                         NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_RDMA_READ_SINK | NDK_OP_FLAG_SILENT_SUCCESS),
            STATUS_SUCCESS);
  auto remote = b().Register(64);
  NDK_SGE s{};
  s.VirtualAddress = pages.Data();
  s.Length = 64;
  s.MemoryRegionToken = LocalToken(fr);
  ASSERT_EQ(a().Read(nullptr, {&s, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(Succeeded()));
}

TEST_F(MemoryOnIWarp, PrivilegedTokenBuffersAreNotReadSinks) {
  Pages pages(1);
  UINT32 privileged = 0;
  a().pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(a().pd, &privileged);
  auto remote = b().Register(64);
  NDK_SGE s{};
  s.VirtualAddress = pages.Data();
  s.Length = 64;
  s.MemoryRegionToken = privileged;
  ASSERT_EQ(a().Read(nullptr, {&s, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  EXPECT_THAT(pair().Collect(a().initiator_cq, 1), ElementsAre(HasStatus(STATUS_ACCESS_VIOLATION)));
}

}  // namespace
}  // namespace ndksim::conformance

namespace ndksim::conformance {
namespace {

// The opt-in profile capability: every fast register installs a new key byte.
class MemoryWithKeyRotation : public Memory {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c = Memory::Config();
    c.fabric.profile.rotate_fast_register_keys = true;
    return c;
  }
  // An FR MR of b registered, invalidated and registered again at `base`; `first` is the token of
  // its first registration.
  NDK_MR* RegisteredTwice(Pages& pages, UINT32* first, std::uint64_t* base) {
    NDK_MR* mr = RegisteredFrMr(pages, {pages.Page(0)}, 0, PAGE_SIZE);
    *first = Token(mr);
    EXPECT_EQ(Invalidate(b(), nullptr, &mr->Header), STATUS_SUCCESS);
    *base = static_cast<std::uint64_t>(pages.Page(0).QuadPart);
    EXPECT_EQ(FastRegister(b(), nullptr, mr, {pages.Page(0)}, 0, 64, *base, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
              STATUS_SUCCESS);
    EXPECT_THAT(pair().Collect(b().initiator_cq, 2), ElementsAre(Succeeded(), Succeeded()));
    return mr;
  }
};

TEST_F(MemoryWithKeyRotation, FastRegisterAgainAfterInvalidateGivesANewToken) {
  Pages pages(1);
  UINT32 first = 0;
  std::uint64_t base = 0;
  NDK_MR* mr = RegisteredTwice(pages, &first, &base);
  EXPECT_NE(Token(mr), first);
  auto src = a().Register(64);
  EXPECT_THAT(WriteTo(*src, base, Token(mr), 8), Succeeded());
}

TEST_F(MemoryWithKeyRotation, TheOldTokenNoLongerReachesTheNewRegistration) {
  Pages pages(1);
  UINT32 first = 0;
  std::uint64_t base = 0;
  RegisteredTwice(pages, &first, &base);
  auto src = a().Register(64);
  EXPECT_THAT(WriteTo(*src, base, first, 8), HasStatus(STATUS_ACCESS_VIOLATION));
}

}  // namespace
}  // namespace ndksim::conformance
