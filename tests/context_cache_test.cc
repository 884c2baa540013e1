// SPDX-License-Identifier: MIT
// The on-NIC context cache (src/hwmodel/context_cache.h) alone, over a real PCIe link, and the QP
// context cache as the NIC uses it.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "hw_test_driver.h"
#include "hwmodel/context_cache.h"
#include "hwmodel/pcie_link.h"

namespace ndksim::hw {
namespace {

using testing::Sge;
using testing::TwoNodeRig;

// A cache of `capacity` entries in one set (so the test knows which entries compete), filled over
// node a's PCIe link of the default profile, counting into its own counters.
struct CacheRig {
  TwoNodeRig rig{profiles::WithoutNoise(profiles::kConnectX100GbeRoce)};
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  ContextCache cache;
  explicit CacheRig(std::uint32_t capacity, std::uint32_t ways, std::uint32_t bytes = 64)
      : cache(capacity, ways, bytes, &rig.a->Pcie(), hits, misses) {}
  TimePoint Now() const { return rig.events.Now(); }
};

// `dst` registered at b as the target of remote writes.
MemoryKey WritableAtB(TwoNodeRig& rig, std::uint64_t* dst) {
  return rig.Register(*rig.b, rig.pd_b, dst, sizeof *dst, access::kRemoteWrite | access::kLocalWrite);
}

TEST(ContextCache, AMissWaitsForAReadOfTheEntryOverPcie) {
  CacheRig r(4, 4);
  const std::uint64_t reads = r.rig.a->Counters().dma_reads;
  const TimePoint ready = r.cache.Access(7, r.Now());
  EXPECT_GT(ready, r.Now());
  EXPECT_EQ(r.misses, 1u);
  EXPECT_EQ(r.rig.a->Counters().dma_reads, reads + 1);
  EXPECT_EQ(r.rig.a->Counters().dma_read_bytes, 64u);
}

TEST(ContextCache, ALookupDuringTheFillWaitsForThatFillAndReadsNothingMore) {
  CacheRig r(4, 4);
  const TimePoint ready = r.cache.Access(7, r.Now());
  const std::uint64_t reads = r.rig.a->Counters().dma_reads;
  EXPECT_EQ(r.cache.Access(7, r.Now()), ready);
  EXPECT_EQ(r.rig.a->Counters().dma_reads, reads);
  EXPECT_EQ(r.hits, 1u);
}

TEST(ContextCache, AHitAfterTheFillLandedCostsNoTime) {
  CacheRig r(4, 4);
  const TimePoint ready = r.cache.Access(7, r.Now());
  r.rig.events.AdvanceTo(ready);  // the fill has landed
  EXPECT_EQ(r.cache.Access(7, r.Now()), r.Now());
  EXPECT_EQ(r.hits, 1u);
  EXPECT_EQ(r.misses, 1u);
}

TEST(ContextCache, AMissReplacesTheLeastRecentlyUsedEntryOfItsSet) {
  CacheRig r(2, 2);  // one set of two
  (void)r.cache.Access(1, r.Now());
  (void)r.cache.Access(2, r.Now());
  (void)r.cache.Access(1, r.Now());  // 2 is now the least recently used
  (void)r.cache.Access(3, r.Now());
  EXPECT_TRUE(r.cache.Holds(1));
  EXPECT_FALSE(r.cache.Holds(2));
  EXPECT_TRUE(r.cache.Holds(3));
  EXPECT_EQ(r.misses, 3u);
}

TEST(ContextCache, AForgottenKeyMissesAgain) {
  CacheRig r(2, 2);
  (void)r.cache.Access(1, r.Now());
  r.cache.Forget(1);
  EXPECT_FALSE(r.cache.Holds(1));
  (void)r.cache.Access(1, r.Now());
  EXPECT_EQ(r.misses, 2u);
}

TEST(ContextCache, WithNoEntriesEveryContextIsOnChip) {
  CacheRig r(0, 1);
  const std::uint64_t reads = r.rig.a->Counters().dma_reads;
  EXPECT_EQ(r.cache.Access(7, r.Now()), r.Now());
  EXPECT_EQ(r.rig.a->Counters().dma_reads, reads);
  EXPECT_EQ(r.hits + r.misses, 0u);
}

// Keys spread over the sets of a direct-mapped cache by a hash: with half as many keys as
// entries, some share a set and evict each other, so a round over every key misses on some.
TEST(ContextCache, KeysThatShareASetOfADirectMappedCacheEvictEachOther) {
  CacheRig r(256, 1);
  for (int round = 0; round < 2; ++round) {
    for (std::uint64_t key = 0; key < 128; ++key) (void)r.cache.Access(key, r.Now());
  }
  EXPECT_GT(r.misses, 128u);  // the first round's 128, and more in the second
  EXPECT_LT(r.misses, 256u);  // most keys have a set to themselves
}

TEST(QpContextCache, ANicWithTheCacheCountsADoorbellsContextMiss) {
  HardwareProfile p = profiles::WithoutNoise(profiles::kConnectIbFdr);
  TwoNodeRig rig(p);
  std::uint64_t value = 42;
  std::uint64_t dst = 0;
  const MemoryKey rkey = WritableAtB(rig, &dst);
  const NicCounters before = rig.a->Counters();
  rig.qp_a->PostInline(WqeOpcode::kWrite, &value, sizeof value, reinterpret_cast<std::uint64_t>(&dst), rkey.value);
  rig.Run();
  EXPECT_EQ(dst, 42u);
  // The doorbell misses; the WQE's processing and the ACK's arrival find the context on chip.
  EXPECT_EQ(rig.a->Counters().qp_context_misses, before.qp_context_misses + 1);
  EXPECT_EQ(rig.a->Counters().qp_context_hits, before.qp_context_hits + 2);
}

// ---- the translation caches (translation.h: MPT and MTT) -------------------------------------

HardwareProfile WithTranslationCaches(bool on = true) {
  HardwareProfile p = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  if (on) {
    p.mpt_cache_entries = 64;
    p.mtt_cache_entries = 64;
    p.translation_cache_ways = 4;
  }
  return p;
}

// Memory aligned to a line of MTT entries (8 pages), so the lines a range touches are known.
struct AlignedBuffer {
  static constexpr std::size_t kAlign = 8 * 4096;
  std::byte* data;
  explicit AlignedBuffer(std::size_t bytes)
      : data(static_cast<std::byte*>(std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign))) {
    std::memset(data, 0, bytes);
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

// Posts an 8-B inline write from a into `dst` at b and runs it to the end; returns when it ended.
TimePoint WriteOnce(TwoNodeRig& rig, std::uint64_t* dst, MemoryKey rkey) {
  const std::uint64_t value = 7;
  rig.qp_a->PostInline(WqeOpcode::kWrite, &value, sizeof value, reinterpret_cast<std::uint64_t>(dst), rkey.value);
  rig.Run();
  return rig.events.Now();
}

TEST(TranslationCache, AnInboundWriteLooksUpItsKeyAndItsPageOnce) {
  TwoNodeRig rig(WithTranslationCaches());
  std::uint64_t dst = 0;
  const MemoryKey rkey = WritableAtB(rig, &dst);
  (void)WriteOnce(rig, &dst, rkey);
  EXPECT_EQ(dst, 7u);
  EXPECT_EQ(rig.b->Counters().mpt_misses, 1u);
  EXPECT_EQ(rig.b->Counters().mtt_misses, 1u);
  // The payload came inline: the requester looked up no key of its own.
  EXPECT_EQ(rig.a->Counters().mpt_hits + rig.a->Counters().mpt_misses, 0u);
}

TEST(TranslationCache, ASecondWriteToTheSamePageFindsBothOnChip) {
  TwoNodeRig rig(WithTranslationCaches());
  std::uint64_t dst = 0;
  const MemoryKey rkey = WritableAtB(rig, &dst);
  (void)WriteOnce(rig, &dst, rkey);
  (void)WriteOnce(rig, &dst, rkey);
  EXPECT_EQ(rig.b->Counters().mpt_misses, 1u);
  EXPECT_EQ(rig.b->Counters().mpt_hits, 1u);
  EXPECT_EQ(rig.b->Counters().mtt_hits, 1u);
}

// What `run(rig)` returns on a rig without the translation caches, then on one with them.
template <typename Run>
auto WithoutAndWithCaches(Run run) {
  TwoNodeRig without(WithTranslationCaches(false));
  TwoNodeRig with(WithTranslationCaches(true));
  return std::array{run(without), run(with)};
}

TEST(TranslationCache, MissesDelayAWritesPlacement) {
  const auto end = WithoutAndWithCaches([](TwoNodeRig& rig) {
    std::uint64_t dst = 0;
    return WriteOnce(rig, &dst, WritableAtB(rig, &dst));
  });
  EXPECT_GT(end[1], end[0]);
}

// A 40-KiB read from the start of a line-aligned region at b into one at a: on each side it
// touches pages 0..9, MTT lines 0 and 1. Returns the status the read completed with.
struct FortyKibRead {
  static constexpr std::size_t kBytes = 40 * 1024;
  TwoNodeRig rig{WithTranslationCaches()};
  AlignedBuffer remote{kBytes};
  AlignedBuffer local{kBytes};

  CompletionSyndrome Run() {
    for (std::size_t i = 0; i < kBytes; ++i) remote.data[i] = static_cast<std::byte>(i * 7);
    const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, remote.data, kBytes, access::kRemoteRead);
    const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, local.data, kBytes, access::kLocalWrite);
    rig.qp_a->Post(WqeOpcode::kRead, {Sge(local.data, kBytes, lkey)}, reinterpret_cast<std::uint64_t>(remote.data),
                   rkey.value);
    rig.Run();
    Cqe cqe;
    if (!rig.cq_a->Poll(&cqe)) return CompletionSyndrome::kFlushed;  // no completion: a failure
    return cqe.syndrome;
  }
};

TEST(TranslationCache, AnInboundReadLooksUpEveryLineOfItsPages) {
  FortyKibRead read;
  EXPECT_EQ(read.Run(), CompletionSyndrome::kSuccess);
  EXPECT_EQ(read.rig.b->Counters().mpt_misses, 1u);
  EXPECT_EQ(read.rig.b->Counters().mtt_misses, 2u);
}

// ---- the translation caches on the local side: payloads gathered, read sinks, receive buffers ----

// Posts an 8-B write of a's registered `src`, gathered by DMA (not inline), into `dst` at b.
TimePoint GatheredWriteOnce(TwoNodeRig& rig, const std::uint64_t* src, MemoryKey lkey, std::uint64_t* dst,
                            MemoryKey rkey) {
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src, sizeof *src, lkey)}, reinterpret_cast<std::uint64_t>(dst), rkey.value);
  rig.Run();
  return rig.events.Now();
}

