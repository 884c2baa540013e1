// SPDX-License-Identifier: MIT
// Single-producer single-consumer ring of fixed-size slots in "host memory": the shape of the SQ,
// RQ and SRQ work queues shared between the provider (producer) and the simulated RNIC (consumer).
// See DESIGN.md "Host interface" and STYLE.md point 18.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/block_recycler.h"
#include "common/check.h"

namespace ndksim::hw {

// Fixed rather than std::hardware_destructive_interference_size: GCC warns when that constant
// appears in a header because its value may differ between translation units.
inline constexpr std::size_t kCacheLineBytes = 64;

// A power-of-two array of slots indexed by free-running 32-bit counters.
//
// Capacity rule: with producer index P and consumer index C (both free-running, compared modulo
// 2^32), the ring holds P - C entries; it is empty when P - C == 0 and full when
// P - C == Capacity(). Every slot is usable (no slot is sacrificed to tell full from empty),
// because the counters are never masked before the subtraction. A slot lives at
// slots_[index & Mask()], and Capacity() <= 2^31 keeps P - C unambiguous across the 2^32 wrap.
//
// Protocol: the producer obtains a slot in place (ProducerSlot), fills it, and makes it visible
// with ProducerPublish (one release store, which is what a driver writes to a doorbell record).
// The consumer looks at a slot in place (ConsumerPeek, or SlotAt after reading
// PublishedProducerIndex, as a NIC fetching WQE number N does), and hands it back with
// ConsumerRelease. Only acquire/release orderings are used; each atomic operation names its partner.
//
// Threading: "producer-side" members may be called only by the single producer thread at a time,
// "consumer-side" members only by the single consumer; PublishedProducerIndex may be called by
// anyone. Each side keeps a cached copy of the other side's index on its own cache line so that
// the shared index line is touched only when the cache says the ring looks full (or empty).
//
// No allocation after construction, no locks, no virtual functions.
template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>, "ring slots are raw host memory");
  static_assert(std::is_default_constructible_v<T>, "slots with member initialisers are value-initialised");

 public:
  // `initial_index` is where both counters start. Real queues start at 0; a value near
  // UINT32_MAX lets tests drive the counters across the 32-bit wrap quickly.
  explicit SpscRing(uint32_t capacity, uint32_t initial_index = 0)
      : capacity_(CheckedCapacity(capacity)),
        mask_(capacity - 1),
        storage_(AllocateSlots(capacity)),
        slots_(storage_.slots),
        prod_(initial_index),
        prod_next_(initial_index),
        cons_cache_(initial_index),
        cons_(initial_index),
        cons_next_(initial_index),
        prod_cache_(initial_index) {}

  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  uint32_t Capacity() const { return capacity_; }
  uint32_t Mask() const { return mask_; }

  // The slot for free-running index `index`. Does no bounds or ownership check: the caller must
  // own that slot under the protocol above (e.g. the NIC reading WQE N < PublishedProducerIndex()).
  T& SlotAt(uint32_t index) { return slots_[index & mask_]; }
  const T& SlotAt(uint32_t index) const { return slots_[index & mask_]; }

  // ---- Producer side ----

  // Slot for index ProducerIndex() + offset, to be filled in place, or nullptr if the ring
  // cannot hold that many more entries. Does not advance anything; ProducerPublish does.
  T* ProducerSlot(uint32_t offset = 0) {
    if (!ProducerHasRoom(offset)) return nullptr;
    return &slots_[(prod_next_ + offset) & mask_];
  }

  // Makes the next `n` slots (already written) visible to the consumer.
  void ProducerPublish(uint32_t n = 1) {
    // The caller must not publish slots the consumer still owns. The cached consumer index is a
    // lower bound, so the check costs nothing when it passes. A doubtful case reloads it (acquire:
    // pairs with the release store in ConsumerRelease; we only need the value) and keeps the
    // fresh value: a caller that writes through SlotAt never refreshes the cache otherwise, and
    // every publish would then read the line the consumer writes.
    if (!FitsIn(n, capacity_, prod_next_ - cons_cache_)) {
      cons_cache_ = cons_.load(std::memory_order_acquire);
      NDKSIM_CHECK(FitsIn(n, capacity_, prod_next_ - cons_cache_),
                   "publishing {} entries into a ring of {} with {} unreleased", n, capacity_,
                   prod_next_ - cons_cache_);
    }
    prod_next_ += n;
    // release: pairs with the acquire loads of prod_ in ConsumerHasEntries, Available and
    // PublishedProducerIndex; publishes the contents of the slots written before this store.
    prod_.store(prod_next_, std::memory_order_release);
  }

  // The producer's own counter: index of the next slot ProducerSlot() returns. Equal to the
  // published index (only this side writes either), but read without touching the shared line.
  uint32_t ProducerIndex() const { return prod_next_; }

  // The published producer index, as hardware reads it from the doorbell record. Any thread.
  uint32_t PublishedProducerIndex() const {
    // acquire: pairs with the release store in ProducerPublish; slots below the returned index
    // are fully written and may be read through SlotAt.
    return prod_.load(std::memory_order_acquire);
  }

  [[nodiscard]] bool TryPush(const T& value) {
    T* slot = ProducerSlot();
    if (slot == nullptr) return false;
    *slot = value;
    ProducerPublish();
    return true;
  }

  // ---- Consumer side ----

  // Entry ConsumerIndex() + offset, read in place, or nullptr if fewer than offset + 1 entries
  // are published. The slot stays owned by the consumer until ConsumerRelease passes it.
  const T* ConsumerPeek(uint32_t offset = 0) {
    if (!ConsumerHasEntries(offset)) return nullptr;
    return &slots_[(cons_next_ + offset) & mask_];
  }

  // Returns the oldest `n` entries' slots to the producer.
  void ConsumerRelease(uint32_t n = 1) {
    // The caller must not release entries that were never published. The cached producer index
    // is a lower bound, so the check costs nothing when it passes. A doubtful case reloads it
    // (acquire: pairs with the release store in ProducerPublish; we only need the value) and keeps
    // the fresh value: a caller that learnt of these entries through PublishedProducerIndex never
    // refreshes the cache otherwise, and every release would then read the producer's line.
    if (!Within(n, prod_cache_ - cons_next_, capacity_)) {
      prod_cache_ = prod_.load(std::memory_order_acquire);
      NDKSIM_CHECK(Within(n, prod_cache_ - cons_next_, capacity_), "releasing {} entries of a ring with {} published",
                   n, prod_cache_ - cons_next_);
    }
    cons_next_ += n;
    // release: pairs with the acquire load of cons_ in ProducerHasRoom; orders our reads of the
    // released slots before the producer may overwrite them.
    cons_.store(cons_next_, std::memory_order_release);
  }

  // Consumer side: a published producer index that reaches `index` if the producer has published
  // that far. The cached lower bound when it already reaches it; otherwise a fresh look (acquire:
  // pairs with the release store in ProducerPublish), which the cache keeps. A consumer that
  // only asks whether the next entries are there thus reads the producer's line only when the
  // last look showed too few. `index` lies at most a ring ahead of the consumer.
  uint32_t PublishedThrough(uint32_t index) {
    if (static_cast<int32_t>(prod_cache_ - index) >= 0) return prod_cache_;
    prod_cache_ = prod_.load(std::memory_order_acquire);
    return prod_cache_;
  }

  // Consumer side: the producer index as the consumer learnt it some other way, after the
  // producer published it (a doorbell naming the index, received through a queue that orders it
  // after the publish). Raises the cached lower bound, so that ConsumerRelease of those entries
  // needs no look at the producer's line. An index behind the cache, or more than a ring ahead
  // of the consumer, changes nothing.
  void ConsumerLearnPublished(uint32_t producer_index) {
    const uint32_t ahead = producer_index - cons_next_;
    const uint32_t cached = prod_cache_ - cons_next_;
    if (ahead <= capacity_ && (cached > capacity_ || ahead > cached)) prod_cache_ = producer_index;
  }

  // The consumer's own counter: index of the entry ConsumerPeek() returns.
  uint32_t ConsumerIndex() const { return cons_next_; }

  // Number of published entries not yet released. Consumer side.
  uint32_t Available() {
    // acquire: pairs with the release store in ProducerPublish; entries counted here are fully
    // written. Refreshing the cache lets the next ConsumerPeek skip the shared line.
    prod_cache_ = prod_.load(std::memory_order_acquire);
    return prod_cache_ - cons_next_;
  }

  [[nodiscard]] bool TryPop(T& out) {
    const T* slot = ConsumerPeek();
    if (slot == nullptr) return false;
    out = *slot;
    ConsumerRelease();
    return true;
  }

 private:
  // `n` more entries fit beside `used` ones (`used` beyond the capacity means a stale lower bound).
  static constexpr bool FitsIn(uint32_t n, uint32_t capacity, uint32_t used) {
    return used <= capacity && n <= capacity - used;
  }
  // `n` entries are among `published` ones (`published` beyond the capacity means a wrapped,
  // stale lower bound).
  static constexpr bool Within(uint32_t n, uint32_t published, uint32_t capacity) {
    return published <= capacity && n <= published;
  }
  // Slots start on a cache line so that a 64-byte WQE never straddles two lines.
  static constexpr std::size_t kSlotAlignment = std::max(kCacheLineBytes, alignof(T));

  static uint32_t CheckedCapacity(uint32_t capacity) {
    if (capacity == 0 || (capacity & (capacity - 1)) != 0) {
      throw std::invalid_argument("SpscRing capacity must be a non-zero power of two, got " +
                                  std::to_string(capacity));
    }
    return capacity;
  }

  // The slots' storage, cache-line aligned, from the block recycler (common/block_recycler.h): a
  // process that makes fabric after fabric reuses its rings' memory instead of faulting it in and
  // clearing it for each. A slot of a trivially constructible type is not initialized: under the
  // protocol above nobody reads a slot before its producer has written it. A slot type with member
  // initialisers is value-initialised.
  struct Storage {
    RecycledArray<std::byte> raw;
    T* slots = nullptr;
  };
  static Storage AllocateSlots(uint32_t capacity) {
    Storage s;
    // The recycler's blocks are 64-B aligned: room for more alignment only where T needs it.
    std::size_t room = std::size_t{capacity} * sizeof(T) + (kSlotAlignment > 64 ? kSlotAlignment : 0);
    s.raw = RecycledArray<std::byte>(room);
    void* aligned = s.raw.get();
    aligned = std::align(kSlotAlignment, std::size_t{capacity} * sizeof(T), aligned, room);
    NDKSIM_CHECK(aligned != nullptr);
    // T is trivially copyable, hence trivially destructible: giving the block back is all the
    // clean-up there is.
    if constexpr (std::is_trivially_default_constructible_v<T>) {
      s.slots = std::launder(static_cast<T*>(aligned));
    } else {
      s.slots = static_cast<T*>(aligned);
      std::uninitialized_value_construct_n(s.slots, capacity);
    }
    return s;
  }

  // True if slot ProducerIndex() + offset is free.
  bool ProducerHasRoom(uint32_t offset) {
    if (offset >= capacity_) return false;
    if (prod_next_ + offset - cons_cache_ < capacity_) return true;
    // acquire: pairs with the release store in ConsumerRelease; once we see the consumer has
    // moved past a slot, its reads of that slot happened before our writes to it.
    cons_cache_ = cons_.load(std::memory_order_acquire);
    return prod_next_ + offset - cons_cache_ < capacity_;
  }

  // True if entry ConsumerIndex() + offset is published.
  bool ConsumerHasEntries(uint32_t offset) {
    if (prod_cache_ - cons_next_ > offset) return true;
    // acquire: pairs with the release store in ProducerPublish; publishes the slot contents.
    prod_cache_ = prod_.load(std::memory_order_acquire);
    return prod_cache_ - cons_next_ > offset;
  }

  // Immutable after construction; read by both sides, so it shares no line with a mutable field.
  alignas(kCacheLineBytes) const uint32_t capacity_;
  const uint32_t mask_;
  const Storage storage_;
  T* const slots_;

  // Shared line written by the producer: the published producer index (the doorbell record).
  alignas(kCacheLineBytes) std::atomic<uint32_t> prod_;

  // Producer-private line: its own counter and its possibly stale view of cons_.
  alignas(kCacheLineBytes) uint32_t prod_next_;
  uint32_t cons_cache_;

  // Shared line written by the consumer: the released consumer index.
  alignas(kCacheLineBytes) std::atomic<uint32_t> cons_;

  // Consumer-private line: its own counter and its possibly stale view of prod_.
  alignas(kCacheLineBytes) uint32_t cons_next_;
  uint32_t prod_cache_;
};

}  // namespace ndksim::hw
