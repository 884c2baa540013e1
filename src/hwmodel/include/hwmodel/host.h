// SPDX-License-Identifier: MIT
// The host side of a node as a driver sees it: interrupt delivery, timers and deferred procedure
// calls. These are OS services; the NIC uses only RaiseInterrupt, the driver only the rest.
#pragma once

#include <cstdint>
#include <functional>

#include "common/inplace_callback.h"
#include "ndksim/time.h"

namespace ndksim::hw {

class EventQueue;

// What a timer or a DPC runs (the event queue's callback type: queuing one never allocates).
using HostCallback = InplaceCallback<48>;

class Host {
 public:
  using InterruptHandler = std::function<void(std::uint32_t vector)>;

  explicit Host(EventQueue& events) : events_(events) {}

  // Driver: installs its interrupt service routine (MSI-X vectors of this node's NIC).
  void SetInterruptHandler(InterruptHandler handler) { handler_ = std::move(handler); }
  // NIC: an MSI-X write reached the host; the handler runs now, on the engine's thread.
  void RaiseInterrupt(std::uint32_t vector) {
    if (handler_) handler_(vector);
  }
  // Driver: run `fn` after `delay` of simulated time (a kernel timer).
  void ScheduleTimer(Duration delay, HostCallback fn);
  // Driver: run `fn` at the current time, after the call that queued it has returned (a DPC).
  void QueueDpc(HostCallback fn);
  TimePoint Now() const;

 private:
  EventQueue& events_;
  InterruptHandler handler_;
};

}  // namespace ndksim::hw
