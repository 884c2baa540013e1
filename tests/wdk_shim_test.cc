// SPDX-License-Identifier: MIT
// A consumer that supplies the WDK base types itself (NDKSIM_NO_WDK_TYPES, tests/shim/wdk_shim.c,
// a C translation unit) drives a real adapter: its MDL, socket addresses and NDK structures agree
// with the library's.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <vector>

#include "ndksim/fabric.h"
#include "shim/wdk_shim.h"

namespace ndksim {
namespace {

class WdkShim : public ::testing::Test {
 protected:
  WdkShim() : node_(fabric_.AddNode({"n", {"192.0.2.9"}})) {
    EXPECT_EQ(node_.OpenAdapter({2, 1}, &adapter_), STATUS_SUCCESS);
  }
  ~WdkShim() override { node_.CloseAdapter(adapter_); }

  Fabric fabric_;
  Node& node_;
  NDK_ADAPTER* adapter_ = nullptr;
};

TEST_F(WdkShim, QueriesTheAdapterThroughItsOwnTypes) {
  EXPECT_EQ(ShimMaxReceiveSge(adapter_), fabric_.Profile().max_receive_sge);
}

TEST_F(WdkShim, RegistersMemoryThroughAnMdlItBuilt) {
  std::vector<char> buffer(3 * 4096 + 100);
  UINT32 token = 0;
  EXPECT_EQ(ShimRegister(adapter_, buffer.data() + 100, 2 * 4096, &token), STATUS_SUCCESS);
  EXPECT_NE(token, 0u);
}

TEST_F(WdkShim, ListensOnASockaddrStorageItDefined) {
  EXPECT_EQ(ShimListen(adapter_, inet_addr("192.0.2.9"), htons(445)), STATUS_SUCCESS);
}

}  // namespace
}  // namespace ndksim
