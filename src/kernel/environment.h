// SPDX-License-Identifier: MIT
// A kernel environment over one fabric: the scheduler of kernel threads, the dispatcher's events
// and waits, and simulated time, which is the fabric's clock. Kernel threads run on the thread
// that calls Run, one at a time; when every one is blocked, the fabric runs until something wakes
// one (a completion's callback setting an event, like a DPC) or the earliest wait's deadline
// comes, and only then does simulated time move.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "dispatcher.h"
#include "ndksim/fabric.h"
#include "scheduler.h"

namespace ndksim::kernel {

class Environment {
 public:
  Environment(Fabric& fabric, std::uint64_t seed);
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  Scheduler& Threads() { return scheduler_; }
  Dispatcher& Objects() { return dispatcher_; }
  TimePoint Now() const { return fabric_.Now(); }

  // Runs `entry` as the first kernel thread (a driver's entry), and every thread it starts, until
  // all have ended. The fabric must be in stepped mode. Throws DeadlockError if every thread waits
  // for something that nothing left in the simulation can bring.
  void Run(std::string name, std::function<void()> entry);

 private:
  // The scheduler's idle hook.
  bool AdvanceTime();

  Fabric& fabric_;
  Scheduler scheduler_;
  Dispatcher dispatcher_;
};

}  // namespace ndksim::kernel
