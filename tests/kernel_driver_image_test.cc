// SPDX-License-Identifier: MIT
// Driver images (Environment::LoadDriverImage): a driver built as a shared object is loaded once
// per machine, so each machine's copy has globals of its own, as on Windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"

namespace ndksim::kernel {
namespace {

class KernelDriverImage : public ::testing::Test {
 protected:
  std::size_t LinesWith(const std::string& text) const {
    const std::vector<std::string>& log = env_.DebugLog();
    return static_cast<std::size_t>(
        std::count_if(log.begin(), log.end(), [&](const std::string& line) { return line.find(text) != std::string::npos; }));
  }

  Fabric fabric_{FabricConfig{.seed = 1, .profile = profiles::kFunctional}};
  Node& a_ = fabric_.AddNode({"a", {"192.0.2.1"}});
  Node& b_ = fabric_.AddNode({"b", {"192.0.2.2"}});
  Environment env_{fabric_, EnvironmentConfig{.seed = 2}};
};

// Each machine's DriverEntry sees its own counter at 0: the two images do not share it.
TEST_F(KernelDriverImage, AnImageLoadedOnTwoMachinesHasGlobalsOnEach) {
  _DRIVER_OBJECT* on_a = env_.LoadDriverImage(a_, "image", NDKSIM_TEST_IMAGE_DRIVER);
  _DRIVER_OBJECT* on_b = env_.LoadDriverImage(b_, "image", NDKSIM_TEST_IMAGE_DRIVER);
  env_.Run();
  EXPECT_EQ(env_.DriverStatus(on_a), 0);
  EXPECT_EQ(env_.DriverStatus(on_b), 0);
  EXPECT_EQ(LinesWith("image driver: load 1"), 2u);
  EXPECT_EQ(LinesWith("image driver: load 2"), 0u);
  env_.UnloadDriver(on_a);
  env_.UnloadDriver(on_b);
  env_.Run();
  EXPECT_EQ(LinesWith("unloaded after 1 load(s), 1 touch(es)"), 2u);
}

TEST_F(KernelDriverImage, AnImageThatCannotBeReadIsNamedInTheError) {
  try {
    env_.LoadDriverImage(a_, "missing", "no-such-driver-image.so");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-driver-image.so"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ndksim::kernel
