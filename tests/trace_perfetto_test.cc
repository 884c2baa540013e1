// SPDX-License-Identifier: MIT
// The request trace as Perfetto imports it: nested slices on every track, named processes and tracks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ndksim/workload.h"

namespace ndksim {
namespace {

using nlohmann::json;
using ::testing::StartsWith;

// ---- the trace as Perfetto imports it ------------------------------------------------------------

using Track = std::pair<std::int64_t, std::int64_t>;  // (pid, tid)

struct Slice {
  std::string name;
  std::string cat;
  std::int64_t begin = 0;  // ns, as Perfetto rounds the file's microseconds
  std::int64_t end = 0;
  std::size_t depth = 0;
};

// Perfetto reads a JSON number of microseconds as llround(us * 1000) nanoseconds.
std::int64_t Nanoseconds(const json& us) { return std::llround(us.get<double>() * 1000.0); }

// The end of a slice begun and not yet ended.
constexpr std::int64_t kOpen = std::numeric_limits<std::int64_t>::max();

std::int64_t Int(const json& v) { return v.get<std::int64_t>(); }

struct Imported {
  std::map<Track, std::vector<Slice>> slices;              // thread tracks: "X" events, "B"/"E" pairs
  std::map<std::string, std::vector<Slice>> async_slices;  // per (pid, cat, id): "b"/"e" pairs
  std::vector<std::string> mismatches;                     // an end closing nothing, a begin never ended
  std::set<std::int64_t> pids;                             // of every event that is not metadata
  std::set<Track> tracks;                                  // (pid, tid) of every thread-track event
  std::map<std::int64_t, std::string> process_names;
  std::map<Track, std::string> thread_names;
};

// Replays the events in the order Perfetto's sorter gives them: by rounded timestamp, then (when
// the trace has "X" events) ends first and longer complete events before shorter ones, then file
// order. An end must close the innermost open slice of its track, with the same name and category.
Imported Import(const json& trace) {
  Imported out;
  const json& events = trace.at("traceEvents");
  struct Ordered {
    std::int64_t ts;
    std::int64_t key;  // Perfetto's tie-break when there are "X" events
    std::size_t index;
  };
  std::vector<Ordered> order;
  bool has_complete = false;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    const std::string ph = e.at("ph");
    if (ph == "M") {
      const std::string name = e.at("name");
      if (name == "process_name") out.process_names[Int(e.at("pid"))] = e.at("args").at("name");
      if (name == "thread_name") out.thread_names[{Int(e.at("pid")), Int(e.at("tid"))}] = e.at("args").at("name");
      continue;
    }
    has_complete |= ph == "X";
    out.pids.insert(Int(e.at("pid")));
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    const std::int64_t key = ph == "E"   ? std::numeric_limits<std::int64_t>::min()
                             : ph == "X" ? kMax - Nanoseconds(e.at("dur"))
                                         : kMax;
    order.push_back({Nanoseconds(e.at("ts")), key, i});
  }
  std::stable_sort(order.begin(), order.end(), [&](const Ordered& a, const Ordered& b) {
    if (!has_complete) return a.ts < b.ts;
    return std::tie(a.ts, a.key) < std::tie(b.ts, b.key);
  });

