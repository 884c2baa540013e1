// SPDX-License-Identifier: MIT
// Regression tests for what fuzzing and review of the NDK paths found (docs/reliability.md): NIC
// table entries reused while something still names the old entry, memory operations racing their
// objects, posts on a QP in error, and the order of a responder's answers. Each test is named
// after the behaviour the bug broke.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "conformance/cm_fixture.h"
#include "hwmodel/context_table.h"
#include "hwmodel/nic.h"
#include "sim/node_access.h"
#include "provider/cm_protocol.h"
#include "ndksim/harness.h"

namespace ndksim::conformance {
namespace {

constexpr USHORT kPort = 4800;

FabricConfig SmallTables(std::uint32_t qps, std::uint32_t cqs) {
  FabricConfig c = FunctionalFabric();
  c.profile.max_qps = qps;
  c.profile.max_cqs = cqs;
  return c;
}

// Calls of a CQ notification callback.
struct Notified {
  int calls = 0;
  static void Count(PVOID ctx, NTSTATUS) { ++static_cast<Notified*>(ctx)->calls; }
};

std::vector<NDK_RESULT_EX> PollAll(NDK_CQ* cq) {
  std::vector<NDK_RESULT_EX> out;
  NDK_RESULT_EX r[16];
  for (;;) {
    const ULONG n = cq->Dispatch->NdkGetCqResultsEx(cq, r, 16);
    if (n == 0) return out;
    out.insert(out.end(), r, r + n);
  }
}

void Close(NDK_CQ* cq) { ASSERT_EQ(cq->Dispatch->NdkCloseCq(&cq->Header, nullptr, nullptr), STATUS_SUCCESS); }
void Close(NDK_QP* qp) { ASSERT_EQ(qp->Dispatch->NdkCloseQp(&qp->Header, nullptr, nullptr), STATUS_SUCCESS); }
void Close(NDK_CONNECTOR* c) {
  ASSERT_EQ(c->Dispatch->NdkCloseConnector(&c->Header, nullptr, nullptr), STATUS_SUCCESS);
}

// One QP slot and two CQ slots per node, so that a closed QP's or CQ's number is handed out again
// at once (node a's side CQ takes the first CQ slot).
class RecycledEntries : public TwoNodes {
 protected:
  RecycledEntries() : TwoNodes(SmallTables(1, 2)) {}

