// SPDX-License-Identifier: MIT
/// @file
/// Perftest-style workloads on a connected pair: one message in flight (latency) and a stream with a
/// window of messages in flight (post lists, selective signaling, several QPs). ndksim-perf, the
/// calibration tests and the benchmarks measure through this one implementation; a test of your own
/// can use it the same way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ndksim/harness.h"
#include "ndksim/host_cpu.h"

namespace ndksim {

/// The operation a workload (or a swarm) measures.
enum class Operation : std::uint8_t {
  kWrite,  ///< RDMA write (NdkWrite)
  kRead,   ///< RDMA read (NdkRead)
  kSend    ///< send (NdkSend), into a receive the peer posted
};

/// What a Workload runs: the fabric, the operation and its size, and how a stream posts.
struct WorkloadConfig {
  FabricConfig fabric;             ///< profile and seed
  Operation op = Operation::kWrite;  ///< the operation measured
  ULONG bytes = 8;                 ///< message size
  int qps = 1;                     ///< connections, used round robin when streaming
  std::size_t window = 128;        ///< requests in flight per QP when streaming
  std::size_t post_list = 1;       ///< requests per doorbell (NDK_OP_FLAG_DEFER on all but the last)
  std::size_t signal_every = 16;   ///< one signaled request in N when streaming
  /// Cores of node a that post when streaming (include/ndksim/host_cpu.h): QP q posts from core
  /// q mod cores, and completions are polled on core 0. Each phase runs on core 0 otherwise.
  int cores = 1;
  /// Messages up to this many bytes are posted inline (capped by the profile's maximum); -1 means
  /// perftest's defaults: in the latency phase up to 220 B for writes and 236 B for sends, nothing
  /// inline when streaming.
  long long inline_size = -1;
  /// Wait for completions as perftest's -e does: arm the CQ (NdkArmCq) and take its notification,
  /// the interrupt path, rather than polling; the latency of send and read, and streams.
  bool events = false;
};

/// A perftest-style workload on a connected QpPair: Latency keeps one message in flight, Stream a
/// window of them.
class Workload {
 public:
  /// Receives each side keeps posted ahead for send latency (ib_send_lat's receive depth).
  static constexpr std::size_t kReceiveDepth = 16;
  /// @name Latency inline defaults

  /// perftest's inline defaults of its latency tests (ib_write_lat, ib_send_lat over RC).
  ///@{
  static constexpr long long kLatencyInlineWrite = 220;
  static constexpr long long kLatencyInlineSend = 236;
  ///@}
  /// The inline default of `op`'s latency test: 0 for a read, whose request carries no payload.
  static constexpr long long LatencyInlineDefault(Operation op) {
    switch (op) {
      case Operation::kWrite: return kLatencyInlineWrite;
      case Operation::kSend: return kLatencyInlineSend;
      case Operation::kRead: return 0;  // a read request carries no payload
    }
    return 0;
  }
  /// How long a phase waits for a completion before it gives up (simulated time).
  static constexpr Duration kCompletionLimit = Milliseconds(1000);

  /// Throws HarnessError if the pair cannot be set up, std::invalid_argument for a bad config.
  explicit Workload(const WorkloadConfig& c) : c_(c) {
    Validate(c);
    QpPairConfig p;
    p.fabric = c.fabric;
    p.initiator_queue_depth = static_cast<ULONG>(InitiatorDepth(c.window));
    p.receive_queue_depth = static_cast<ULONG>(ReceiveDepth(c.window));
    p.cq_depth = static_cast<ULONG>(CqDepth(c.window, static_cast<std::uint64_t>(c.qps)));
    // Room for inline data only where this size may be posted inline (it makes WQEs larger).
    max_inline_ = c.fabric.profile.max_inline_bytes;
    const long long limit = std::min(c.inline_size >= 0 ? c.inline_size : LatencyInlineDefault(c.op), max_inline_);
    p.inline_data_size = c.op != Operation::kRead && c.bytes <= limit ? c.bytes : 0;
    pair_ = std::make_unique<QpPair>(p);
    qa_.push_back(pair_->a().qp);
    qb_.push_back(pair_->b().qp);
    for (int i = 1; i < c.qps; ++i) {
      const auto extra = pair_->AddConnectedQps();
      qa_.push_back(extra.a);
      qb_.push_back(extra.b);
    }
    const std::size_t bytes = std::max<std::size_t>(c.bytes, 1);
    a_buf_ = pair_->a().Register(bytes);
    b_buf_ = pair_->b().Register(bytes);
    // Reads land in a_rx_: where the transport needs it (iWARP), the read sink carries the
    // READ_SINK right.
    ULONG sink_flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
    if (c.fabric.profile.read_sink_required) sink_flags |= NDK_MR_FLAG_RDMA_READ_SINK;
    a_rx_ = pair_->a().Register(bytes, sink_flags);
  }

