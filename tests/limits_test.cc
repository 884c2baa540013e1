// SPDX-License-Identifier: MIT
// The architectural limits (include/ndksim/limits.h): a profile may go up to them and no further,
// and what a profile accepts, the model carries whole.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ndksim/harness.h"
#include "ndksim/limits.h"

namespace ndksim {
namespace {

using ::testing::HasSubstr;

TEST(ArchitecturalLimits, AProfileWithMoreReceiveSgesThanAWqeHoldsIsRefusedWithTheLimit) {
  HardwareProfile p = profiles::kFunctional;
  p.max_receive_sge = limits::kMaxSge + 2;  // 64: once accepted, while the model held 62
  try {
    Fabric fabric(FabricConfig{.profile = p});
    FAIL() << "a profile with 64 receive SGEs was accepted";
  } catch (const ConfigurationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("max_receive_sge: must be 1..62"));
  }
}

TEST(ArchitecturalLimits, AProfileWithMoreInitiatorSgesThanAWqeHoldsIsRefused) {
  HardwareProfile p = profiles::kFunctional;
  p.max_initiator_sge = limits::kMaxSge + 1;
  EXPECT_THAT(Validate(p), ::testing::Contains(HasSubstr("max_initiator_sge")));
}

// Regression: a 512-B send into 64 eight-byte receive SGEs failed, because the profile allowed 64
// while the model kept 62 and dropped the rest. At the limit, every SGE is filled.
TEST(ArchitecturalLimits, ASendScattersIntoEveryReceiveSgeUpToTheLimit) {
  QpPairConfig c;
  c.fabric.profile = profiles::kFunctional;
  c.fabric.profile.max_receive_sge = limits::kMaxSge;
  c.max_receive_sge = limits::kMaxSge;
  QpPair pair(c);
  constexpr ULONG kPiece = 8;
  constexpr ULONG kBytes = limits::kMaxSge * kPiece;
  auto src = pair.a().Register(kBytes);
  auto dst = pair.b().Register(kBytes);
  for (ULONG i = 0; i < kBytes; ++i) src->Data()[i] = static_cast<std::byte>(i * 7 + 1);
  std::vector<NDK_SGE> sges;
  for (ULONG k = 0; k < limits::kMaxSge; ++k) sges.push_back(dst->Sge(k * kPiece, kPiece));
  ASSERT_EQ(pair.b().Receive(nullptr, sges), STATUS_SUCCESS);
  const NDK_SGE tx = src->Sge(0, kBytes);
  ASSERT_EQ(pair.a().Send(nullptr, {&tx, 1}), STATUS_SUCCESS);
  const auto received = pair.Collect(pair.b().receive_cq, 1);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].Status, STATUS_SUCCESS);
  EXPECT_EQ(received[0].BytesTransferred, kBytes);
  EXPECT_EQ(std::memcmp(src->Data(), dst->Data(), kBytes), 0);
}

TEST(ArchitecturalLimits, AReceiveWithMoreSgesThanTheQpAllowsIsRefusedInline) {
  QpPairConfig c;
  c.fabric.profile = profiles::kFunctional;
  c.max_receive_sge = 4;
  QpPair pair(c);
  auto dst = pair.b().Register(64);
  std::vector<NDK_SGE> sges(5, dst->Sge(0, 8));
  EXPECT_EQ(pair.b().Receive(nullptr, sges), STATUS_DATA_OVERRUN);  // NdkReceive: more SGEs than the QP takes
}

}  // namespace
}  // namespace ndksim
