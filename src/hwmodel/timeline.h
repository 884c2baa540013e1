// SPDX-License-Identifier: MIT
// A timeline of booked work, for a resource that serves one thing at a time: each direction of the
// PCIe link and the NIC's DMA write engine (pcie_link.h), each processing unit (processing_units.h).
#pragma once

#include <cstdint>
#include <vector>

#include "ndksim/time.h"

namespace ndksim::hw {

// A piece of work takes the earliest gap, at or after the time it is ready, that is long enough
// for it. Work booked for the future (read completions due after the read latency, work waiting
// for a context) thus leaves the resource to work that is ready now, and all of it shares the
// resource's time.
class Timeline {
 public:
  // Books `length` of the resource's time from `ready` on; returns when the work ends. `now` lets
  // the timeline forget what is over.
  TimePoint Book(TimePoint now, TimePoint ready, Duration length);
  // All the time booked so far, including what is still ahead.
  Duration Booked() const { return booked_; }

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
  Duration booked_{};
};

}  // namespace ndksim::hw
