// SPDX-License-Identifier: MIT
// Dispatcher objects and waits, as the Windows kernel defines them for events: a notification
// event stays signaled until reset and releases every waiter; a synchronization event releases
// one waiter and resets itself. A wait names one or more objects, for any or for all of them,
// with an optional deadline in simulated time. A wait that cannot be satisfied blocks its kernel
// thread (the scheduler runs another); a signal that satisfies it makes the thread runnable.
//
// Where Windows leaves the order open, the choice is the scheduler's seeded one: which of several
// waiters a synchronization event releases.
//
// Waits keep their wait blocks on the waiting thread's stack, linked into each object's list, as
// the Windows kernel's KWAIT_BLOCKs are; an object holds no memory of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ndksim/time.h"
#include "scheduler.h"

namespace ndksim::kernel {

struct WaitBlock;

// The state every waitable object starts with (a DISPATCHER_HEADER's part that matters here).
struct DispatcherObject {
  // The kernel's own type numbers (a DISPATCHER_HEADER's Type), so the C headers' objects are
  // these: a notification object stays signaled and releases every waiter; a synchronization one
  // releases one and resets itself.
  enum class Kind : std::uint8_t {
    kNotificationEvent = 0,
    kSynchronizationEvent = 1,
    kMutant = 2,
    kSemaphore = 5,
    kThread = 6,
    kNotificationTimer = 8,
    kSynchronizationTimer = 9,
  };
  Kind kind = Kind::kNotificationEvent;
  std::int32_t signal_state = 0;
  WaitBlock* first = nullptr;  // waiters, in the order they began to wait
  WaitBlock* last = nullptr;
};

// A KMUTANT (KMUTEX) as the dispatcher sees it: the header, the C structure's list entry, and the
// owner, KeGetCurrentThread's value for the thread that holds it (nullptr while free). A wait
// satisfied by a mutex its thread owns acquires it again (signal_state goes below zero).
struct MutantObject {
  DispatcherObject header;
  void* list_entry[2] = {nullptr, nullptr};
  void* owner = nullptr;
  std::uint8_t abandoned = 0;
  std::uint8_t apc_disable = 0;
};

// A KSEMAPHORE: the header (signal_state is the count) and the limit.
struct SemaphoreObject {
  DispatcherObject header;
  std::int32_t limit = 0;
};

enum class WaitType : std::uint8_t { kAll, kAny };

struct WaitOutcome {
  bool timed_out = false;
  std::uint32_t index = 0;  // kAny: the object that satisfied the wait; kAll: 0
};

class Dispatcher {
 public:
  // `now`: the simulated time (the fabric's clock); `owner_of`: the owner identity a mutex records
  // for a kernel thread (Scheduler::kNone: the environment's own context), as KeGetCurrentThread
  // gives it (none: a value of the thread's own).
  Dispatcher(Scheduler& scheduler, std::function<TimePoint()> now,
             std::function<void*(Scheduler::ThreadId)> owner_of = nullptr);

  static void InitializeEvent(DispatcherObject& event, DispatcherObject::Kind kind, bool signaled);
  static void InitializeMutant(MutantObject& mutant);
  static void InitializeSemaphore(SemaphoreObject& semaphore, std::int32_t count, std::int32_t limit);
  // KeReleaseMutex, by its owner (the caller checks): one acquisition released; once none is left
  // the mutex is free and goes to one waiter. Returns the previous state.
  std::int32_t ReleaseMutant(MutantObject& mutant);
  // KeReleaseSemaphore: the count grows by `adjustment` (the caller checks the limit), and as many
  // waiters as it allows are released. Returns the previous count.
  std::int32_t ReleaseSemaphore(SemaphoreObject& semaphore, std::int32_t adjustment);
  // KeSetEvent: signals the object (an event, or a timer or thread as they end), releasing what
  // waits on it; returns the previous state.
  std::int32_t SetEvent(DispatcherObject& event);
  static bool HasWaiters(const DispatcherObject& object) { return object.first != nullptr; }
  // A kernel thread blocked in a wait on an object that lies in [begin, end), if any (found from
  // the blocked waits, not from the memory, which may not hold an object yet).
  std::optional<Scheduler::ThreadId> WaiterIn(const void* begin, const void* end) const;
  // KeResetEvent: returns the previous state; KeClearEvent is the same without it.
  static std::int32_t ResetEvent(DispatcherObject& event);

  // Waits on `objects` until the wait is satisfied or `deadline` passes (none: forever; a
  // deadline at or before now: only looks). Only a kernel thread may block; outside one, a wait
  // must be a look (a deadline at or before now).
  WaitOutcome Wait(std::span<DispatcherObject* const> objects, WaitType type, std::optional<TimePoint> deadline);

  // For the scheduler's idle hook: the earliest deadline of a blocked wait; and ending, as timed
  // out, every blocked wait whose deadline is at or before `now` (true if one was).
  std::optional<TimePoint> NextDeadline() const;
  bool ExpireDue(TimePoint now);

 private:
  struct Waiter;
  friend struct WaitBlock;

  bool Satisfiable(const Waiter& w, std::uint32_t* index) const;
  // Whether `object` satisfies a wait of `thread` (a mutex satisfies its owner's).
  bool Signaled(const DispatcherObject& object, Scheduler::ThreadId thread) const;
  // Consumes what satisfying the wait takes (a synchronization event's signal, a semaphore's
  // count, a mutex's ownership).
  void Consume(Waiter& w, std::uint32_t index);
  // Releases the waits a newly signaled `object` satisfies: all of them for a notification object;
  // for the others one at a time, each the scheduler's seeded pick, while it stays signaled.
  void ReleaseWaiters(DispatcherObject& object);
  // Unlinks the waiter's blocks, records the outcome, makes its thread runnable.
  void Release(Waiter& w, WaitOutcome outcome);
  // A blocked wait's description, for the scheduler's deadlock report.
  static std::string DescribeWait(const void* waiter);
  static void Link(WaitBlock& b);
  static void Unlink(WaitBlock& b);

  Scheduler& scheduler_;
  std::function<TimePoint()> now_;
  std::function<void*(Scheduler::ThreadId)> owner_of_;
  std::vector<Waiter*> blocked_;  // every blocked wait
  std::vector<Waiter*> timed_;  // blocked waits with a deadline
  std::vector<Waiter*> candidates_;  // SetEvent's working lists
  std::vector<Waiter*> ready_;
};

}  // namespace ndksim::kernel
