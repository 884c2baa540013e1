// SPDX-License-Identifier: MIT
// ndksim-perf: perftest's measurements (ib_{write,read,send}_{lat,bw}) on the simulated RNIC. It
// takes perftest's options where they mean the same thing, prints perftest's latency and bandwidth
// tables in perftest's units, and writes every figure with the full configuration as JSON.
// Arguments are parsed by CLI11 and JSON is written by nlohmann-json (both Debian packages).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ndksim/names.h"
#include "ndksim/version.h"
#include "ndksim/workload.h"

namespace {

using namespace ndksim;
using Clock = std::chrono::steady_clock;

// perftest's defaults: ib_*_lat runs 1000 iterations, ib_*_bw 5000 per QP.
constexpr int kDefaultLatencyIterations = 1000;
constexpr int kDefaultBandwidthIterations = 5000;
// perftest's -a: every power of two from 2 B to 8 MiB.
constexpr ULONG kAllSizesMax = 1u << 23;
// The sizes measured when no option chooses them.
constexpr std::array<ULONG, 6> kDefaultSizes = {2, 8, 64, 512, 4096, 65536};
// The simulated devices --profile (-d) chooses from; the first is the default.
constexpr std::array kProfiles = {&profiles::kConnectX100GbeRoce, &profiles::kIWarp, &profiles::kConnectXEdrIb,
                                   &profiles::kConnectIbFdr, &profiles::kFunctional};

struct Options {  // NOLINT(clang-analyzer-optin.performance.Padding): one, grouped as --help groups them
  std::string op = "write";
  std::string profile{kProfiles.front()->name};
  std::optional<ULONG> size;
  bool all_sizes = false;
  std::string sweep;
  std::optional<int> iterations;
  int qps = 1;
  int cores = 1;
  int post_list = 1;
  int cq_mod = 100;  // perftest's default
  int tx_depth = 128;
  std::optional<long long> inline_size;
  bool inline_all = false;
  std::optional<std::uint32_t> mtu;
  std::optional<unsigned> qp_timeout;
  bool no_noise = false;
  std::string connection = "RC";
  std::string phases = "both";
  bool report_gbits = false;
  bool no_peak = false;
  std::uint64_t seed = 1;
  double loss = 0;
  std::string trace_path;
  bool out_json = false;
  std::string json_path = "perftest_out.json";  // perftest's default, in the working directory
  bool report_speed = false;
  std::string server;
  bool log = false;
  bool no_progress = false;
  bool dry_run = false;
  bool events = false;
  bool bidirectional = false;
  bool report_both = false;
  std::optional<int> outstanding_reads;  // -o
  std::optional<double> duration;  // seconds of simulated time (-D)
};

// The configuration that follows from the options, checked before anything runs.
struct Plan {
  Operation op = Operation::kWrite;
  HardwareProfile profile;
  std::vector<ULONG> sizes;
  int lat_iterations = kDefaultLatencyIterations;
  int bw_iterations = kDefaultBandwidthIterations;  // per QP, as perftest counts them
  bool latency = true;
  bool bandwidth = true;
  long long inline_size = -1;  // -1: perftest's defaults
};

const HardwareProfile* FindProfile(std::string_view name) {
  for (const HardwareProfile* p : kProfiles) {
    if (p->name == name) return p;
  }
  return nullptr;
}

std::vector<std::string> ProfileNames() {
  std::vector<std::string> names;
  for (const HardwareProfile* p : kProfiles) names.emplace_back(p->name);
  return names;
}

// A refused configuration: the message names the option(s) in conflict.
struct BadArguments : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A size in bytes as perftest's users write it: digits, optionally followed by K, M or G (binary
// multiples, either case). Nothing when the text is not one, or the size exceeds 2 GiB.
std::optional<std::uint64_t> ParseBytes(std::string_view text) {
  std::uint64_t multiple = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k': case 'K': multiple = std::uint64_t{1} << 10; break;
      case 'm': case 'M': multiple = std::uint64_t{1} << 20; break;
      case 'g': case 'G': multiple = std::uint64_t{1} << 30; break;
      default: break;
    }
    if (multiple != 1) text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  const std::uint64_t bytes = std::stoull(std::string(text)) * multiple;
  if (bytes > (std::uint64_t{1} << 31)) return std::nullopt;
  return bytes;
}

// -s takes ParseBytes's sizes: the option sees the plain number of bytes.
CLI::Validator SizeWithSuffix() {
  return {[](std::string& text) -> std::string {
            const std::optional<std::uint64_t> bytes = ParseBytes(text);
            if (!bytes) return fmt::format("{} is not a size in bytes (digits, optionally K, M or G)", text);
            text = std::to_string(*bytes);
            return {};
          },
          "BYTES[K|M|G]", "size"};
}

// A file name that is not the next option: `--out_json --no-progress` would otherwise write a file
// called "--no-progress" (perftest's --out_json is a flag, so its users write it so).
CLI::Validator NotAnOption() {
  return {[](const std::string& value) -> std::string {
            if (value.rfind('-', 0) != 0) return {};
            return fmt::format("takes a file name, not the option {} (write ./{} for a file of that name)", value, value);
          },
          "FILE", "file"};
}

std::vector<ULONG> SweepSizes(const std::string& text) {
  const auto colon = text.find(':');
  auto number = [&](std::string_view digits) -> unsigned long {
    const std::optional<std::uint64_t> bytes = ParseBytes(digits);
    if (!bytes) throw BadArguments(fmt::format("--sweep {}: expected MIN:MAX in bytes, e.g. 32:32768 or 32:32K", text));
    return static_cast<unsigned long>(*bytes);
  };
  if (colon == std::string::npos) throw BadArguments(fmt::format("--sweep {}: expected MIN:MAX, e.g. 32:32768", text));
  const unsigned long lo = number(std::string_view(text).substr(0, colon));
  const unsigned long hi = number(std::string_view(text).substr(colon + 1));
  if (lo == 0 || hi < lo) throw BadArguments(fmt::format("--sweep {}: needs 1 <= MIN <= MAX", text));
  std::vector<ULONG> sizes;
  for (unsigned long s = lo; s <= hi; s *= 2) sizes.push_back(static_cast<ULONG>(s));
  return sizes;
}

