// SPDX-License-Identifier: MIT
// The two halves of the store-load fence (common/asymmetric_fence.h) that PostReceive and
// Qp::MarkInError run: Dekker's pattern between two threads, many rounds.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/asymmetric_fence.h"
#include "sanitizers.h"

namespace ndksim {
namespace {

// Each round, both threads store their flag, run their half, then load the other's flag; at least
// one of them must see the other's store. On x86 a store waits in the store buffer while the load
// behind it goes ahead, so without a fence (or with a light half and no heavy one) both loads see
// 0 now and then: a few rounds in 20,000 on the machines the suite runs on.
TEST(AsymmetricFence, OneOfTwoThreadsAlwaysSeesTheOthersStore) {
  constexpr int kRounds = testing_build::kUnderTsan ? 2'000 : 20'000;
  std::atomic<int> light_flag{0};
  std::atomic<int> heavy_flag{0};
  std::atomic<int> started{0};   // the round the heavy thread may run
  std::atomic<int> finished{0};  // the last round it ran
  int heavy_saw = 0;             // what it loaded, read after `finished` (acquire)
  std::thread heavy([&] {
    for (int r = 1; r <= kRounds; ++r) {
      // acquire: the flags' reset for this round happens before our store.
      while (started.load(std::memory_order_acquire) != r) {
      }
      heavy_flag.store(1, std::memory_order_relaxed);
      HeavyFence();
      heavy_saw = light_flag.load(std::memory_order_relaxed);
      finished.store(r, std::memory_order_release);  // publishes heavy_saw
    }
  });
  int both_missed = 0;
  for (int r = 1; r <= kRounds; ++r) {
    light_flag.store(0, std::memory_order_relaxed);
    heavy_flag.store(0, std::memory_order_relaxed);
    started.store(r, std::memory_order_release);
    light_flag.store(1, std::memory_order_relaxed);
    LightFence();
    const int light_saw = heavy_flag.load(std::memory_order_relaxed);
    while (finished.load(std::memory_order_acquire) != r) {
    }
    if (light_saw == 0 && heavy_saw == 0) ++both_missed;
  }
  heavy.join();
  EXPECT_EQ(both_missed, 0) << "in " << kRounds << " rounds (asymmetric halves: " << AsymmetricFences() << ")";
}

// Outside ThreadSanitizer the halves are asymmetric exactly where the kernel offers private
// expedited membarrier (Linux 4.14 on, unless a sandbox filters the call); under TSan, and where
// it is missing, both halves are full fences.
TEST(AsymmetricFence, TheHalvesAreAsymmetricExactlyWhereTheKernelOffersMembarrier) {
#if defined(__linux__)
  const long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  const bool offered = supported > 0 && (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0;
  EXPECT_EQ(AsymmetricFences(), offered && !testing_build::kUnderTsan);
#else
  EXPECT_FALSE(AsymmetricFences());
#endif
}

}  // namespace
}  // namespace ndksim
