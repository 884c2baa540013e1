// SPDX-License-Identifier: MIT
#include "common/block_recycler.h"

#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define NDKSIM_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define NDKSIM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define NDKSIM_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define NDKSIM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#endif
#endif
#ifndef NDKSIM_POISON
#define NDKSIM_POISON(p, n) ((void)(p), (void)(n))
#define NDKSIM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ndksim {
namespace {

constexpr std::size_t kAlignment = 64;
// Blocks below this come and go through the C library, whose bins keep small blocks without
// faults. Larger ones are kept by size class: four classes per power of two (a block is at most a
// quarter larger than asked), up to 2^30 bytes.
constexpr std::size_t kSmallest = 4096;
constexpr unsigned kSmallestBits = 12;
constexpr unsigned kClasses = 4 * (31 - kSmallestBits);
// At most this much is kept: a process that once made a huge fabric does not hold it forever.
constexpr std::size_t kMaxCachedBytes = std::size_t{256} << 20;

struct FreeLists {
  std::mutex mutex;
  std::array<std::vector<void*>, kClasses> lists;
  std::size_t blocks = 0;
  std::size_t bytes = 0;
};

// Never destroyed: blocks may be given back by objects destroyed after static destructors run.
FreeLists& Lists() {
  static auto* lists = new FreeLists;
  return *lists;
}

// The class of a block of `bytes` >= kSmallest: 2^k, 1.25 * 2^k, 1.5 * 2^k or 1.75 * 2^k.
unsigned ClassOf(std::size_t bytes) {
  const unsigned k = std::bit_width(bytes) - 1;  // 2^k <= bytes < 2^(k+1)
  const std::size_t quarter = std::size_t{1} << (k - 2);
  const std::size_t quarters = (bytes + quarter - 1) / quarter;  // 4..8
  return 4 * (k - kSmallestBits) + static_cast<unsigned>(quarters - 4);
}

std::size_t ClassBytes(unsigned c) {
  const unsigned k = c / 4 + kSmallestBits;
  return (std::size_t{4} + c % 4) << (k - 2);
}

// A small block: 64-B aligned from the C library, cleared as the recycler's are when new.
void* TakeSmall(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* block = std::aligned_alloc(kAlignment, rounded);
  if (block == nullptr) throw std::bad_alloc();
  std::memset(block, 0, rounded);
  return block;
}

}  // namespace

void* BlockRecycler::Take(std::size_t bytes) {
  if (bytes < kSmallest) return TakeSmall(bytes);
  const unsigned c = ClassOf(bytes);
  if (c >= kClasses) throw std::bad_alloc();
  {
    FreeLists& f = Lists();
    const std::lock_guard lock(f.mutex);
    std::vector<void*>& list = f.lists[c];
    if (!list.empty()) {
      void* block = list.back();
      list.pop_back();
      --f.blocks;
      f.bytes -= ClassBytes(c);
      NDKSIM_UNPOISON(block, ClassBytes(c));
      return block;
    }
  }
  // A new block is cleared once, so that no byte of it is ever undefined (a recycled one holds
  // what its last owner wrote).
  void* block = std::aligned_alloc(kAlignment, ClassBytes(c));
  if (block == nullptr) throw std::bad_alloc();
  std::memset(block, 0, ClassBytes(c));
  return block;
}

void BlockRecycler::Give(void* block, std::size_t bytes) noexcept {
  if (block == nullptr) return;
  if (bytes < kSmallest) {
    std::free(block);
    return;
  }
  const unsigned c = ClassOf(bytes);
  FreeLists& f = Lists();
  {
    const std::lock_guard lock(f.mutex);
    if (f.bytes + ClassBytes(c) <= kMaxCachedBytes) {
      try {
        f.lists[c].push_back(block);
        ++f.blocks;
        f.bytes += ClassBytes(c);
        NDKSIM_POISON(block, ClassBytes(c));
        return;
      } catch (const std::bad_alloc&) {
        // no room to remember it: free it below
      }
    }
  }
  std::free(block);
}

std::pair<std::size_t, std::size_t> BlockRecycler::Cached() {
  FreeLists& f = Lists();
  const std::lock_guard lock(f.mutex);
  return {f.blocks, f.bytes};
}

void BlockRecycler::Release() noexcept {
  FreeLists& f = Lists();
  const std::lock_guard lock(f.mutex);
  for (unsigned c = 0; c < kClasses; ++c) {
    for (void* block : f.lists[c]) {
      NDKSIM_UNPOISON(block, ClassBytes(c));
      std::free(block);
    }
    f.lists[c].clear();
  }
  f.blocks = 0;
  f.bytes = 0;
}

}  // namespace ndksim