Plan MakePlan(const Options& o) {
  Plan plan;
  plan.op = o.op == "read" ? Operation::kRead : o.op == "send" ? Operation::kSend : Operation::kWrite;
  plan.profile = *FindProfile(o.profile);
  if (o.mtu) {
    plan.profile.mtu_bytes = *o.mtu;
    if (const auto errors = Validate(plan.profile); !errors.empty()) {
      throw BadArguments(fmt::format("--mtu {}: {}", *o.mtu, errors.front()));
    }
  }
  if (o.qp_timeout) plan.profile.ack_timeout = LocalAckTimeout(*o.qp_timeout);
  if (o.no_noise) plan.profile.noise = false;
  if (o.connection != "RC") {
    throw BadArguments(fmt::format("--connection {}: NDK connections are reliable connected; only RC is simulated",
                                   o.connection));
  }
  if (!o.sweep.empty() && (o.size || o.all_sizes)) {
    throw BadArguments("--sweep and --size/--all each choose the sizes: give one of them");
  }
  const int chosen = (o.size || o.all_sizes ? 1 : 0) + (o.sweep.empty() ? 0 : 1);
  if (o.size && o.all_sizes) {
    std::fprintf(stderr, "ndksim-perf: --all runs every size, so --size %u is ignored (as perftest does)\n", *o.size);
  } else if (o.size) {
    plan.sizes = {*o.size};
  }
  if (o.all_sizes) {
    for (ULONG s = 2; s <= kAllSizesMax; s *= 2) plan.sizes.push_back(s);
  }
  if (!o.sweep.empty()) plan.sizes = SweepSizes(o.sweep);
  if (chosen == 0) plan.sizes.assign(kDefaultSizes.begin(), kDefaultSizes.end());
  plan.latency = o.phases != "bw";
  plan.bandwidth = o.phases != "lat";
  if (o.events && plan.op == Operation::kWrite && plan.latency) {
    throw BadArguments("-e: the write latency test polls memory, as ib_write_lat does; use -e with --phases bw");
  }
  if (o.iterations) plan.lat_iterations = plan.bw_iterations = *o.iterations;
  if (const ULONG most = std::min(plan.profile.max_outbound_read_limit, plan.profile.max_inbound_read_limit);
      o.outstanding_reads && static_cast<ULONG>(*o.outstanding_reads) > most) {
    std::fprintf(stderr, "ndksim-perf: -o %d is above the profile's %u outstanding reads per QP: %u it is (as perftest)\n",
                 *o.outstanding_reads, most, most);
  }
  if (o.bidirectional && !plan.bandwidth) {
    throw BadArguments("-b: bidirectional streams are the bandwidth test's (perftest's ib_*_bw -b); this run has none");
  }
  if (o.duration && o.iterations) {
    throw BadArguments("-D and -n both say how long a test runs: give one (as perftest)");
  }
  if (o.inline_all) plan.inline_size = plan.profile.max_inline_bytes;
  if (o.inline_size) {
    if (o.inline_all) throw BadArguments("--inline and --inline_size both set what is posted inline: give one");
    if (*o.inline_size > plan.profile.max_inline_bytes) {
      throw BadArguments(fmt::format("--inline_size {}: profile {} carries at most {} B inline", *o.inline_size,
                                     plan.profile.name, plan.profile.max_inline_bytes));
    }
    plan.inline_size = *o.inline_size;
  }
  if (o.post_list > o.tx_depth) {
    throw BadArguments(fmt::format("--post_list {} does not fit in --tx-depth {}: a post list is posted whole",
                                   o.post_list, o.tx_depth));
  }
  const std::size_t max_window = Workload::MaxWindow(plan.profile);
  if (static_cast<std::size_t>(o.tx_depth) > max_window) {
    throw BadArguments(fmt::format("--tx-depth {}: profile {} allows at most {} (its queue depth limits)", o.tx_depth,
                                   plan.profile.name, max_window));
  }
  const std::uint64_t max_qps = Workload::MaxQps(plan.profile, static_cast<std::size_t>(o.tx_depth));
  if (static_cast<std::uint64_t>(o.qps) > max_qps) {
    throw BadArguments(fmt::format("--qp {}: profile {} allows at most {} QPs with --tx-depth {}", o.qps,
                                   plan.profile.name, max_qps, o.tx_depth));
  }
  if (static_cast<std::uint64_t>(o.cores) > plan.profile.host_cores) {
    throw BadArguments(fmt::format("--cores {}: profile {} has {} cores per node", o.cores, plan.profile.name,
                                   plan.profile.host_cores));
  }
  for (const ULONG size : plan.sizes) {
    if (size > plan.profile.max_transfer_bytes) {
      throw BadArguments(fmt::format("--size {}: profile {} transfers at most {} B per request", size,
                                     plan.profile.name, plan.profile.max_transfer_bytes));
    }
    if (size == 0 && plan.op == Operation::kWrite && plan.latency) {
      throw BadArguments("--size 0: write latency polls the last byte of the message, so it needs at least 1 B "
                         "(add --phases bw to measure zero-byte write bandwidth)");
    }
  }
  return plan;
}

// The reads each QP may have outstanding (-o), at most the profile's, as perftest clamps to the
// device's; the profile's most unless given.
ULONG ReadLimit(const Options& o, const Plan& plan) {
  const ULONG most = std::min(plan.profile.max_outbound_read_limit, plan.profile.max_inbound_read_limit);
  return o.outstanding_reads ? std::min(static_cast<ULONG>(*o.outstanding_reads), most) : most;
}

WorkloadConfig ConfigFor(const Options& o, const Plan& plan, ULONG size) {
  WorkloadConfig c;
  c.fabric.profile = plan.profile;
  c.fabric.seed = o.seed;
  c.op = plan.op;
  c.bytes = size;
  c.qps = o.qps;
  c.cores = o.cores;
  c.window = static_cast<std::size_t>(o.tx_depth);
  c.post_list = static_cast<std::size_t>(o.post_list);
  c.signal_every = static_cast<std::size_t>(o.cq_mod);
  c.inline_size = plan.inline_size;
  c.events = o.events;
  c.bidirectional = o.bidirectional;
  c.read_limit = ReadLimit(o, plan);
  return c;
}

// A file named by an option must be writable before the run starts, not after it.
std::unique_ptr<std::ofstream> OpenOutput(const std::string& path, const char* option) {
  if (path.empty()) return nullptr;
  auto out = std::make_unique<std::ofstream>(path);
  if (!*out) throw BadArguments(fmt::format("{} {}: cannot write the file", option, path));
  return out;
}

// ---- progress ----------------------------------------------------------------------------------

