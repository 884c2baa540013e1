// SPDX-License-Identifier: MIT
// The clock and event queue block: integer picosecond time, events ordered by (time, priority,
// insertion sequence) so that ties resolve the same way on every run. Idle time is skipped.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <deque>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/inplace_callback.h"
#include "ndksim/time.h"

namespace ndksim::hw {

using ::ndksim::InplaceCallback;

using EventCallback = InplaceCallback<48>;

// Among events at the same instant, lower values run first. The order models causality inside one
// instant: a doorbell is seen before the DMA it starts, packets before timers that would expire.
enum class EventPriority : std::uint8_t {
  kHost = 0,      // host-side actions: MMIO doorbells arriving, interrupts delivered
  kDevice = 1,    // NIC pipeline steps and DMA completions
  kWire = 2,      // packet arrivals
  kTimer = 3,     // retransmission and other timeouts
};

class EventQueue {
 public:
  EventQueue();

  TimePoint Now() const { return now_; }
  // Schedules `fn` to run at `when` (never in the past).
  void Schedule(TimePoint when, EventPriority priority, EventCallback fn);
  void ScheduleAfter(Duration delay, EventPriority priority, EventCallback fn) {
    Schedule(now_ + delay, priority, std::move(fn));
  }

  bool Empty() const { return heap_.empty(); }
  // Time of the earliest pending event; only meaningful when !Empty().
  TimePoint NextTime() const { return heap_.front().when; }
  // Pops the earliest event, moves the clock to its time and runs it.
  void RunOne();
  // Moves the clock forward without running anything (time only moves forward).
  void AdvanceTo(TimePoint t);

  std::uint64_t EventsRun() const { return events_run_; }
  std::size_t Pending() const { return heap_.size(); }

 private:
  struct Entry {
    TimePoint when;
    std::uint64_t order;  // priority in the top byte, then the sequence number
    std::uint32_t slot;   // index into callbacks_
  };
  static constexpr int kPriorityShift = 56;
  // std::push_heap builds a max-heap; "greater" puts the earliest entry at the front.
  static bool Later(const Entry& a, const Entry& b) {
    if (a.when != b.when) return a.when > b.when;
    return a.order > b.order;
  }

  TimePoint now_{};
  std::uint64_t next_sequence_ = 0;
  std::uint64_t events_run_ = 0;
  std::vector<Entry> heap_;
  // Slab of callbacks; free slots listed in free_slots_. A deque: growing it while a callback runs
  // in place does not move the callback.
  std::deque<EventCallback> callbacks_;
  std::vector<std::uint32_t> free_slots_;
};

// What a waiter registers to be resumed with: the waiting block's own handler, bound to the QP
// it waits for. The resource calls it without knowing who waits.
using Resume = InplaceCallback<32>;

// Waiters for one shared resource (the port's transmitter, a PCIe read slot), resumed one at a time
// in the order they came when the resource is free, so that waiting costs one event per hand-over
// however many wait. A resumed waiter that still needs the resource registers again (at the back:
// round robin).
class WaitList {
 public:
  // `free_at()`: when the resource is next free.
  WaitList(EventQueue& events, std::function<TimePoint()> free_at) : events_(events), free_at_(std::move(free_at)) {}

  void Add(Resume resume) {
    if (count_ == waiters_.size()) Grow();
    waiters_[(head_ + count_) % waiters_.size()] = std::move(resume);
    ++count_;
    Arm();
  }

 private:
  void Arm() {
    if (scheduled_ || count_ == 0) return;
    scheduled_ = true;
    events_.Schedule(std::max(events_.Now(), free_at_()), EventPriority::kDevice, [this] { OnFree(); });
  }
  void OnFree() {
    scheduled_ = false;
    if (count_ > 0 && free_at_() <= events_.Now()) {
      Resume resume = std::move(waiters_[head_]);
      head_ = (head_ + 1) % waiters_.size();
      --count_;
      resume();
    }
    Arm();
  }
  void Grow() {
    std::vector<Resume> bigger(std::max<std::size_t>(16, waiters_.size() * 2));
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = std::move(waiters_[(head_ + i) % waiters_.size()]);
    waiters_ = std::move(bigger);
    head_ = 0;
  }

  EventQueue& events_;
  std::function<TimePoint()> free_at_;
  std::vector<Resume> waiters_;  // a ring: count_ waiters from head_
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  bool scheduled_ = false;
};

}  // namespace ndksim::hw
