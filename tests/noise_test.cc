// SPDX-License-Identifier: MIT
// The model's noise: counter-based seeded draws, the PCIe link's latency jitter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "hw_test_driver.h"
#include "hwmodel/noise.h"
#include "hwmodel/pcie_link.h"

namespace ndksim::hw {
namespace {

TEST(Noise, ADrawDependsOnlyOnItsSeedStreamAndIndex) {
  EXPECT_EQ(NoiseDraw(7, 3, 100), NoiseDraw(7, 3, 100));
  EXPECT_NE(NoiseDraw(7, 3, 100), NoiseDraw(8, 3, 100));
  EXPECT_NE(NoiseDraw(7, 3, 100), NoiseDraw(7, 4, 100));
  EXPECT_NE(NoiseDraw(7, 3, 100), NoiseDraw(7, 3, 101));
}

TEST(Noise, AStreamGivesTheDrawsOfItsIndicesInTurn) {
  NoiseStream s(42, NoiseStreamId(NoiseSource::kPcieLink, 1));
  for (std::uint64_t i = 0; i < 4; ++i) EXPECT_EQ(s.Next(), NoiseDraw(42, NoiseStreamId(NoiseSource::kPcieLink, 1), i));
}

TEST(Noise, TheSourcesOfANodeAndTheNodesHaveStreamsOfTheirOwn) {
  EXPECT_NE(NoiseStreamId(NoiseSource::kPcieLink, 0), NoiseStreamId(NoiseSource::kHostCore, 0));
  EXPECT_NE(NoiseStreamId(NoiseSource::kHostCore, 0, 1), NoiseStreamId(NoiseSource::kHostCore, 1, 0));
}

TEST(Noise, JitterHasTheStandardDeviationAskedForAroundZero) {
  NoiseStream s(1, 1);
  const Duration sigma = Nanoseconds(11);
  double sum = 0;
  double squares = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double x = static_cast<double>(s.Jitter(sigma).count());
    sum += x;
    squares += x * x;
  }
  const double mean = sum / kDraws;
  const double sd = std::sqrt(squares / kDraws - mean * mean);
  EXPECT_NEAR(mean, 0, 0.01 * static_cast<double>(sigma.count()));
  EXPECT_NEAR(sd, static_cast<double>(sigma.count()), 0.01 * static_cast<double>(sigma.count()));
}

TEST(Noise, JitterNeverGoesBeyondTwiceRootThreeStandardDeviations) {
  NoiseStream s(2, 1);
  const Duration sigma = Nanoseconds(11);
  const auto bound = static_cast<std::int64_t>(2 * std::sqrt(3.0) * static_cast<double>(sigma.count())) + 1;
  for (int i = 0; i < 100000; ++i) EXPECT_LE(std::abs(s.Jitter(sigma).count()), bound);
}

TEST(Noise, NoSpreadMeansNoJitterAndNoDraw) {
  NoiseStream s(3, 1);
  EXPECT_EQ(s.Jitter(Duration::zero()), Duration::zero());
  EXPECT_EQ(s.Next(), NoiseDraw(3, 1, 0));  // the zero-spread call took no draw
}

// ---- the PCIe link's jitter ----

TEST(PcieLinkNoise, PostedWritesLandInIssueOrderWhateverTheirLatencies) {
  testing::TwoNodeRig rig(profiles::kConnectX100GbeRoce);
  std::vector<TimePoint> landed;
  for (int i = 0; i < 2000; ++i) rig.a->Pcie().DmaWrite(8, [&] { landed.push_back(rig.events.Now()); });
  rig.Run();
  ASSERT_EQ(landed.size(), 2000u);
  EXPECT_TRUE(std::is_sorted(landed.begin(), landed.end()));
}

TEST(PcieLinkNoise, MmioWritesReachTheNicInIssueOrder) {
  testing::TwoNodeRig rig(profiles::kConnectX100GbeRoce);
  std::vector<TimePoint> arrivals;
  for (int i = 0; i < 2000; ++i) arrivals.push_back(rig.a->Pcie().MmioWrite(8));
  EXPECT_TRUE(std::is_sorted(arrivals.begin(), arrivals.end()));
}

std::vector<Duration> IsolatedReads(const HardwareProfile& p, std::uint64_t seed) {
  testing::TwoNodeRig rig(p, 256, seed);
  std::vector<Duration> took;
  for (int i = 0; i < 100; ++i) took.push_back(rig.TimeDmaRead(64));
  return took;
}

TEST(PcieLinkNoise, TheSameSeedGivesTheSameReadLatencies) {
  EXPECT_EQ(IsolatedReads(profiles::kConnectX100GbeRoce, 5), IsolatedReads(profiles::kConnectX100GbeRoce, 5));
}

TEST(PcieLinkNoise, AnotherSeedGivesOtherReadLatencies) {
  EXPECT_NE(IsolatedReads(profiles::kConnectX100GbeRoce, 5), IsolatedReads(profiles::kConnectX100GbeRoce, 6));
}

TEST(PcieLinkNoise, WithTheNoiseOffEveryReadTakesTheSameTime) {
  const std::vector<Duration> took = IsolatedReads(profiles::WithoutNoise(profiles::kConnectX100GbeRoce), 5);
  EXPECT_EQ(std::count(took.begin(), took.end(), took.front()), static_cast<std::ptrdiff_t>(took.size()));
}

}  // namespace
}  // namespace ndksim::hw
