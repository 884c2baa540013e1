// SPDX-License-Identifier: MIT
// The NIC's processing units: the engines that parse WQEs, handle doorbells and serve inbound
// reads. Each is a server with a busy-until time. A QP is always served by the same unit, so its
// work stays in order, while QPs on different units proceed in parallel (Kalia et al., "Design
// Guidelines for High Performance RDMA Systems", USENIX ATC 2016).
#pragma once

#include <algorithm>
#include <vector>

#include "hwmodel/host_interface.h"
#include "timeline.h"
#include "ndksim/profile.h"
#include "ndksim/time.h"

namespace ndksim::hw {

class ProcessingUnits {
 public:
  explicit ProcessingUnits(const HardwareProfile& p) : clock_(p.nic_clock), units_(p.processing_units) {}

  // Occupies the unit of `qpn` for `cycles`, starting at `now` or when it is next free; returns
  // when the work is done. The work needs the QP's context, on chip from `context` on (later than
  // `now` after a context-cache miss): it waits for it, and the unit serves other QPs' work that is
  // ready meanwhile, so it runs in the first idle stretch of the unit from then on.
  TimePoint Run(Qpn qpn, Cycles cycles, TimePoint now, TimePoint context = {}) {
    return units_[qpn.value % units_.size()].Book(now, std::max(now, context), clock_.ToDuration(cycles));
  }
  std::size_t Count() const { return units_.size(); }
  // The work booked on unit `i` so far.
  Duration Booked(std::size_t i) const { return units_[i].Booked(); }

 private:
  ClockDomain clock_;
  std::vector<Timeline> units_;  // each unit's booked work
};

}  // namespace ndksim::hw
