// SPDX-License-Identifier: MIT
// Host services on the node's event queue: timers at kTimer priority, DPCs at kHost.
#include "hwmodel/host.h"

#include "event_queue.h"

namespace ndksim::hw {

Host::Host(EventQueue& events, const HardwareProfile& profile, std::uint64_t seed, std::uint32_t node)
    : events_(events), cpu_(profile, events.PublishedNow(), seed, node) {}

void Host::ScheduleTimer(Duration delay, HostCallback fn) {
  events_.ScheduleAfter(delay, EventPriority::kTimer, std::move(fn));
}

void Host::QueueDpc(HostCallback fn) { events_.ScheduleAfter(Duration::zero(), EventPriority::kHost, std::move(fn)); }

TimePoint Host::Now() const { return events_.Now(); }

}  // namespace ndksim::hw
