// SPDX-License-Identifier: MIT
// What the harnesses share beyond fuzz_input.h: reporting a broken invariant.
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_input.h"

namespace ndksim::fuzz {

void Violation(const char* what, const char* file, int line) {
  std::fprintf(stderr, "ndksim fuzz: invariant violated: %s (%s:%d)\n", what, file, line);
  std::abort();
}

}  // namespace ndksim::fuzz
