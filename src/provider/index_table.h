// SPDX-License-Identifier: MIT
// A lock-free lookup table for the NIC's 24-bit identifiers (QPNs, CQ numbers, memory-token
// indexes): fixed-size chunks created on the control path and read without locks on hot paths.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "common/block_recycler.h"
#include "common/check.h"

namespace ndksim::provider {

// Two levels: a fixed directory of chunk pointers and chunks of kChunkSize slots. A chunk is
// created the first time an index in it is stored and lives as long as the table, so a reader
// never sees a slot move or vanish. Memory grows with the identifiers in use, not with 2^24.
//
// Nothing is initialized before it is used: the directory and each chunk keep how far they are
// constructed (the NIC hands identifiers out from the low slots up), and an index past that is one
// never stored. Their memory comes from the block recycler, so a process that makes table after
// table (a test suite) neither faults nor clears the unused part of each.
//
// Threading: Slot() on the control path only (one thread); Find() from any thread.
template <typename T>
class IndexTable {
  static_assert(std::is_trivially_destructible_v<T>, "a table's slots are given back without destruction");

 public:
  static constexpr unsigned kIndexBits = 24;
  static constexpr unsigned kChunkBits = 12;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr std::uint32_t kChunkCount = 1u << (kIndexBits - kChunkBits);

  IndexTable() : directory_storage_(kChunkCount * sizeof(Entry)) {}
  IndexTable(const IndexTable&) = delete;
  IndexTable& operator=(const IndexTable&) = delete;

  static constexpr bool InRange(std::uint32_t index) { return index < (1u << kIndexBits); }

  // The slot of `index`, or nullptr when no index of its chunk up to it was ever stored. Any thread.
  T* Find(std::uint32_t index) const {
    if (!InRange(index)) return nullptr;
    const std::uint32_t c = index >> kChunkBits;
    // acquire: pairs with the release stores in Slot(); what is below the mark is constructed.
    if (c >= directory_built_.load(std::memory_order_acquire)) return nullptr;
    Chunk* chunk = Directory()[c].load(std::memory_order_acquire);
    if (chunk == nullptr) return nullptr;
    const std::uint32_t i = index & (kChunkSize - 1);
    if (i >= chunk->built.load(std::memory_order_acquire)) return nullptr;
    return &chunk->Slots()[i];
  }

  // The slot of `index`, creating its chunk and the slots up to it on first use. Control path only.
  T& Slot(std::uint32_t index) {
    NDKSIM_CHECK(InRange(index));
    const std::uint32_t c = index >> kChunkBits;
    Entry* directory = Directory();
    // relaxed: only this (control) thread stores the marks and the directory entries.
    const std::uint32_t built = directory_built_.load(std::memory_order_relaxed);
    if (c >= built) {
      for (std::uint32_t k = built; k <= c; ++k) new (&directory[k]) Entry(nullptr);
      // release: pairs with the acquire load in Find(); publishes the constructed entries.
      directory_built_.store(c + 1, std::memory_order_release);
    }
    Chunk* chunk = directory[c].load(std::memory_order_relaxed);
    if (chunk == nullptr) {
      chunks_.emplace_back(sizeof(Chunk));
      chunk = new (chunks_.back().get()) Chunk;
      // release: pairs with the acquire load in Find(); publishes the chunk's mark.
      directory[c].store(chunk, std::memory_order_release);
    }
    const std::uint32_t i = index & (kChunkSize - 1);
    const std::uint32_t slots_built = chunk->built.load(std::memory_order_relaxed);
    if (i >= slots_built) {
      for (std::uint32_t k = slots_built; k <= i; ++k) new (&chunk->Slots()[k]) T();
      // release: pairs with the acquire load in Find(); publishes the value-initialised slots.
      chunk->built.store(i + 1, std::memory_order_release);
    }
    return chunk->Slots()[i];
  }

 private:
  struct Chunk {
    std::atomic<std::uint32_t> built{0};  // slots [0, built) are constructed
    alignas(T) std::byte storage[kChunkSize * sizeof(T)];
    T* Slots() { return std::launder(reinterpret_cast<T*>(storage)); }
  };
  static_assert(std::is_trivially_destructible_v<Chunk>);
  using Entry = std::atomic<Chunk*>;

  Entry* Directory() const { return std::launder(reinterpret_cast<Entry*>(directory_storage_.get())); }

  RecycledArray<std::byte> directory_storage_;  // kChunkCount entries, [0, directory_built_) constructed
  std::atomic<std::uint32_t> directory_built_{0};
  std::vector<RecycledArray<std::byte>> chunks_;
};

}  // namespace ndksim::provider
