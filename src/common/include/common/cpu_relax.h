// SPDX-License-Identifier: MIT
// CpuRelax: one turn of a spin-wait loop. On x86 it is PAUSE, which tells the core that the thread
// is waiting and leaves its resources to whatever shares the core; elsewhere the thread yields.
// A loop of sched_yield calls instead (a system call per turn) measurably slowed another core's
// thread here (docs/performance.md, "The poster's wait").
#pragma once

#if !(defined(__x86_64__) || defined(__i386__))
#include <thread>
#endif

namespace ndksim {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace ndksim
