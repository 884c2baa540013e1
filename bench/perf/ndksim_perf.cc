// SPDX-License-Identifier: MIT
// ndksim-perf: a perftest-like measurement of the simulated RNIC. For each message size it runs a
// latency phase (one message in flight: ping-pong for send and write, post-to-completion for
// read) and a bandwidth phase (a window of messages in flight, optional post lists and selective
// signaling), and prints simulated latency, bandwidth and message rate, plus the simulator's own
// speed in simulated operations per wall-clock second.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ndksim/workload.h"

namespace {

using namespace ndksim;

using Op = Operation;

struct Options {
  Op op = Op::kWrite;
  std::vector<ULONG> sizes = {2, 8, 64, 512, 4096, 65536};
  int iterations = 10000;
  int qps = 1;
  int post_list = 1;        // requests per doorbell (NDK_OP_FLAG_DEFER on all but the last)
  int signal_every = 16;    // one signaled request in N (bandwidth phase)
  int window = 128;         // requests in flight per QP (bandwidth phase)
  // Messages up to this many bytes are posted inline; -1: perftest's defaults (up to 236 B in the
  // latency phase, none in the bandwidth phase).
  long long inline_size = -1;
  bool log = false;         // per-block trace lines of the last size's bandwidth phase on stderr
  std::string profile = "connectx-100g-roce";
  std::uint64_t seed = 1;
  bool progress = true;
  std::string trace_path;   // Chrome trace of the bandwidth phase of the last size
  double loss = 0;          // probability that the wire loses a packet (a seeded fault rule)
};

const HardwareProfile* FindProfile(std::string_view name) {
  for (const HardwareProfile* p : {&profiles::kConnectX100GbeRoce, &profiles::kIWarp, &profiles::kFunctional}) {
    if (p->name == name) return p;
  }
  return nullptr;
}

void Usage() {
  std::fprintf(stderr,
               "usage: ndksim-perf [options]\n"
               "  --op write|read|send      operation (default write)\n"
               "  --size N                  one message size in bytes\n"
               "  --sweep MIN:MAX           powers of two from MIN to MAX bytes\n"
               "  --iters N                 messages per phase (default 10000)\n"
               "  --qps N                   connections used round robin (default 1)\n"
               "  --post-list N             requests per doorbell (default 1)\n"
               "  --signal-every N          one signaled request in N (default 16)\n"
               "  --window N                requests in flight per QP (default 128)\n"
               "  --inline                  post every payload inline that the profile allows (write, send)\n"
               "  --inline-size N           post payloads up to N bytes inline (default: up to 236 B in\n"
               "                            the latency phase, none in the bandwidth phase, as perftest)\n"
               "  --profile NAME            connectx-100g-roce (default), iwarp or functional\n"
               "  --seed N                  fabric seed (default 1)\n"
               "  --loss P                  the wire loses each packet with probability P (0..0.5), a seeded\n"
               "                            fault rule: retransmissions show in latency tails and bandwidth;\n"
               "                            heavy loss can exhaust the retry count (IO_TIMEOUT ends the run)\n"
               "  --trace FILE              write a Chrome trace (Perfetto) of the last size's bandwidth phase\n"
               "  --log                     every block's trace lines for the last size's bandwidth phase\n"
               "                            on stderr (long)\n"
               "  --no-progress             no progress lines on stderr\n");
}

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto number = [&](long long lo, long long hi, long long* out) {
      const char* v = value();
      if (v == nullptr) return false;
      char* end = nullptr;
      const long long n = std::strtoll(v, &end, 10);
      if (*end != '\0' || n < lo || n > hi) return false;
      *out = n;
      return true;
    };
    long long n = 0;
    if (a == "--help" || a == "-h") {
      Usage();
      std::exit(0);
    }
    if (a == "--op") {
      const char* v = value();
      if (v == nullptr) return false;
      const std::string_view op = v;
      if (op == "write") o->op = Op::kWrite;
      else if (op == "read") o->op = Op::kRead;
      else if (op == "send") o->op = Op::kSend;
      else return false;
    } else if (a == "--size") {
      if (!number(0, 1 << 30, &n)) return false;
      o->sizes = {static_cast<ULONG>(n)};
    } else if (a == "--sweep") {
      const char* v = value();
      unsigned long lo = 0;
      unsigned long hi = 0;
      if (v == nullptr || std::sscanf(v, "%lu:%lu", &lo, &hi) != 2 || lo == 0 || hi < lo || hi > (1ul << 30)) return false;
      o->sizes.clear();
      for (unsigned long s = lo; s <= hi; s *= 2) o->sizes.push_back(static_cast<ULONG>(s));
    } else if (a == "--iters") {
      if (!number(1, 100'000'000, &n)) return false;
      o->iterations = static_cast<int>(n);
    } else if (a == "--qps") {
      if (!number(1, 1024, &n)) return false;
      o->qps = static_cast<int>(n);
    } else if (a == "--post-list") {
      if (!number(1, 1024, &n)) return false;
      o->post_list = static_cast<int>(n);
    } else if (a == "--signal-every") {
      if (!number(1, 1 << 20, &n)) return false;
      o->signal_every = static_cast<int>(n);
    } else if (a == "--window") {
      if (!number(1, 16384, &n)) return false;
      o->window = static_cast<int>(n);
    } else if (a == "--inline") {
      o->inline_size = 1 << 20;  // capped by the profile's maximum below
    } else if (a == "--profile") {
      const char* v = value();
      if (v == nullptr || FindProfile(v) == nullptr) return false;
      o->profile = v;
    } else if (a == "--seed") {
      if (!number(0, (1ll << 62), &n)) return false;
      o->seed = static_cast<std::uint64_t>(n);
    } else if (a == "--trace") {
      const char* v = value();
      if (v == nullptr) return false;
      o->trace_path = v;
    } else if (a == "--inline-size") {
      if (!number(0, 1 << 20, &n)) return false;
      o->inline_size = n;
    } else if (a == "--loss") {
      const char* v = value();
      if (v == nullptr) return false;
      char* end = nullptr;
      const double p = std::strtod(v, &end);
      if (*end != '\0' || !(p >= 0 && p <= 0.5)) return false;
      o->loss = p;
    } else if (a == "--log") {
      o->log = true;
    } else if (a == "--no-progress") {
      o->progress = false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o)) {
    Usage();
    return 2;
  }
  const char* op_name = o.op == Op::kWrite ? "write" : o.op == Op::kRead ? "read" : "send";
  // What is posted inline: perftest's defaults, or the asked size capped by the profile's maximum.
  const long long max_inline = FindProfile(o.profile)->max_inline_bytes;
  const std::string inline_note =
      o.inline_size < 0 ? fmt::format(", inline up to {} B in the latency phase", std::min(Workload::kLatencyInlineDefault, max_inline))
                        : fmt::format(", inline up to {} B", std::min(o.inline_size, max_inline));
  const std::string loss_note = o.loss > 0 ? fmt::format(", packet loss {}", o.loss) : "";
  std::printf("ndksim-perf: op %s, profile %s, %d iterations, %d QP(s), post list %d, signal every %d, window %d%s%s\n",
              op_name, o.profile.c_str(), o.iterations, o.qps, o.post_list, o.signal_every, o.window,
              o.op == Op::kRead ? "" : inline_note.c_str(), loss_note.c_str());
  std::printf("%10s %12s %12s %12s %12s %12s %16s\n", "bytes", "lat min us", "lat med us", "lat p99 us", "BW Gb/s",
              "rate Mpps", "sim ops/wall-s");
  for (const ULONG size : o.sizes) {
    if (o.op == Op::kWrite && size == 0) {
      std::fprintf(stderr, "ndksim-perf: write latency needs at least 1 byte; skipping size 0\n");
      continue;
    }
    const auto wall0 = std::chrono::steady_clock::now();
    WorkloadConfig c;
    c.fabric.profile = *FindProfile(o.profile);
    c.fabric.seed = o.seed;
    c.op = o.op;
    c.bytes = size;
    c.qps = o.qps;
    c.window = static_cast<std::size_t>(std::max(o.window, o.post_list));
    c.post_list = static_cast<std::size_t>(o.post_list);
    c.signal_every = static_cast<std::size_t>(o.signal_every);
    c.inline_size = o.inline_size;
    try {
      Workload w(c);
      if (o.loss > 0) {
        FaultRule loss;  // every packet, both ways, once connected
        loss.action = FaultAction::kDrop;
        loss.count = kEveryTime;
        loss.probability = o.loss;
        w.fabric().AddFault(loss);
      }
      const int lat_iters = std::min(o.iterations, 2000);
      std::vector<double> lat = w.Latency(lat_iters);
      std::sort(lat.begin(), lat.end());
      const bool last_size = size == o.sizes.back();
      const bool trace = !o.trace_path.empty() && last_size;
      if (trace) w.fabric().Trace().Requests().Enable();
      if (o.log && last_size) {
        w.fabric().Trace().SetSink(
            [](std::string_view line) { std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data()); });
        w.fabric().Trace().EnableAll();
      }
      auto last_report = std::chrono::steady_clock::now();
      // Long runs report how far they are, at most once per wall-clock second, on stderr.
      const auto progress = [&](std::size_t done, std::size_t total) {
        const auto now = std::chrono::steady_clock::now();
        if (!o.progress || now - last_report < std::chrono::seconds(1)) return;
        last_report = now;
        std::fprintf(stderr, "  %u B: %zu of %zu messages\n", size, done, total);
      };
      const auto messages = static_cast<std::size_t>(o.iterations);
      const Duration elapsed = w.Stream(messages, progress);
      if (trace) {
        std::ofstream out(o.trace_path);
        w.fabric().Trace().Requests().WriteChromeTrace(out);
        if (!out) {
          std::fprintf(stderr, "ndksim-perf: cannot write %s\n", o.trace_path.c_str());
          return 1;
        }
      }
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      const double p99 = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
      std::printf("%10u %12.3f %12.3f %12.3f %12.2f %12.3f %16.0f\n", size, lat.front() / 1000,
                  lat[lat.size() / 2] / 1000, p99 / 1000, w.Gbps(messages, elapsed), Workload::Mpps(messages, elapsed),
                  (o.iterations + lat_iters) / wall);
      std::fflush(stdout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ndksim-perf: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}
