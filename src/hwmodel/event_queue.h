// SPDX-License-Identifier: MIT
// The clock and event queue block: integer picosecond time, events ordered by (time, priority,
// insertion sequence) so that ties resolve the same way on every run. Idle time is skipped.
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <deque>
#include <memory>
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

// Names one scheduled event, so that its owner can cancel it (EventQueue::Cancel). A default one
// names nothing; an id outlives its event harmlessly (cancelling it then does nothing).
struct EventId {
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  std::uint32_t slot = kNone;
  std::uint32_t generation = 0;
  bool Valid() const { return slot != kNone; }
};

// Events due at the current instant wait in one FIFO per priority; later ones in a binary heap
// ordered by (time, priority, insertion sequence). When the clock moves to the heap's earliest time,
// every event of that instant moves to the FIFOs, in heap order; events scheduled for the instant
// after that join the back of their FIFO, which is where their larger sequence number puts them.
// So the order is the heap's order throughout, and the many events a pipeline schedules for "now"
// cost a FIFO push and pop instead of a heap's logarithmic sift.
//
// A cancelled event stays where it is until it reaches the front, where it is dropped without
// running and without moving the clock; Empty, Pending and NextTime count only live events.
class EventQueue {
 public:
  EventQueue();

  TimePoint Now() const { return now_; }
  // Schedules `fn` to run at `when` (never in the past).
  // `fn` is a callable (built in place in its slot) or an EventCallback (moved there).
  template <typename F>
  EventId Schedule(TimePoint when, EventPriority priority, F&& fn) {
    NDKSIM_CHECK(when >= now_, "an event scheduled at {} ps, before the clock's {} ps", when, now_);
    const std::uint32_t slot = TakeSlot();
    SlotOf(slot).fn.Emplace(std::forward<F>(fn));
    NDKSIM_CHECK(static_cast<bool>(SlotOf(slot).fn), "an event needs something to run");
    return Enqueue(when, priority, slot);
  }
  template <typename F>
  EventId ScheduleAfter(Duration delay, EventPriority priority, F&& fn) {
    return Schedule(now_ + delay, priority, std::forward<F>(fn));
  }
  // Cancels an event that has not started to run. False (and nothing changes) if it ran, is
  // running, was cancelled already, or `id` names nothing.
  bool Cancel(EventId id);

  bool Empty() const { return live_ == 0; }
  // Time of the earliest live event; only meaningful when !Empty().
  TimePoint NextTime() const { return due_mask_ != 0 ? now_ : heap_.front().when; }
  // Runs the earliest live event, moving the clock to its time first.
  void RunOne();
  // Moves the clock forward without running anything (time only moves forward, and not past a
  // live event).
  void AdvanceTo(TimePoint t);

  std::uint64_t EventsRun() const { return events_run_; }
  // Live events scheduled and not yet run.
  std::size_t Pending() const { return live_; }

 private:
  struct Entry {
    TimePoint when;
    std::uint64_t order;  // priority in the top byte, then the sequence number
    std::uint32_t slot;   // its Slot
  };
  static constexpr int kPriorityShift = 56;
  static constexpr std::size_t kPriorities = 4;
  // std::push_heap builds a max-heap; "later" puts the earliest entry at the front. A function
  // object, not a function pointer, so that the heap's sifts inline the comparison.
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.when != b.when) return a.when > b.when;
      return a.order > b.order;
    }
  };

  // A growable ring of slot numbers: the events of one priority due now, in order.
  class SlotFifo {
   public:
    bool Empty() const { return size_ == 0; }
    std::uint32_t Front() const { return ring_[head_]; }
    void Push(std::uint32_t slot) {
      if (size_ == ring_.size()) Grow();
      ring_[(head_ + size_) & (ring_.size() - 1)] = slot;
      ++size_;
    }
    void PopFront() {
      head_ = (head_ + 1) & (ring_.size() - 1);
      --size_;
    }

   private:
    void Grow();
    std::vector<std::uint32_t> ring_;  // a power of two long
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };

  // One scheduled event's callback (empty: cancelled) and the slot's generation (bumped when the
  // slot is freed, so that an old EventId names nothing).
  struct Slot {
    EventCallback fn;
    std::uint32_t generation = 0;
  };
  // Slots live in chunks that never move (a callback runs in place while others are scheduled),
  // addressed by shift and mask.
  static constexpr std::uint32_t kChunkShift = 8;
  static constexpr std::uint32_t kChunkSlots = 1u << kChunkShift;
  Slot& SlotOf(std::uint32_t slot) { return chunks_[slot >> kChunkShift][slot & (kChunkSlots - 1)]; }
  const Slot& SlotOf(std::uint32_t slot) const { return chunks_[slot >> kChunkShift][slot & (kChunkSlots - 1)]; }
  bool Live(std::uint32_t slot) const { return static_cast<bool>(SlotOf(slot).fn); }
  // Runs the event in `slot` in place, then frees the slot.
  void RunSlot(std::uint32_t slot);
  std::uint32_t TakeSlot();
  EventId Enqueue(TimePoint when, EventPriority priority, std::uint32_t slot);
  void FreeSlot(std::uint32_t slot);
  // Moves the heap's events at now_ to the FIFOs (dropping cancelled ones).
  void TakeDue();
  // Drops cancelled events at the front of the FIFOs and the heap, so that every front is live.
  void DropCancelledFronts();

  TimePoint now_{};
  std::uint64_t next_sequence_ = 0;
  std::uint64_t events_run_ = 0;
  std::size_t live_ = 0;
  std::size_t cancelled_ = 0;  // cancelled events still queued
  std::uint32_t running_ = EventId::kNone;  // the slot whose event is running
  std::vector<Entry> heap_;                 // events after now_
  std::array<SlotFifo, kPriorities> due_;   // events at now_, by priority
  std::uint32_t due_mask_ = 0;              // bit p: due_[p] is not empty
  // Slab of slots; free ones listed in free_slots_.
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::uint32_t slots_ = 0;  // slots made so far
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
