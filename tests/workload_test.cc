// ndksim::Workload, the perftest-style driver behind ndksim-perf and the calibration tests: what it
// posts (post lists, selective signaling, inline, several QPs) is checked through the NIC's
// counters, so a figure it reports is known to come from the traffic it claims.
#include <gtest/gtest.h>

#include <stdexcept>

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

TEST(WorkloadConfigTest, PostListLongerThanTheWindowIsRefused) {
  WorkloadConfig c = Config(Operation::kWrite, 64);
  c.post_list = 64;
  c.window = 32;
  EXPECT_THROW(Workload{c}, std::invalid_argument);
}

TEST(WorkloadLatency, WriteOfZeroBytesIsRefused) {
  Workload w(Config(Operation::kWrite, 0));
  EXPECT_THROW(w.Latency(1), std::invalid_argument);
}

}  // namespace
}  // namespace ndksim