  std::map<Track, std::vector<Slice>> open;
  std::map<std::string, std::vector<Slice>> open_async;
  for (const Ordered& o : order) {
    const json& e = events[o.index];
    const std::string ph = e.at("ph");
    Slice s{e.value("name", ""), e.value("cat", ""), o.ts, o.ts, 0};
    if (ph == "b" || ph == "e") {
      const std::string key = fmt::format("async {}/{}/{}", Int(e.at("pid")), s.cat, e.at("id").dump());
      auto& stack = open_async[key];
      if (ph == "b") {
        s.depth = stack.size();
        stack.push_back(s);
      } else if (stack.empty() || stack.back().name != s.name) {
        out.mismatches.push_back(fmt::format("async end of {} at {} ns closes nothing", s.name, o.ts));
      } else {
        Slice done = stack.back();
        stack.pop_back();
        done.end = o.ts;
        out.async_slices[key].push_back(done);
      }
      continue;
    }
    const Track track{Int(e.at("pid")), Int(e.at("tid"))};
    out.tracks.insert(track);
    auto& stack = open[track];
    if (ph == "X") {
      // Perfetto ends a complete event at its rounded ts plus its rounded duration.
      s.end = o.ts + Nanoseconds(e.at("dur"));
      while (!stack.empty() && stack.back().end != kOpen && stack.back().end <= s.begin) stack.pop_back();
      s.depth = stack.size();
      out.slices[track].push_back(s);
      stack.push_back(s);
    } else if (ph == "B") {
      while (!stack.empty() && stack.back().end != kOpen && stack.back().end <= s.begin) stack.pop_back();
      s.depth = stack.size();
      s.end = kOpen;
      stack.push_back(s);
    } else if (ph == "E") {
      while (!stack.empty() && stack.back().end != kOpen && stack.back().end <= s.begin) stack.pop_back();
      if (stack.empty() || stack.back().end != kOpen || stack.back().name != s.name || stack.back().cat != s.cat) {
        out.mismatches.push_back(
            fmt::format("end of {} at {} ns on track {}/{} closes nothing", s.name, o.ts, track.first, track.second));
      } else {
        Slice done = stack.back();
        stack.pop_back();
        done.end = o.ts;
        out.slices[track].push_back(done);
      }
    }
  }
  for (const auto& [track, stack] : open) {
    for (const Slice& s : stack) {
      if (s.end == kOpen) {
        out.mismatches.push_back(fmt::format("{} on track {}/{} never ends", s.name, track.first, track.second));
      }
    }
  }
  for (const auto& [key, stack] : open_async) {
    for (const Slice& s : stack) out.mismatches.push_back(fmt::format("async {} ({}) never ends", s.name, key));
  }
  return out;
}

// Perfetto's rule: two slices of one track nest, or one ends before the other starts.
bool NestOrDisjoint(const Slice& a, const Slice& b) {
  const bool a_holds_b = a.begin <= b.begin && b.end <= a.end;
  const bool b_holds_a = b.begin <= a.begin && a.end <= b.end;
  const bool disjoint = a.end <= b.begin || b.end <= a.begin;
  return a_holds_b || b_holds_a || disjoint;
}

// Every pair of slices of one track that breaks the rule, described. Sorted by start, a slice can
// only overlap those that start before it ends.
void AddOverlaps(const std::string& track, std::vector<Slice> list, std::vector<std::string>& bad) {
  std::sort(list.begin(), list.end(), [](const Slice& a, const Slice& b) { return a.begin < b.begin; });
  for (std::size_t i = 0; i < list.size(); ++i) {
    for (std::size_t j = i + 1; j < list.size() && list[j].begin < list[i].end; ++j) {
      if (!NestOrDisjoint(list[i], list[j])) {
        bad.push_back(fmt::format("{}: {} [{}, {}) and {} [{}, {})", track, list[i].name, list[i].begin, list[i].end,
                                  list[j].name, list[j].begin, list[j].end));
      }
    }
  }
}

// The same, over every thread track and every async id.
std::vector<std::string> Overlaps(const Imported& imported) {
  std::vector<std::string> bad;
  for (const auto& [track, list] : imported.slices) {
    AddOverlaps(fmt::format("track {}/{}", track.first, track.second), list, bad);
  }
  for (const auto& [key, list] : imported.async_slices) AddOverlaps(key, list, bad);
  return bad;
}

// ---- real traces ---------------------------------------------------------------------------------

struct Traced {
  std::unique_ptr<Workload> w;
  std::size_t messages = 0;
  std::string text;
  json trace;

