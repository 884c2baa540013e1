// SPDX-License-Identifier: MIT
// Large blocks (queue rings, context and index tables) kept for the next fabric of the process.
//
// A consumer's test suite makes and destroys a fabric per test: thousands of them. Handed back to
// the C library, a large block goes back to the system (an mmap'd block at once, the top of the
// heap past the trim threshold), and the next test's identical block is faulted in page by page
// and cleared again. The recycler keeps freed blocks by size class and gives them to the next
// request of that class, still mapped, so a suite of small tests runs without page faults.
//
// What a block holds when taken is unspecified: what its last owner left, or zeros. Its owner
// initializes what it reads before writing. Control paths only (a mutex guards the free lists);
// nothing here runs per WQE. Under AddressSanitizer a cached block is poisoned, so a use after its
// owner gave it back is still reported.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace ndksim {

class BlockRecycler {
 public:
  // A block of at least `bytes` (> 0), aligned to 64 bytes; throws std::bad_alloc.
  static void* Take(std::size_t bytes);
  // Gives back a block Take returned for the same `bytes`.
  static void Give(void* block, std::size_t bytes) noexcept;
  // Blocks kept now, and their bytes (for tests and the docs' figures).
  static std::pair<std::size_t, std::size_t> Cached();
  // Hands every kept block back to the C library.
  static void Release() noexcept;
};

// An array of `count` T (trivially copyable and destructible) in a recycled block, not initialized.
template <typename T>
class RecycledArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "a recycled block holds raw memory");

 public:
  RecycledArray() = default;
  explicit RecycledArray(std::size_t count)
      : data_(static_cast<T*>(BlockRecycler::Take(count * sizeof(T)))), count_(count) {}
  ~RecycledArray() {
    if (data_ != nullptr) BlockRecycler::Give(data_, count_ * sizeof(T));
  }
  RecycledArray(RecycledArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  RecycledArray& operator=(RecycledArray&& other) noexcept {
    if (this != &other) {
      RecycledArray gone(std::move(*this));
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  RecycledArray(const RecycledArray&) = delete;
  RecycledArray& operator=(const RecycledArray&) = delete;

  T* get() const { return data_; }
  T& operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return count_; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace ndksim
