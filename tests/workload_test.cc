// SPDX-License-Identifier: MIT
// ndksim::Workload, the perftest-style driver behind ndksim-perf and the calibration tests: what it
// posts (post lists, selective signaling, inline, several QPs) is checked through the NIC's
// counters, so a figure it reports is known to come from the traffic it claims.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "ndksim/workload.h"

namespace ndksim {
namespace {

WorkloadConfig Config(Operation op, ULONG bytes) {
  WorkloadConfig c;
  c.fabric.profile = profiles::kConnectX100GbeRoce;
  c.op = op;
  c.bytes = bytes;
  return c;
}

QpCounters CountersOf(Workload& w, NDK_QP* qp) {
  const auto q = w.pair().a().node->CountersOf(qp);
  if (!q.has_value()) throw std::logic_error("not a QP of node a");
  return *q;
}

TEST(WorkloadStream, SendsOverSeveralQpsFeedEachConnectionsReceiveQueue) {
  WorkloadConfig c = Config(Operation::kSend, 1024);
  c.qps = 4;
  c.window = 32;
  Workload w(c);
  w.Stream(4000);
  // Every receive is re-posted on the QP whose receive completed, so no connection runs dry (an
  // RNR NAK) and each delivers exactly what its initiator sent.
  QpPair& pair = w.pair();
  std::uint64_t sent = 0;
  for (int q = 0; q < c.qps; ++q) {
    const QpCounters a = *pair.a().node->CountersOf(w.Initiators()[q]);
    const QpCounters b = *pair.b().node->CountersOf(w.Responders()[q]);
    EXPECT_GT(a.packets_sent, 0u) << "QP " << q;
    EXPECT_EQ(b.bytes_received, a.packets_sent * 1024) << "QP " << q;
    sent += a.packets_sent;
  }
  EXPECT_EQ(sent, 4000u);
  EXPECT_EQ(pair.b().node->Counters().rnr_naks_sent, 0u);
}

// perftest's -e: completions taken through the armed CQ's notification, the interrupt path.
WorkloadConfig WithEvents(Operation op, ULONG bytes) {
  WorkloadConfig c;
  c.op = op;
  c.bytes = bytes;
  c.events = true;
  return c;
}

TEST(WorkloadEvents, SendLatencyWaitsForTheNotificationOfEachCompletion) {
  Workload w(WithEvents(Operation::kSend, 8));
  const std::vector<double> samples = w.Latency(20);
  ASSERT_EQ(samples.size(), 20u);
  // Each message's receive completion on each side came with an interrupt.
  EXPECT_GE(w.pair().a().node->Counters().interrupts, 20u);
  EXPECT_GE(w.pair().b().node->Counters().interrupts, 20u);
  EXPECT_GE(w.pair().a().cq_notifications, 20);
}

TEST(WorkloadEvents, TheEventPathIsSlowerThanPolling) {
  WorkloadConfig c = WithEvents(Operation::kSend, 8);
  c.fabric.profile = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  Workload evented(c);
  c.events = false;
  Workload polled(c);
  const double p = polled.Latency(10).back();
  const double e = evented.Latency(10).back();
  EXPECT_GT(e, p);  // the CQ arm's doorbell and the interrupt lie on the path
}

TEST(WorkloadEvents, AStreamCompletesThroughNotifications) {
  Workload w(WithEvents(Operation::kWrite, 64));
  w.Stream(2000);
  EXPECT_GT(w.pair().a().node->Counters().interrupts, 0u);
  EXPECT_GT(w.pair().a().cq_notifications, 0);
}

TEST(WorkloadEvents, WriteLatencyPollsMemoryAndRefusesEvents) {
  Workload w(WithEvents(Operation::kWrite, 8));
  EXPECT_THROW(w.Latency(1), std::invalid_argument);
}

TEST(WorkloadStream, SignalsOneRequestInN) {
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.signal_every = 8;
  Workload w(c);
  w.Stream(800);
  EXPECT_EQ(CountersOf(w, w.Initiators()[0]).completions, 100u);
}

TEST(WorkloadStream, RingsOneDoorbellPerPostList) {
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.post_list = 32;
  c.window = 256;
  Workload w(c);
  w.Stream(3200);
  EXPECT_EQ(CountersOf(w, w.Initiators()[0]).doorbells, 100u);
}

TEST(WorkloadStream, PostsNothingInlineByDefault) {
  // perftest's bandwidth tests gather their payload unless told otherwise.
  auto payload_read_bytes = [](long long inline_size) {
    WorkloadConfig c = Config(Operation::kWrite, 32);
    c.inline_size = inline_size;
    Workload w(c);
    w.Stream(100);
    // What is not WQE fetch is payload: each WQE of this size is one 64-B block.
    const QpCounters q = CountersOf(w, w.Initiators()[0]);
    return q.dma_read_bytes - q.wqes_fetched * 64;
  };
  EXPECT_EQ(payload_read_bytes(-1), 100u * 32);
  EXPECT_EQ(payload_read_bytes(32), 0u);
}

TEST(WorkloadStream, ReadsKeepTheirPayloadInTheInitiatorsSink) {
  WorkloadConfig c = Config(Operation::kRead, 4096);
  Workload w(c);
  w.Stream(64);
  const QpCounters q = CountersOf(w, w.Initiators()[0]);
  EXPECT_EQ(q.dma_write_bytes - q.completions * 32, 64u * 4096);  // read responses placed, plus CQEs
}

TEST(WorkloadStream, EveryQpsUnsignaledTailCompletes) {
  // Regression: the stream signaled only the last request overall, so with two QPs the other QP's
  // unsignaled tail never completed and the run gave up ("no completion").
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.qps = 2;
  Workload w(c);
  EXPECT_NO_THROW(w.Stream(200));
  EXPECT_EQ(CountersOf(w, w.Initiators()[0]).wqes_executed, 100u);
  EXPECT_EQ(CountersOf(w, w.Initiators()[1]).wqes_executed, 100u);
}

TEST(WorkloadStream, ReadsOnTheIWarpProfileLandInARegisteredReadSink) {
  // Regression: the read sink lacked the READ_SINK right iWARP requires, so the first read failed
  // with STATUS_ACCESS_VIOLATION.
  WorkloadConfig c = Config(Operation::kRead, 4096);
  c.fabric.profile = profiles::kIWarp;
  Workload w(c);
  EXPECT_NO_THROW(w.Latency(4));
  EXPECT_NO_THROW(w.Stream(64));
}

TEST(WorkloadStream, StreamsOfSendsOneAfterAnotherKeepTheReceiveQueueFromOverflowing) {
  // Regression: each stream posted a window of receives on top of those the last one left posted,
  // and the third stream found the receive queue full (STATUS_NO_MORE_ENTRIES).
  WorkloadConfig c = Config(Operation::kSend, 64);
  c.fabric.profile = profiles::kFunctional;
  c.window = 16;
  Workload w(c);
  for (int stream = 0; stream < 4; ++stream) ASSERT_NO_THROW(w.Stream(100)) << "stream " << stream;
  EXPECT_EQ(CountersOf(w, w.Initiators()[0]).wqes_executed, 400u);
}

// Every combination the options allow runs to its last completion: the messages are shared among
// the QPs, each QP posts whole post lists and signals its last request.
TEST(WorkloadStream, EveryCombinationOfQpsPostListWindowAndSignalRatioCompletes) {
  for (const Operation op : {Operation::kWrite, Operation::kRead, Operation::kSend}) {
    for (const int qps : {1, 2, 5}) {
      for (const std::size_t post_list : {1, 4, 16}) {
        for (const std::size_t window : {16, 17, 128}) {
          for (const std::size_t signal_every : {1, 5, 16, 1000}) {
            WorkloadConfig c = Config(op, 64);
            c.fabric.profile = profiles::kFunctional;
            c.qps = qps;
            c.post_list = post_list;
            c.window = window;
            c.signal_every = signal_every;
            Workload w(c);
            std::uint64_t expected = 0;
            // Streams one after another on the same pair: each must drain completely.
            for (const std::size_t messages : {1, 7, 203}) {
              SCOPED_TRACE(::testing::Message() << "op " << static_cast<int>(op) << ", " << qps << " QPs, post list "
                                                << post_list << ", window " << window << ", signal every "
                                                << signal_every << ", " << messages << " messages");
              ASSERT_NO_THROW(w.Stream(messages));
              expected += messages;
              std::uint64_t executed = 0;
              for (NDK_QP* qp : w.Initiators()) executed += CountersOf(w, qp).wqes_executed;
              EXPECT_EQ(executed, expected);
            }
          }
        }
      }
    }
  }
}

TEST(WorkloadConfigTest, PostListLongerThanTheWindowIsRefusedByName) {
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.post_list = 64;
  c.window = 32;
  try {
    Workload w(c);
    FAIL() << "accepted a post list longer than the window";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "workload: a post list of 64 does not fit in a window of 32 requests in flight");
  }
}

TEST(WorkloadConfigTest, MoreQpsThanTheQpTableHoldsAreRefusedWithTheLimit) {
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.qps = 1 << 20;
  try {
    Workload w(c);
    FAIL() << "accepted more QPs than the NIC holds";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "workload: qps is 1048576; profile connectx-100g-roce holds at most 131072 QPs per node");
  }
}

