// SPDX-License-Identifier: MIT
// The kernel RPC example built with its planted race (RPC_PLANTED_RACE=1): an initiator submitter
// sees a request slot free, registers the slot's MR (an NDK call and a spin lock, no wait), and
// only then takes the slot, outside the lock. Two submitters take one slot only if a thread is
// preempted between the look and the take. By default the environment's threads switch only where
// they wait, so every schedule completes; PCT with preemption points at NDK calls and spin locks
// finds the race: the initiator's NT_ASSERT then fails (VerifierError, Check() == "ASSERT").
#include <gtest/gtest.h>

#include <optional>
#include <string>

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

// A run reaches about 1,100 preemption points (ARunReachesAboutPctStepsPreemptionPoints); 9 of
// seeds 1 to 64 find the race (PCT's bound for 5 threads and 1,100 steps is 1 in 5,500).
constexpr std::uint32_t kPctSteps = 1100;
constexpr std::uint64_t kFirstFindingSeed = 2;

TEST(KernelRpcRace, WithoutPreemptionEverySeedCompletes) {
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    const Outcome o = RunRacyScenario(seed);
    EXPECT_EQ(o.initiator.status, 0) << "seed " << seed;
    EXPECT_EQ(o.initiator.succeeded, o.initiator.requests) << "seed " << seed;
    EXPECT_EQ(o.initiator.duplicate_completions, 0u) << "seed " << seed;
  }
}

// PCT at depth 2 (the race needs one ordering constraint: a submitter preempted between its look
// and its take), its change point among the preemption points one run reaches.
kernel::EnvironmentConfig Pct() {
  return kernel::EnvironmentConfig{.schedule = kernel::ScheduleStrategy::kPct,
                                   .preemption = kernel::PreemptionPoints::All(),
                                   .pct_depth = 2,
                                   .pct_steps = kPctSteps};
}

// The first seed in [1, limit] whose run fails the initiator's slot assertion, and its message.
std::optional<std::uint64_t> FirstSeedThatFindsTheRace(std::uint64_t limit, std::string* message) {
  for (std::uint64_t seed = 1; seed <= limit; ++seed) {
    try {
      (void)RunRacyScenario(seed, Pct());
    } catch (const kernel::VerifierError& e) {
      if (e.Check() != "ASSERT") throw;
      *message = e.what();
      return seed;
    }
  }
  return std::nullopt;
}

TEST(KernelRpcRace, ARunReachesAboutPctStepsPreemptionPoints) {
  // Depth 1: no change point, so the run completes; its steps are what kPctSteps approximates.
  kernel::EnvironmentConfig config = Pct();
  config.pct_depth = 1;
  const Outcome o = RunRacyScenario(1, config);
  EXPECT_EQ(o.initiator.succeeded, o.initiator.requests);
  EXPECT_GT(o.preemption_steps, kPctSteps / 2);
  EXPECT_LT(o.preemption_steps, kPctSteps * 2);
}

TEST(KernelRpcRace, PctWithPreemptionPointsFindsTheRaceWithinSixteenSeeds) {
  std::string message;
  const std::optional<std::uint64_t> seed = FirstSeedThatFindsTheRace(16, &message);
  ASSERT_TRUE(seed.has_value());
  EXPECT_EQ(*seed, kFirstFindingSeed);
  EXPECT_NE(message.find("rpc_initiator.c:"), std::string::npos) << message;  // the assertion's site
}

TEST(KernelRpcRace, TheReportEndsWithTheInterleavingAndThePreemptionThatLedThere) {
  std::string message;
  ASSERT_TRUE(FirstSeedThatFindsTheRace(kFirstFindingSeed, &message).has_value());
  EXPECT_NE(message.find("\n  interleaving, the last 64 of "), std::string::npos) << message;
  EXPECT_NE(message.find(" (preempting rpc_initiator!thread "), std::string::npos) << message;
}

TEST(KernelRpcRace, TheFindingSeedReplaysTheSameInterleaving) {
  std::string first;
  std::string again;
  for (std::string* out : {&first, &again}) {
    try {
      (void)RunRacyScenario(kFirstFindingSeed, Pct());
      ADD_FAILURE() << "the race did not show";
    } catch (const kernel::VerifierError& e) {
      *out = e.what();
    }
  }
  EXPECT_EQ(first, again);  // the message carries the site, the thread and the seed
}

}  // namespace
}  // namespace ndksim::kernel_rpc