  NDK_CQ* NewCq(Side& side, Notified* notified) {
    NDK_CQ* cq = nullptr;
    EXPECT_EQ(side.D()->NdkCreateCq(side.adapter, 16, Notified::Count, notified, nullptr, nullptr, nullptr, &cq),
              STATUS_SUCCESS);
    return cq;
  }
  static NDK_QP* NewQpOn(Side& side, NDK_CQ* cq) {
    NDK_QP* qp = nullptr;
    EXPECT_EQ(side.pd->Dispatch->NdkCreateQp(side.pd, cq, cq, nullptr, 8, 8, 1, 1, 0, nullptr, nullptr, &qp),
              STATUS_SUCCESS);
    return qp;
  }
};

TEST_F(RecycledEntries, AnArmOfAClosedCqDoesNotNotifyTheCqThatReusesItsNumber) {
  Notified first;
  Notified second;
  NDK_CQ* cq1 = NewCq(a_, &first);
  cq1->Dispatch->NdkArmCq(cq1, NDK_CQ_NOTIFY_ANY);
  Close(cq1);  // the arm's doorbell has not reached the NIC yet
  NDK_CQ* cq2 = NewCq(a_, &second);
  NDK_QP* qp = NewQpOn(a_, cq2);
  ASSERT_EQ(qp->Dispatch->NdkReceive(qp, nullptr, nullptr, 0), STATUS_SUCCESS);
  qp->Dispatch->NdkFlush(qp);
  fabric_.RunUntilIdle();

  EXPECT_EQ(PollAll(cq2).size(), 1u);  // the flushed receive
  EXPECT_EQ(second.calls, 0);          // cq2 was never armed
  EXPECT_EQ(first.calls, 0);           // cq1 is closed
}

TEST_F(RecycledEntries, ASendDoorbellOfAClosedQpDoesNotReachTheQpThatReusesItsNumber) {
  NDK_LISTENER* listener = ListenOnB(kPort);
  ASSERT_NE(listener, nullptr);
  RegisteredBuffer source(a_.pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  RegisteredBuffer target(b_.pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
  NDK_SGE sge = source.Sge(0, 8);

  NDK_QP* qa = a_.NewQp();
  NDK_QP* qb = b_.NewQp();
  NDK_CONNECTOR* ca = nullptr;
  NDK_CONNECTOR* cb = nullptr;
  Establish(kPort, qa, qb, &ca, &cb);
  ASSERT_EQ(qa->Dispatch->NdkWrite(qa, nullptr, &sge, 1, target.Address(), target.RemoteToken(), 0),
            STATUS_SUCCESS);
  // Everything of the first connection closes before the fabric runs: the write's doorbell is
  // still on its way to the NIC when the next QP takes the same QPN.
  Close(ca);
  Close(cb);
  Close(qa);
  Close(qb);

  NDK_QP* qa2 = a_.NewQp();
  NDK_QP* qb2 = b_.NewQp();
  Establish(kPort, qa2, qb2, &ca, &cb);
  (void)PollAll(a_.cq);
  int context = 0;
  ASSERT_EQ(qa2->Dispatch->NdkWrite(qa2, &context, &sge, 1, target.Address(), target.RemoteToken(), 0),
            STATUS_SUCCESS);
  std::vector<NDK_RESULT_EX> results;
  fabric_.RunUntil([&] {
    for (const NDK_RESULT_EX& r : PollAll(a_.cq)) results.push_back(r);
    return !results.empty();
  });
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].Status, STATUS_SUCCESS);
  EXPECT_EQ(results[0].RequestContext, &context);
}

TEST_F(RecycledEntries, AnUnpolledCqeOfAClosedQpIsNotDeliveredForTheQpThatReusesItsNumber) {
  Notified unused;
  int first = 0;
  int second = 0;
  NDK_QP* q1 = a_.NewQp();  // on the side's CQ
  ASSERT_EQ(q1->Dispatch->NdkReceive(q1, &first, nullptr, 0), STATUS_SUCCESS);
  q1->Dispatch->NdkFlush(q1);
  fabric_.RunUntilIdle();  // q1's CANCELLED receive waits, unpolled, on the side's CQ
  Close(q1);

  NDK_CQ* cq2 = NewCq(a_, &unused);
  NDK_QP* q2 = NewQpOn(a_, cq2);  // takes q1's QPN slot
  ASSERT_EQ(q2->Dispatch->NdkReceive(q2, &second, nullptr, 0), STATUS_SUCCESS);

  EXPECT_TRUE(PollAll(a_.cq).empty());  // q1's CQE has nobody to go to
  fabric_.RunUntilIdle();
  EXPECT_TRUE(PollAll(cq2).empty());    // q2's receive is still posted
}


// ---- the NIC's context tables ---------------------------------------------------------------------

struct Entry {
  int value = 0;
};

TEST(ContextTable, AStaleIdentifierFindsNothingOnceItsSlotIsReused) {
  hw::ContextTable<Entry> table(0x40, 1);
  std::uint32_t old_id = 0;
  ASSERT_NE(table.Allocate(&old_id), nullptr);
  ASSERT_TRUE(table.Free(old_id));
  std::uint32_t new_id = 0;
  Entry* reused = table.Allocate(&new_id);
  ASSERT_NE(reused, nullptr);
  EXPECT_EQ(table.Layout().Slot(new_id), table.Layout().Slot(old_id));
  EXPECT_NE(new_id, old_id);
  EXPECT_EQ(table.Find(old_id), nullptr);
  EXPECT_EQ(table.Find(new_id), reused);
  EXPECT_FALSE(table.Free(old_id));
}

TEST(ContextTable, TheFirstGenerationKeepsTheClassicNumbers) {
  hw::ContextTable<Entry> table(0x40, 4);
  std::uint32_t id = 0;
  ASSERT_NE(table.Allocate(&id), nullptr);
  EXPECT_EQ(id, 0x40u);
  ASSERT_NE(table.Allocate(&id), nullptr);
  EXPECT_EQ(id, 0x41u);
}

TEST(ContextTable, FreedSlotsAreReusedLeastRecentlyFreedFirst) {
  hw::ContextTable<Entry> table(1, 3);
  std::uint32_t a = 0, b = 0, c = 0;
  ASSERT_NE(table.Allocate(&a), nullptr);
  ASSERT_NE(table.Allocate(&b), nullptr);
  ASSERT_NE(table.Allocate(&c), nullptr);
  std::uint32_t none = 0;
  EXPECT_EQ(table.Allocate(&none), nullptr);  // full
  table.Free(b);
  table.Free(a);
  std::uint32_t next = 0;
  ASSERT_NE(table.Allocate(&next), nullptr);
  EXPECT_EQ(table.Layout().Slot(next), table.Layout().Slot(b));
}

TEST(ContextTable, IdentifiersStayBelowBit31AtTheLargestTable) {
  const hw::IdLayout layout = hw::IdLayout::For(0x40, (1u << 23) - 1);
  EXPECT_EQ(layout.number_bits, 24u);
  EXPECT_LT(layout.Make((1u << 23) - 2, 0xFFFFFFFFu), 1u << 31);
}

// ---- memory operations racing their objects ------------------------------------------------------

// Page-aligned host pages, for fast registers (logical address = host address in one process).
class Pages {
 public:
  explicit Pages(std::size_t n) : data_(static_cast<std::byte*>(std::aligned_alloc(PAGE_SIZE, n * PAGE_SIZE))) {
    std::memset(data_, 0, n * PAGE_SIZE);
  }
  ~Pages() { std::free(data_); }
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  std::byte* At(std::size_t i) const { return data_ + i * PAGE_SIZE; }
  NDK_LOGICAL_ADDRESS Logical(std::size_t i) const {
    NDK_LOGICAL_ADDRESS a{};
    a.QuadPart = static_cast<decltype(a.QuadPart)>(reinterpret_cast<std::uintptr_t>(At(i)));
    return a;
  }
  bool Zero(std::size_t i) const {
    for (std::size_t b = 0; b < PAGE_SIZE; ++b) {
      if (At(i)[b] != std::byte{0}) return false;
    }
    return true;
  }