// A bar with the percentage and the time left, on stderr when it is a terminal, once the run has
// taken a second.
class Progress {
 public:
  Progress(bool enabled, double total) : enabled_(enabled && isatty(STDERR_FILENO) != 0), total_(total) {}
  ~Progress() { Finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Advance(double work) {
    done_ += work;
    if (!enabled_) return;
    const auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1) || now - drawn_ < std::chrono::milliseconds(100)) return;
    drawn_ = now;
    const double fraction = std::min(1.0, done_ / total_);
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double left = fraction > 0 ? elapsed * (1 - fraction) / fraction : 0;
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(fraction * kWidth);
    std::fprintf(stderr, "\r[%s%s] %5.1f%%  ETA %s ", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(), fraction * 100,
                 FormatSeconds(left).c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void Finish() {
    if (!shown_) return;
    std::fprintf(stderr, "\r%*s\r", 70, "");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  static std::string FormatSeconds(double s) {
    if (s < 60) return fmt::format("{:.0f} s", s);
    return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
  }

  bool enabled_;
  double total_;
  double done_ = 0;
  bool shown_ = false;
  Clock::time_point start_ = Clock::now();
  Clock::time_point drawn_{};
};

// ---- figures -----------------------------------------------------------------------------------

struct LatencyFigures {
  int iterations = 0;
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p99_9 = 0;  // microseconds
  double tps = 0;  // -D: iterations per second of the measured stretch
};

// perftest's duration mode (-D): the first and the last quarter of the run are its margins, and
// only what happened in between is measured.
struct DurationWindow {
  double from_ns = 0;
  double until_ns = 0;
  static DurationWindow Of(double seconds) {
    const double ns = seconds * 1e9;
    return {ns / 4, ns - ns / 4};
  }
  double Nanoseconds() const { return until_ns - from_ns; }
};

// perftest's statistics of one-way latency samples (ns in, us out): typical is the median, the
// percentiles are the sorted sample at that rank.
LatencyFigures LatencyOf(std::vector<double> ns) {
  LatencyFigures f;
  f.iterations = static_cast<int>(ns.size());
  if (ns.empty()) return f;
  std::sort(ns.begin(), ns.end());
  auto us = [](double v) { return v / 1000; };
  auto rank = [&](double q) { return ns[std::min(ns.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ns.size())))]; };
  double sum = 0;
  for (const double v : ns) sum += v;
  const double mean = sum / static_cast<double>(ns.size());
  double squares = 0;
  for (const double v : ns) squares += (v - mean) * (v - mean);
  f.t_min = us(ns.front());
  f.t_max = us(ns.back());
  f.t_typical = us(ns[ns.size() / 2]);
  f.t_avg = us(mean);
  f.t_stdev = us(std::sqrt(squares / static_cast<double>(ns.size())));
  f.p99 = us(rank(0.99));
  f.p99_9 = us(rank(0.999));
  return f;
}

struct BandwidthFigures {
  std::size_t iterations = 0;      // messages over all QPs
  double bw_peak_bytes_per_s = 0;  // 0 when not measured (--noPeak)
  double bw_avg_bytes_per_s = 0;
  double msg_rate_mpps = 0;
  double elapsed_us = 0;
  // -b: each direction's own (--report-both), local (a to b) and remote (b to a).
  struct Direction {
    double bw_peak_bytes_per_s = 0;
    double bw_avg_bytes_per_s = 0;
    double msg_rate_mpps = 0;
  };
  std::optional<Direction> local;
  std::optional<Direction> remote;
};

// A point of the bandwidth test's progress: simulated time, messages completed, payload bytes the
// receiving NIC has taken off the wire.
struct StreamPoint {
  double ns = 0;
  std::size_t done = 0;
  std::uint64_t bytes = 0;
  std::uint64_t local_bytes = 0;   // -b: the part a's requests brought (to b for writes and sends, to a for reads)
};

// The peak bandwidth: the best payload rate on the wire into the receiver over any stretch of the
// run that completed at least `stretch` messages. Measured on the wire rather than by completions,
// which arrive in bursts, so it never exceeds what the link can carry.
double PeakBytesPerSecond(const std::vector<StreamPoint>& points, std::size_t stretch) {
  double best = 0;
  std::size_t j = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    j = std::max(j, i + 1);
    while (j < points.size() && points[j].done - points[i].done < stretch) ++j;
    if (j >= points.size()) break;
    const double dt = points[j].ns - points[i].ns;
    if (dt > 0) best = std::max(best, static_cast<double>(points[j].bytes - points[i].bytes) / dt * 1e9);
  }
  return best;
}

// The stream's progress at `ns`, between the points around it (completions come in bursts; the
// stretch between two points is taken as even).
StreamPoint PointAt(const std::vector<StreamPoint>& points, double ns) {
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (points[i].ns < ns) continue;
    const StreamPoint& p = points[i - 1];
    const StreamPoint& q = points[i];
    const double share = q.ns > p.ns ? (ns - p.ns) / (q.ns - p.ns) : 1.0;
    const auto between = [&](auto x, auto y) {
      return x + static_cast<decltype(x)>(std::llround(static_cast<double>(y - x) * share));
    };
    return {ns, between(p.done, q.done), between(p.bytes, q.bytes), between(p.local_bytes, q.local_bytes)};
  }
  return points.back();
}

// perftest's units: MiB/sec is 2^20 bytes per second, Gb/sec 10^9 bits per second.
double Mbytes(double bytes_per_s) { return bytes_per_s / (1 << 20); }
double Gbits(double bytes_per_s) { return bytes_per_s * 8 / 1e9; }

struct SizeResult {
  ULONG bytes = 0;
  std::optional<LatencyFigures> latency;
  std::optional<BandwidthFigures> bandwidth;
  std::uint64_t simulated_ops = 0;
  double wall_seconds = 0;
};

std::string_view OpName(Operation op) {
  switch (op) {
    case Operation::kWrite: return "write";
    case Operation::kRead: return "read";
    case Operation::kSend: return "send";
  }
  return "?";
}

std::string_view PerftestTestName(Operation op) {
  switch (op) {
    case Operation::kWrite: return "RDMA_Write";
    case Operation::kRead: return "RDMA_Read";
    case Operation::kSend: return "Send";
  }
  return "?";
}

constexpr std::string_view kRule =
    "---------------------------------------------------------------------------------------";

// The inline limit a test posts with: -I, or perftest's defaults (latency tests only).
long long InlineMax(const Plan& plan, std::string_view what) {
  const HardwareProfile& p = plan.profile;
  if (plan.inline_size >= 0) return plan.inline_size;
  return what == "Latency" ? std::min<long long>(Workload::LatencyInlineDefault(plan.op), p.max_inline_bytes) : 0;
}

void PrintHeader(const Options& o, const Plan& plan, std::string_view what) {
  const HardwareProfile& p = plan.profile;
  std::printf("%s\n", kRule.data());
  std::printf("                    %s%s %s Test (ndksim %s, simulated)\n", PerftestTestName(plan.op).data(),
              o.bidirectional && what == "BW" ? " Bidirectional" : "", what.data(), NDKSIM_VERSION_STRING);
  std::printf(" Device (profile): %s (%s, %.0f Gb/s)\n", std::string(p.name).c_str(), std::string(Name(p.transport)).c_str(),
              static_cast<double>(p.link_rate.bits_per_second) / 1e9);
  std::printf(" Number of qps   : %-8d Transport type : %s\n", o.qps, std::string(Name(p.transport)).c_str());
  std::printf(" Connection type : RC       Using SRQ      : OFF\n");
  if (what == "BW") {
    std::printf(" TX depth        : %-8d Post List      : %d\n", o.tx_depth, o.post_list);
    std::printf(" CQ Moderation   : %d\n", o.cq_mod);
  }
  if (o.events) std::printf(" Completions     : events (the CQ is armed and its notification taken)\n");
  if (o.duration) {
    const DurationWindow window = DurationWindow::Of(*o.duration);
    std::printf(" Duration        : %g s of simulated time, measured from %g s to %g s\n", *o.duration,
                window.from_ns / 1e9, window.until_ns / 1e9);
  }
  std::printf(" Mtu             : %u[B]\n", p.mtu_bytes);
  const long long inline_max = InlineMax(plan, what);
  if (plan.op == Operation::kRead) {
    std::printf(" Outstand reads  : %u\n", ReadLimit(o, plan));
  } else {
    std::printf(" Max inline data : %lld[B]\n", inline_max);
  }
  std::printf(" Seed            : %llu%s\n", static_cast<unsigned long long>(o.seed),
              o.loss > 0 ? fmt::format("   Packet loss    : {}", o.loss).c_str() : "");
  std::printf("%s\n", kRule.data());
}

