// Run-time tracing, switched on per hardware block and formatted with fmt. A trace line carries the
// simulated time, the node and the block, so two runs can be compared line by line.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
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

enum class TraceBlock : std::uint8_t {
#define NDKSIM_X(name) k##name,
  NDKSIM_TRACE_BLOCKS(NDKSIM_X)
#undef NDKSIM_X
};
inline constexpr std::array<std::string_view, 11> kTraceBlockNames = {
#define NDKSIM_X(name) #name,
    NDKSIM_TRACE_BLOCKS(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kTraceBlockNames.size() == static_cast<std::size_t>(TraceBlock::kProvider) + 1);

// The stages of one work request's life, in order. Posted is recorded by the provider, the rest by
// the hardware blocks that reach them.
enum class RequestStage : std::uint8_t {
  kPosted,           // the posting call wrote the WQE and published it
  kDoorbell,         // a doorbell covering the WQE reached the NIC
  kFetched,          // the WQE's DMA read from the host ring completed
  kFirstByteOnWire,  // the port started sending the request's first packet
  kLastBytePlaced,   // the last payload byte landed in the target's memory (the peer's for
                     // sends and writes, the initiator's for reads)
  kCqeWritten,       // the initiator's CQE landed in host memory
};
inline constexpr std::array<std::string_view, 6> kRequestStageNames = {
    "posted", "doorbell", "fetched", "first-byte-on-wire", "last-byte-placed", "cqe-written"};
static_assert(kRequestStageNames.size() == static_cast<std::size_t>(RequestStage::kCqeWritten) + 1);

struct RequestRecord {
  std::uint32_t node = 0;
  std::uint32_t qpn = 0;
  std::uint32_t wqe = 0;          // the WQE's number on its send queue
  std::string_view operation;     // "Send", "Write", ...
  std::uint64_t bytes = 0;
  std::array<TimePoint, 6> at{};  // when each stage was reached
  std::uint8_t seen = 0;          // bit per stage that was reached

  bool Reached(RequestStage s) const { return (seen >> static_cast<unsigned>(s)) & 1u; }
  TimePoint At(RequestStage s) const { return at[static_cast<std::size_t>(s)]; }
};

// The life of every send-queue work request, when enabled: stage times per (node, QP, WQE), and an
// export as Chrome trace JSON that Perfetto and chrome://tracing open.
class RequestLog {
 public:
  void Enable(bool on = true) { enabled_ = on; }
  bool Enabled() const { return enabled_; }
  // Records the first time a request reaches `stage`; later marks of the stage (retransmission)
  // keep the first.
  void Mark(std::uint32_t node, std::uint32_t qpn, std::uint32_t wqe, RequestStage stage, TimePoint t) {
    RequestRecord& r = Get(node, qpn, wqe);
    const auto bit = static_cast<std::uint8_t>(1u << static_cast<unsigned>(stage));
    if (r.seen & bit) return;
    r.seen |= bit;
    r.at[static_cast<std::size_t>(stage)] = t;
  }
  void Describe(std::uint32_t node, std::uint32_t qpn, std::uint32_t wqe, std::string_view operation,
                std::uint64_t bytes) {
    RequestRecord& r = Get(node, qpn, wqe);
    r.operation = operation;
    r.bytes = bytes;
  }
  const RequestRecord* Find(std::uint32_t node, std::uint32_t qpn, std::uint32_t wqe) const {
    const auto it = index_.find(Key(node, qpn, wqe));
    return it == index_.end() ? nullptr : &records_[it->second];
  }
  const std::vector<RequestRecord>& Records() const { return records_; }
  void Clear() {
    records_.clear();
    index_.clear();
  }
  // One complete ("X") event per stage-to-stage interval: process = node, thread = QP.
  void WriteChromeTrace(std::ostream& out) const {
    out << "{\"traceEvents\":[";
    bool first = true;
    for (const RequestRecord& r : records_) {
      int previous = -1;
      for (int s = 0; s < static_cast<int>(kRequestStageNames.size()); ++s) {
        if (!r.Reached(static_cast<RequestStage>(s))) continue;
        if (previous >= 0) {
          const double ts = ToNanoseconds(r.at[static_cast<std::size_t>(previous)]) / 1000.0;
          const double dur = ToNanoseconds(r.at[static_cast<std::size_t>(s)]) / 1000.0 - ts;
          out << (first ? "" : ",")
              << fmt::format(R"({{"name":"{}..{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{:.6f},"dur":{:.6f},"args":{{"wqe":{},"bytes":{}}}}})",
                             kRequestStageNames[static_cast<std::size_t>(previous)],
                             kRequestStageNames[static_cast<std::size_t>(s)], r.operation, r.node, r.qpn, ts, dur, r.wqe,
                             r.bytes);
          first = false;
        }
        previous = s;
      }
    }
    out << "],\"displayTimeUnit\":\"ns\"}\n";
  }

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
};

class Tracer {
 public:
  // The per-request stage log (off by default; enabling it costs a hash lookup per stage).
  RequestLog& Requests() { return requests_; }
  const RequestLog& Requests() const { return requests_; }

  void Enable(TraceBlock b, bool on = true) {
    const std::uint32_t bit = 1u << static_cast<unsigned>(b);
    mask_ = on ? (mask_ | bit) : (mask_ & ~bit);
  }
  void EnableAll() { mask_ = ~0u; }
  void DisableAll() { mask_ = 0; }
  bool Enabled(TraceBlock b) const { return (mask_ >> static_cast<unsigned>(b)) & 1u; }

  // Lines go to the sink when one is set, otherwise they are kept in memory.
  void SetSink(std::function<void(std::string_view)> sink) { sink_ = std::move(sink); }
  const std::vector<std::string>& Lines() const { return lines_; }
  void Clear() { lines_.clear(); }

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

// Formats only when the block is enabled: tracing costs one test when off.
#define NDKSIM_TRACE(tracer, time, node, block, ...)                     \
  do {                                                                   \
    if ((tracer).Enabled(::ndksim::TraceBlock::k##block)) {                 \
      (tracer).Log((time), (node), ::ndksim::TraceBlock::k##block, __VA_ARGS__); \
    }                                                                    \
  } while (0)

}  // namespace ndksim
