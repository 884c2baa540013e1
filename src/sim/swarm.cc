// SPDX-License-Identifier: MIT
// The swarm workload (include/ndksim/swarm.h): machines, their threads, the QPs between them, and
// the loop that keeps every thread's window of reads full.
#include "ndksim/swarm.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "hwmodel/nic.h"
#include "ndksim/harness.h"
#include "ndksim/host_cpu.h"
#include "sim/node_access.h"

namespace ndksim {

double SwarmResult::MeanRate() const {
  double sum = 0;
  int n = 0;
  for (std::size_t m = 0; m < rate_per_machine.size(); ++m) {
    if (m < issues.size() && !issues[m]) continue;
    sum += rate_per_machine[m];
    ++n;
  }
  return n == 0 ? 0 : sum / n;
}

namespace {

constexpr USHORT kListenPort = 7471;

void Check(const char* step, NTSTATUS s) {
  if (s != STATUS_SUCCESS) throw HarnessError(step, s);
}

void OnRequestDone(PVOID ctx, NTSTATUS status) { *static_cast<NTSTATUS*>(ctx) = status; }
void OnDisconnect(PVOID /*ctx*/) {}
void OnCqNotify(PVOID /*ctx*/, NTSTATUS /*status*/) {}

}  // namespace

struct Swarm::Impl {
  // A connected QP of a thread, and where its peer thread's buffer is.
  struct Link {
    NDK_QP* qp = nullptr;
    std::uint64_t remote_address = 0;
    UINT32 remote_token = 0;
    std::uint32_t target = 0;  // the peer's machine
  };
  struct Thread {
    std::uint32_t machine = 0;
    std::uint32_t core = 0;
    NDK_CQ* cq = nullptr;
    std::unique_ptr<RegisteredBuffer> buffer;
    std::vector<NDK_QP*> qps;  // indexed by machine * vms + v; those for its own machine idle
    std::vector<Link> links;   // the connected ones it issues requests on
    std::vector<NDK_QP*> receiving;  // the connected ones it keeps receives posted on (sends)
    std::size_t outstanding = 0;
    std::uint64_t completed = 0;
    std::mt19937_64 rng;
  };
  struct Machine {
    Node* node = nullptr;
    NDK_ADAPTER* adapter = nullptr;
    NDK_PD* pd = nullptr;
    NDK_LISTENER* listener = nullptr;
    NDK_CONNECTOR* incoming = nullptr;  // the listener's latest connect request
    std::vector<NDK_CONNECTOR*> connectors;
  };

  explicit Impl(const SwarmConfig& c) : config(c), fabric(c.fabric) {}

  SwarmConfig config;
  Fabric fabric;
  std::vector<std::uint64_t> served;  // requests answered by each machine, while counting
  // CQEs each machine's NIC had written when its threads' CQs were last found empty: a machine
  // whose count has not moved since has nothing new to poll.
  std::vector<std::uint64_t> polled_at;
  std::vector<Machine> machines;
  std::vector<Thread> threads;  // machine-major

  Thread& ThreadOf(std::size_t machine, std::size_t t) {
    return threads[machine * static_cast<std::size_t>(config.threads) + t];
  }

  // Whether machine m issues requests to machine k under the pattern.
  bool Issues(std::size_t m, std::size_t k) const {
    switch (config.pattern) {
      case SwarmPattern::kAllToAll: return m != k;
      case SwarmPattern::kInbound: return m != 0 && k == 0;
      case SwarmPattern::kOutbound: return m == 0 && k != 0;
    }
    return false;
  }
  bool IssuesAny(std::size_t m) const {
    for (std::size_t k = 0; k < machines.size(); ++k) {
      if (Issues(m, k)) return true;
    }
    return false;
  }
  bool Sends() const { return config.op == Operation::kSend; }
  ULONG InlineBytes() const { return config.op != Operation::kRead && config.bytes <= 64 ? 64 : 0; }

  // Request contexts: a request's names its target machine (even), a receive's its QP (odd).
  static void* RequestTag(std::uint32_t target) {
    return reinterpret_cast<void*>((std::uintptr_t{target} + 1) << 1);
  }
  static void* ReceiveTag(NDK_QP* qp) { return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(qp) | 1); }

  void PostReceive(Thread& th, NDK_QP* qp) {
    const NDK_SGE sge = th.buffer->Sge(0, config.bytes);
    Check("NdkReceive", qp->Dispatch->NdkReceive(qp, ReceiveTag(qp), &sge, config.bytes > 0 ? 1 : 0));
  }

  static void OnConnectEvent(PVOID ctx, NDK_CONNECTOR* connector) {
    static_cast<Machine*>(ctx)->incoming = connector;
  }