TEST(TranslationCache, AGatheredPayloadLooksUpItsLocalKeyAndPageOnTheRequester) {
  TwoNodeRig rig(WithTranslationCaches());
  const std::uint64_t src = 99;
  std::uint64_t dst = 0;
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, const_cast<std::uint64_t*>(&src), sizeof src, 0);
  const MemoryKey rkey = WritableAtB(rig, &dst);
  (void)GatheredWriteOnce(rig, &src, lkey, &dst, rkey);
  EXPECT_EQ(dst, 99u);
  EXPECT_EQ(rig.a->Counters().mpt_misses, 1u);
  EXPECT_EQ(rig.a->Counters().mtt_misses, 1u);
}

// The responder's side is warmed by a first write, so the second write's extra time is the
// requester's: its key's and page's fills, which go out together, so they cost more than one
// entry's read over PCIe and less than two.
TEST(TranslationCache, ALocalKeyMissHoldsThePayloadReadBackForTheFills) {
  const auto second = WithoutAndWithCaches([](TwoNodeRig& rig) {
    const std::uint64_t src = 5;
    std::uint64_t dst = 0;
    const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, const_cast<std::uint64_t*>(&src), sizeof src, 0);
    const MemoryKey rkey = WritableAtB(rig, &dst);
    const TimePoint first = WriteOnce(rig, &dst, rkey);
    const Duration took = GatheredWriteOnce(rig, &src, lkey, &dst, rkey) - first;
    EXPECT_EQ(dst, 5u);
    return took;
  });
  const Duration one_fill = TwoNodeRig(WithTranslationCaches(false)).TimeDmaRead(64);
  EXPECT_GE(second[1] - second[0], one_fill);
  EXPECT_LT(second[1] - second[0], 2 * one_fill);
}

