// SPDX-License-Identifier: MIT
// The request log's Chrome trace-event JSON (RequestLog::WriteChromeTrace, ndksim/trace.h): one
// track per QP slot, each request a span with its stages as instants, for Perfetto.
#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <ostream>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ndksim/trace.h"

namespace ndksim {

namespace {

// Picoseconds as an exact decimal number of microseconds: 1234567 ps -> "1.234567".
std::string MicrosecondsText(std::int64_t ps) {
  const bool negative = ps < 0;
  const std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(ps) : static_cast<std::uint64_t>(ps);
  return fmt::format("{}{}.{:06}", negative ? "-" : "", magnitude / 1'000'000, magnitude % 1'000'000);
}

// A JSON string literal, quotes included.
std::string JsonString(std::string_view s) {
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

// Writes comma-separated JSON events to a stream through a buffer.
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

}  // namespace

void RequestLog::WriteChromeTrace(std::ostream& out) const {
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

  EventWriter events(out);
  events.Raw(R"({"traceEvents":[)");

  // Names: a process per node, a track per (QP, slot).
  std::uint32_t previous_node = 0;
  bool any_node = false;
  std::uint32_t track_index = 0;
  for (const auto& [qp, slots] : slot_count) {
    const std::uint32_t pid = qp.first + 1;
    if (!any_node || qp.first != previous_node) {
      events.Add(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":{}}}}})", pid,
                 JsonString(NodeName(qp.first)));
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
      const std::string category = JsonString(r.operation.empty() ? "request" : r.operation);
      events.Add(R"({{"name":{},"cat":{},"ph":"B","pid":{},"tid":{},"ts":{},"args":{{"qpn":{},"wqe":{},"bytes":{}}}}})",
                 category, category, pid, tid, MicrosecondsText(s.begin.time_since_epoch().count()),
                 r.qpn, r.wqe, r.bytes);
      int previous = -1;
      for (std::size_t k = 0; k < kStages; ++k) {
        if (!r.Reached(static_cast<RequestStage>(k))) continue;
        if (previous >= 0) {
          const auto p = static_cast<std::size_t>(previous);
          const std::string phase = fmt::format(R"("{}..{}")", kRequestStageNames[p], kRequestStageNames[k]);
          events.Add(R"({{"name":{},"cat":{},"ph":"B","pid":{},"tid":{},"ts":{},"args":{{"wqe":{}}}}})", phase,
                     category, pid, tid, MicrosecondsText(s.at[p].time_since_epoch().count()), r.wqe);
          events.Add(R"({{"name":{},"cat":{},"ph":"E","pid":{},"tid":{},"ts":{}}})", phase, category, pid, tid,
                     MicrosecondsText(s.at[k].time_since_epoch().count()));
        }
        previous = static_cast<int>(k);
      }
      events.Add(R"({{"name":{},"cat":{},"ph":"E","pid":{},"tid":{},"ts":{}}})", category, category, pid, tid,
                 MicrosecondsText(s.end.time_since_epoch().count()));
    }
  }
  events.Raw("],\"displayTimeUnit\":\"ns\"}\n");
  events.Flush();
}

}  // namespace ndksim
