// SPDX-License-Identifier: MIT
// PrefetchForWrite: asks the core to take a cache line for writing ahead of the store that needs
// it, so that store finds the line already held and leaves the store buffer at once.
//
// Producers of lines that another core reads (WQE slots, doorbell cells) use it a few items
// ahead: the engine's thread read each of those lines a lap earlier and still holds a copy, and
// without the prefetch the producer's store would wait for that copy to be taken back, with every
// later store queued behind it.
//
// On x86-64 it is PREFETCHW. GCC's __builtin_prefetch(p, 1) emits PREFETCHW only for targets
// with PRFCHW and otherwise a read prefetch, which fetches the line shared and leaves the store
// to take it again; the instruction is written out instead. CPUs without PRFCHW execute its
// encoding as a no-op. Elsewhere, the compiler's write prefetch.
#pragma once

#include <cstdint>

namespace ndksim {

// How many items ahead of the one being written a producer takes a line. Measured with the
// threaded posting benchmarks (docs/performance.md): 2 and 4 give the same figures, 8 and more
// lose much of the gain. Why is not established; one explanation is that the consumer's core
// takes a line prefetched too early back before the producer writes it.
inline constexpr std::uint32_t kWriteAheadItems = 4;

// The distance for a ring of `ring_items` items (a power of two): kWriteAheadItems, or half a lap
// in a ring of fewer than twice as many (a ring of one item prefetches the slot being written).
constexpr std::uint32_t WriteAheadFor(std::uint32_t ring_items) {
  return ring_items / 2 < kWriteAheadItems ? ring_items / 2 : kWriteAheadItems;
}

inline void PrefetchForWrite(const void* p) {
#if defined(__x86_64__)
  // No memory is read or written: the operand only names the line.
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

// PrefetchForRead: asks the core to start reading a line that a later step will read, so the miss
// overlaps the work in between. The engine uses it for host-ring lines an application thread
// wrote (a WQE a doorbell just announced, the next receive WQE): in threaded mode each such line
// has to come over from the writer's core.
//
// On x86-64 it is PREFETCHT0, written out for another reason: GCC counts __builtin_prefetch as
// free of side effects, so a function whose only work is the prefetch (the receive read-ahead)
// is found pure and every call to it deleted. A volatile asm is never deleted.
inline void PrefetchForRead(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

}  // namespace ndksim
