// SPDX-License-Identifier: MIT
// The host CPU's cores, and which core each thread runs on.
#include "hwmodel/host_cpu.h"

#include <cmath>
#include <limits>

#include "common/check.h"

namespace ndksim {

namespace {
// The number the next thread to charge a host CPU gets.
std::atomic<std::uint32_t> g_next_thread_number{1};
}  // namespace

namespace hw::detail {
thread_local constinit std::uint32_t t_bound_core = kUnboundCore;
thread_local constinit std::uint32_t t_thread_number = 0;

std::uint32_t NumberThisThread() {
  // relaxed: the counter only hands out distinct numbers. 0 means "not numbered", so skip it when
  // the counter wraps.
  std::uint32_t n = g_next_thread_number.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = g_next_thread_number.fetch_add(1, std::memory_order_relaxed);
  t_thread_number = n;
  return n;
}
}  // namespace hw::detail

ScopedCore::ScopedCore(std::uint32_t core) : previous_(hw::detail::t_bound_core) {
  NDKSIM_CHECK(core != hw::detail::kUnboundCore, "core {} is not a core number", core);
  hw::detail::t_bound_core = core;
}

ScopedCore::~ScopedCore() { hw::detail::t_bound_core = previous_; }

namespace hw {

HostCpu::HostCpu(const HardwareProfile& p, const std::atomic<std::int64_t>& now_ps, std::uint64_t seed,
                 std::uint64_t node)
    : now_ps_(now_ps),
      post_ps_((p.host_post + p.host_doorbell_record).count()),
      block_ps_(p.host_wqe_block.count()),
      mmio_line_ps_(p.host_mmio_store.count()),
      mmio_flush_ps_(p.host_mmio_flush.count()),
      cqe_ps_(p.host_cqe_poll.count()),
      enabled_(post_ps_ != 0 || block_ps_ != 0 || mmio_line_ps_ != 0 || mmio_flush_ps_ != 0 || cqe_ps_ != 0),
      interrupted_(p.noise && p.host_interruption_interval > Duration::zero()),
      interval_ps_(static_cast<double>(p.host_interruption_interval.count())),
      interruption_min_ps_(static_cast<double>(p.host_interruption_min.count())),
      interruption_max_ps_(p.host_interruption_max.count()),
      inverse_shape_(1.0 / p.host_interruption_shape),
      seed_(seed),
      count_(std::max<std::uint32_t>(p.host_cores, 1)),
      cores_(std::make_unique<Core[]>(count_)) {
  for (std::uint32_t i = 0; i < count_; ++i) {
    Core& c = cores_[i];
    c.stream = NoiseStreamId(NoiseSource::kHostCore, node, i);
    if (interrupted_) {
      NextInterruption(c, 0);
    } else {
      // Never: the fast paths' comparisons then always pass.
      c.interruption_start_ps.store(std::numeric_limits<std::int64_t>::max(), std::memory_order_relaxed);
      c.interruption_end_ps.store(std::numeric_limits<std::int64_t>::max(), std::memory_order_relaxed);
    }
  }
}

void HostCpu::NextInterruption(Core& c, std::int64_t from) {
  // relaxed, all: the core's own state, as its clock (see Begin).
  const std::uint64_t n = c.draws.load(std::memory_order_relaxed);
  c.draws.store(n + 2, std::memory_order_relaxed);
  // Exponential gap (Poisson arrivals), then a Pareto length cut at the maximum.
  const double gap = -std::log1p(-UnitInterval(NoiseDraw(seed_, c.stream, n))) * interval_ps_;
  const double length = interruption_min_ps_ * std::pow(1.0 - UnitInterval(NoiseDraw(seed_, c.stream, n + 1)),
                                                        -inverse_shape_);
  const std::int64_t start = from + static_cast<std::int64_t>(gap);
  const std::int64_t end = start + std::min(static_cast<std::int64_t>(length), interruption_max_ps_);
  c.interruption_start_ps.store(start, std::memory_order_relaxed);
  c.interruption_end_ps.store(end, std::memory_order_relaxed);
}

std::int64_t HostCpu::AfterInterruptions(Core& c, std::int64_t t) {
  // The process is memoryless: after a long idle stretch, restart it shortly before `t` instead of
  // drawing every interruption the core slept through (one that began up to the longest length
  // before `t` could still have it).
  const std::int64_t restart_gap = 64 * static_cast<std::int64_t>(interval_ps_);
  if (t - c.interruption_end_ps.load(std::memory_order_relaxed) > restart_gap) {
    NextInterruption(c, t - interruption_max_ps_);
  }
  for (;;) {
    const std::int64_t start = c.interruption_start_ps.load(std::memory_order_relaxed);
    const std::int64_t end = c.interruption_end_ps.load(std::memory_order_relaxed);
    if (t < start) return t;
    if (t < end) {
      // The core is away: the work begins when the interruption is over.
      c.interruptions.store(c.interruptions.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      c.interrupted_ps.store(c.interrupted_ps.load(std::memory_order_relaxed) + (end - t), std::memory_order_relaxed);
      t = end;
    }
    NextInterruption(c, end);
  }
}

std::int64_t HostCpu::Stretch(Core& c, std::int64_t end) {
  for (;;) {
    const std::int64_t start = c.interruption_start_ps.load(std::memory_order_relaxed);
    if (end <= start) return end;
    // It strikes while the work is going on: the work is done that much later.
    const std::int64_t length = c.interruption_end_ps.load(std::memory_order_relaxed) - start;
    c.interruptions.store(c.interruptions.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    c.interrupted_ps.store(c.interrupted_ps.load(std::memory_order_relaxed) + length, std::memory_order_relaxed);
    end += length;
    NextInterruption(c, start + length);
  }
}

TimePoint HostCpu::Clock(std::uint32_t core) const {
  return TimePoint{Picoseconds(cores_[Wrap(core)].clock_ps.load(std::memory_order_relaxed))};
}

Duration HostCpu::Busy(std::uint32_t core) const {
  return Picoseconds(cores_[Wrap(core)].busy_ps.load(std::memory_order_relaxed));
}

std::uint64_t HostCpu::Interruptions(std::uint32_t core) const {
  return cores_[Wrap(core)].interruptions.load(std::memory_order_relaxed);
}

Duration HostCpu::InterruptedTime(std::uint32_t core) const {
  return Picoseconds(cores_[Wrap(core)].interrupted_ps.load(std::memory_order_relaxed));
}

}  // namespace hw

}  // namespace ndksim
