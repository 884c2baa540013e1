// SPDX-License-Identifier: MIT
// Threaded mode: the engine on its own thread while application threads post, poll and make
// control calls. Every test counts each completion exactly once and checks the bytes it moved; a
// generous watchdog turns a hang into a failure that prints each QP's state (it measures no speed).
#include <pthread.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ndksim/harness.h"
#include "ndksim/names.h"
#include "ndksim/testing.h"
#include "sanitizers.h"

namespace ndksim {
namespace {

using namespace std::chrono_literals;

// Fails the test (and says why) when `progress()` stops changing for `quiet` of wall time; calls
// `dump()` for the failure message. Not a timing assertion: progress only has to continue.
class Watchdog {
 public:
  Watchdog(std::function<std::uint64_t()> progress, std::function<std::string()> dump,
           std::chrono::seconds quiet = 120s)
      : progress_(std::move(progress)), dump_(std::move(dump)), quiet_(quiet) {}

  // True while the work goes on; false (after recording a failure) once it stalled.
  bool Alive() {
    const std::lock_guard lock(mutex_);  // the pollers share one watchdog
    const std::uint64_t now = progress_();
    const auto wall = std::chrono::steady_clock::now();
    if (now != last_) {
      last_ = now;
      since_ = wall;
      return true;
    }
    if (wall - since_ < quiet_) return true;
    if (!fired_.exchange(true)) ADD_FAILURE() << "no progress for " << quiet_.count() << " s:\n" << dump_();
    return false;
  }
  bool Fired() const { return fired_.load(); }

