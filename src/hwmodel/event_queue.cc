// SPDX-License-Identifier: MIT
// The deterministic event queue: a binary heap of small entries over a slab of callbacks.
#include "event_queue.h"

#include <algorithm>

namespace ndksim::hw {

EventQueue::EventQueue() {
  heap_.reserve(4096);
  free_slots_.reserve(4096);
}

void EventQueue::Schedule(TimePoint when, EventPriority priority, EventCallback fn) {
  NDKSIM_CHECK(when >= now_);
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    callbacks_[slot] = std::move(fn);
  } else {
    slot = static_cast<std::uint32_t>(callbacks_.size());
    callbacks_.push_back(std::move(fn));
  }
  // Sequence numbers stay below 2^56 (years of simulation at billions of events per second).
  const std::uint64_t order = (static_cast<std::uint64_t>(priority) << kPriorityShift) | next_sequence_++;
  heap_.push_back(Entry{when, order, slot});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

void EventQueue::RunOne() {
  NDKSIM_CHECK(!heap_.empty());
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  const Entry e = heap_.back();
  heap_.pop_back();
  now_ = e.when;
  ++events_run_;
  // Run in place: events it schedules take other slots (this one is not free yet), and growing
  // the deque does not move it.
  EventCallback& fn = callbacks_[e.slot];
  fn();
  fn.Reset();
  free_slots_.push_back(e.slot);
}

void EventQueue::AdvanceTo(TimePoint t) {
  NDKSIM_CHECK(t >= now_);
  NDKSIM_CHECK(heap_.empty() || heap_.front().when >= t);
  now_ = t;
}

}  // namespace ndksim::hw
