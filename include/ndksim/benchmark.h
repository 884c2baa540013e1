// SPDX-License-Identifier: MIT
/// @file
/// Microbenchmarks of a consumer's own posting code, with the simulated RNIC's view of every
/// operation (docs/benchmarking.md). A Google Benchmark of a posting routine:
///
///     void BM_PostWrites(benchmark::State& state) {
///       ndksim::PostingBenchmark bench(state);             // a connected pair, default profile
///       auto src = bench.poster().Register(4096);
///       auto dst = bench.peer().Register(4096);
///       bench.Run(16, [&] { my_post_16_writes(bench.qp(0), *src, *dst); });
///     }
///     BENCHMARK(BM_PostWrites)->UseManualTime();
///     NDKSIM_BENCHMARK_MAIN();
///
/// Each iteration calls the routine once (timed: only the routine), then lets the simulation catch
/// up with the posting thread's simulated clock and reaps completions (not timed). At the end the
/// fabric runs until idle, and the benchmark reports per operation, from the model's own counters:
/// wall time of the routine, simulated host CPU time, simulated time, doorbells, MMIO bytes,
/// WQE-fetch reads, payload DMA bytes, CQE writes, PCIe bytes each way, packets, cache misses, the
/// simulated message rate, and (as the label) the resource that bounded that rate.
///
/// PostingRun (ndksim/posting_run.h, part of the library) is the same measurement without Google
/// Benchmark's loop, for a test or a tool.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iterator>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ndksim/posting_run.h"

namespace ndksim {

/// PostingRun inside a Google Benchmark: Run() is the benchmark's loop, and the figures per
/// operation become the benchmark's counters (docs/benchmarking.md lists them).
class PostingBenchmark : public PostingRun {
 public:
  /// A PostingRun made with `config`, measured for the benchmark whose state is `state`.
  explicit PostingBenchmark(benchmark::State& state, PostingConfig config = {})
      : PostingRun(std::move(config)), state_(state) {}

  /// The benchmark loop: each iteration calls `post`, which posts `operations` send-queue
  /// requests. Only `post` is timed (register the benchmark with ->UseManualTime() so the Time
  /// column is that time; the counter wall_ns is that time per operation either way).
  /// A failure (an error completion, a hang, operations that do not match what the NIC completed)
  /// ends the benchmark with Google Benchmark's error report (SkipWithError), not the program.
  template <typename Post>
  void Run(std::uint64_t operations, Post&& post) {
    try {
      double wall = 0;
      for ([[maybe_unused]] auto _ : state_) {
        BeforeCall(operations);
        const auto t0 = std::chrono::steady_clock::now();
        post();
        const auto t1 = std::chrono::steady_clock::now();
        const double seconds = std::chrono::duration<double>(t1 - t0).count();
        state_.SetIterationTime(seconds);
        wall += seconds;
        AfterCall(operations);
      }
      Publish(Finish(wall));
    } catch (const std::exception& e) {
      state_.SkipWithError(e.what());
    }
  }

  /// Sets the benchmark's counters and label from a report.
  void Publish(const PostingReport& r) { Publish(state_, r); }
  /// The same for any benchmark, e.g. one that measures a kernel-environment driver with its own
  /// NodeMeasurement.
  static void Publish(benchmark::State& state, const PostingReport& r) {
    auto& c = state.counters;
    const auto ops = static_cast<double>(r.operations);
    c["wall_ns"] = ops == 0 ? 0 : r.wall_seconds * 1e9 / ops;
    c["host_ns"] = ops == 0 ? 0 : static_cast<double>(r.host.count()) / 1e3 / ops;
    c["sim_ns"] = ops == 0 ? 0 : static_cast<double>(r.simulated.count()) / 1e3 / ops;
    c["sim_Mops"] = r.SimulatedMops();
    c["doorbells"] = r.PerOp(r.poster.doorbells);
    c["mmio_B"] = r.PerOp(r.poster.mmio_write_bytes);
    c["wqe_reads"] = r.PerOp(r.poster.wqe_fetch_reads);
    c["payload_B"] = r.PerOp(r.poster.payload_read_bytes + r.poster.payload_write_bytes + r.peer.payload_read_bytes +
                             r.peer.payload_write_bytes);
    c["cqes"] = r.PerOp(r.poster.cqes_written + r.peer.cqes_written);
    c["pcie_dn_B"] = r.PerOp(r.poster.pcie_to_nic_bytes);
    c["pcie_up_B"] = r.PerOp(r.poster.pcie_to_host_bytes);
    c["packets"] = r.PerOp(r.poster.packets_sent + r.peer.packets_sent);
    c["ctx_miss"] = r.PerOp(r.poster.qp_context_misses + r.peer.qp_context_misses);
    c["tpt_miss"] = r.PerOp(r.poster.mpt_misses + r.poster.mtt_misses + r.peer.mpt_misses + r.peer.mtt_misses);
    state.SetItemsProcessed(static_cast<std::int64_t>(r.operations));
    state.SetLabel("bound: " + r.Bound());
  }

