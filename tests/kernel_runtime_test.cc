// SPDX-License-Identifier: MIT
// The kernel runtime library beyond the services (src/kernel/runtime.cc) and the idioms of public
// drivers (a survey of WDK samples and kernel NDK/WSK consumers), driven by C written as they are
// (tests/kernel/consumer_runtime.c).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "kernel/consumer_runtime.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"

namespace ndksim::kernel {
namespace {

class KernelRuntime : public ::testing::Test {
 protected:
  // Runs `body` as a kernel thread until every thread has ended.
  void Run(const std::function<void()>& body) {
    env_.StartThread("test", body, &node_);
    env_.Run();
  }

  Fabric fabric_{FabricConfig{.seed = 3, .profile = profiles::kFunctional}};
  Node& node_ = fabric_.AddNode({"host", {"192.0.2.1"}});
  Environment env_{fabric_, EnvironmentConfig{.seed = 4}};
  RUNTIME_RESULTS r_{};
};

TEST_F(KernelRuntime, AnSListGivesItsEntriesBackLastInFirstOut) {
  Run([this] { ScenarioSListKeepsLastInFirstOut(&r_); });
  EXPECT_EQ(r_.depth_after_pushes, 3u);
  EXPECT_EQ(r_.popped, 3u);
  EXPECT_EQ(r_.flushed, 21u);  // 2, then 1
  EXPECT_EQ(r_.depth_after_flush, 0u);
  EXPECT_TRUE(r_.pop_of_empty_is_null);
}

// The allocating conversions take pool of the driver's, which the Free calls give back: the run
// ends without pool in use.
TEST_F(KernelRuntime, CountedStringsConvertCopyAndAppendAsWindowsDoes) {
  Run([this] { ScenarioStringConversions(&r_); });
  EXPECT_EQ(r_.to_unicode, 0);
  EXPECT_EQ(r_.unicode_length, 8u);
  EXPECT_EQ(r_.to_ansi, 0);
  EXPECT_TRUE(r_.round_trip_equal);
  EXPECT_EQ(r_.append, 0);
  EXPECT_EQ(r_.append_too_long, static_cast<std::int32_t>(0xC0000023u));  // STATUS_BUFFER_TOO_SMALL
  EXPECT_EQ(r_.copy_length, 12u);  // "ndk0-x", unchanged by the refused append
  EXPECT_EQ(r_.to_integer, 0);
  EXPECT_EQ(r_.integer, static_cast<std::uint32_t>(-31));
  for (const auto& [tag, usage] : env_.PoolUsage()) EXPECT_EQ(usage.allocations, 0u) << tag;
}

TEST_F(KernelRuntime, AGuidBecomesItsRegistryFormTextAndBack) {
  char text[64] = {};
  Run([this, &text] { ScenarioGuidText(&r_, text, sizeof(text)); });
  EXPECT_EQ(r_.from_guid, 0);
  EXPECT_EQ(std::string(text), "{0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9}");
  EXPECT_EQ(r_.to_guid, 0);
  EXPECT_TRUE(r_.guid_round_trip);
}

TEST_F(KernelRuntime, AnErrorLogEntryIsWrittenToTheDebugLog) {
  Run([] { ScenarioErrorLog(); });
  ASSERT_EQ(env_.DebugLog().size(), 1u);
  EXPECT_NE(env_.DebugLog()[0].find("error log: code 0xc0000185, status 0xc000020f, unique value 42"), std::string::npos)
      << env_.DebugLog()[0];
}

TEST_F(KernelRuntime, PublicDriversIdiomsCompileAndBehaveAsOnWindows) {
  Run([this] { ScenarioDriverIdioms(&r_); });
  EXPECT_EQ(r_.product, -4'900'000'000LL);
  EXPECT_EQ(r_.bit_was_set, 0);
  EXPECT_EQ(r_.bit_now_set, 1);
  EXPECT_EQ(r_.bits_word, 2u);  // bit 33: bit 1 of the second LONG
  EXPECT_EQ(r_.popcount, 9u);
  EXPECT_TRUE(r_.quota_zeroed);
  EXPECT_TRUE(r_.ntddi_is_windows10);
  EXPECT_EQ(r_.npi_wsk_data1, 0x2227E803u);
  EXPECT_TRUE(r_.try_ran);
}

}  // namespace
}  // namespace ndksim::kernel
