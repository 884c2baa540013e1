// SPDX-License-Identifier: MIT
// The clock and event queue block: integer picosecond time, events ordered by (time, priority,
// insertion sequence) so that ties resolve the same way on every run. Idle time is skipped.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstddef>
#include <atomic>
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

// Events due at the current instant wait in one FIFO per priority. Later ones are ordered by
// (time, priority, insertion sequence) in one of two tiers:
//   - the calendar: events due within the next kCalendarBuckets buckets of 2^kBucketShift ps
//     (about 4 us: a pipeline's DMA, wire and processing steps), each bucket a short sorted run,
//     found through a bitmap of the buckets that hold any;
//   - a binary heap for everything later (timers).
// The earlier of the two fronts is the earliest event. When the clock moves to its time, every
// event of that instant moves to the FIFOs in that order; events scheduled for the instant after
// that join the back of their FIFO, which is where their larger sequence number puts them. So the
// order is (time, priority, sequence) throughout, and the many events a pipeline schedules for
// "now" cost a FIFO push and pop, the near future a short insertion, and only far timers a sift.
//
// A cancelled event stays where it is until it reaches the front, where it is dropped without
// running and without moving the clock; Empty, Pending and NextTime count only live events.
class EventQueue {
 public:
  EventQueue();

  TimePoint Now() const { return now_; }
  // The clock as other threads may read it (the host CPU's cores start their work from it): it
  // follows Now() and only grows.
  const std::atomic<std::int64_t>& PublishedNow() const { return published_now_; }
  // Schedules `fn` to run at `when` (never in the past).
  // `fn` is a callable (built in place in its slot) or an EventCallback (moved there).
  template <typename F>
  EventId Schedule(TimePoint when, EventPriority priority, F&& fn) {
    NDKSIM_CHECK(when >= now_, "an event scheduled at {} ps, before the clock's {} ps", when, now_);
    const std::uint32_t slot = TakeSlot();
    Slot& s = SlotOf(slot);
    s.fn.Emplace(std::forward<F>(fn));
    NDKSIM_CHECK(static_cast<bool>(s.fn), "an event needs something to run");
    ++live_;
    const auto p = static_cast<std::size_t>(priority);
    if (when == now_) {
      due_[p].Push(slot);
      due_mask_ |= 1u << p;
    } else {
      PushLater(when, p, slot);
    }
    return EventId{slot, s.generation};
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
  TimePoint NextTime() const {
    if (due_mask_ != 0) return now_;
    const Entry* next = EarliestLater();
    return next != nullptr ? next->when : now_;
  }
  // Runs the earliest live event, moving the clock to its time first.
  void RunOne() {
    if (due_mask_ == 0) {
      RunEarliestLater();
      return;
    }
    const auto p = static_cast<std::size_t>(std::countr_zero(due_mask_));
    SlotFifo& fifo = due_[p];
    const std::uint32_t slot = fifo.Front();
    fifo.PopFront();
    // Every front stays live: the one this pop exposed may have been cancelled while queued.
    // (The other fronts were live, and a Cancel while the event runs cleans up after itself.)
    if (cancelled_ != 0) DropCancelledFront(fifo);
    if (fifo.Empty()) due_mask_ &= ~(1u << p);
    RunSlot(slot);
  }
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
      ring_[(head_ + size_) & mask_] = slot;
      ++size_;
    }
    void PopFront() {
      head_ = (head_ + 1) & mask_;
      --size_;
    }

