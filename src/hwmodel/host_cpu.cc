// SPDX-License-Identifier: MIT
// The host CPU's cores, and which core each thread runs on.
#include "hwmodel/host_cpu.h"

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

HostCpu::HostCpu(const HardwareProfile& p, const std::atomic<std::int64_t>& now_ps)
    : now_ps_(now_ps),
      post_ps_((p.host_post + p.host_doorbell_record).count()),
      block_ps_(p.host_wqe_block.count()),
      mmio_line_ps_(p.host_mmio_store.count()),
      mmio_flush_ps_(p.host_mmio_flush.count()),
      cqe_ps_(p.host_cqe_poll.count()),
      enabled_(post_ps_ != 0 || block_ps_ != 0 || mmio_line_ps_ != 0 || mmio_flush_ps_ != 0 || cqe_ps_ != 0),
      count_(std::max<std::uint32_t>(p.host_cores, 1)),
      cores_(std::make_unique<Core[]>(count_)) {}

TimePoint HostCpu::Clock(std::uint32_t core) const {
  return TimePoint{Picoseconds(cores_[Wrap(core)].clock_ps.load(std::memory_order_relaxed))};
}

Duration HostCpu::Busy(std::uint32_t core) const {
  return Picoseconds(cores_[Wrap(core)].busy_ps.load(std::memory_order_relaxed));
}

}  // namespace hw

}  // namespace ndksim
