// SPDX-License-Identifier: MIT
// Send/Receive ping-pong between two simulated nodes over the NDK interface: node a sends a
// message, node b echoes it back, for a number of rounds. Prints the simulated round-trip time
// and checks every byte. Usage: ping_pong [rounds] [message bytes]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ndksim/harness.h"

using namespace ndksim;

namespace {

bool Expect(bool ok, const char* what) {
  if (!ok) std::fprintf(stderr, "ping_pong: %s\n", what);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 1000;
  const ULONG size = argc > 2 ? static_cast<ULONG>(std::atoi(argv[2])) : 64;
  if (rounds <= 0 || size > (1u << 20)) {
    std::fprintf(stderr, "usage: ping_pong [rounds > 0] [message bytes <= 1048576]\n");
    return 2;
  }
  QpPairConfig config;  // default fabric: ConnectX-class 100 GbE RoCEv2 profile
  QpPair pair(config);
  QpEnd& a = pair.a();
  QpEnd& b = pair.b();
  auto a_tx = a.Register(size);
  auto a_rx = a.Register(size);
  auto b_rx = b.Register(size);

  std::printf("ndksim ping-pong: profile %s, %d rounds of %u B, nodes a <-> b\n",
              std::string(pair.fabric().Profile().name).c_str(), rounds, size);
  const TimePoint start = pair.fabric().Now();
  for (int i = 0; i < rounds; ++i) {
    // a fills its message with a pattern that changes every round.
    for (ULONG k = 0; k < size; ++k) a_tx->Data()[k] = static_cast<std::byte>((k * 7 + static_cast<ULONG>(i)) & 0xff);
    const NDK_SGE a_rx_sge = a_rx->Sge(0, size);
    const NDK_SGE b_rx_sge = b_rx->Sge(0, size);
    const NDK_SGE a_tx_sge = a_tx->Sge(0, size);
    if (!Expect(a.Receive(nullptr, {&a_rx_sge, 1}) == STATUS_SUCCESS, "a: NdkReceive failed")) return 1;
    if (!Expect(b.Receive(nullptr, {&b_rx_sge, 1}) == STATUS_SUCCESS, "b: NdkReceive failed")) return 1;
    if (!Expect(a.Send(nullptr, {&a_tx_sge, 1}) == STATUS_SUCCESS, "a: NdkSend failed")) return 1;
    // b waits for the ping, then echoes the bytes it received.
    auto ping = pair.Collect(b.receive_cq, 1);
    if (!Expect(ping.size() == 1 && ping[0].Status == STATUS_SUCCESS && ping[0].BytesTransferred == size,
                "b: ping not received")) {
      return 1;
    }
    const NDK_SGE echo = b_rx->Sge(0, size);
    if (!Expect(b.Send(nullptr, {&echo, 1}) == STATUS_SUCCESS, "b: NdkSend failed")) return 1;
    auto pong = pair.Collect(a.receive_cq, 1);
    if (!Expect(pong.size() == 1 && pong[0].Status == STATUS_SUCCESS, "a: pong not received")) return 1;
    if (!Expect(std::memcmp(a_tx->Data(), a_rx->Data(), size) == 0, "a: echoed bytes differ")) return 1;
    pair.Collect(a.initiator_cq, 1);
    pair.Collect(b.initiator_cq, 1);
  }
  const Duration elapsed = pair.fabric().Now() - start;
  std::printf("  %d round trips checked byte for byte\n", rounds);
  std::printf("  simulated time %.3f us, round trip %.3f us, one-way latency %.3f us\n", ToMicroseconds(elapsed),
              ToMicroseconds(elapsed) / rounds, ToMicroseconds(elapsed) / rounds / 2);
  const NodeCounters ca = a.node->Counters();
  std::printf("  node a: %llu doorbells, %llu packets sent, %llu CQEs written\n",
              static_cast<unsigned long long>(ca.doorbells), static_cast<unsigned long long>(ca.packets_sent),
              static_cast<unsigned long long>(ca.cqes_written));
  return 0;
}
