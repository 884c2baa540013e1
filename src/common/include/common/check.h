// SPDX-License-Identifier: MIT
// NDKSIM_CHECK: the simulator's own invariants (a bug in ndksim, the first of its four error
// kinds). Active in every build type: a broken invariant prints where and why, then aborts,
// instead of corrupting a consumer's memory or a completion further on.
//
//   NDKSIM_CHECK(slot < capacity_);
//   NDKSIM_CHECK(n <= Free(), "posting {} entries into a ring with {} free", n, Free());
//
// The message arguments are formatted (with fmt) only when the check fails.
#pragma once

#include <string>

#include <fmt/format.h>

namespace ndksim::detail {

[[noreturn]] void CheckFailed(const char* condition, const char* file, int line, const std::string& message);
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line);

}  // namespace ndksim::detail

#define NDKSIM_CHECK(cond, ...)                                                                        \
  (static_cast<bool>(cond) ? static_cast<void>(0)                                                      \
                           : ::ndksim::detail::CheckFailed(#cond, __FILE__, __LINE__ __VA_OPT__(, ) \
                                                               __VA_OPT__(::fmt::format(__VA_ARGS__))))
