// SPDX-License-Identifier: MIT
// The DESIGN.md invariant "no heap allocation on the posting and completion hot paths", checked by
// counting every operator new while a posting or polling call runs. This binary replaces the
// global allocation functions, so it is built apart from the main suite.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "../sanitizers.h"
#include "common/block_recycler.h"
#include "ndksim/testing.h"

namespace {

std::atomic<long> g_allocations{0};
thread_local bool g_counting = false;

void* Allocate(std::size_t bytes, std::size_t alignment) {
  if (g_counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0) bytes = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(bytes)
                : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

// The replaceable allocation functions (the array and nothrow forms forward to these).
void* operator new(std::size_t bytes) { return Allocate(bytes, alignof(std::max_align_t)); }
void* operator new(std::size_t bytes, std::align_val_t a) { return Allocate(bytes, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace ndksim {
namespace {

// Counts the allocations made on this thread while `call` runs.
template <typename Call>
long AllocationsDuring(Call&& call) {
  g_allocations.store(0, std::memory_order_relaxed);
  g_counting = true;
  call();
  g_counting = false;
  return g_allocations.load(std::memory_order_relaxed);
}

void* Ctx(std::uintptr_t n) { return reinterpret_cast<void*>(n); }

constexpr int kPosts = 64;

// A connected pair on the default (timed) profile with registered buffers. Every test first runs
// its calls once untimed-for-allocation, so that one-time growth (a first doorbell, a lazily sized
// table) is not mistaken for a per-call cost, then counts a second round.
class HotPathAllocation : public testing::ConnectedQpPairTest {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c;
    c.fabric.profile = profiles::kConnectX100GbeRoce;
    c.srq_depth = 0;
    return c;
  }
  void SetUp() override {
    ConnectedQpPairTest::SetUp();
    src_ = a().Register(64 * 1024);
    dst_ = b().Register(64 * 1024);
  }
  void TearDown() override {
    src_.reset();
    dst_.reset();
    ConnectedQpPairTest::TearDown();
  }
  NDK_SGE Source(ULONG bytes = 64) const { return src_->Sge(0, bytes); }
  NDK_SGE Sink(ULONG bytes = 64) const { return dst_->Sge(0, bytes); }

  // `kPosts` of each posting call, a's QP to b's buffer (receives on b's QP).
  void Writes(ULONG bytes, ULONG flags = 0, bool chain = false) {  // DEFER on all but the last
    const NDK_SGE sge = Source(bytes);
    NDK_QP* qp = a().qp;
    for (int i = 0; i < kPosts; ++i) {
      const ULONG f = flags | (chain && i + 1 < kPosts ? NDK_OP_FLAG_DEFER : 0);
      EXPECT_EQ(qp->Dispatch->NdkWrite(qp, Ctx(1), &sge, 1, dst_->Address(), dst_->RemoteToken(), f), STATUS_SUCCESS);
    }
  }
  void Reads(ULONG bytes) {
    const NDK_SGE sink = Source(bytes);
    NDK_QP* qp = a().qp;
    for (int i = 0; i < kPosts; ++i) {
      EXPECT_EQ(qp->Dispatch->NdkRead(qp, Ctx(2), &sink, 1, dst_->Address(), dst_->RemoteToken(), 0), STATUS_SUCCESS);
    }
  }
  void Receives(ULONG bytes) {
    const NDK_SGE receive = Sink(bytes);
    NDK_QP* qp = b().qp;
    for (int i = 0; i < kPosts; ++i) EXPECT_EQ(qp->Dispatch->NdkReceive(qp, Ctx(3), &receive, 1), STATUS_SUCCESS);
  }
  void Sends(ULONG bytes) {
    const NDK_SGE send = Source(bytes);
    NDK_QP* qp = a().qp;
    for (int i = 0; i < kPosts; ++i) EXPECT_EQ(qp->Dispatch->NdkSend(qp, Ctx(4), &send, 1, 0), STATUS_SUCCESS);
  }

  // Posts `kPosts` writes once to warm up, then counts a second round.
  long CountWrites(ULONG bytes, ULONG flags, bool chain) {
    auto post = [&] { Writes(bytes, flags, chain); };
    post();
    pair().Drain(a().initiator_cq);
    const long n = AllocationsDuring(post);
    EXPECT_EQ(pair().Drain(a().initiator_cq).size(), static_cast<std::size_t>(kPosts));
    return n;
  }

  std::unique_ptr<RegisteredBuffer> src_;
  std::unique_ptr<RegisteredBuffer> dst_;
};

TEST_F(HotPathAllocation, NdkWriteWithADoorbellPerPostAllocatesNothing) {
  EXPECT_EQ(CountWrites(512, 0, false), 0);
}

TEST_F(HotPathAllocation, NdkWriteInDeferredChainsAllocatesNothing) {
  EXPECT_EQ(CountWrites(512, 0, true), 0);
}

TEST_F(HotPathAllocation, InlineNdkWriteAllocatesNothing) {
  EXPECT_EQ(CountWrites(32, NDK_OP_FLAG_INLINE, false), 0);
}

TEST_F(HotPathAllocation, NdkReadAllocatesNothing) {
  auto post = [&] { Reads(256); };
  post();
  pair().Drain(a().initiator_cq);
  EXPECT_EQ(AllocationsDuring(post), 0);
  EXPECT_EQ(pair().Drain(a().initiator_cq).size(), static_cast<std::size_t>(kPosts));
}

class HotPathAllocationOfSends : public HotPathAllocation {
 protected:
  void SetUp() override {
    HotPathAllocation::SetUp();
    Receives(128);
    Sends(128);
    pair().Drain(a().initiator_cq);
    pair().Drain(b().receive_cq);
  }
};

TEST_F(HotPathAllocationOfSends, NdkReceiveAllocatesNothing) {
  EXPECT_EQ(AllocationsDuring([&] { Receives(128); }), 0);
}

TEST_F(HotPathAllocationOfSends, NdkSendAllocatesNothing) {
  Receives(128);
  EXPECT_EQ(AllocationsDuring([&] { Sends(128); }), 0);
  EXPECT_EQ(pair().Drain(b().receive_cq).size(), static_cast<std::size_t>(kPosts));
}

TEST_F(HotPathAllocation, NdkGetCqResultsAndNdkGetCqResultsExAllocateNothing) {
  const NDK_SGE sge = Source(64);
  NDK_QP* qp = a().qp;
  NDK_CQ* cq = a().initiator_cq;
  for (int i = 0; i < 2 * kPosts; ++i) {
    ASSERT_EQ(qp->Dispatch->NdkWrite(qp, Ctx(5), &sge, 1, dst_->Address(), dst_->RemoteToken(), 0), STATUS_SUCCESS);
  }
  fabric().RunUntilIdle();
  NDK_RESULT plain[kPosts];
  NDK_RESULT_EX ex[kPosts];
  ULONG got_plain = 0;
  ULONG got_ex = 0;
  EXPECT_EQ(AllocationsDuring([&] { got_plain = cq->Dispatch->NdkGetCqResults(cq, plain, kPosts); }), 0);
  EXPECT_EQ(AllocationsDuring([&] { got_ex = cq->Dispatch->NdkGetCqResultsEx(cq, ex, kPosts); }), 0);
  EXPECT_EQ(got_plain, static_cast<ULONG>(kPosts));
  EXPECT_EQ(got_ex, static_cast<ULONG>(kPosts));
}

TEST_F(HotPathAllocation, NdkArmCqAllocatesNothing) {
  NDK_CQ* cq = a().initiator_cq;
  cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
  fabric().RunUntilIdle();
  EXPECT_EQ(AllocationsDuring([&] { cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY); }), 0);
}

// The engine's side of the same invariant: once warmed up, moving a stream of requests through
// every block (doorbell, fetch, segmentation, wire, placement, ACKs, CQEs) allocates nothing.
class EngineAllocation : public HotPathAllocation {
 protected:
  // Posts the same round three times and counts what the third round's simulation allocates.
  template <typename Post>
  long CountThirdRound(Post&& post) {
    for (int round = 0; round < 2; ++round) {
      post();
      pair().Drain(a().initiator_cq);
    }
    post();
    const long n = AllocationsDuring([&] { fabric().RunUntilIdle(); });
    EXPECT_EQ(pair().Drain(a().initiator_cq).size(), static_cast<std::size_t>(kPosts));
    return n;
  }
  static constexpr ULONG kBytes = 64 * 1024;  // 16 packets each
};

TEST_F(EngineAllocation, AStreamOfMultiPacketWritesAllocatesNothing) {
  EXPECT_EQ(CountThirdRound([&] { Writes(kBytes); }), 0);
}

TEST_F(EngineAllocation, AStreamOfMultiPacketReadsAllocatesNothing) {
  EXPECT_EQ(CountThirdRound([&] { Reads(kBytes); }), 0);
}

TEST_F(EngineAllocation, AStreamOfMultiPacketSendsAllocatesNothing) {
  EXPECT_EQ(CountThirdRound([&] {
              pair().Drain(b().receive_cq);
              Receives(kBytes);
              Sends(kBytes);
            }),
            0);
}

// The counter itself works: a test that cannot fail would prove nothing.
TEST(AllocationCounter, SeesAnAllocation) {
  // A call of ::operator new, unlike a new-expression, cannot be optimised away.
  EXPECT_EQ(AllocationsDuring([] { ::operator delete(::operator new(16)); }), 1);
}

class HotPathAllocationWithSrq : public HotPathAllocation {
 protected:
  QpPairConfig Config() const override {
    QpPairConfig c = HotPathAllocation::Config();
    c.srq_depth = 256;
    return c;
  }
};

TEST_F(HotPathAllocationWithSrq, NdkSrqReceiveAllocatesNothing) {
  const NDK_SGE receive = Sink(128);
  NDK_SRQ* srq = b().srq;
  auto post = [&] {
    for (int i = 0; i < kPosts; ++i) {
      EXPECT_EQ(srq->Dispatch->NdkSrqReceive(srq, Ctx(6), &receive, 1), STATUS_SUCCESS);
    }
  };
  post();
  EXPECT_EQ(AllocationsDuring(post), 0);
}

// ---- what a connected QP costs ------------------------------------------------------------------

// Heap bytes in use by the simulator: glibc's accounting, less the blocks the block recycler keeps
// for later fabrics (common/block_recycler.h), which belong to no live object.
long LiveHeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<long>(m.uordblks + m.hblkhd) - static_cast<long>(BlockRecycler::Cached().second);
}

// Heap bytes live after `call` that were not before.
template <typename Call>
long HeapGrowthDuring(Call&& call) {
  const long before = LiveHeapBytes();
  call();
  return LiveHeapBytes() - before;
}

// The sanitizers' allocators do not keep glibc's books.
constexpr bool kHeapAccounting = !testing_build::kUnderAsan && !testing_build::kUnderTsan;

// What the NIC, the provider and the harness keep for one more connected QP pair is sized by the
// queues the consumer asked for, not by the NIC's maxima (it was 64 descriptors of 2 KiB each).
QpPairConfig SmallQueues(ULONG depth) {
  QpPairConfig c;
  c.fabric.profile = profiles::kFunctional;
  c.initiator_queue_depth = depth;
  c.receive_queue_depth = depth;
  c.max_initiator_sge = 4;
  c.max_receive_sge = 4;
  c.inline_data_size = 64;
  return c;
}

TEST(Footprint, AConnectedQpPairWithSmallQueuesKeepsLittle) {
  if (!kHeapAccounting) GTEST_SKIP() << "heap accounting is glibc's; this build's allocator is a sanitizer's";
  QpPair pair(SmallQueues(64));
  pair.AddConnectedQps();  // one-time growth of tables
  const long bytes = HeapGrowthDuring([&] { pair.AddConnectedQps(); });
  // Both ends: WQE rings of 64 x 128 B (send) and 64 x 128 B (receive), 64 descriptors of
  // 200 B on each NIC, the QP contexts (7 KiB each) and the connection's objects.
  EXPECT_LE(bytes, 96 * 1024) << bytes;
}

TEST(Footprint, ASmallerQueueCostsLess) {
  if (!kHeapAccounting) GTEST_SKIP() << "heap accounting is glibc's; this build's allocator is a sanitizer's";
  QpPair pair(SmallQueues(64));
  pair.AddConnectedQps();
  const long deep = HeapGrowthDuring([&] { pair.AddConnectedQps(); });
  QpPair shallow_pair(SmallQueues(8));
  shallow_pair.AddConnectedQps();
  const long shallow = HeapGrowthDuring([&] { shallow_pair.AddConnectedQps(); });
  EXPECT_LT(shallow, deep / 2) << shallow << " vs " << deep;
}

}  // namespace
}  // namespace ndksim
