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
#include <map>
#include <ostream>
#include <queue>
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

namespace trace_detail {

/// Picoseconds as an exact decimal number of microseconds: 1234567 ps -> "1.234567".
inline std::string MicrosecondsText(std::int64_t ps) {
  const bool negative = ps < 0;
  const std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(ps) : static_cast<std::uint64_t>(ps);
  return fmt::format("{}{}.{:06}", negative ? "-" : "", magnitude / 1'000'000, magnitude % 1'000'000);
}

/// A JSON string literal, quotes included.
inline std::string JsonString(std::string_view s) {
  std::string q = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        q += "\\\"";
        break;
      case '\\':
        q += "\\\\";
        break;
      case '\n':
        q += "\\n";
        break;
      case '\r':
        q += "\\r";
        break;
      case '\t':
        q += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          q += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          q += c;
        }
    }
  }
  q += '"';
  return q;
}

/// Writes comma-separated JSON events to a stream through a buffer.
class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;
  ~EventWriter() = default;

  template <typename... Args>
  void Add(fmt::format_string<Args...> f, Args&&... args) {
    if (!first_) buf_.push_back(',');
    first_ = false;
    fmt::format_to(std::back_inserter(buf_), f, std::forward<Args>(args)...);
    if (buf_.size() >= kFlushBytes) Flush();
  }
  void Raw(std::string_view text) { buf_.append(text); }
  void Flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  static constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
  std::ostream& out_;
  fmt::memory_buffer buf_;
  bool first_ = true;
};

}  // namespace trace_detail

inline void RequestLog::WriteChromeTrace(std::ostream& out) const {
  constexpr std::size_t kStages = kRequestStageNames.size();
  // One request as drawn: its stage times made non-decreasing, its extent, and its slot.
  struct Span {
    const RequestRecord* record = nullptr;
    std::array<TimePoint, kStages> at{};
    TimePoint begin{};
    TimePoint end{};
    std::uint32_t slot = 0;
  };
  // The requests of each (node, QP), in (node, QP) order.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Span>> qps;
  for (const RequestRecord& r : records_) {
    if (r.seen == 0) continue;
    Span s;
    s.record = &r;
    bool first = true;
    TimePoint last{};
    for (std::size_t k = 0; k < kStages; ++k) {
      if (!r.Reached(static_cast<RequestStage>(k))) continue;
      last = first ? r.at[k] : std::max(last, r.at[k]);
      s.at[k] = last;
      if (first) s.begin = last;
      first = false;
    }
    s.end = last;
    qps[{r.node, r.qpn}].push_back(s);
  }

  // Slots: each request, in posting order, takes the lowest-numbered slot free at its start (a
  // slot whose last request ended at or before it).
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> slot_count;
  for (auto& [qp, spans] : qps) {
    std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    using Busy = std::pair<TimePoint, std::uint32_t>;  // (end, slot)
    std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
    std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> idle;
    std::uint32_t slots = 0;
    for (Span& s : spans) {
      while (!busy.empty() && busy.top().first <= s.begin) {
        idle.push(busy.top().second);
        busy.pop();
      }
      if (idle.empty()) {
        s.slot = slots++;
      } else {
        s.slot = idle.top();
        idle.pop();
      }
      busy.emplace(s.end, s.slot);
    }
    slot_count[qp] = slots;
  }

  // Pids are node + 1; tids count up from past the largest pid, over (node, QP, slot).
  std::uint32_t max_pid = 0;
  for (const auto& [qp, spans] : qps) max_pid = std::max(max_pid, qp.first + 1);
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> first_tid;
  std::uint32_t next_tid = max_pid + 1;
  for (const auto& [qp, slots] : slot_count) {
    first_tid[qp] = next_tid;
    next_tid += slots;
  }

  trace_detail::EventWriter events(out);
  events.Raw(R"({"traceEvents":[)");

  // Names: a process per node, a track per (QP, slot).
  std::uint32_t previous_node = 0;
  bool any_node = false;
  std::uint32_t track_index = 0;
  for (const auto& [qp, slots] : slot_count) {
    const std::uint32_t pid = qp.first + 1;
    if (!any_node || qp.first != previous_node) {
      events.Add(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":{}}}}})", pid,
                 trace_detail::JsonString(NodeName(qp.first)));
      events.Add(R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", pid, qp.first);
      previous_node = qp.first;
      any_node = true;
      track_index = 0;
    }
    for (std::uint32_t slot = 0; slot < slots; ++slot) {
      const std::uint32_t tid = first_tid.at(qp) + slot;
      events.Add(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"QP 0x{:06x} slot {}"}}}})", pid,
                 tid, qp.second, slot);
      events.Add(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", pid, tid,
                 track_index++);
    }
  }

  // The slices, request by request: on any one track, in the order they nest.
  for (const auto& [qp, spans] : qps) {
    const std::uint32_t pid = qp.first + 1;
    for (const Span& s : spans) {
      const RequestRecord& r = *s.record;
      const std::uint32_t tid = first_tid.at(qp) + s.slot;
      const std::string category = trace_detail::JsonString(r.operation.empty() ? "request" : r.operation);
      events.Add(R"({{"name":{},"cat":{},"ph":"B","pid":{},"tid":{},"ts":{},"args":{{"qpn":{},"wqe":{},"bytes":{}}}}})",
                 category, category, pid, tid, trace_detail::MicrosecondsText(s.begin.time_since_epoch().count()),
                 r.qpn, r.wqe, r.bytes);
      int previous = -1;
      for (std::size_t k = 0; k < kStages; ++k) {
        if (!r.Reached(static_cast<RequestStage>(k))) continue;
        if (previous >= 0) {
          const auto p = static_cast<std::size_t>(previous);
          const std::string phase = fmt::format(R"("{}..{}")", kRequestStageNames[p], kRequestStageNames[k]);
          events.Add(R"({{"name":{},"cat":{},"ph":"B","pid":{},"tid":{},"ts":{},"args":{{"wqe":{}}}}})", phase,
                     category, pid, tid, trace_detail::MicrosecondsText(s.at[p].time_since_epoch().count()), r.wqe);
          events.Add(R"({{"name":{},"cat":{},"ph":"E","pid":{},"tid":{},"ts":{}}})", phase, category, pid, tid,
                     trace_detail::MicrosecondsText(s.at[k].time_since_epoch().count()));
        }
        previous = static_cast<int>(k);
      }
      events.Add(R"({{"name":{},"cat":{},"ph":"E","pid":{},"tid":{},"ts":{}}})", category, category, pid, tid,
                 trace_detail::MicrosecondsText(s.end.time_since_epoch().count()));
    }
  }
  events.Raw("],\"displayTimeUnit\":\"ns\"}\n");
  events.Flush();
}

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
    fmt::format_to(std::back_inserter(line), f, std::forward<Args>(args)...);
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
