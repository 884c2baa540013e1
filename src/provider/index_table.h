// SPDX-License-Identifier: MIT
// A lock-free lookup table for the NIC's 24-bit identifiers (QPNs, CQ numbers, memory-token
// indexes): fixed-size chunks created on the control path and read without locks on hot paths.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/check.h"

namespace ndksim::provider {

// Two levels: a fixed directory of chunk pointers and chunks of kChunkSize slots. A chunk is
// created the first time an index in it is stored and lives as long as the table, so a reader
// never sees a slot move or vanish. Memory grows with the identifiers in use, not with 2^24.
//
// Threading: Slot() on the control path only (one thread); Find() from any thread.
template <typename T>
class IndexTable {
 public:
  static constexpr unsigned kIndexBits = 24;
  static constexpr unsigned kChunkBits = 12;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr std::uint32_t kChunkCount = 1u << (kIndexBits - kChunkBits);

  IndexTable() : directory_(std::make_unique<std::atomic<Chunk*>[]>(kChunkCount)) {}
  IndexTable(const IndexTable&) = delete;
  IndexTable& operator=(const IndexTable&) = delete;

  static constexpr bool InRange(std::uint32_t index) { return index < (1u << kIndexBits); }

  // The slot of `index`, or nullptr when no index of its chunk was ever stored. Any thread.
  T* Find(std::uint32_t index) const {
    if (!InRange(index)) return nullptr;
    // acquire: pairs with the release store in Slot(); the chunk's slots are constructed.
    Chunk* chunk = directory_[index >> kChunkBits].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk->slots[index & (kChunkSize - 1)];
  }

  // The slot of `index`, creating its chunk on first use. Control path only.
  T& Slot(std::uint32_t index) {
    NDKSIM_CHECK(InRange(index));
    std::atomic<Chunk*>& entry = directory_[index >> kChunkBits];
    // relaxed: only this (control) thread stores directory entries.
    Chunk* chunk = entry.load(std::memory_order_relaxed);
    if (chunk == nullptr) {
      owned_.push_back(std::make_unique<Chunk>());
      chunk = owned_.back().get();
      // release: pairs with the acquire load in Find(); publishes the constructed slots.
      entry.store(chunk, std::memory_order_release);
    }
    return chunk->slots[index & (kChunkSize - 1)];
  }

 private:
  struct Chunk {
    std::array<T, kChunkSize> slots{};
  };

  std::unique_ptr<std::atomic<Chunk*>[]> directory_;  // value-initialised: all null
  std::vector<std::unique_ptr<Chunk>> owned_;
};

}  // namespace ndksim::provider
