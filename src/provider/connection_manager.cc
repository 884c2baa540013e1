// SPDX-License-Identifier: MIT
// The node's CM agent (ref §3.18, §4.6): binds local endpoints (ephemeral ports included), hands
// out PSNs and routes CM datagrams to listeners and connectors.
#include "connection.h"

#include <algorithm>
#include <array>

#include "driver.h"

namespace ndksim::provider {

// ==== ConnectionManager ===========================================================================

ConnectionManager::ConnectionManager(Driver& driver) : driver_(driver) {}

bool ConnectionManager::InUse(const SocketAddress& a) const {
  const auto [first, last] = bindings_.equal_range(Key(a));
  return std::any_of(first, last, [&](const auto& kv) { return BindingsCollide(kv.second.local, a); });
}

NTSTATUS ConnectionManager::Bind(SocketAddress* local, const void* owner, Listener* listener) {
  if (local->port != 0) {
    if (InUse(*local)) return STATUS_SHARING_VIOLATION;
  } else {
    // Deterministic: scan from a cursor that moves past each port handed out.
    bool found = false;
    for (std::uint32_t i = 0; i < kEphemeralPorts && !found; ++i) {
      SocketAddress candidate = *local;
      candidate.port = static_cast<std::uint16_t>(
          kFirstEphemeralPort + (next_ephemeral_ - kFirstEphemeralPort + i) % kEphemeralPorts);
      if (InUse(candidate)) continue;
      *local = candidate;
      found = true;
    }
    if (!found) return STATUS_TOO_MANY_ADDRESSES;  // ref §3.18: ephemeral range exhausted
    next_ephemeral_ = static_cast<std::uint16_t>(
        kFirstEphemeralPort + (local->port + 1u - kFirstEphemeralPort) % kEphemeralPorts);
  }
  bindings_.emplace(Key(*local), Binding{*local, owner, listener});
  bound_by_.emplace(owner, Key(*local));
  return STATUS_SUCCESS;
}

void ConnectionManager::Unbind(const void* owner) {
  // Only the owner's own bindings are visited: closing costs the same however many others exist.
  const auto [first, last] = bound_by_.equal_range(owner);
  for (auto k = first; k != last; ++k) {
    const auto [b, e] = bindings_.equal_range(k->second);
    for (auto it = b; it != e;) it = it->second.owner == owner ? bindings_.erase(it) : std::next(it);
  }
  bound_by_.erase(first, last);
}

std::uint32_t ConnectionManager::PeekPsn() const {
  // Deterministic per driver, spread over the 24-bit PSN space and different per node.
  return (driver_.Nic().Id() * 0x10001u + (psn_counter_ + 1) * 0x9e37u) & 0xffffffu;
}

void ConnectionManager::Register(Connector& connector) {
  connections_.emplace(connector.Id(), &connector);
}

void ConnectionManager::AddTuple(const Connector& connector) {
  SocketAddress local;
  SocketAddress peer;
  if (connector.Endpoints(&local, &peer)) tuples_.emplace(TupleKey(local, peer), &connector);
}

void ConnectionManager::Unregister(const Connector& connector) {
  connections_.erase(connector.Id());
  SocketAddress local;
  SocketAddress peer;
  if (!connector.Endpoints(&local, &peer)) return;
  const auto [first, last] = tuples_.equal_range(TupleKey(local, peer));
  for (auto it = first; it != last; ++it) {
    if (it->second == &connector) {
      tuples_.erase(it);
      return;
    }
  }
}

bool ConnectionManager::TupleInUse(const SocketAddress& local, const SocketAddress& peer) const {
  // Only connectors with these endpoints are candidates: the cost does not grow with the node's
  // other connections.
  const auto [first, last] = tuples_.equal_range(TupleKey(local, peer));
  return std::any_of(first, last, [&](const auto& kv) { return kv.second->Holds(local, peer); });
}

bool ConnectionManager::Send(const SocketAddress& destination, const CmMessage& message) {
  CmMessage m = message;
  m.source_node = driver_.Nic().Id();
  std::array<std::byte, hw::kManagementPayloadBytes> bytes;
  const std::size_t n = EncodeCm(m, bytes);
  const bool routed = driver_.Nic().SendManagementDatagram(destination.address, {bytes.data(), n});
  driver_.Trace("cm send {} conn {} -> {} port {}{}", Name(m.type), m.source_connection,
                m.destination_connection, destination.port, routed ? "" : " (no route)");
  return routed;
}

Duration ConnectionManager::StepTimeout() const {
  return std::max(driver_.Profile().management_latency * 100, Milliseconds(1));
}

ULONG ConnectionManager::MaxCallerData() const {
  return std::min<ULONG>(driver_.Profile().max_caller_data, kCmMaxPrivateData);
}

ULONG ConnectionManager::MaxCalleeData() const {
  return std::min<ULONG>(driver_.Profile().max_callee_data, kCmMaxPrivateData);
}

Listener* ConnectionManager::FindListener(const SocketAddress& destination) const {
  Listener* wildcard = nullptr;
  const auto [first, last] = bindings_.equal_range(Key(destination));
  for (auto it = first; it != last; ++it) {
    const Binding& b = it->second;
    if (b.listener == nullptr) continue;
    if (b.local.address == destination.address) return b.listener;  // exact match wins
    if (IsWildcard(b.local.address)) wildcard = b.listener;
  }
  return wildcard;
}

void ConnectionManager::OnDatagram(std::span<const std::byte> bytes, hw::NodeId sender) {
  CmMessage m;
  if (!DecodeCm(bytes, &m)) {
    driver_.Trace("cm drop malformed datagram of {} bytes", bytes.size());
    return;
  }
  if (m.source_node != sender) {
    driver_.Trace("cm drop {} claiming node {} from node {}", Name(m.type), m.source_node, sender);
    return;
  }
  driver_.Trace("cm recv {} conn {} -> {} from node {}", Name(m.type), m.source_connection,
                m.destination_connection, m.source_node);
  if (m.type == CmType::kReq) {
    OnRequest(m);
    return;
  }
  const auto it = connections_.find(m.destination_connection);
  if (it == connections_.end()) {
    OnOrphan(m);
    return;
  }
  it->second->OnMessage(m);
}

void ConnectionManager::OnRequest(const CmMessage& request) {
  // A request with more private data than a connect may carry (ref §2.5 MaxCallerData) is not
  // one our consumer could be shown: refuse it as a protocol error.
  if (request.private_data_length > MaxCallerData()) {
    Reply(request, CmType::kRej, RejectReason::kAborted);
    return;
  }
  Listener* listener = FindListener(request.destination);
  if (listener == nullptr || !listener->TakesRequests()) {
    Reply(request, CmType::kRej, RejectReason::kNoListener);  // -> CONNECTION_REFUSED
    return;
  }
  listener->OnRequest(request);
}

// A message for a connector that no longer exists (closed, or never was).
void ConnectionManager::OnOrphan(const CmMessage& message) {
  switch (message.type) {
    case CmType::kRep:
      // The connector gave up or closed: tell the acceptor so its Accept ends.
      Reply(message, CmType::kRej, RejectReason::kAborted);
      return;
    case CmType::kDreq:
      // Let the peer's disconnect complete at once rather than by timeout.
      Reply(message, CmType::kDrep, RejectReason::kNone);
      return;
    default:
      return;
  }
}

void ConnectionManager::Reply(const CmMessage& to, CmType type, RejectReason reason) {
  CmMessage m;
  m.type = type;
  m.reason = reason;
  m.source = to.destination;
  m.destination = to.source;
  m.destination_connection = to.source_connection;
  Send(to.source, m);
}

}  // namespace ndksim::provider
