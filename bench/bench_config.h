// SPDX-License-Identifier: MIT
// The connected pair the wall-clock benchmarks run on: the functional profile (the hardware takes
// no simulated time, so the figures are the simulator's own cost) and queues of kDepth.
#pragma once

#include "ndksim/harness.h"

namespace ndksim::bench {

inline constexpr ULONG kDepth = 1024;

inline QpPairConfig BenchConfig() {
  QpPairConfig c;
  c.fabric.profile = profiles::kFunctional;
  c.initiator_queue_depth = kDepth;
  c.receive_queue_depth = kDepth;
  c.cq_depth = 4 * kDepth;
  return c;
}

}  // namespace ndksim::bench
