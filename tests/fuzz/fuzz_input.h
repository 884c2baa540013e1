// SPDX-License-Identifier: MIT
// Reads a fuzzer's input bytes as a stream of choices. Every read succeeds: past the end of the
// input it returns the smallest choice (0, false, the low end of a range, an empty span), so a
// short input is simply a short program. Used by every harness in tests/fuzz.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "ndksim/profile.h"

namespace ndksim::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  bool Empty() const { return pos_ >= size_; }
  std::size_t Remaining() const { return size_ - std::min(pos_, size_); }

  // An unsigned integer of T's width, little-endian from the next bytes (0 past the end).
  template <typename T>
  T Integral() {
    static_assert(std::is_integral_v<T>);
    using U = std::make_unsigned_t<T>;
    U v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v = static_cast<U>(v | (static_cast<U>(Byte()) << (8 * i)));
    return static_cast<T>(v);
  }

  // A value in [lo, hi], spending as few bytes as the range needs.
  std::uint64_t InRange(std::uint64_t lo, std::uint64_t hi) {
    if (hi <= lo) return lo;
    const std::uint64_t span = hi - lo;
    std::uint64_t v = 0;
    for (std::uint64_t covered = 0; covered < span; covered = (covered << 8) | 0xff) v = (v << 8) | Byte();
    return lo + (span == UINT64_MAX ? v : v % (span + 1));
  }
  template <typename T>
  T InRange(T lo, T hi) {
    return static_cast<T>(InRange(static_cast<std::uint64_t>(lo), static_cast<std::uint64_t>(hi)));
  }

  bool Bool() { return (Byte() & 1) != 0; }

  // One of `n` choices (0 when n is 0).
  std::size_t Pick(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(InRange<std::uint64_t>(0, n - 1)); }

  // True with probability about num/256.
  bool Chance(std::uint8_t num) { return Byte() < num; }

  // Up to `max` bytes (fewer at the end of the input), copied into `out`; returns how many.
  std::size_t Bytes(std::byte* out, std::size_t max) {
    const std::size_t n = std::min(max, Remaining());
    if (n > 0) std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }

  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// A harness's invariant: on failure, print it and abort, so libFuzzer (or the replay test)
// reports the input that broke it.
// `p` with on-NIC caches far too small for the work (4 QP contexts, 4 key entries, 4 page-translation
// lines, in sets of 2) and the NIC-wide packet and write-TLP limits on, so that context misses,
// their fills racing a close, and recycled QPNs and keys all occur. The functional profile stays
// as it is (it has no PCIe to fill a cache over).
HardwareProfile WithTinyCaches(HardwareProfile p);

[[noreturn]] void Violation(const char* what, const char* file, int line);
#define NDKSIM_FUZZ_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::ndksim::fuzz::Violation(#cond, __FILE__, __LINE__))

}  // namespace ndksim::fuzz
