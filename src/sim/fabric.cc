// SPDX-License-Identifier: MIT
// The fabric harness: owns simulated time, the network and the nodes (host + NIC + driver), and
// drives the event loop in stepped mode.
#include "ndksim/fabric.h"

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hwmodel/event_queue.h"
#include "hwmodel/host.h"
#include "hwmodel/nic.h"
#include "hwmodel/port.h"
#include "ndksim/names.h"
#include "provider/cq.h"
#include "provider/driver.h"
#include "provider/qp.h"
#include "sim/engine.h"
#include "sim/node_access.h"

namespace ndksim {

struct Node::Impl {
  std::string name;
  std::uint32_t index = 0;
  std::vector<std::string> addresses;
  std::unique_ptr<hw::Host> host;
  std::unique_ptr<hw::Nic> nic;
  std::unique_ptr<provider::Driver> driver;
  sim::Engine* engine = nullptr;
};

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Node::~Node() = default;

std::string_view Node::Name() const { return impl_->name; }
std::uint32_t Node::Index() const { return impl_->index; }
const std::vector<std::string>& Node::Addresses() const { return impl_->addresses; }

SOCKADDR_INET Node::SocketAddress(USHORT port, ADDRESS_FAMILY family, ULONG* length) const {
  if (family != AF_INET && family != AF_INET6) {
    throw ConfigurationError(fmt::format("node {}: address family {} is neither AF_INET nor AF_INET6", impl_->name,
                                         family));
  }
  SOCKADDR_INET a;
  std::memset(&a, 0, sizeof a);
  for (const std::string& text : impl_->addresses) {
    if (family == AF_INET && inet_pton(AF_INET, text.c_str(), &a.Ipv4.sin_addr) == 1) {
      a.Ipv4.sin_family = AF_INET;
      a.Ipv4.sin_port = htons(port);
      if (length != nullptr) *length = sizeof(SOCKADDR_IN);
      return a;
    }
    if (family == AF_INET6 && inet_pton(AF_INET6, text.c_str(), &a.Ipv6.sin6_addr) == 1) {
      a.Ipv6.sin6_family = AF_INET6;
      a.Ipv6.sin6_port = htons(port);
      if (length != nullptr) *length = sizeof(SOCKADDR_IN6);
      return a;
    }
  }
  throw ConfigurationError(fmt::format("node {} has no {} address", impl_->name, family == AF_INET ? "IPv4" : "IPv6"));
}

NTSTATUS Node::OpenAdapter(NDK_VERSION version, NDK_ADAPTER** adapter) {
  return impl_->engine->Serialize([&] { return impl_->driver->OpenAdapter(version, adapter); });
}

void Node::CloseAdapter(NDK_ADAPTER* adapter) {
  impl_->engine->Serialize([&] { impl_->driver->CloseAdapter(adapter); });
}


NodeCounters Node::Counters() const {
  return impl_->engine->Serialize([this] { return impl_->nic->Counters(); });
}

NicBusy Node::Busy() const {
  return impl_->engine->Serialize([this] { return impl_->nic->Busy(); });
}

std::uint32_t Node::CoreCount() const { return impl_->host->Cpu().CoreCount(); }
std::uint32_t Node::CurrentCore() const { return impl_->host->Cpu().CoreOfThisThread(); }
TimePoint Node::CoreClock(std::uint32_t core) const { return impl_->host->Cpu().Clock(core); }
Duration Node::CoreBusy(std::uint32_t core) const { return impl_->host->Cpu().Busy(core); }
std::uint64_t Node::CoreInterruptions(std::uint32_t core) const { return impl_->host->Cpu().Interruptions(core); }
Duration Node::CoreInterruptedTime(std::uint32_t core) const { return impl_->host->Cpu().InterruptedTime(core); }

std::optional<std::uint32_t> Node::QpNumber(NDK_QP* qp) const {
  return impl_->engine->Serialize([&] { return QpNumberNow(qp); });
}

std::optional<std::uint32_t> Node::QpNumberNow(NDK_QP* qp) const {
  if (qp == nullptr) return std::nullopt;
  const provider::Qp& q = provider::Qp::From(qp);
  if (&q.GetDriver().Nic() != &impl_->nic->GetDevice()) return std::nullopt;
  return q.Number().value;
}

std::optional<QpCounters> Node::CountersOf(NDK_QP* qp) const {
  return impl_->engine->Serialize([&] { return CountersOfNow(qp); });
}

std::optional<QpCounters> Node::CountersOfNow(NDK_QP* qp) const {
  if (qp == nullptr) return std::nullopt;
  const provider::Qp& q = provider::Qp::From(qp);
  if (&q.GetDriver().Nic() != &impl_->nic->GetDevice()) return std::nullopt;
  const QpCounters* c = impl_->nic->FindQpCounters(q.Number());
  if (c == nullptr) return std::nullopt;
  return *c;
}

std::optional<CqCounters> Node::CqCountersOf(NDK_CQ* cq) const {
  return impl_->engine->Serialize([&] { return CqCountersOfNow(cq); });
}

std::optional<CqCounters> Node::CqCountersOfNow(NDK_CQ* cq) const {
  if (cq == nullptr) return std::nullopt;
  const provider::Cq& c = provider::Cq::From(cq);
  if (&c.GetDriver().Nic() != &impl_->nic->GetDevice()) return std::nullopt;
  return impl_->nic->FindCqCounters(c.Number());
}

namespace sim {
hw::Nic& NodeAccess::Nic(Node& node) { return *node.impl_->nic; }
}  // namespace sim

// The tracer and the network sit on cache lines of their own; the padding that costs is the point.
struct Fabric::Impl {  // NOLINT(clang-analyzer-optin.performance.Padding)
  FabricConfig config;
  hw::EventQueue events;
  // On lines of its own: every post reads the tracer's enable flags (from the posting thread),
  // while the engine's thread writes the event queue just before it on every event. Sharing a
  // line made each post miss in its cache while the engine ran.
  alignas(hw::kCacheLineBytes) Tracer tracer;
  alignas(hw::kCacheLineBytes) hw::Network network;
  std::vector<std::unique_ptr<Node>> nodes;