TEST(WorkloadConfigTest, MoreCoresThanTheProfileHasAreRefusedWithTheLimit) {
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.cores = 33;
  try {
    Workload w(c);
    FAIL() << "accepted more cores than the node has";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "workload: cores is 33; profile connectx-100g-roce has 1..32 cores per node");
  }
}

TEST(WorkloadConfigTest, AWindowDeeperThanTheQueueLimitIsRefusedWithTheLimit) {
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.window = 1 << 20;
  EXPECT_THROW(Workload{c}, std::invalid_argument);
}

// perftest's latency tests post writes up to 220 B inline and sends up to 236 B. Seen in the NIC's
// counters: an inline write of 220 B fits the 256-B doorbell write-through and needs no DMA read; a
// 228-B write gathers its payload. An inline send of 236 B is too large for the write-through, so
// its WQE (with the payload) is fetched; a 244-B send's small WQE is written through and its payload
// gathered.
QpCounters LatencyCounters(Operation op, ULONG bytes) {
  Workload w(Config(op, bytes));
  w.Latency(8);
  return CountersOf(w, w.Initiators()[0]);
}

TEST(WorkloadLatency, WritesGoInlineUpTo220BytesAsPerftestPostsThem) {
  EXPECT_EQ(LatencyCounters(Operation::kWrite, 220).dma_reads, 0u);
  EXPECT_EQ(LatencyCounters(Operation::kWrite, 228).dma_reads, 8u);
}

