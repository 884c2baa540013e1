// SPDX-License-Identifier: MIT
// The kernel environment's scheduler: kernel threads (system threads, work items, the driver's
// entry and unload) are fibers that run one at a time on the thread that calls Run. A thread runs
// until it blocks (a wait that cannot be satisfied) or ends; then the scheduler picks the next
// runnable one. Where Windows leaves the order open, the pick is a choice drawn from the seed, so
// the same seed and the same calls give the same interleaving, and other seeds give others.
// Two strategies make the picks (Strategy): uniformly random ones, or PCT's randomized priorities
// with a few priority change points (Burckhardt et al., ASPLOS 2010), which also preempts the
// running thread at the preemption points the services offer (spin locks, events, NDK calls).
// When no thread can run, the scheduler asks its idle hook to make progress (the simulation runs
// until something wakes a thread); if the hook cannot, every thread is stuck and Run fails with a
// report naming each waiter and what it waits for.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fiber.h"
#include "ndksim/kernel/environment.h"  // DeadlockError

namespace ndksim::kernel {


struct SchedulerOptions {
  ScheduleStrategy strategy = ScheduleStrategy::kRandom;
  std::uint32_t pct_depth = 3;   // EnvironmentConfig's, which says what they mean
  std::uint32_t pct_steps = 1000;
};

class Scheduler {
 public:
  using ThreadId = std::uint32_t;
  using Options = SchedulerOptions;
  using Body = std::function<void()>;
  // Called when no thread can run. Returns true if it may have woken one (the scheduler looks
  // again), false if nothing is left that could (a deadlock, unless every thread has ended).
  using IdleHook = std::function<bool()>;

  static constexpr std::size_t kDefaultStackBytes = 256 * 1024;

  explicit Scheduler(std::uint64_t seed, std::size_t stack_bytes = kDefaultStackBytes, Options options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void SetIdleHook(IdleHook hook) { idle_ = std::move(hook); }

  // A new kernel thread, runnable, that runs `body` when first picked. `name` appears in traces
  // and deadlock reports. May be called from a kernel thread or before Run.
  ThreadId Create(std::string name, Body body);
  // A daemon thread does not keep Run going: Run ends when every other thread has ended, and a
  // blocked daemon is no deadlock (a system worker thread waiting for work). Changeable any time.
  void SetDaemon(ThreadId thread, bool daemon);
  // Runs kernel threads until every one has ended. Throws DeadlockError (after the report) if
  // they are all blocked and the idle hook cannot wake any; exceptions a thread's body throws end
  // Run, rethrown here.
  void Run();
  // Runs until `done()` holds (asked before every pick), or as Run.
  void RunUntil(const std::function<bool()>& done);

  // ---- for the services, on a kernel thread ----
  // The running kernel thread, or nullptr outside one (in Run's own context: DPCs, callbacks).
  ThreadId Current() const { return current_; }
  bool InThread() const { return current_ != kNone; }
  // Some thread is runnable (the idle hook's question: may it stop making progress?).
  bool HasRunnable() const { return !runnable_.empty(); }
  // Blocks the running thread until some call Wake()s it. What it waits for is told only if a
  // deadlock report needs it: describe(what), with `what` alive while the thread is blocked (the
  // waiter's own stack); so blocking formats nothing and allocates nothing.
  using Describe = std::string (*)(const void* what);
  void Block(Describe describe, const void* what);
  // The same, with a fixed text.
  void Block(const char* what);
  // Makes a blocked thread runnable again (from a kernel thread or from Run's own context).
  void Wake(ThreadId thread);
  // Gives the processor up: the scheduler picks again among the runnable threads, the running one
  // included (under PCT it goes below every other thread, so a thread that polls by yielding lets
  // the others run).
  void Yield();
  // A point where the running thread may be preempted (`where`: the service, for the
  // interleaving). kRandom: a seeded pick among the runnable threads and the running one. kPct:
  // one step; at a change point the running thread's priority drops below every initial one; it
  // is preempted if a runnable thread now has a higher priority.
  void PreemptionPoint(const char* where);
  // A draw from the seed in [0, n), for the services' own open choices (which waiter a
  // synchronization event releases first, the order of queued work items).
  std::uint32_t Choose(std::uint32_t n);

  std::uint64_t Seed() const { return seed_; }
  // Every pick of Run so far, in order: the interleaving, to print beside a failing seed.
  const std::vector<ThreadId>& Picks() const { return picks_; }
  // The picks that preempted the thread before them (which otherwise blocked, yielded or ended),
  // few beside the picks: the pick's index in Picks() and where the preempted thread was.
  struct Preemption {
    std::size_t pick = 0;
    const char* where = nullptr;
  };
  const std::vector<Preemption>& Preemptions() const { return preemptions_; }
  // Preemption points reached so far (PCT's steps).
  std::uint64_t Steps() const { return steps_; }
  const std::string& NameOf(ThreadId thread) const;
  std::size_t Switches() const { return switches_; }

  static constexpr ThreadId kNone = 0xFFFFFFFFu;

 private:
  enum class State : std::uint8_t { kRunnable, kRunning, kBlocked, kEnded };
  struct Thread {
    ThreadId id = 0;
    std::string name;
    Body body;
    State state = State::kRunnable;
    Describe describe = nullptr;  // what a blocked thread waits for, for a deadlock report
    const void* waits_for = nullptr;
    std::unique_ptr<Fiber> fiber;
    Scheduler* scheduler = nullptr;
    bool daemon = false;
    std::uint64_t priority = 0;  // PCT: the highest runnable runs
  };

  static void ThreadMain(void* thread);
  // Back to Run's context from the running thread.
  void SwitchToScheduler(bool ended);
  std::string DeadlockReport() const;
  // The index in runnable_ of the next thread to run.
  std::size_t NextPick();
  // PCT: the runnable thread with the highest priority, or kNone.
  ThreadId HighestRunnable() const;
  // Makes the running thread runnable and switches to Run's context, which picks again.
  void GiveUp(const char* preempted_at);
  bool AllEnded() const;

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  Options options_;
  std::vector<std::uint64_t> change_points_;  // PCT: steps, ascending
  std::uint64_t steps_ = 0;
  // PCT's priorities: initial ones are drawn above kInitialPriorities; the change points' are
  // kChangePriorities + 1..d-1; a yield takes the next below every other yield's.
  static constexpr std::uint64_t kInitialPriorities = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kChangePriorities = std::uint64_t{1} << 40;
  std::uint64_t yield_priority_ = kChangePriorities;
  ThreadId forced_ = kNone;                   // kRandom: the next pick, drawn at a preemption point
  const char* preempted_at_ = nullptr;        // for the next pick
  std::size_t stack_bytes_;
  IdleHook idle_;
  std::vector<std::unique_ptr<Thread>> threads_;
  std::vector<ThreadId> runnable_;  // in the order they became runnable
  ThreadId current_ = kNone;
  std::unique_ptr<Fiber> home_;     // Run's own context
  std::vector<ThreadId> picks_;
  std::vector<Preemption> preemptions_;
  std::size_t switches_ = 0;
  std::exception_ptr failure_;
  bool running_ = false;
};

}  // namespace ndksim::kernel
