// SPDX-License-Identifier: MIT
// The cycle-approximate model block by block: profile validation, PCIe read requests and tags,
// processing units, the pipelined requester, WQEs written with their doorbell, receive WQE
// prefetch, port latencies and extension headers, and per-QP counters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "hw_test_driver.h"
#include "hwmodel/packet.h"
#include "hwmodel/pcie_link.h"
#include "hwmodel/port.h"
#include "hwmodel/processing_units.h"
#include "ndksim/harness.h"
#include "ndksim/workload.h"

namespace ndksim {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ---- profiles ----

TEST(Profile, PresetsAreValid) {
  for (const HardwareProfile* p :
       {&profiles::kConnectX100GbeRoce, &profiles::kIWarp, &profiles::kConnectXEdrIb, &profiles::kConnectIbFdr,
        &profiles::kFunctional}) {
    EXPECT_THAT(Validate(*p), IsEmpty()) << p->name;
  }
}

struct BadField {
  const char* field;
  std::function<void(HardwareProfile&)> spoil;
};

class ProfileBadField : public ::testing::TestWithParam<BadField> {};

TEST_P(ProfileBadField, IsReportedByName) {
  HardwareProfile p = profiles::kConnectX100GbeRoce;
  GetParam().spoil(p);
  const std::vector<std::string> errors = Validate(p);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], ::testing::StartsWith(std::string(GetParam().field) + ": "));
}

