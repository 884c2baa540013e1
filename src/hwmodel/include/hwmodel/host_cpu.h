// SPDX-License-Identifier: MIT
// The host CPU: one timeline of simulated time per core of a node. What the driver does on the
// posting and polling paths costs time on the core of the thread that does it, from the profile's
// host fields: building a WQE, the doorbell record, the MMIO write (its write-combining stores,
// then the flush that waits for them to drain), taking CQEs. A core works on one thing at a time
// and never before the engine's current time, so one thread's posting rate is bounded by its costs
// and several threads on several cores add up. With the profile's noise on, each core is also
// taken away now and then (interruptions: a Poisson process of heavy-tailed stalls, seeded per
// core), which gives the latencies of the work on it their tail.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "hwmodel/host_interface.h"  // kWqeBlockBytes
#include "hwmodel/noise.h"
#include "hwmodel/ring.h"            // kCacheLineBytes
#include "ndksim/host_cpu.h"
#include "ndksim/profile.h"
#include "ndksim/time.h"

namespace ndksim::hw {

// A CPU's write-combining buffer: MMIO stores to the doorbell page gather in 64-B lines, and each
// line leaves the core as a PCIe write of its own.
inline constexpr std::uint32_t kWriteCombiningLineBytes = 64;

namespace detail {
// ScopedCore's binding of the calling thread; kUnboundCore when it has none.
inline constexpr std::uint32_t kUnboundCore = ~std::uint32_t{0};
extern thread_local constinit std::uint32_t t_bound_core;
// The calling thread's number in the order threads first charged any host CPU (1, 2, ...); 0
// until then.
extern thread_local constinit std::uint32_t t_thread_number;
std::uint32_t NumberThisThread();
}  // namespace detail

// Threading: the posting and polling entries run on any thread (each core's clock is an atomic
// that only the threads bound to that core write; threads sharing a core in threaded mode may
// overlap their charges). The clock they start from is the engine's current time as it publishes
// it (EventQueue::PublishedNow), so in stepped mode, where the caller is the engine's thread, the
// same calls give the same times.
class HostCpu {
 public:
  // `seed` and `node` choose the cores' noise streams.
  HostCpu(const HardwareProfile& profile, const std::atomic<std::int64_t>& now_ps, std::uint64_t seed = 1,
          std::uint64_t node = 0);

  // False when every host cost is zero (the functional profile): nothing is charged, and MMIO
  // writes leave the CPU at the engine's current time.
  bool Enabled() const { return enabled_; }

  // The calling thread builds a WQE of `wqe_bytes` in a queue and stores the queue's doorbell
  // record (host_post, host_wqe_block per 64-B block past the first, host_doorbell_record).
  // Returns when it began: the request's post time.
  TimePoint PostWqe(std::uint32_t wqe_bytes) {
    if (!enabled_) return TimePoint{Picoseconds(now_ps_.load(std::memory_order_relaxed))};
    Core& c = Current();
    const std::int64_t start = Begin(c);
    constexpr auto kBlock = static_cast<std::int64_t>(kWqeBlockBytes);
    const std::int64_t blocks = (std::int64_t{wqe_bytes} + kBlock - 1) / kBlock;
    Occupy(c, start, Work(c, start, post_ps_ + std::max<std::int64_t>(blocks - 1, 0) * block_ps_));
    return TimePoint{Picoseconds(start)};
  }

  // The calling thread writes `bytes` to a doorbell register (8 B) or writes a WQE through the
  // doorbell window (BlueFlame-style): one write-combining store per 64-B line (host_mmio_store),
  // then the flush (host_mmio_flush), during which the core waits and the write is on its way.
  // Returns when the write leaves the core, TimePoint{} when the CPU charges nothing.
  TimePoint MmioWrite(std::uint32_t bytes) {
    if (!enabled_) return TimePoint{};
    Core& c = Current();
    const std::int64_t start = Begin(c);
    const std::int64_t lines =
        std::max<std::int64_t>((std::int64_t{bytes} + kWriteCombiningLineBytes - 1) / kWriteCombiningLineBytes, 1);
    const std::int64_t leaves = Work(c, start, lines * mmio_line_ps_);
    Occupy(c, start, Work(c, leaves, mmio_flush_ps_));
    return TimePoint{Picoseconds(leaves)};
  }

  // The calling thread took `cqes` entries from a CQ (host_cqe_poll each). A poll that finds
  // nothing costs no time of its own: a polling core is waiting for the NIC anyway.
  void Poll(std::uint32_t cqes) {
    if (!enabled_ || cqes == 0) return;
    Core& c = Current();
    const std::int64_t start = Begin(c);
    Occupy(c, start, Work(c, start, std::int64_t{cqes} * cqe_ps_));
  }