 private:
  std::function<std::uint64_t()> progress_;
  std::function<std::string()> dump_;
  std::chrono::seconds quiet_;
  std::uint64_t last_ = ~std::uint64_t{0};
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
  std::atomic<bool> fired_{false};
  std::mutex mutex_;
};

// Waits politely: the machine may have fewer cores than the test has threads.
void Pause() { std::this_thread::yield(); }

// ---- four posters on four QPs, two pollers, a million sends (fewer under a sanitizer) -------------

constexpr int kQps = 4;
constexpr std::uint32_t kWindow = 32;        // sends in flight per QP
constexpr std::uint32_t kReceives = 128;     // receives posted per QP at B
constexpr std::uint32_t kMessageBytes = 64;

std::byte PatternByte(std::uint32_t qp, std::uint32_t seq, std::uint32_t k) {
  return static_cast<std::byte>((qp * 131u + seq * 7u + k * 13u) & 0xFF);
}

std::uint64_t Context(std::uint32_t qp, std::uint32_t seq) { return (std::uint64_t{qp} << 32) | seq; }

struct QpState {
  NDK_QP* a = nullptr;
  NDK_QP* b = nullptr;
  std::atomic<std::uint32_t> posted{0};     // sends posted at A (poster thread)
  std::atomic<std::uint32_t> completed{0};  // send completions reaped at A (poller A)
  std::atomic<std::uint32_t> received{0};   // receive completions reaped at B (poller B)
  std::atomic<std::uint32_t> reposted{0};   // receives posted again at B (poller B)
  std::atomic<std::uint32_t> errors{0};
};

TEST(ThreadedEngine, FourPostersOnFourQpsAndTwoPollersCompleteEverySendExactlyOnce) {
  // 10^6 operations in all; 2 * 10^5 under a sanitizer, which runs them 10-20 times slower (each
  // QP's sends still wrap its 32-entry window 1,562 times and its 128 receives 390 times).
  constexpr bool kSanitized = testing_build::kUnderTsan || testing_build::kUnderAsan;
  constexpr std::uint32_t kPerQp = kSanitized ? 50'000 : 250'000;
  QpPairConfig config;
  config.receive_queue_depth = kReceives;
  config.initiator_queue_depth = kWindow;
  config.cq_depth = 4096;
  QpPair pair(config);
  std::array<QpState, kQps> qps;
  qps[0].a = pair.a().qp;
  qps[0].b = pair.b().qp;
  for (int i = 1; i < kQps; ++i) {
    const QpPair::ExtraQps extra = pair.AddConnectedQps();
    qps[i].a = extra.a;
    qps[i].b = extra.b;
  }
  // A: one send buffer per QP with a slot per window entry; B: a receive buffer slot per receive.
  std::vector<std::unique_ptr<RegisteredBuffer>> send_buffers, receive_buffers;
  for (int i = 0; i < kQps; ++i) {
    send_buffers.push_back(pair.a().Register(kWindow * kMessageBytes));
    receive_buffers.push_back(pair.b().Register(kReceives * kMessageBytes));
    for (std::uint32_t r = 0; r < kReceives; ++r) {
      const NDK_SGE sge = receive_buffers[i]->Sge(r * kMessageBytes, kMessageBytes);
      ASSERT_NT_SUCCESS(qps[i].b->Dispatch->NdkReceive(qps[i].b, reinterpret_cast<void*>(Context(i, r)), &sge, 1));
    }
  }
  std::atomic<std::uint32_t> duplicate_or_unknown{0};
  std::atomic<std::uint32_t> corrupt{0};
  std::atomic<bool> stop{false};

  auto dump = [&] {
    std::string s;
    for (int i = 0; i < kQps; ++i) {
      s += fmt::format("qp {}: posted {} completed {} received {} reposted {} errors {}\n", i, qps[i].posted.load(),
                       qps[i].completed.load(), qps[i].received.load(), qps[i].reposted.load(), qps[i].errors.load());
    }
    return s;
  };
  Watchdog watchdog(
      [&] {
        std::uint64_t p = 0;
        for (auto& q : qps) p += q.posted.load() + q.completed.load() + q.received.load();
        return p;
      },
      dump);

  pair.fabric().Start();
  std::vector<std::thread> threads;
  for (std::uint32_t i = 0; i < kQps; ++i) {
    threads.emplace_back([&, i] {
      QpState& q = qps[i];
      for (std::uint32_t seq = 0; seq < kPerQp && !stop.load(); ++seq) {
        // The window, and B's receives: never more sends than receives posted for them.
        while (!stop.load() && (seq - q.completed.load(std::memory_order_acquire) >= kWindow ||
                                seq >= kReceives + q.reposted.load(std::memory_order_acquire))) {
          Pause();
        }
        if (stop.load()) break;
        std::byte* slot = send_buffers[i]->Data() + (seq % kWindow) * kMessageBytes;
        for (std::uint32_t k = 0; k < kMessageBytes; ++k) slot[k] = PatternByte(i, seq, k);
        const NDK_SGE sge = send_buffers[i]->Sge((seq % kWindow) * kMessageBytes, kMessageBytes);
        const NTSTATUS s = q.a->Dispatch->NdkSend(q.a, reinterpret_cast<void*>(Context(i, seq)), &sge, 1, 0);
        if (s != STATUS_SUCCESS) {
          ++q.errors;
          stop = true;
          break;
        }
        q.posted.fetch_add(1, std::memory_order_release);
      }
    });
  }
  // Poller A: send completions, in order per QP (one QP's sends complete in order).
  threads.emplace_back([&] {
    NDK_RESULT_EX r[64];
    while (!stop.load()) {
      const ULONG n = pair.a().initiator_cq->Dispatch->NdkGetCqResultsEx(pair.a().initiator_cq, r, 64);
      for (ULONG j = 0; j < n; ++j) {
        const auto ctx = reinterpret_cast<std::uint64_t>(r[j].RequestContext);
        const auto i = static_cast<std::uint32_t>(ctx >> 32);
        const auto seq = static_cast<std::uint32_t>(ctx);
        if (r[j].Status != STATUS_SUCCESS || i >= kQps) {
          ++qps[i < kQps ? i : 0].errors;
          stop = true;
          continue;
        }
        if (seq != qps[i].completed.load()) ++duplicate_or_unknown;
        qps[i].completed.fetch_add(1, std::memory_order_release);
      }
      std::uint32_t done = 0;
      for (auto& q : qps) done += q.completed.load();
      if (done == kQps * kPerQp) break;
      if (n == 0) {
        if (!watchdog.Alive()) stop = true;
        Pause();
      }
    }
  });
  // Poller B: receive completions; checks every byte and posts the receive again.
  threads.emplace_back([&] {
    NDK_RESULT_EX r[64];
    while (!stop.load()) {
      const ULONG n = pair.b().receive_cq->Dispatch->NdkGetCqResultsEx(pair.b().receive_cq, r, 64);
      for (ULONG j = 0; j < n; ++j) {
        const auto ctx = reinterpret_cast<std::uint64_t>(r[j].RequestContext);
        const auto i = static_cast<std::uint32_t>(ctx >> 32);
        const auto slot = static_cast<std::uint32_t>(ctx);
        if (r[j].Status != STATUS_SUCCESS || i >= kQps || r[j].BytesTransferred != kMessageBytes) {
          ++qps[i < kQps ? i : 0].errors;
          stop = true;
          continue;
        }
        QpState& q = qps[i];
        const std::uint32_t seq = q.received.load();  // one QP's messages arrive in order
        const std::byte* data = receive_buffers[i]->Data() + slot * kMessageBytes;
        for (std::uint32_t k = 0; k < kMessageBytes; ++k) {
          if (data[k] != PatternByte(i, seq, k)) {
            ++corrupt;
            break;
          }
        }
        q.received.fetch_add(1, std::memory_order_release);
        const NDK_SGE sge = receive_buffers[i]->Sge(slot * kMessageBytes, kMessageBytes);
        if (q.b->Dispatch->NdkReceive(q.b, reinterpret_cast<void*>(Context(i, slot)), &sge, 1) != STATUS_SUCCESS) {
          ++q.errors;
          stop = true;
        }
        q.reposted.fetch_add(1, std::memory_order_release);
      }
      std::uint32_t done = 0;
      for (auto& q : qps) done += q.received.load();
      if (done == kQps * kPerQp) break;
      if (n == 0) {
        if (!watchdog.Alive()) stop = true;
        Pause();
      }
    }
  });
  for (auto& t : threads) t.join();
  pair.fabric().Stop();

  EXPECT_FALSE(watchdog.Fired());
  EXPECT_EQ(duplicate_or_unknown.load(), 0u);
  EXPECT_EQ(corrupt.load(), 0u);
  for (int i = 0; i < kQps; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(qps[i].errors.load(), 0u);
    EXPECT_EQ(qps[i].posted.load(), kPerQp);
    EXPECT_EQ(qps[i].completed.load(), kPerQp);
    EXPECT_EQ(qps[i].received.load(), kPerQp);
  }
  // Nothing more: no completion beyond one per post.
  std::vector<NDK_RESULT_EX> extra;
  pair.fabric().RunUntilIdle();
  QpEnd::Poll(pair.a().initiator_cq, extra);
  QpEnd::Poll(pair.b().receive_cq, extra);
  EXPECT_THAT(extra, ::testing::IsEmpty());
}

// ---- one QP's initiator and receive queues from two threads ------------------------------------

TEST(ThreadedEngine, OneQpsInitiatorAndReceiveQueuesServeTwoThreadsAtOnce) {
  constexpr std::uint32_t kMessages = 20'000;
  QpPairConfig config;
  config.receive_queue_depth = kReceives;
  config.initiator_queue_depth = kWindow;
  QpPair pair(config);
  QpEnd& a = pair.a();
  QpEnd& b = pair.b();
  auto a_send = a.Register(kWindow * kMessageBytes);
  auto a_receive = a.Register(kReceives * kMessageBytes);
  auto b_send = b.Register(kWindow * kMessageBytes);
  auto b_receive = b.Register(kReceives * kMessageBytes);
  for (std::uint32_t r = 0; r < kReceives; ++r) {
    const NDK_SGE sa = a_receive->Sge(r * kMessageBytes, kMessageBytes);
    ASSERT_NT_SUCCESS(a.qp->Dispatch->NdkReceive(a.qp, reinterpret_cast<void*>(std::uintptr_t{r}), &sa, 1));
    const NDK_SGE sb = b_receive->Sge(r * kMessageBytes, kMessageBytes);
    ASSERT_NT_SUCCESS(b.qp->Dispatch->NdkReceive(b.qp, reinterpret_cast<void*>(std::uintptr_t{r}), &sb, 1));
  }
  // Each side sends to the other; on A, one thread posts the sends and reaps their completions
  // while another reaps the receives and posts them again: A's initiator and receive queues are
  // used from two threads at once. B echoes nothing; its own thread does both of its queues.
  struct Side {
    std::atomic<std::uint32_t> sent{0}, send_done{0}, received{0}, reposted{0}, bad{0};
  } sa, sb;
  std::atomic<bool> stop{false};
  Watchdog watchdog([&] { return sa.send_done + sa.received + sb.send_done + sb.received; },
                    [&] {
                      return fmt::format("A: sent {} done {} received {} | B: sent {} done {} received {}\n",
                                         sa.sent.load(), sa.send_done.load(), sa.received.load(), sb.sent.load(),
                                         sb.send_done.load(), sb.received.load());
                    });
  auto sender = [&](QpEnd& end, RegisteredBuffer& buffer, Side& me, Side& peer, std::uint32_t tag) {
    NDK_RESULT_EX r[16];
    for (std::uint32_t seq = 0; seq < kMessages && !stop;) {
      const ULONG n = end.initiator_cq->Dispatch->NdkGetCqResultsEx(end.initiator_cq, r, 16);
      for (ULONG j = 0; j < n; ++j) {
        if (r[j].Status != STATUS_SUCCESS || reinterpret_cast<std::uintptr_t>(r[j].RequestContext) != me.send_done) {
          ++me.bad;
        }
        ++me.send_done;
      }
      if (seq - me.send_done < kWindow && seq < kReceives + peer.reposted) {
        std::byte* slot = buffer.Data() + (seq % kWindow) * kMessageBytes;
        for (std::uint32_t k = 0; k < kMessageBytes; ++k) slot[k] = PatternByte(tag, seq, k);
        const NDK_SGE sge = buffer.Sge((seq % kWindow) * kMessageBytes, kMessageBytes);
        if (end.qp->Dispatch->NdkSend(end.qp, reinterpret_cast<void*>(std::uintptr_t{seq}), &sge, 1, 0) !=
            STATUS_SUCCESS) {
          ++me.bad;
          stop = true;
        }
        ++me.sent;
        ++seq;
      } else if (n == 0) {
        if (!watchdog.Alive()) stop = true;
        Pause();
      }
    }
    while (!stop && me.send_done < kMessages) {
      const ULONG n = end.initiator_cq->Dispatch->NdkGetCqResultsEx(end.initiator_cq, r, 16);
      me.send_done += n;
      if (n == 0 && !watchdog.Alive()) stop = true;
      if (n == 0) Pause();
    }
  };
  auto receiver = [&](QpEnd& end, RegisteredBuffer& buffer, Side& me, std::uint32_t peer_tag) {
    NDK_RESULT_EX r[16];
    while (!stop && me.received < kMessages) {
      const ULONG n = end.receive_cq->Dispatch->NdkGetCqResultsEx(end.receive_cq, r, 16);
      for (ULONG j = 0; j < n; ++j) {
        const auto slot = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(r[j].RequestContext));
        const std::byte* data = buffer.Data() + slot * kMessageBytes;
        if (r[j].Status != STATUS_SUCCESS) ++me.bad;
        for (std::uint32_t k = 0; k < kMessageBytes; ++k) {
          if (data[k] != PatternByte(peer_tag, me.received, k)) {
            ++me.bad;
            break;
          }
        }
        ++me.received;
        const NDK_SGE sge = buffer.Sge(slot * kMessageBytes, kMessageBytes);
        if (end.qp->Dispatch->NdkReceive(end.qp, r[j].RequestContext, &sge, 1) != STATUS_SUCCESS) ++me.bad;
        ++me.reposted;
      }
      if (n == 0) {
        if (!watchdog.Alive()) stop = true;
        Pause();
      }
    }
  };
  pair.fabric().Start();
  std::thread a_sender([&] { sender(a, *a_send, sa, sb, 1); });
  std::thread a_receiver([&] { receiver(a, *a_receive, sa, 2); });
  std::thread b_both([&] {
    std::thread b_receiver([&] { receiver(b, *b_receive, sb, 1); });
    sender(b, *b_send, sb, sa, 2);
    b_receiver.join();
  });
  a_sender.join();
  a_receiver.join();
  b_both.join();
  pair.fabric().Stop();
  EXPECT_FALSE(watchdog.Fired());
  EXPECT_EQ(sa.bad.load() + sb.bad.load(), 0u);
  EXPECT_EQ(sa.received.load(), kMessages);
  EXPECT_EQ(sb.received.load(), kMessages);
  EXPECT_EQ(sa.send_done.load(), kMessages);
  EXPECT_EQ(sb.send_done.load(), kMessages);
}

// ---- flush, disconnect and close while another thread posts -------------------------------------

// Posts writes on `end` until a post fails; reaps its initiator CQ on the same thread. Counts each
// successful post and each completion, so the caller can hold them to exactly one each.
struct PostUntilFailure {
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> completions{0};
  std::atomic<std::uint64_t> cancelled{0};
  std::atomic<std::uint64_t> duplicate{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> quit{false};
  NTSTATUS failure = STATUS_SUCCESS;

  void Run(QpEnd& end, RegisteredBuffer& local, RegisteredBuffer& remote) {
    std::vector<std::uint8_t> seen(1 << 22);
    NDK_RESULT_EX r[32];
    std::uint64_t in_flight = 0;
    auto reap = [&] {
      const ULONG n = end.initiator_cq->Dispatch->NdkGetCqResultsEx(end.initiator_cq, r, 32);
      for (ULONG j = 0; j < n; ++j) {
        const auto id = reinterpret_cast<std::uintptr_t>(r[j].RequestContext);
        if (id >= seen.size() || seen[id]++ != 0) ++duplicate;
        if (r[j].Status == STATUS_CANCELLED) ++cancelled;
        ++completions;
        --in_flight;
      }
      return n;
    };
    while (!failed && !quit) {
      if (in_flight < 16) {
        const NDK_SGE sge = local.Sge(0, 256);
        const std::uint64_t id = accepted.load();
        if (id >= seen.size()) break;
        const NTSTATUS s = end.qp->Dispatch->NdkWrite(end.qp, reinterpret_cast<void*>(id), &sge, 1, remote.Address(),
                                                      remote.RemoteToken(), 0);
        if (s != STATUS_SUCCESS) {
          failure = s;
          failed = true;
          break;
        }
        ++accepted;
        ++in_flight;
      }
      if (reap() == 0) Pause();
    }
    // Every accepted post completes (with success or STATUS_CANCELLED).
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (in_flight > 0 && std::chrono::steady_clock::now() < deadline) {
      if (reap() == 0) Pause();
    }
  }
};

// A connected pair whose side A posts writes on a thread of its own (PostUntilFailure) while the
// engine runs; the test acts on the QP meanwhile. TearDown stops the poster and the engine.
class PostingRace : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_.fabric().Start();
    thread_ = std::thread([this] { poster_.Run(pair_.a(), *local_, *remote_); });
    while (poster_.completions < 1000 && !poster_.failed) Pause();
  }
  void TearDown() override { StopPoster(); }
  void StopPoster() {
    poster_.quit = true;
    if (thread_.joinable()) thread_.join();
    pair_.fabric().Stop();
  }