// Every field Validate() checks, each spoiled alone.
INSTANTIATE_TEST_SUITE_P(
    Fields, ProfileBadField,
    ::testing::Values(
        BadField{"name", [](HardwareProfile& p) { p.name = ""; }},
        BadField{"transport", [](HardwareProfile& p) { p.transport = static_cast<Transport>(9); }},
        BadField{"remote_access_error", [](HardwareProfile& p) { p.remote_access_error = static_cast<RemoteAccessErrorStatus>(9); }},
        BadField{"pcie_mmio_write_latency", [](HardwareProfile& p) { p.pcie_mmio_write_latency = Nanoseconds(-1); }},
        BadField{"pcie_dma_read_latency", [](HardwareProfile& p) { p.pcie_dma_read_latency = Nanoseconds(-1); }},
        BadField{"pcie_dma_write_latency", [](HardwareProfile& p) { p.pcie_dma_write_latency = Nanoseconds(-1); }},
        BadField{"pcie_bandwidth", [](HardwareProfile& p) { p.pcie_bandwidth = BitRate{-1}; }},
        BadField{"pcie_max_payload_bytes", [](HardwareProfile& p) { p.pcie_max_payload_bytes = 300; }},
        BadField{"pcie_max_read_request_bytes", [](HardwareProfile& p) { p.pcie_max_read_request_bytes = 64; }},
        BadField{"pcie_read_tags", [](HardwareProfile& p) { p.pcie_read_tags = 0; }},
        BadField{"pcie_read_line_interval", [](HardwareProfile& p) { p.pcie_read_line_interval = Nanoseconds(-1); }},
        BadField{"wqe_by_mmio_bytes", [](HardwareProfile& p) { p.wqe_by_mmio_bytes = 100; }},
        BadField{"host_cores", [](HardwareProfile& p) { p.host_cores = 0; }},
        BadField{"host_post", [](HardwareProfile& p) { p.host_post = Nanoseconds(-1); }},
        BadField{"host_wqe_block", [](HardwareProfile& p) { p.host_wqe_block = Nanoseconds(-1); }},
        BadField{"host_doorbell_record", [](HardwareProfile& p) { p.host_doorbell_record = Nanoseconds(-1); }},
        BadField{"host_mmio_store", [](HardwareProfile& p) { p.host_mmio_store = Nanoseconds(-1); }},
        BadField{"host_mmio_flush", [](HardwareProfile& p) { p.host_mmio_flush = Nanoseconds(-1); }},
        BadField{"host_cqe_poll", [](HardwareProfile& p) { p.host_cqe_poll = Nanoseconds(-1); }},
        // A jitter over a quarter of the shortest PCIe latency could make a latency negative.
        BadField{"pcie_latency_jitter", [](HardwareProfile& p) { p.pcie_latency_jitter = Nanoseconds(51); }},
        // Interruptions that last longer than the mean time between them.
        BadField{"host_interruption_interval",
                 [](HardwareProfile& p) { p.host_interruption_interval = p.host_interruption_max; }},
        BadField{"host_interruption_min", [](HardwareProfile& p) { p.host_interruption_min = Duration::zero(); }},
        BadField{"host_interruption_shape", [](HardwareProfile& p) { p.host_interruption_shape = 0.1; }},
        BadField{"nic_clock", [](HardwareProfile& p) { p.nic_clock = ClockDomain(0); }},
        BadField{"processing_units", [](HardwareProfile& p) { p.processing_units = 0; }},
        BadField{"doorbell_processing", [](HardwareProfile& p) { p.doorbell_processing = Cycles{-1}; }},
        BadField{"wqe_processing", [](HardwareProfile& p) { p.wqe_processing = Cycles{-1}; }},
        BadField{"read_response_processing", [](HardwareProfile& p) { p.read_response_processing = Cycles{-5}; }},
        BadField{"read_context_turnaround", [](HardwareProfile& p) { p.read_context_turnaround = Cycles{-1}; }},
        BadField{"packet_processing", [](HardwareProfile& p) { p.packet_processing = Cycles{-1}; }},
        BadField{"qp_transmit_buffer_bytes", [](HardwareProfile& p) { p.qp_transmit_buffer_bytes = 1024; }},
        BadField{"receive_packet_interval", [](HardwareProfile& p) { p.receive_packet_interval = Cycles{-1}; }},
        BadField{"pcie_write_tlp_interval", [](HardwareProfile& p) { p.pcie_write_tlp_interval = Nanoseconds(-1); }},
        BadField{"qp_context_cache_entries", [](HardwareProfile& p) { p.qp_context_cache_entries = (1u << 20) + 1; }},
        BadField{"mpt_cache_entries", [](HardwareProfile& p) { p.mpt_cache_entries = (1u << 20) + 1; }},
        BadField{"mtt_cache_entries", [](HardwareProfile& p) { p.mtt_cache_entries = (1u << 20) + 1; }},
        BadField{"translation_cache_ways",
                 [](HardwareProfile& p) {
                   p.mpt_cache_entries = 10;
                   p.translation_cache_ways = 4;
                 }},
        BadField{"qp_context_cache_ways",
                 [](HardwareProfile& p) {
                   p.qp_context_cache_entries = 100;
                   p.qp_context_cache_ways = 3;
                 }},
        BadField{"qp_context_bytes",
                 [](HardwareProfile& p) {
                   p.qp_context_cache_entries = 64;
                   p.qp_context_bytes = 0;
                 }},
        BadField{"link_rate", [](HardwareProfile& p) { p.link_rate = BitRate{-1}; }},
        BadField{"port_transmit_latency", [](HardwareProfile& p) { p.port_transmit_latency = Nanoseconds(-2); }},
        BadField{"port_receive_latency", [](HardwareProfile& p) { p.port_receive_latency = Nanoseconds(-2); }},
        BadField{"propagation_delay", [](HardwareProfile& p) { p.propagation_delay = Nanoseconds(-1); }},
        BadField{"switch_latency", [](HardwareProfile& p) { p.switch_latency = Nanoseconds(-1); }},
        BadField{"mtu_bytes", [](HardwareProfile& p) { p.mtu_bytes = 1500; }},
        BadField{"ack_turnaround", [](HardwareProfile& p) { p.ack_turnaround = Nanoseconds(-1); }},
        BadField{"ack_timeout", [](HardwareProfile& p) { p.ack_timeout = Duration::zero(); }},
        BadField{"retry_count", [](HardwareProfile& p) { p.retry_count = 8; }},
        BadField{"rnr_delay", [](HardwareProfile& p) { p.rnr_delay = Nanoseconds(-1); }},
        BadField{"rnr_retry_count", [](HardwareProfile& p) { p.rnr_retry_count = 8; }},
        BadField{"management_latency", [](HardwareProfile& p) { p.management_latency = Nanoseconds(-1); }},
        BadField{"max_registration_bytes", [](HardwareProfile& p) { p.max_registration_bytes = 0; }},
        BadField{"max_window_bytes", [](HardwareProfile& p) { p.max_window_bytes = 0; }},
        BadField{"frmr_page_count", [](HardwareProfile& p) { p.frmr_page_count = 8; }},
        BadField{"max_initiator_sge", [](HardwareProfile& p) { p.max_initiator_sge = 63; }},
        BadField{"max_receive_sge", [](HardwareProfile& p) { p.max_receive_sge = 0; }},
        BadField{"max_read_sge", [](HardwareProfile& p) { p.max_read_sge = 31; }},
        BadField{"max_transfer_bytes", [](HardwareProfile& p) { p.max_transfer_bytes = 0; }},
        BadField{"max_inline_bytes", [](HardwareProfile& p) { p.max_inline_bytes = 2048; }},
        BadField{"max_inbound_read_limit", [](HardwareProfile& p) { p.max_inbound_read_limit = 0; }},
        BadField{"max_outbound_read_limit", [](HardwareProfile& p) { p.max_outbound_read_limit = 0; }},
        BadField{"max_receive_queue_depth", [](HardwareProfile& p) { p.max_receive_queue_depth = 0; }},
        BadField{"max_initiator_queue_depth", [](HardwareProfile& p) { p.max_initiator_queue_depth = 0; }},
        BadField{"max_cq_depth", [](HardwareProfile& p) { p.max_cq_depth = 0; }},
        BadField{"max_caller_data", [](HardwareProfile& p) { p.max_caller_data = 513; }},
        BadField{"max_callee_data", [](HardwareProfile& p) { p.max_callee_data = 513; }},
        BadField{"max_qps", [](HardwareProfile& p) { p.max_qps = 0; }},
        BadField{"max_cqs", [](HardwareProfile& p) { p.max_cqs = 0; }},
        BadField{"max_mrs", [](HardwareProfile& p) { p.max_mrs = 1u << 24; }}),
    [](const ::testing::TestParamInfo<BadField>& info) { return std::string(info.param.field); });