  // The calling thread's core: the one a ScopedCore binds it to; else, counted from the first
  // unbound thread that charged this CPU (core 0), the order in which threads first charged any
  // (ndksim/host_cpu.h). Taken modulo CoreCount().
  std::uint32_t CoreOfThisThread() {
    const std::uint32_t bound = detail::t_bound_core;
    if (bound != detail::kUnboundCore) return Wrap(bound);
    std::uint32_t number = detail::t_thread_number;
    if (number == 0) number = detail::NumberThisThread();
    // relaxed: the number is set once (the CAS decides who was first) and orders nothing else.
    std::uint32_t base = first_thread_.load(std::memory_order_relaxed);
    if (base == 0 && first_thread_.compare_exchange_strong(base, number, std::memory_order_relaxed)) base = number;
    return Wrap(number - base);  // a thread numbered before the first wraps round: still distinct
  }

  std::uint32_t CoreCount() const { return count_; }
  // When `core` (taken modulo CoreCount) is next free, and how much time has been charged to it.
  TimePoint Clock(std::uint32_t core) const;
  Duration Busy(std::uint32_t core) const;
  // How many interruptions have struck `core`'s work, and the time they took from it.
  std::uint64_t Interruptions(std::uint32_t core) const;
  Duration InterruptedTime(std::uint32_t core) const;

 private:
  struct alignas(kCacheLineBytes) Core {
    std::atomic<std::int64_t> clock_ps{0};  // free from this time on
    std::atomic<std::int64_t> busy_ps{0};   // time charged so far
    // The core's next interruption (relaxed atomics, as the clock: its own thread(s) write them).
    std::atomic<std::int64_t> interruption_start_ps{0};
    std::atomic<std::int64_t> interruption_end_ps{0};
    std::atomic<std::uint64_t> draws{0};  // noise draws taken from the core's stream
    std::atomic<std::uint64_t> interruptions{0};
    std::atomic<std::int64_t> interrupted_ps{0};
    std::uint64_t stream = 0;  // the core's noise stream id
  };

  Core& Current() { return cores_[CoreOfThisThread()]; }
  // A core number modulo the count, without a division in the usual case (a core that exists).
  std::uint32_t Wrap(std::uint32_t core) const { return core < count_ ? core : core % count_; }
  // Work on `c` starts when the core is free, not before the engine's current time, and not while
  // an interruption has the core.
  std::int64_t Begin(Core& c) {
    // relaxed, both: a core's clock is written by its own thread(s); the engine's time is a hint
    // that only ever grows, and a stale value only starts the work a little earlier.
    const std::int64_t t =
        std::max(c.clock_ps.load(std::memory_order_relaxed), now_ps_.load(std::memory_order_relaxed));
    if (!interrupted_ || t < c.interruption_start_ps.load(std::memory_order_relaxed)) return t;
    return AfterInterruptions(c, t);
  }
  // When `cost` of work begun at `start` is done: later by every interruption that strikes it.
  std::int64_t Work(Core& c, std::int64_t start, std::int64_t cost) {
    const std::int64_t end = start + cost;
    if (!interrupted_ || end <= c.interruption_start_ps.load(std::memory_order_relaxed)) return end;
    return Stretch(c, end);
  }
  static void Occupy(Core& c, std::int64_t start, std::int64_t end) {
    // relaxed: see Begin. A load and a store, not a read-modify-write: the posting path stays free
    // of locked instructions.
    c.clock_ps.store(end, std::memory_order_relaxed);
    c.busy_ps.store(c.busy_ps.load(std::memory_order_relaxed) + (end - start), std::memory_order_relaxed);
  }
  // The slow paths of Begin and Work (host_cpu.cc): an interruption is due.
  std::int64_t AfterInterruptions(Core& c, std::int64_t t);
  std::int64_t Stretch(Core& c, std::int64_t end);
  // Draws the core's next interruption, arriving after `from`.
  void NextInterruption(Core& c, std::int64_t from);

  const std::atomic<std::int64_t>& now_ps_;
  std::int64_t post_ps_ = 0;   // host_post + host_doorbell_record
  std::int64_t block_ps_ = 0;  // host_wqe_block
  std::int64_t mmio_line_ps_ = 0;
  std::int64_t mmio_flush_ps_ = 0;
  std::int64_t cqe_ps_ = 0;
  bool enabled_ = false;
  // Interruptions (noise on and an interval): mean interval, Pareto scale, cap and 1/shape.
  bool interrupted_ = false;
  double interval_ps_ = 0;
  double interruption_min_ps_ = 0;
  std::int64_t interruption_max_ps_ = 0;
  double inverse_shape_ = 0;
  std::uint64_t seed_ = 1;
  std::uint32_t count_ = 1;
  std::atomic<std::uint32_t> first_thread_{0};  // number of the first unbound thread that charged it
  std::unique_ptr<Core[]> cores_;
};

}  // namespace ndksim::hw
