// SPDX-License-Identifier: MIT
// A timeline of booked work: one direction of the PCIe link (pcie_link.h), and each processing unit
// (processing_units.h), which serves work as its data becomes ready.
#pragma once

#include <cstdint>
#include <vector>

#include "ndksim/time.h"

namespace ndksim::hw {

// One direction of the link as a timeline of booked transfers. A transfer takes the earliest gap,
// at or after the time it is ready, that is long enough for it. Transfers booked for the future
// (read completions due after the read latency) thus leave the link to traffic that is ready now,
// and all traffic of the direction shares its bandwidth.
class LinkDirection {
 public:
  // Books `length` of link time from `ready` on; returns when the transfer ends. `now` lets the
  // timeline forget what is over.
  TimePoint Book(TimePoint now, TimePoint ready, Duration length);

 private:
  struct Busy {
    TimePoint start;
    TimePoint end;
  };
  // Disjoint, in time order (so their ends are in order too); the entries before head_ are over.
  // Forgetting advances head_, and the vector is compacted when half of it is over, so each
  // booking costs a binary search plus the gaps it does not fit in.
  std::vector<Busy> busy_;
  std::size_t head_ = 0;
};

}  // namespace ndksim::hw
