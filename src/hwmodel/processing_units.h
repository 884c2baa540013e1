// SPDX-License-Identifier: MIT
// The NIC's processing units: the engines that parse WQEs, handle doorbells and serve inbound
// reads. Each is a server with a busy-until time. A QP is always served by the same unit, so its
// work stays in order, while QPs on different units proceed in parallel (Kalia et al., "Design
// Guidelines for High Performance RDMA Systems", USENIX ATC 2016).
#pragma once

#include <algorithm>
#include <vector>

#include "hwmodel/host_interface.h"
#include "ndksim/profile.h"
#include "ndksim/time.h"

namespace ndksim::hw {

class ProcessingUnits {
 public:
  explicit ProcessingUnits(const HardwareProfile& p) : clock_(p.nic_clock), free_(p.processing_units) {}

  // Occupies the unit of `qpn` for `cycles`, starting at `now` or when it is next free; returns
  // when the work is done.
  TimePoint Run(Qpn qpn, Cycles cycles, TimePoint now) {
    TimePoint& free = free_[qpn.value % free_.size()];
    free = std::max(now, free) + clock_.ToDuration(cycles);
    return free;
  }

 private:
  ClockDomain clock_;
  std::vector<TimePoint> free_;
};

}  // namespace ndksim::hw
