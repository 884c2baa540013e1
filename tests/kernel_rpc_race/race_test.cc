// SPDX-License-Identifier: MIT
// The kernel RPC example built with its planted race (RPC_PLANTED_RACE=1): an initiator submitter
// sees a request slot free, registers the slot's MR (an NDK call and a spin lock, no wait), and
// only then takes the slot, outside the lock. Two submitters take one slot only if a thread is
// preempted between the look and the take; the environment's threads switch only where they wait,
// so today every schedule completes. A scheduler with preemption points at NDK calls and locks
// finds the race: the initiator's NT_ASSERT then fails (VerifierError, Check() == "ASSERT").
#include <gtest/gtest.h>

#include "kernel_rpc/harness.h"

namespace ndksim::kernel_rpc {

// The racy scenario for one seed: four submitters contending for two slots, so submitters often
// look for a free slot at the same time. The environment's configuration is the caller's (a test
// with preemption passes its own); its seed is set from `seed`.
Outcome RunRacyScenario(std::uint64_t seed, kernel::EnvironmentConfig environment = {}) {
  Scenario s = DefaultScenario();
  s.initiator.submitters = 4;
  s.initiator.queue_depth = 2;
  s.fabric.seed = seed;
  environment.seed = seed;
  s.environment = environment;
  return RunScenario(s);
}

namespace {

TEST(KernelRpcRace, WithoutPreemptionEverySeedCompletes) {
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    const Outcome o = RunRacyScenario(seed);
    EXPECT_EQ(o.initiator.status, 0) << "seed " << seed;
    EXPECT_EQ(o.initiator.succeeded, o.initiator.requests) << "seed " << seed;
    EXPECT_EQ(o.initiator.duplicate_completions, 0u) << "seed " << seed;
  }
}

}  // namespace
}  // namespace ndksim::kernel_rpc