  /// Refuses a configuration this workload cannot run, naming the conflict (std::invalid_argument).
  /// Everything it accepts runs: any number of messages with any QP count, post list, window and
  /// signal ratio within these limits.
  static void Validate(const WorkloadConfig& c) {
    const HardwareProfile& p = c.fabric.profile;
    auto refuse = [](const std::string& why) { throw std::invalid_argument("workload: " + why); };
    if (c.qps < 1) refuse(fmt::format("qps is {}; it must be at least 1", c.qps));
    if (c.cores < 1 || static_cast<std::uint64_t>(c.cores) > p.host_cores) {
      refuse(fmt::format("cores is {}; profile {} has 1..{} cores per node", c.cores, p.name, p.host_cores));
    }
    // Each node holds `qps` QPs; the NIC's QP table bounds them.
    if (static_cast<std::uint64_t>(c.qps) > p.max_qps) {
      refuse(fmt::format("qps is {}; profile {} holds at most {} QPs per node", c.qps, p.name, p.max_qps));
    }
    if (c.window < 1) refuse("the window must be at least 1 request");
    if (c.post_list < 1) refuse("the post list must be at least 1 request");
    if (c.signal_every < 1) refuse("the signal ratio must be at least 1 (every request signaled)");
    if (c.post_list > c.window) {
      refuse(fmt::format("a post list of {} does not fit in a window of {} requests in flight", c.post_list, c.window));
    }
    if (c.window > MaxWindow(p)) {
      refuse(fmt::format("a window of {} needs an initiator queue of {} and a receive queue of {} entries; profile {} "
                         "allows at most a window of {}", c.window, InitiatorDepth(c.window), ReceiveDepth(c.window),
                         p.name, MaxWindow(p)));
    }
    if (static_cast<std::uint64_t>(c.qps) > MaxQps(p, c.window)) {
      refuse(fmt::format("qps is {}; with a window of {}, profile {} allows at most {} QPs (each side's CQs serve "
                         "every QP, {} entries per QP, at most {} entries per CQ)", c.qps, c.window, p.name,
                         MaxQps(p, c.window), CqDepth(c.window, 1), p.max_cq_depth));
    }
    if (c.bytes > p.max_transfer_bytes) {
      refuse(fmt::format("a message of {} bytes is larger than profile {}'s maximum transfer of {} bytes", c.bytes,
                         p.name, p.max_transfer_bytes));
    }
  }

  /// @name Queue depths

  /// The queue depths a window needs: the initiator queue holds the window (and one more); each
  /// receive queue keeps a window of receives (at least 16) on top of the latency phase's depth; a
  /// CQ serves both queues of every QP of its side, twice over.
  ///@{
  static std::uint64_t InitiatorDepth(std::size_t window) { return window + 1; }
  static std::uint64_t ReceiveDepth(std::size_t window) {
    return std::max<std::uint64_t>(window, 16) + kReceiveDepth + 1;
  }
  static std::uint64_t CqDepth(std::size_t window, std::uint64_t qps) {
    return 2 * (InitiatorDepth(window) + ReceiveDepth(window)) * qps;
  }
  ///@}

  /// @name Limits

  /// The largest window and QP count a profile allows this workload.
  ///@{
  static std::size_t MaxWindow(const HardwareProfile& p) {
    const std::uint64_t by_initiator = p.max_initiator_queue_depth - 1;
    const std::uint64_t by_receive = p.max_receive_queue_depth > kReceiveDepth + 1
                                         ? p.max_receive_queue_depth - kReceiveDepth - 1
                                         : 0;
    return static_cast<std::size_t>(std::min(by_initiator, by_receive));
  }
  static std::uint64_t MaxQps(const HardwareProfile& p, std::size_t window) {
    return std::min<std::uint64_t>(p.max_qps, p.max_cq_depth / CqDepth(window, 1));
  }
  ///@}

