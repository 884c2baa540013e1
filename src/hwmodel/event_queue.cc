// SPDX-License-Identifier: MIT
// The deterministic event queue: FIFOs for the current instant, a binary heap of small entries for
// later ones, over a slab of callbacks.
#include "event_queue.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <type_traits>

namespace ndksim::hw {

EventQueue::EventQueue()
    : calendar_(static_cast<Entry*>(std::calloc(kCalendarBuckets * kBucketEntries, sizeof(Entry)))) {
  static_assert(std::is_trivially_copyable_v<Entry> && std::is_trivially_destructible_v<Entry>);
  if (calendar_ == nullptr) throw std::bad_alloc();
  heap_.reserve(4096);
}

void EventQueue::SlotFifo::Grow() {
  std::vector<std::uint32_t> bigger(std::max<std::size_t>(64, ring_.size() * 2));
  for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
  ring_ = std::move(bigger);
  mask_ = ring_.size() - 1;
  head_ = 0;
}

void EventQueue::AddChunk() {
  NDKSIM_CHECK(slots_ <= EventId::kNone - kChunkSlots, "more than 2^32 - 257 events pending");
  chunks_.push_back(std::make_unique<Slot[]>(kChunkSlots));
  // Handed out lowest first, as a growing slab would.
  for (std::uint32_t i = kChunkSlots; i > 0; --i) {
    const std::uint32_t slot = slots_ + i - 1;
    SlotOf(slot).next_free = free_head_;
    free_head_ = slot;
  }
  slots_ += kChunkSlots;
}

void EventQueue::PushHeap(const Entry& e) {
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

std::size_t EventQueue::FirstBucket() const {
  if (calendar_entries_ == 0) return kCalendarBuckets;
  const std::size_t from = BucketOf(now_);
  // The word of `from`, from its bit on; then the following words, cyclically; then that word's
  // bits before `from` (the last part of the lap).
  std::size_t w = from / 64;
  std::uint64_t bits = occupied_[w] & (~std::uint64_t{0} << (from % 64));
  for (std::size_t k = 0; k <= kBitmapWords; ++k) {
    if (bits != 0) return w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
    w = (w + 1) % kBitmapWords;
    bits = occupied_[w];
  }
  return kCalendarBuckets;
}

const EventQueue::Entry* EventQueue::EarliestLater() const {
  const std::size_t b = FirstBucket();
  const Entry* c = b < kCalendarBuckets ? &BucketFront(b) : nullptr;
  if (heap_.empty()) return c;
  if (c == nullptr || Later{}(*c, heap_.front())) return &heap_.front();
  return c;
}

EventQueue::Entry EventQueue::PopEarliestLater() { return PopEarliestLaterFrom(FirstBucket()); }

EventQueue::Entry EventQueue::PopEarliestLaterFrom(std::size_t b) {
  if (b < kCalendarBuckets && (heap_.empty() || !Later{}(BucketFront(b), heap_.front()))) {
    return PopBucket(b);
  }
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  const Entry e = heap_.back();
  heap_.pop_back();
  return e;
}

bool EventQueue::Cancel(EventId id) {
  if (!id.Valid() || id.slot >= slots_ || SlotOf(id.slot).generation != id.generation) return false;
  if (id.slot == running_ || !Live(id.slot)) return false;
  SlotOf(id.slot).fn.Reset();  // the entry stays queued, cancelled, until it reaches a front
  --live_;
  ++cancelled_;
  DropCancelledFronts();
  return true;
}

void EventQueue::TakeDue() {
  for (const Entry* next = EarliestLater(); next != nullptr && next->when == now_; next = EarliestLater()) {
    const Entry e = PopEarliestLater();
    if (!Live(e.slot)) {
      FreeSlot(e.slot);
      --cancelled_;
      continue;
    }
    const auto p = static_cast<std::size_t>(e.order >> kPriorityShift);
    due_[p].Push(e.slot);
    due_mask_ |= 1u << p;
  }
  // The later events' new front may be one cancelled while it waited.
  DropCancelledLater();
}

void EventQueue::DropCancelledFronts() {
  if (cancelled_ == 0) return;
  for (std::uint32_t mask = due_mask_; mask != 0; mask &= mask - 1) {
    const auto p = static_cast<std::size_t>(std::countr_zero(mask));
    SlotFifo& fifo = due_[p];
    DropCancelledFront(fifo);
    if (fifo.Empty()) due_mask_ &= ~(1u << p);
  }
  DropCancelledLater();
}

void EventQueue::DropCancelledLater() {
  if (cancelled_ == 0) return;
  for (const Entry* next = EarliestLater(); next != nullptr && !Live(next->slot); next = EarliestLater()) {
    FreeSlot(PopEarliestLater().slot);
    --cancelled_;
  }
}

void EventQueue::RunEarliestLater() {
  NDKSIM_CHECK(live_ > 0, "RunOne on an empty event queue");
  // The clock moves to the earliest later event, which is live (DropCancelledFronts) and the
  // first of its instant: it runs now, and any others of the instant wait in the FIFOs after it.
  // Those are at the front of the same bucket (a bucket is one stretch of time) or of the heap.
  const std::size_t b = FirstBucket();
  const Entry e = PopEarliestLaterFrom(b);
  now_ = e.when;
  published_now_.store(now_.time_since_epoch().count(), std::memory_order_relaxed);
  const bool more_now = (b < kCalendarBuckets && buckets_[b].size != 0 && BucketFront(b).when == now_) ||
                        (!heap_.empty() && heap_.front().when == now_);
  if (more_now) {
    TakeDue();
  } else {
    DropCancelledLater();  // the pop exposed a new front, which may have been cancelled
  }
  RunSlot(e.slot);
}

void EventQueue::AdvanceTo(TimePoint t) {
  NDKSIM_CHECK(t >= now_, "the clock moved back from {} ps to {} ps", now_, t);
  if (t == now_) return;
  NDKSIM_CHECK(due_mask_ == 0 && (EarliestLater() == nullptr || EarliestLater()->when >= t),
               "the clock moved to {} ps past an event due at {} ps", t, NextTime());
  now_ = t;
  published_now_.store(now_.time_since_epoch().count(), std::memory_order_relaxed);
  TakeDue();
}

}  // namespace ndksim::hw
