// SPDX-License-Identifier: MIT
// What an NDK consumer sees when the network misbehaves, driven by fault rules: a link that goes
// down briefly (the transport hides it, at a price in latency), a link that stays down (the
// request fails with STATUS_IO_TIMEOUT, the QP is in error, later posts are cancelled), and the
// recovery a consumer must do itself: a new connection, and the request posted again.
#include <cstdio>
#include <cstring>

#include "ndksim/harness.h"

using namespace ndksim;

namespace {

// Posts one 4-KiB write from a to b and returns its completion (Status 0xFFFFFFFF if none came).
NDK_RESULT_EX WriteOnce(QpPair& pair, NDK_QP* qp, RegisteredBuffer& source, RegisteredBuffer& target) {
  const NDK_SGE sge = source.Sge(0, 4096);
  NDK_RESULT_EX none{};
  none.Status = static_cast<NTSTATUS>(0xFFFFFFFF);
  if (qp->Dispatch->NdkWrite(qp, nullptr, &sge, 1, target.Address(), target.RemoteToken(), 0) != STATUS_SUCCESS) {
    return none;
  }
  const auto done = pair.Collect(pair.a().initiator_cq, 1, Milliseconds(1000));
  return done.empty() ? none : done[0];
}

}  // namespace

int main() {
  QpPair pair;  // the default profile: a ConnectX-class 100 GbE RoCE NIC, 67 ms ACK timeout, 7 retries
  Fabric& fabric = pair.fabric();
  auto source = pair.a().Register(4096);
  auto target = pair.b().Register(4096);
  std::memset(source->Data(), 0x5a, 4096);

  // 1. The link to b goes down for 1 ms. The first resend, one ACK timeout later, gets through: the
  // write succeeds, late.
  TimePoint t0 = fabric.Now();
  const std::uint32_t flap = fabric.AddFault(LinkDown(1, t0, t0 + Milliseconds(1)));
  NDK_RESULT_EX r = WriteOnce(pair, pair.a().qp, *source, *target);
  std::printf("link down 1 ms:   status 0x%08x after %8.1f us, %llu packets lost, %llu resends\n",
              static_cast<unsigned>(r.Status), ToMicroseconds(fabric.Now() - t0),
              static_cast<unsigned long long>(fabric.FaultStatsOf(flap).fired),
              static_cast<unsigned long long>(pair.a().node->Counters().retransmissions));
  if (r.Status != STATUS_SUCCESS || std::memcmp(source->Data(), target->Data(), 4096) != 0) return 1;

  // 2. The link stays down for 600 ms, longer than the 7 resends 67 ms apart: the retries run out,
  // the write fails with IO_TIMEOUT and the QP is in error, so the next post completes
  // STATUS_CANCELLED without being sent.
  t0 = fabric.Now();
  fabric.AddFault(LinkDown(1, t0, t0 + Milliseconds(600)));
  r = WriteOnce(pair, pair.a().qp, *source, *target);
  std::printf("link down 600 ms: status 0x%08x after %8.1f us (STATUS_IO_TIMEOUT)\n", static_cast<unsigned>(r.Status),
              ToMicroseconds(fabric.Now() - t0));
  if (r.Status != STATUS_IO_TIMEOUT) return 1;
  r = WriteOnce(pair, pair.a().qp, *source, *target);
  std::printf("next post:        status 0x%08x (STATUS_CANCELLED: the QP is in error)\n",
              static_cast<unsigned>(r.Status));
  if (r.Status != STATUS_CANCELLED) return 1;

  // 3. Recovery is the consumer's job: once the link is back, connect a new pair of QPs and post
  // the request again.
  fabric.RunFor(t0 + Milliseconds(600) - fabric.Now());
  const QpPair::ExtraQps fresh = pair.AddConnectedQps();
  std::memset(target->Data(), 0, 4096);
  r = WriteOnce(pair, fresh.a, *source, *target);
  std::printf("new connection:   status 0x%08x, data %s\n", static_cast<unsigned>(r.Status),
              std::memcmp(source->Data(), target->Data(), 4096) == 0 ? "intact" : "WRONG");
  return r.Status == STATUS_SUCCESS && std::memcmp(source->Data(), target->Data(), 4096) == 0 ? 0 : 1;
}