TEST(Profile, EveryBadFieldIsReported) {
  HardwareProfile p = profiles::kConnectX100GbeRoce;
  p.pcie_read_tags = 0;
  p.processing_units = 0;
  p.mtu_bytes = 1000;
  EXPECT_THAT(Validate(p), ::testing::UnorderedElementsAre(::testing::StartsWith("pcie_read_tags: "),
                                                           ::testing::StartsWith("processing_units: "),
                                                           ::testing::StartsWith("mtu_bytes: ")));
}

TEST(Profile, FabricRefusesAnInvalidProfileNamingEveryBadField) {
  FabricConfig c;
  c.profile.pcie_read_tags = 0;
  c.profile.retry_count = 9;
  try {
    Fabric f(c);
    FAIL() << "no ConfigurationError";
  } catch (const ConfigurationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("pcie_read_tags"));
    EXPECT_THAT(e.what(), HasSubstr("retry_count"));
  }
}

}  // namespace

namespace hw {
namespace {

using testing::TwoNodeRig;


// ---- PCIe link ----

TEST(PcieReads, AreSplitIntoRequestsOfAtMostMrrsBytes) {
  TwoNodeRig rig(testing::PcieOnlyProfile());
  rig.a->Pcie().DmaRead(2048, [] {});
  rig.Run();
  EXPECT_EQ(rig.a->Counters().dma_reads, 1u);
  EXPECT_EQ(rig.a->Counters().dma_read_requests, 4u);  // MRRS 512
}

TEST(PcieReads, WaitForAFreeTag) {
  HardwareProfile p = testing::PcieOnlyProfile();
  p.pcie_read_tags = 1;
  TwoNodeRig rig(p);
  TimePoint first{}, second{};
  rig.a->Pcie().DmaRead(64, [&] { first = rig.events.Now(); });
  rig.a->Pcie().DmaRead(64, [&] { second = rig.events.Now(); });
  rig.Run();
  // request header 3 ns, latency 500 ns, 64 B + 20 B completion header = 10.5 ns
  EXPECT_EQ(first, TimePoint{Picoseconds(513'500)});
  // the second request's header leaves when the only tag comes back
  EXPECT_EQ(second, first + Nanoseconds(3 + 500) + Picoseconds(10'500));
  EXPECT_EQ(rig.a->Counters().read_tag_stalls, 1u);
}

TEST(PcieReads, WithEnoughTagsOverlap) {
  TwoNodeRig rig(testing::PcieOnlyProfile());
  TimePoint first{}, second{};
  rig.a->Pcie().DmaRead(64, [&] { first = rig.events.Now(); });
  rig.a->Pcie().DmaRead(64, [&] { second = rig.events.Now(); });
  rig.Run();
  // the second request header follows the first (3 ns), its data the first's completion
  EXPECT_EQ(second, first + Picoseconds(10'500));
}

TEST(PcieLinkDirection, TrafficReadyNowUsesTheGapBeforeBookedCompletions) {
  TwoNodeRig rig(testing::PcieOnlyProfile());
  TimePoint read_done{};
  rig.a->Pcie().DmaRead(64, [&] { read_done = rig.events.Now(); });
  // The read's completion is booked 503 ns ahead; an MMIO write issued now does not wait for it.
  const TimePoint mmio = rig.a->Pcie().MmioWrite(8);
  EXPECT_EQ(mmio, TimePoint{Nanoseconds(4) + rig.a->Profile().pcie_mmio_write_latency});  // 8 + 24 B
  rig.Run();
  EXPECT_EQ(read_done, TimePoint{Picoseconds(513'500)});
}

TEST(PcieLinkDirection, AnMmioWriteIsOneTlpPerWriteCombiningLine) {
  TwoNodeRig rig(testing::PcieOnlyProfile());
  // A 128-B WQE written through the doorbell page: two 64-B lines, two 24-B headers (176 B).
  const TimePoint mmio = rig.a->Pcie().MmioWrite(128);
  EXPECT_EQ(mmio, TimePoint{Nanoseconds(22) + rig.a->Profile().pcie_mmio_write_latency});
}

TEST(PcieLinkDirection, CompletionsAndMmioShareTheDownstreamBandwidth) {
  TwoNodeRig rig(testing::PcieOnlyProfile());
  // 4000 B of MMIO: 63 TLPs of at most one 64-B write-combining line with 24-B headers = 5512 B,
  // the link's first 689 ns.
  (void)rig.a->Pcie().MmioWrite(4000);
  TimePoint read_done{};
  rig.a->Pcie().DmaRead(64, [&] { read_done = rig.events.Now(); });
  rig.Run();
  // The completion, due at 503 ns, waits for the link and takes its 10.5 ns after the MMIO write.
  EXPECT_EQ(read_done, TimePoint{Picoseconds(699'500)});
}

// The timeline against a plain first-fit over every booking ever made (what is over can never be
// in the way of traffic that is ready now or later), for a seeded mix of traffic ready now and
// completions booked ahead, with the clock moving on.
TEST(PcieLinkDirection, BooksTheEarliestGapLikeAPlainFirstFit) {
  hw::Timeline link;
  std::vector<std::pair<std::int64_t, std::int64_t>> all;  // [start, end) in ps, in time order
  std::mt19937_64 rng(7);
  std::int64_t now = 0;
  for (int i = 0; i < 20000; ++i) {
    now += static_cast<std::int64_t>(rng() % 3000);
    const std::int64_t ready = now + (rng() % 2 == 0 ? 0 : static_cast<std::int64_t>(rng() % 600'000));
    const std::int64_t length = 1 + static_cast<std::int64_t>(rng() % 20'000);
    std::int64_t start = ready;
    std::size_t at = 0;
    for (; at < all.size(); ++at) {
      if (all[at].second <= start) continue;
      if (all[at].first >= start + length) break;
      start = all[at].second;
    }
    all.insert(all.begin() + static_cast<std::ptrdiff_t>(at), {start, start + length});
    const TimePoint end = link.Book(TimePoint{Picoseconds(now)}, TimePoint{Picoseconds(ready)}, Picoseconds(length));
    ASSERT_EQ(end.time_since_epoch().count(), start + length) << "booking " << i;
  }
}

TEST(PcieMmio, CountsWritesAndBytes) {
  TwoNodeRig rig(testing::PcieOnlyProfile());
  (void)rig.a->Pcie().MmioWrite(64);
  (void)rig.a->Pcie().MmioWrite(8);
  EXPECT_EQ(rig.a->Counters().mmio_writes, 2u);
  EXPECT_EQ(rig.a->Counters().mmio_write_bytes, 72u);
}

// ---- processing units ----

TEST(ProcessingUnitsTest, QpsOnOneUnitTakeTurns) {
  HardwareProfile p = profiles::kFunctional;
  p.processing_units = 2;
  ProcessingUnits units(p);  // 1000 MHz: one cycle is one nanosecond
  EXPECT_EQ(units.Run(Qpn{1}, Cycles{100}, TimePoint{}), TimePoint{Nanoseconds(100)});
  EXPECT_EQ(units.Run(Qpn{3}, Cycles{100}, TimePoint{}), TimePoint{Nanoseconds(200)});  // 3 % 2 == 1 % 2
}

TEST(ProcessingUnitsTest, QpsOnDifferentUnitsRunInParallel) {
  HardwareProfile p = profiles::kFunctional;
  p.processing_units = 2;
  ProcessingUnits units(p);
  EXPECT_EQ(units.Run(Qpn{1}, Cycles{100}, TimePoint{}), TimePoint{Nanoseconds(100)});
  EXPECT_EQ(units.Run(Qpn{2}, Cycles{100}, TimePoint{}), TimePoint{Nanoseconds(100)});
}

// ---- wait lists and timers: the cost of waiting does not grow with the waiters ----

TEST(WaitListTest, WakesOneWaiterPerHandOverInArrivalOrder) {
  EventQueue events;
  TimePoint free_at{Nanoseconds(10)};
  std::vector<std::uint32_t> woken;
  WaitList list(events, [&] { return free_at; });
  for (std::uint32_t id : {7u, 3u, 5u}) {
    list.Add([&woken, &free_at, &events, id] {
      woken.push_back(id);
      free_at = events.Now() + Nanoseconds(10);  // each waiter holds the resource for 10 ns
    });
  }
  EXPECT_EQ(events.Pending(), 1u);  // one event for three waiters
  while (!events.Empty()) events.RunOne();
  EXPECT_EQ(woken, (std::vector<std::uint32_t>{7, 3, 5}));
  EXPECT_EQ(events.Now(), TimePoint{Nanoseconds(30)});
  EXPECT_EQ(events.EventsRun(), 3u);
}

TEST(AckTimer, StopsWithItsEventOnceEverythingIsAcknowledged) {
  TwoNodeRig rig(profiles::kConnectX100GbeRoce);
  std::vector<std::uint8_t> src(8), dst(8);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  for (int i = 0; i < 40; ++i) {
    rig.qp_a->Post(WqeOpcode::kWrite, {testing::Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()),
                   rkey.value, wqe_flag::kSignaled, /*defer=*/i != 39);
  }
  int completions = 0;
  Cqe cqe;
  while (completions < 40) {
    rig.a->DrainDoorbells();
    ASSERT_FALSE(rig.events.Empty());
    rig.events.RunOne();
    while (rig.cq_a->Poll(&cqe)) ++completions;
  }
  // 40 ACKs restarted the timer 40 times, and the last one stopped it: no event is left.
  EXPECT_EQ(rig.events.Pending(), 0u);
}

// ---- port ----

TEST(PortHeaders, RoceAddsRethAethAndIeth) {
  Packet p;
  p.opcode = PacketOpcode::kWriteOnly;
  EXPECT_EQ(ExtensionHeaderBytes(Transport::kRoCEv2, p), 16u);
  p.opcode = PacketOpcode::kWriteMiddle;
  EXPECT_EQ(ExtensionHeaderBytes(Transport::kRoCEv2, p), 0u);
  p.opcode = PacketOpcode::kReadRequest;
  EXPECT_EQ(ExtensionHeaderBytes(Transport::kRoCEv2, p), 16u);
  p.opcode = PacketOpcode::kAcknowledge;
  EXPECT_EQ(ExtensionHeaderBytes(Transport::kRoCEv2, p), 4u);
  p.opcode = PacketOpcode::kSendOnly;
  p.has_invalidate_key = true;
  EXPECT_EQ(ExtensionHeaderBytes(Transport::kRoCEv2, p), 4u);
}

TEST(PortHeaders, IwarpOverheadAlreadyHoldsItsHeaders) {
  Packet p;
  p.opcode = PacketOpcode::kWriteOnly;
  EXPECT_EQ(ExtensionHeaderBytes(Transport::kIWarp, p), 0u);
}

TEST(PortLatency, MacPhyAndReceivePipelineAddToTheArrival) {
  HardwareProfile p = profiles::kFunctional;
  p.link_rate = GigabitsPerSecond(8);  // 1 byte per ns
  p.packet_overhead_bytes = 46;
  p.port_transmit_latency = Nanoseconds(10);
  p.port_receive_latency = Nanoseconds(20);
  p.propagation_delay = Nanoseconds(7);
  p.packet_processing = Cycles{5};
  TwoNodeRig rig(p);
  std::uint32_t id;
  Packet& pkt = rig.network.Pool().Acquire(&id);
  pkt.destination_node = 1;
  pkt.opcode = PacketOpcode::kAcknowledge;
  pkt.destination_qpn = Qpn{0xffff};
  pkt.payload.resize(50);
  EXPECT_EQ(rig.a->GetPort().Transmit(id), TimePoint{Nanoseconds(10)});  // first bit on the cable
  rig.Run();
  // 50 + 46 + 4 (AETH) bytes, MAC/PHY out, cable, MAC/PHY in, receive pipeline
  EXPECT_EQ(rig.events.Now(), TimePoint{Nanoseconds(100 + 10 + 7 + 20 + 5)});
}

}  // namespace
}  // namespace hw

namespace {

// ---- requester, WQE fetch, responder: through the provider ----

QpPairConfig Default() {
  QpPairConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  return c;
}

// One signaled write of `bytes` from a to b, run to its completion.
void WriteOnce(QpPair& pair, ULONG bytes) {
  auto src = pair.a().Register(bytes);
  auto dst = pair.b().Register(bytes);
  const NDK_SGE s = src->Sge(0, bytes);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(pair.Collect(pair.a().initiator_cq, 1).size(), 1u);
}

TEST(RequesterPipeline, FirstPacketLeavesBeforeTheWholePayloadIsRead) {
  QpPair pair(Default());
  pair.fabric().Trace().Requests().Enable();
  auto src = pair.a().Register(64 * 1024);
  auto dst = pair.b().Register(64 * 1024);
  const NDK_SGE s = src->Sge(0, 64 * 1024);
  ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken()), STATUS_SUCCESS);
  ASSERT_EQ(pair.Collect(pair.a().initiator_cq, 1).size(), 1u);
  const RequestRecord& r = pair.fabric().Trace().Requests().Records().front();
  const HardwareProfile& p = profiles::kConnectX100GbeRoce;
  // Reading all 64 KiB takes at least the read latency plus its serialization (~5.5 us); the
  // first 4 KiB packet needs only its own share.
  const Duration whole = p.pcie_dma_read_latency + p.pcie_bandwidth.TimeFor(64 * 1024);
  EXPECT_LT(r.At(RequestStage::kFirstByteOnWire) - r.At(RequestStage::kFetched), whole / 3);
}

TEST(RequesterPipeline, PacketsOfAQpLeaveInPostingOrder) {
  QpPair pair(Default());
  pair.fabric().Trace().Requests().Enable();
  auto src = pair.a().Register(8192);
  auto dst = pair.b().Register(8192);
  const NDK_SGE big = src->Sge(0, 4096);
  const NDK_SGE small = src->Sge(4096, 8);
  // The inline write needs no payload read, yet may not overtake the gathered one before it.
  ASSERT_EQ(pair.a().Write(nullptr, {&big, 1}, dst->Address(), dst->RemoteToken(), NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  ASSERT_EQ(pair.a().Write(nullptr, {&small, 1}, dst->Address() + 4096, dst->RemoteToken(), NDK_OP_FLAG_INLINE),
            STATUS_SUCCESS);
  ASSERT_EQ(pair.Collect(pair.a().initiator_cq, 2).size(), 2u);
  const auto& records = pair.fabric().Trace().Requests().Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_LT(records[0].At(RequestStage::kFirstByteOnWire), records[1].At(RequestStage::kFirstByteOnWire));
}

// The NIC holds 64 descriptors and reads at most 16 WQEs at a time; 256 WQEs behind one doorbell
// are fetched in bursts of 16 as WQEs retire, not one DMA read per retired WQE (which is what a
// pipeline with nothing left to execute used to do when the hardware takes no time).
TEST(WqeFetch, RefillsItsDescriptorsInBurstsWhileWqesAreInFlight) {
  QpPairConfig c = Default();
  c.fabric.profile = profiles::kFunctional;
  QpPair pair(c);
  auto src = pair.a().Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE s = src->Sge(0, 64);
  constexpr ULONG kWrites = 256;
  for (ULONG i = 0; i < kWrites; ++i) {
    const ULONG flags = NDK_OP_FLAG_INLINE | (i + 1 < kWrites ? NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS : 0);
    ASSERT_EQ(pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), flags), STATUS_SUCCESS);
  }
  ASSERT_EQ(pair.Collect(pair.a().initiator_cq, 1).size(), 1u);
  const QpCounters q = *pair.a().node->CountersOf(pair.a().qp);
  EXPECT_EQ(q.wqes_fetched, kWrites);
  // Inline writes read no payload: every DMA read is a fetch of 16.
  EXPECT_EQ(q.dma_reads, kWrites / 16);
}

TEST(WqeByMmio, ADoorbellForOneWqeCarriesItAndItIsNotFetched) {
  QpPair pair(Default());
  WriteOnce(pair, 8);
  const QpCounters q = *pair.a().node->CountersOf(pair.a().qp);
  EXPECT_EQ(q.wqes_by_mmio, 1u);
  EXPECT_EQ(q.wqes_fetched, 0u);
  EXPECT_EQ(q.mmio_write_bytes, 64u);  // the 64-B WQE, not an 8-B doorbell
}

TEST(WqeByMmio, IsOffWhenTheProfileSaysSo) {
  QpPairConfig c = Default();
  c.fabric.profile.wqe_by_mmio_bytes = 0;
  QpPair pair(c);
  WriteOnce(pair, 8);
  const QpCounters q = *pair.a().node->CountersOf(pair.a().qp);
  EXPECT_EQ(q.wqes_by_mmio, 0u);
  EXPECT_EQ(q.wqes_fetched, 1u);
  EXPECT_EQ(q.mmio_write_bytes, 8u);
}

TEST(ReceivePrefetch, ReceivesPostedAheadAreReadInOneDmaRead) {
  QpPair pair(Default());
  auto src = pair.a().Register(64);
  auto rx = pair.b().Register(64);
  const NDK_SGE r = rx->Sge(0, 64);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(pair.b().Receive(nullptr, {&r, 1}), STATUS_SUCCESS);
  const NDK_SGE s = src->Sge(0, 32);
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(pair.a().Send(nullptr, {&s, 1}, NDK_OP_FLAG_INLINE), STATUS_SUCCESS);
    ASSERT_EQ(pair.Collect(pair.b().receive_cq, 1).size(), 1u);
  }
  // Node b reads nothing but receive WQEs: the first message reads all eight at once.
  const QpCounters q = *pair.b().node->CountersOf(pair.b().qp);
  EXPECT_EQ(q.dma_reads, 1u);
}

TEST(ReceivePrefetch, AReceiveReadAheadCostsNoReadLatency) {
  WorkloadConfig c;
  c.fabric.profile = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);  // equal samples
  c.op = Operation::kSend;
  c.bytes = 32;
  Workload w(c);
  const std::vector<double> samples = w.Latency(3);
  // The first message waits for its receive WQE to be read; later ones find it on the NIC.
  EXPECT_GT(samples[0] - samples[2], ToNanoseconds(profiles::kConnectX100GbeRoce.pcie_dma_read_latency) / 2 * 0.9);
  EXPECT_EQ(samples[1], samples[2]);
}

// When a 64-B write on a second connection completes, optionally while the first connection's
// send waits for its receive WQE to be read on demand.
double SecondQpWriteNanoseconds(bool with_cold_receive) {
  QpPair pair(Default());
  const QpPair::ExtraQps other = pair.AddConnectedQps();
  auto src = pair.a().Register(64);
  auto rx = pair.b().Register(64);
  auto dst = pair.b().Register(64);
  const NDK_SGE s = src->Sge(0, 64);
  if (with_cold_receive) {
    const ScopedCore sender(0);  // the write below comes from another core, which is free
    const NDK_SGE r = rx->Sge(0, 64);
    EXPECT_EQ(pair.b().Receive(nullptr, {&r, 1}), STATUS_SUCCESS);  // not read ahead: the first one
    EXPECT_EQ(pair.a().Send(nullptr, {&s, 1}, NDK_OP_FLAG_INLINE), STATUS_SUCCESS);
  }
  const TimePoint t0 = pair.fabric().Now();
  const ScopedCore writer(1);
  EXPECT_EQ(other.a->Dispatch->NdkWrite(other.a, nullptr, &s, 1, dst->Address(), dst->RemoteToken(),
                                        NDK_OP_FLAG_INLINE),
            STATUS_SUCCESS);
  // The write's CQE is in host memory once the second QP counts a completion.
  pair.fabric().RunUntil([&] { return pair.a().node->CountersOf(other.a)->completions > 0; });
  const double done = ToNanoseconds(pair.fabric().Now() - t0);
  return done;
}

// Regression: a placement waiting for its receive WQE moved the node's only write timeline, so
// every other QP's placements and CQEs waited for that read too.
TEST(ReceivePrefetch, AReceiveReadOnDemandDelaysOnlyItsOwnQp) {
  const double alone = SecondQpWriteNanoseconds(false);
  const double beside = SecondQpWriteNanoseconds(true);
  // The send shares the links with the write (a few ns); it no longer adds a DMA read latency.
  EXPECT_LT(beside - alone, 100.0);
}

// ---- read responses ----

// How long a 64-B write posted on node b takes to complete, optionally while b answers a 4-MiB read.
double WriteFromBMicroseconds(bool while_answering_a_read) {
  QpPair pair(Default());
  const std::size_t big = 4u << 20;
  auto sink = pair.a().Register(big);
  auto source = pair.b().Register(big);
  auto b_small = pair.b().Register(64);
  auto a_small = pair.a().Register(64);
  const NDK_SGE r = sink->Sge(0, big);
  if (while_answering_a_read) {
    EXPECT_EQ(pair.a().Read(nullptr, {&r, 1}, source->Address(), source->RemoteToken()), STATUS_SUCCESS);
  }
  pair.fabric().RunFor(Microseconds(5));  // the read request has reached b and is being answered
  const TimePoint t0 = pair.fabric().Now();
  const NDK_SGE w = b_small->Sge(0, 64);
  EXPECT_EQ(pair.b().Write(nullptr, {&w, 1}, a_small->Address(), a_small->RemoteToken()), STATUS_SUCCESS);
  EXPECT_EQ(pair.Collect(pair.b().initiator_cq, 1).size(), 1u);
  return ToMicroseconds(pair.fabric().Now() - t0);
}

// Regression: the responder booked the DMA reads of every response of a read at once, so a 4-MiB
// inbound read held the node's read tags for 340 us and a small write waited behind all of it.
TEST(ReadResponses, ALongInboundReadLeavesTheNodesOtherTrafficMoving) {
  const double idle = WriteFromBMicroseconds(false);
  const double busy = WriteFromBMicroseconds(true);
  // It shares the PCIe read slots and the port with the responses: a little slower, not stuck.
  EXPECT_GT(busy, idle);
  EXPECT_LT(busy, idle + 2.0);
}

TEST(ReadResponses, ALongReadStreamsAtLineRate) {
  WorkloadConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  c.op = Operation::kRead;
  c.bytes = 1u << 20;
  Workload w(c);
  const Duration elapsed = w.Stream(16);
  EXPECT_GT(w.Gbps(16, elapsed), 97.0);
}

// ---- the read context: one QP's reads one at a time, off a lone read's latency ----

WorkloadConfig QuietReads(Cycles turnaround, int qps = 1) {
  WorkloadConfig c;
  c.fabric.profile = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  c.fabric.profile.read_context_turnaround = turnaround;
  c.op = Operation::kRead;
  c.bytes = 32;
  c.qps = qps;
  c.window = 64;  // more than the ORD of 16: the requester always has the next reads ready
  c.signal_every = 16;
  c.post_list = 16;
  c.cores = qps;
  return c;
}

TEST(ReadContext, ALoneReadDoesNotWaitForItsQpsTurnaround) {
  // Reads one after another, each ~1.9 us from post to completion: a turnaround of 0.4 or 1.5 us
  // has passed before the next arrives.
  Workload quick(QuietReads(Cycles{400}));
  Workload slow(QuietReads(Cycles{1500}));
  EXPECT_EQ(quick.Latency(5), slow.Latency(5));
}

TEST(ReadContext, OneQpsReadsAreServedATurnaroundApart) {
  Workload w(QuietReads(Cycles{1000}));  // 1 us at the preset's 1 GHz: 1 M reads a second
  const std::size_t reads = 2000;
  EXPECT_NEAR(Workload::Mpps(reads, w.Stream(reads)), 1.0, 0.02);
}

TEST(ReadContext, EachQpHasAContextOfItsOwn) {
  Workload w(QuietReads(Cycles{1000}, 8));  // eight QPs, eight contexts, on eight cores
  const std::size_t reads = 8 * 2000;
  EXPECT_NEAR(Workload::Mpps(reads, w.Stream(reads)), 8.0, 8.0 * 0.05);
}

// ---- per-QP counters ----

TEST(QpCountersTest, CountTheQpsOwnTraffic) {
  QpPair pair(Default());
  const QpPair::ExtraQps other = pair.AddConnectedQps();
  WriteOnce(pair, 4096);
  const QpCounters a = *pair.a().node->CountersOf(pair.a().qp);
  EXPECT_EQ(a.doorbells, 1u);
  EXPECT_EQ(a.wqes_executed, 1u);
  EXPECT_EQ(a.packets_sent, 1u);
  EXPECT_EQ(a.bytes_sent, 4096u);
  EXPECT_EQ(a.dma_read_bytes, 4096u);  // the payload (the WQE came with the doorbell)
  EXPECT_EQ(a.completions, 1u);
  EXPECT_EQ(a.packets_received, 1u);  // the ACK
  const QpCounters b = *pair.b().node->CountersOf(pair.b().qp);
  EXPECT_EQ(b.bytes_received, 4096u);
  EXPECT_EQ(b.dma_write_bytes, 4096u);
  const QpCounters idle = *pair.a().node->CountersOf(other.a);
  EXPECT_EQ(idle.packets_sent, 0u);
  EXPECT_EQ(idle.doorbells, 0u);
}

TEST(QpCountersTest, AreOnlyForTheNodesOwnQps) {
  QpPair pair(Default());
  EXPECT_FALSE(pair.a().node->CountersOf(pair.b().qp).has_value());
  EXPECT_FALSE(pair.a().node->CountersOf(nullptr).has_value());
}

}  // namespace
}  // namespace ndksim
