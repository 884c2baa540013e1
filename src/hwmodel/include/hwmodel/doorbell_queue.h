// SPDX-License-Identifier: MIT
// Bounded lock-free multi-producer single-consumer queue that carries doorbell MMIO writes from
// many application threads to the one engine thread (DESIGN.md "Host interface", last bullet).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/check.h"
#include "common/prefetch.h"
#include "hwmodel/ring.h"  // kCacheLineBytes

namespace ndksim::hw {

// A bounded queue after Vyukov's MPMC design, with the dequeue side specialised to one consumer
// that never writes the cells.
//
// Each cell carries a sequence number that says whether it holds the item for a position: the
// producer that claims position `pos` (cell pos & mask) writes the item, then stores pos + 1 as
// the cell's sequence; the consumer takes the head item when its cell's sequence is head + 1.
// Producers claim positions with a CAS on enqueue_pos_, and only while the claimed cell is free:
// `pos` is below the consumer's published head plus the capacity. Producers keep a lower bound of
// that head (head_bound_, beside enqueue_pos_) and read the consumer's line only when the bound
// runs out, once per lap at most.
//
// So a producer touches only the cells it fills and the producers' own line, and the consumer's
// line once a lap: in threaded mode, a doorbell write does not wait for a line to come back from
// the engine's core. (Vyukov's consumer marks each cell free by writing its sequence, and every
// producer then reads that line back.)
//
// Capacity rule: at most Capacity() items are queued; TryPush returns false when the cell it would
// claim may still hold an item from the previous lap (back-pressure: nothing is dropped).
// Positions are 64-bit and never wrap in practice (2^64 doorbells).
//
// A producer that has claimed a position but not yet written its cell makes the consumer see
// the queue as empty until it finishes, even if later producers have finished: this keeps FIFO
// order by claim position, and the stall is bounded by one short copy.
//
// Threading: TryPush from any number of threads; TryPop and Empty from one consumer thread only.
template <typename T>
class MpscQueue {  // NOLINT(clang-analyzer-optin.performance.Padding): indices on their own cache lines
  static_assert(std::is_trivially_copyable_v<T>, "doorbell records are plain values");
  static_assert(std::is_trivially_destructible_v<T>, "cells are given back without destruction");
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "the queue must be lock-free");

 public:
  explicit MpscQueue(uint32_t capacity)
      : capacity_(CheckedCapacity(capacity)),
        mask_(capacity - 1),
        storage_(std::size_t{capacity} * sizeof(Cell)),
        cells_(std::launder(reinterpret_cast<Cell*>(storage_.get()))),
        enqueue_pos_(0),
        head_bound_(0),
        head_(0),
        dequeue_pos_(0) {
    // Cell i first holds the item for position i when its sequence is i + 1; start it at i.
    // release: has no partner of its own; whatever hands the queue to other threads (thread
    // start, a mutex) orders these initial sequences before their first TryPush/TryPop.
    // Only the sequence is made: a cell's value is written before it is read. The storage comes
    // from the block recycler, so a process that makes NIC after NIC neither faults it in nor
    // clears it each time.
    for (uint32_t i = 0; i < capacity; ++i) {
      new (&cells_[i].sequence) std::atomic<uint64_t>(0);
      cells_[i].sequence.store(i, std::memory_order_release);
    }
  }

  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  uint32_t Capacity() const { return capacity_; }

  // Any thread. False when the queue is full.
  [[nodiscard]] bool TryPush(const T& value) {
    // relaxed: the position is only a ticket; the CAS makes it unique, and the cell's freedom is
    // ordered by the head (acquire in PushFrom).
    return PushFrom(enqueue_pos_.load(std::memory_order_relaxed), value);
  }

  // Consumer thread only. False when there is nothing ready at the head.
  [[nodiscard]] bool TryPop(T& out) {
    const Cell& cell = cells_[dequeue_pos_ & mask_];
    if (!HeadReady(cell)) return false;
    out = cell.value;
    ++dequeue_pos_;
    // release: pairs with the acquire load in PushFrom; our read of the value happens before a
    // producer one lap later overwrites it. A plain store on x86, to a line producers read once
    // a lap.
    head_.store(dequeue_pos_, std::memory_order_release);
    return true;
  }

  // Consumer thread only. True when TryPop would return false right now.
  bool Empty() const { return !HeadReady(cells_[dequeue_pos_ & mask_]); }