TEST(WorkloadLatency, SendsGoInlineUpTo236BytesAsPerftestPostsThem) {
  EXPECT_EQ(LatencyCounters(Operation::kSend, 236).wqes_fetched, 8u);
  EXPECT_EQ(LatencyCounters(Operation::kSend, 244).wqes_by_mmio, 8u);
}

// ib_write_lat's loop: a side waits for its own write's completion before it takes the peer's
// answer, so a completion slower than the answer sets the pace.
double MedianWriteLatencyNs(Duration ack_turnaround) {
  WorkloadConfig c = Config(Operation::kWrite, 8);
  c.fabric.profile = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  c.fabric.profile.ack_turnaround = ack_turnaround;
  Workload w(c);
  std::vector<double> s = w.Latency(20);
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

TEST(WorkloadLatency, AWriteCompletionSlowerThanThePeersAnswerHoldsTheNextPostBack) {
  // The ACK leaves the responder 5 us after the data is placed: the round trip is the completion's,
  // and half of it exceeds the 2.5 us the ACK alone takes.
  EXPECT_GT(MedianWriteLatencyNs(Microseconds(5)), 2500);
}

TEST(WorkloadLatency, AWriteCompletionFasterThanThePeersAnswerDoesNotShowInTheLatency) {
  EXPECT_EQ(MedianWriteLatencyNs(Nanoseconds(20)), MedianWriteLatencyNs(Nanoseconds(40)));
}

TEST(WorkloadLatency, WriteLatencyRunsOneAfterAnotherEachSeeTheirOwnWrites) {
  Workload w(Config(Operation::kWrite, 8));
  // A byte an earlier run left must never pass for the new write (the numbers wrap past 255).
  for (int run = 0; run < 300; ++run) ASSERT_GT(w.Latency(1).at(0), 500) << "run " << run;
}

// Regression: the whole run had one second of simulated time, so a long run (about 500,000
// iterations) failed as if it had hung.
TEST(WorkloadLatency, AWriteLatencyRunLongerThanASecondOfSimulatedTimeCompletes) {
  WorkloadConfig c = Config(Operation::kWrite, 8);
  c.fabric.profile = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  c.fabric.profile.ack_turnaround = Microseconds(200);  // each round trip waits ~200 us for its ACK
  Workload w(c);
  EXPECT_EQ(w.Latency(6000).size(), 6000u);  // ~1.2 s of simulated time
}

TEST(WorkloadLatency, WriteOfZeroBytesIsRefused) {
  Workload w(Config(Operation::kWrite, 0));
  EXPECT_THROW(w.Latency(1), std::invalid_argument);
}

// Payload bytes the QPs of `node` took in (their own counters: the connection set-up is not theirs).
std::uint64_t PayloadReceived(const Node& node, const std::vector<NDK_QP*>& qps) {
  std::uint64_t bytes = 0;
  for (NDK_QP* qp : qps) bytes += node.CountersOf(qp)->bytes_received;
  return bytes;
}

// perftest's -b: node b streams to node a while a streams to b, on the same QPs.
class WorkloadBidirectional : public ::testing::TestWithParam<Operation> {};

TEST_P(WorkloadBidirectional, EachNodeTakesTheOthersStreamWhole) {
  WorkloadConfig c = Config(GetParam(), 4096);
  c.qps = 2;
  c.bidirectional = true;
  Workload w(c);
  w.Stream(1000);
  // Each direction's payload arrives once, at the node a read brings it to or a write or send
  // carries it to: 1000 messages of 4 KiB each way.
  EXPECT_EQ(PayloadReceived(*w.pair().a().node, w.Initiators()), 1000u * 4096);
  EXPECT_EQ(PayloadReceived(*w.pair().b().node, w.Responders()), 1000u * 4096);
  EXPECT_EQ(w.pair().a().node->Counters().rnr_naks_sent + w.pair().b().node->Counters().rnr_naks_sent, 0u);
}

INSTANTIATE_TEST_SUITE_P(Operations, WorkloadBidirectional,
                         ::testing::Values(Operation::kWrite, Operation::kRead, Operation::kSend));

TEST(WorkloadBidirectionalRate, BothWaysTakeAboutAsLongAsOneWayOnAFullDuplexLink) {
  WorkloadConfig c = Config(Operation::kWrite, 65536);
  c.fabric.profile = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  const Duration one_way = Workload(c).Stream(2000);
  c.bidirectional = true;
  const Duration both_ways = Workload(c).Stream(2000);
  // Twice the payload in nearly the same time: each direction has its own wire.
  EXPECT_LT(ToNanoseconds(both_ways), 1.1 * ToNanoseconds(one_way));
  EXPECT_GT(ToNanoseconds(both_ways), ToNanoseconds(one_way) * 0.99);
}

TEST(WorkloadBidirectionalEvents, BothSidesCompleteThroughNotifications) {
  WorkloadConfig c = WithEvents(Operation::kSend, 256);
  c.bidirectional = true;
  Workload w(c);
  w.Stream(500);
  EXPECT_GT(w.pair().a().cq_notifications, 0);
  EXPECT_GT(w.pair().b().cq_notifications, 0);
  EXPECT_EQ(PayloadReceived(*w.pair().a().node, w.Initiators()), 500u * 256);
  EXPECT_EQ(PayloadReceived(*w.pair().b().node, w.Responders()), 500u * 256);
}

// perftest's -D: posting stops when the duration has passed, and what was posted completes.
TEST(WorkloadStreamFor, PostsForTheDurationAndCompletesWhatItPosted) {
  WorkloadConfig c = Config(Operation::kWrite, 1024);
  c.signal_every = 100;
  Workload w(c);
  const StreamCount n = w.StreamFor(Microseconds(200));
  EXPECT_GE(n.elapsed, Microseconds(200));
  EXPECT_GT(n.messages, 1000u);  // ~100 Gb/s of 1 KiB writes: about 2,300 in 200 us
  // Every posted write was executed and retired, the unsignaled tail included.
  const QpCounters q = CountersOf(w, w.Initiators()[0]);
  EXPECT_EQ(q.requests_completed, n.messages);
  EXPECT_EQ(PayloadReceived(*w.pair().b().node, w.Responders()), n.messages * 1024);
}

TEST(WorkloadStreamFor, AZeroDurationIsRefused) {
  Workload w(Config(Operation::kWrite, 64));
  EXPECT_THROW(w.StreamFor(Duration::zero()), std::invalid_argument);
}

TEST(WorkloadReadLimit, AboveTheProfilesOutstandingReadsIsRefused) {
  WorkloadConfig c = Config(Operation::kRead, 4096);
  c.read_limit = 17;  // the presets allow 16 per QP
  EXPECT_THROW(Workload::Validate(c), std::invalid_argument);
}

TEST(WorkloadReadLimit, OneOutstandingReadSerializesAStreamOfReads) {
  WorkloadConfig c = Config(Operation::kRead, 4096);
  c.fabric.profile = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  const Duration sixteen = Workload(c).Stream(500);
  c.read_limit = 1;
  const Duration one = Workload(c).Stream(500);
  EXPECT_GT(ToNanoseconds(one), 2 * ToNanoseconds(sixteen));  // each read waits for the one before
}

}  // namespace
}  // namespace ndksim