  QpPair pair_;
  std::unique_ptr<RegisteredBuffer> local_ = pair_.a().Register(4096);
  std::unique_ptr<RegisteredBuffer> remote_ = pair_.b().Register(4096);
  PostUntilFailure poster_;
  std::thread thread_;
};

TEST_F(PostingRace, FlushWhileAnotherThreadPostsGivesEveryAcceptedPostExactlyOneCompletion) {
  pair_.a().qp->Dispatch->NdkFlush(pair_.a().qp);
  // Requests posted after a flush are taken and complete with STATUS_CANCELLED, like the flushed
  // ones: let the poster go on for a while, then stop it.
  const std::uint64_t at_flush = poster_.accepted.load();
  while (poster_.accepted < at_flush + 2000 && !poster_.failed) Pause();
  StopPoster();
  EXPECT_FALSE(poster_.failed) << StatusString(poster_.failure);
  EXPECT_EQ(poster_.duplicate.load(), 0u);
  // The 2,000 posts counted after the flush returned were all made after it, but one: the poster
  // counts a post when its call returns, so one call may have begun before the flush and, with
  // nothing in flight, completed with success.
  EXPECT_GE(poster_.cancelled.load(), 1999u);
  // Everything it took completed exactly once.
  EXPECT_EQ(poster_.completions.load(), poster_.accepted.load());
  std::vector<NDK_RESULT_EX> extra;
  QpEnd::Poll(pair_.a().initiator_cq, extra);
  EXPECT_THAT(extra, ::testing::IsEmpty());
}