  Fabric& fabric() { return pair_->fabric(); }  ///< the pair's fabric
  QpPair& pair() { return *pair_; }             ///< the connected pair the workload runs on
  /// The initiating side's QPs (node "a"), in the order streams use them.
  const std::vector<NDK_QP*>& Initiators() const { return qa_; }
  /// Their peers on node "b", in the same order.
  const std::vector<NDK_QP*>& Responders() const { return qb_; }

  /// One message in flight, `iterations` times; one-way latency samples in simulated nanoseconds.
  /// Send and write ping-pong (half the round trip, as perftest reports); read is post to
  /// completion. Writes need at least one byte (the peer polls the last byte); each side runs
  /// ib_write_lat's loop: wait for the peer's write to land, post a signaled write, spin on the
  /// send CQ until it completes.
  std::vector<double> Latency(int iterations) {
    streaming_ = false;
    if (c_.op == Operation::kWrite && c_.bytes == 0) throw std::invalid_argument("workload: write latency needs 1 byte");
    if (c_.op == Operation::kWrite && c_.events) {
      throw std::invalid_argument("workload: write latency polls memory, as ib_write_lat does: no events");
    }
    const ScopedCore on(0);
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(std::max(iterations, 0)));
    if (c_.op == Operation::kSend && !receives_posted_) {
      // As ib_send_lat does: both sides keep receives posted ahead and re-post one per message.
      for (std::size_t k = 0; k < kReceiveDepth; ++k) {
        PostReceive(pair_->a(), *a_rx_);
        PostReceive(pair_->b(), *b_buf_);
      }
      receives_posted_ = true;
    }
    if (c_.op == Operation::kWrite) return WritePingPong(iterations);
    for (int i = 0; i < iterations; ++i) samples.push_back(c_.op == Operation::kRead ? ReadOnce() : PingPongOnce());
    return samples;
  }

  /// `messages` requests with up to `window` in flight on every QP; returns the simulated time from
  /// the first post to the last completion. The messages are shared out evenly among the QPs (the
  /// first `messages % qps` QPs take one more), each QP posts whole post lists in turn, and the last
  /// request of every QP is signaled, so every QP's tail completes. `progress(done, total)`, if set,
  /// is called after each batch of completions.
  Duration Stream(std::size_t messages, const std::function<void(std::size_t, std::size_t)>& progress = {}) {
    streaming_ = true;
    const ScopedCore poller(0);
    const auto cores = static_cast<std::size_t>(c_.cores);
    const std::size_t nqp = qa_.size();
    std::vector<std::size_t> quota(nqp, messages / nqp);
    for (std::size_t q = 0; q < messages % nqp; ++q) ++quota[q];
    std::vector<std::size_t> posted_on(nqp, 0);
    std::vector<std::size_t> outstanding(nqp, 0);
    std::vector<std::size_t> unsignaled(nqp, 0);
    NDK_RESULT results[64];
    const NDK_SGE local = c_.op == Operation::kRead ? a_rx_->Sge(0, c_.bytes) : a_buf_->Sge(0, c_.bytes);
    const NDK_SGE remote_rx = b_buf_->Sge(0, c_.bytes);
    const ULONG nsge = c_.bytes ? 1u : 0u;
    // Sends need receives: keep every receive queue of b full, re-posting as they complete. A
    // receive's RequestContext names its QP, so its completion says which queue to refill.
    // The receives stay posted from one stream to the next: each completed one is re-posted.
    if (c_.op == Operation::kSend && !stream_receives_posted_) {
      for (std::size_t q = 0; q < nqp; ++q) {
        for (std::size_t k = 0; k < std::max<std::size_t>(c_.window, 16); ++k) PostStreamReceive(q, remote_rx, nsge);
      }
      stream_receives_posted_ = true;
    }
    std::size_t received = 0;
    std::size_t posted = 0;
    std::size_t completed = 0;
    std::size_t next_qp = 0;
    const TimePoint start = fabric().Now();
    NDK_CQ* cq = pair_->a().initiator_cq;
    while (completed < messages) {
      // Post whole chains while the chosen QP has room in its window.
      bool progressed = false;
      for (std::size_t tries = 0; tries < nqp && posted < messages; ++tries) {
        const std::size_t q = next_qp;
        next_qp = (next_qp + 1) % nqp;
        const std::size_t n = std::min(c_.post_list, quota[q] - posted_on[q]);
        if (n == 0 || outstanding[q] + n > c_.window) continue;
        // If the QP cannot post its next chain after this one, this chain's last request is
        // signaled, so that the window opens again.
        const std::size_t next_n = std::min(c_.post_list, quota[q] - posted_on[q] - n);
        const bool window_full_after = outstanding[q] + n + next_n > c_.window;
        for (std::size_t k = 0; k < n; ++k) {
          ++unsignaled[q];
          const bool last_of_chain = k + 1 == n;
          const bool last_on_qp = posted_on[q] + k + 1 == quota[q];
          const bool signal =
              unsignaled[q] >= c_.signal_every || last_on_qp || (last_of_chain && window_full_after);
          ULONG flags = InlineFlag();
          if (k + 1 < n) flags |= NDK_OP_FLAG_DEFER;
          void* ctx = nullptr;
          if (signal) {
            ctx = Tag(q, unsignaled[q]);
            unsignaled[q] = 0;
          } else {
            flags |= NDK_OP_FLAG_SILENT_SUCCESS;
          }
          const ScopedCore on(static_cast<std::uint32_t>(q % cores));
          Post(qa_[q], ctx, local, nsge, flags);
        }
        outstanding[q] += n;
        posted_on[q] += n;
        posted += n;
        progressed = true;
      }
      if (progressed) continue;
      // Nothing could be posted: run the simulation until some completion arrives (with events,
      // until the armed CQ's notification says it has).
      ULONG got = 0;
      if (c_.events) {
        got = AwaitWithEvent(pair_->a(), cq, [&] { return cq->Dispatch->NdkGetCqResults(cq, results, 64); });
      } else {
        fabric().RunUntil(
            [&] {
              got = cq->Dispatch->NdkGetCqResults(cq, results, 64);
              return got > 0;
            },
            kCompletionLimit);
      }
      if (got == 0) throw HarnessError("stream: waiting 1 s of simulated time for a completion", STATUS_IO_TIMEOUT);
      for (ULONG i = 0; i < got; ++i) {
        Check("stream request", results[i].Status);
        const std::size_t q = TagQp(results[i].RequestContext);
        const std::size_t count = TagCount(results[i].RequestContext);
        outstanding[q] -= count;
        completed += count;
      }
      if (progress) progress(completed, messages);
      if (c_.op == Operation::kSend) received += ReplenishReceives(remote_rx, nsge);
    }
    const Duration elapsed = fabric().Now() - start;
    // Every send's receive completion is reaped (and its receive re-posted) before the stream
    // ends, so none is left on the receive CQ for a later phase to mistake for its own.
    if (c_.op == Operation::kSend) {
      fabric().RunUntil(
          [&] {
            received += ReplenishReceives(remote_rx, nsge);
            return received >= messages;
          },
          kCompletionLimit);
      if (received < messages) {
        throw HarnessError("stream: waiting 1 s of simulated time for the receive completions", STATUS_IO_TIMEOUT);
      }
    }
    return elapsed;
  }

