// SPDX-License-Identifier: MIT
// Simulated time for kernel threads: the fabric runs only while every kernel thread is blocked.
#include "environment.h"

#include <optional>
#include <utility>

namespace ndksim::kernel {

Environment::Environment(Fabric& fabric, std::uint64_t seed)
    : fabric_(fabric), scheduler_(seed), dispatcher_(scheduler_, [this] { return fabric_.Now(); }) {
  scheduler_.SetIdleHook([this] { return AdvanceTime(); });
}

void Environment::Run(std::string name, std::function<void()> entry) {
  scheduler_.Create(std::move(name), std::move(entry));
  scheduler_.Run();
}

bool Environment::AdvanceTime() {
  const std::optional<TimePoint> deadline = dispatcher_.NextDeadline();
  if (deadline && *deadline <= fabric_.Now()) return dispatcher_.ExpireDue(fabric_.Now());
  // Run the simulation until a callback wakes a kernel thread, up to the earliest deadline (with
  // none, in steps of a simulated second, for as long as the simulation has work).
  const Duration limit = deadline ? *deadline - fabric_.Now() : Milliseconds(1000);
  const RunResult r = fabric_.RunUntil([this] { return scheduler_.HasRunnable(); }, limit);
  if (r.stop == RunStop::kDone) return true;
  if (!deadline) return r.stop == RunStop::kTimeLimit;  // idle with nothing to wait for: a deadlock
  // Nothing woke a thread before the deadline: the clock moves to it, and the waits due end.
  if (fabric_.Now() < *deadline) fabric_.RunFor(*deadline - fabric_.Now());
  const bool expired = dispatcher_.ExpireDue(fabric_.Now());
  return expired || scheduler_.HasRunnable();
}

}  // namespace ndksim::kernel