TEST_F(PostingRace, DisconnectWhileAnotherThreadPostsGivesEveryAcceptedPostExactlyOneCompletion) {
  // Graceful: it completes when the peer's disconnect arrives or times out (B never answers),
  // either way after the QP's outstanding requests are done; then the QP is flushed.
  auto done = [](PVOID ctx, NTSTATUS s) { static_cast<std::atomic<NTSTATUS>*>(ctx)->store(s); };
  std::atomic<NTSTATUS> result{STATUS_PENDING};
  const NTSTATUS s = pair_.a().connector->Dispatch->NdkDisconnect(pair_.a().connector, done, &result);
  ASSERT_TRUE(s == STATUS_SUCCESS || s == STATUS_PENDING) << StatusString(s);
  while (s == STATUS_PENDING && result.load() == STATUS_PENDING) Pause();
  StopPoster();
  EXPECT_EQ(poster_.duplicate.load(), 0u);
  EXPECT_EQ(poster_.completions.load(), poster_.accepted.load());
}

TEST_F(PostingRace, ClosingTheConnectorWhileAnotherThreadPostsGivesEveryAcceptedPostExactlyOneCompletion) {
  // NDK lets a consumer close the QP's connector while it posts on the QP.
  std::atomic<bool> closed{false};
  auto done = [](PVOID ctx) { static_cast<std::atomic<bool>*>(ctx)->store(true); };
  NDK_CONNECTOR* connector = std::exchange(pair_.a().connector, nullptr);
  const NTSTATUS s = connector->Dispatch->NdkCloseConnector(&connector->Header, done, &closed);
  ASSERT_TRUE(s == STATUS_SUCCESS || s == STATUS_PENDING) << StatusString(s);
  while (s == STATUS_PENDING && !closed.load()) Pause();
  StopPoster();
  EXPECT_EQ(poster_.duplicate.load(), 0u);
  EXPECT_EQ(poster_.completions.load(), poster_.accepted.load());
}