 private:
  friend struct MpscQueueTestAccess;

  // TryPush from the ticket `pos` it loaded. The ticket may be stale by the time it is used (the
  // producer was preempted after loading it), which is what a test passes to hold that a stale
  // ticket never reads as a full queue.
  bool PushFrom(uint64_t pos, const T& value) {
    for (;;) {
      // acquire: pairs with the release store of the bound below, made by a producer that read
      // the head with acquire; so the consumer's read of the cell's previous item happens before
      // our write, whichever producer read the head.
      if (pos - head_bound_.load(std::memory_order_acquire) >= capacity_) {
        // The bound ran out: read the consumer's head. acquire: pairs with the release store in
        // TryPop; the consumer's read of the previous lap's item happens before we overwrite the
        // cell. Any producer may store a bound it read: every one is a lower bound of the head.
        const uint64_t head = head_.load(std::memory_order_acquire);
        head_bound_.store(head, std::memory_order_release);  // release: see the load above
        if (pos - head >= capacity_) {
          // Full, unless `pos` is stale: other producers moved on, and the consumer's head may
          // even have passed it (the difference then wraps). Only a current ticket says full.
          const uint64_t current = enqueue_pos_.load(std::memory_order_relaxed);  // relaxed: a ticket
          if (current == pos) return false;  // the cell still holds the previous lap's item
          pos = current;
          continue;
        }
      }
      // relaxed (both orders): the position is a ticket; on failure `pos` is reloaded and the
      // cell's freedom checked again.
      if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed, std::memory_order_relaxed)) {
        break;
      }
    }
    // The cell a later push will fill: the engine read it a lap ago and may still hold a copy,
    // which the prefetch takes back now rather than when that push's store waits for it.
    PrefetchForWrite(&cells_[(pos + WriteAheadFor(capacity_)) & mask_]);
    Cell& cell = cells_[pos & mask_];
    cell.value = value;
    // release: pairs with the acquire load in TryPop/Empty; publishes cell.value.
    cell.sequence.store(pos + 1, std::memory_order_release);
    return true;
  }

  // A cell to a cache line. The engine reads each doorbell soon after it is written; with two
  // cells to a line, the next write would find the line on the engine's core and wait for it.
  // One to a line, the producer finds the line where the engine left it a lap earlier.
  struct alignas(kCacheLineBytes) Cell {
    std::atomic<uint64_t> sequence;
    T value;
  };
  static_assert(sizeof(Cell) == kCacheLineBytes, "a doorbell record and its sequence fit one line");
  static_assert(std::is_trivially_destructible_v<Cell>, "cells are given back without destruction");

  static uint32_t CheckedCapacity(uint32_t capacity) {
    // One cell cannot work: "holds the item for pos" (pos + 1) would equal "free for pos + 1".
    if (capacity < 2 || (capacity & (capacity - 1)) != 0) {
      throw std::invalid_argument("MpscQueue capacity must be a power of two >= 2, got " +
                                  std::to_string(capacity));
    }
    return capacity;
  }

  bool HeadReady(const Cell& cell) const {
    // acquire: pairs with the release store in PushFrom; publishes cell.value.
    const uint64_t seq = cell.sequence.load(std::memory_order_acquire);
    // With one consumer the head cell holds an older lap's sequence (at most head + 1 - capacity)
    // or exactly our item; anything later would mean a producer lapped an unconsumed item.
    NDKSIM_CHECK(seq <= dequeue_pos_ + 1, "a producer overwrote an unconsumed doorbell (cell sequence {}, head {})",
                 seq, dequeue_pos_);
    return seq == dequeue_pos_ + 1;
  }

  const uint32_t capacity_;
  const uint32_t mask_;
  const RecycledArray<std::byte> storage_;  // the cells, 64-B aligned
  Cell* const cells_;

  // The producers' line: contended by all producers, kept off the consumer's line.
  alignas(kCacheLineBytes) std::atomic<uint64_t> enqueue_pos_;
  std::atomic<uint64_t> head_bound_;  // a lower bound of head_, shared by the producers

  // The consumer's line: it writes the head on every pop; producers read it once a lap.
  alignas(kCacheLineBytes) std::atomic<uint64_t> head_;
  uint64_t dequeue_pos_;  // consumer-private: equal to head_, read without an atomic load
};

}  // namespace ndksim::hw