// ---- the run -----------------------------------------------------------------------------------

class Run {
 public:
  Run(const Options& o, const Plan& plan) : o_(o), plan_(plan), progress_(!o.no_progress, TotalWork()) {}

  int Execute(std::ofstream* trace, std::ofstream* json) {
    results_.resize(plan_.sizes.size());
    for (std::size_t i = 0; i < plan_.sizes.size(); ++i) results_[i].bytes = plan_.sizes[i];
    if (plan_.latency) {
      PrintHeader(o_, plan_, "Latency");
      if (o_.duration) {
        std::printf(" #bytes        #iterations       t_avg[usec]    tps average\n");
      } else {
        std::printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
                    "   99%% percentile[usec]   99.9%% percentile[usec]\n");
      }
      for (std::size_t i = 0; i < plan_.sizes.size(); ++i) {
        const bool traced = trace != nullptr && !plan_.bandwidth && i + 1 == plan_.sizes.size();
        const LatencyFigures f = MeasureLatency(results_[i], traced ? trace : nullptr);
        progress_.Finish();
        if (o_.duration) {
          std::printf(" %-7u       %-10d        %-7.2f        %-7.2f\n", results_[i].bytes, f.iterations, f.t_avg, f.tps);
          std::fflush(stdout);
          continue;
        }
        std::printf(" %-7u %-10d     %-7.2f        %-7.2f      %-7.2f            %-7.2f        %-7.2f          %-7.2f"
                    "                %-7.2f\n",
                    results_[i].bytes, f.iterations, f.t_min, f.t_max, f.t_typical, f.t_avg, f.t_stdev, f.p99,
                    f.p99_9);
        std::fflush(stdout);
      }
      std::printf("%s\n", kRule.data());
    }
    if (plan_.bandwidth) {
      PrintHeader(o_, plan_, "BW");
      const char* unit = o_.report_gbits ? "Gb/sec" : "MiB/sec";
      const auto columns = [&] {
        std::printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", unit, unit);
      };
      const auto row = [&](ULONG bytes, std::size_t iterations, double peak, double average, double rate) {
        auto bw = [&](double bytes_per_s) { return o_.report_gbits ? Gbits(bytes_per_s) : Mbytes(bytes_per_s); };
        std::printf(" %-10u %-10zu     %-10.2f         %-10.2f         %-10.6f\n", bytes, iterations, bw(peak),
                    bw(average), rate);
      };
      columns();
      for (std::size_t i = 0; i < plan_.sizes.size(); ++i) {
        const bool traced = trace != nullptr && i + 1 == plan_.sizes.size();
        const BandwidthFigures f = MeasureBandwidth(results_[i], traced ? trace : nullptr);
        progress_.Finish();
        row(results_[i].bytes, f.iterations, f.bw_peak_bytes_per_s, f.bw_avg_bytes_per_s, f.msg_rate_mpps);
        if (o_.report_both && f.local && f.remote) {
          // perftest's --report-both: each side's own figures after the row of both.
          for (const auto& [title, d] : {std::pair{"Local", *f.local}, std::pair{"Remote", *f.remote}}) {
            std::printf("%s\n\n %s results: \n%s\n", kRule.data(), title, kRule.data());
            columns();
            row(results_[i].bytes, f.iterations, d.bw_peak_bytes_per_s, d.bw_avg_bytes_per_s, d.msg_rate_mpps);
          }
        }
        std::fflush(stdout);
      }
      std::printf("%s\n", kRule.data());
    }
    std::uint64_t ops = 0;
    double wall = 0;
    for (const SizeResult& r : results_) {
      ops += r.simulated_ops;
      wall += r.wall_seconds;
    }
    // On stderr: stdout ends as perftest's does, with the last result row and a rule, for scripts
    // that take its last lines.
    std::fflush(stdout);
    std::fprintf(stderr, " Simulator speed : %.0f simulated operations per wall-clock second (%llu in %.2f s)\n",
                 wall > 0 ? static_cast<double>(ops) / wall : 0.0, static_cast<unsigned long long>(ops), wall);
    if (json != nullptr) {
      *json << Json().dump(2) << '\n';
      json->flush();
      if (!*json) {
        std::fprintf(stderr, "ndksim-perf: --out_json_file %s: writing failed\n", o_.json_path.c_str());
        return 1;
      }
    }
    return 0;
  }

 private:
  // The progress bar's unit of work: one message of `bytes`, weighed by its packets, which is
  // what the simulator's time per message grows with.
  double Weight(ULONG bytes) const { return 1.0 + static_cast<double>(bytes) / plan_.profile.mtu_bytes; }

  // A test that runs for a duration (-D) is this much work, done as its simulated time passes.
  static constexpr double kDurationWork = 1000;

  double TotalWork() const {
    double work = 0;
    for (const ULONG bytes : plan_.sizes) {
      if (o_.duration) {
        work += (plan_.latency ? kDurationWork : 0) + (plan_.bandwidth ? kDurationWork : 0);
        continue;
      }
      if (plan_.latency) work += plan_.lat_iterations * 2 * Weight(bytes);  // ping and pong
      if (plan_.bandwidth) work += static_cast<double>(plan_.bw_iterations) * o_.qps * Weight(bytes);
    }
    return work;
  }

  void AddLossRule(Workload& w) const {
    if (o_.loss <= 0) return;
    w.fabric().AddFault(DropPackets().Always().WithProbability(o_.loss));  // every packet, both ways
  }

  void StartTrace(Workload& w, bool traced) const {
    if (traced) w.fabric().Trace().Requests().Enable();
    if (o_.log && traced) {
      w.fabric().Trace().SetSink(
          [](std::string_view line) { std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data()); });
      w.fabric().Trace().EnableAll();
    }
  }

  static void WriteTrace(Workload& w, std::ofstream* trace) {
    if (trace == nullptr) return;
    w.fabric().Trace().Requests().WriteChromeTrace(*trace);
    trace->flush();
  }

  LatencyFigures MeasureLatency(SizeResult& result, std::ofstream* trace) {
    Workload w(ConfigFor(o_, plan_, result.bytes));
    AddLossRule(w);
    StartTrace(w, trace != nullptr || (o_.log && !plan_.bandwidth && result.bytes == plan_.sizes.back()));
    const auto wall0 = Clock::now();  // the simulator's speed: connection set-up is not part of it
    if (o_.duration) {
      // -D: one message after another until the duration has passed; the samples of messages
      // that began and ended inside the measured stretch count.
      const DurationWindow window = DurationWindow::Of(*o_.duration);
      const double end_ns = *o_.duration * 1e9;
      const TimePoint start = w.fabric().Now();
      std::vector<double> samples;
      std::uint64_t iterations = 0;
      double reported = 0;
      for (double now = 0; now < end_ns;) {
        const double before = now;
        const std::vector<double> one = w.Latency(1);
        now = ToNanoseconds(w.fabric().Now() - start);
        ++iterations;
        if (before >= window.from_ns && now <= window.until_ns) samples.insert(samples.end(), one.begin(), one.end());
        const double done = std::min(now, end_ns) / end_ns * kDurationWork;
        progress_.Advance(done - reported);
        reported = done;
      }
      WriteTrace(w, trace);
      LatencyFigures f = LatencyOf(samples);
      f.tps = static_cast<double>(samples.size()) / (window.Nanoseconds() / 1e9);
      result.latency = f;
      result.simulated_ops += iterations * (plan_.op == Operation::kRead ? 1 : 2);
      result.wall_seconds += std::chrono::duration<double>(Clock::now() - wall0).count();
      return f;
    }
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(plan_.lat_iterations));
    constexpr int kChunk = 100;  // iterations between progress updates
    for (int done = 0; done < plan_.lat_iterations; done += kChunk) {
      const int n = std::min(kChunk, plan_.lat_iterations - done);
      const std::vector<double> chunk = w.Latency(n);
      samples.insert(samples.end(), chunk.begin(), chunk.end());
      progress_.Advance(n * 2 * Weight(result.bytes));
    }
    WriteTrace(w, trace);
    result.latency = LatencyOf(std::move(samples));
    result.simulated_ops += static_cast<std::uint64_t>(plan_.lat_iterations) * (plan_.op == Operation::kRead ? 1 : 2);
    result.wall_seconds += std::chrono::duration<double>(Clock::now() - wall0).count();
    return *result.latency;
  }

  BandwidthFigures MeasureBandwidth(SizeResult& result, std::ofstream* trace) {
    Workload w(ConfigFor(o_, plan_, result.bytes));
    AddLossRule(w);
    StartTrace(w, trace != nullptr || (o_.log && result.bytes == plan_.sizes.back()));
    const auto wall0 = Clock::now();  // the simulator's speed: connection set-up is not part of it
    const std::size_t directions = o_.bidirectional ? 2 : 1;
    const std::size_t messages = static_cast<std::size_t>(plan_.bw_iterations) * static_cast<std::size_t>(o_.qps);
    const TimePoint start = w.fabric().Now();
    // Payload reaches the responder for writes and sends, the initiator for reads; both nodes take
    // it when the stream runs both ways.
    Node& a = *w.pair().a().node;
    Node& b = *w.pair().b().node;
    const auto received = [&]() -> std::uint64_t {
      if (o_.bidirectional) return a.Counters().bytes_received + b.Counters().bytes_received;
      return (plan_.op == Operation::kRead ? a : b).Counters().bytes_received;
    };
    // What a's own requests brought: to b for writes and sends, to a for reads.
    Node& local_receiver = plan_.op == Operation::kRead ? a : b;
    const std::uint64_t bytes0 = received();
    const std::uint64_t local0 = local_receiver.Counters().bytes_received;
    std::vector<StreamPoint> points{{0.0, 0, 0, 0}};
    double reported = 0;
    const auto on_progress = [&](std::size_t done, std::size_t) {
      const double ns = ToNanoseconds(w.fabric().Now() - start);
      points.push_back({ns, done, received() - bytes0, local_receiver.Counters().bytes_received - local0});
      const double work = o_.duration ? std::min(ns / (*o_.duration * 1e9), 1.0) * kDurationWork
                                      : static_cast<double>(done / directions) * Weight(result.bytes);
      progress_.Advance(work - reported);
      reported = work;
    };
    BandwidthFigures f;
    // The measured stretch: the whole run, or with -D its middle half.
    StreamPoint from = points.front();
    StreamPoint until;
    if (o_.duration) {
      const StreamCount c = w.StreamFor(Picoseconds(std::llround(*o_.duration * 1e12)), on_progress);
      f.elapsed_us = ToNanoseconds(c.elapsed) / 1000;
      const DurationWindow window = DurationWindow::Of(*o_.duration);
      from = PointAt(points, window.from_ns);
      until = PointAt(points, window.until_ns);
    } else {
      const Duration elapsed = w.Stream(messages, on_progress);
      f.elapsed_us = ToNanoseconds(elapsed) / 1000;
      until = points.back();
      until.ns = ToNanoseconds(elapsed);
    }
    WriteTrace(w, trace);
    const double ns = until.ns - from.ns;
    // Messages by their payload on the wire, which moves evenly; completions come a signaled one
    // for every -Q requests, too coarse for a stretch of a few hundred.
    const auto messages_in = [&](std::uint64_t bytes, std::size_t done) -> double {
      return result.bytes > 0 ? static_cast<double>(bytes) / result.bytes : static_cast<double>(done);
    };
    const auto rate = [&](double count) { return ns > 0 ? count / ns : 0.0; };
    const double completed = o_.duration ? messages_in(until.bytes - from.bytes, until.done - from.done)
                                         : static_cast<double>(messages * directions);
    f.iterations = static_cast<std::size_t>(std::llround(completed / static_cast<double>(directions)));
    f.msg_rate_mpps = rate(completed) * 1e3;
    f.bw_avg_bytes_per_s = rate(completed * result.bytes) * 1e9;
    // A stretch of at least one window on every QP (or the whole run, if shorter).
    const std::size_t stretch = std::min(points.back().done, static_cast<std::size_t>(o_.tx_depth) *
                                                                static_cast<std::size_t>(o_.qps) * directions);
    if (!o_.no_peak) f.bw_peak_bytes_per_s = std::max(PeakBytesPerSecond(points, stretch), f.bw_avg_bytes_per_s);
    if (o_.bidirectional) {
      // Each direction on its own: a's requests' payload, and the rest.
      const auto direction = [&](auto bytes_of) {
        BandwidthFigures::Direction d;
        std::vector<StreamPoint> own;
        for (const StreamPoint& p : points) own.push_back({p.ns, p.done / 2, bytes_of(p), 0});
        const std::uint64_t bytes = bytes_of(until) - bytes_of(from);
        d.bw_avg_bytes_per_s = rate(static_cast<double>(bytes)) * 1e9;
        d.msg_rate_mpps = rate(messages_in(bytes, (until.done - from.done) / 2)) * 1e3;
        if (!o_.no_peak) d.bw_peak_bytes_per_s = std::max(PeakBytesPerSecond(own, stretch / 2), d.bw_avg_bytes_per_s);
        return d;
      };
      f.local = direction([](const StreamPoint& p) { return p.local_bytes; });
      f.remote = direction([](const StreamPoint& p) { return p.bytes - p.local_bytes; });
    }
    result.bandwidth = f;
    result.simulated_ops += points.back().done;
    result.wall_seconds += std::chrono::duration<double>(Clock::now() - wall0).count();
    return f;
  }

  // perftest's JSON (--out_json): "test_info" and "results" as ib_<op>_<lat|bw> writes them, for
  // the tooling that reads perftest's files, and ndksim's own figures in "ndksim". perftest's file
  // holds the last result it printed (each size rewrites it); "ndksim" has every size. Nothing
  // depends on the wall clock unless --report_speed asks for the simulator's speed.
  nlohmann::ordered_json Json() const {
    return {{"test_info", PerftestTestInfo()}, {"results", PerftestResults()}, {"ndksim", nlohmann::ordered_json(NdksimJson())}};
  }

  // In perftest's order.
  nlohmann::ordered_json PerftestTestInfo() const {
    const HardwareProfile& p = plan_.profile;
    const bool bandwidth = plan_.bandwidth;  // the last test of the run
    std::string test = fmt::format("{}_", PerftestTestName(plan_.op));
    if (bandwidth && o_.bidirectional) test += "Bidirectional_";
    if (bandwidth) test += o_.post_list > 1 ? "Post_List_BW_" : "BW_";
    if (!bandwidth) test += "Latency_";
    nlohmann::ordered_json info = {{"test", test + "Test"}};
    if (o_.events) info["Test with events"] = fmt::format("Using_{}_comp0", p.name);
    info["Dual_port"] = "OFF";
    info["Device"] = p.name;
    info["Number_of_qps"] = o_.qps;
    info["Transport_type"] = p.transport == Transport::kIWarp ? "IWARP" : "IB";
    info["Connection_type"] = "RC";
    info["Using_SRQ"] = "OFF";
    if (bandwidth) {
      info["TX_depth"] = o_.tx_depth;
      if (o_.post_list > 1) info["Post_List"] = o_.post_list;
      info["CQ_Moderation"] = o_.cq_mod;
    }
    info["Mtu"] = p.mtu_bytes;
    info["Link_type"] = p.transport == Transport::kInfiniBand ? "IB" : "Ethernet";
    if (plan_.op == Operation::kRead) {
      info["Outstand_reads"] = ReadLimit(o_, plan_);
    } else {
      info["Max_inline_data"] = InlineMax(plan_, bandwidth ? "BW" : "Latency");
    }
    info["rdma_cm_QPs"] = "OFF";
    info["Data_ex_method"] = "Ethernet";
    return info;
  }

  nlohmann::ordered_json PerftestResults() const {
    if (results_.empty()) return nlohmann::ordered_json::object();
    const SizeResult& r = results_.back();
    if (r.bandwidth) {
      const BandwidthFigures& b = *r.bandwidth;
      auto bw = [&](double bytes_per_s) { return o_.report_gbits ? Gbits(bytes_per_s) : Mbytes(bytes_per_s); };
      return {{"MsgSize", r.bytes},
              {"n_iterations", b.iterations},
              {"BW_peak", Round(bw(b.bw_peak_bytes_per_s), 2)},
              {"BW_average", Round(bw(b.bw_avg_bytes_per_s), 2)},
              {"MsgRate", Round(b.msg_rate_mpps, 6)}};
    }
    if (r.latency) {
      const LatencyFigures& l = *r.latency;
      return {{"MsgSize", r.bytes},          {"n_iterations", l.iterations},    {"t_min", Round(l.t_min, 2)},
              {"t_max", Round(l.t_max, 2)},  {"t_typical", Round(l.t_typical, 2)}, {"t_avg", Round(l.t_avg, 2)},
              {"t_stdev", Round(l.t_stdev, 2)}, {"percentile_99", Round(l.p99, 2)}, {"percentile_99.9", Round(l.p99_9, 2)}};
    }
    return nlohmann::ordered_json::object();
  }

  // perftest prints its figures with a fixed number of decimals; its JSON carries the same.
  static double Round(double value, int decimals) {
    const double scale = std::pow(10.0, decimals);
    return std::round(value * scale) / scale;
  }

  nlohmann::json NdksimJson() const {
    nlohmann::json config = {
        {"op", OpName(plan_.op)},
        {"profile", plan_.profile.name},
        {"sizes", plan_.sizes},
        {"lat_iterations", plan_.latency ? plan_.lat_iterations : 0},
        {"bw_iterations", plan_.bandwidth ? plan_.bw_iterations : 0},
        {"qps", o_.qps},
        {"cores", o_.cores},
        {"post_list", o_.post_list},
        {"cq_mod", o_.cq_mod},
        {"events", o_.events},
        {"bidirectional", o_.bidirectional},
        {"duration_s", o_.duration ? nlohmann::json(*o_.duration) : nlohmann::json(nullptr)},
        {"tx_depth", o_.tx_depth},
        {"inline_size", plan_.inline_size},
        {"mtu_bytes", plan_.profile.mtu_bytes},
        {"ack_timeout_us", ToMicroseconds(plan_.profile.ack_timeout)},
        {"noise", plan_.profile.noise},
        {"seed", o_.seed},
        {"loss", o_.loss},
        {"report_gbits", o_.report_gbits},
        {"phases", o_.phases},
        {"peak", !o_.no_peak},
    };
    nlohmann::json results = nlohmann::json::array();
    for (const SizeResult& r : results_) {
      nlohmann::json entry = {{"bytes", r.bytes}};
      if (r.latency) {
        const LatencyFigures& l = *r.latency;
        entry["latency"] = {{"iterations", l.iterations}, {"t_min_us", l.t_min},   {"t_max_us", l.t_max},
                            {"t_typical_us", l.t_typical}, {"t_avg_us", l.t_avg},   {"t_stdev_us", l.t_stdev},
                            {"p99_us", l.p99},             {"p99_9_us", l.p99_9}};
      }
      if (r.bandwidth) {
        const BandwidthFigures& b = *r.bandwidth;
        entry["bandwidth"] = {{"iterations", b.iterations},
                              {"bw_peak_MBps", Mbytes(b.bw_peak_bytes_per_s)},
                              {"bw_avg_MBps", Mbytes(b.bw_avg_bytes_per_s)},
                              {"bw_peak_gbps", Gbits(b.bw_peak_bytes_per_s)},
                              {"bw_avg_gbps", Gbits(b.bw_avg_bytes_per_s)},
                              {"msg_rate_mpps", b.msg_rate_mpps},
                              {"elapsed_us", b.elapsed_us}};
      }
      if (o_.report_speed) {
        entry["sim_ops_per_wall_s"] = r.wall_seconds > 0 ? static_cast<double>(r.simulated_ops) / r.wall_seconds : 0.0;
      }
      results.push_back(std::move(entry));
    }
    const HardwareProfile& p = plan_.profile;
    return {{"tool", "ndksim-perf"},
            {"version", NDKSIM_VERSION_STRING},
            {"config", std::move(config)},
            {"profile",
             {{"name", p.name},
              {"transport", Name(p.transport)},
              {"link_gbps", static_cast<double>(p.link_rate.bits_per_second) / 1e9},
              {"mtu_bytes", p.mtu_bytes}}},
            {"results", std::move(results)}};
  }

  const Options& o_;
  const Plan& plan_;
  Progress progress_;
  std::vector<SizeResult> results_;
};

}  // namespace

