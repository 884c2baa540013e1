// SPDX-License-Identifier: MIT
// Kernel threads as fibers, one at a time, in an order drawn from the seed.
#include "scheduler.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "common/check.h"
#include "ndksim/host_cpu.h"

namespace ndksim::kernel {

Scheduler::Scheduler(std::uint64_t seed, std::size_t stack_bytes, Options options)
    : seed_(seed), rng_(seed), options_(options), stack_bytes_(stack_bytes) {
  if (options_.strategy != ScheduleStrategy::kPct) return;
  NDKSIM_CHECK(options_.pct_depth >= 1, "PCT's depth is at least 1 (no change point)");
  NDKSIM_CHECK(options_.pct_steps >= 1, "PCT needs at least one step to place change points among");
  // Step numbers are drawn with repetition allowed: two change points at one step drop the same
  // thread twice, as PCT's definition permits.
  for (std::uint32_t i = 1; i < options_.pct_depth; ++i) change_points_.push_back(1 + rng_() % options_.pct_steps);
}

// Threads that never ended (Run ended in a deadlock or a failure) are abandoned: their stacks go
// with their fibers, and what was on them is not destroyed.
Scheduler::~Scheduler() = default;

Scheduler::ThreadId Scheduler::Create(std::string name, Body body) {
  NDKSIM_CHECK(static_cast<bool>(body), "kernel thread '{}' has nothing to run", name);
  const auto id = static_cast<ThreadId>(threads_.size());
  NDKSIM_CHECK(id != kNone, "too many kernel threads");
  auto t = std::make_unique<Thread>();
  t->id = id;
  t->name = std::move(name);
  t->body = std::move(body);
  t->scheduler = this;
  t->fiber = std::make_unique<Fiber>(&Scheduler::ThreadMain, t.get(), stack_bytes_);
  // PCT's random priorities, above every change point's and yield's; ties, vanishingly rare, go
  // to the older thread.
  if (options_.strategy == ScheduleStrategy::kPct) t->priority = kInitialPriorities + (rng_() >> 2);
  threads_.push_back(std::move(t));
  runnable_.push_back(id);
  return id;
}

std::uint32_t Scheduler::Choose(std::uint32_t n) {
  NDKSIM_CHECK(n > 0, "a choice among nothing");
  // Plain modulo of the engine's output: the same on every standard library, unlike the
  // distributions, whose algorithms are the library's own.
  return static_cast<std::uint32_t>(rng_() % n);
}

void Scheduler::SetDaemon(ThreadId thread, bool daemon) {
  NDKSIM_CHECK(thread < threads_.size(), "kernel thread {} does not exist", thread);
  threads_[thread]->daemon = daemon;
}

bool Scheduler::AllEnded() const {
  return std::all_of(threads_.begin(), threads_.end(),
                     [](const std::unique_ptr<Thread>& t) { return t->daemon || t->state == State::kEnded; });
}

void Scheduler::Run() { RunUntil([] { return false; }); }

void Scheduler::RunUntil(const std::function<bool()>& done) {
  NDKSIM_CHECK(!running_ && !InThread(), "Scheduler::Run is not reentrant");
  running_ = true;
  home_ = std::make_unique<Fiber>(Fiber::ThisThread{});
  for (;;) {
    if (failure_) break;
    bool stop = false;
    try {
      stop = done();
    } catch (...) {
      failure_ = std::current_exception();
      break;
    }
    if (stop) break;
    if (runnable_.empty()) {
      if (AllEnded()) break;
      bool progress = false;
      try {
        progress = idle_ && idle_();
      } catch (...) {
        // The hook's failure (the simulation's) ends the run like a thread's.
        failure_ = std::current_exception();
        break;
      }
      if (progress || !runnable_.empty()) continue;
      running_ = false;
      home_.reset();
      throw DeadlockError(DeadlockReport());
    }
    const std::size_t pick = NextPick();
    const ThreadId id = runnable_[pick];
    runnable_.erase(runnable_.begin() + static_cast<std::ptrdiff_t>(pick));
    Thread& t = *threads_[id];
    t.state = State::kRunning;
    current_ = id;
    if (preempted_at_ != nullptr) preemptions_.push_back(Preemption{picks_.size(), std::exchange(preempted_at_, nullptr)});
    picks_.push_back(id);
    ++switches_;
    {
      // Each kernel thread runs on a simulated core of its own (docs/model.md, "The host CPU"):
      // thread N on core N + 1 of every node. DPCs and provider callbacks run on the caller's
      // thread and core (an unbound test thread's first core is 0).
      const ScopedCore on(static_cast<std::uint32_t>(id) + 1);
      Fiber::Switch(*home_, *t.fiber);
    }
    current_ = kNone;
    if (t.state == State::kEnded) t.fiber.reset();  // its stack is free now
  }
  running_ = false;
  home_.reset();
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
}

std::size_t Scheduler::NextPick() {
  if (forced_ != kNone) {
    const auto it = std::find(runnable_.begin(), runnable_.end(), std::exchange(forced_, kNone));
    if (it != runnable_.end()) return static_cast<std::size_t>(it - runnable_.begin());
  }
  if (runnable_.size() == 1) return 0;
  if (options_.strategy == ScheduleStrategy::kRandom) return Choose(static_cast<std::uint32_t>(runnable_.size()));
  const ThreadId best = HighestRunnable();
  return static_cast<std::size_t>(std::find(runnable_.begin(), runnable_.end(), best) - runnable_.begin());
}

Scheduler::ThreadId Scheduler::HighestRunnable() const {
  ThreadId best = kNone;
  for (const ThreadId id : runnable_) {
    if (best == kNone || threads_[id]->priority > threads_[best]->priority ||
        (threads_[id]->priority == threads_[best]->priority && id < best)) {
      best = id;
    }
  }
  return best;
}

void Scheduler::ThreadMain(void* thread) {
  auto& t = *static_cast<Thread*>(thread);
  Scheduler& s = *t.scheduler;
  try {
    t.body();
  } catch (...) {
    if (!s.failure_) s.failure_ = std::current_exception();
  }
  t.body = nullptr;  // its captures go now, on this stack's watch
  t.state = State::kEnded;
  s.SwitchToScheduler(/*ended=*/true);
}

void Scheduler::SwitchToScheduler(bool ended) {
  Thread& t = *threads_[current_];
  Fiber::Switch(*t.fiber, *home_, ended);
}

void Scheduler::Block(Describe describe, const void* what) {
  NDKSIM_CHECK(InThread(), "Block outside a kernel thread (waiting for {})", describe(what));
  Thread& t = *threads_[current_];
  t.state = State::kBlocked;
  t.describe = describe;
  t.waits_for = what;
  SwitchToScheduler(/*ended=*/false);
  t.describe = nullptr;
  t.waits_for = nullptr;
}

void Scheduler::Block(const char* what) {
  Block([](const void* text) { return std::string(static_cast<const char*>(text)); }, what);
}

void Scheduler::Wake(ThreadId thread) {
  NDKSIM_CHECK(thread < threads_.size(), "waking kernel thread {}, which does not exist", thread);
  Thread& t = *threads_[thread];
  if (t.state != State::kBlocked) return;
  t.state = State::kRunnable;
  runnable_.push_back(thread);
}

void Scheduler::Yield() {
  NDKSIM_CHECK(InThread(), "Yield outside a kernel thread");
  if (options_.strategy == ScheduleStrategy::kPct) threads_[current_]->priority = --yield_priority_;
  GiveUp(nullptr);
}

void Scheduler::GiveUp(const char* preempted_at) {
  Thread& t = *threads_[current_];
  t.state = State::kRunnable;
  runnable_.push_back(current_);
  preempted_at_ = preempted_at;
  SwitchToScheduler(/*ended=*/false);
}

void Scheduler::PreemptionPoint(const char* where) {
  NDKSIM_CHECK(InThread(), "a preemption point outside a kernel thread ({})", where);
  ++steps_;
  if (options_.strategy == ScheduleStrategy::kRandom) {
    if (runnable_.empty()) return;
    // The running thread is one of the candidates, drawn as the last; the pick made here is
    // the one Run makes next.
    const std::uint32_t pick = Choose(static_cast<std::uint32_t>(runnable_.size() + 1));
    if (pick == runnable_.size()) return;
    forced_ = runnable_[pick];
    GiveUp(where);
    return;
  }
  // PCT: the i-th change point (i = 1..d-1) sets priority d - i, below every initial one.
  Thread& t = *threads_[current_];
  for (std::size_t i = 0; i < change_points_.size(); ++i) {
    if (change_points_[i] == steps_) t.priority = kChangePriorities + (change_points_.size() - i);
  }
  const ThreadId best = HighestRunnable();
  if (best != kNone && threads_[best]->priority > t.priority) GiveUp(where);
}

const std::string& Scheduler::NameOf(ThreadId thread) const {
  NDKSIM_CHECK(thread < threads_.size(), "kernel thread {} does not exist", thread);
  return threads_[thread]->name;
}

std::string Scheduler::DeadlockReport() const {
  std::string report = fmt::format("deadlock (seed {}): every kernel thread is blocked and nothing can wake one", seed_);
  for (const auto& t : threads_) {
    if (t->state != State::kBlocked || t->daemon) continue;
    report += fmt::format("\n  thread {} '{}' waits for {}", t->id, t->name, t->describe(t->waits_for));
  }
  return report;
}

}  // namespace ndksim::kernel
