// SPDX-License-Identifier: MIT
// The block recycler (src/common/block_recycler.h): freed large blocks are kept by size class and
// handed to the next request of that class; small ones go back to the C library.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "common/block_recycler.h"

namespace ndksim {
namespace {

class BlockRecyclerTest : public ::testing::Test {
 protected:
  void SetUp() override { BlockRecycler::Release(); }  // other tests' blocks do not count here
  void TearDown() override { BlockRecycler::Release(); }
};

TEST_F(BlockRecyclerTest, AGivenBlockIsTheNextOneTakenOfItsClass) {
  void* first = BlockRecycler::Take(100'000);
  BlockRecycler::Give(first, 100'000);
  EXPECT_EQ(BlockRecycler::Take(100'000), first);
  BlockRecycler::Give(first, 100'000);
}

TEST_F(BlockRecyclerTest, SizesOfOneClassShareBlocks) {
  // 98,305 to 114,688 bytes are one class (7/4 of 64 KiB); 114,689 is the next.
  void* block = BlockRecycler::Take(100'000);
  BlockRecycler::Give(block, 100'000);
  void* same_class = BlockRecycler::Take(114'688);
  EXPECT_EQ(same_class, block);
  BlockRecycler::Give(same_class, 114'688);
  void* next_class = BlockRecycler::Take(114'689);
  EXPECT_NE(next_class, block);
  BlockRecycler::Give(next_class, 114'689);
}

TEST_F(BlockRecyclerTest, ItCountsWhatItKeepsAndReleaseFreesIt) {
  void* a = BlockRecycler::Take(4096);
  void* b = BlockRecycler::Take(5000);
  BlockRecycler::Give(a, 4096);
  BlockRecycler::Give(b, 5000);
  EXPECT_EQ(BlockRecycler::Cached(), (std::pair<std::size_t, std::size_t>{2, 4096 + 5120}));
  BlockRecycler::Release();
  EXPECT_EQ(BlockRecycler::Cached(), (std::pair<std::size_t, std::size_t>{0, 0}));
}

TEST_F(BlockRecyclerTest, SmallBlocksAreNotKept) {
  void* small = BlockRecycler::Take(4095);
  BlockRecycler::Give(small, 4095);
  EXPECT_EQ(BlockRecycler::Cached().first, 0u);
}

TEST_F(BlockRecyclerTest, BlocksAreCacheLineAlignedAndNewOnesReadAsZeros) {
  for (const std::size_t bytes : {std::size_t{1}, std::size_t{100}, std::size_t{4096}, std::size_t{70'000}}) {
    auto* p = static_cast<unsigned char*>(BlockRecycler::Take(bytes));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u) << bytes;
    bool zeros = true;
    for (std::size_t i = 0; i < bytes; ++i) zeros = zeros && p[i] == 0;
    EXPECT_TRUE(zeros) << bytes;
    BlockRecycler::Give(p, bytes);
  }
}

TEST_F(BlockRecyclerTest, ARecycledArrayGivesItsBlockBackWhenItGoes) {
  void* block = nullptr;
  {
    RecycledArray<std::uint64_t> array(10'000);
    block = array.get();
    array[9'999] = 7;
  }
  EXPECT_EQ(BlockRecycler::Cached().first, 1u);
  RecycledArray<std::uint64_t> again(10'000);
  EXPECT_EQ(again.get(), block);
}

}  // namespace
}  // namespace ndksim