  /// @name Rates

  /// Message rate and payload bandwidth of `messages` requests of this workload's size in `elapsed`.
  ///@{
  static double Mpps(std::size_t messages, Duration elapsed) {
    return static_cast<double>(messages) / ToNanoseconds(elapsed) * 1e3;
  }
  double Gbps(std::size_t messages, Duration elapsed) const {
    return static_cast<double>(messages) * c_.bytes * 8 / ToNanoseconds(elapsed);
  }
  ///@}

 private:
  ULONG InlineFlag() const {
    const long long fallback = streaming_ ? 0 : LatencyInlineDefault(c_.op);
    const long long limit = std::min(c_.inline_size >= 0 ? c_.inline_size : fallback, max_inline_);
    return c_.op != Operation::kRead && c_.bytes <= limit ? NDK_OP_FLAG_INLINE : 0;
  }

  void Post(NDK_QP* qp, void* ctx, const NDK_SGE& local, ULONG nsge, ULONG flags) {
    switch (c_.op) {
      case Operation::kWrite:
        Check("NdkWrite", qp->Dispatch->NdkWrite(qp, ctx, &local, nsge, b_buf_->Address(), b_buf_->RemoteToken(), flags));
        return;
      case Operation::kRead:
        Check("NdkRead", qp->Dispatch->NdkRead(qp, ctx, &local, nsge, b_buf_->Address(), b_buf_->RemoteToken(), flags));
        return;
      case Operation::kSend:
        Check("NdkSend", qp->Dispatch->NdkSend(qp, ctx, &local, nsge, flags));
        return;
    }
  }

  void PostStreamReceive(std::size_t q, const NDK_SGE& remote_rx, ULONG nsge) {
    Check("NdkReceive", qb_[q]->Dispatch->NdkReceive(qb_[q], Tag(q, 1), &remote_rx, nsge));
  }