// ---- CQ callbacks on the engine's thread ---------------------------------------------------------

TEST(ThreadedEngine, CqCallbacksRunOnTheEngineThreadAndMayPollAndReArm) {
  constexpr std::uint64_t kWrites = 50'000;
  QpPair pair;
  auto local = pair.a().Register(4096);
  auto remote = pair.b().Register(4096);
  QpEnd& a = pair.a();
  std::atomic<std::uint64_t> reaped{0}, bad{0};
  std::atomic<int> in_callback{0};
  std::atomic<bool> overlapped{false};
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> on_caller_thread{false};
  a.on_cq_notification = [&](NTSTATUS status) {
    if (in_callback.fetch_add(1) != 0) overlapped = true;
    if (std::this_thread::get_id() == caller) on_caller_thread = true;
    if (status != STATUS_SUCCESS) ++bad;
    NDK_RESULT_EX r[64];
    ULONG n;
    while ((n = a.initiator_cq->Dispatch->NdkGetCqResultsEx(a.initiator_cq, r, 64)) > 0) {
      for (ULONG j = 0; j < n; ++j) {
        if (r[j].Status != STATUS_SUCCESS || reinterpret_cast<std::uintptr_t>(r[j].RequestContext) != reaped) ++bad;
        ++reaped;
      }
    }
    a.initiator_cq->Dispatch->NdkArmCq(a.initiator_cq, NDK_CQ_NOTIFY_ANY);
    in_callback.fetch_sub(1);
  };
  a.initiator_cq->Dispatch->NdkArmCq(a.initiator_cq, NDK_CQ_NOTIFY_ANY);
  pair.fabric().Start();
  Watchdog watchdog([&] { return reaped.load(); },
                    [&] { return fmt::format("reaped {} of {}\n", reaped.load(), kWrites); });
  std::thread poster([&] {
    for (std::uint64_t i = 0; i < kWrites;) {
      if (i - reaped.load() >= 64) {
        if (!watchdog.Alive()) return;
        Pause();
        continue;
      }
      const NDK_SGE sge = local->Sge(0, 64);
      if (a.qp->Dispatch->NdkWrite(a.qp, reinterpret_cast<void*>(i), &sge, 1, remote->Address(), remote->RemoteToken(),
                                   0) != STATUS_SUCCESS) {
        ++bad;
        return;
      }
      ++i;
    }
  });
  poster.join();
  while (reaped.load() < kWrites && watchdog.Alive()) Pause();
  pair.fabric().Stop();
  EXPECT_EQ(reaped.load(), kWrites);
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_FALSE(overlapped.load());
  EXPECT_FALSE(on_caller_thread.load());
}