 private:
  std::byte* data_;
};

constexpr ULONG kRemoteWriteFr = NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;

NDK_MR* NewFrMr(NDK_PD* pd, ULONG pages, bool remote) {
  NDK_MR* mr = nullptr;
  EXPECT_EQ(pd->Dispatch->NdkCreateMr(pd, TRUE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  EXPECT_EQ(mr->Dispatch->NdkInitializeFastRegisterMr(mr, pages, remote ? TRUE : FALSE, nullptr, nullptr),
            STATUS_SUCCESS);
  return mr;
}

NDK_MW* NewMw(NDK_PD* pd) {
  NDK_MW* mw = nullptr;
  EXPECT_EQ(pd->Dispatch->NdkCreateMw(pd, nullptr, nullptr, &mw), STATUS_SUCCESS);
  return mw;
}

// Fast-registers page `page` of `pages` on `mr`, its first byte at the page's own address.
NTSTATUS FastRegisterPage(NDK_QP* qp, void* ctx, NDK_MR* mr, const Pages& pages, std::size_t page, ULONG flags) {
  const NDK_LOGICAL_ADDRESS list[1] = {pages.Logical(page)};
  return qp->Dispatch->NdkFastRegister(qp, ctx, mr, 1, list, 0, PAGE_SIZE, pages.At(page), flags);
}

// Runs until `ctx`'s completion shows up on `cq` (collecting every result on the way).
NDK_RESULT_EX RunUntilCompletion(QpPair& pair, NDK_CQ* cq, void* ctx, std::vector<NDK_RESULT_EX>* seen = nullptr) {
  NDK_RESULT_EX found{};
  found.Status = STATUS_PENDING;
  pair.fabric().RunUntil([&] {
    for (const NDK_RESULT_EX& r : PollAll(cq)) {
      if (seen != nullptr) seen->push_back(r);
      if (r.RequestContext == ctx) found = r;
    }
    return found.Status != STATUS_PENDING;
  });
  return found;
}

// b writes 8 bytes of 0xAB to a's address `address` through `token`; returns the status.
NTSTATUS PeerWrite(QpPair& pair, RegisteredBuffer& source, std::uint64_t address, UINT32 token) {
  std::memset(source.Data(), 0xAB, 8);
  const NDK_SGE sge = source.Sge(0, 8);
  int ctx = 0;
  EXPECT_EQ(pair.b().Write(&ctx, {&sge, 1}, address, token), STATUS_SUCCESS);
  return RunUntilCompletion(pair, pair.b().initiator_cq, &ctx).Status;
}

TEST(MemoryOperations, TwoFastRegistersOfOneMrInFlightEachMapTheirOwnPages) {
  QpPair pair;
  Pages pages(2);  // P = page 0, Q = page 1
  NDK_MR* mr = NewFrMr(pair.a().pd, 1, /*remote=*/true);
  auto sink = pair.a().Register(1 << 20, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK);
  auto remote = pair.b().Register(1 << 20);
  auto source = pair.b().Register(64);

  // A long read, FR #1 (P), then FR #2 (Q) fenced behind the read: FR #1 executes at once, FR #2
  // only when the read is done, and both were posted before either executed.
  const NDK_SGE read_sge = sink->Sge(0, 1 << 20);
  int read_ctx = 0;
  int fr1_ctx = 0;
  int fr2_ctx = 0;
  ASSERT_EQ(pair.a().Read(&read_ctx, {&read_sge, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(FastRegisterPage(pair.a().qp, &fr1_ctx, mr, pages, 0, kRemoteWriteFr), STATUS_SUCCESS);
  const UINT32 token1 = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
  ASSERT_EQ(FastRegisterPage(pair.a().qp, &fr2_ctx, mr, pages, 1, kRemoteWriteFr | NDK_OP_FLAG_READ_FENCE),
            STATUS_SUCCESS);

  // FR #1 executes right behind the read request; the read's megabyte takes tens of microseconds.
  pair.fabric().RunFor(Microseconds(5));
  ASSERT_TRUE(PollAll(pair.a().initiator_cq).empty()) << "the read and FR #2 must still be in flight";
  // The peer writes through FR #1's token while FR #2 waits: the bytes land in P, not Q.
  EXPECT_EQ(PeerWrite(pair, *source, reinterpret_cast<std::uint64_t>(pages.At(0)), token1), STATUS_SUCCESS);
  EXPECT_EQ(pages.At(0)[0], std::byte{0xAB});
  EXPECT_TRUE(pages.Zero(1));
  std::vector<NDK_RESULT_EX> seen;
  EXPECT_EQ(RunUntilCompletion(pair, pair.a().initiator_cq, &fr2_ctx, &seen).Status, STATUS_SUCCESS);
  ASSERT_EQ(seen.size(), 3u);  // the read, FR #1, FR #2, in posting order
  EXPECT_EQ(seen[0].RequestContext, &read_ctx);
  EXPECT_EQ(seen[1].RequestContext, &fr1_ctx);
  mr->Dispatch->NdkCloseMr(&mr->Header, nullptr, nullptr);
}

TEST(MemoryOperations, AFastRegisterQueuedWhenItsMrIsReinitialisedDoesNotValidateTheMrThatReusesItsEntry) {
  QpPair pair;
  const QpPair::ExtraQps second = pair.AddConnectedQps();
  Pages pages(1);
  auto source = pair.b().Register(64);
  NDK_MR* first = NewFrMr(pair.a().pd, 1, /*remote=*/true);

  // A fast register of `first`, deferred: it waits in the send queue.
  int fr_ctx = 0;
  ASSERT_EQ(FastRegisterPage(second.a, &fr_ctx, first, pages, 0, kRemoteWriteFr | NDK_OP_FLAG_DEFER),
            STATUS_SUCCESS);
  // Re-initialising `first` frees its protection entry; `other` takes it and is never registered.
  ASSERT_EQ(first->Dispatch->NdkInitializeFastRegisterMr(first, 1, TRUE, nullptr, nullptr), STATUS_SUCCESS);
  NDK_MR* other = NewFrMr(pair.a().pd, 1, /*remote=*/true);
  const UINT32 never_registered = other->Dispatch->NdkGetRemoteTokenFromMr(other);

  // A post without DEFER rings the doorbell for the queued fast register.
  int kick_ctx = 0;
  ASSERT_EQ(second.a->Dispatch->NdkInvalidate(second.a, &kick_ctx, &other->Header, 0), STATUS_SUCCESS);
  EXPECT_NE(RunUntilCompletion(pair, pair.a().initiator_cq, &fr_ctx).Status, STATUS_SUCCESS);

  // The peer writes through `other`'s token on the first connection: nothing grants it.
  EXPECT_NE(PeerWrite(pair, *source, reinterpret_cast<std::uint64_t>(pages.At(0)), never_registered), STATUS_SUCCESS);
  EXPECT_TRUE(pages.Zero(0));
  first->Dispatch->NdkCloseMr(&first->Header, nullptr, nullptr);
  other->Dispatch->NdkCloseMr(&other->Header, nullptr, nullptr);
}

TEST(MemoryOperations, ABindQueuedWhenItsWindowIsClosedDoesNotBindTheWindowThatReusesItsEntry) {
  QpPair pair;
  const QpPair::ExtraQps second = pair.AddConnectedQps();
  auto target = pair.a().Register(64);
  auto source = pair.b().Register(64);
  NDK_MW* closed = NewMw(pair.a().pd);

  int bind_ctx = 0;
  ASSERT_EQ(second.a->Dispatch->NdkBind(second.a, &bind_ctx, target->Mr(), closed, target->Data(), 64,
                                        NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_DEFER),
            STATUS_SUCCESS);
  closed->Dispatch->NdkCloseMw(&closed->Header, nullptr, nullptr);
  NDK_MW* unbound = NewMw(pair.a().pd);  // takes the closed window's entry
  const UINT32 unbound_token = unbound->Dispatch->NdkGetRemoteTokenFromMw(unbound);

  int kick_ctx = 0;
  ASSERT_EQ(second.a->Dispatch->NdkInvalidate(second.a, &kick_ctx, &unbound->Header, 0), STATUS_SUCCESS);
  EXPECT_NE(RunUntilCompletion(pair, pair.a().initiator_cq, &bind_ctx).Status, STATUS_SUCCESS);

  EXPECT_NE(PeerWrite(pair, *source, target->Address(), unbound_token), STATUS_SUCCESS);
  EXPECT_EQ(target->Data()[0], std::byte{0});
  unbound->Dispatch->NdkCloseMw(&unbound->Header, nullptr, nullptr);
}

TEST(MemoryOperations, AnMrStaysOpenWhileAFailedRebindLeftTheWindowInsideIt) {
  QpPair pair;
  const QpPair::ExtraQps second = pair.AddConnectedQps();
  // mr1 is closed by the test itself, so it is not a RegisteredBuffer.
  std::vector<std::byte> storage1(64);
  MDL mdl1{};
  MmInitializeMdl(&mdl1, storage1.data(), storage1.size());
  NDK_MR* mr1 = nullptr;
  ASSERT_EQ(pair.a().pd->Dispatch->NdkCreateMr(pair.a().pd, FALSE, nullptr, nullptr, &mr1), STATUS_SUCCESS);
  ASSERT_EQ(mr1->Dispatch->NdkRegisterMr(mr1, &mdl1, storage1.size(), NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, nullptr),
            STATUS_SUCCESS);
  auto mr2 = pair.a().Register(64);
  NDK_MW* mw = NewMw(pair.a().pd);

  int bind1 = 0;
  ASSERT_EQ(second.a->Dispatch->NdkBind(second.a, &bind1, mr1, mw, storage1.data(), 64, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
            STATUS_SUCCESS);
  ASSERT_EQ(RunUntilCompletion(pair, pair.a().initiator_cq, &bind1).Status, STATUS_SUCCESS);
  // The rebind to mr2 waits; mr2 is deregistered before it executes, so it fails and the window
  // stays inside mr1.
  int bind2 = 0;
  ASSERT_EQ(second.a->Dispatch->NdkBind(second.a, &bind2, mr2->Mr(), mw, mr2->Data(), 64,
                                        NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_DEFER),
            STATUS_SUCCESS);
  ASSERT_EQ(mr2->Mr()->Dispatch->NdkDeregisterMr(mr2->Mr(), nullptr, nullptr), STATUS_SUCCESS);
  int kick = 0;
  ASSERT_EQ(second.a->Dispatch->NdkInvalidate(second.a, &kick, &mw->Header, NDK_OP_FLAG_SILENT_SUCCESS),
            STATUS_SUCCESS);
  EXPECT_NE(RunUntilCompletion(pair, pair.a().initiator_cq, &bind2).Status, STATUS_SUCCESS);

  // mr1's close waits for the window (ref §4.4 MR -> MW): the NIC still maps it inside mr1.
  Closed closed;
  EXPECT_EQ(mr1->Dispatch->NdkCloseMr(&mr1->Header, Closed::Done, &closed), STATUS_PENDING);
  pair.fabric().RunUntilIdle();
  EXPECT_EQ(closed.calls, 0);
  mw->Dispatch->NdkCloseMw(&mw->Header, nullptr, nullptr);
  pair.fabric().RunUntilIdle();
  EXPECT_EQ(closed.calls, 1);
}

// ---- the error state --------------------------------------------------------------------------------

// Posts a write of 8 bytes from a to b with `flags`; the status of the post.
NTSTATUS PostWrite(QpPair& pair, RegisteredBuffer& source, RegisteredBuffer& target, void* ctx, ULONG flags) {
  const NDK_SGE sge = source.Sge(0, 8);
  return pair.a().Write(ctx, {&sge, 1}, target.Address(), target.RemoteToken(), flags);
}

// Runs a's QP dry: the only completion is `ctx`'s, flushed.
void ExpectOnlyCancelled(QpPair& pair, void* ctx) {
  const std::vector<NDK_RESULT_EX> results = pair.Drain(pair.a().initiator_cq);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].Status, STATUS_CANCELLED);
  EXPECT_EQ(results[0].RequestContext, ctx);
}

TEST(ErrorState, ADeferredPostOnAQpAlreadyInErrorCompletesWithTheNextFlush) {
  QpPair pair;
  auto source = pair.a().Register(64);
  auto target = pair.b().Register(64);
  pair.a().qp->Dispatch->NdkFlush(pair.a().qp);
  pair.fabric().RunUntilIdle();

  int ctx = 0;
  ASSERT_EQ(PostWrite(pair, *source, *target, &ctx, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  pair.a().qp->Dispatch->NdkFlush(pair.a().qp);
  ExpectOnlyCancelled(pair, &ctx);
}

TEST(ErrorState, APostWhoseDoorbellWasLostOnAQpInErrorCompletesWithTheNextFlush) {
  QpPair pair;
  auto source = pair.a().Register(64);
  auto target = pair.b().Register(64);
  pair.a().qp->Dispatch->NdkFlush(pair.a().qp);
  pair.fabric().RunUntilIdle();
  FaultRule lose;
  lose.action = FaultAction::kLose;
  pair.fabric().AddFault(lose);

  int ctx = 0;
  ASSERT_EQ(PostWrite(pair, *source, *target, &ctx, 0), STATUS_SUCCESS);
  pair.fabric().RunUntilIdle();
  EXPECT_TRUE(PollAll(pair.a().initiator_cq).empty());  // the doorbell never arrived
  pair.a().qp->Dispatch->NdkFlush(pair.a().qp);
  ExpectOnlyCancelled(pair, &ctx);
}

TEST(ErrorState, ADeferredPostAfterAnErrorCompletionCompletesWithTheNextFlush) {
  QpPair pair;
  auto source = pair.a().Register(64);
  auto target = pair.b().Register(64);
  // A write through a token the peer never registered fails and puts the QP in error.
  int bad = 0;
  const NDK_SGE sge = source->Sge(0, 8);
  ASSERT_EQ(pair.a().Write(&bad, {&sge, 1}, target->Address(), target->RemoteToken() ^ 0x100u), STATUS_SUCCESS);
  ASSERT_NE(RunUntilCompletion(pair, pair.a().initiator_cq, &bad).Status, STATUS_SUCCESS);

  int ctx = 0;
  ASSERT_EQ(PostWrite(pair, *source, *target, &ctx, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  pair.a().qp->Dispatch->NdkFlush(pair.a().qp);
  ExpectOnlyCancelled(pair, &ctx);
}

// ---- the order of a responder's answers -------------------------------------------------------------

TEST(ResponderOrder, AReadCompletesWithItsDataBeforeALaterWriteIsRefused) {
  QpPair pair;
  auto sink = pair.a().Register(64 * 1024, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK);
  auto source = pair.a().Register(64);
  auto remote = pair.b().Register(64 * 1024, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ);
  for (std::size_t i = 0; i < remote->Size(); ++i) remote->Data()[i] = static_cast<std::byte>(i * 7);

  int read_ctx = 0;
  int write_ctx = 0;
  const NDK_SGE read_sge = sink->Sge(0, 64 * 1024);
  const NDK_SGE write_sge = source->Sge(0, 8);
  ASSERT_EQ(pair.a().Read(&read_ctx, {&read_sge, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  // The region grants no remote write: the peer refuses the write.
  ASSERT_EQ(pair.a().Write(&write_ctx, {&write_sge, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);

  std::vector<NDK_RESULT_EX> results;
  (void)RunUntilCompletion(pair, pair.a().initiator_cq, &write_ctx, &results);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].RequestContext, &read_ctx);
  EXPECT_EQ(results[0].Status, STATUS_SUCCESS);
  EXPECT_EQ(results[1].RequestContext, &write_ctx);
  EXPECT_EQ(results[1].Status, STATUS_ACCESS_VIOLATION);
  EXPECT_EQ(std::memcmp(sink->Data(), remote->Data(), 64 * 1024), 0);
}

// ---- go-back-N -----------------------------------------------------------------------------------------

TEST(ReplayedPsns, ASendAfterAResentReadDoesNotReuseAnAcknowledgedWritesPsn) {
  QpPair pair;
  auto sink = pair.a().Register(64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK);
  auto source = pair.a().Register(64);
  auto remote = pair.b().Register(64);
  auto inbox = pair.b().Register(64);
  // b's first read response is lost: the read is resent after the ACK timeout, behind a write the
  // peer has already acknowledged.
  FaultRule drop;
  drop.action = FaultAction::kDrop;
  drop.match.node = 1;
  drop.match.packet = PacketClass::kReadResponse;
  pair.fabric().AddFault(drop);

  int read_ctx = 0;
  int write_ctx = 0;
  const NDK_SGE read_sge = sink->Sge(0, 8);
  const NDK_SGE write_sge = source->Sge(0, 8);
  ASSERT_EQ(pair.a().Read(&read_ctx, {&read_sge, 1}, remote->Address(), remote->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(pair.a().Write(&write_ctx, {&write_sge, 1}, remote->Address(8), remote->RemoteToken()), STATUS_SUCCESS);
  std::vector<NDK_RESULT_EX> results;
  ASSERT_EQ(RunUntilCompletion(pair, pair.a().initiator_cq, &write_ctx, &results).Status, STATUS_SUCCESS);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].Status, STATUS_SUCCESS);  // the read, after its resend

  // A send posted now takes the next PSN after the write's, and is delivered.
  int receive_ctx = 0;
  const NDK_SGE inbox_sge = inbox->Sge(0, 64);
  ASSERT_EQ(pair.b().Receive(&receive_ctx, {&inbox_sge, 1}), STATUS_SUCCESS);
  std::memset(source->Data(), 0x5A, 8);
  int send_ctx = 0;
  ASSERT_EQ(pair.a().Send(&send_ctx, {&write_sge, 1}), STATUS_SUCCESS);
  EXPECT_EQ(RunUntilCompletion(pair, pair.a().initiator_cq, &send_ctx).Status, STATUS_SUCCESS);
  const NDK_RESULT_EX received = RunUntilCompletion(pair, pair.b().receive_cq, &receive_ctx);
  EXPECT_EQ(received.Status, STATUS_SUCCESS);
  EXPECT_EQ(received.BytesTransferred, 8u);
  EXPECT_EQ(inbox->Data()[0], std::byte{0x5A});
}

// ---- doorbells ---------------------------------------------------------------------------------------

TEST(Doorbells, MoreDoorbellsThanTheFifoHoldsBeforeTheFabricRunsAreAllTaken) {
  QpPairConfig config;
  config.initiator_queue_depth = 16384;
  QpPair pair(config);
  std::vector<NDK_QP*> qps = {pair.a().qp};
  for (int i = 0; i < 4; ++i) qps.push_back(pair.AddConnectedQps().a);
  auto source = pair.a().Register(64);
  auto target = pair.b().Register(64);
  const NDK_SGE sge = source->Sge(0, 8);

  // 5 x 16,384 doorbelled writes, each QP's last one signaled, all before the fabric runs: far
  // more than the lock-free FIFO holds (the legal burst that once aborted the process).
  std::vector<int> contexts(qps.size());
  for (std::size_t q = 0; q < qps.size(); ++q) {
    for (ULONG i = 0; i < 16384; ++i) {
      const bool last = i + 1 == 16384;
      ASSERT_EQ(qps[q]->Dispatch->NdkWrite(qps[q], last ? &contexts[q] : nullptr, &sge, 1, target->Address(),
                                           target->RemoteToken(), last ? 0 : NDK_OP_FLAG_SILENT_SUCCESS),
                STATUS_SUCCESS);
    }
  }
  const std::vector<NDK_RESULT_EX> results = pair.Drain(pair.a().initiator_cq);
  ASSERT_EQ(results.size(), qps.size());
  for (std::size_t q = 0; q < qps.size(); ++q) {
    EXPECT_EQ(results[q].Status, STATUS_SUCCESS);
  }
  EXPECT_EQ(pair.a().node->Counters().doorbells, 5u * 16384u);
}

// ---- notifications ---------------------------------------------------------------------------------

// b armed SOLICITED; a's solicited send on its way to b's posted receive.
struct SolicitedSendInFlight {
  QpPair pair;
  std::unique_ptr<RegisteredBuffer> inbox = pair.b().Register(64);
  std::unique_ptr<RegisteredBuffer> outbox = pair.a().Register(64);
  int receive_ctx = 0;
  int send_ctx = 0;
  TimePoint sent;

  SolicitedSendInFlight() {
    NDK_CQ* cq = pair.b().receive_cq;
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_SOLICITED);
    pair.fabric().RunUntilIdle();
    const NDK_SGE in = inbox->Sge(0, 64);
    const NDK_SGE out = outbox->Sge(0, 8);
    EXPECT_EQ(pair.b().Receive(&receive_ctx, {&in, 1}), STATUS_SUCCESS);
    EXPECT_EQ(pair.a().Send(&send_ctx, {&out, 1}, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT), STATUS_SUCCESS);
    sent = pair.fabric().Now();
  }
};

TEST(Notifications, TwoArmsBeforeACallbackGiveOneCallbackWhateverTheCompletionOvertakes) {
  // When the receive's CQE becomes visible to b.
  Duration flight{};
  {
    SolicitedSendInFlight probe;
    NDK_CQ* cq = probe.pair.b().receive_cq;
    NDK_RESULT_EX r;
    ASSERT_TRUE(probe.pair.fabric().RunUntil([&] { return cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1) == 1; }));
    flight = probe.pair.fabric().Now() - probe.sent;
  }
  // ref §4.2: a second arm before any callback merges with the first (SOLICITED + ANY = ANY): one
  // callback, whether the CQE reaches the NIC's CQ before or after the second arm's doorbell.
  for (std::int64_t early_ns = 0; early_ns <= 1000; early_ns += 25) {
    SolicitedSendInFlight s;
    s.pair.fabric().RunFor(flight - Nanoseconds(early_ns));
    NDK_CQ* cq = s.pair.b().receive_cq;
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
    s.pair.fabric().RunUntilIdle();
    EXPECT_EQ(s.pair.b().cq_notifications, 1) << "second arm " << early_ns << " ns before the CQE";
    EXPECT_EQ(PollAll(cq).size(), 1u);
  }
}

// ---- connection management ---------------------------------------------------------------------------

class ForgedDatagrams : public TwoNodes {};

TEST_F(ForgedDatagrams, AnEmptyDatagramFromAThirdNodeIsDropped) {
  ASSERT_NE(ListenOnB(kPort), nullptr);
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(kPort, &active, &passive);
  Node& rogue = fabric_.AddNode({"c", {"192.0.2.3"}});
  // Under UBSan this once reached memcpy with a null source (the empty payload).
  ASSERT_TRUE(ndksim::sim::NicOf(rogue).SendManagementDatagram({4, {192, 0, 2, 2}}, {}));
  fabric_.RunUntilIdle();
  EXPECT_EQ(b_.disconnects, 0);
  EXPECT_EQ(a_.disconnects, 0);
}

// A well-formed connect request from node c to b's listener at kPort.
provider::CmMessage RequestFrom(Node& c, std::uint16_t private_bytes) {
  provider::CmMessage m;
  m.type = provider::CmType::kReq;
  m.source_node = ndksim::sim::NicOf(c).Id();
  m.source_connection = 1;
  m.source.address = {4, {192, 0, 2, 3}};
  m.source.port = 50000;
  m.destination.address = {4, {192, 0, 2, 2}};
  m.destination.port = kPort;
  m.qpn = 0x40;
  m.inbound_read_limit = 1;
  m.outbound_read_limit = 1;
  m.private_data_length = private_bytes;
  return m;
}

void SendFrom(Node& c, const provider::CmMessage& m, std::size_t corrupt_offset = 0) {
  std::array<std::byte, hw::kManagementPayloadBytes> bytes{};
  const std::size_t n = provider::EncodeCm(m, bytes);
  if (corrupt_offset != 0) bytes[corrupt_offset] = std::byte{0x7F};
  ASSERT_TRUE(ndksim::sim::NicOf(c).SendManagementDatagram(m.destination.address, std::span(bytes).first(n)));
}

TEST_F(ForgedDatagrams, AConnectRequestWithMorePrivateDataThanMaxCallerDataNeverReachesTheListener) {
  ASSERT_NE(ListenOnB(kPort), nullptr);
  Node& c = fabric_.AddNode({"c", {"192.0.2.3"}});
  SendFrom(c, RequestFrom(c, static_cast<std::uint16_t>(fabric_.Profile().max_caller_data + 1)));
  fabric_.RunUntilIdle();
  EXPECT_TRUE(incoming_.empty());
  SendFrom(c, RequestFrom(c, static_cast<std::uint16_t>(fabric_.Profile().max_caller_data)));
  fabric_.RunUntilIdle();
  EXPECT_EQ(incoming_.size(), 1u);  // the same request within the limit does
}

TEST_F(ForgedDatagrams, AConnectRequestWithJunkInAReservedByteIsDropped) {
  ASSERT_NE(ListenOnB(kPort), nullptr);
  Node& c = fabric_.AddNode({"c", {"192.0.2.3"}});
  SendFrom(c, RequestFrom(c, 0), /*corrupt_offset=*/7);  // the header's reserved byte
  SendFrom(c, RequestFrom(c, 0), /*corrupt_offset=*/8 + 4 + 5);  // an IPv4 source's unused byte
  fabric_.RunUntilIdle();
  EXPECT_TRUE(incoming_.empty());
}

TEST_F(ForgedDatagrams, ADisconnectRequestFromAThirdNodeDoesNotEndAConnection) {
  ASSERT_NE(ListenOnB(kPort), nullptr);
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(kPort, &active, &passive);
  Node& rogue = fabric_.AddNode({"c", {"192.0.2.3"}});

  // A DREQ that names a's node and both connectors (each driver's first: id 1), sent by c.
  provider::CmMessage m;
  m.type = provider::CmType::kDreq;
  m.source_node = ndksim::sim::NicOf(*a_.node).Id();
  m.source_connection = 1;
  m.destination_connection = 1;
  m.source.address = {4, {192, 0, 2, 1}};
  m.destination.address = {4, {192, 0, 2, 2}};
  m.destination.port = kPort;
  std::array<std::byte, hw::kManagementPayloadBytes> bytes{};
  const std::size_t n = provider::EncodeCm(m, bytes);
  ASSERT_TRUE(ndksim::sim::NicOf(rogue).SendManagementDatagram(m.destination.address, std::span(bytes).first(n)));
  fabric_.RunUntilIdle();

  EXPECT_EQ(b_.disconnects, 0);  // the fabric says the datagram came from c, not a
  EXPECT_EQ(a_.disconnects, 0);
}

}  // namespace
}  // namespace ndksim::conformance
