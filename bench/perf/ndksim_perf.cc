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

#include "ndksim/harness.h"

namespace {

using namespace ndksim;

enum class Op { kWrite, kRead, kSend };

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

struct Row {
  ULONG size = 0;
  double lat_min_us = 0;
  double lat_median_us = 0;
  double lat_p99_us = 0;
  double gbps = 0;
  double mpps = 0;
  double sim_ops_per_wall_s = 0;
};

// Receives each side keeps posted ahead in the send latency phase (ib_send_lat's rx depth).
constexpr std::size_t kReceiveDepth = 16;

// The bench: a connected pair with `qps` connections and registered buffers on both sides.
class Bench {
 public:
  Bench(const Options& o, ULONG size) : o_(o), size_(size) {
    QpPairConfig c;
    c.fabric.profile = *FindProfile(o.profile);
    c.fabric.seed = o.seed;
    c.initiator_queue_depth = static_cast<ULONG>(std::max(o.window, o.post_list) + 1);
    // The bandwidth phase keeps a window of receives posted on top of the latency phase's depth.
    c.receive_queue_depth = static_cast<ULONG>(std::max(o.window, 16) + kReceiveDepth + 1);
    c.cq_depth = 4 * (c.initiator_queue_depth + c.receive_queue_depth) * static_cast<ULONG>(o.qps);
    // Room for inline data only where this size may be posted inline (it makes WQEs larger).
    max_inline_ = c.fabric.profile.max_inline_bytes;
    const long long inline_limit = std::min(o.inline_size >= 0 ? o.inline_size : 236, max_inline_);
    c.inline_data_size = o.op != Op::kRead && size <= inline_limit ? size : 0;
    pair_ = std::make_unique<QpPair>(c);
    qa_.push_back(pair_->a().qp);
    qb_.push_back(pair_->b().qp);
    for (int i = 1; i < o.qps; ++i) {
      const auto extra = pair_->AddConnectedQps();
      qa_.push_back(extra.a);
      qb_.push_back(extra.b);
    }
    const std::size_t bytes = std::max<std::size_t>(size, 1);
    a_buf_ = pair_->a().Register(bytes);
    b_buf_ = pair_->b().Register(bytes);
    a_rx_ = pair_->a().Register(bytes);
  }

  Fabric& fabric() { return pair_->fabric(); }

  // One message in flight; returns samples in simulated nanoseconds.
  std::vector<double> Latency(int iterations) {
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(iterations));
    if (o_.op == Op::kSend) {
      // As ib_send_lat does: both sides keep receives posted ahead and re-post one per message.
      for (std::size_t k = 0; k < kReceiveDepth; ++k) {
        PostReceive(pair_->a(), *a_rx_);
        PostReceive(pair_->b(), *b_buf_);
      }
    }
    for (int i = 0; i < iterations; ++i) samples.push_back(o_.op == Op::kRead ? ReadOnce() : PingPongOnce(i));
    return samples;
  }

  // A window of messages in flight on every QP; returns simulated seconds for `iterations` messages.
  double Bandwidth(int iterations);

 private:
  ULONG InlineFlag() const {
    const long long limit = std::min(o_.inline_size >= 0 ? o_.inline_size : (bandwidth_phase_ ? 0 : 236), max_inline_);
    return o_.op != Op::kRead && size_ <= limit ? NDK_OP_FLAG_INLINE : 0;
  }
  bool bandwidth_phase_ = false;
  long long max_inline_ = 0;

  double ReadOnce() {
    const NDK_SGE sge = a_rx_->Sge(0, size_);
    const TimePoint t0 = fabric().Now();
    Check(pair_->a().Read(nullptr, {&sge, size_ ? 1u : 0u}, b_buf_->Address(), b_buf_->RemoteToken()));
    Wait(pair_->a().initiator_cq, 1);
    return ToNanoseconds(fabric().Now() - t0);
  }