// ---- control calls from several threads ----------------------------------------------------------

TEST(ThreadedEngine, ControlCallsFromSeveralThreadsAtOnceAllSucceedWhileTrafficRuns) {
  QpPair pair;
  auto local = pair.a().Register(4096);
  auto remote = pair.b().Register(4096);
  PostUntilFailure traffic;  // keeps the engine busy meanwhile
  pair.fabric().Start();
  std::thread t([&] { traffic.Run(pair.a(), *local, *remote); });
  std::atomic<int> failures{0};
  std::vector<std::thread> controllers;
  for (int c = 0; c < 3; ++c) {
    controllers.emplace_back([&, c] {
      QpEnd& end = c % 2 == 0 ? pair.a() : pair.b();
      for (int round = 0; round < 200; ++round) {
        NDK_CQ* cq = nullptr;
        if (end.adapter->Dispatch->NdkCreateCq(end.adapter, 64, [](PVOID, NTSTATUS) {}, nullptr, nullptr, nullptr,
                                               nullptr, &cq) != STATUS_SUCCESS) {
          ++failures;
          continue;
        }
        try {
          // Create, register, deregister and close an MR (harness.h's RegisteredBuffer).
          RegisteredBuffer buffer(end.pd, 8192, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
          buffer.Close();
        } catch (const HarnessError&) {
          ++failures;
        }
        if (cq->Dispatch->NdkCloseCq(&cq->Header, nullptr, nullptr) != STATUS_SUCCESS) ++failures;
      }
    });
  }
  for (auto& c : controllers) c.join();
  traffic.quit = true;
  t.join();
  pair.fabric().Stop();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_FALSE(traffic.failed);
  EXPECT_EQ(traffic.completions.load(), traffic.accepted.load());
}

// ---- the engine thread's life --------------------------------------------------------------------

// Posts `n` signaled 4-KiB writes from A to B.
void PostWrites(QpPair& pair, RegisteredBuffer& local, RegisteredBuffer& remote, int n) {
  const NDK_SGE sge = local.Sge(0, 4096);
  for (int i = 0; i < n; ++i) {
    ASSERT_NT_SUCCESS(
        pair.a().qp->Dispatch->NdkWrite(pair.a().qp, nullptr, &sge, 1, remote.Address(), remote.RemoteToken(), 0));
  }
}

TEST(ThreadedEngine, StoppingWithDrainLeavesNothingScheduled) {
  QpPair pair;
  auto local = pair.a().Register(4096);
  auto remote = pair.b().Register(4096);
  pair.fabric().Start();
  PostWrites(pair, *local, *remote, 8);
  pair.fabric().Stop(StopMode::kDrain);
  EXPECT_FALSE(pair.fabric().Running());
  EXPECT_EQ(pair.fabric().RunUntilIdle(), 0u);  // nothing was left
  std::vector<NDK_RESULT_EX> results;
  QpEnd::Poll(pair.a().initiator_cq, results);
  EXPECT_EQ(results.size(), 8u);
}

// How many times the stepped engine looked into a node's doorbell inbox for 16 writes between the
// pair's two nodes, on a fabric with `idle_nodes` more nodes that do nothing.
std::uint64_t InboxVisitsFor16Writes(int idle_nodes) {
  QpPair pair;
  for (int i = 0; i < idle_nodes; ++i) {
    pair.fabric().AddNode({"idle" + std::to_string(i), {"198.51.100." + std::to_string(i + 1)}});
  }
  auto local = pair.a().Register(4096);
  auto remote = pair.b().Register(4096);
  const std::uint64_t before = pair.fabric().ThreadStats().inbox_visits;
  PostWrites(pair, *local, *remote, 16);
  pair.fabric().RunUntilIdle();
  std::vector<NDK_RESULT_EX> results;
  QpEnd::Poll(pair.a().initiator_cq, results);
  EXPECT_EQ(results.size(), 16u);
  return pair.fabric().ThreadStats().inbox_visits - before;
}

TEST(SteppedEngine, LooksOnlyIntoTheInboxesOfNodesThatHaveDoorbells) {
  const std::uint64_t two_nodes = InboxVisitsFor16Writes(0);
  EXPECT_GT(two_nodes, 0u);
  EXPECT_EQ(InboxVisitsFor16Writes(64), two_nodes);
}

// The 16 doorbells wait in node a's inbox when the run starts: one look delivers them all, the
// next finds the inbox empty and stops watching it. The run's hundred-odd events look at no inbox
// (each used to look at every watched one).
TEST(SteppedEngine, StopsLookingIntoAnInboxOnceItIsDrained) {
  EXPECT_EQ(InboxVisitsFor16Writes(0), 2u);
}

TEST(ThreadedEngine, SteppedCallsAreRefusedWhileTheThreadRuns) {
  QpPair pair;
  pair.fabric().Start();
  EXPECT_THROW(pair.fabric().RunUntilIdle(), ConfigurationError);
  EXPECT_THROW(pair.fabric().RunFor(Microseconds(1)), ConfigurationError);
  EXPECT_THROW(pair.fabric().Start(), ConfigurationError);
  pair.fabric().Stop();
  EXPECT_NO_THROW(pair.fabric().RunUntilIdle());
}

TEST(ThreadedEngine, StartRefusesAnEnabledTrace) {
  QpPair pair;
  pair.fabric().Trace().EnableAll();
  EXPECT_THROW(pair.fabric().Start(), ConfigurationError);
  EXPECT_FALSE(pair.fabric().Running());
}

TEST(ThreadedEngine, DestroyingARunningFabricStopsItFirst) {
  auto fabric = std::make_unique<Fabric>();
  fabric->AddNode({"a", {"192.0.2.1"}});
  fabric->Start();
  EXPECT_TRUE(fabric->Running());
  fabric.reset();  // joins the engine's thread; a leak or a hang would fail under the sanitizers
  SUCCEED();
}

TEST(ThreadedEngine, AQpPairDestroyedWhileItsEngineRunsStopsItAndClosesItsObjects) {
  {
    QpPair pair;
    auto local = pair.a().Register(4096);
    auto remote = pair.b().Register(4096);
    pair.fabric().Start();
    PostWrites(pair, *local, *remote, 8);
  }  // closing needs stepped runs: the pair stops the engine first (it used to throw here)
  SUCCEED();
}

TEST(ThreadedEngine, APacedEngineLetsSimulatedTimeFollowTheWallClock) {
  Fabric fabric;
  fabric.AddNode({"a", {"192.0.2.1"}});
  EngineThreadConfig config;
  config.pace = 1000;  // a simulated microsecond per wall-clock millisecond
  fabric.Start(config);
  const TimePoint before = fabric.Now();
  std::this_thread::sleep_for(20ms);
  const TimePoint after = fabric.Now();
  fabric.Stop();
  // At least 20 ms of wall clock passed between the two readings: at least 20 us of simulated time.
  EXPECT_GE(after - before, Microseconds(20));
}

TEST(ThreadedEngine, AnUnpacedEngineLetsNoTimePassWhileIdle) {
  Fabric fabric;
  fabric.AddNode({"a", {"192.0.2.1"}});
  fabric.Start();
  const TimePoint before = fabric.Now();
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(fabric.Now(), before);
  fabric.Stop();
}

TEST(ThreadedEngine, AnInvalidPaceIsAConfigurationError) {
  Fabric fabric;
  EngineThreadConfig config;
  config.pace = -1;
  EXPECT_THROW(fabric.Start(config), ConfigurationError);
  EXPECT_FALSE(fabric.Running());
}

// ---- pinning the engine's thread -------------------------------------------------------------------

// The CPUs this process may run on, lowest first.
std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(ThreadedEngine, APinnedEngineRunsItsCallbacksOnTheCpuItWasGiven) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs to tell a pinned engine from an unpinned one";
  // This thread keeps to the first CPU; a thread it starts inherits that, so an engine that were
  // not pinned would run there, not on the last.
  cpu_set_t saved;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof saved, &saved), 0);
  cpu_set_t first;
  CPU_ZERO(&first);
  CPU_SET(cpus.front(), &first);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof first, &first), 0);
  struct Restore {
    cpu_set_t set;
    ~Restore() { pthread_setaffinity_np(pthread_self(), sizeof set, &set); }
  } restore{saved};
  const int cpu = cpus.back();
  QpPair pair;
  auto local = pair.a().Register(64);
  auto remote = pair.b().Register(64);
  QpEnd& a = pair.a();
  std::atomic<int> callback_cpu{-2};
  a.on_cq_notification = [&](NTSTATUS) { callback_cpu = sched_getcpu(); };
  a.initiator_cq->Dispatch->NdkArmCq(a.initiator_cq, NDK_CQ_NOTIFY_ANY);
  EngineThreadConfig config;
  config.cpu = cpu;
  pair.fabric().Start(config);
  const NDK_SGE sge = local->Sge(0, 64);
  ASSERT_EQ(a.qp->Dispatch->NdkWrite(a.qp, nullptr, &sge, 1, remote->Address(), remote->RemoteToken(), 0),
            STATUS_SUCCESS);
  Watchdog watchdog([&] { return callback_cpu.load() == -2 ? 0 : 1; },
                    [] { return std::string("no CQ notification\n"); });
  while (callback_cpu.load() == -2 && watchdog.Alive()) Pause();
  pair.fabric().Stop();
  EXPECT_EQ(callback_cpu.load(), cpu);
}