  /// Re-posts a receive for each receive completion on b; returns how many there were.
  std::size_t ReplenishReceives(const NDK_SGE& remote_rx, ULONG nsge) {
    NDK_RESULT rx[64];
    ULONG n;
    std::size_t reaped = 0;
    NDK_CQ* cq = pair_->b().receive_cq;
    while ((n = cq->Dispatch->NdkGetCqResults(cq, rx, 64)) > 0) {
      for (ULONG i = 0; i < n; ++i) {
        Check("stream receive", rx[i].Status);
        PostStreamReceive(TagQp(rx[i].RequestContext), remote_rx, nsge);
      }
      reaped += n;
    }
    return reaped;
  }

  double ReadOnce() {
    const NDK_SGE sge = a_rx_->Sge(0, c_.bytes);
    const TimePoint t0 = fabric().Now();
    Check("NdkRead", pair_->a().Read(nullptr, {&sge, c_.bytes ? 1u : 0u}, b_buf_->Address(), b_buf_->RemoteToken()));
    Wait(pair_->a(), pair_->a().initiator_cq);
    return ToNanoseconds(fabric().Now() - t0);
  }

  /// perftest style: a -> b, b -> a; half the round trip is the one-way latency.
  double PingPongOnce() {
    const TimePoint t0 = fabric().Now();
    const ULONG nsge = c_.bytes ? 1u : 0u;
    const NDK_SGE sa = a_buf_->Sge(0, c_.bytes);
    Check("NdkSend", pair_->a().Send(nullptr, {&sa, nsge}, InlineFlag()));
    Wait(pair_->b(), pair_->b().receive_cq);
    PostReceive(pair_->b(), *b_buf_);
    const NDK_SGE sb = b_buf_->Sge(0, c_.bytes);
    Check("NdkSend", pair_->b().Send(nullptr, {&sb, nsge}, InlineFlag()));
    Wait(pair_->a(), pair_->a().receive_cq);
    PostReceive(pair_->a(), *a_rx_);
    const double one_way = ToNanoseconds(fabric().Now() - t0) / 2;
    // Reap the send completions that have arrived, so the send queues' slots are retired.
    std::vector<NDK_RESULT_EX> reaped;
    QpEnd::Poll(pair_->a().initiator_cq, reaped);
    QpEnd::Poll(pair_->b().initiator_cq, reaped);
    return one_way;
  }

  /// ib_write_lat's loop, both sides at once in simulated time. A side waits until the peer's
  /// write has landed (the last byte of its buffer shows the peer's next number), posts its own
  /// write (signaled, its number in the last byte) and spins on its send CQ until that write has
  /// completed; "a" starts by posting, "b" by waiting. A sample is half the time from one of "a"'s
  /// posts to its next, as perftest reports it, so a completion that comes back after the peer's
  /// answer holds the next post back.
  std::vector<double> WritePingPong(int iterations) {
    enum class Phase : std::uint8_t { kWaitData, kWaitCompletion, kDone };
    struct Side {
      QpEnd& end;
      RegisteredBuffer& out;      // written from
      RegisteredBuffer& in;       // the peer's writes land here
      RegisteredBuffer& peer_in;  // this side's writes land there
      Phase phase = Phase::kWaitData;
      int posted = 0;
      int received = 0;
    };
    std::vector<double> samples;
    if (iterations <= 0) return samples;
    samples.reserve(static_cast<std::size_t>(iterations));
    // "b" writes from the buffer "a" writes into: the number it sends is the one it just got.
    Side a{pair_->a(), *a_buf_, *a_rx_, *b_buf_};
    Side b{pair_->b(), *b_buf_, *b_buf_, *a_rx_};
    const std::size_t last = c_.bytes - 1;
    // Numbers go on from earlier calls, so a byte an earlier call left never looks new.
    const auto number = [&](int k) { return static_cast<std::byte>(1 + (write_rounds_ + k) % 255); };
    TimePoint a_posted{};
    const auto post = [&](Side& s) {
      s.out.Data()[last] = number(s.posted);
      const NDK_SGE sge = s.out.Sge(0, c_.bytes);
      Check("NdkWrite", s.end.Write(nullptr, {&sge, 1}, s.peer_in.Address(), s.peer_in.RemoteToken(), InlineFlag()));
      ++s.posted;
      s.phase = Phase::kWaitCompletion;
      if (&s == &a) a_posted = fabric().Now();
    };
    // Takes a side's loop as far as it goes now.
    const auto advance = [&](Side& s) {
      for (;;) {
        if (s.phase == Phase::kWaitCompletion) {
          NDK_RESULT_EX r[1];
          if (s.end.initiator_cq->Dispatch->NdkGetCqResultsEx(s.end.initiator_cq, r, 1) == 0) return;
          Check("NdkWrite", r[0].Status);
          s.phase = s.received < iterations ? Phase::kWaitData : Phase::kDone;
        } else if (s.phase == Phase::kWaitData) {
          if (s.in.Data()[last] != number(s.received)) return;
          ++s.received;
          if (&s == &a) samples.push_back(ToNanoseconds(fabric().Now() - a_posted) / 2);
          if (s.posted < iterations) {
            post(s);
          } else {
            s.phase = Phase::kDone;
          }
        } else {
          return;
        }
      }
    };
    post(a);
    // Runs until both sides are done; a second of simulated time without a write landing is a hang.
    for (;;) {
      const int landed = a.received + b.received;
      const RunResult done = fabric().RunUntil(
          [&] {
            advance(b);
            advance(a);
            return (a.phase == Phase::kDone && b.phase == Phase::kDone) || a.received + b.received != landed;
          },
          kCompletionLimit);
      if (a.phase == Phase::kDone && b.phase == Phase::kDone) break;
      if (!done) throw HarnessError("workload: write latency waited 1 s of simulated time", STATUS_IO_TIMEOUT);
    }
    write_rounds_ += iterations;
    return samples;
  }

