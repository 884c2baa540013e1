// SPDX-License-Identifier: MIT
// The kernel RPC example (examples/kernel_rpc): a block-storage initiator and target, Windows
// kernel-style C drivers, run in the kernel environment on a two-node fabric. Each test runs the
// whole life of both drivers (load, connect, workload, disconnect, unload) and checks one thing
// about it; a verifier report or a deadlock fails it by throwing.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "kernel_rpc/harness.h"

namespace ndksim::kernel_rpc {
namespace {

constexpr std::int32_t kSuccess = 0;
constexpr std::int32_t kConnectionRefused = static_cast<std::int32_t>(0xC0000236u);

std::uint64_t DataRequests(const Scenario& s) { return std::uint64_t{s.initiator.write_count} * 2; }
std::uint64_t AllRequests(const Scenario& s) { return DataRequests(s) + s.initiator.echo_count; }

// Every request finished exactly once, and the target answered each with success.
void ExpectEveryRequestSucceededOnce(const Scenario& s, const Outcome& o) {
  EXPECT_EQ(o.initiator.status, kSuccess);
  EXPECT_EQ(o.initiator.requests, AllRequests(s));
  EXPECT_EQ(o.initiator.completed, AllRequests(s));
  EXPECT_EQ(o.initiator.succeeded, AllRequests(s));
  EXPECT_EQ(o.initiator.writes, s.initiator.write_count);
  EXPECT_EQ(o.initiator.reads, s.initiator.write_count);
  EXPECT_EQ(o.initiator.echoes, s.initiator.echo_count);
  EXPECT_EQ(o.initiator.duplicate_completions, 0u);
  EXPECT_EQ(o.initiator.unexpected_responses, 0u);
  EXPECT_EQ(o.target.status, kSuccess);
  EXPECT_EQ(o.target.requests, AllRequests(s));
  EXPECT_EQ(o.target.bad_requests, 0u);
}

void ExpectDataRoundTripped(const Scenario& s, const Outcome& o) {
  EXPECT_EQ(o.initiator.data_mismatches, 0u);
  EXPECT_EQ(o.target.rdma_reads, s.initiator.write_count);
  EXPECT_EQ(o.target.rdma_writes, s.initiator.write_count);
  EXPECT_TRUE(o.disk == ExpectedDisk(s)) << "the target's disk differs from what was written";
}

void ExpectNoPoolLeft(const Outcome& o) {
  for (const auto& [tag, usage] : o.pool) {
    EXPECT_EQ(usage.allocations, 0u) << "pool tag " << tag;
    EXPECT_EQ(usage.bytes, 0u) << "pool tag " << tag;
  }
  EXPECT_GT(o.pool.at("Rpcx").total_allocations, 0u);  // the contexts were pool: the check saw them
}

// ---- every completion mode of the provider, several seeds ----------------------------------------

using ModeAndSeed = std::tuple<AsyncCompletion, std::uint64_t>;

class KernelRpcModes : public ::testing::TestWithParam<ModeAndSeed> {
 protected:
  KernelRpcModes() {
    scenario_.fabric.async_completion = std::get<0>(GetParam());
    scenario_.fabric.seed = std::get<1>(GetParam());
    scenario_.environment.seed = std::get<1>(GetParam()) * 7 + 3;
  }
  Scenario scenario_ = DefaultScenario();
};

TEST_P(KernelRpcModes, EveryRequestCompletesExactlyOnceWithSuccess) {
  const Outcome o = RunScenario(scenario_);
  ExpectEveryRequestSucceededOnce(scenario_, o);
  EXPECT_LE(o.initiator.max_outstanding, scenario_.initiator.queue_depth);
}

TEST_P(KernelRpcModes, ReadsReturnWhatWasWrittenAndTheDiskHoldsIt) {
  const Outcome o = RunScenario(scenario_);
  ExpectDataRoundTripped(scenario_, o);
}

// Each WRITE and READ lends its buffer through a fast register, taken back before the slot is
// reused by the target's send-and-invalidate (the invalidated token the one the request carried).
TEST_P(KernelRpcModes, EachDataRequestIsFastRegisteredAndInvalidatedOnce) {
  const Outcome o = RunScenario(scenario_);
  EXPECT_EQ(o.initiator.fast_registers, DataRequests(scenario_));
  EXPECT_EQ(o.initiator.remote_invalidations, DataRequests(scenario_));
  EXPECT_EQ(o.initiator.local_invalidations, 0u);
  EXPECT_EQ(o.target.responses, AllRequests(scenario_));
}

// A target that answers READs with a plain send leaves the buffer to the initiator, which takes it
// back with its own NdkInvalidate before reusing the slot; the data is the same.
TEST(KernelRpc, ReadBuffersTheTargetLeavesValidTheInitiatorInvalidatesItself) {
  Scenario s = DefaultScenario();
  s.target.invalidate_reads = 0;
  const Outcome o = RunScenario(s);
  EXPECT_EQ(o.initiator.remote_invalidations, s.initiator.write_count);
  EXPECT_EQ(o.initiator.local_invalidations, s.initiator.write_count);
  ExpectDataRoundTripped(s, o);
}

// The initiator's disconnect flushes its response receives; the target flushes its own posted
// receives; everything is closed and no pool is left after both unloads.
TEST_P(KernelRpcModes, TeardownFlushesBothSidesAndLeavesNoPool) {
  const Outcome o = RunScenario(scenario_);
  EXPECT_EQ(o.initiator.flushed_receives, scenario_.initiator.queue_depth);
  EXPECT_EQ(o.target.flushed, scenario_.target.receive_depth);
  EXPECT_EQ(o.target.torn_down, 1);
  ExpectNoPoolLeft(o);
}

std::string ModeName(const ::testing::TestParamInfo<ModeAndSeed>& info) {
  static constexpr const char* kNames[] = {"Inline", "Pending", "PendingInCall", "Mixed"};
  return std::string(kNames[static_cast<int>(std::get<0>(info.param))]) + "Seed" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(KernelRpc, KernelRpcModes,
                         ::testing::Combine(::testing::Values(AsyncCompletion::kInline, AsyncCompletion::kPending,
                                                              AsyncCompletion::kPendingInCall,
                                                              AsyncCompletion::kMixed),
                                            ::testing::Values(std::uint64_t{1}, std::uint64_t{2})),
                         ModeName);

// Beyond the two seeds above: 32 more per mode, each drawing another interleaving of the drivers'
// threads and another completion order, with the whole outcome checked for every one.
TEST(KernelRpc, ThirtyTwoMoreSeedsInEveryModeEachRunWhole) {
  for (const AsyncCompletion mode : {AsyncCompletion::kInline, AsyncCompletion::kPending,
                                     AsyncCompletion::kPendingInCall, AsyncCompletion::kMixed}) {
    for (std::uint64_t seed = 3; seed < 35; ++seed) {
      Scenario s = DefaultScenario();
      s.fabric.async_completion = mode;
      s.fabric.seed = seed;
      s.environment.seed = seed;
      s.initiator.submitters = 1 + static_cast<std::uint32_t>(seed % 4);
      const Outcome o = RunScenario(s);
      ExpectEveryRequestSucceededOnce(s, o);
      ExpectDataRoundTripped(s, o);
      ExpectNoPoolLeft(o);
      if (HasFailure()) {
        ADD_FAILURE() << "seed " << seed << ", mode " << static_cast<int>(mode);
        return;
      }
    }
  }
}

// ---- faults on the data path -----------------------------------------------------------------------

TEST(KernelRpcFaults, DroppedPacketsAreRetransmittedAndEveryRequestStillSucceeds) {
  Scenario s = DefaultScenario();
  s.fabric.async_completion = AsyncCompletion::kMixed;
  s.once_connected = [](Fabric& fabric, Node&, Node&) {
    fabric.AddFault(DropPackets(PacketClass::kAny).Always().WithProbability(0.05));
  };
  const Outcome o = RunScenario(s);
  ExpectEveryRequestSucceededOnce(s, o);
  ExpectDataRoundTripped(s, o);
  EXPECT_GT(o.initiator_counters.retransmissions + o.target_counters.retransmissions, 0u);
  ExpectNoPoolLeft(o);
}

// The link goes down for 1 ms in the middle of the workload: less than the 7 retries of 500 us
// the profile allows, so the transport recovers without the drivers noticing.
TEST(KernelRpcFaults, ALinkFlapShorterThanTheRetryBudgetLosesNothing) {
  Scenario s = DefaultScenario();
  TimePoint flap_end{};
  s.after_requests = 10;
  s.mid_run = [&](Fabric& fabric, Node&, Node& target) {
    flap_end = fabric.Now() + Milliseconds(1);
    fabric.AddFault(LinkDown(target, fabric.Now(), flap_end));
  };
  const Outcome o = RunScenario(s);
  ExpectEveryRequestSucceededOnce(s, o);
  ExpectDataRoundTripped(s, o);
  EXPECT_GT(o.finished, flap_end);
  EXPECT_GT(o.initiator_counters.retransmissions + o.target_counters.retransmissions, 0u);
}

// One receive posted at the target for eight requests in flight: sends meet receiver-not-ready
// NAKs and are retried after the RNR delay until the target has reposted.
TEST(KernelRpcFaults, SendsBeyondTheTargetsReceivesAreNakedAndRetried) {
  Scenario s = DefaultScenario();
  s.target.receive_depth = 1;
  s.initiator.queue_depth = 8;
  s.initiator.submitters = 4;
  const Outcome o = RunScenario(s);
  ExpectEveryRequestSucceededOnce(s, o);
  ExpectDataRoundTripped(s, o);
  EXPECT_GT(o.target_counters.rnr_naks_sent, 0u);
}

// ---- the rest of the drivers' life ------------------------------------------------------------------

TEST(KernelRpc, TheSameSeedsGiveTheSameRun) {
  Scenario s = DefaultScenario();
  s.fabric.async_completion = AsyncCompletion::kMixed;
  const Outcome first = RunScenario(s);
  const Outcome second = RunScenario(s);
  EXPECT_EQ(first.finished, second.finished);
  EXPECT_EQ(first.interleaving, second.interleaving);
}

// The race the racy build plants (tests/kernel_rpc_race) is the only one PCT finds there: this
// build, under the same exploration, passes every seed, in every completion mode.
TEST(KernelRpc, WithoutThePlantedRaceEverySeedPassesUnderPctWithPreemptionEverywhere) {
  for (const AsyncCompletion mode : {AsyncCompletion::kInline, AsyncCompletion::kPendingInCall, AsyncCompletion::kMixed}) {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      Scenario s = DefaultScenario();
      s.initiator.submitters = 4;
      s.initiator.queue_depth = 2;
      s.fabric.seed = seed;
      s.fabric.async_completion = mode;
      s.environment = kernel::EnvironmentConfig{.seed = seed,
                                                .schedule = kernel::ScheduleStrategy::kPct,
                                                .preemption = kernel::PreemptionPoints::All(),
                                                .pct_depth = 3,
                                                .pct_steps = 1100};
      const Outcome o = RunScenario(s);
      ExpectEveryRequestSucceededOnce(s, o);
      ExpectDataRoundTripped(s, o);
    }
  }
}

TEST(KernelRpc, QueueDepthBoundsTheRequestsInFlight) {
  Scenario s = DefaultScenario();
  s.initiator.queue_depth = 3;
  s.initiator.submitters = 4;
  const Outcome o = RunScenario(s);
  ExpectEveryRequestSucceededOnce(s, o);
  EXPECT_EQ(o.initiator.max_outstanding, 3u);
}

// No target: the connect is refused, the initiator closes what it had created, and both drivers
// unload without leaks.
TEST(KernelRpc, AConnectToAnAddressNobodyListensOnFailsAndUnloadsCleanly) {
  Scenario s = DefaultScenario();
  s.initiator.port = 4421;
  const Outcome o = RunScenario(s);
  EXPECT_EQ(o.initiator.status, kConnectionRefused);
  EXPECT_EQ(o.initiator.connected, 0);
  EXPECT_EQ(o.initiator.completed, 0u);
  EXPECT_EQ(o.target.accepted, 0);
  ExpectNoPoolLeft(o);
}

}  // namespace
}  // namespace ndksim::kernel_rpc
