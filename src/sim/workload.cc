// SPDX-License-Identifier: MIT
// The perftest-style workloads (ndksim/workload.h): set-up and checks, the latency loops (ping-pong,
// ib_write_lat's memory-polling loop, reads) and the stream with its window, post lists and
// selective signaling.
#include "ndksim/workload.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace ndksim {

template <typename Poll>
void Workload::AwaitWithEvent(std::span<const Watched> watched, Poll poll) {
  std::array<int, 2> notified{};  // a stream's two directions at most
  if (watched.size() > notified.size()) throw std::logic_error("workload: an event loop over more than two CQs");
  for (;;) {
    if (poll()) return;
    for (std::size_t i = 0; i < watched.size(); ++i) {
      notified[i] = watched[i].end->cq_notifications;
      watched[i].cq->Dispatch->NdkArmCq(watched[i].cq, NDK_CQ_NOTIFY_ANY);
    }
    if (poll()) return;
    const auto any_notified = [&] {
      for (std::size_t i = 0; i < watched.size(); ++i) {
        if (watched[i].end->cq_notifications != notified[i]) return true;
      }
      return false;
    };
    if (!fabric().RunUntil(any_notified, kCompletionLimit)) {
      throw HarnessError("workload: waiting 1 s of simulated time for a CQ notification", STATUS_IO_TIMEOUT);
    }
  }
}

Workload::Workload(const WorkloadConfig& c) : c_(c) {
  Validate(c);
  QpPairConfig p;
  p.fabric = c.fabric;
  p.initiator_queue_depth = static_cast<ULONG>(InitiatorDepth(c.window));
  p.receive_queue_depth = static_cast<ULONG>(ReceiveDepth(c.window));
  p.cq_depth = static_cast<ULONG>(CqDepth(c.window, static_cast<std::uint64_t>(c.qps)));
  const ULONG reads = c.read_limit > 0 ? c.read_limit : c.fabric.profile.max_outbound_read_limit;
  if (reads > 0) p.inbound_read_limit = p.outbound_read_limit = reads;
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
  if (c.bidirectional && c.op == Operation::kRead) b_rx_ = pair_->b().Register(bytes, sink_flags);
}

void Workload::Validate(const WorkloadConfig& c) {
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
  if (c.read_limit > p.max_outbound_read_limit || c.read_limit > p.max_inbound_read_limit) {
    refuse(fmt::format("a read limit of {} is above profile {}'s {} outstanding reads per QP", c.read_limit, p.name,
                       std::min(p.max_outbound_read_limit, p.max_inbound_read_limit)));
  }
  if (c.bytes > p.max_transfer_bytes) {
    refuse(fmt::format("a message of {} bytes is larger than profile {}'s maximum transfer of {} bytes", c.bytes,
                       p.name, p.max_transfer_bytes));
  }
}

std::size_t Workload::MaxWindow(const HardwareProfile& p) {
  const std::uint64_t by_initiator = p.max_initiator_queue_depth - 1;
  const std::uint64_t by_receive = p.max_receive_queue_depth > kReceiveDepth + 1
                                       ? p.max_receive_queue_depth - kReceiveDepth - 1
                                       : 0;
  return static_cast<std::size_t>(std::min(by_initiator, by_receive));
}