   private:
    void Grow();
    std::vector<std::uint32_t> ring_;  // a power of two long
    std::size_t mask_ = 0;             // ring_.size() - 1, once it has a size
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };

  // One scheduled event's callback (empty: cancelled) and the slot's generation (bumped when the
  // slot is freed, so that an old EventId names nothing); a free slot links to the next free one.
  struct Slot {
    EventCallback fn;
    std::uint32_t generation = 0;
    std::uint32_t next_free = EventId::kNone;
  };
  // Slots live in chunks that never move (a callback runs in place while others are scheduled),
  // addressed by shift and mask.
  static constexpr std::uint32_t kChunkShift = 8;
  static constexpr std::uint32_t kChunkSlots = 1u << kChunkShift;
  Slot& SlotOf(std::uint32_t slot) { return chunks_[slot >> kChunkShift][slot & (kChunkSlots - 1)]; }
  const Slot& SlotOf(std::uint32_t slot) const { return chunks_[slot >> kChunkShift][slot & (kChunkSlots - 1)]; }
  bool Live(std::uint32_t slot) const { return static_cast<bool>(SlotOf(slot).fn); }
  // Runs the event in `slot` in place, then frees the slot.
  void RunSlot(std::uint32_t slot) {
    --live_;
    ++events_run_;
    // Run in place: events it schedules take other slots (this one is not free yet), and the
    // chunks never move.
    running_ = slot;
    SlotOf(slot).fn();
    running_ = EventId::kNone;
    FreeSlot(slot);
  }
  // The free slots form a stack (the most recently freed is handed out first, while its line is
  // warm); a new chunk's slots go on it lowest first.
  std::uint32_t TakeSlot() {
    if (free_head_ == EventId::kNone) AddChunk();
    const std::uint32_t slot = free_head_;
    free_head_ = SlotOf(slot).next_free;
    return slot;
  }
  void FreeSlot(std::uint32_t slot) {
    Slot& s = SlotOf(slot);
    s.fn.Reset();
    ++s.generation;
    s.next_free = free_head_;
    free_head_ = slot;
  }
  void AddChunk();
  // An event after now_: into the calendar or the heap.
  void PushLater(TimePoint when, std::size_t priority, std::uint32_t slot) {
    // Sequence numbers stay below 2^56 (years of simulation at billions of events per second).
    const Entry e{when, (static_cast<std::uint64_t>(priority) << kPriorityShift) | next_sequence_++, slot};
    const std::size_t b = BucketOf(when);
    Bucket& bucket = buckets_[b];
    if (when >= CalendarEnd() || bucket.size == kBucketEntries) {
      PushHeap(e);
      return;
    }
    // Sorted insertion from the back: a new event is usually the latest of its bucket.
    Entry* v = BucketEntries(b);
    std::uint32_t i = bucket.size++;
    for (; i > bucket.head && Later{}(v[i - 1], e); --i) v[i] = v[i - 1];
    v[i] = e;
    occupied_[b / 64] |= std::uint64_t{1} << (b % 64);
    ++calendar_entries_;
  }
  void PushHeap(const Entry& e);
  // RunOne when nothing is due at now_: the clock moves to the earliest later event.
  void RunEarliestLater();
  // The earliest event after the FIFOs' (calendar or heap), or nullptr; and its removal.
  const Entry* EarliestLater() const;
  Entry PopEarliestLater();
  // The same, given FirstBucket().
  Entry PopEarliestLaterFrom(std::size_t first_bucket);

  // The calendar tier. Bucket b holds the events whose time t has (t >> kBucketShift) % kBuckets
  // == b; every calendar event lies before CalendarEnd(), less than one lap of buckets after the
  // bucket of now_, so each bucket holds one bucket-width of time and the first non-empty bucket
  // from now_'s, cyclically, holds the earliest events.
  static constexpr unsigned kBucketShift = 14;  // 16.384 ns
  static constexpr std::size_t kCalendarBuckets = 256;
  static constexpr std::size_t kBitmapWords = kCalendarBuckets / 64;
  // A bucket's entries are kBucketEntries places of one calloc'd block (pages untouched until
  // used), [head, size) of them sorted; an event that finds its bucket full goes to the heap,
  // which keeps the order right (the earliest event is the earlier of the two fronts).
  static constexpr std::uint32_t kBucketEntries = 8;
  struct Bucket {
    std::uint32_t head = 0;
    std::uint32_t size = 0;
  };
  Entry* BucketEntries(std::size_t b) { return calendar_.get() + b * kBucketEntries; }
  const Entry& BucketFront(std::size_t b) const { return calendar_[b * kBucketEntries + buckets_[b].head]; }
  // Removes the front of bucket `b` (not empty).
  Entry PopBucket(std::size_t b) {
    Bucket& bucket = buckets_[b];
    const Entry e = BucketEntries(b)[bucket.head];
    if (++bucket.head == bucket.size) {
      bucket.head = 0;
      bucket.size = 0;
      occupied_[b / 64] &= ~(std::uint64_t{1} << (b % 64));
    }
    --calendar_entries_;
    return e;
  }
  static std::size_t BucketOf(TimePoint t) {
    return static_cast<std::size_t>(static_cast<std::uint64_t>(t.time_since_epoch().count()) >> kBucketShift) &
           (kCalendarBuckets - 1);
  }
  TimePoint CalendarEnd() const {
    const auto now = static_cast<std::uint64_t>(now_.time_since_epoch().count());
    return TimePoint{Picoseconds(static_cast<std::int64_t>(((now >> kBucketShift) + kCalendarBuckets) << kBucketShift))};
  }
  // The first bucket holding events, from now_'s on; kCalendarBuckets if none.
  std::size_t FirstBucket() const;
  // Moves the heap's events at now_ to the FIFOs (dropping cancelled ones).
  void TakeDue();
  // Drops cancelled events at the front of the FIFOs and the heap, so that every front is live.
  void DropCancelledFronts();
  // The same for one FIFO, and for the later events (calendar and heap).
  void DropCancelledFront(SlotFifo& fifo) {
    while (!fifo.Empty() && !Live(fifo.Front())) {
      FreeSlot(fifo.Front());
      fifo.PopFront();
      --cancelled_;
    }
  }
  void DropCancelledLater();

  TimePoint now_{};
  // now_ for other threads; relaxed stores (a reader needs a recent time, not an ordering).
  std::atomic<std::int64_t> published_now_{0};
  std::uint64_t next_sequence_ = 0;
  std::uint64_t events_run_ = 0;
  std::size_t live_ = 0;
  std::size_t cancelled_ = 0;  // cancelled events still queued
  std::uint32_t running_ = EventId::kNone;  // the slot whose event is running
  struct FreeBlock {
    void operator()(Entry* p) const { std::free(p); }
  };
  std::unique_ptr<Entry[], FreeBlock> calendar_;         // the buckets' places
  std::array<Bucket, kCalendarBuckets> buckets_;          // events after now_, near
  std::array<std::uint64_t, kBitmapWords> occupied_{};  // bit b: bucket b is not empty
  std::size_t calendar_entries_ = 0;
  std::vector<Entry> heap_;                 // events after now_, far
  std::array<SlotFifo, kPriorities> due_;   // events at now_, by priority
  std::uint32_t due_mask_ = 0;              // bit p: due_[p] is not empty
  // Slab of slots; the free ones linked from free_head_.
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::uint32_t slots_ = 0;  // slots made so far
  std::uint32_t free_head_ = EventId::kNone;
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