 private:
  benchmark::State& state_;
};

/// Prints the benchmarks as the console reporter does, then compares each benchmark of a family
/// (one function, several arguments) with the family's first: the counters that changed, the
/// simulated rate, and what bounded it before and after.
class PostingComparisonReporter : public benchmark::ConsoleReporter {
 public:
  /// Keeps the runs (Record), then reports them as the console reporter does.
  void ReportRuns(const std::vector<Run>& runs) override {
    Record(runs);
    ConsoleReporter::ReportRuns(runs);
  }
  /// Keeps the runs to compare (those that measured something).
  void Record(const std::vector<Run>& runs) {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && !r.error_occurred) runs_.push_back(r);
    }
  }
  /// Ends the console report, then prints the comparisons.
  void Finalize() override {
    ConsoleReporter::Finalize();
    PrintComparisons(GetOutputStream());
  }

  /// Writes to `out`, for each benchmark of a family after its first, what changed from the first.
  void PrintComparisons(std::ostream& out) const {
    std::map<std::string, const Run*> first;
    for (const Run& r : runs_) {
      auto [it, inserted] = first.try_emplace(r.run_name.function_name, &r);
      if (inserted) continue;
      const Run& base = *it->second;
      out << fmt::format("\n{} -> {}\n", base.benchmark_name(), r.benchmark_name());
      const auto line = [&](std::string_view counter, std::string_view shown) {
        const auto was = base.counters.find(std::string(counter));
        const auto is = r.counters.find(std::string(counter));
        if (was == base.counters.end() || is == r.counters.end()) return;
        const double x = was->second.value;
        const double y = is->second.value;
        if (std::abs(y - x) <= 0.005 * std::max(std::abs(x), std::abs(y))) return;  // unchanged
        out << fmt::format("  {:<18} {:>10.3f} -> {:.3f}\n", shown, x, y);
      };
      for (const auto& [counter, shown] : kShown) line(counter, shown);
      for (const auto& entry : r.counters) {  // the benchmark's own counters
        const std::string& counter = entry.first;
        const bool known = std::any_of(std::begin(kShown), std::end(kShown),
                                       [&](const auto& k) { return k.first == counter; });
        if (!known && counter != "items_per_second" && counter != "bytes_per_second") line(counter, counter);
      }
      out << fmt::format("  {:<18} {} -> {}\n", "bound by", Strip(base.report_label), Strip(r.report_label));
    }
  }

 private:
  std::vector<Run> runs_;
  /// PostingBenchmark's counters, in the order a comparison shows them, with their units.
  static constexpr std::pair<std::string_view, std::string_view> kShown[] = {
      {"sim_Mops", "sim Mops/s"},      {"sim_ns", "sim ns/op"},         {"host_ns", "host ns/op"},
      {"wall_ns", "wall ns/op"},       {"doorbells", "doorbells/op"},   {"mmio_B", "MMIO B/op"},
      {"wqe_reads", "WQE reads/op"},   {"payload_B", "payload B/op"},   {"cqes", "CQEs/op"},
      {"pcie_dn_B", "PCIe down B/op"}, {"pcie_up_B", "PCIe up B/op"},   {"packets", "packets/op"},
      {"ctx_miss", "ctx misses/op"},   {"tpt_miss", "TPT misses/op"},
  };
  static std::string Strip(const std::string& label) {
    const std::string prefix = "bound: ";
    return label.rfind(prefix, 0) == 0 ? label.substr(prefix.size()) : label;
  }
};

/// Runs the benchmarks registered in the program with PostingComparisonReporter (or, with a
/// --benchmark_format other than console, as BENCHMARK_MAIN does).
inline int RunPostingBenchmarks(int argc, char** argv) {
  bool console = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--benchmark_format=", 0) == 0 && arg != "--benchmark_format=console") console = false;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (console) {
    PostingComparisonReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace ndksim

/// main() for a posting-path benchmark program: the benchmarks, then the comparisons.
#define NDKSIM_BENCHMARK_MAIN()                                                        \
  int main(int argc, char** argv) { return ::ndksim::RunPostingBenchmarks(argc, argv); } \
  int main(int, char**)