TEST(ThreadedEngine, PinningToACpuTheProcessMayNotUseIsAConfigurationErrorAndChangesNothing) {
  // A CPU number past every CPU the machine has: never one a thread may be scheduled on.
  const int outside = get_nprocs_conf();
  ASSERT_LT(outside, CPU_SETSIZE);
  // A write waits for the engine; a refused Start must not have run it.
  QpPair pair;
  auto local = pair.a().Register(64);
  auto remote = pair.b().Register(64);
  std::memset(local->Data(), 0x5A, 64);
  QpEnd& a = pair.a();
  const NDK_SGE sge = local->Sge(0, 64);
  ASSERT_EQ(a.qp->Dispatch->NdkWrite(a.qp, nullptr, &sge, 1, remote->Address(), remote->RemoteToken(), 0),
            STATUS_SUCCESS);
  const EngineThreadStats before = pair.fabric().ThreadStats();
  NDK_RESULT r;
  for (const int cpu : {outside, -2, CPU_SETSIZE}) {
    EngineThreadConfig config;
    config.cpu = cpu;
    EXPECT_THROW(pair.fabric().Start(config), ConfigurationError) << "cpu " << cpu;
    EXPECT_FALSE(pair.fabric().Running());
    EXPECT_EQ(pair.fabric().ThreadStats().events, before.events);
    EXPECT_EQ(a.initiator_cq->Dispatch->NdkGetCqResults(a.initiator_cq, &r, 1), 0u) << "cpu " << cpu;
  }
  // Still stepped: the write runs now.
  EXPECT_GT(pair.fabric().RunUntilIdle(), 0u);
  ASSERT_EQ(a.initiator_cq->Dispatch->NdkGetCqResults(a.initiator_cq, &r, 1), 1u);
  EXPECT_EQ(r.Status, STATUS_SUCCESS);
  EXPECT_EQ(std::memcmp(remote->Data(), local->Data(), 64), 0);
}

}  // namespace
}  // namespace ndksim