// perftest's programs as entry points: `ndksim-perf write_bw ...`, or ndksim-perf installed under
// the name ndksim_write_bw (a link). Either runs that one test with perftest's default message size
// (65536 B for bandwidth, 2 B for latency). Returns the test's name, or empty.
std::string_view EntryPoint(int* argc, char** argv) {
  static constexpr std::array<std::string_view, 6> kTests = {"write_lat", "write_bw", "read_lat",
                                                             "read_bw",   "send_lat", "send_bw"};
  const auto known = [](std::string_view name) -> std::string_view {
    for (const std::string_view t : kTests) {
      if (name == t) return t;
    }
    return {};
  };
  std::string_view program = argv[0];
  if (const std::size_t slash = program.rfind('/'); slash != std::string_view::npos) program.remove_prefix(slash + 1);
  if (program.starts_with("ndksim_")) {
    if (const std::string_view t = known(program.substr(7)); !t.empty()) return t;
  }
  if (*argc > 1) {
    if (const std::string_view t = known(argv[1]); !t.empty()) {
      for (int i = 1; i + 1 < *argc; ++i) argv[i] = argv[i + 1];  // the rest are its options
      --*argc;
      return t;
    }
  }
  return {};
}

int main(int argc, char** argv) {
  Options o;
  const std::string_view entry = EntryPoint(&argc, argv);
  CLI::App app{
      "ndksim-perf: perftest's latency and bandwidth tests (ib_write/read/send_lat/bw) on the simulated RNIC.\n"
      "Times, bandwidths and rates are simulated; a line on stderr gives the simulator's own speed.\n"
      "perftest's programs: `ndksim-perf write_bw [options]` (or write_lat, read_bw, read_lat, send_bw,\n"
      "send_lat; installed also as ndksim_write_bw, ...) runs that one test with perftest's default size.",
      "ndksim-perf"};
  app.get_formatter()->column_width(34);
  app.set_version_flag("-V,--version", fmt::format("ndksim-perf {}", NDKSIM_VERSION_STRING));
  app.add_option("--op", o.op, "operation: write, read or send (perftest's ib_<op>_lat / ib_<op>_bw)")
      ->check(CLI::IsMember({"write", "read", "send"}))
      ->capture_default_str();
  app.add_option("--profile", o.profile,
                 fmt::format("the simulated device (hardware profile): {}", fmt::join(ProfileNames(), ", ")))
      ->check(CLI::IsMember(ProfileNames()))
      ->capture_default_str();
  // perftest's -d names the host's RDMA device (mlx5_0): a profile's name chooses that profile,
  // and any other device name runs the default one, with a note, so perftest's command line runs.
  std::string ib_dev;
  app.add_option("-d,--ib-dev", ib_dev,
                 "perftest's device: a profile's name chooses that profile (as --profile); another device name "
                 "(mlx5_0) runs the default profile, with a note on stderr");
  app.add_option("-s,--size", o.size,
                 fmt::format("message size in bytes, or with K, M or G (default: {})", fmt::join(kDefaultSizes, ", ")))
      ->transform(SizeWithSuffix())
      ->check(CLI::Range(0u, 1u << 31));
  app.add_flag("-a,--all", o.all_sizes, "every power of two from 2 B to 8 MiB (as perftest's -a)");
  app.add_option("--sweep", o.sweep, "sizes MIN, 2*MIN, 4*MIN, ... up to MAX bytes (MIN:MAX)");
  app.add_option("-n,--iters", o.iterations,
                 fmt::format("iterations: the latency test's messages, and the bandwidth test's messages per QP "
                             "(default {} and {}, as perftest)",
                             kDefaultLatencyIterations, kDefaultBandwidthIterations))
      ->check(CLI::Range(1, 100'000'000));
  app.add_option("-q,--qp,--qps", o.qps, "QPs (connections) the bandwidth test uses round robin")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--cores", o.cores,
                 "host cores that post in the bandwidth test: QP q posts from core q mod N (ndksim's own; "
                 "perftest posts from one thread)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("-l,--post_list,--post-list", o.post_list, "requests per doorbell (NDK_OP_FLAG_DEFER chains)")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("-Q,--cq-mod,--signal-every", o.cq_mod, "one signaled request in N (bandwidth test; perftest's default)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("-t,--tx-depth,--window", o.tx_depth, "requests in flight per QP (bandwidth test)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("-I,--inline_size,--inline-size", o.inline_size,
                 "post payloads up to N bytes inline (default, as perftest: in the latency test up to 220 B for "
                 "writes and 236 B for sends, none in the bandwidth test; reads carry no payload)")
      ->check(CLI::Range(0LL, 1LL << 20));
  app.add_flag("--inline", o.inline_all, "post every payload inline that the profile allows");
  app.add_option("-m,--mtu", o.mtu, "path MTU in bytes: 256, 512, 1024, 2048 or 4096 (default: the profile's)");
  app.add_option("-u,--qp-timeout", o.qp_timeout,
                 "QP timeout exponent, as perftest: the ACK timeout is 4.096 us x 2^N (default: the profile's; "
                 "the presets use 14, 67.1 ms)")
      ->check(CLI::Range(0u, 31u));
  app.add_flag("--no-noise", o.no_noise,
               "the profile without its noise (PCIe latency spread, host core interruptions): the same work "
               "always takes the same time");
  app.add_option("-c,--connection", o.connection, "transport service: RC (NDK connections are RC)")
      ->capture_default_str();
  app.add_option("--phases", o.phases, "which tests run: lat, bw or both")
      ->check(CLI::IsMember({"lat", "bw", "both"}))
      ->capture_default_str();
  app.add_flag("--report_gbits,--report-gbits", o.report_gbits, "bandwidth in Gb/sec instead of MiB/sec (2^20 B/s)");
  app.add_flag("-N,--noPeak,--no-peak", o.no_peak, "do not compute the peak bandwidth");
  app.add_option("--seed", o.seed, "the fabric's seed")->capture_default_str();
  app.add_option("--loss", o.loss,
                 "the wire loses each packet with probability P (a seeded fault rule); retransmissions show in "
                 "latency tails and bandwidth")
      ->check(CLI::Range(0.0, 0.5));
  app.add_flag("--out_json", o.out_json,
               "write the report as JSON, as perftest does (its test_info and results, and every figure of every "
               "size under \"ndksim\"), to perftest_out.json or --out_json_file");
  app.add_option("--out_json_file", o.json_path, "the file --out_json writes (implies --out_json)")
      ->check(NotAnOption())
      ->capture_default_str();
  app.add_flag("--report_speed,--report-speed", o.report_speed,
               "also put the simulator's speed (simulated operations per wall-clock second) into the JSON; "
               "without it, the same command writes the same file every time");
  app.add_option("server", o.server,
                 "perftest's server address (its client's last argument); ignored: both sides run in this process");
  app.add_option("--trace", o.trace_path,
                 "write the request trace of the last size (bandwidth test, else latency) for Perfetto to FILE")
      ->check(NotAnOption());
  app.add_flag("--log", o.log, "every block's trace lines of the last size's last test on stderr (long)");
  app.add_flag("--no-progress", o.no_progress, "no progress bar on stderr");
  app.add_flag("--dry-run", o.dry_run, "check the arguments and the configuration of every size, run nothing");
  app.add_flag("-b,--bidirectional", o.bidirectional,
               "both sides stream at once, as perftest's -b: the bandwidth and message rate are both directions' "
               "(bandwidth test)");
  app.add_flag("--report-both", o.report_both,
               "with -b, also each direction's figures: the local side's (a to b) and the remote side's (b to a)");
  app.add_option("-o,--outs", o.outstanding_reads,
                 "reads each QP may have outstanding (its ORD and IRD; default and most: the profile's, 16 on the "
                 "presets)")
      ->check(CLI::Range(1, 65535));
  app.add_option("-D,--duration", o.duration,
                 "run each test for this many seconds of simulated time instead of -n iterations, and measure "
                 "the middle half, as perftest's -D")
      ->check(CLI::Range(1e-6, 60.0));
  app.add_flag("-e,--events", o.events,
               "wait for completions by arming the CQ and taking its notification (the interrupt path), as "
               "perftest's -e; not for the write latency test, which polls memory");
  // perftest options that mean nothing on a simulated RNIC: taken, so that a perftest command line
  // runs as it is, and reported as ignored.
  bool ignored_f = false;
  bool ignored_r = false;
  bool ignored_z = false;
  int ignored_gid = 0;
  int ignored_port = 0;
  int ignored_tcp_port = 0;
  int ignored_sl = 0;
  int ignored_tos = 0;
  int ignored_rx_depth = 0;
  struct Ignored {
    const CLI::Option* option;
    const char* name;
    const char* why;
  };
  const Ignored ignored[] = {
      {app.add_flag("-F,--CPU-freq", ignored_f, "perftest's; ignored: no CPU frequency to check here"), "-F",
       "no CPU frequency to check here"},
      {app.add_flag("-R,--rdma_cm", ignored_r, "perftest's; ignored: NDK connects through its own interface"), "-R",
       "NDK connects through its own interface"},
      {app.add_option("-x,--gid-index", ignored_gid, "perftest's; ignored: the simulated port has one address"), "-x",
       "the simulated port has one address"},
      {app.add_option("-i,--ib-port", ignored_port, "perftest's; ignored: the simulated RNIC has one port"), "-i",
       "the simulated RNIC has one port"},
      {app.add_option("-p,--port", ignored_tcp_port,
                      "perftest's; ignored: no TCP exchange, both sides run in this process"),
       "-p", "no TCP exchange, both sides run in this process"},
      {app.add_option("-S,--sl", ignored_sl, "perftest's; ignored: the simulated fabric has one service level"), "-S",
       "the simulated fabric has one service level"},
      {app.add_option("-T,--tos", ignored_tos, "perftest's; ignored: the simulated fabric has one traffic class"),
       "-T", "the simulated fabric has one traffic class"},
      {app.add_option("-r,--rx-depth", ignored_rx_depth,
                      "perftest's; ignored: the receive queues are kept full, their depth following -t"),
       "-r", "the receive queues are kept full, their depth following -t"},
      {app.add_flag("-z,--comm_rdma_cm", ignored_z, "perftest's; ignored: no out-of-band exchange here"), "-z",
       "no out-of-band exchange here"},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end here too (exit 0); every usage error exits 2, as the refused
    // configurations below do, with CLI11's message naming the option.
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (const Ignored& i : ignored) {
    if (i.option->count() > 0) std::fprintf(stderr, "ndksim-perf: %s ignored: %s\n", i.name, i.why);
  }
  if (!ib_dev.empty()) {
    if (FindProfile(ib_dev) != nullptr) {
      if (app.get_option("--profile")->count() > 0 && ib_dev != o.profile) {
        std::fprintf(stderr, "ndksim-perf: -d %s and --profile %s name two devices: give one\n", ib_dev.c_str(),
                     o.profile.c_str());
        return 2;
      }
      o.profile = ib_dev;
    } else {
      std::fprintf(stderr, "ndksim-perf: device %s is not a simulated profile: %s runs (--profile: %s)\n",
                   ib_dev.c_str(), o.profile.c_str(), fmt::format("{}", fmt::join(ProfileNames(), ", ")).c_str());
    }
  }
  if (!o.server.empty()) {
    std::fprintf(stderr, "ndksim-perf: server %s ignored: both sides run in this process\n", o.server.c_str());
  }
  if (app.get_option("--out_json_file")->count() > 0) o.out_json = true;
  if (o.report_both && !o.bidirectional) std::fprintf(stderr, "ndksim-perf: --report-both ignored: it is for -b\n");
  if (!entry.empty()) {
    const std::size_t underscore = entry.find('_');
    const bool bandwidth = entry.substr(underscore + 1) == "bw";
    if (app.get_option("--op")->count() > 0 || app.get_option("--phases")->count() > 0) {
      std::fprintf(stderr, "ndksim-perf: %s runs one test: --op and --phases are not for it\n",
                   std::string(entry).c_str());
      return 2;
    }
    o.op = std::string(entry.substr(0, underscore));
    o.phases = bandwidth ? "bw" : "lat";
    if (!o.size && !o.all_sizes && o.sweep.empty()) o.size = bandwidth ? 65536u : 2u;  // perftest's default
  }

  try {
    const Plan plan = MakePlan(o);
    if (o.dry_run) {
      for (const ULONG size : plan.sizes) Workload::Validate(ConfigFor(o, plan, size));
      std::printf("ndksim-perf: %s on %s, %zu size(s): the configuration is valid\n", OpName(plan.op).data(),
                  std::string(plan.profile.name).c_str(), plan.sizes.size());
      return 0;
    }
    auto trace = OpenOutput(o.trace_path, "--trace");
    auto json = o.out_json ? OpenOutput(o.json_path, "--out_json_file") : nullptr;
    Run run(o, plan);
    return run.Execute(trace.get(), json.get());
  } catch (const BadArguments& e) {
    std::fprintf(stderr, "ndksim-perf: %s\nRun with --help for more information.\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ndksim-perf: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ndksim-perf: %s\n", e.what());
    return 1;
  }
}
