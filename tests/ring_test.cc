// SPDX-License-Identifier: MIT
// Tests for the host-interface queues: SpscRing (work queues) and MpscQueue (doorbells).
// One behaviour per test; the stress tests check correctness only, never speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "hwmodel/doorbell_queue.h"
#include "hwmodel/ring.h"
#include "sanitizers.h"

namespace ndksim::hw {

// Pushes with a ticket chosen by the test, as a producer preempted after loading its ticket holds.
struct MpscQueueTestAccess {
  template <typename T>
  static bool PushFrom(MpscQueue<T>& queue, uint64_t ticket, const T& value) {
    return queue.PushFrom(ticket, value);
  }
};

namespace {

using testing_build::kUnderTsan;

// ThreadSanitizer makes every atomic operation an order of magnitude slower; the stress tests
// shrink so that they stay within tens of seconds while still wrapping the rings many times.
constexpr uint32_t kSpscStressItems = kUnderTsan ? 1'000'000 : 10'000'000;
constexpr uint32_t kSpscBatchStressItems = kUnderTsan ? 200'000 : 2'000'000;
constexpr uint32_t kMpscStressProducers = 4;
constexpr uint32_t kMpscStressItemsPerProducer = kUnderTsan ? 100'000 : 1'000'000;

// A WQE-sized slot, to exercise in-place writes of a struct rather than a scalar.
struct FakeWqe {
  uint32_t opcode;
  uint32_t length;
  uint64_t address;
};

// ---------------------------------------------------------------------------------------------
// SpscRing: construction and the capacity rule

class SpscRingBadCapacityTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(SpscRingBadCapacityTest, NonPowerOfTwoCapacityIsRejected) {
  EXPECT_THROW(SpscRing<uint32_t> ring(GetParam()), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Capacities, SpscRingBadCapacityTest,
                         ::testing::Values(0u, 3u, 6u, 100u, 0x80000001u, 0xFFFFFFFFu));

TEST(SpscRingTest, BadCapacityMessageNamesTheValue) {
  try {
    SpscRing<uint32_t> ring(12);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("power of two"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("12"), std::string::npos);
  }
}

TEST(SpscRingTest, CapacityAndMaskFollowConstruction) {
  SpscRing<uint32_t> ring(16);
  EXPECT_EQ(ring.Capacity(), 16u);
  EXPECT_EQ(ring.Mask(), 15u);
}

TEST(SpscRingTest, NewRingIsEmpty) {
  SpscRing<uint32_t> ring(8);
  uint32_t out = 0;
  EXPECT_EQ(ring.Available(), 0u);
  EXPECT_EQ(ring.ConsumerPeek(), nullptr);
  EXPECT_FALSE(ring.TryPop(out));
}

TEST(SpscRingTest, EverySlotIsUsableBeforeFull) {
  SpscRing<uint32_t> ring(8);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_TRUE(ring.TryPush(i)) << i;
  EXPECT_EQ(ring.Available(), 8u);
}

TEST(SpscRingTest, FullWhenProducerMinusConsumerEqualsCapacity) {
  SpscRing<uint32_t> ring(8);
  for (uint32_t i = 0; i < 8; ++i) ASSERT_TRUE(ring.TryPush(i));
  EXPECT_EQ(ring.PublishedProducerIndex() - ring.ConsumerIndex(), ring.Capacity());
  EXPECT_EQ(ring.ProducerSlot(), nullptr);
  EXPECT_FALSE(ring.TryPush(99));
}

TEST(SpscRingTest, ReleasingOneEntryMakesRoomForOne) {
  SpscRing<uint32_t> ring(4);
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(ring.TryPush(i));
  uint32_t out = 0;
  ASSERT_TRUE(ring.TryPop(out));
  EXPECT_TRUE(ring.TryPush(4));
  EXPECT_FALSE(ring.TryPush(5));
}

TEST(SpscRingTest, CapacityOneRingAlternatesFullAndEmpty) {
  SpscRing<uint32_t> ring(1);
  uint32_t out = 0;
  ASSERT_TRUE(ring.TryPush(7));
  EXPECT_FALSE(ring.TryPush(8));
  ASSERT_TRUE(ring.TryPop(out));
  EXPECT_EQ(out, 7u);
  EXPECT_FALSE(ring.TryPop(out));
  EXPECT_TRUE(ring.TryPush(8));
}

TEST(SpscRingTest, SlotsStartOnACacheLine) {
  SpscRing<FakeWqe> ring(4);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&ring.SlotAt(0)) % kCacheLineBytes, 0u);
}

TEST(SpscRingTest, SlotsStartZeroed) {
  SpscRing<FakeWqe> ring(4);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(ring.SlotAt(i).opcode, 0u);
    EXPECT_EQ(ring.SlotAt(i).address, 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// SpscRing: order and in-place access

TEST(SpscRingTest, PopsInPushOrder) {
  SpscRing<uint32_t> ring(8);
  for (uint32_t round = 0; round < 5; ++round) {  // Several laps, so masking is exercised too.
    for (uint32_t i = 0; i < 6; ++i) ASSERT_TRUE(ring.TryPush(round * 100 + i));
    for (uint32_t i = 0; i < 6; ++i) {
      uint32_t out = 0;
      ASSERT_TRUE(ring.TryPop(out));
      EXPECT_EQ(out, round * 100 + i);
    }
  }
}

TEST(SpscRingTest, InPlaceSlotIsInvisibleUntilPublished) {
  SpscRing<FakeWqe> ring(4);
  FakeWqe* slot = ring.ProducerSlot();
  ASSERT_NE(slot, nullptr);
  *slot = FakeWqe{1, 64, 0x1000};
  EXPECT_EQ(ring.Available(), 0u);
  EXPECT_EQ(ring.ConsumerPeek(), nullptr);
  ring.ProducerPublish();
  EXPECT_EQ(ring.Available(), 1u);
}

TEST(SpscRingTest, ProducerSlotDoesNotAdvanceTheProducer) {
  SpscRing<FakeWqe> ring(4);
  FakeWqe* first = ring.ProducerSlot();
  EXPECT_EQ(ring.ProducerSlot(), first);
  EXPECT_EQ(ring.ProducerIndex(), 0u);
}

TEST(SpscRingTest, PublishAdvancesBothProducerIndices) {
  SpscRing<FakeWqe> ring(4);
  ring.ProducerSlot()->opcode = 1;
  ring.ProducerPublish();
  EXPECT_EQ(ring.ProducerIndex(), 1u);
  EXPECT_EQ(ring.PublishedProducerIndex(), 1u);
}

TEST(SpscRingTest, PeekReadsThePublishedSlotInPlace) {
  SpscRing<FakeWqe> ring(4);
  FakeWqe* slot = ring.ProducerSlot();
  *slot = FakeWqe{2, 128, 0x2000};
  ring.ProducerPublish();
  const FakeWqe* seen = ring.ConsumerPeek();
  ASSERT_EQ(seen, slot);  // Same memory: nothing was copied.
  EXPECT_EQ(seen->opcode, 2u);
  EXPECT_EQ(seen->length, 128u);
  EXPECT_EQ(seen->address, 0x2000u);
}

TEST(SpscRingTest, PeekDoesNotConsume) {
  SpscRing<uint32_t> ring(4);
  ASSERT_TRUE(ring.TryPush(5));
  ASSERT_NE(ring.ConsumerPeek(), nullptr);
  ASSERT_NE(ring.ConsumerPeek(), nullptr);
  EXPECT_EQ(ring.Available(), 1u);
  EXPECT_EQ(ring.ConsumerIndex(), 0u);
}

TEST(SpscRingTest, ReleaseHandsTheSlotBack) {
  SpscRing<uint32_t> ring(2);
  ASSERT_TRUE(ring.TryPush(1));
  ASSERT_TRUE(ring.TryPush(2));
  ASSERT_EQ(ring.ProducerSlot(), nullptr);
  ring.ConsumerRelease();
  EXPECT_EQ(ring.ConsumerIndex(), 1u);
  EXPECT_NE(ring.ProducerSlot(), nullptr);
}

TEST(SpscRingTest, BatchWrittenAtOffsetsIsPublishedAtOnce) {
  SpscRing<uint32_t> ring(8);
  for (uint32_t i = 0; i < 3; ++i) *ring.ProducerSlot(i) = 10 + i;
  ring.ProducerPublish(3);
  ASSERT_EQ(ring.Available(), 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(*ring.ConsumerPeek(i), 10 + i);
  EXPECT_EQ(ring.ConsumerPeek(3), nullptr);
  ring.ConsumerRelease(3);
  EXPECT_EQ(ring.Available(), 0u);
}

TEST(SpscRingTest, ProducerSlotBeyondFreeSpaceIsNull) {
  SpscRing<uint32_t> ring(4);
  ASSERT_TRUE(ring.TryPush(1));
  EXPECT_NE(ring.ProducerSlot(2), nullptr);  // Indices 1..3 are free.
  EXPECT_EQ(ring.ProducerSlot(3), nullptr);  // Index 4 would overwrite entry 0.
  EXPECT_EQ(ring.ProducerSlot(1000), nullptr);
}

TEST(SpscRingTest, SlotAtMasksTheFreeRunningIndex) {
  SpscRing<uint32_t> ring(8);
  EXPECT_EQ(&ring.SlotAt(3), &ring.SlotAt(3 + 8));
  EXPECT_EQ(&ring.SlotAt(0), &ring.SlotAt(std::numeric_limits<uint32_t>::max() + 1u));
  EXPECT_NE(&ring.SlotAt(3), &ring.SlotAt(4));
}

// The NIC does not peek: it reads the doorbell record and fetches WQE number N directly.
TEST(SpscRingTest, ConsumerCanFetchByPublishedIndexThenRelease) {
  SpscRing<uint32_t> ring(4);
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(ring.TryPush(20 + i));
  const uint32_t published = ring.PublishedProducerIndex();
  for (uint32_t n = ring.ConsumerIndex(); n != published; ++n) EXPECT_EQ(ring.SlotAt(n), 20 + n);
  ring.ConsumerRelease(published - ring.ConsumerIndex());
  EXPECT_EQ(ring.ConsumerPeek(), nullptr);  // The cached producer index must not lag behind.
  EXPECT_EQ(ring.Available(), 0u);
  ASSERT_TRUE(ring.TryPush(30));
  ASSERT_NE(ring.ConsumerPeek(), nullptr);
  EXPECT_EQ(*ring.ConsumerPeek(), 30u);
}

// A producer may fill slots through SlotAt(ProducerIndex() + i) and publish the batch.
TEST(SpscRingTest, ProducerCanWriteBySlotAtThenPublish) {
  SpscRing<uint32_t> ring(4);
  for (uint32_t lap = 0; lap < 3; ++lap) {
    for (uint32_t i = 0; i < 4; ++i) ring.SlotAt(ring.ProducerIndex() + i) = lap * 10 + i;
    ring.ProducerPublish(4);
    EXPECT_EQ(ring.ProducerSlot(), nullptr);  // Full: the cached consumer index must not lag.
    for (uint32_t i = 0; i < 4; ++i) {
      uint32_t out = 0;
      ASSERT_TRUE(ring.TryPop(out));
      EXPECT_EQ(out, lap * 10 + i);
    }
  }
}

// The consumer's view of the producer index: PublishedThrough looks at the producer's line only
// when its cached bound falls short, and ConsumerLearnPublished raises that bound without a look.
TEST(SpscRingTest, PublishedThroughLooksWhenItsBoundFallsShort) {
  SpscRing<uint32_t> ring(8);
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(ring.TryPush(i));
  EXPECT_EQ(ring.PublishedThrough(1), 3u);
}

TEST(SpscRingTest, PublishedThroughAnswersFromItsBoundWhenTheBoundReaches) {
  SpscRing<uint32_t> ring(8);
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(ring.TryPush(i));
  ASSERT_EQ(ring.PublishedThrough(1), 3u);
  for (uint32_t i = 0; i < 2; ++i) ASSERT_TRUE(ring.TryPush(i));
  EXPECT_EQ(ring.PublishedThrough(3), 3u);  // the bound reaches 3: no look
  EXPECT_EQ(ring.PublishedThrough(4), 5u);  // it does not reach 4: a look finds 5
}

TEST(SpscRingTest, PublishedThroughComparesAcrossThe32BitWrap) {
  constexpr uint32_t kStart = std::numeric_limits<uint32_t>::max() - 1;
  SpscRing<uint32_t> ring(8, kStart);
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(ring.TryPush(i));
  EXPECT_EQ(ring.PublishedThrough(kStart + 3), kStart + 4);  // 2 after the wrap
  ASSERT_TRUE(ring.TryPush(4));
  EXPECT_EQ(ring.PublishedThrough(kStart + 4), kStart + 4);
}

TEST(SpscRingTest, AnIndexLearntRaisesTheConsumersBound) {
  SpscRing<uint32_t> ring(8);
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(ring.TryPush(i));
  ring.ConsumerLearnPublished(3);
  for (uint32_t i = 0; i < 2; ++i) ASSERT_TRUE(ring.TryPush(i));
  EXPECT_EQ(ring.PublishedThrough(3), 3u);  // learnt: answered without a look at the 5
  ring.ConsumerRelease(3);                  // within the learnt bound
  EXPECT_EQ(ring.ConsumerIndex(), 3u);
}

TEST(SpscRingTest, AnIndexLearntBehindTheBoundDoesNotLowerIt) {
  SpscRing<uint32_t> ring(8);
  for (uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(ring.TryPush(i));
  ASSERT_EQ(ring.PublishedThrough(5), 5u);
  ring.ConsumerLearnPublished(3);
  EXPECT_EQ(ring.PublishedThrough(4), 5u);
}

TEST(SpscRingTest, AnIndexLearntMoreThanARingAheadIsIgnored) {
  SpscRing<uint32_t> ring(4);
  ASSERT_TRUE(ring.TryPush(1));
  ring.ConsumerLearnPublished(100);
  EXPECT_EQ(ring.PublishedThrough(1), 1u);  // a look, not the 100
}

// ---------------------------------------------------------------------------------------------
// SpscRing: 32-bit wrap of the free-running counters

TEST(SpscRingTest, CountersStartAtTheGivenIndex) {
  SpscRing<uint32_t> ring(8, 1000);
  EXPECT_EQ(ring.ProducerIndex(), 1000u);
  EXPECT_EQ(ring.PublishedProducerIndex(), 1000u);
  EXPECT_EQ(ring.ConsumerIndex(), 1000u);
  EXPECT_EQ(ring.Available(), 0u);
}

TEST(SpscRingTest, FifoOrderHoldsAcrossThe32BitWrap) {
  constexpr uint32_t kStart = std::numeric_limits<uint32_t>::max() - 5;
  SpscRing<uint32_t> ring(8, kStart);
  uint32_t next_in = 0;
  uint32_t next_out = 0;
  for (uint32_t step = 0; step < 40; ++step) {  // Pairs of pushes and one pop: drifts to full.
    if (ring.TryPush(next_in)) ++next_in;
    if (ring.TryPush(next_in)) ++next_in;
    uint32_t out = 0;
    ASSERT_TRUE(ring.TryPop(out));
    EXPECT_EQ(out, next_out++);
  }
  EXPECT_LT(ring.ConsumerIndex(), kStart);  // The consumer counter did wrap.
}

TEST(SpscRingTest, FullIsDetectedWhileTheCountersStraddleTheWrap) {
  constexpr uint32_t kStart = std::numeric_limits<uint32_t>::max() - 2;
  SpscRing<uint32_t> ring(8, kStart);
  for (uint32_t i = 0; i < 8; ++i) ASSERT_TRUE(ring.TryPush(i));
  EXPECT_EQ(ring.ProducerIndex(), 5u);  // kStart + 8 wrapped to 5.
  EXPECT_EQ(ring.ConsumerIndex(), kStart);
  EXPECT_EQ(ring.Available(), 8u);
  EXPECT_EQ(ring.ProducerSlot(), nullptr);
  EXPECT_FALSE(ring.TryPush(8));
}

TEST(SpscRingTest, EmptyIsDetectedAfterTheConsumerWraps) {
  constexpr uint32_t kStart = std::numeric_limits<uint32_t>::max() - 1;
  SpscRing<uint32_t> ring(4, kStart);
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(ring.TryPush(i));
  uint32_t out = 0;
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(ring.TryPop(out));
  EXPECT_EQ(ring.ConsumerIndex(), 2u);
  EXPECT_EQ(ring.Available(), 0u);
  EXPECT_EQ(ring.ConsumerPeek(), nullptr);
  EXPECT_FALSE(ring.TryPop(out));
}

// ---------------------------------------------------------------------------------------------
// SpscRing: misuse caught by NDKSIM_CHECK (active in every build type)

TEST(SpscRingDeathTest, PublishingMoreThanTheFreeSlotsAborts) {
  SpscRing<uint32_t> ring(4);
  EXPECT_DEATH(ring.ProducerPublish(5), "publishing 5 entries into a ring of 4 with 0 unreleased");
}

// The check reloads the consumer index only when its cached bound says no; a full ring written
// through SlotAt still refuses one more publish.
TEST(SpscRingDeathTest, PublishingIntoAFullRingWrittenThroughSlotAtAborts) {
  SpscRing<uint32_t> ring(4);
  for (uint32_t i = 0; i < 4; ++i) ring.SlotAt(ring.ProducerIndex() + i) = i;
  ring.ProducerPublish(4);
  EXPECT_DEATH(ring.ProducerPublish(1), "publishing 1 entries into a ring of 4 with 4 unreleased");
}

TEST(SpscRingDeathTest, ReleasingUnpublishedEntriesAborts) {
  SpscRing<uint32_t> ring(4);
  ASSERT_TRUE(ring.TryPush(1));
  EXPECT_DEATH(ring.ConsumerRelease(2), "releasing 2 entries of a ring with 1 published");
}

// ---------------------------------------------------------------------------------------------
// SpscRing: two threads

// Every sequence number arrives exactly once and in order, across many laps of a small ring.
TEST(SpscRingStressTest, TwoThreadsMoveEverySequenceNumberInOrder) {
  SpscRing<uint32_t> ring(1024);
  std::thread producer([&ring] {
    for (uint32_t i = 0; i < kSpscStressItems; ++i) {
      while (!ring.TryPush(i)) std::this_thread::yield();
    }
  });
  uint32_t expected = 0;
  uint64_t out_of_order = 0;  // Counted, not asserted per item, to keep the loop cheap.
  while (expected < kSpscStressItems) {
    uint32_t value = 0;
    if (!ring.TryPop(value)) {
      std::this_thread::yield();
      continue;
    }
    if (value != expected) ++out_of_order;
    ++expected;
  }
  producer.join();
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(ring.Available(), 0u);
}

// The in-place API with batches of varying size, on a ring whose counters wrap 32 bits mid-run.
TEST(SpscRingStressTest, InPlaceBatchesAcrossTheWrapArriveInOrder) {
  constexpr uint32_t kStart = std::numeric_limits<uint32_t>::max() - 100'000;
  SpscRing<FakeWqe> ring(64, kStart);
  std::thread producer([&ring] {
    uint32_t next = 0;
    uint32_t batch = 1;
    while (next < kSpscBatchStressItems) {
      const uint32_t want = std::min(batch, kSpscBatchStressItems - next);
      uint32_t written = 0;
      while (written < want) {
        FakeWqe* slot = ring.ProducerSlot(written);
        if (slot == nullptr) break;
        *slot = FakeWqe{next + written, ~(next + written), uint64_t{next + written} << 8};
        ++written;
      }
      if (written == 0) {
        std::this_thread::yield();
        continue;
      }
      ring.ProducerPublish(written);
      next += written;
      batch = batch % 7 + 1;
    }
  });
  uint32_t expected = 0;
  uint64_t bad = 0;
  while (expected < kSpscBatchStressItems) {
    const uint32_t available = ring.Available();
    if (available == 0) {
      std::this_thread::yield();
      continue;
    }
    const uint32_t take = std::min(available, expected % 5 + 1);
    for (uint32_t i = 0; i < take; ++i) {
      const FakeWqe* wqe = ring.ConsumerPeek(i);
      const uint32_t n = expected + i;
      if (wqe == nullptr || wqe->opcode != n || wqe->length != ~n ||
          wqe->address != uint64_t{n} << 8) {
        ++bad;
      }
    }
    ring.ConsumerRelease(take);
    expected += take;
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_LT(ring.ConsumerIndex(), kStart);  // The run did cross the 32-bit wrap.
}

// ---------------------------------------------------------------------------------------------
// Write-ahead distance (common/prefetch.h), shared by the WQE, doorbell and CQE rings

TEST(WriteAheadTest, ARingOfAtLeastTwiceTheDistancePrefetchesTheFullDistance) {
  EXPECT_EQ(WriteAheadFor(2 * kWriteAheadItems), kWriteAheadItems);
  EXPECT_EQ(WriteAheadFor(1024), kWriteAheadItems);
}

TEST(WriteAheadTest, ASmallerRingPrefetchesHalfALapAhead) {
  EXPECT_EQ(WriteAheadFor(4), 2u);
  EXPECT_EQ(WriteAheadFor(2), 1u);
  EXPECT_EQ(WriteAheadFor(1), 0u);  // the slot being written
}

// ---------------------------------------------------------------------------------------------
// MpscQueue

class MpscQueueBadCapacityTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(MpscQueueBadCapacityTest, CapacityThatIsNotAPowerOfTwoOfAtLeastTwoIsRejected) {
  EXPECT_THROW(MpscQueue<uint64_t> queue(GetParam()), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Capacities, MpscQueueBadCapacityTest,
                         ::testing::Values(0u, 1u, 3u, 12u, 0xFFFFFFFFu));

TEST(MpscQueueTest, NewQueueIsEmpty) {
  MpscQueue<uint64_t> queue(8);
  uint64_t out = 0;
  EXPECT_TRUE(queue.Empty());
  EXPECT_FALSE(queue.TryPop(out));
}

TEST(MpscQueueTest, PushMakesItNonEmpty) {
  MpscQueue<uint64_t> queue(8);
  ASSERT_TRUE(queue.TryPush(1));
  EXPECT_FALSE(queue.Empty());
}

TEST(MpscQueueTest, PopsInPushOrder) {
  MpscQueue<uint64_t> queue(8);
  for (uint64_t lap = 0; lap < 4; ++lap) {
    for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(queue.TryPush(lap * 100 + i));
    for (uint64_t i = 0; i < 8; ++i) {
      uint64_t out = 0;
      ASSERT_TRUE(queue.TryPop(out));
      EXPECT_EQ(out, lap * 100 + i);
    }
  }
  EXPECT_TRUE(queue.Empty());
}

TEST(MpscQueueTest, FullQueueRefusesAndKeepsItsContents) {
  MpscQueue<uint64_t> queue(4);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(queue.TryPush(i));
  EXPECT_FALSE(queue.TryPush(99));
  for (uint64_t i = 0; i < 4; ++i) {
    uint64_t out = 0;
    ASSERT_TRUE(queue.TryPop(out));
    EXPECT_EQ(out, i);  // 99 was refused, not dropped over an older entry.
  }
  EXPECT_TRUE(queue.Empty());
}

TEST(MpscQueueTest, PopMakesRoomForOneMore) {
  MpscQueue<uint64_t> queue(2);
  ASSERT_TRUE(queue.TryPush(1));
  ASSERT_TRUE(queue.TryPush(2));
  uint64_t out = 0;
  ASSERT_TRUE(queue.TryPop(out));
  EXPECT_TRUE(queue.TryPush(3));
  EXPECT_FALSE(queue.TryPush(4));
}

// The producers learn of the consumer's progress only through the head it publishes; the queue
// refuses exactly when full on every lap, not only on the first.
TEST(MpscQueueTest, ATwoCellQueueIsFullAndThenFreeOnEveryLap) {
  MpscQueue<uint64_t> queue(2);
  uint64_t next_in = 0;
  uint64_t next_out = 0;
  for (int lap = 0; lap < 8; ++lap) {
    ASSERT_TRUE(queue.TryPush(next_in++));
    ASSERT_TRUE(queue.TryPush(next_in++));
    ASSERT_FALSE(queue.TryPush(999)) << "lap " << lap;
    for (int k = 0; k < 2; ++k) {
      uint64_t out = 0;
      ASSERT_TRUE(queue.TryPop(out));
      EXPECT_EQ(out, next_out++) << "lap " << lap;
    }
    EXPECT_TRUE(queue.Empty());
  }
}

// A producer that loaded its ticket and was preempted while the others pushed three and the
// consumer took all three holds a ticket the head has passed: its distance to the head wraps and
// looks like a full queue. The queue has room, so the push takes the current ticket instead.
TEST(MpscQueueTest, APushWithAStaleTicketTakesTheCurrentOneInsteadOfReportingFull) {
  MpscQueue<uint64_t> queue(2);
  uint64_t out = 0;
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(queue.TryPush(i));
    ASSERT_TRUE(queue.TryPop(out));
    ASSERT_EQ(out, i);
  }
  EXPECT_TRUE(MpscQueueTestAccess::PushFrom(queue, /*ticket=*/0, uint64_t{7}));
  ASSERT_TRUE(queue.TryPop(out));
  EXPECT_EQ(out, 7u);
  EXPECT_TRUE(queue.Empty());
}

// MpscQueue: concurrent producers

struct TaggedDoorbell {
  uint32_t producer;
  uint32_t sequence;
};

// Runs kMpscStressProducers producers of `items` each through a queue of `capacity` cells and
// checks that each producer's items arrive in its own order, none lost, none duplicated.
void ProducersKeepTheirOrderAndNothingIsLost(uint32_t capacity, uint32_t items) {
  MpscQueue<TaggedDoorbell> queue(capacity);
  std::vector<std::thread> producers;
  for (uint32_t p = 0; p < kMpscStressProducers; ++p) {
    producers.emplace_back([&queue, p, items] {
      for (uint32_t i = 0; i < items; ++i) {
        while (!queue.TryPush(TaggedDoorbell{p, i})) std::this_thread::yield();
      }
    });
  }
  std::vector<uint32_t> next(kMpscStressProducers, 0);
  uint64_t bad = 0;
  for (uint64_t received = 0; received < uint64_t{kMpscStressProducers} * items;) {
    TaggedDoorbell item{};
    if (!queue.TryPop(item)) {
      std::this_thread::yield();
      continue;
    }
    ++received;
    if (item.producer >= kMpscStressProducers || item.sequence != next[item.producer]) {
      ++bad;
      continue;
    }
    ++next[item.producer];
  }
  for (std::thread& t : producers) t.join();
  EXPECT_EQ(bad, 0u);
  for (uint32_t p = 0; p < kMpscStressProducers; ++p) EXPECT_EQ(next[p], items) << "producer " << p;
  EXPECT_TRUE(queue.Empty());
}

TEST(MpscQueueStressTest, FourProducersKeepTheirOrderAndNothingIsLost) {
  ProducersKeepTheirOrderAndNothingIsLost(1024, kMpscStressItemsPerProducer);
}

// Four producers through two cells: nearly every push finds the queue full and reads the head the
// consumer publishes, or the bound another producer stored. Run under ThreadSanitizer in CI, this
// holds that a cell is overwritten only after the consumer's read of it happened before.
TEST(MpscQueueStressTest, FourProducersThroughTwoCellsKeepTheirOrderAndNothingIsLost) {
  ProducersKeepTheirOrderAndNothingIsLost(2, 20'000);
}

}  // namespace
}  // namespace ndksim::hw
