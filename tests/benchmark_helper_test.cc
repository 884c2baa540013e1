// SPDX-License-Identifier: MIT
// ndksim/benchmark.h: the posting-path measurement (PostingRun), its Google Benchmark loop
// (PostingBenchmark) and the comparison it prints. The counters per operation are exact for known
// patterns; the bound resource is read from the model's busy times.
#include "ndksim/benchmark.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <algorithm>
#include <sstream>

#include "rpc_loader.h"

namespace ndksim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::size_t kChain = 16;

// The registered buffers a write routine uses: 4 KiB on each side.
struct Buffers {
  std::unique_ptr<RegisteredBuffer> local;
  std::unique_ptr<RegisteredBuffer> remote;
  explicit Buffers(PostingRun& run) : local(run.poster().Register(4096)), remote(run.peer().Register(4096)) {}
};

// Posts `n` 8-B writes on `qp` as one DEFER chain (a doorbell for the last); `last_flags` and
// `flags` are added to the last request and to every request.
void PostWrites(NDK_QP* qp, Buffers& b, std::size_t n, ULONG flags, ULONG last_flags) {
  const NDK_SGE sge = b.local->Sge(0, 8);
  for (std::size_t k = 0; k < n; ++k) {
    ULONG f = flags | (k + 1 < n ? NDK_OP_FLAG_DEFER : last_flags);
    if (k + 1 < n) f |= NDK_OP_FLAG_SILENT_SUCCESS;
    const NTSTATUS s = qp->Dispatch->NdkWrite(qp, nullptr, &sge, 1, b.remote->Address(), b.remote->RemoteToken(), f);
    ASSERT_EQ(s, STATUS_SUCCESS);
  }
}

PostingReport RunWrites(PostingConfig config, std::size_t calls, std::size_t chain, ULONG flags) {
  PostingRun run(std::move(config));
  Buffers b(run);
  for (std::size_t i = 0; i < calls; ++i) {
    run.Call(chain, [&] { PostWrites(run.qp(i % run.qps()), b, chain, flags, 0); });
  }
  return run.Finish();
}