std::vector<double> Workload::Latency(int iterations) {
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

// One direction of a stream: the side that posts and its QPs, what each request gathers from (or
// reads into) and where it points on the peer, and, for sends, the peer's QPs and receive buffer.
struct Workload::StreamSide {
  QpEnd& end;
  QpEnd& peer;
  const std::vector<NDK_QP*>& qps;
  const std::vector<NDK_QP*>& peer_qps;
  NDK_SGE local{};
  std::uint64_t remote_address = 0;
  UINT32 remote_token = 0;
  NDK_SGE peer_receive{};
  std::vector<std::size_t> quota{};      // requests each QP posts in all
  std::vector<std::size_t> posted_on{};
  std::vector<std::size_t> outstanding{};  // posted, not yet retired by a signaled completion
  std::vector<std::size_t> unsignaled{};   // posted since the QP's last signaled request
  std::size_t messages = 0;              // the sum of the quotas
  std::size_t posted = 0;
  std::size_t completed = 0;
  std::size_t received = 0;              // sends: receive completions reaped on the peer
  std::size_t next_qp = 0;
  std::array<NDK_RESULT, 64> results{};
  ULONG got = 0;                         // results waiting in `results`
};

Duration Workload::Stream(std::size_t messages, const std::function<void(std::size_t, std::size_t)>& progress) {
  return RunStream(messages, std::nullopt, progress).elapsed;
}

StreamCount Workload::StreamFor(Duration posting, const std::function<void(std::size_t, std::size_t)>& progress) {
  if (posting <= Duration::zero()) throw std::invalid_argument("workload: a stream's duration must be positive");
  // Per QP as many requests as could ever be posted; the deadline ends the posting.
  const std::size_t unbounded = (std::size_t{1} << 40) * qa_.size();
  return RunStream(unbounded, fabric().Now() + posting, progress);
}

std::vector<Workload::StreamSide> Workload::StreamSides(std::size_t messages) {
  std::vector<StreamSide> sides;
  sides.reserve(2);
  // a -> b: writes land in b_buf_, reads read it into a_rx_, sends arrive in b's receives.
  sides.push_back(StreamSide{pair_->a(), pair_->b(), qa_, qb_});
  StreamSide& ab = sides.back();
  ab.local = c_.op == Operation::kRead ? a_rx_->Sge(0, c_.bytes) : a_buf_->Sge(0, c_.bytes);
  ab.remote_address = b_buf_->Address();
  ab.remote_token = b_buf_->RemoteToken();
  ab.peer_receive = b_buf_->Sge(0, c_.bytes);
  if (c_.bidirectional) {
    // b -> a: writes land in a_rx_, reads read a_buf_ into b_rx_, sends arrive in a's receives.
    sides.push_back(StreamSide{pair_->b(), pair_->a(), qb_, qa_});
    StreamSide& ba = sides.back();
    ba.local = c_.op == Operation::kRead ? b_rx_->Sge(0, c_.bytes) : b_buf_->Sge(0, c_.bytes);
    ba.remote_address = c_.op == Operation::kRead ? a_buf_->Address() : a_rx_->Address();
    ba.remote_token = c_.op == Operation::kRead ? a_buf_->RemoteToken() : a_rx_->RemoteToken();
    ba.peer_receive = a_rx_->Sge(0, c_.bytes);
  }
  const std::size_t nqp = qa_.size();
  for (StreamSide& side : sides) {
    side.quota.assign(nqp, messages / nqp);
    for (std::size_t q = 0; q < messages % nqp; ++q) ++side.quota[q];
    side.posted_on.assign(nqp, 0);
    side.outstanding.assign(nqp, 0);
    side.unsignaled.assign(nqp, 0);
    side.messages = messages;
  }
  // Sends need receives: keep every receive queue of the peer full, re-posting as they complete.
  // A receive's RequestContext names its QP, so its completion says which queue to refill. The
  // receives stay posted from one stream to the next: each completed one is re-posted.
  if (c_.op == Operation::kSend) {
    for (std::size_t s = 0; s < sides.size(); ++s) {
      if (stream_receives_posted_[s]) continue;
      for (std::size_t q = 0; q < nqp; ++q) {
        for (std::size_t k = 0; k < std::max<std::size_t>(c_.window, 16); ++k) PostStreamReceive(sides[s], q);
      }
      stream_receives_posted_[s] = true;
    }
  }
  return sides;
}

StreamCount Workload::RunStream(std::size_t messages, std::optional<TimePoint> stop_posting,
                                const std::function<void(std::size_t, std::size_t)>& progress) {
  streaming_ = true;
  const ScopedCore poller(0);
  std::vector<StreamSide> sides = StreamSides(messages);
  const auto total = [&] {
    std::size_t n = 0;
    for (const StreamSide& side : sides) n += side.messages;
    return n;
  };
  std::size_t completed = 0;
  const TimePoint start = fabric().Now();
  while (completed < total()) {
    if (stop_posting && fabric().Now() >= *stop_posting) {
      // The deadline: each QP posts at most one more request, signaled, so that its tail of
      // unsignaled requests completes too.
      for (StreamSide& side : sides) {
        side.messages = 0;
        for (std::size_t q = 0; q < side.quota.size(); ++q) {
          side.quota[q] = side.posted_on[q] + (side.unsignaled[q] > 0 ? 1 : 0);
          side.messages += side.quota[q];
        }
      }
      stop_posting.reset();
      continue;
    }
    bool progressed = false;
    for (StreamSide& side : sides) progressed |= PostChains(side);
    if (progressed) continue;
    // Nothing could be posted: run the simulation until some completion arrives (with events,
    // until an armed CQ's notification says it has).
    AwaitStreamCompletions(sides);
    for (StreamSide& side : sides) {
      for (ULONG i = 0; i < side.got; ++i) {
        Check("stream request", side.results[i].Status);
        const std::size_t q = TagQp(side.results[i].RequestContext);
        const std::size_t count = TagCount(side.results[i].RequestContext);
        side.outstanding[q] -= count;
        side.completed += count;
        completed += count;
      }
      side.got = 0;
      if (c_.op == Operation::kSend) side.received += ReplenishReceives(side);
    }
    if (progress) progress(completed, total());
  }
  const Duration elapsed = fabric().Now() - start;
  // Every send's receive completion is reaped (and its receive re-posted) before the stream
  // ends, so none is left on a receive CQ for a later phase to mistake for its own.
  if (c_.op == Operation::kSend) {
    const auto all_received = [&] {
      bool all = true;
      for (StreamSide& side : sides) {
        side.received += ReplenishReceives(side);
        all = all && side.received >= side.messages;
      }
      return all;
    };
    fabric().RunUntil(all_received, kCompletionLimit);
    if (!all_received()) {
      throw HarnessError("stream: waiting 1 s of simulated time for the receive completions", STATUS_IO_TIMEOUT);
    }
  }
  return {elapsed, total()};
}

bool Workload::PostChains(StreamSide& side) {
  const auto cores = static_cast<std::size_t>(c_.cores);
  const std::size_t nqp = side.qps.size();
  const ULONG nsge = c_.bytes ? 1u : 0u;
  bool progressed = false;
  // Post whole chains while the chosen QP has room in its window.
  for (std::size_t tries = 0; tries < nqp && side.posted < side.messages; ++tries) {
    const std::size_t q = side.next_qp;
    side.next_qp = (side.next_qp + 1) % nqp;
    const std::size_t n = std::min(c_.post_list, side.quota[q] - side.posted_on[q]);
    if (n == 0 || side.outstanding[q] + n > c_.window) continue;
    // If the QP cannot post its next chain after this one, this chain's last request is
    // signaled, so that the window opens again.
    const std::size_t next_n = std::min(c_.post_list, side.quota[q] - side.posted_on[q] - n);
    const bool window_full_after = side.outstanding[q] + n + next_n > c_.window;
    for (std::size_t k = 0; k < n; ++k) {
      ++side.unsignaled[q];
      const bool last_of_chain = k + 1 == n;
      const bool last_on_qp = side.posted_on[q] + k + 1 == side.quota[q];
      const bool signal = side.unsignaled[q] >= c_.signal_every || last_on_qp || (last_of_chain && window_full_after);
      ULONG flags = InlineFlag();
      if (k + 1 < n) flags |= NDK_OP_FLAG_DEFER;
      void* ctx = nullptr;
      if (signal) {
        ctx = Tag(q, side.unsignaled[q]);
        side.unsignaled[q] = 0;
      } else {
        flags |= NDK_OP_FLAG_SILENT_SUCCESS;
      }
      const ScopedCore on(static_cast<std::uint32_t>(q % cores));
      Post(side, side.qps[q], ctx, nsge, flags);
    }
    side.outstanding[q] += n;
    side.posted_on[q] += n;
    side.posted += n;
    progressed = true;
  }
  return progressed;
}

void Workload::AwaitStreamCompletions(std::vector<StreamSide>& sides) {
  const auto poll = [&] {
    bool any = false;
    for (StreamSide& side : sides) {
      NDK_CQ* cq = side.end.initiator_cq;
      if (side.got == 0) side.got = cq->Dispatch->NdkGetCqResults(cq, side.results.data(), 64);
      any = any || side.got > 0;
    }
    return any;
  };
  if (!c_.events) {
    if (!fabric().RunUntil(poll, kCompletionLimit)) {
      throw HarnessError("stream: waiting 1 s of simulated time for a completion", STATUS_IO_TIMEOUT);
    }
    return;
  }
  std::array<Watched, 2> watched{};
  for (std::size_t s = 0; s < sides.size(); ++s) watched[s] = {&sides[s].end, sides[s].end.initiator_cq};
  AwaitWithEvent(std::span<const Watched>(watched.data(), sides.size()), poll);
}

void Workload::Post(const StreamSide& side, NDK_QP* qp, void* ctx, ULONG nsge, ULONG flags) {
  switch (c_.op) {
    case Operation::kWrite:
      Check("NdkWrite", qp->Dispatch->NdkWrite(qp, ctx, &side.local, nsge, side.remote_address, side.remote_token, flags));
      return;
    case Operation::kRead:
      Check("NdkRead", qp->Dispatch->NdkRead(qp, ctx, &side.local, nsge, side.remote_address, side.remote_token, flags));
      return;
    case Operation::kSend:
      Check("NdkSend", qp->Dispatch->NdkSend(qp, ctx, &side.local, nsge, flags));
      return;
  }
}

void Workload::PostStreamReceive(const StreamSide& side, std::size_t q) {
  NDK_QP* qp = side.peer_qps[q];
  Check("NdkReceive", qp->Dispatch->NdkReceive(qp, Tag(q, 1), &side.peer_receive, c_.bytes ? 1u : 0u));
}

std::size_t Workload::ReplenishReceives(const StreamSide& side) {
  NDK_RESULT rx[64];
  ULONG n;
  std::size_t reaped = 0;
  NDK_CQ* cq = side.peer.receive_cq;
  while ((n = cq->Dispatch->NdkGetCqResults(cq, rx, 64)) > 0) {
    for (ULONG i = 0; i < n; ++i) {
      Check("stream receive", rx[i].Status);
      PostStreamReceive(side, TagQp(rx[i].RequestContext));
    }
    reaped += n;
  }
  return reaped;
}

double Workload::ReadOnce() {
  const NDK_SGE sge = a_rx_->Sge(0, c_.bytes);
  const TimePoint t0 = fabric().Now();
  Check("NdkRead", pair_->a().Read(nullptr, {&sge, c_.bytes ? 1u : 0u}, b_buf_->Address(), b_buf_->RemoteToken()));
  Wait(pair_->a(), pair_->a().initiator_cq);
  return ToNanoseconds(fabric().Now() - t0);
}

double Workload::PingPongOnce() {
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

std::vector<double> Workload::WritePingPong(int iterations) {
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

void Workload::Wait(QpEnd& end, NDK_CQ* cq) {
  if (c_.events) {
    NDK_RESULT r[1];
    const Watched watched[] = {{&end, cq}};
    AwaitWithEvent(watched, [&] { return cq->Dispatch->NdkGetCqResults(cq, r, 1) > 0; });
    Check("workload request", r[0].Status);
    return;
  }
  const auto r = pair_->Collect(cq, 1, kCompletionLimit);
  if (r.empty()) throw HarnessError("workload: waiting 1 s of simulated time for a completion", STATUS_IO_TIMEOUT);
  Check("workload request", r[0].Status);
}

}  // namespace ndksim
