// SPDX-License-Identifier: MIT
// The deterministic event queue: FIFOs for the current instant, a binary heap of small entries for
// later ones, over a slab of callbacks.
#include "event_queue.h"

#include <algorithm>
#include <bit>

namespace ndksim::hw {

EventQueue::EventQueue() {
  heap_.reserve(4096);
  free_slots_.reserve(4096);
}

void EventQueue::SlotFifo::Grow() {
  std::vector<std::uint32_t> bigger(std::max<std::size_t>(64, ring_.size() * 2));
  for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
  ring_ = std::move(bigger);
  head_ = 0;
}

std::uint32_t EventQueue::TakeSlot() {
  if (free_slots_.empty()) {
    NDKSIM_CHECK(slots_ <= EventId::kNone - kChunkSlots, "more than 2^32 - 257 events pending");
    chunks_.push_back(std::make_unique<Slot[]>(kChunkSlots));
    // Handed out lowest first, as a growing slab would.
    for (std::uint32_t i = kChunkSlots; i > 0; --i) free_slots_.push_back(slots_ + i - 1);
    slots_ += kChunkSlots;
  }
  const std::uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void EventQueue::FreeSlot(std::uint32_t slot) {
  Slot& s = SlotOf(slot);
  s.fn.Reset();
  ++s.generation;
  free_slots_.push_back(slot);
}

EventId EventQueue::Enqueue(TimePoint when, EventPriority priority, std::uint32_t slot) {
  ++live_;
  const auto p = static_cast<std::size_t>(priority);
  if (when == now_) {
    due_[p].Push(slot);
    due_mask_ |= 1u << p;
  } else {
    // Sequence numbers stay below 2^56 (years of simulation at billions of events per second).
    const std::uint64_t order = (static_cast<std::uint64_t>(p) << kPriorityShift) | next_sequence_++;
    heap_.push_back(Entry{when, order, slot});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  return EventId{slot, SlotOf(slot).generation};
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
  while (!heap_.empty() && heap_.front().when == now_) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Entry e = heap_.back();
    heap_.pop_back();
    if (!Live(e.slot)) {
      FreeSlot(e.slot);
      --cancelled_;
      continue;
    }
    const auto p = static_cast<std::size_t>(e.order >> kPriorityShift);
    due_[p].Push(e.slot);
    due_mask_ |= 1u << p;
  }
}

void EventQueue::DropCancelledFronts() {
  if (cancelled_ == 0) return;
  for (std::uint32_t mask = due_mask_; mask != 0; mask &= mask - 1) {
    const auto p = static_cast<std::size_t>(std::countr_zero(mask));
    SlotFifo& fifo = due_[p];
    while (!fifo.Empty() && !Live(fifo.Front())) {
      FreeSlot(fifo.Front());
      fifo.PopFront();
      --cancelled_;
    }
    if (fifo.Empty()) due_mask_ &= ~(1u << p);
  }
  while (!heap_.empty() && !Live(heap_.front().slot)) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    FreeSlot(heap_.back().slot);
    heap_.pop_back();
    --cancelled_;
  }
}

void EventQueue::RunOne() {
  NDKSIM_CHECK(live_ > 0, "RunOne on an empty event queue");
  if (due_mask_ == 0) {
    // The clock moves to the heap's earliest event, which is live (DropCancelledFronts) and the
    // first of its instant: it runs now, and any others of the instant wait in the FIFOs after it.
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Entry e = heap_.back();
    heap_.pop_back();
    now_ = e.when;
    if (!heap_.empty() && heap_.front().when == now_) TakeDue();
    RunSlot(e.slot);
    return;
  }
  const auto p = static_cast<std::size_t>(std::countr_zero(due_mask_));
  SlotFifo& fifo = due_[p];
  const std::uint32_t slot = fifo.Front();
  fifo.PopFront();
  if (fifo.Empty()) due_mask_ &= ~(1u << p);
  RunSlot(slot);
}

void EventQueue::RunSlot(std::uint32_t slot) {
  --live_;
  ++events_run_;
  // Run in place: events it schedules take other slots (this one is not free yet), and the chunks
  // never move.
  running_ = slot;
  SlotOf(slot).fn();
  running_ = EventId::kNone;
  FreeSlot(slot);
  if (cancelled_ != 0) DropCancelledFronts();
}

void EventQueue::AdvanceTo(TimePoint t) {
  NDKSIM_CHECK(t >= now_, "the clock moved back from {} ps to {} ps", now_, t);
  if (t == now_) return;
  NDKSIM_CHECK(due_mask_ == 0 && (heap_.empty() || heap_.front().when >= t),
               "the clock moved to {} ps past an event due at {} ps", t, NextTime());
  now_ = t;
  TakeDue();
}

}  // namespace ndksim::hw