// The read's responses are placed through the sink's key (one MPT miss, then hits) and its two
// MTT lines, and the bytes arrive whole.
TEST(TranslationCache, AReadSinkIsLookedUpAsItsResponsesArePlaced) {
  FortyKibRead read;
  EXPECT_EQ(read.Run(), CompletionSyndrome::kSuccess);
  EXPECT_EQ(std::memcmp(read.local.data, read.remote.data, FortyKibRead::kBytes), 0);
  EXPECT_EQ(read.rig.a->Counters().mpt_misses, 1u);
  EXPECT_EQ(read.rig.a->Counters().mtt_misses, 2u);
}

TEST(TranslationCache, AnInboundSendLooksUpItsReceiveBuffer) {
  TwoNodeRig rig(WithTranslationCaches());
  std::uint64_t buffer = 0;
  const MemoryKey key = rig.Register(*rig.b, rig.pd_b, &buffer, sizeof buffer, access::kLocalWrite);
  rig.qp_b->PostReceive({Sge(&buffer, sizeof buffer, key)});
  const std::uint64_t value = 31;
  rig.qp_a->PostInline(WqeOpcode::kSend, &value, sizeof value);
  rig.Run();
  Cqe cqe;
  ASSERT_TRUE(rig.cq_b->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kSuccess);
  EXPECT_EQ(buffer, 31u);
  EXPECT_EQ(rig.b->Counters().mpt_misses, 1u);
  EXPECT_EQ(rig.b->Counters().mtt_misses, 1u);
}

}  // namespace
}  // namespace ndksim::hw