  sim::Engine engine{events};
};

namespace {

hw::NetworkAddress ParseAddress(const std::string& text) {
  hw::NetworkAddress a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes.data()) == 1) {
    a.family = 4;
    return a;
  }
  if (inet_pton(AF_INET6, text.c_str(), a.bytes.data()) == 1) {
    a.family = 6;
    return a;
  }
  throw ConfigurationError("node address '" + text + "' is neither IPv4 nor IPv6");
}

}  // namespace

Fabric::Fabric(FabricConfig config) : impl_(std::make_unique<Impl>()) {
  ValidateOrThrow(config.profile);
  impl_->config = std::move(config);
  impl_->network.Faults().Reseed(impl_->config.seed);
}

Fabric::~Fabric() {
  impl_->engine.Stop(StopMode::kNow);
  // Drivers close what consumers left open before the NICs and the network go away: every node's
  // first, while every NIC is still there, since closing a connector sends its peer a disconnect
  // through the network, which looks the peer's address up among all the NICs.
  for (auto& node : impl_->nodes) node->impl_->driver.reset();
  for (auto& node : impl_->nodes) node.reset();
}

Node& Fabric::AddNode(const NodeConfig& config) {
  if (Running()) throw ConfigurationError("Fabric::AddNode: the engine runs on its own thread; call Fabric::Stop first");
  auto impl = std::make_unique<Node::Impl>();
  impl->name = config.name.empty() ? "node" + std::to_string(impl_->nodes.size()) : config.name;
  const auto id = static_cast<hw::NodeId>(impl_->nodes.size());
  impl->index = id;
  impl->addresses = config.addresses;
  std::vector<hw::NetworkAddress> addresses;
  for (const std::string& text : config.addresses) {
    const hw::NetworkAddress a = ParseAddress(text);
    if (impl_->network.Resolve(a) != nullptr) throw ConfigurationError("address '" + text + "' is already in use");
    addresses.push_back(a);
  }
  impl->host = std::make_unique<hw::Host>(impl_->events, impl_->config.profile, impl_->config.seed, id);
  impl->nic = std::make_unique<hw::Nic>(id, impl_->config.profile, impl_->events, *impl->host, impl_->network,
                                        impl_->tracer, impl_->config.seed);
  for (const auto& a : addresses) impl->nic->AddAddress(a);
  impl_->engine.AddNic(*impl->nic);
  impl->host->SetControlSerializer(&impl_->engine);
  impl->engine = &impl_->engine;
  impl_->network.Attach(*impl->nic);
  impl->driver = std::make_unique<provider::Driver>(impl->nic->GetDevice(), *impl->host, impl_->tracer,
                                                   impl_->config.async_completion, impl_->config.seed);
  impl_->tracer.Requests().SetNodeName(id, impl->name);  // the node's process in the request trace
  impl_->nodes.push_back(std::make_unique<Node>(std::move(impl)));
  return *impl_->nodes.back();
}

Node& Fabric::GetNode(std::size_t index) { return *impl_->nodes.at(index); }
std::size_t Fabric::NodeCount() const { return impl_->nodes.size(); }
TimePoint Fabric::Now() const {
  return impl_->engine.Serialize([this] { return impl_->events.Now(); });
}
std::uint64_t Fabric::Seed() const { return impl_->config.seed; }
const HardwareProfile& Fabric::Profile() const { return impl_->config.profile; }
Tracer& Fabric::Trace() { return impl_->tracer; }