TEST(PostingRun, ADeferChainOfSixteenRingsOneDoorbellPerSixteenRequests) {
  const PostingReport r = RunWrites({}, 64, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_EQ(r.operations, 64 * kChain);
  EXPECT_EQ(r.poster.doorbells, 64u);
  EXPECT_DOUBLE_EQ(r.PerOp(r.poster.doorbells), 1.0 / 16);
}

TEST(PostingRun, WithTheEngineOnItsOwnThreadTheCountersAreTheSame) {
  PostingConfig c;
  c.threaded = true;
  const PostingReport r = RunWrites(c, 64, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_EQ(r.poster.doorbells, 64u);
  EXPECT_EQ(r.poster.cqes_written, 64u);
  EXPECT_EQ(r.poster.requests_completed, 64 * kChain);
  EXPECT_EQ(r.peer.payload_write_bytes, 64 * kChain * 8);
}

TEST(PostingRun, InlineWritesMakeNoPayloadDma) {
  const PostingReport r = RunWrites({}, 32, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_EQ(r.poster.payload_read_bytes, 0u);
  EXPECT_EQ(r.peer.payload_write_bytes, 32 * kChain * 8);  // what lands is counted where it lands
}

TEST(PostingRun, GatheredWritesReadTheirPayloadByDma) {
  const PostingReport r = RunWrites({}, 32, kChain, 0);
  EXPECT_EQ(r.poster.payload_read_bytes, 32 * kChain * 8);
}

TEST(PostingRun, UnsignaledWritesMakeNoCqe) {
  // Every chain signals only its last request.
  const PostingReport r = RunWrites({}, 32, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_EQ(r.poster.cqes_written, 32u);
  EXPECT_EQ(r.peer.cqes_written, 0u);
  EXPECT_EQ(r.poster.requests_completed, 32 * kChain);
}

TEST(PostingRun, EveryRequestIsAPacketOnTheWire) {
  const PostingReport r = RunWrites({}, 32, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_EQ(r.poster.packets_sent, 32 * kChain);
  EXPECT_EQ(r.peer.packets_received, 32 * kChain);
}

TEST(PostingRun, OnALoopbackPairEverythingIsCountedOnceOnTheOneNode) {
  PostingConfig c;
  c.pair.loopback = true;
  const PostingReport r = RunWrites(c, 8, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_EQ(r.poster.packets_sent, 2 * 8 * kChain);  // each write and its acknowledgement
  EXPECT_EQ(r.poster.payload_write_bytes, 8 * kChain * 8);
  EXPECT_EQ(r.peer.packets_sent, 0u);
  EXPECT_EQ(r.peer.payload_write_bytes, 0u);
}

TEST(PostingRun, PcieBytesCountEveryTlpWithItsHeader) {
  // 8-B gathered writes: per request a read request header up and the payload's completion
  // (8 B + a 20-B header) down, besides the doorbell, WQE fetches and CQEs.
  const PostingReport inl = RunWrites({}, 32, kChain, NDK_OP_FLAG_INLINE);
  const PostingReport dma = RunWrites({}, 32, kChain, 0);
  ASSERT_EQ(dma.poster.wqe_fetch_reads, inl.poster.wqe_fetch_reads);  // the same WQE traffic
  EXPECT_EQ(dma.poster.pcie_to_host_bytes - inl.poster.pcie_to_host_bytes, 32 * kChain * 24);
  EXPECT_EQ(dma.poster.pcie_to_nic_bytes - inl.poster.pcie_to_nic_bytes, 32 * kChain * (8 + 20));
}

TEST(PostingRun, TheHostTimeIsThePostingCoresWork) {
  // The default profile's host costs: what the poster's core spent, all of it on core 0.
  PostingRun run;
  Buffers b(run);
  for (int i = 0; i < 16; ++i) run.Call(kChain, [&] { PostWrites(run.qp(0), b, kChain, NDK_OP_FLAG_INLINE, 0); });
  const PostingReport r = run.Finish();
  Node& a = *run.poster().node;
  EXPECT_GT(r.host, Duration::zero());
  EXPECT_EQ(r.host, a.CoreBusy(0));  // nothing else ran on the node's cores: the pair set-up posts nothing there
}

TEST(PostingRun, TheFunctionalProfileCostsNothing) {
  PostingConfig c;
  c.pair.fabric.profile = profiles::kFunctional;
  const PostingReport r = RunWrites(c, 8, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_EQ(r.host, Duration::zero());
  EXPECT_EQ(r.simulated, Duration::zero());
  EXPECT_EQ(r.Bound(), "nothing measured");
}

TEST(PostingRun, ARequestPerDoorbellOnOneQpIsBoundByItsProcessingUnit) {
  // docs/model.md, Kalia et al.'s directions: one QP, inline, a doorbell per request.
  const PostingReport r = RunWrites({}, 2000, 1, NDK_OP_FLAG_INLINE);
  EXPECT_THAT(r.Bound(), StartsWith("processing unit"));
}

TEST(PostingRun, SixteenQpsOfBatchedInlineWritesAreBoundByTheWire) {
  PostingConfig c;
  c.qps = 16;
  // Each QP's chain is posted from a core of its own: the NIC, not one core, is what is measured.
  PostingRun run(c);
  Buffers b(run);
  for (std::size_t i = 0; i < 16 * 200; ++i) {
    const ScopedCore on(static_cast<std::uint32_t>(i % 16));
    run.Call(kChain, [&] { PostWrites(run.qp(i % 16), b, kChain, NDK_OP_FLAG_INLINE, 0); });
  }
  const PostingReport r = run.Finish();
  EXPECT_THAT(r.Bound(), StartsWith("the wire (a -> b)"));
}

TEST(PostingRun, ManyQpsWithTooFewCachedContextsSayHowOftenTheyMiss) {
  // 16 QPs in turn through a cache of 2 contexts: nearly every doorbell, WQE and packet misses.
  PostingConfig c;
  c.qps = 16;
  c.pair.fabric.profile.qp_context_cache_entries = 2;
  c.pair.fabric.profile.qp_context_cache_ways = 1;
  const PostingReport r = RunWrites(c, 16 * 20, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_GT(r.poster.qp_context_misses, 0u);
  EXPECT_THAT(r.Bound(), HasSubstr(fmt::format(", {:.2f} cache misses/op",
                                               r.PerOp(r.poster.qp_context_misses + r.peer.qp_context_misses))));
}

TEST(PostingRun, WithoutCachesTheBoundSaysNothingOfMisses) {
  const PostingReport r = RunWrites({}, 32, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_THAT(r.Bound(), ::testing::Not(HasSubstr("cache")));
}

TEST(PostingRun, WqesWrittenThroughTheDoorbellFromManyCoresAreBoundByMmio) {
  // Kalia et al.'s 80-M row: inline writes of two 64-B lines each, a doorbell per request, posted
  // from 16 cores onto 16 QPs: every WQE crosses the link as MMIO (the model: 79 M/s).
  PostingConfig c;
  c.qps = 16;
  c.pair.inline_data_size = 64;
  PostingRun run(c);
  auto local = run.poster().Register(64);
  auto remote = run.peer().Register(64);
  const NDK_SGE sge = local->Sge(0, 40);
  for (std::size_t i = 0; i < 16 * 300; ++i) {
    NDK_QP* qp = run.qp(i % 16);  // each QP signals one write in 16 of its own
    const ScopedCore on(static_cast<std::uint32_t>(i % 16));
    run.Call(1, [&] {
      ASSERT_EQ(qp->Dispatch->NdkWrite(qp, nullptr, &sge, 1, remote->Address(), remote->RemoteToken(),
                                       NDK_OP_FLAG_INLINE | ((i / 16) % 16 == 0 ? 0 : NDK_OP_FLAG_SILENT_SUCCESS)),
                STATUS_SUCCESS);
    });
  }
  const PostingReport r = run.Finish();
  EXPECT_THAT(r.Bound(), StartsWith("PCIe to the NIC, mostly MMIO writes (a)")) << r.Bound();
}

// Regression: the peer re-posted every QP's receives from one core, whose 40 ns a receive bounded
// 16 QPs of sends from one posting thread ("host core 0 (b) 105%"): the peer's service, not the
// routine. Each peer QP's receives now come from a core of their own.
TEST(PostingRun, SendsOverSixteenQpsFromOneThreadAreBoundByThePostingCore) {
  PostingConfig c;
  c.qps = 16;
  c.peer_receive_bytes = 64;
  PostingRun run(c);
  auto message = run.poster().Register(64);
  const NDK_SGE sge = message->Sge(0, 64);
  for (std::size_t i = 0; i < 16 * 100; ++i) {
    NDK_QP* qp = run.qp(i % 16);
    run.Call(kChain, [&] {
      for (std::size_t k = 0; k < kChain; ++k) {
        const ULONG flags = NDK_OP_FLAG_INLINE | (k + 1 < kChain ? NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS : 0);
        ASSERT_EQ(qp->Dispatch->NdkSend(qp, nullptr, &sge, 1, flags), STATUS_SUCCESS);
      }
    });
  }
  EXPECT_THAT(run.Finish().Bound(), StartsWith("host core 0 (a)"));
}

TEST(PostingRun, SendsFindTheReceivesTheHelperKeepsPosted) {
  PostingConfig c;
  c.peer_receive_bytes = 64;
  PostingRun run(c);
  auto buf = run.poster().Register(64);
  const NDK_SGE sge = buf->Sge(0, 64);
  for (int i = 0; i < 1000; ++i) {  // more sends than the peer's queue holds receives
    run.Call(1, [&] { ASSERT_EQ(run.qp(0)->Dispatch->NdkSend(run.qp(0), nullptr, &sge, 1, 0), STATUS_SUCCESS); });
  }
  const PostingReport r = run.Finish();
  EXPECT_EQ(r.peer.payload_write_bytes, 1000u * 64);
  EXPECT_EQ(r.peer.cqes_written, 1000u);
}

TEST(PostingRun, MoreRequestsThanTheWindowWaitForCompletionsInsteadOfOverflowing) {
  PostingConfig c;
  c.pair.initiator_queue_depth = 32;  // a window of 16
  const PostingReport r = RunWrites(c, 100, kChain, NDK_OP_FLAG_INLINE);
  EXPECT_EQ(r.poster.requests_completed, 100 * kChain);
}

TEST(PostingRun, ThePeersReceivesAreFlushedIntoACqThatHoldsThemAll) {
  // 16 QPs keep 256 receives each posted at the peer; closing the pair flushes all 4,096 of them,
  // each with a completion, into CQs of QpPairConfig's 1,024 entries unless the helper makes them
  // deep enough. An overrun is reported on stderr.
  PostingConfig c;
  c.qps = 16;
  c.peer_receive_bytes = 8;
  ::testing::internal::CaptureStderr();
  {
    PostingRun run(c);
    auto buf = run.poster().Register(8);
    const NDK_SGE sge = buf->Sge(0, 8);
    run.Call(1, [&] { ASSERT_EQ(run.qp(0)->Dispatch->NdkSend(run.qp(0), nullptr, &sge, 1, 0), STATUS_SUCCESS); });
    EXPECT_EQ(run.Finish().peer.cq_overruns, 0u);
  }
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), ::testing::Not(HasSubstr("overran")));
}

TEST(PostingRun, SignaledWritesOverManyQpsNeverOverrunTheCq) {
  // The default window is capped at half a CQ: half of 16 initiator queues would let 2,048 signaled
  // writes be in flight, and their CQEs overrun the 1,024-entry CQ while the fabric drains.
  PostingConfig c;
  c.qps = 16;
  PostingRun run(c);
  Buffers b(run);
  const NDK_SGE sge = b.local->Sge(0, 8);
  for (std::size_t i = 0; i < 16 * 100; ++i) {
    NDK_QP* qp = run.qp(i % 16);
    const ScopedCore on(static_cast<std::uint32_t>(i % 16));  // 16 cores post faster than the NIC sends
    run.Call(16, [&] {
      for (int k = 0; k < 16; ++k) {
        const ULONG flags = NDK_OP_FLAG_INLINE | (k < 15 ? NDK_OP_FLAG_DEFER : 0);  // every write signaled
        ASSERT_EQ(qp->Dispatch->NdkWrite(qp, nullptr, &sge, 1, b.remote->Address(), b.remote->RemoteToken(), flags),
                  STATUS_SUCCESS);
      }
    });
  }
  const PostingReport r = run.Finish();
  EXPECT_EQ(r.poster.cq_overruns, 0u);
  EXPECT_EQ(r.poster.cqes_written, 16u * 100 * 16);
}

TEST(PostingRun, TheWiresBusyTimeIsEveryPacketsSerialization) {
  const PostingReport r = RunWrites({}, 4, kChain, NDK_OP_FLAG_INLINE);
  PostingRun probe;  // the same profile, for its figures
  const HardwareProfile& p = probe.fabric().Profile();
  const auto& a = r.resources;
  const auto wire = std::find_if(a.begin(), a.end(), [](const ResourceBusy& x) { return x.name == "the wire (a -> b)"; });
  ASSERT_NE(wire, a.end());
  // Each 8-B inline write is one packet: its payload, the headers and a 16-B RETH.
  const Duration per_packet = p.link_rate.TimeFor(8 + p.packet_overhead_bytes + 16);
  EXPECT_DOUBLE_EQ(wire->busy * static_cast<double>(r.simulated.count()),
                   static_cast<double>((per_packet * static_cast<std::int64_t>(4 * kChain)).count()));
}

TEST(PostingRun, ACallThatPostsOtherThanItDeclaresIsReported) {
  PostingRun run;
  Buffers b(run);
  run.Call(4, [&] { PostWrites(run.qp(0), b, 3, NDK_OP_FLAG_INLINE, 0); });
  EXPECT_THROW(run.Finish(), HarnessError);
}

TEST(KernelPostingRun, MeasuresAKernelDriversRequestsExactly) {
  // The kernel RPC example's initiator on the poster, its target on the peer: 100 ECHO requests,
  // each one send from the initiator and one response send from the target.
  KernelPostingRun run;
  const RpcTargetConfig target{.ipv4 = inet_addr("192.0.2.2"), .port = 4420, .disk_blocks = 8, .receive_depth = 4,
                               .invalidate_reads = 1};
  const RpcInitiatorConfig initiator{.ipv4 = inet_addr("192.0.2.1"), .target_ipv4 = target.ipv4, .port = 4420,
                                     .submitters = 1, .queue_depth = 4, .write_count = 0, .blocks_per_io = 1,
                                     .echo_count = 100, .pattern_seed = 0};
  const RpcDrivers drivers = RpcLoadConnected(run.environment(), run.peer(), run.poster(), target, initiator);
  const RpcTargetResults& answered = *RpcTargetGetResults();
  const PostingReport r = run.Measure(100, [&] {
    return (drivers.results->completed == 100 && answered.responses == 100) || drivers.results->done != 0;
  });
  EXPECT_EQ(drivers.results->succeeded, 100u);
  EXPECT_EQ(r.operations, 100u);
  EXPECT_EQ(r.poster.requests_completed, 100u);
  EXPECT_EQ(r.peer.requests_completed, 100u);
  EXPECT_GT(r.simulated, Duration::zero());
  EXPECT_GT(r.host, Duration::zero());
  RpcUnload(run.environment(), drivers);
}

// A Google Benchmark run of PostingBenchmark, through a reporter that keeps the runs.
class KeepRuns : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override { runs_.insert(runs_.end(), runs.begin(), runs.end()); }
  std::vector<Run> runs_;
};

TEST(PostingBenchmark, PublishesItsFiguresPerOperationAsCounters) {
  benchmark::ClearRegisteredBenchmarks();
  benchmark::RegisterBenchmark("PostingBenchmarkCounters", [](benchmark::State& state) {
    PostingBenchmark bench(state);
    Buffers b(bench);
    bench.Run(kChain, [&] { PostWrites(bench.qp(0), b, kChain, NDK_OP_FLAG_INLINE, 0); });
  })->Iterations(64)->UseManualTime();
  KeepRuns keep;
  benchmark::RunSpecifiedBenchmarks(&keep);
  benchmark::ClearRegisteredBenchmarks();
  ASSERT_EQ(keep.runs_.size(), 1u);
  const auto& run = keep.runs_[0];
  EXPECT_DOUBLE_EQ(run.counters.at("doorbells").value, 1.0 / 16);
  EXPECT_DOUBLE_EQ(run.counters.at("cqes").value, 1.0 / 16);
  EXPECT_DOUBLE_EQ(run.counters.at("packets").value, 2.0);  // each write and its acknowledgement
  EXPECT_DOUBLE_EQ(run.counters.at("payload_B").value, 8.0);  // placed at the peer; inline: none read
  EXPECT_GT(run.counters.at("sim_Mops").value, 0.0);
  EXPECT_GT(run.counters.at("host_ns").value, 0.0);
  EXPECT_THAT(run.report_label, StartsWith("bound: "));
}

TEST(PostingBenchmark, AWrongOperationCountIsTheBenchmarksErrorNotTheProgramsEnd) {
  benchmark::ClearRegisteredBenchmarks();
  benchmark::RegisterBenchmark("PostingBenchmarkMiscounted", [](benchmark::State& state) {
    PostingBenchmark bench(state);
    Buffers b(bench);
    bench.Run(kChain, [&] { PostWrites(bench.qp(0), b, kChain - 1, NDK_OP_FLAG_INLINE, 0); });  // one short
  })->Iterations(4)->UseManualTime();
  KeepRuns keep;
  benchmark::RunSpecifiedBenchmarks(&keep);
  benchmark::ClearRegisteredBenchmarks();
  ASSERT_EQ(keep.runs_.size(), 1u);
  EXPECT_TRUE(keep.runs_[0].error_occurred);
  EXPECT_THAT(keep.runs_[0].error_message, HasSubstr("the calls declared 64 requests, the NIC completed 60"));
}

TEST(PostingComparisonReporter, SaysWhatChangedPerOperationAndWhatBoundTheRate) {
  benchmark::BenchmarkReporter::Run base;
  base.run_name.function_name = "BM_Post";
  base.run_name.args = "defer:0";
  base.counters["doorbells"] = 1.0;
  base.counters["packets"] = 1.0;
  base.report_label = "bound: host core 0 (a) 99%";
  benchmark::BenchmarkReporter::Run variant = base;
  variant.run_name.args = "defer:1";
  variant.counters["doorbells"] = 0.0625;
  variant.report_label = "bound: the wire (a -> b) 97%";
  PostingComparisonReporter reporter;
  reporter.Record({base, variant});
  std::ostringstream out;
  reporter.PrintComparisons(out);
  EXPECT_THAT(out.str(), HasSubstr("BM_Post/defer:0 -> BM_Post/defer:1"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("doorbells/op +1.000 -> 0.062"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("packets/op")));  // unchanged
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("bound by +host core 0 \\(a\\) 99% -> the wire \\(a -> b\\) 97%"));
}

}  // namespace
}  // namespace ndksim
