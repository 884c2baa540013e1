// SPDX-License-Identifier: MIT
// The host CPU block: each core is a timeline, and the driver's posting and polling work costs
// simulated time on the core of the thread that does it. First the block alone, then through the
// provider on a fabric.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "hwmodel/host_cpu.h"
#include "hwmodel/pcie_link.h"
#include "ndksim/testing.h"
#include "ndksim/workload.h"

namespace ndksim {
namespace {

// Costs that make every charge visible on its own.
HardwareProfile Costed() {
  HardwareProfile p = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);  // exact times
  p.host_cores = 4;
  p.host_post = Nanoseconds(30);
  p.host_wqe_block = Nanoseconds(2);
  p.host_doorbell_record = Nanoseconds(1);
  p.host_mmio_store = Nanoseconds(5);
  p.host_mmio_flush = Nanoseconds(100);
  p.host_cqe_poll = Nanoseconds(10);
  return p;
}

TimePoint At(Duration d) { return TimePoint{d}; }

struct Cpu {
  std::atomic<std::int64_t> now{0};
  hw::HostCpu cpu;
  explicit Cpu(const HardwareProfile& p = Costed(), std::uint64_t seed = 1, std::uint64_t node = 0)
      : cpu(p, now, seed, node) {}
  void SetNow(Duration d) { now.store(d.count()); }
};

TEST(HostCpu, APostChargesItsWqeAndTheDoorbellRecordToTheCallersCore) {
  Cpu c;
  const ScopedCore on(1);
  EXPECT_EQ(c.cpu.PostWqe(64), At(Duration::zero()));
  EXPECT_EQ(c.cpu.Clock(1), At(Nanoseconds(31)));
  EXPECT_EQ(c.cpu.Busy(1), Nanoseconds(31));
  EXPECT_EQ(c.cpu.Clock(0), At(Duration::zero()));
}

TEST(HostCpu, EachFurtherBlockOfAWqeCostsOneBlockStore) {
  Cpu c;
  const ScopedCore on(0);
  (void)c.cpu.PostWqe(3 * 64);
  EXPECT_EQ(c.cpu.Clock(0), At(Nanoseconds(31 + 2 * 2)));
}

TEST(HostCpu, AnMmioWriteLeavesAfterItsStoresAndTheCoreWaitsForTheFlush) {
  Cpu c;
  const ScopedCore on(0);
  EXPECT_EQ(c.cpu.MmioWrite(8), At(Nanoseconds(5)));
  EXPECT_EQ(c.cpu.Clock(0), At(Nanoseconds(105)));
}

TEST(HostCpu, AWqeWrittenThroughTheDoorbellPageCostsAStorePerLine) {
  Cpu c;
  const ScopedCore on(0);
  EXPECT_EQ(c.cpu.MmioWrite(256), At(Nanoseconds(4 * 5)));
  EXPECT_EQ(c.cpu.Clock(0), At(Nanoseconds(120)));
}

TEST(HostCpu, ACoreDoesOneThingAtATime) {
  Cpu c;
  const ScopedCore on(0);
  (void)c.cpu.PostWqe(64);
  (void)c.cpu.MmioWrite(8);
  EXPECT_EQ(c.cpu.PostWqe(64), At(Nanoseconds(136)));
  EXPECT_EQ(c.cpu.Clock(0), At(Nanoseconds(167)));
}

TEST(HostCpu, WorkStartsNoEarlierThanTheEnginesTime) {
  Cpu c;
  const ScopedCore on(0);
  (void)c.cpu.PostWqe(64);
  c.SetNow(Microseconds(2));
  EXPECT_EQ(c.cpu.PostWqe(64), At(Microseconds(2)));
  EXPECT_EQ(c.cpu.Busy(0), Nanoseconds(62));
}

TEST(HostCpu, CoresDoNotWaitForEachOther) {
  Cpu c;
  {
    const ScopedCore on(0);
    (void)c.cpu.MmioWrite(8);
  }
  const ScopedCore on(1);
  EXPECT_EQ(c.cpu.MmioWrite(8), At(Nanoseconds(5)));
}

TEST(HostCpu, TakingCqesCostsEachItsPoll) {
  Cpu c;
  const ScopedCore on(0);
  c.cpu.Poll(3);
  EXPECT_EQ(c.cpu.Clock(0), At(Nanoseconds(30)));
}

TEST(HostCpu, AnEmptyPollCostsNothing) {
  Cpu c;
  const ScopedCore on(0);
  c.cpu.Poll(0);
  EXPECT_EQ(c.cpu.Busy(0), Duration::zero());
}

TEST(HostCpu, CoreNumbersAreTakenModuloTheCoreCount) {
  Cpu c;
  const ScopedCore on(5);  // 4 cores: core 1
  (void)c.cpu.PostWqe(64);
  EXPECT_EQ(c.cpu.Clock(1), At(Nanoseconds(31)));
}

TEST(HostCpu, TheFunctionalProfileChargesNothing) {
  Cpu c(profiles::kFunctional);
  const ScopedCore on(0);
  EXPECT_FALSE(c.cpu.Enabled());
  EXPECT_EQ(c.cpu.MmioWrite(8), TimePoint{});
  (void)c.cpu.PostWqe(64);
  c.cpu.Poll(4);
  EXPECT_EQ(c.cpu.Busy(0), Duration::zero());
}

TEST(ScopedCore, RestoresTheBindingItReplaced) {
  Cpu c;
  const ScopedCore outer(1);
  {
    const ScopedCore inner(2);
    (void)c.cpu.PostWqe(64);
  }
  (void)c.cpu.PostWqe(64);
  EXPECT_EQ(c.cpu.Clock(2), At(Nanoseconds(31)));
  EXPECT_EQ(c.cpu.Clock(1), At(Nanoseconds(31)));
}

TEST(HostCpu, UnboundThreadsGetCoresInTheOrderTheyFirstCharge) {
  Cpu c;
  std::thread([&] { (void)c.cpu.PostWqe(64); }).join();
  std::thread([&] { (void)c.cpu.PostWqe(3 * 64); }).join();
  EXPECT_EQ(c.cpu.Clock(0), At(Nanoseconds(31)));
  EXPECT_EQ(c.cpu.Clock(1), At(Nanoseconds(35)));
}

// Regression: a thread's core was its number among every thread of the process, so a test's
// thread posted from another core (and shared one with the kernel environment's threads)
// whenever an earlier test had started threads.
TEST(HostCpu, TheFirstThreadToChargeACpuIsItsCoreZeroWhateverThreadsRanBefore) {
  Cpu earlier;
  std::thread([&] { (void)earlier.cpu.PostWqe(64); }).join();
  std::uint32_t core = 99;
  std::thread([&] {
    Cpu c;
    (void)c.cpu.PostWqe(64);
    core = c.cpu.CoreOfThisThread();
  }).join();
  EXPECT_EQ(core, 0u);
}

// ---- through the provider ----

struct Posting {
  QpPair pair;
  std::unique_ptr<RegisteredBuffer> src;
  std::unique_ptr<RegisteredBuffer> dst;
  explicit Posting(const HardwareProfile& p) : pair(Config(p)) {
    src = pair.a().Register(64);
    dst = pair.b().Register(64);
  }
  static QpPairConfig Config(const HardwareProfile& p) {
    QpPairConfig c;
    c.fabric.profile = p;
    c.inline_data_size = 8;
    c.initiator_queue_depth = 64;
    return c;
  }
  NTSTATUS Write(ULONG flags) {
    const NDK_SGE s = src->Sge(0, 8);
    return pair.a().Write(nullptr, {&s, 1}, dst->Address(), dst->RemoteToken(), flags | NDK_OP_FLAG_INLINE);
  }
  Node& A() { return pair.fabric().GetNode(0); }
};

TEST(HostCpu, OneThreadsPostsQueueOnItsCore) {
  const HardwareProfile p = Costed();
  Posting t(p);
  const ScopedCore on(2);
  const TimePoint start = t.A().CoreClock(2) > t.pair.fabric().Now() ? t.A().CoreClock(2) : t.pair.fabric().Now();
  for (int i = 0; i < 10; ++i) ASSERT_EQ(t.Write(0), STATUS_SUCCESS);
  // Each inline 8-B write: its one-block WQE and record (31 ns), then the WQE written through the
  // doorbell page (one line, 5 ns) and the flush (100 ns).
  EXPECT_EQ(t.A().CoreClock(2) - start, 10 * Nanoseconds(136));
}

TEST(HostCpu, ADeferredPostSavesTheMmioWrite) {
  const HardwareProfile p = Costed();
  Posting t(p);
  const ScopedCore on(2);
  const Duration before = t.A().CoreBusy(2);
  for (int i = 0; i < 15; ++i) ASSERT_EQ(t.Write(NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
  ASSERT_EQ(t.Write(0), STATUS_SUCCESS);
  // Sixteen WQEs and records, one 8-B doorbell for all of them.
  EXPECT_EQ(t.A().CoreBusy(2) - before, 16 * Nanoseconds(31) + Nanoseconds(105));
}

TEST(HostCpu, TheDoorbellLeavesWhenItsCoreHasWrittenIt) {
  const HardwareProfile p = Costed();
  Posting t(p);
  t.pair.fabric().Trace().Requests().Enable();
  const ScopedCore on(2);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(t.Write(0), STATUS_SUCCESS);
  (void)t.pair.Collect(t.pair.a().initiator_cq, 3);
  const auto& records = t.pair.fabric().Trace().Requests().Records();
  ASSERT_EQ(records.size(), 3u);
  const Duration mmio =
      p.pcie_bandwidth.TimeFor(64 + hw::PcieLink::kWriteTlpOverheadBytes) + p.pcie_mmio_write_latency;
  for (std::size_t i = 0; i < 3; ++i) {
    // Posted when the core took it up, 136 ns after the previous post; the WQE-carrying doorbell
    // leaves 31 + 5 ns later and crosses PCIe.
    EXPECT_EQ(records[i].At(RequestStage::kPosted) - records[0].At(RequestStage::kPosted),
              static_cast<std::int64_t>(i) * Nanoseconds(136));
    EXPECT_EQ(records[i].At(RequestStage::kDoorbell) - records[i].At(RequestStage::kPosted), Nanoseconds(36) + mmio);
  }
}

TEST(HostCpu, PollingChargesTheCqesTaken) {
  const HardwareProfile p = Costed();
  Posting t(p);
  const ScopedCore on(3);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(t.Write(0), STATUS_SUCCESS);
  t.pair.fabric().RunUntilIdle();
  const Duration before = t.A().CoreBusy(3);
  EXPECT_EQ(t.pair.Collect(t.pair.a().initiator_cq, 4).size(), 4u);
  EXPECT_EQ(t.A().CoreBusy(3) - before, 4 * Nanoseconds(10));
}

TEST(HostCpu, TheFunctionalProfileKeepsPostingFree) {
  Posting t(profiles::kFunctional);
  const ScopedCore on(0);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(t.Write(0), STATUS_SUCCESS);
  (void)t.pair.Collect(t.pair.a().initiator_cq, 4);
  EXPECT_EQ(t.A().CoreBusy(0), Duration::zero());
  EXPECT_EQ(t.pair.fabric().Now(), TimePoint{});
}

// One thread's posting rate is bounded by its core; QPs posted from several cores add up.
double StreamMpps(int qps, int cores) {
  WorkloadConfig c;
  c.fabric.profile = profiles::kConnectIbFdr;
  c.op = Operation::kWrite;
  c.bytes = 8;
  c.inline_size = 8;
  c.qps = qps;
  c.cores = cores;
  c.window = 64;
  Workload w(c);
  const std::size_t messages = 4000;
  return Workload::Mpps(messages, w.Stream(messages));
}

TEST(HostCpu, OneCoreBoundsTheRateOfDoorbellPerRequestPosting) {
  // 31 + 5 + 100 ns a request on the core: 7.35 M/s, whatever the NIC could do with four QPs.
  EXPECT_NEAR(StreamMpps(4, 1), 1e3 / 136.0, 0.2);
}

TEST(HostCpu, SeveralCoresAddUp) {
  const double one = StreamMpps(4, 1);
  const double four = StreamMpps(4, 4);
  EXPECT_GT(four, 3.6 * one) << one << " Mpps from one core, " << four << " from four";
}

// ---- interruptions ----

// A core taken away every 10 us on average, for exactly 2 us each time.
HardwareProfile Interrupted() {
  HardwareProfile p = Costed();
  p.noise = true;
  p.host_interruption_interval = Microseconds(10);
  p.host_interruption_min = Microseconds(2);
  p.host_interruption_max = Microseconds(2);
  return p;
}

TEST(HostCpu, WorkInterruptedWhileItRunsEndsThatMuchLater) {
  HardwareProfile p = Interrupted();
  p.host_post = Microseconds(5);  // long posts, back to back: interruptions strike during them
  Cpu c(p, 1);
  const ScopedCore on(0);
  for (int i = 0; i < 1000; ++i) (void)c.cpu.PostWqe(64);
  const Duration work = 1000 * (p.host_post + p.host_doorbell_record);
  EXPECT_GT(c.cpu.Interruptions(0), 0u);
  EXPECT_EQ(c.cpu.InterruptedTime(0), static_cast<std::int64_t>(c.cpu.Interruptions(0)) * Microseconds(2));
  EXPECT_EQ(c.cpu.Clock(0), TimePoint{work + c.cpu.InterruptedTime(0)});
}

TEST(HostCpu, InterruptionsArriveAtTheirMeanInterval) {
  HardwareProfile p = Interrupted();
  p.host_post = Microseconds(5);
  Cpu c(p, 1);
  const ScopedCore on(0);
  for (int i = 0; i < 2000; ++i) (void)c.cpu.PostWqe(64);
  // ~10 ms of work: one interruption per 10 us of it on average, +-10%.
  const double expected = ToNanoseconds(c.cpu.Clock(0).time_since_epoch() - c.cpu.InterruptedTime(0)) / 10'000.0;
  EXPECT_NEAR(static_cast<double>(c.cpu.Interruptions(0)), expected, 0.1 * expected);
}

TEST(HostCpu, WorkDueDuringAnInterruptionBeginsWhenItIsOver) {
  Cpu c(Interrupted(), 1);
  const ScopedCore on(0);
  // A post every 100 ns of engine time, for 10 ms; the core is idle between them.
  Duration longest_wait{};
  for (int i = 0; i < 100'000; ++i) {
    const TimePoint due{Nanoseconds(100) * i};
    const TimePoint idle_from = c.cpu.Clock(0);
    c.now.store(due.time_since_epoch().count());
    const TimePoint began = c.cpu.PostWqe(64);
    if (idle_from <= due) longest_wait = std::max(longest_wait, began - due);
  }
  // An interruption every ~12 us (10 us apart, 2 us long), each holding up the first post due in
  // it until it is over: never more than its 2 us, and nearly all of it on average.
  EXPECT_NEAR(static_cast<double>(c.cpu.Interruptions(0)), 10e6 / 12e3, 0.1 * 10e6 / 12e3);
  EXPECT_LE(longest_wait, Microseconds(2));
  EXPECT_GT(longest_wait, Microseconds(2) - Nanoseconds(100));
  EXPECT_NEAR(ToNanoseconds(c.cpu.InterruptedTime(0)) / 10e6, 2.0 / 12.0, 0.02);
}

std::vector<TimePoint> CoreClocksAfterPosting(std::uint64_t seed, std::uint64_t node, const HardwareProfile& p) {
  Cpu c(p, seed, node);
  std::vector<TimePoint> clocks;
  for (std::uint32_t core = 0; core < 4; ++core) {
    const ScopedCore on(core);
    for (int i = 0; i < 2000; ++i) (void)c.cpu.PostWqe(64);
    clocks.push_back(c.cpu.Clock(core));
  }
  return clocks;
}

TEST(HostCpu, TheSameSeedGivesTheSameInterruptions) {
  EXPECT_EQ(CoreClocksAfterPosting(9, 0, Interrupted()), CoreClocksAfterPosting(9, 0, Interrupted()));
}

TEST(HostCpu, EachCoreOfEachNodeIsInterruptedOnItsOwn) {
  const std::vector<TimePoint> node0 = CoreClocksAfterPosting(9, 0, Interrupted());
  const std::vector<TimePoint> node1 = CoreClocksAfterPosting(9, 1, Interrupted());
  EXPECT_NE(node0, node1);
  EXPECT_NE(node0[0], node0[1]);
}

TEST(HostCpu, WithTheNoiseOffNoInterruptionStrikes) {
  HardwareProfile p = Interrupted();
  p.noise = false;
  const std::vector<TimePoint> clocks = CoreClocksAfterPosting(9, 0, p);
  EXPECT_EQ(clocks[0], TimePoint{2000 * Nanoseconds(31)});
  EXPECT_EQ(clocks[3], clocks[0]);
}

TEST(HostCpu, ANodeReportsTheInterruptionsOfItsCores) {
  WorkloadConfig c;
  c.op = Operation::kSend;
  c.bytes = 8;
  Workload w(c);  // the default profile: noise on
  (void)w.Latency(10000);
  const Node& a = *w.pair().a().node;
  EXPECT_GT(a.CoreInterruptions(0), 0u);
  EXPECT_GT(a.CoreInterruptedTime(0), Duration::zero());
  EXPECT_EQ(a.CoreInterruptions(1), 0u);  // nothing ran on core 1
}

}  // namespace
}  // namespace ndksim
