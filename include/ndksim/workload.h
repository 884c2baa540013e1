// SPDX-License-Identifier: MIT
/// @file
/// Perftest-style workloads on a connected pair: one message in flight (latency) and a stream with a
/// window of messages in flight (post lists, selective signaling, several QPs). ndksim-perf, the
/// calibration tests and the benchmarks measure through this one implementation; a test of your own
/// can use it the same way.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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
  /// Streams run both ways at once, as perftest's -b: node b streams the same requests to node a
  /// on the same QPs while a streams to b (Stream's `messages` in each direction).
  bool bidirectional = false;
  /// Reads each QP may have outstanding, its ORD and IRD (perftest's -o); 0: the profile's most.
  ULONG read_limit = 0;
};

/// What a stream did: the simulated time from its first post to its last completion, and the
/// requests it completed (both directions' together when bidirectional).
struct StreamCount {
  Duration elapsed;       ///< first post to last completion
  std::size_t messages;   ///< requests completed
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
  explicit Workload(const WorkloadConfig& c);

  /// Refuses a configuration this workload cannot run, naming the conflict (std::invalid_argument).
  /// Everything it accepts runs: any number of messages with any QP count, post list, window and
  /// signal ratio within these limits.
  static void Validate(const WorkloadConfig& c);

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
  static std::size_t MaxWindow(const HardwareProfile& p);
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
  std::vector<double> Latency(int iterations);

  /// `messages` requests with up to `window` in flight on every QP; returns the simulated time from
  /// the first post to the last completion. The messages are shared out evenly among the QPs (the
  /// first `messages % qps` QPs take one more), each QP posts whole post lists in turn, and the last
  /// request of every QP is signaled, so every QP's tail completes. `progress(done, total)`, if set,
  /// is called after each batch of completions (both directions' requests counted, when
  /// bidirectional).
  Duration Stream(std::size_t messages, const std::function<void(std::size_t, std::size_t)>& progress = {});
  /// A stream that posts for `posting` of simulated time (perftest's -D), then lets what it posted
  /// complete: each QP's last request is signaled then. Returns the time to the last completion and
  /// the requests completed; `progress` as for Stream, its total growing with the posts.
  StreamCount StreamFor(Duration posting, const std::function<void(std::size_t, std::size_t)>& progress = {});

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

  double ReadOnce();

  /// perftest style: a -> b, b -> a; half the round trip is the one-way latency.
  double PingPongOnce();

  /// ib_write_lat's loop, both sides at once in simulated time. A side waits until the peer's
  /// write has landed (the last byte of its buffer shows the peer's next number), posts its own
  /// write (signaled, its number in the last byte) and spins on its send CQ until that write has
  /// completed; "a" starts by posting, "b" by waiting. A sample is half the time from one of "a"'s
  /// posts to its next, as perftest reports it, so a completion that comes back after the peer's
  /// answer holds the next post back.
  std::vector<double> WritePingPong(int iterations);

  void PostReceive(QpEnd& end, const RegisteredBuffer& buffer) {
    const NDK_SGE sge = buffer.Sge(0, c_.bytes);
    Check("NdkReceive", end.Receive(nullptr, {&sge, c_.bytes ? 1u : 0u}));
  }

  void Wait(QpEnd& end, NDK_CQ* cq);

  /// A CQ an event loop waits on, and the side whose notifications count for it.
  struct Watched {
    QpEnd* end = nullptr;
    NDK_CQ* cq = nullptr;
  };
  /// perftest's event loop over one or two CQs: take what is there (`poll()` says whether it took
  /// anything); if nothing, arm every CQ, take what came meanwhile, and otherwise wait for a
  /// notification. Throws after 1 s of simulated time without one.
  template <typename Poll>
  void AwaitWithEvent(std::span<const Watched> watched, Poll poll);

  struct StreamSide;
  std::vector<StreamSide> StreamSides(std::size_t messages);
  /// The stream of Stream and StreamFor: `messages` requests each way, or until `stop_posting`.
  StreamCount RunStream(std::size_t messages, std::optional<TimePoint> stop_posting,
                        const std::function<void(std::size_t, std::size_t)>& progress);
  /// Posts the side's next chains while its QPs have room; whether it posted any.
  bool PostChains(StreamSide& side);
  /// Runs the simulation until a completion waits on one of the sides' CQs.
  void AwaitStreamCompletions(std::vector<StreamSide>& sides);
  void Post(const StreamSide& side, NDK_QP* qp, void* ctx, ULONG nsge, ULONG flags);
  void PostStreamReceive(const StreamSide& side, std::size_t q);
  /// Re-posts a receive for each receive completion on the side's peer; returns how many there were.
  std::size_t ReplenishReceives(const StreamSide& side);

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
  std::array<bool, 2> stream_receives_posted_{};  ///< on b (a's stream), on a (b's)
  std::unique_ptr<QpPair> pair_;
  std::vector<NDK_QP*> qa_;
  std::vector<NDK_QP*> qb_;
  std::unique_ptr<RegisteredBuffer> a_buf_;
  std::unique_ptr<RegisteredBuffer> b_buf_;
  std::unique_ptr<RegisteredBuffer> a_rx_;
  std::unique_ptr<RegisteredBuffer> b_rx_;  ///< bidirectional reads land here
};

}  // namespace ndksim