  // perftest style: a -> b, b -> a; half the round trip is the one-way latency.
  double PingPongOnce(int i) {
    const TimePoint t0 = fabric().Now();
    if (o_.op == Op::kSend) {
      const NDK_SGE sa = a_buf_->Sge(0, size_);
      Check(pair_->a().Send(nullptr, {&sa, size_ ? 1u : 0u}, InlineFlag()));
      Wait(pair_->b().receive_cq, 1);
      PostReceive(pair_->b(), *b_buf_);
      const NDK_SGE sb = b_buf_->Sge(0, size_);
      Check(pair_->b().Send(nullptr, {&sb, size_ ? 1u : 0u}, InlineFlag()));
      Wait(pair_->a().receive_cq, 1);
      PostReceive(pair_->a(), *a_rx_);
    } else {
      // Each side polls the last byte of its buffer for the new pattern, as ib_write_lat does.
      const auto pattern = static_cast<std::byte>(1 + i % 255);
      a_buf_->Data()[size_ - 1] = pattern;
      const NDK_SGE sa = a_buf_->Sge(0, size_);
      Check(pair_->a().Write(nullptr, {&sa, 1}, b_buf_->Address(), b_buf_->RemoteToken(), InlineFlag()));
      fabric().RunUntil([&] { return b_buf_->Data()[size_ - 1] == pattern; });
      const NDK_SGE sb = b_buf_->Sge(0, size_);
      Check(pair_->b().Write(nullptr, {&sb, 1}, a_rx_->Address(), a_rx_->RemoteToken(), InlineFlag()));
      fabric().RunUntil([&] { return a_rx_->Data()[size_ - 1] == pattern; });
    }
    const double one_way = ToNanoseconds(fabric().Now() - t0) / 2;
    // Reap the write completions that have arrived (the measurement polled memory, not the CQ), so
    // the send queues' slots are retired.
    std::vector<NDK_RESULT_EX> reaped;
    QpEnd::Poll(pair_->a().initiator_cq, reaped);
    QpEnd::Poll(pair_->b().initiator_cq, reaped);
    return one_way;
  }

  void PostReceive(QpEnd& end, const RegisteredBuffer& buffer) {
    const NDK_SGE sge = buffer.Sge(0, size_);
    Check(end.Receive(nullptr, {&sge, size_ ? 1u : 0u}));
  }

  void Wait(NDK_CQ* cq, std::size_t n) {
    const auto r = pair_->Collect(cq, n, Milliseconds(1000));
    if (r.size() != n || r[0].Status != STATUS_SUCCESS) {
      std::fprintf(stderr, "ndksim-perf: request failed (status %#x)\n", r.empty() ? 0u : static_cast<unsigned>(r[0].Status));
      std::exit(1);
    }
  }

  static void Check(NTSTATUS s) {
    if (s != STATUS_SUCCESS) {
      std::fprintf(stderr, "ndksim-perf: posting failed with NTSTATUS %#x\n", static_cast<unsigned>(s));
      std::exit(1);
    }
  }

  const Options& o_;
  ULONG size_;
  std::unique_ptr<QpPair> pair_;
  std::vector<NDK_QP*> qa_;
  std::vector<NDK_QP*> qb_;
  std::unique_ptr<RegisteredBuffer> a_buf_;
  std::unique_ptr<RegisteredBuffer> b_buf_;
  std::unique_ptr<RegisteredBuffer> a_rx_;
  std::size_t rx_cursor_ = 0;
  std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();

  // Long runs report how far they are, at most once per wall-clock second, on stderr.
  void ReportProgress(std::size_t done, std::size_t total) {
    if (!o_.progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress_ < std::chrono::seconds(1)) return;
    last_progress_ = now;
    std::fprintf(stderr, "  %u B: %zu of %zu messages\n", size_, done, total);
  }
};

