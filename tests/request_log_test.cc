// SPDX-License-Identifier: MIT
// The life of a request, observable: stage times recorded per WQE and the Chrome trace export.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "hwmodel/pcie_link.h"
#include "ndksim/testing.h"

namespace ndksim {
namespace {

using ::testing::HasSubstr;

struct Logged {
  QpPair pair;
  std::unique_ptr<RegisteredBuffer> src;
  std::unique_ptr<RegisteredBuffer> dst;
  explicit Logged(const HardwareProfile& profile) : pair(Config(profile)) {
    src = pair.a().Register(8192);
    dst = pair.b().Register(8192);
    pair.fabric().Trace().Requests().Enable();
  }
  static QpPairConfig Config(const HardwareProfile& profile) {
    QpPairConfig c;
    c.fabric.profile = profile;
    return c;
  }
  const RequestRecord* First() {
    const auto& records = pair.fabric().Trace().Requests().Records();
    return records.empty() ? nullptr : &records.front();
  }
};

TEST(RequestLog, AWriteReachesEveryStageInOrder) {
  Logged t(profiles::kConnectX100GbeRoce);
  const NDK_SGE s = t.src->Sge(0, 8192);
  ASSERT_EQ(t.pair.a().Write(nullptr, {&s, 1}, t.dst->Address(), t.dst->RemoteToken()), STATUS_SUCCESS);
  t.pair.Collect(t.pair.a().initiator_cq, 1);
  const RequestRecord* r = t.First();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->operation, "Write");
  EXPECT_EQ(r->bytes, 8192u);
  for (int s = 0; s < 6; ++s) EXPECT_TRUE(r->Reached(static_cast<RequestStage>(s))) << kRequestStageNames[s];
  for (int s = 1; s < 6; ++s) EXPECT_LE(r->at[s - 1], r->at[s]) << kRequestStageNames[s];
}

TEST(RequestLog, DoorbellArrivesOneHostPostAndMmioWriteAfterThePost) {
  const HardwareProfile p = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  Logged t(p);
  const NDK_SGE s = t.src->Sge(0, 8);
  ASSERT_EQ(t.pair.a().Write(nullptr, {&s, 1}, t.dst->Address(), t.dst->RemoteToken()), STATUS_SUCCESS);
  t.pair.Collect(t.pair.a().initiator_cq, 1);
  const RequestRecord* r = t.First();
  ASSERT_NE(r, nullptr);
  // The posting core builds the WQE and stores the doorbell record, then writes the WQE through the
  // doorbell page (one 64-B line); the write crosses PCIe with a write TLP header, then the MMIO
  // latency.
  const Duration host = p.host_post + p.host_doorbell_record + p.host_mmio_store;
  const Duration mmio = p.pcie_bandwidth.TimeFor(64 + hw::PcieLink::kWriteTlpOverheadBytes) + p.pcie_mmio_write_latency;
  EXPECT_EQ(r->At(RequestStage::kDoorbell) - r->At(RequestStage::kPosted), host + mmio);
}

TEST(RequestLog, ReadIsPlacedAtTheInitiatorBeforeItsCqe) {
  Logged t(profiles::kConnectX100GbeRoce);
  const NDK_SGE s = t.src->Sge(0, 4096);
  ASSERT_EQ(t.pair.a().Read(nullptr, {&s, 1}, t.dst->Address(), t.dst->RemoteToken()), STATUS_SUCCESS);
  t.pair.Collect(t.pair.a().initiator_cq, 1);
  const RequestRecord* r = t.First();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->operation, "Read");
  ASSERT_TRUE(r->Reached(RequestStage::kLastBytePlaced));
  EXPECT_LT(r->At(RequestStage::kLastBytePlaced), r->At(RequestStage::kCqeWritten));
}

TEST(RequestLog, UnsignaledRequestHasNoCqeStage) {
  Logged t(profiles::kFunctional);
  const NDK_SGE s = t.src->Sge(0, 8);
  ASSERT_EQ(t.pair.a().Write(nullptr, {&s, 1}, t.dst->Address(), t.dst->RemoteToken(), NDK_OP_FLAG_SILENT_SUCCESS),
            STATUS_SUCCESS);
  t.pair.fabric().RunUntilIdle();
  const RequestRecord* r = t.First();
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->Reached(RequestStage::kLastBytePlaced));
  EXPECT_FALSE(r->Reached(RequestStage::kCqeWritten));
}

TEST(RequestLog, DisabledLogRecordsNothing) {
  Logged t(profiles::kFunctional);
  t.pair.fabric().Trace().Requests().Enable(false);
  const NDK_SGE s = t.src->Sge(0, 8);
  ASSERT_EQ(t.pair.a().Write(nullptr, {&s, 1}, t.dst->Address(), t.dst->RemoteToken()), STATUS_SUCCESS);
  t.pair.Collect(t.pair.a().initiator_cq, 1);
  EXPECT_TRUE(t.pair.fabric().Trace().Requests().Records().empty());
}

TEST(RequestLog, ChromeTraceHasOneEventPerStageInterval) {
  Logged t(profiles::kConnectX100GbeRoce);
  const NDK_SGE s = t.src->Sge(0, 64);
  ASSERT_EQ(t.pair.a().Write(nullptr, {&s, 1}, t.dst->Address(), t.dst->RemoteToken()), STATUS_SUCCESS);
  t.pair.Collect(t.pair.a().initiator_cq, 1);
  std::ostringstream out;
  t.pair.fabric().Trace().Requests().WriteChromeTrace(out);
  const std::string json = out.str();
  EXPECT_THAT(json, HasSubstr(R"({"traceEvents":[)"));
  EXPECT_THAT(json, HasSubstr(R"("name":"posted..doorbell")"));
  EXPECT_THAT(json, HasSubstr(R"("name":"last-byte-placed..cqe-written")"));
  std::size_t events = 0;
  // One slice for the request, with its five phases nested in it; each is a begin/end pair.
  for (std::size_t at = json.find("\"ph\":\"B\""); at != std::string::npos; at = json.find("\"ph\":\"B\"", at + 1)) ++events;
  EXPECT_EQ(events, 6u);
}

}  // namespace
}  // namespace ndksim