std::uint32_t Fabric::AddFault(const FaultRule& rule) {
  return impl_->engine.Serialize([&] { return AddFaultNow(rule); });
}

std::uint32_t Fabric::AddFaultNow(const FaultRule& rule) {
  std::vector<std::string> errors = Validate(rule);
  if (rule.match.node && *rule.match.node >= impl_->nodes.size()) {
    errors.push_back(fmt::format("match.node: no node {} (the fabric has {})", *rule.match.node, impl_->nodes.size()));
  }
  if (!errors.empty()) throw ConfigurationError(fmt::format("invalid fault rule: {}", fmt::join(errors, "; ")));
  hw::FaultInjector& faults = impl_->network.Faults();
  const std::uint32_t id = faults.Add(rule);
  if (rule.Point() == FaultPoint::kAdapter) {
    // Not a hook on traffic: one event at `from` asks the rule (still active, in its window).
    Impl* impl = impl_.get();
    const std::uint32_t node = *rule.match.node;
    impl->events.Schedule(std::max(impl->events.Now(), rule.from), hw::EventPriority::kHost, [impl, node] {
      hw::Nic& nic = sim::NicOf(*impl->nodes[node]);
      if (nic.InjectFault(FaultPoint::kAdapter, 0) != nullptr) nic.EnterFatal();
    });
  }
  return id;
}

void Fabric::RemoveFault(std::uint32_t id) {
  impl_->engine.Serialize([&] { RemoveFaultNow(id); });
}

void Fabric::RemoveFaultNow(std::uint32_t id) {
  if (!impl_->network.Faults().Remove(id)) throw ConfigurationError(fmt::format("no fault rule {}", id));
}

FaultStats Fabric::FaultStatsOf(std::uint32_t id) const {
  return impl_->engine.Serialize([&] { return FaultStatsOfNow(id); });
}

FaultStats Fabric::FaultStatsOfNow(std::uint32_t id) const {
  if (!impl_->network.Faults().Known(id)) throw ConfigurationError(fmt::format("no fault rule {}", id));
  return impl_->network.Faults().Stats(id);
}

std::uint64_t Fabric::RunUntilIdle() { return impl_->engine.RunUntilIdle(); }
std::uint64_t Fabric::RunFor(Duration d) { return impl_->engine.RunFor(d); }
RunResult Fabric::RunUntil(const std::function<bool()>& done, Duration limit) {
  return impl_->engine.RunUntil(done, limit);
}

void Fabric::Start(const EngineThreadConfig& config) {
  if (impl_->tracer.AnyEnabled() || impl_->tracer.Requests().Enabled()) {
    throw ConfigurationError("Fabric::Start: traces and the request log are stepped-mode tools; disable them first");
  }
  impl_->engine.Start(config);
}
void Fabric::Stop(StopMode mode) { impl_->engine.Stop(mode); }
bool Fabric::Running() const { return impl_->engine.Running(); }
EngineThreadStats Fabric::ThreadStats() const {
  return impl_->engine.Serialize([this] { return impl_->engine.ThreadStats(); });
}

FaultRule& FaultRule::At(const Node& node) {
  match.node = node.Index();
  return *this;
}

FaultRule& FaultRule::OnQp(const Node& node, NDK_QP* qp) {
  const std::optional<std::uint32_t> qpn = node.QpNumber(qp);
  if (!qpn) throw ConfigurationError(fmt::format("fault rule: the QP is not a QP of node {}", node.Name()));
  match.node = node.Index();
  match.qpn = *qpn;
  return *this;
}

FaultRule& FaultRule::OnLinkOf(const Node& node) {
  match.link_of = node.Index();
  return *this;
}

FaultRule LinkDown(const Node& node, TimePoint from, TimePoint until) { return LinkDown(node.Index(), from, until); }

FaultRule FailAdapter(const Node& node, TimePoint at) {
  FaultRule r;
  r.action = FaultAction::kFailAdapter;
  r.match.node = node.Index();
  r.from = at;
  return r;
}

std::string_view Name(RunStop stop) {
  switch (stop) {
    case RunStop::kDone: return "done";
    case RunStop::kIdle: return "idle";
    case RunStop::kTimeLimit: return "time limit";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, const RunResult& r) { return os << Name(r.stop); }

std::string Fabric::DescribeFaults() const {
  return impl_->engine.Serialize([this] { return DescribeFaultsNow(); });
}

std::string Fabric::DescribeFaultsNow() const {
  const hw::FaultInjector& faults = impl_->network.Faults();
  std::string out;
  for (std::uint32_t id = 0; id < faults.Count(); ++id) {
    const FaultStats st = faults.Stats(id);
    out += fmt::format("fault {}: {}: fired {} of {} considered\n", id, ToString(faults.Rule(id)), st.fired,
                       st.considered);
  }
  return out;
}

}  // namespace ndksim