  void PostReceive(QpEnd& end, const RegisteredBuffer& buffer) {
    const NDK_SGE sge = buffer.Sge(0, c_.bytes);
    Check("NdkReceive", end.Receive(nullptr, {&sge, c_.bytes ? 1u : 0u}));
  }

  void Wait(QpEnd& end, NDK_CQ* cq) {
    if (c_.events) {
      NDK_RESULT r[1];
      AwaitWithEvent(end, cq, [&] { return cq->Dispatch->NdkGetCqResults(cq, r, 1); });
      Check("workload request", r[0].Status);
      return;
    }
    const auto r = pair_->Collect(cq, 1, kCompletionLimit);
    if (r.empty()) throw HarnessError("workload: waiting 1 s of simulated time for a completion", STATUS_IO_TIMEOUT);
    Check("workload request", r[0].Status);
  }

  /// perftest's event loop: take what is there; if nothing, arm the CQ, take what came meanwhile,
  /// and otherwise wait for the notification. `poll()` returns how many results it took; so does
  /// this, or it throws after 1 s of simulated time without any.
  template <typename Poll>
  ULONG AwaitWithEvent(QpEnd& end, NDK_CQ* cq, Poll poll) {
    for (;;) {
      if (const ULONG n = poll(); n > 0) return n;
      const int notified = end.cq_notifications;
      cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
      if (const ULONG n = poll(); n > 0) return n;
      if (!fabric().RunUntil([&] { return end.cq_notifications != notified; }, kCompletionLimit)) {
        throw HarnessError("workload: waiting 1 s of simulated time for a CQ notification", STATUS_IO_TIMEOUT);
      }
    }
  }

  static void Check(const char* step, NTSTATUS s) {
    if (s != STATUS_SUCCESS) throw HarnessError(step, s);
  }

  // RequestContext of a signaled request: which QP, and how many requests it retires.
  static void* Tag(std::size_t qp, std::size_t count) { return reinterpret_cast<void*>((qp << 32) | count); }
  static std::size_t TagQp(void* tag) { return reinterpret_cast<std::uintptr_t>(tag) >> 32; }
  static std::size_t TagCount(void* tag) { return reinterpret_cast<std::uintptr_t>(tag) & 0xffffffffu; }

  WorkloadConfig c_;
  long long max_inline_ = 0;
  bool streaming_ = false;
  bool receives_posted_ = false;
  int write_rounds_ = 0;  ///< writes each side has made in earlier write latency runs
  bool stream_receives_posted_ = false;
  std::unique_ptr<QpPair> pair_;
  std::vector<NDK_QP*> qa_;
  std::vector<NDK_QP*> qb_;
  std::unique_ptr<RegisteredBuffer> a_buf_;
  std::unique_ptr<RegisteredBuffer> b_buf_;
  std::unique_ptr<RegisteredBuffer> a_rx_;
};

}  // namespace ndksim
