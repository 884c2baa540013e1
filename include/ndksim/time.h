// SPDX-License-Identifier: MIT
/// @file
/// Simulated time: integer picoseconds as strong types, and clock domains that turn cycles into time.
/// Nothing in the model reads the wall clock; every timestamp is a TimePoint on SimClock.
#pragma once

#include <chrono>
#include <cstdint>
#include <fmt/format.h>
#include <ostream>

namespace ndksim {

/// The simulated clock. It has no now(): only the fabric's event queue knows the current time.
struct SimClock {
  using rep = std::int64_t;                                         ///< a tick count is 64-bit signed
  using period = std::pico;                                         ///< a tick is a picosecond
  using duration = std::chrono::duration<rep, period>;              ///< see Duration
  using time_point = std::chrono::time_point<SimClock, duration>;  ///< see TimePoint
  static constexpr bool is_steady = true;                           ///< simulated time never goes back
};

using Duration = SimClock::duration;     ///< a span of simulated time, in picoseconds
using TimePoint = SimClock::time_point;  ///< an instant of simulated time

/// @name Durations

/// `v` picoseconds, nanoseconds, microseconds or milliseconds as a Duration.
///@{
constexpr Duration Picoseconds(std::int64_t v) { return Duration{v}; }
constexpr Duration Nanoseconds(std::int64_t v) { return Duration{v * 1000}; }
constexpr Duration Microseconds(std::int64_t v) { return Duration{v * 1000 * 1000}; }
constexpr Duration Milliseconds(std::int64_t v) { return Duration{v * 1000 * 1000 * 1000}; }
///@}

/// Convert a simulated duration to floating-point nanoseconds for reports (never for the model).
constexpr double ToNanoseconds(Duration d) { return static_cast<double>(d.count()) / 1000.0; }
/// A simulated duration in floating-point microseconds, for reports.
constexpr double ToMicroseconds(Duration d) { return static_cast<double>(d.count()) / 1e6; }
/// An instant's floating-point nanoseconds since the fabric began, for reports.
constexpr double ToNanoseconds(TimePoint t) { return ToNanoseconds(t.time_since_epoch()); }

/// GoogleTest's printer for an instant of simulated time: its picoseconds and microseconds since
/// the fabric began, "TimePoint{1234567 ps = 1.234567 us}". Declared with the type, so that every
/// test that prints a TimePoint uses it (a printer some translation units do not see would let the
/// linker pick either rendering).
inline void PrintTo(TimePoint t, std::ostream* os) {
  *os << fmt::format("TimePoint{{{} ps = {:.6f} us}}", t.time_since_epoch().count(), ToMicroseconds(t.time_since_epoch()));
}

/// A count of clock cycles. It has meaning only inside a ClockDomain.
struct Cycles {
  std::int64_t count = 0;                                      ///< the number of cycles
  constexpr auto operator<=>(const Cycles&) const = default;  ///< Cycles compare by their count
};

/// A clock of a given frequency; the only way to turn Cycles into Duration.
class ClockDomain {
 public:
  /// A clock of `megahertz` MHz.
  constexpr explicit ClockDomain(std::int64_t megahertz = 1000) : megahertz_(megahertz) {}
  /// The clock's frequency in MHz.
  constexpr std::int64_t Megahertz() const { return megahertz_; }
  /// Period rounded to whole picoseconds; exact for the round frequencies profiles use.
  constexpr Duration Period() const { return Picoseconds(1'000'000 / megahertz_); }
  /// The time `c` cycles of this clock take, in whole picoseconds (rounded down).
  constexpr Duration ToDuration(Cycles c) const { return Picoseconds(c.count * 1'000'000 / megahertz_); }

 private:
  std::int64_t megahertz_;
};

__extension__ using Uint128 = unsigned __int128;  ///< for overflow-free rate arithmetic

/// A data rate in bits per second; turns byte counts into serialization time.
struct BitRate {
  std::int64_t bits_per_second = 0;  ///< the rate; 0 (the default) moves any number of bytes in no time
  /// Time to move `bytes` at this rate, rounded up to a whole picosecond.
  constexpr Duration TimeFor(std::uint64_t bytes) const {
    if (bits_per_second <= 0) return Duration::zero();
    // bytes * 8e12 / bps, rounded up: in 64 bits below 2 MiB and 4 Tb/s (every packet and DMA
    // on any profile: 2^21 * 8e12 + 2^42 < 2^64), in 128 bits beyond.
    constexpr std::uint64_t kPicobitsPerByte = 8'000'000'000'000u;
    if (bytes < (std::uint64_t{1} << 21) && bits_per_second < (std::int64_t{1} << 42)) {
      const auto bps = static_cast<std::uint64_t>(bits_per_second);
      return Picoseconds(static_cast<std::int64_t>((bytes * kPicobitsPerByte + bps - 1) / bps));
    }
    const auto bps = static_cast<Uint128>(bits_per_second);
    const Uint128 num = static_cast<Uint128>(bytes) * 8u * 1'000'000'000'000u;
    return Picoseconds(static_cast<std::int64_t>((num + bps - 1) / bps));
  }
  /// The rate in gigabits per second.
  constexpr double Gbps() const { return static_cast<double>(bits_per_second) / 1e9; }
};

/// A rate of `g` Gb/s.
constexpr BitRate GigabitsPerSecond(std::int64_t g) { return BitRate{g * 1'000'000'000}; }
/// A rate of `m` Mb/s.
constexpr BitRate MegabitsPerSecond(std::int64_t m) { return BitRate{m * 1'000'000}; }

}  // namespace ndksim

// Doxygen does not read fmt, so it has no namespace to put these specializations in: it skips them.
/// @cond

/// fmt's formatter for an instant of simulated time: its picoseconds since the fabric began, as an
/// integer (an integer's format spec applies).
template <>
struct fmt::formatter<ndksim::TimePoint> : fmt::formatter<std::int64_t> {
  /// Writes the picoseconds of `t`.
  template <typename Ctx>
  auto format(ndksim::TimePoint t, Ctx& ctx) const {
    return fmt::formatter<std::int64_t>::format(t.time_since_epoch().count(), ctx);
  }
};

/// fmt's formatter for a span of simulated time: its picoseconds, as an integer (an integer's format
/// spec applies).
template <>
struct fmt::formatter<ndksim::Duration> : fmt::formatter<std::int64_t> {
  /// Writes the picoseconds of `d`.
  template <typename Ctx>
  auto format(ndksim::Duration d, Ctx& ctx) const {
    return fmt::formatter<std::int64_t>::format(d.count(), ctx);
  }
};

/// @endcond
