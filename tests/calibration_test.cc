// SPDX-License-Identifier: MIT
// Calibration: the presets reproduce the published figures of calibration.md within
// +-10%, measured the way ndksim-perf and perftest measure them, and shows the directions Kalia et
// al. measured on real NICs (doorbell batching and inlining raise the message rate when doorbells,
// per-WQE processing or DMA are the bottleneck).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "hw_test_driver.h"
#include "hwmodel/pcie_link.h"
#include "ndksim/workload.h"

namespace ndksim {
namespace {

constexpr double kTolerance = 0.10;

WorkloadConfig Config(Operation op, ULONG bytes) {
  WorkloadConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  c.op = op;
  c.bytes = bytes;
  return c;
}

double MedianOneWayNs(const WorkloadConfig& c, int iterations = 20) {
  Workload w(c);
  std::vector<double> samples = w.Latency(iterations);
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct StreamFigures {
  double mpps = 0;
  double gbps = 0;
};

StreamFigures Stream(const WorkloadConfig& c, std::size_t messages) {
  Workload w(c);
  const Duration elapsed = w.Stream(messages);
  return {Workload::Mpps(messages, elapsed), w.Gbps(messages, elapsed)};
}

// ---- one-way send latency (Potter, ConnectX-4 EDR InfiniBand, ib_send_lat; medians of the published
// ranges), on the preset of that class ----

WorkloadConfig EdrIb(Operation op, ULONG bytes) {
  WorkloadConfig c = Config(op, bytes);
  c.fabric.profile = profiles::kConnectXEdrIb;
  return c;
}

TEST(Calibration, SendLatencyOf32BytesInlineIsPotters0_83Microseconds) {
  EXPECT_NEAR(MedianOneWayNs(EdrIb(Operation::kSend, 32)), 825, 825 * kTolerance);
}

TEST(Calibration, SendLatencyOf1KiBIsPotters1_57Microseconds) {
  EXPECT_NEAR(MedianOneWayNs(EdrIb(Operation::kSend, 1024)), 1565, 1565 * kTolerance);
}

TEST(Calibration, SendLatencyOf4KiBIsPotters2_27Microseconds) {
  EXPECT_NEAR(MedianOneWayNs(EdrIb(Operation::kSend, 4096)), 2265, 2265 * kTolerance);
}

TEST(Calibration, SendLatencyOf32KiBIsPotters4_57Microseconds) {
  EXPECT_NEAR(MedianOneWayNs(EdrIb(Operation::kSend, 32768)), 4570, 4570 * kTolerance);
}

// ---- ConnectX-5 RoCE latency (calibration.md, Model v2; ib_send_lat -s 8), on the default profile ----

constexpr double kLatencyTolerance = 0.05;

TEST(Calibration, SendLatencyOf8BytesIsConnectX5RoceTypical0_92Microseconds) {
  EXPECT_NEAR(MedianOneWayNs(Config(Operation::kSend, 8)), 920, 920 * kLatencyTolerance);
}

// ---- ConnectX-5 RoCE tails (calibration.md, Model v2: 10,000 iterations of ib_send_lat and
// ib_write_lat -s 8) ----
//
// A tail is made of rare events, so one run's p99.9 and max are draws themselves (the published
// write and send maxima, 3.56x and 5.59x the typical on the same machine, are two such draws).
// Each figure here is the median over five seeds of that figure of a 10,000-iteration run, as a
// ratio to the run's typical (median) latency; tail ratios are held to +-15%.

constexpr double kTailTolerance = 0.15;

struct TailRatios {
  double min = 0;
  double p99 = 0;
  double p99_9 = 0;
  double max = 0;
};

TailRatios MedianTailRatios(Operation op) {
  constexpr int kSeeds = 5;
  std::vector<double> min;
  std::vector<double> p99;
  std::vector<double> p99_9;
  std::vector<double> max;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    WorkloadConfig c = Config(op, 8);
    c.fabric.seed = static_cast<std::uint64_t>(seed);
    Workload w(c);
    std::vector<double> s = w.Latency(10000);
    std::sort(s.begin(), s.end());
    const double typical = s[s.size() / 2];
    min.push_back(s.front() / typical);
    p99.push_back(s[s.size() * 99 / 100] / typical);
    p99_9.push_back(s[s.size() * 999 / 1000] / typical);
    max.push_back(s.back() / typical);
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(min), median(p99), median(p99_9), median(max)};
}

// A published figure as a ratio to the published typical, and the model's within the tolerance.
void ExpectRatio(const char* what, double model, double published_us, double typical_us) {
  const double published = published_us / typical_us;
  EXPECT_NEAR(model, published, published * kTailTolerance) << what;
}

// The maxima: the model's lie between the two published ones (3.56x for write, 5.59x for send),
// within the tolerance; each published maximum alone is not matched (docs/model.md).
void ExpectMaximumBetweenThePublishedOnes(double max) {
  EXPECT_GE(max, 3.52 / 0.99 * (1 - kTailTolerance));
  EXPECT_LE(max, 5.14 / 0.92 * (1 + kTailTolerance));
}

// One published row (us): min, typical, p99, p99.9; the maximum is checked against both rows.
struct PublishedLatency {
  double min = 0;
  double typical = 0;
  double p99 = 0;
  double p99_9 = 0;
};

// One test per operation: the five runs behind the ratios are the expensive part.
void ExpectTailShape(Operation op, const PublishedLatency& published) {
  const TailRatios t = MedianTailRatios(op);
  ExpectRatio("min", t.min, published.min, published.typical);
  ExpectRatio("p99", t.p99, published.p99, published.typical);
  ExpectRatio("p99.9", t.p99_9, published.p99_9, published.typical);
  ExpectMaximumBetweenThePublishedOnes(t.max);
}

TEST(Calibration, SendLatencyTailHasConnectX5RocesShape) {
  ExpectTailShape(Operation::kSend, {.min = 0.89, .typical = 0.92, .p99 = 0.95, .p99_9 = 1.40});
}

TEST(Calibration, WriteLatencyTailHasConnectX5RocesShape) {
  ExpectTailShape(Operation::kWrite, {.min = 0.93, .typical = 0.99, .p99 = 1.15, .p99_9 = 1.40});
}

// ---- write bandwidth (J. Synchrotron Rad. 2020, 100 GbE RoCEv2) ----

TEST(Calibration, WriteBandwidthAt2KiBIsAtLeast94PercentOfLineRate) {
  const StreamFigures f = Stream(Config(Operation::kWrite, 2048), 4000);
  EXPECT_GE(f.gbps, 94.0);
  EXPECT_NEAR(f.gbps, 95.2, 95.2 * kTolerance);
}

TEST(Calibration, WriteBandwidthAt4KiBIsAtLeast97PercentOfLineRate) {
  const StreamFigures f = Stream(Config(Operation::kWrite, 4096), 4000);
  EXPECT_GE(f.gbps, 97.0);
  EXPECT_NEAR(f.gbps, 97.5, 97.5 * kTolerance);
}

// ---- PCIe (pcie-bench, Neugebauer et al. SIGCOMM 2018) ----

TEST(Calibration, DmaReadOf64BytesTakesPcieBenchs546Nanoseconds) {
  hw::testing::TwoNodeRig rig(profiles::kConnectX100GbeRoce);
  EXPECT_NEAR(ToNanoseconds(rig.TimeDmaRead(64)), 546, 546 * kTolerance);
}

// The spread of the same read, repeated: each one alone on the link, so only the latency's noise
// separates them (pcie-bench: min ~510, median 546, p99.9 ~580 ns).
std::vector<double> IsolatedDmaReadsNs(int count) {
  hw::testing::TwoNodeRig rig(profiles::kConnectX100GbeRoce);
  std::vector<double> ns;
  for (int i = 0; i < count; ++i) ns.push_back(ToNanoseconds(rig.TimeDmaRead(64)));
  std::sort(ns.begin(), ns.end());
  return ns;
}

TEST(Calibration, DmaReadsOf64BytesSpreadAsPcieBenchsFromAbout510To580Nanoseconds) {
  const std::vector<double> ns = IsolatedDmaReadsNs(10000);
  EXPECT_NEAR(ns[ns.size() / 2], 546, 546 * 0.02);
  EXPECT_NEAR(ns.front(), 510, 510 * 0.02);
  EXPECT_NEAR(ns[ns.size() * 999 / 1000], 580, 580 * 0.02);
}

// pcie-bench's latency against size, one read request each (calibration.md: 128 B 573, 256 B 626,
// 512 B 706 ns): the host hands a request's data over a line at a time.
double DmaReadNs(std::uint64_t bytes) {
  hw::testing::TwoNodeRig rig(profiles::WithoutNoise(profiles::kConnectX100GbeRoce));
  return ToNanoseconds(rig.TimeDmaRead(bytes));
}

TEST(Calibration, DmaReadOf128BytesTakesPcieBenchs573Nanoseconds) {
  EXPECT_NEAR(DmaReadNs(128), 573, 573 * kLatencyTolerance);
}

TEST(Calibration, DmaReadOf256BytesTakesPcieBenchs626Nanoseconds) {
  EXPECT_NEAR(DmaReadNs(256), 626, 626 * kLatencyTolerance);
}

TEST(Calibration, DmaReadOf512BytesTakesPcieBenchs706Nanoseconds) {
  EXPECT_NEAR(DmaReadNs(512), 706, 706 * kLatencyTolerance);
}

// ---- message rates ----

TEST(Calibration, SingleQpReadRateOf64BytesWith16OutstandingIs2_5Mpps) {
  // ib_read_bw: 16 outstanding reads (the pair's ORD), a deep send queue (openucx/ucx issue 8851).
  WorkloadConfig c = Config(Operation::kRead, 64);
  c.window = 128;
  EXPECT_NEAR(Stream(c, 10000).mpps, 2.5, 2.5 * kTolerance);
}

TEST(Calibration, InlineWriteRateOf8BytesWithPostList128Is7_5Mpps) {
  // ib_write_bw -s 8 -l 128, CQ moderation 128 (linux-rdma/perftest issue 273).
  WorkloadConfig c = Config(Operation::kWrite, 8);
  c.post_list = 128;
  c.signal_every = 128;
  c.window = 1024;
  c.inline_size = 8;
  EXPECT_NEAR(Stream(c, 20000).mpps, 7.5, 7.5 * kTolerance);
}

// ---- Kalia et al.: the directions, where the bottleneck is the one named ----

TEST(Calibration, DoorbellBatchingRaisesTheMessageRateWhenPerWqeProcessingIsTheBottleneck) {
  WorkloadConfig c = Config(Operation::kWrite, 8);
  c.inline_size = 8;
  c.signal_every = 16;
  const double one_per_doorbell = Stream(c, 8000).mpps;
  c.post_list = 16;
  const double sixteen_per_doorbell = Stream(c, 8000).mpps;
  EXPECT_GT(sixteen_per_doorbell, 1.15 * one_per_doorbell);
}

TEST(Calibration, DoorbellBatchingCutsMmioWritesPerRequest) {
  WorkloadConfig c = Config(Operation::kWrite, 8);
  c.inline_size = 8;
  c.post_list = 16;
  Workload w(c);
  w.Stream(1600);
  const QpCounters q = *w.pair().a().node->CountersOf(w.Initiators()[0]);
  EXPECT_EQ(q.doorbells, 100u);
  EXPECT_EQ(q.mmio_writes, 100u);
  EXPECT_EQ(q.wqes_by_mmio, 0u);  // a doorbell for a batch names the index; the WQEs are fetched
  EXPECT_EQ(q.wqes_fetched, 1600u);
}

TEST(Calibration, InliningRaisesTheMessageRateWhenDmaIsTheBottleneck) {
  // 16 QPs, posted from 16 cores, keep all processing units busy; without inlining every request
  // needs a payload read, and the PCIe read tags cap the rate.
  WorkloadConfig c = Config(Operation::kWrite, 8);
  c.qps = 16;
  c.cores = 16;
  c.post_list = 16;
  c.window = 256;
  c.inline_size = 0;
  Workload gathered(c);
  const double gathered_mpps = Workload::Mpps(32000, gathered.Stream(32000));
  c.inline_size = 8;
  Workload inlined(c);
  const double inlined_mpps = Workload::Mpps(32000, inlined.Stream(32000));
  EXPECT_GT(inlined_mpps, 1.5 * gathered_mpps);
  // The bottleneck is the one named: gathered payload reads wait for read tags, inlined ones never.
  EXPECT_GT(gathered.pair().a().node->Counters().read_tag_stalls, 0u);
  EXPECT_EQ(inlined.pair().a().node->Counters().read_tag_stalls, 0u);
}

TEST(Calibration, InliningSavesThePayloadRead) {
  WorkloadConfig c = Config(Operation::kWrite, 8);
  c.post_list = 16;
  c.inline_size = 0;
  Workload gathered(c);
  gathered.Stream(1600);
  c.inline_size = 8;
  Workload inlined(c);
  inlined.Stream(1600);
  const QpCounters g = *gathered.pair().a().node->CountersOf(gathered.Initiators()[0]);
  const QpCounters i = *inlined.pair().a().node->CountersOf(inlined.Initiators()[0]);
  // Both fetch 1600 one-block WQEs; only the gathered one also reads 1600 payloads of 8 B.
  EXPECT_EQ(g.dma_read_bytes - i.dma_read_bytes, 1600u * 8);
  EXPECT_EQ(i.dma_read_bytes, 1600u * 64);
}

// ---- the posting core (Kalia et al., Model v2: one core of a request sequencer on Connect-IB) ----
// 8-B inline writes, one in 16 signaled, on the Connect-IB-class preset; the core is the
// bottleneck where it is the one named.

double ConnectIbWriteMpps(int qps, std::size_t post_list) {
  WorkloadConfig c = Config(Operation::kWrite, 8);
  c.fabric.profile = profiles::kConnectIbFdr;
  c.inline_size = 8;
  c.qps = qps;
  c.post_list = post_list;
  c.window = 128;
  return Stream(c, 20000).mpps;
}

TEST(Calibration, OneCorePostingADoorbellPerRequestReachesKalias7_0M) {
  // The core: 31 ns of WQE and record, 105 ns of MMIO write and flush per request.
  EXPECT_NEAR(ConnectIbWriteMpps(1, 1), 7.0, 7.0 * kTolerance);
}

TEST(Calibration, OneCoreWithDoorbellBatchingOnOneQpReachesKalias16_6M) {
  // The QP's processing unit: 56 cycles a request and a doorbell's 30 shared by 16.
  EXPECT_NEAR(ConnectIbWriteMpps(1, 16), 16.6, 16.6 * kTolerance);
}

TEST(Calibration, OneCoreWithDoorbellBatchingOnThreeQpsReachesKalias27_4M) {
  // The core again: 31 ns a request and one MMIO write per 16.
  EXPECT_NEAR(ConnectIbWriteMpps(3, 16), 27.4, 27.4 * kTolerance);
}

TEST(Calibration, NonBatchedInlineWritesOfTwoLinesAreMmioBoundAtKalias80M) {
  // 64-B inline writes, a doorbell each, from 16 cores on 16 QPs: each 96-B WQE is written through
  // the doorbell page as two 64-B write-combining lines, two TLPs of 64 + 24 B, and PCIe Gen3 x16
  // (113.7 Gb/s) carries 80.7 M of them a second; the cores (141 ns a request) and the units
  // (86 ns) would allow more.
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.fabric.profile = profiles::kConnectIbFdr;
  c.inline_size = 64;
  c.qps = 16;
  c.cores = 16;
  c.window = 128;
  EXPECT_NEAR(Stream(c, 64000).mpps, 80.0, 80.0 * kTolerance);
}

// ---- the functional profile ----

TEST(Calibration, FunctionalProfileTakesNoSimulatedTime) {
  WorkloadConfig c = Config(Operation::kWrite, 4096);
  c.fabric.profile = profiles::kFunctional;
  Workload w(c);
  EXPECT_EQ(w.Stream(1000), Duration::zero());
  EXPECT_EQ(w.fabric().Now(), TimePoint{});
}

}  // namespace
}  // namespace ndksim
