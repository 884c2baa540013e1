// SPDX-License-Identifier: MIT
/// @file
/// Run-time tracing, switched on per hardware block and formatted with fmt. A trace line carries the
/// simulated time, the node and the block, so two runs can be compared line by line.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ndksim/time.h"

namespace ndksim {

#define NDKSIM_TRACE_BLOCKS(X) \
  X(Pcie)                      \
  X(Doorbell)                  \
  X(WqeFetch)                  \
  X(Translation)               \
  X(Requester)                 \
  X(Responder)                 \
  X(Completer)                 \
  X(CompletionEngine)          \
  X(Port)                      \
  X(Faults)                    \
  X(Provider)

/// A hardware block whose trace lines a Tracer switches on and off, one per entry of
/// NDKSIM_TRACE_BLOCKS: kPcie, kDoorbell, kWqeFetch, kTranslation, kRequester, kResponder,
/// kCompleter, kCompletionEngine, kPort, kFaults, kProvider.
enum class TraceBlock : std::uint8_t {
#define NDKSIM_X(name) k##name,
  NDKSIM_TRACE_BLOCKS(NDKSIM_X)
#undef NDKSIM_X
};
/// The name each TraceBlock's lines show, by the block's value: "Pcie", "Doorbell", ...
/// @hideinitializer
inline constexpr std::array<std::string_view, 11> kTraceBlockNames = {
#define NDKSIM_X(name) #name,
    NDKSIM_TRACE_BLOCKS(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kTraceBlockNames.size() == static_cast<std::size_t>(TraceBlock::kProvider) + 1);

/// @enum RequestStage
/// The stages of one work request's life, in order. Posted is recorded by the provider, the rest by
/// the hardware blocks that reach them.
///   - kPosted: the posting call wrote the WQE and published it.
///   - kDoorbell: a doorbell covering the WQE reached the NIC.
///   - kFetched: the WQE's DMA read from the host ring completed.
///   - kFirstByteOnWire: the port started sending the request's first packet.
///   - kLastBytePlaced: the last payload byte landed in the target's memory (the peer's for sends
///     and writes, the initiator's for reads).
///   - kCqeWritten: the initiator's CQE landed in host memory.
#define NDKSIM_REQUEST_STAGES(X)                \
  X(kPosted, "posted")                          \
  X(kDoorbell, "doorbell")                      \
  X(kFetched, "fetched")                        \
  X(kFirstByteOnWire, "first-byte-on-wire")     \
  X(kLastBytePlaced, "last-byte-placed")        \
  X(kCqeWritten, "cqe-written")
enum class RequestStage : std::uint8_t {
#define NDKSIM_X(stage, name) stage,
  NDKSIM_REQUEST_STAGES(NDKSIM_X)
#undef NDKSIM_X
};
/// The name of each RequestStage, by the stage's value: "posted", "doorbell", ..., as the Chrome
/// trace export shows them.
/// @hideinitializer
inline constexpr std::array<std::string_view, 6> kRequestStageNames = {
#define NDKSIM_X(stage, name) name,
    NDKSIM_REQUEST_STAGES(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kRequestStageNames.size() == static_cast<std::size_t>(RequestStage::kCqeWritten) + 1);

/// One send-queue work request in the RequestLog: which it is, and when it reached each stage.
struct RequestRecord {
  std::uint32_t node = 0;         ///< the node's index (Fabric::AddNode order)
  std::uint32_t qpn = 0;          ///< the QP's number on that node
  std::uint32_t wqe = 0;          ///< the WQE's number on its send queue
  std::string_view operation;     ///< "Send", "Write", ...
  std::uint64_t bytes = 0;        ///< the request's payload bytes
  std::array<TimePoint, 6> at{};  ///< when each stage was reached
  std::uint8_t seen = 0;          ///< bit per stage that was reached

  /// Whether the request reached `s`.
  bool Reached(RequestStage s) const { return (seen >> static_cast<unsigned>(s)) & 1u; }
  /// When the request reached `s` (if it did: Reached).
  TimePoint At(RequestStage s) const { return at[static_cast<std::size_t>(s)]; }
};

/// The life of every send-queue work request, when enabled: stage times per (node, QP, WQE), and an
/// export as Chrome trace JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open.
class RequestLog {
 public:
  void Enable(bool on = true) { enabled_ = on; }  ///< switches the log on (or off)
  bool Enabled() const { return enabled_; }       ///< whether the log is on
  /// Records the first time a request reaches `stage`; later marks of the stage (retransmission)
  /// keep the first.
  void Mark(std::uint32_t node, std::uint32_t qpn, std::uint32_t wqe, RequestStage stage, TimePoint t) {
    RequestRecord& r = Get(node, qpn, wqe);
    const auto bit = static_cast<std::uint8_t>(1u << static_cast<unsigned>(stage));
    if (r.seen & bit) return;
    r.seen |= bit;
    r.at[static_cast<std::size_t>(stage)] = t;
  }
  /// Records a request's operation ("Send", "Write", ...) and payload bytes.
  void Describe(std::uint32_t node, std::uint32_t qpn, std::uint32_t wqe, std::string_view operation,
                std::uint64_t bytes) {
    RequestRecord& r = Get(node, qpn, wqe);
    r.operation = operation;
    r.bytes = bytes;
  }
  /// The record of a request, or nullptr if the log has none.
  const RequestRecord* Find(std::uint32_t node, std::uint32_t qpn, std::uint32_t wqe) const {
    const auto it = index_.find(Key(node, qpn, wqe));
    return it == index_.end() ? nullptr : &records_[it->second];
  }
  /// Every record, in the order the log first heard of each request.
  const std::vector<RequestRecord>& Records() const { return records_; }
  /// Forgets the records; node names stay.
  void Clear() {
    records_.clear();
    index_.clear();
  }

  /// @name Node names

  /// The name the trace export gives a node's process; "node<N>" until one is set.
  ///@{
  void SetNodeName(std::uint32_t node, std::string name) {
    if (node >= node_names_.size()) node_names_.resize(std::size_t{node} + 1);
    node_names_[node] = std::move(name);
  }
  std::string NodeName(std::uint32_t node) const {
    if (node < node_names_.size() && !node_names_[node].empty()) return node_names_[node];
    return "node" + std::to_string(node);
  }
  ///@}

  /// Chrome trace JSON, laid out for Perfetto:
  ///  - one process per node (pid = node + 1, as pid 0 is the idle process to Perfetto), named
  ///    after the node;
  ///  - under it, the tracks (threads) of each QP, named "QP 0x000001 slot 3". Requests of a QP
  ///    overlap in time, and Perfetto drops a slice that starts inside another one of its track and
  ///    ends after it, so each request goes on the lowest-numbered slot track of its QP that is free
  ///    when it is posted (greedy interval assignment: a QP gets as many slots as it ever has
  ///    requests in flight). Tids are unique across the whole trace (Perfetto names threads by tid
  ///    alone) and never equal a pid;
  ///  - each request is a slice named after its operation, with one child slice per stage-to-stage
  ///    interval ("posted..doorbell", ...), so the phases nest inside their request.
  /// Slices are begin/end ("B"/"E") pairs rather than complete ("X") events, and thread tracks rather
  /// than async events, because times are exact picoseconds written as microseconds with six
  /// decimals, and Perfetto rounds every number it reads to whole nanoseconds: an X event's end
  /// (rounded ts + rounded dur) can land a nanosecond past its parent's end or its sibling's start,
  /// and Perfetto would drop it. A B/E pair writes each instant once; rounding instants keeps their
  /// order, so nesting survives it. Instants that round together keep the file's order, which is the
  /// nesting order on every track. Thread tracks, unlike async tracks, carry the QP/slot names.
  /// A request's stage times are taken in stage order; a stage reached before the one ahead of it
  /// (never the case in the model) is drawn at that earlier stage's time, so slices never go back.
  void WriteChromeTrace(std::ostream& out) const;

 private:
  static std::uint64_t Key(std::uint32_t node, std::uint32_t qpn, std::uint32_t wqe) {
    return (std::uint64_t{node & 0xff} << 56) | (std::uint64_t{qpn & 0xffffff} << 32) | wqe;
  }
  RequestRecord& Get(std::uint32_t node, std::uint32_t qpn, std::uint32_t wqe) {
    const auto [it, inserted] = index_.try_emplace(Key(node, qpn, wqe), records_.size());
    if (inserted) {
      RequestRecord r;
      r.node = node;
      r.qpn = qpn;
      r.wqe = wqe;
      records_.push_back(r);
    }
    return records_[it->second];
  }

  bool enabled_ = false;
  std::vector<RequestRecord> records_;
  std::unordered_map<std::uint64_t, std::size_t> index_;
  std::vector<std::string> node_names_;
};

/// A fabric's tracing (Fabric::Trace): lines per hardware block, formatted only for the blocks
/// switched on, and the per-request log.
class Tracer {
 public:
  /// @name Request log

  /// The per-request stage log (off by default; enabling it costs a hash lookup per stage).
  ///@{
  RequestLog& Requests() { return requests_; }
  const RequestLog& Requests() const { return requests_; }
  ///@}

  /// Switches block `b`'s lines on (or off).
  void Enable(TraceBlock b, bool on = true) {
    const std::uint32_t bit = 1u << static_cast<unsigned>(b);
    mask_ = on ? (mask_ | bit) : (mask_ & ~bit);
  }
  /// Switches every block's lines on.
  void EnableAll() { mask_ = ~0u; }
  /// Switches every block's lines off.
  void DisableAll() { mask_ = 0; }
  /// Whether block `b`'s lines are on.
  bool Enabled(TraceBlock b) const { return (mask_ >> static_cast<unsigned>(b)) & 1u; }
  /// Whether any block's lines are on.
  bool AnyEnabled() const { return mask_ != 0; }

  /// Lines go to the sink when one is set, otherwise they are kept in memory.
  void SetSink(std::function<void(std::string_view)> sink) { sink_ = std::move(sink); }
  const std::vector<std::string>& Lines() const { return lines_; }  ///< the lines kept in memory
  void Clear() { lines_.clear(); }                                  ///< forgets the lines kept in memory

  /// Writes a line: the simulated time, the node, the block's name, then `f` formatted with `args`
  /// (NDKSIM_TRACE calls it only for a block that is on).
  template <typename... Args>
  void Log(TimePoint t, std::uint32_t node, TraceBlock b, fmt::format_string<Args...> f, Args&&... args) {
    std::string line = fmt::format("{:>14} n{} {:<16} ", t, node, kTraceBlockNames[static_cast<std::size_t>(b)]);
    // fmt::format hands its arguments to libfmt's compiled vformat; fmt::format_to into a string
    // would instantiate fmt's whole formatting engine in every block that traces (about half of
    // each hwmodel object's compile time with g++ at -O3).
    line += fmt::format(f, std::forward<Args>(args)...);
    if (sink_) {
      sink_(line);
    } else {
      lines_.push_back(std::move(line));
    }
  }

 private:
  std::uint32_t mask_ = 0;
  RequestLog requests_;
  std::function<void(std::string_view)> sink_;
  std::vector<std::string> lines_;
};

/// Formats only when the block is enabled: tracing costs one test when off.
#define NDKSIM_TRACE(tracer, time, node, block, ...)                     \
  do {                                                                   \
    if ((tracer).Enabled(::ndksim::TraceBlock::k##block)) {                 \
      (tracer).Log((time), (node), ::ndksim::TraceBlock::k##block, __VA_ARGS__); \
    }                                                                    \
  } while (0)

}  // namespace ndksim
