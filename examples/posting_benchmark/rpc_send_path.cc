// SPDX-License-Identifier: MIT
// A posting-path benchmark of a consumer's own code (docs/benchmarking.md): an RPC client's send
// path, which sends each request as a 64-B message. Its engineer wants to know what three choices
// cost and what the NIC sees: a doorbell per request or DEFER chains of 16, the message gathered
// by DMA or inlined into the WQE, every send signaled or one in 16.
//
//   ndksim-example-posting-benchmark [--benchmark_min_time=0.2]
//
// prints, per operation, the routine's wall time, its simulated host time, what the NIC did and
// the simulated rate with what bounds it; then how each variant differs from the first. Every
// variant of one function is compared with that function's first arguments.
#include <ndksim/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

constexpr ULONG kMessageBytes = 64;
constexpr std::uint32_t kRequestsPerCall = 16;

// The consumer's routine, as its driver would have it: sends `n` requests, chained with DEFER
// when `chain` (the last one rings the doorbell), inline when `inline_data`, signaled every
// `signal_every` sends (the rest complete silently).
class RpcSender {
 public:
  RpcSender(NDK_QP* qp, const NDK_SGE& message, bool chain, bool inline_data, std::uint32_t signal_every)
      : qp_(qp), message_(message), chain_(chain), inline_(inline_data), signal_every_(signal_every) {}

  void Send(std::uint32_t n) {
    for (std::uint32_t k = 0; k < n; ++k) {
      ULONG flags = inline_ ? NDK_OP_FLAG_INLINE : 0;
      if (chain_ && k + 1 < n) flags |= NDK_OP_FLAG_DEFER;
      if (++sent_ % signal_every_ != 0) flags |= NDK_OP_FLAG_SILENT_SUCCESS;
      const NTSTATUS status = qp_->Dispatch->NdkSend(qp_, nullptr, &message_, 1, flags);
      if (status != STATUS_SUCCESS) throw ndksim::HarnessError("NdkSend", status);
    }
  }

 private:
  NDK_QP* qp_;
  NDK_SGE message_;
  bool chain_;
  bool inline_;
  std::uint32_t signal_every_;
  std::uint64_t sent_ = 0;
};

// args: chain (0/1), inline (0/1), signal every
void BM_RpcSendPath(benchmark::State& state) {
  ndksim::PostingConfig config;
  config.peer_receive_bytes = kMessageBytes;  // the server keeps receives posted
  ndksim::PostingBenchmark bench(state, config);
  auto message = bench.poster().Register(kMessageBytes);
  RpcSender sender(bench.qp(0), message->Sge(0, kMessageBytes), state.range(0) != 0, state.range(1) != 0,
                   static_cast<std::uint32_t>(state.range(2)));
  bench.Run(kRequestsPerCall, [&] { sender.Send(kRequestsPerCall); });
}
BENCHMARK(BM_RpcSendPath)
    ->ArgNames({"chain", "inline", "signal_every"})
    ->Args({0, 0, 1})    // the first version: a doorbell per send, gathered, every send signaled
    ->Args({1, 0, 1})    // DEFER chains of 16
    ->Args({1, 1, 1})    // ... and the message inlined
    ->Args({1, 1, 16})   // ... and one send in 16 signaled
    ->UseManualTime();

// The same routine spreading its requests over several connections, still from one thread: with
// one QP the QP's processing unit bounds the rate; spread over 16, the posting core does.
// args: QPs
void BM_RpcSendPathOverQps(benchmark::State& state) {
  ndksim::PostingConfig config;
  config.qps = static_cast<std::size_t>(state.range(0));
  config.peer_receive_bytes = kMessageBytes;
  ndksim::PostingBenchmark bench(state, config);
  auto message = bench.poster().Register(kMessageBytes);
  std::vector<RpcSender> senders;
  for (std::size_t q = 0; q < bench.qps(); ++q) {
    senders.emplace_back(bench.qp(q), message->Sge(0, kMessageBytes), true, true, 16);
  }
  std::size_t next = 0;
  bench.Run(kRequestsPerCall, [&] {
    senders[next].Send(kRequestsPerCall);
    next = (next + 1) % senders.size();
  });
}
BENCHMARK(BM_RpcSendPathOverQps)->ArgName("qps")->Arg(1)->Arg(16)->UseManualTime();

}  // namespace

NDKSIM_BENCHMARK_MAIN();
