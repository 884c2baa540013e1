// SPDX-License-Identifier: MIT
// A store-load fence split in two halves: a light one for a thread that runs it on every call of
// a hot path, and a heavy one for a thread that runs it rarely. Each side stores, runs its half,
// then loads what the other side stores (Dekker's pattern); with the two halves, as with two
// full fences, at least one side sees the other's store.
//
// The heavy half makes every running thread of the process execute a full fence (Linux
// membarrier, private expedited; Windows offers the same as FlushProcessWriteBuffers). The light
// half then only has to keep the compiler from moving the store past the load, and costs nothing
// at run time, where a full fence would wait for every store the thread has buffered.
//
// Where membarrier is missing (not Linux, a kernel before 4.14, a sandbox that refuses the call)
// and under ThreadSanitizer (which does not know the system call's effect), both halves are
// full fences.
#pragma once

#include <atomic>

#include "common/check.h"

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ndksim {

namespace asymmetric_fence_internal {

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NDKSIM_FENCE_FULL_ONLY 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define NDKSIM_FENCE_FULL_ONLY 1
#endif

inline bool Register() {
#if defined(__linux__) && !defined(NDKSIM_FENCE_FULL_ONLY)
  // The process registers once; every thread, present and future, is then covered.
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
  return false;
#endif
}

// Decided once, when the program starts, before any thread can use either half.
inline const bool kAsymmetric = Register();

}  // namespace asymmetric_fence_internal

// The hot side's half.
inline void LightFence() {
  if (asymmetric_fence_internal::kAsymmetric) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

// The rare side's half.
inline void HeavyFence() {
#if defined(__linux__)
  if (asymmetric_fence_internal::kAsymmetric) {
    // The process registered when it started, and the command fails only without a registration;
    // the light half alone would then order nothing, so a failure is not papered over.
    const long result = syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    NDKSIM_CHECK(result == 0, "membarrier (private expedited) failed after its registration");
    return;
  }
#endif
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Whether the halves are asymmetric in this process (for tests and diagnostics).
inline bool AsymmetricFences() { return asymmetric_fence_internal::kAsymmetric; }

}  // namespace ndksim
