// SPDX-License-Identifier: MIT
// The swarm workload (include/ndksim/swarm.h) and the QP-scalability rows of calibration.md that
// it reproduces through the Connect-IB preset's QP-context cache.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndksim/swarm.h"

namespace ndksim {
namespace {

SwarmConfig Small() {
  SwarmConfig c;
  c.fabric.profile = profiles::kConnectIbFdr;
  c.machines = 3;
  c.threads = 2;
  c.vms = 1;
  c.window = 4;
  c.buffer_bytes = 64 * 1024;
  return c;
}

SwarmConfig Small(SwarmPattern pattern, Operation op, ULONG bytes) {
  SwarmConfig c = Small();
  c.pattern = pattern;
  c.op = op;
  c.bytes = bytes;
  return c;
}

TEST(Swarm, CountsItsQpsAsRcSwarmDoes) {
  Swarm s(Small());
  EXPECT_EQ(s.QpsPerMachine(), 6u);        // 2 threads x 3 machines x 1
  EXPECT_EQ(s.ActiveQpsPerMachine(), 4u);  // those to the 2 other machines
}

TEST(Swarm, EveryMachineCompletesReads) {
  Swarm s(Small());
  const SwarmResult r = s.Run(Microseconds(10), Microseconds(20));
  ASSERT_EQ(r.rate_per_machine.size(), 3u);
  for (double rate : r.rate_per_machine) EXPECT_GT(rate, 1.0);  // M/s
}

TEST(Swarm, TheSameSeedGivesTheSameRates) {
  Swarm a(Small());
  Swarm b(Small());
  EXPECT_EQ(a.Run(Microseconds(10), Microseconds(20)).rate_per_machine,
            b.Run(Microseconds(10), Microseconds(20)).rate_per_machine);
}

TEST(Swarm, RefusesMoreThreadsThanTheProfileHasCores) {
  SwarmConfig c = Small();
  c.threads = static_cast<int>(c.fabric.profile.host_cores) + 1;
  EXPECT_THROW(Swarm{c}, std::invalid_argument);
}

TEST(Swarm, InboundOnlyMachineZeroAnswersAndItIssuesNothing) {
  Swarm s(Small(SwarmPattern::kInbound, Operation::kWrite, 8));
  const SwarmResult r = s.Run(Microseconds(10), Microseconds(20));
  EXPECT_EQ(r.rate_per_machine[0], 0.0);
  EXPECT_GT(r.rate_per_machine[1], 1.0);
  EXPECT_GT(r.rate_per_machine[2], 1.0);
  EXPECT_DOUBLE_EQ(r.served_per_machine[0], r.rate_per_machine[1] + r.rate_per_machine[2]);
  EXPECT_EQ(r.served_per_machine[1], 0.0);
  EXPECT_EQ(r.issues, (std::vector<bool>{false, true, true}));
}

TEST(Swarm, OutboundOnlyMachineZeroIssues) {
  Swarm s(Small(SwarmPattern::kOutbound, Operation::kRead, 32));
  const SwarmResult r = s.Run(Microseconds(10), Microseconds(20));
  EXPECT_GT(r.rate_per_machine[0], 1.0);
  EXPECT_EQ(r.rate_per_machine[1], 0.0);
  EXPECT_DOUBLE_EQ(r.MeanRate(), r.rate_per_machine[0]);
  EXPECT_DOUBLE_EQ(r.served_per_machine[1] + r.served_per_machine[2], r.rate_per_machine[0]);
}

// The receivers keep re-posting receives, so sends go on for as long as the run lasts: far more
// sends complete than the receives first posted (a window per QP).
TEST(Swarm, SendsKeepFindingReceives) {
  Swarm s(Small(SwarmPattern::kInbound, Operation::kSend, 0));
  const SwarmResult r = s.Run(Microseconds(10), Microseconds(40));
  const double sends = r.served_per_machine[0] * 40;  // M/s over 40 us
  EXPECT_GT(sends, 10.0 * 4 * 4);  // 4 QPs into machine 0, 4 receives each at first
}

// Regression: a fabric destroyed with connections open between nodes other than the first
// closed them after the first node's NIC was gone, and the disconnect's address lookup read that
// freed NIC (a use-after-free that AddressSanitizer reports; the swarm's 11-machine runs crashed).
TEST(FabricTeardown, ConnectionsBetweenLaterNodesCloseAfterTheFirstNodeIsGone) {
  auto s = std::make_unique<Swarm>(Small());  // connections between nodes 1 and 2 among others
  (void)s->Run(Microseconds(1), Microseconds(1));
  s.reset();
  SUCCEED();
}

// ---- rc-swarm's QP-scalability rows (calibration.md, "QP scalability") ------------------------

struct ScalabilityRow {
  int machines;
  int vms;
  double published;  // M reads/s per machine
};

void PrintTo(const ScalabilityRow& r, std::ostream* os) {
  *os << r.machines << " machines, " << r.machines * 14 * r.vms << " QPs per machine";
}

class QpScalability : public ::testing::TestWithParam<ScalabilityRow> {};

// 32-B reads, all signaled, 14 threads a machine with 24 in flight each (rc-swarm's best window at
// 84 QPs): the mean rate per machine over 50 us after 20 us of warm-up, within 10%.
TEST_P(QpScalability, ConnectIbRatePerMachineIsRcSwarms) {
  const ScalabilityRow row = GetParam();
  SwarmConfig c;
  c.fabric.profile = profiles::kConnectIbFdr;
  c.machines = row.machines;
  c.vms = row.vms;
  Swarm s(c);
  const double rate = s.Run(Microseconds(20), Microseconds(50)).MeanRate();
  EXPECT_NEAR(rate, row.published, row.published * 0.10);
}

// The 6-machine row at 84 QPs (50.25 M/s) is not met: the model gives 58.0 M/s, its read-tag
// bound with every context on chip (docs/model.md).
INSTANTIATE_TEST_SUITE_P(SixMachines, QpScalability,
                         ::testing::Values(ScalabilityRow{6, 3, 46.3}, ScalabilityRow{6, 5, 40.9},
                                           ScalabilityRow{6, 7, 37.7}, ScalabilityRow{6, 9, 35.9},
                                           ScalabilityRow{6, 15, 31.8}));
INSTANTIATE_TEST_SUITE_P(ElevenMachines, QpScalability,
                         ::testing::Values(ScalabilityRow{11, 1, 47.7}, ScalabilityRow{11, 2, 43.1},
                                           ScalabilityRow{11, 3, 39.2}, ScalabilityRow{11, 4, 36.7},
                                           ScalabilityRow{11, 9, 29.7}));

// ---- Kalia et al.'s NIC-wide rates (calibration.md, "NIC-wide rates") ---------------------------

// Five client machines with 28 threads each, 16 requests in flight per thread, against machine 0:
// the rate machine 0's NIC answers (inbound) or issues (outbound), over 40 us after 100 us (the
// queues in front of the bound take some 20 us to fill; until then more arrives than is served).
SwarmResult NicWide(SwarmPattern pattern, Operation op, ULONG bytes, std::size_t window) {
  SwarmConfig c;
  c.fabric.profile = profiles::kConnectIbFdr;
  c.pattern = pattern;
  c.op = op;
  c.bytes = bytes;
  c.machines = 6;
  c.threads = 28;
  c.window = window;
  Swarm s(c);
  return s.Run(Microseconds(100), Microseconds(40));
}

TEST(NicWideRate, InboundHeaderOnlyWritesAreKalias122M) {
  const SwarmResult r = NicWide(SwarmPattern::kInbound, Operation::kWrite, 0, 16);
  EXPECT_NEAR(r.served_per_machine[0], 122, 122 * 0.10);
}

TEST(NicWideRate, InboundHeaderOnlySendsAreKalias122M) {
  const SwarmResult r = NicWide(SwarmPattern::kInbound, Operation::kSend, 0, 16);
  EXPECT_NEAR(r.served_per_machine[0], 122, 122 * 0.10);
}

TEST(NicWideRate, InboundSendsWithAPayloadAreKalias82M) {
  const SwarmResult r = NicWide(SwarmPattern::kInbound, Operation::kSend, 32, 16);
  EXPECT_NEAR(r.served_per_machine[0], 82, 82 * 0.10);
}

TEST(NicWideRate, OutboundReadsAreKalias88M) {
  const SwarmResult r = NicWide(SwarmPattern::kOutbound, Operation::kRead, 32, 32);
  EXPECT_NEAR(r.rate_per_machine[0], 88, 88 * 0.10);
}

}  // namespace
}  // namespace ndksim