// RequestContext of a signaled request: which QP, and how many requests it retires.
void* Tag(std::size_t qp, std::size_t count) { return reinterpret_cast<void*>((qp << 32) | count); }
std::size_t TagQp(void* tag) { return reinterpret_cast<std::uintptr_t>(tag) >> 32; }
std::size_t TagCount(void* tag) { return reinterpret_cast<std::uintptr_t>(tag) & 0xffffffffu; }

double Bench::Bandwidth(int iterations) {
  bandwidth_phase_ = true;
  const std::size_t nqp = qa_.size();
  const auto window = static_cast<std::size_t>(o_.window);
  const auto chain = static_cast<std::size_t>(o_.post_list);
  const auto signal_every = static_cast<std::size_t>(o_.signal_every);
  std::vector<std::size_t> outstanding(nqp, 0);
  std::vector<std::size_t> unsignaled(nqp, 0);
  std::vector<NDK_RESULT> results(64);
  const NDK_SGE local = o_.op == Op::kRead ? a_rx_->Sge(0, size_) : a_buf_->Sge(0, size_);
  const NDK_SGE remote_rx = b_buf_->Sge(0, size_);
  const ULONG nsge = size_ ? 1u : 0u;
  // Sends need receives: keep every receive queue of b full, re-posting as they complete.
  if (o_.op == Op::kSend) {
    for (NDK_QP* q : qb_) {
      for (int k = 0; k < std::max(o_.window, 16); ++k) Check(q->Dispatch->NdkReceive(q, nullptr, &remote_rx, nsge));
    }
  }
  std::size_t posted = 0;
  std::size_t completed = 0;
  std::size_t next_qp = 0;
  const auto total = static_cast<std::size_t>(iterations);
  const TimePoint start = fabric().Now();
  while (completed < total) {
    // Post whole chains while the chosen QP has room in its window.
    bool progress = false;
    for (std::size_t tries = 0; tries < nqp && posted < total; ++tries) {
      const std::size_t q = next_qp;
      next_qp = (next_qp + 1) % nqp;
      const std::size_t n = std::min(chain, total - posted);
      if (outstanding[q] + n > window) continue;
      for (std::size_t k = 0; k < n; ++k) {
        ++unsignaled[q];
        const bool last_overall = posted + k + 1 == total;
        const bool signal = unsignaled[q] >= signal_every || last_overall || outstanding[q] + k + 1 == window;
        ULONG flags = InlineFlag();
        if (k + 1 < n) flags |= NDK_OP_FLAG_DEFER;
        void* ctx = nullptr;
        if (signal) {
          ctx = Tag(q, unsignaled[q]);
          unsignaled[q] = 0;
        } else {
          flags |= NDK_OP_FLAG_SILENT_SUCCESS;
        }
        NDK_QP* qp = qa_[q];
        switch (o_.op) {
          case Op::kWrite:
            Check(qp->Dispatch->NdkWrite(qp, ctx, &local, nsge, b_buf_->Address(), b_buf_->RemoteToken(), flags));
            break;
          case Op::kRead:
            Check(qp->Dispatch->NdkRead(qp, ctx, &local, nsge, b_buf_->Address(), b_buf_->RemoteToken(), flags));
            break;
          case Op::kSend:
            Check(qp->Dispatch->NdkSend(qp, ctx, &local, nsge, flags));
            break;
        }
      }
      outstanding[q] += n;
      posted += n;
      progress = true;
    }
    if (progress) continue;
    // Nothing could be posted: run the simulation until some completion arrives.
    ULONG got = 0;
    fabric().RunUntil(
        [&] {
          got = pair_->a().initiator_cq->Dispatch->NdkGetCqResults(pair_->a().initiator_cq, results.data(), 64);
          return got > 0;
        },
        Milliseconds(1000));
    if (got == 0) {
      std::fprintf(stderr, "ndksim-perf: no completion within 1 ms of simulated time\n");
      std::exit(1);
    }
    for (ULONG i = 0; i < got; ++i) {
      if (results[i].Status != STATUS_SUCCESS) {
        std::fprintf(stderr, "ndksim-perf: request failed with NTSTATUS %#x\n", static_cast<unsigned>(results[i].Status));
        std::exit(1);
      }
      const std::size_t q = TagQp(results[i].RequestContext);
      const std::size_t count = TagCount(results[i].RequestContext);
      outstanding[q] -= count;
      completed += count;
    }
    ReportProgress(completed, total);
    if (o_.op == Op::kSend) {
      // Replenish b's receives for what was consumed.
      NDK_RESULT rx[64];
      ULONG n;
      while ((n = pair_->b().receive_cq->Dispatch->NdkGetCqResults(pair_->b().receive_cq, rx, 64)) > 0) {
        for (ULONG i = 0; i < n; ++i) {
          // QPContext is the side's QpEnd for every QP; find the QP by trying in order is not
          // possible, so receives are re-posted round robin, which keeps every queue's count.
          NDK_QP* q = qb_[(rx_cursor_++) % qb_.size()];
          Check(q->Dispatch->NdkReceive(q, nullptr, &remote_rx, nsge));
        }
      }
    }
  }
  return ToNanoseconds(fabric().Now() - start) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o)) {
    Usage();
    return 2;
  }
  if (o.op == Op::kSend && o.qps > 1) {
    std::fprintf(stderr, "ndksim-perf: --op send supports one QP\n");
    return 2;
  }
  const char* op_name = o.op == Op::kWrite ? "write" : o.op == Op::kRead ? "read" : "send";
  std::printf("ndksim-perf: op %s, profile %s, %d iterations, %d QP(s), post list %d, signal every %d, window %d%s\n",
              op_name, o.profile.c_str(), o.iterations, o.qps, o.post_list, o.signal_every, o.window,
              o.inline_size < 0 ? "" : fmt::format(", inline up to {} B", o.inline_size).c_str());
  std::printf("%10s %12s %12s %12s %12s %12s %16s\n", "bytes", "lat min us", "lat med us", "lat p99 us", "BW Gb/s",
              "rate Mpps", "sim ops/wall-s");
  for (const ULONG size : o.sizes) {
    if (o.op == Op::kWrite && size == 0) {
      std::fprintf(stderr, "ndksim-perf: write latency needs at least 1 byte; skipping size 0\n");
      continue;
    }
    const auto wall0 = std::chrono::steady_clock::now();
    Bench bench(o, size);
    const int lat_iters = std::min(o.iterations, 2000);
    std::vector<double> lat = bench.Latency(lat_iters);
    std::sort(lat.begin(), lat.end());
    const bool trace = !o.trace_path.empty() && size == o.sizes.back();
    if (trace) bench.fabric().Trace().Requests().Enable();
    if (o.log && size == o.sizes.back()) {
      bench.fabric().Trace().SetSink([](std::string_view line) { std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data()); });
      bench.fabric().Trace().EnableAll();
    }
    const double seconds = bench.Bandwidth(o.iterations);
    if (trace) {
      std::ofstream out(o.trace_path);
      bench.fabric().Trace().Requests().WriteChromeTrace(out);
      if (!out) {
        std::fprintf(stderr, "ndksim-perf: cannot write %s\n", o.trace_path.c_str());
        return 1;
      }
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    Row r;
    r.size = size;
    r.lat_min_us = lat.front() / 1000;
    r.lat_median_us = lat[lat.size() / 2] / 1000;
    r.lat_p99_us = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)] / 1000;
    r.mpps = o.iterations / seconds / 1e6;
    r.gbps = static_cast<double>(o.iterations) * size * 8 / seconds / 1e9;
    r.sim_ops_per_wall_s = (o.iterations + lat_iters) / wall;
    std::printf("%10u %12.3f %12.3f %12.3f %12.2f %12.3f %16.0f\n", r.size, r.lat_min_us, r.lat_median_us,
                r.lat_p99_us, r.gbps, r.mpps, r.sim_ops_per_wall_s);
    std::fflush(stdout);
  }
  return 0;
}