  const RequestLog& Log() const { return w->fabric().Trace().Requests(); }
};

// Streams `messages` requests with the request log on and exports the trace.
Traced Trace(const WorkloadConfig& c, std::size_t messages, const std::string& node_name = "") {
  Traced t;
  t.w = std::make_unique<Workload>(c);
  t.messages = messages;
  RequestLog& log = t.w->fabric().Trace().Requests();
  log.Enable();
  t.w->Stream(messages);
  if (!node_name.empty()) log.SetNodeName(log.Records().front().node, node_name);
  std::ostringstream out;
  log.WriteChromeTrace(out);
  t.text = out.str();
  t.trace = json::parse(t.text);
  return t;
}

// A stream of 64-KiB writes on one QP, up to 16 in flight.
WorkloadConfig Writes() {
  WorkloadConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  c.fabric.seed = 7;
  c.op = Operation::kWrite;
  c.bytes = 64 * 1024;
  c.window = 16;
  return c;
}

// A stream of 16-KiB reads over four QPs, up to 8 in flight on each.
WorkloadConfig ReadsOnFourQps() {
  WorkloadConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  c.fabric.seed = 11;
  c.op = Operation::kRead;
  c.bytes = 16 * 1024;
  c.qps = 4;
  c.window = 8;
  return c;
}

std::size_t Posted(const RequestLog& log) {
  return static_cast<std::size_t>(std::count_if(log.Records().begin(), log.Records().end(), [](const RequestRecord& r) {
    return r.Reached(RequestStage::kPosted);
  }));
}

std::size_t TopLevelSlices(const Imported& imported) {
  std::size_t n = 0;
  for (const auto& [track, list] : imported.slices) {
    n += static_cast<std::size_t>(std::count_if(list.begin(), list.end(), [](const Slice& s) { return s.depth == 0; }));
  }
  return n;
}

TEST(PerfettoTrace, EveryEndClosesTheSliceItBegan) {
  const Traced t = Trace(Writes(), 64);
  const Imported imported = Import(t.trace);
  EXPECT_THAT(imported.mismatches, ::testing::IsEmpty());
}

TEST(PerfettoTrace, SlicesOnEveryTrackNestOrAreDisjoint) {
  const Traced t = Trace(Writes(), 64);
  const Imported imported = Import(t.trace);
  ASSERT_FALSE(imported.slices.empty());
  EXPECT_THAT(Overlaps(imported), ::testing::IsEmpty());
}

TEST(PerfettoTrace, OneRequestSlicePerPostedRequest) {
  const Traced t = Trace(Writes(), 64);
  ASSERT_EQ(Posted(t.Log()), 64u);
  EXPECT_EQ(TopLevelSlices(Import(t.trace)), 64u);
}

TEST(PerfettoTrace, PhasesNestInsideTheirRequest) {
  const Traced t = Trace(Writes(), 64);
  const Imported imported = Import(t.trace);
  std::size_t phases = 0;
  for (const auto& [track, list] : imported.slices) {
    for (const Slice& s : list) {
      if (s.depth == 0) {
        EXPECT_EQ(s.name, "Write");
      } else {
        EXPECT_EQ(s.depth, 1u) << s.name;
        EXPECT_THAT(s.name, ::testing::HasSubstr(".."));
        ++phases;
      }
    }
  }
  // One phase between each two stages a request reached.
  std::size_t intervals = 0;
  for (const RequestRecord& r : t.Log().Records()) {
    intervals += static_cast<std::size_t>(std::popcount(static_cast<unsigned>(r.seen))) - 1;
  }
  EXPECT_EQ(phases, intervals);
}

TEST(PerfettoTrace, EveryProcessAndTrackIsNamed) {
  const Traced t = Trace(Writes(), 64);
  const Imported imported = Import(t.trace);
  ASSERT_FALSE(imported.tracks.empty());
  for (const std::int64_t pid : imported.pids) {
    ASSERT_TRUE(imported.process_names.contains(pid)) << "pid " << pid;
    EXPECT_FALSE(imported.process_names.at(pid).empty()) << "pid " << pid;
  }
  const std::uint32_t qpn = *t.w->pair().a().node->QpNumber(t.w->Initiators()[0]);
  for (const Track& track : imported.tracks) {
    ASSERT_TRUE(imported.thread_names.contains(track)) << "track " << track.first << "/" << track.second;
    EXPECT_THAT(imported.thread_names.at(track), StartsWith(fmt::format("QP 0x{:06x} slot ", qpn)));
  }
}

TEST(PerfettoTrace, ProcessesTakeTheirNodesNames) {
  const Traced t = Trace(Writes(), 8, R"(initiator "a")");
  const Imported imported = Import(t.trace);
  ASSERT_EQ(imported.pids.size(), 1u);
  EXPECT_EQ(imported.process_names.at(*imported.pids.begin()), R"(initiator "a")");
}

TEST(PerfettoTrace, TimesAreTheRecordedPicosecondsInMicroseconds) {
  const Traced t = Trace(Writes(), 64);
  std::map<std::pair<std::uint32_t, std::uint32_t>, const RequestRecord*> records;  // (qpn, wqe)
  for (const RequestRecord& r : t.Log().Records()) records[{r.qpn, r.wqe}] = &r;
  std::size_t checked = 0;
  for (const json& e : t.trace.at("traceEvents")) {
    // A request's begin carries its QP and WQE; it begins when the request was posted.
    if (e.at("ph") != "B" || !e.at("args").contains("qpn")) continue;
    const auto it =
        records.find({e.at("args").at("qpn").get<std::uint32_t>(), e.at("args").at("wqe").get<std::uint32_t>()});
    ASSERT_NE(it, records.end());
    const std::int64_t posted = it->second->At(RequestStage::kPosted).time_since_epoch().count();
    EXPECT_EQ(std::llround(e.at("ts").get<double>() * 1e6), posted);
    ++checked;
  }
  EXPECT_EQ(checked, 64u);
}

// ---- several QPs, reads ----------------------------------------------------------------------------

TEST(PerfettoTraceOfReadsOnFourQps, SlicesOnEveryTrackNestOrAreDisjoint) {
  const Traced t = Trace(ReadsOnFourQps(), 96);
  const Imported imported = Import(t.trace);
  ASSERT_THAT(imported.mismatches, ::testing::IsEmpty());
  EXPECT_THAT(Overlaps(imported), ::testing::IsEmpty());
  EXPECT_EQ(TopLevelSlices(imported), 96u);
}

TEST(PerfettoTraceOfReadsOnFourQps, EachQpHasTracksOfItsOwn) {
  const Traced t = Trace(ReadsOnFourQps(), 96);
  const Imported imported = Import(t.trace);
  std::set<std::string> qps_with_tracks;
  for (const Track& track : imported.tracks) {
    const std::string& name = imported.thread_names.at(track);
    qps_with_tracks.insert(name.substr(0, name.find(" slot ")));
  }
  std::set<std::string> initiators;
  for (NDK_QP* qp : t.w->Initiators()) {
    initiators.insert(fmt::format("QP 0x{:06x}", *t.w->pair().a().node->QpNumber(qp)));
  }
  EXPECT_EQ(qps_with_tracks, initiators);
}

TEST(PerfettoTraceOfReadsOnFourQps, EachQpHasAsManySlotsAsItHadRequestsInFlight) {
  const Traced t = Trace(ReadsOnFourQps(), 96);
  const Imported imported = Import(t.trace);
  // The most requests in flight at once on each QP, from the records: a request holds its slot
  // from its first stage to its last, and frees it for one that starts at that instant.
  std::map<std::uint32_t, std::vector<std::pair<TimePoint, int>>> edges;
  for (const RequestRecord& r : t.Log().Records()) {
    TimePoint first = TimePoint::max();
    TimePoint last = TimePoint::min();
    for (std::size_t k = 0; k < kRequestStageNames.size(); ++k) {
      if (!r.Reached(static_cast<RequestStage>(k))) continue;
      first = std::min(first, r.at[k]);
      last = std::max(last, r.at[k]);
    }
    edges[r.qpn].emplace_back(first, +1);
    edges[r.qpn].emplace_back(last, -1);
  }
  std::map<std::string, std::size_t> slots;  // per track-name prefix "QP 0x000001"
  for (const Track& track : imported.tracks) {
    const std::string& name = imported.thread_names.at(track);
    ++slots[name.substr(0, name.find(" slot "))];
  }
  ASSERT_EQ(edges.size(), 4u);
  for (auto& [qpn, list] : edges) {
    std::sort(list.begin(), list.end());  // at one instant, ends (-1) before starts
    int in_flight = 0;
    int most = 0;
    for (const auto& edge : list) {
      in_flight += edge.second;
      most = std::max(most, in_flight);
    }
    EXPECT_EQ(slots[fmt::format("QP 0x{:06x}", qpn)], static_cast<std::size_t>(most)) << "QP " << qpn;
  }
}

}  // namespace
}  // namespace ndksim
