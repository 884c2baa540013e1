// SPDX-License-Identifier: MIT
// Bounded lock-free multi-producer single-consumer queue that carries doorbell MMIO writes from
// many application threads to the one engine thread (DESIGN.md "Host interface", last bullet).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/check.h"
#include "hwmodel/ring.h"  // kCacheLineBytes

namespace ndksim::hw {

// Vyukov's bounded MPMC queue with the dequeue side specialised to one consumer.
//
// Each cell carries a sequence number that says whose turn it is. For enqueue position `pos`
// (cell pos & mask): sequence == pos means the cell is free for the producer that claims `pos`;
// sequence == pos + 1 means it holds the item for dequeue position `pos`; after the consumer
// takes it, sequence == pos + capacity frees it for the producer one lap later. Producers claim
// positions with a CAS on enqueue_pos_; the single consumer owns dequeue_pos_ outright.
//
// Capacity rule: at most Capacity() items are queued; TryPush returns false when the cell it would
// claim still holds an item from the previous lap (back-pressure: nothing is dropped). Positions
// are 64-bit and never wrap in practice (2^64 doorbells).
//
// A producer that has claimed a position but not yet written its cell makes the consumer see
// the queue as empty until it finishes, even if later producers have finished: this keeps FIFO
// order by claim position, and the stall is bounded by one short copy.
//
// Threading: TryPush from any number of threads; TryPop and Empty from one consumer thread only.
template <typename T>
class MpscQueue {  // NOLINT(clang-analyzer-optin.performance.Padding): indices on their own cache lines
  static_assert(std::is_trivially_copyable_v<T>, "doorbell records are plain values");
  static_assert(std::is_default_constructible_v<T>, "cells are default-constructed up front");
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "the queue must be lock-free");

 public:
  explicit MpscQueue(uint32_t capacity)
      : capacity_(CheckedCapacity(capacity)),
        mask_(capacity - 1),
        cells_(std::make_unique<Cell[]>(capacity)),
        enqueue_pos_(0),
        dequeue_pos_(0) {
    // release: has no partner of its own; whatever hands the queue to other threads (thread
    // start, a mutex) orders these initial sequences before their first TryPush/TryPop.
    for (uint32_t i = 0; i < capacity; ++i) {
      cells_[i].sequence.store(i, std::memory_order_release);
    }
  }

  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  uint32_t Capacity() const { return capacity_; }

  // Any thread. False when the queue is full.
  [[nodiscard]] bool TryPush(const T& value) {
    // relaxed: the position is only a ticket; what is in the cell is ordered by the cell's
    // sequence (acquire below), and the CAS makes the ticket unique.
    uint64_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      // acquire: pairs with the release store in TryPop (or the constructor); the consumer's
      // read of the previous lap's item happens before we overwrite the cell.
      const uint64_t seq = cell->sequence.load(std::memory_order_acquire);
      const int64_t lag = static_cast<int64_t>(seq - pos);
      if (lag == 0) {
        // relaxed (both orders): see the load above; on failure `pos` is reloaded and the cell
        // re-examined, so nothing depends on ordering here.
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed,
                                               std::memory_order_relaxed)) {
          break;
        }
      } else if (lag < 0) {
        return false;  // The cell still holds an item from the previous lap: full.
      } else {
        // Another producer claimed `pos` first; catch up with the current ticket.
        pos = enqueue_pos_.load(std::memory_order_relaxed);  // relaxed: as the first load.
      }
    }
    cell->value = value;
    // release: pairs with the acquire load in TryPop/Empty; publishes cell->value.
    cell->sequence.store(pos + 1, std::memory_order_release);
    return true;
  }

  // Consumer thread only. False when there is nothing ready at the head.
  [[nodiscard]] bool TryPop(T& out) {
    Cell& cell = cells_[dequeue_pos_ & mask_];
    if (!HeadReady(cell)) return false;
    out = cell.value;
    // release: pairs with the acquire load in TryPush; our read of the value happens before a
    // producer one lap later overwrites it.
    cell.sequence.store(dequeue_pos_ + capacity_, std::memory_order_release);
    ++dequeue_pos_;
    return true;
  }

  // Consumer thread only. True when TryPop would return false right now.
  bool Empty() const { return !HeadReady(cells_[dequeue_pos_ & mask_]); }

 private:
  struct Cell {
    std::atomic<uint64_t> sequence{0};
    T value{};
  };
  // Cells are not padded to a cache line: doorbells are small, and packing several per line lets
  // the engine drain a burst with few misses, at the price of some false sharing among producers.

  static uint32_t CheckedCapacity(uint32_t capacity) {
    // One cell cannot work: "holds the item for pos" (pos + 1) would equal "free for pos + 1".
    if (capacity < 2 || (capacity & (capacity - 1)) != 0) {
      throw std::invalid_argument("MpscQueue capacity must be a power of two >= 2, got " +
                                  std::to_string(capacity));
    }
    return capacity;
  }

  bool HeadReady(const Cell& cell) const {
    // acquire: pairs with the release store in TryPush; publishes cell.value.
    const uint64_t seq = cell.sequence.load(std::memory_order_acquire);
    // With one consumer the head cell is either not yet written (seq <= dequeue_pos_) or holds
    // exactly our item; anything later would mean a producer lapped an unconsumed item.
    NDKSIM_CHECK(seq <= dequeue_pos_ + 1, "a producer overwrote an unconsumed doorbell (cell sequence {}, head {})",
                 seq, dequeue_pos_);
    return seq == dequeue_pos_ + 1;
  }

  const uint32_t capacity_;
  const uint32_t mask_;
  const std::unique_ptr<Cell[]> cells_;

  // Contended by all producers; kept off the consumer's line.
  alignas(kCacheLineBytes) std::atomic<uint64_t> enqueue_pos_;

  // Consumer-private: only the engine thread reads or writes it.
  alignas(kCacheLineBytes) uint64_t dequeue_pos_;
};

}  // namespace ndksim::hw