  void Open(std::size_t m) {
    Machine& mc = machines[m];
    const std::string address = fmt::format("10.0.{}.{}", m / 250, m % 250 + 1);
    mc.node = &fabric.AddNode({fmt::format("m{}", m), {address}});
    Check("OpenAdapter", mc.node->OpenAdapter(NDK_VERSION{2, 1}, &mc.adapter));
    const NDK_ADAPTER_DISPATCH* ad = mc.adapter->Dispatch;
    Check("NdkCreatePd", ad->NdkCreatePd(mc.adapter, nullptr, nullptr, &mc.pd));
    Check("NdkCreateListener", ad->NdkCreateListener(mc.adapter, OnConnectEvent, &mc, nullptr, nullptr, &mc.listener));
    SOCKADDR_INET listen = mc.node->SocketAddress(kListenPort);
    Check("NdkListen", mc.listener->Dispatch->NdkListen(mc.listener, reinterpret_cast<PSOCKADDR>(&listen),
                                                        sizeof(SOCKADDR_IN), nullptr, nullptr));
    const auto nqp = static_cast<std::size_t>(config.machines * config.vms);
    // A thread's CQ takes its requests' completions and, for sends, one per receive posted.
    const std::size_t receives = Sends() ? config.window : 0;
    const ULONG cq_depth = static_cast<ULONG>(config.window + 1 + receives * nqp);
    for (int t = 0; t < config.threads; ++t) {
      Thread& th = ThreadOf(m, static_cast<std::size_t>(t));
      th.machine = static_cast<std::uint32_t>(m);
      th.core = static_cast<std::uint32_t>(t);
      th.rng.seed(config.fabric.seed * 0x9E3779B97F4A7C15ull + m * 1000003u + static_cast<std::uint64_t>(t));
      Check("NdkCreateCq", ad->NdkCreateCq(mc.adapter, cq_depth, OnCqNotify, nullptr, nullptr, nullptr, nullptr, &th.cq));
      th.buffer = std::make_unique<RegisteredBuffer>(
          mc.pd, config.buffer_bytes,
          NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
      th.qps.resize(nqp);
      for (NDK_QP*& qp : th.qps) {
        Check("NdkCreateQp", mc.pd->Dispatch->NdkCreateQp(mc.pd, th.cq, th.cq, nullptr,
                                                          static_cast<ULONG>(receives + 1),
                                                          static_cast<ULONG>(config.window + 1), 1, 1, InlineBytes(),
                                                          nullptr, nullptr, &qp));
      }
    }
  }

  // Connects `qa` of machine a to `qb` of machine b (b's listener accepts).
  void Connect(std::size_t a, NDK_QP* qa, std::size_t b, NDK_QP* qb) {
    Machine& ma = machines[a];
    Machine& mb = machines[b];
    NDK_CONNECTOR* ca = nullptr;
    Check("NdkCreateConnector", ma.adapter->Dispatch->NdkCreateConnector(ma.adapter, nullptr, nullptr, &ca));
    ma.connectors.push_back(ca);
    SOCKADDR_INET src = ma.node->SocketAddress(0);
    SOCKADDR_INET dst = mb.node->SocketAddress(kListenPort);
    mb.incoming = nullptr;
    NTSTATUS connect_status = STATUS_PENDING;
    NTSTATUS s = ca->Dispatch->NdkConnect(ca, qa, reinterpret_cast<PSOCKADDR>(&src), sizeof(SOCKADDR_IN),
                                          reinterpret_cast<PSOCKADDR>(&dst), sizeof(SOCKADDR_IN), config.read_limit,
                                          config.read_limit, nullptr, 0, OnRequestDone, &connect_status);
    if (s != STATUS_PENDING) connect_status = s;
    fabric.RunUntil([&] { return mb.incoming != nullptr || connect_status != STATUS_PENDING; });
    if (mb.incoming == nullptr) Check("NdkConnect", connect_status == STATUS_PENDING ? STATUS_IO_TIMEOUT : connect_status);
    NDK_CONNECTOR* cb = mb.incoming;
    mb.connectors.push_back(cb);
    NTSTATUS accept_status = STATUS_PENDING;
    s = cb->Dispatch->NdkAccept(cb, qb, config.read_limit, config.read_limit, nullptr, 0, OnDisconnect, nullptr,
                                OnRequestDone, &accept_status);
    if (s != STATUS_PENDING) accept_status = s;
    fabric.RunUntil([&] { return connect_status != STATUS_PENDING; });
    Check("NdkConnect", connect_status);
    NTSTATUS complete_status = STATUS_PENDING;
    s = ca->Dispatch->NdkCompleteConnect(ca, OnDisconnect, nullptr, OnRequestDone, &complete_status);
    if (s != STATUS_PENDING) complete_status = s;
    fabric.RunUntil([&] { return complete_status != STATUS_PENDING && accept_status != STATUS_PENDING; });
    Check("NdkCompleteConnect", complete_status);
    Check("NdkAccept", accept_status);
  }

  void Build() {
    const auto nm = static_cast<std::size_t>(config.machines);
    const auto nt = static_cast<std::size_t>(config.threads);
    const auto nv = static_cast<std::size_t>(config.vms);
    machines.resize(nm);
    threads.resize(nm * nt);
    for (std::size_t m = 0; m < nm; ++m) Open(m);
    served.assign(nm, 0);
    polled_at.assign(nm, ~std::uint64_t{0});
    // Thread t's QP for (k, v) on machine m meets thread t's QP for (m, v) on machine k.
    for (std::size_t m = 0; m < nm; ++m) {
      for (std::size_t k = m + 1; k < nm; ++k) {
        for (std::size_t t = 0; t < nt; ++t) {
          Thread& tm = ThreadOf(m, t);
          Thread& tk = ThreadOf(k, t);
          for (std::size_t v = 0; v < nv; ++v) {
            NDK_QP* qm = tm.qps[k * nv + v];
            NDK_QP* qk = tk.qps[m * nv + v];
            Connect(m, qm, k, qk);
            if (Issues(m, k)) {
              tm.links.push_back(Link{qm, tk.buffer->Address(), tk.buffer->RemoteToken(), static_cast<std::uint32_t>(k)});
              tk.receiving.push_back(qk);
            }
            if (Issues(k, m)) {
              tk.links.push_back(Link{qk, tm.buffer->Address(), tm.buffer->RemoteToken(), static_cast<std::uint32_t>(m)});
              tm.receiving.push_back(qm);
            }
          }
        }
      }
    }
    // A receiver keeps a window of receives on each QP its peer sends on.
    if (Sends()) {
      for (Thread& th : threads) {
        const ScopedCore on(th.core);
        for (NDK_QP* qp : th.receiving) {
          for (std::size_t i = 0; i < config.window; ++i) PostReceive(th, qp);
        }
      }
    }
  }

  // Posts requests until the thread's window is full.
  void Fill(Thread& th) {
    if (th.links.empty()) return;
    const ScopedCore on(th.core);
    const std::size_t span = config.buffer_bytes - config.bytes + 1;
    while (th.outstanding < config.window) {
      const Link& l = th.links[th.rng() % th.links.size()];
      const std::size_t local = th.rng() % span;
      const std::size_t remote = th.rng() % span;
      const NDK_SGE sge = th.buffer->Sge(local, config.bytes);
      const ULONG nsge = config.bytes > 0 ? 1 : 0;
      void* tag = RequestTag(l.target);
      const ULONG flags = InlineBytes() > 0 && config.bytes > 0 ? NDK_OP_FLAG_INLINE : 0;
      switch (config.op) {
        case Operation::kRead:
          Check("NdkRead", l.qp->Dispatch->NdkRead(l.qp, tag, &sge, nsge, l.remote_address + remote, l.remote_token, 0));
          break;
        case Operation::kWrite:
          Check("NdkWrite",
                l.qp->Dispatch->NdkWrite(l.qp, tag, &sge, nsge, l.remote_address + remote, l.remote_token, flags));
          break;
        case Operation::kSend:
          Check("NdkSend", l.qp->Dispatch->NdkSend(l.qp, tag, &sge, nsge, flags));
          break;
      }
      ++th.outstanding;
    }
  }

  // Takes every thread's completions; true if there were any. It runs after every event, so it
  // looks only at machines whose NIC has written a CQE since their CQs were last drained.
  bool Reap(bool counting, std::vector<Thread*>& refill) {
    NDK_RESULT results[64];
    bool any = false;
    const auto nt = static_cast<std::size_t>(config.threads);
    for (std::size_t m = 0; m < machines.size(); ++m) {
      const std::uint64_t written = sim::NicOf(*machines[m].node).Counters().cqes_written;
      if (written == polled_at[m]) continue;
      bool drained = true;
      for (std::size_t t = 0; t < nt; ++t) {
        Thread& th = ThreadOf(m, t);
        if (th.outstanding == 0 && th.receiving.empty()) continue;
        const ScopedCore on(th.core);
        const ULONG n = th.cq->Dispatch->NdkGetCqResults(th.cq, results, 64);
        if (n == 0) continue;
        if (n == 64) drained = false;  // there may be more: look again after the next event
        bool requests = false;
        for (ULONG i = 0; i < n; ++i) {
          Check("swarm request", results[i].Status);
          const auto tag = reinterpret_cast<std::uintptr_t>(results[i].RequestContext);
          if ((tag & 1) != 0) {  // a receive: post it again
            PostReceive(th, reinterpret_cast<NDK_QP*>(tag & ~std::uintptr_t{1}));
            continue;
          }
          --th.outstanding;
          requests = true;
          if (counting) {
            ++th.completed;
            ++served[(tag >> 1) - 1];
          }
        }
        if (requests) refill.push_back(&th);
        any = true;
      }
      if (drained) polled_at[m] = written;
    }
    return any;
  }
};

Swarm::Swarm(const SwarmConfig& c) {
  const HardwareProfile& p = c.fabric.profile;
  auto refuse = [](const std::string& why) { throw std::invalid_argument("swarm: " + why); };
  if (c.machines < 2) refuse(fmt::format("machines is {}; a swarm needs at least 2", c.machines));
  if (c.threads < 1 || static_cast<std::uint64_t>(c.threads) > p.host_cores) {
    refuse(fmt::format("threads is {}; profile {} has 1..{} cores per node", c.threads, p.name, p.host_cores));
  }
  if (c.vms < 1) refuse(fmt::format("vms is {}; it must be at least 1", c.vms));
  const std::uint64_t qps = std::uint64_t(c.threads) * std::uint64_t(c.machines) * std::uint64_t(c.vms);
  if (qps > p.max_qps) refuse(fmt::format("{} QPs per machine; profile {} holds at most {}", qps, p.name, p.max_qps));
  if (c.window < 1 || c.window + 1 > p.max_initiator_queue_depth || c.window + 1 > p.max_cq_depth) {
    refuse(fmt::format("a window of {} does not fit profile {}'s queues", c.window, p.name));
  }
  if ((c.bytes < 1 && c.op == Operation::kRead) || c.bytes > p.max_transfer_bytes || c.bytes > c.buffer_bytes) {
    refuse(fmt::format("reads of {} bytes do not fit a {}-byte buffer (profile {}: at most {} per transfer)", c.bytes,
                       c.buffer_bytes, p.name, p.max_transfer_bytes));
  }
  impl_ = std::make_unique<Impl>(c);
  impl_->Build();
}

Swarm::~Swarm() = default;

std::size_t Swarm::QpsPerMachine() const {
  const SwarmConfig& c = impl_->config;
  return static_cast<std::size_t>(c.threads) * static_cast<std::size_t>(c.machines) * static_cast<std::size_t>(c.vms);
}

std::size_t Swarm::ActiveQpsPerMachine() const {
  const SwarmConfig& c = impl_->config;
  return static_cast<std::size_t>(c.threads) * static_cast<std::size_t>(c.machines - 1) *
         static_cast<std::size_t>(c.vms);
}

Fabric& Swarm::fabric() { return impl_->fabric; }

SwarmResult Swarm::Run(Duration warmup, Duration measure) {
  Impl& s = *impl_;
  for (Impl::Thread& th : s.threads) th.completed = 0;
  s.served.assign(s.machines.size(), 0);
  const TimePoint counting_from = s.fabric.Now() + warmup;
  const TimePoint end = counting_from + measure;
  std::vector<Impl::Thread*> refill;
  for (Impl::Thread& th : s.threads) s.Fill(th);
  while (s.fabric.Now() < end) {
    refill.clear();
    const bool counting = s.fabric.Now() >= counting_from;
    const TimePoint before = s.fabric.Now();
    const RunResult r = s.fabric.RunUntil([&] { return s.Reap(counting && s.fabric.Now() >= counting_from, refill); },
                                          std::min<Duration>(end - s.fabric.Now(), Milliseconds(1000)));
    if (!r && r.stop != RunStop::kTimeLimit) {
      throw HarnessError(fmt::format("swarm: the fabric went idle with reads outstanding (at {} ns)",
                                     ToNanoseconds(s.fabric.Now() - TimePoint{})),
                         STATUS_IO_TIMEOUT);
    }
    if (!r && s.fabric.Now() - before >= Milliseconds(1000)) {
      throw HarnessError("swarm: no read completed for a second of simulated time", STATUS_IO_TIMEOUT);
    }
    for (Impl::Thread* th : refill) s.Fill(*th);
  }
  SwarmResult result;
  result.measured = measure;
  result.rate_per_machine.assign(s.machines.size(), 0.0);
  const double ns = ToNanoseconds(measure);
  for (const Impl::Thread& th : s.threads) {
    result.rate_per_machine[th.machine] += static_cast<double>(th.completed) / ns * 1e3;
  }
  for (std::size_t m = 0; m < s.machines.size(); ++m) {
    result.served_per_machine.push_back(static_cast<double>(s.served[m]) / ns * 1e3);
    result.issues.push_back(s.IssuesAny(m));
  }
  return result;
}

}  // namespace ndksim
