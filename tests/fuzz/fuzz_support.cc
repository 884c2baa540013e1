// SPDX-License-Identifier: MIT
// What the harnesses share beyond fuzz_input.h: reporting a broken invariant, the tiny-cache profile.
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_input.h"

namespace ndksim::fuzz {

HardwareProfile WithTinyCaches(HardwareProfile p) {
  if (p.pcie_bandwidth.bits_per_second == 0) return p;
  p.qp_context_cache_entries = 4;
  p.qp_context_cache_ways = 2;
  p.mpt_cache_entries = 4;
  p.mtt_cache_entries = 4;
  p.translation_cache_ways = 2;
  p.receive_packet_interval = Cycles{8};
  p.pcie_write_tlp_interval = Nanoseconds(6);
  return p;
}

void Violation(const char* what, const char* file, int line) {
  std::fprintf(stderr, "ndksim fuzz: invariant violated: %s (%s:%d)\n", what, file, line);
  std::abort();
}

}  // namespace ndksim::fuzz
