// SPDX-License-Identifier: MIT
#include "common/check.h"

#include <cstdio>
#include <cstdlib>

namespace ndksim::detail {

void CheckFailed(const char* condition, const char* file, int line, const std::string& message) {
  std::fprintf(stderr, "ndksim: internal invariant violated: %s: %s (%s:%d)\n", condition, message.c_str(), file,
               line);
  std::fflush(stderr);
  std::abort();
}

void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "ndksim: internal invariant violated: %s (%s:%d)\n", condition, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace ndksim::detail
