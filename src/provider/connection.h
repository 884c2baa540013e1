// SPDX-License-Identifier: MIT
// Connection management: connectors and listeners (NDK_CONNECTOR, NDK_LISTENER) and the node's
// CM agent that owns local endpoints and routes CM datagrams (cm_protocol.h) to them.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ndkpi.h"
#include "cm_protocol.h"
#include "objects.h"

namespace ndksim::provider {

class Driver;
class Listener;
class Qp;
class SharedEndpoint;

// The consumer's disconnect-event callback, plain (1.x) or with a reason (2.1).
struct DisconnectHandler {
  NDK_FN_DISCONNECT_EVENT_CALLBACK plain = nullptr;
  NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ex = nullptr;
  void* context = nullptr;
};

class Connector final : public Object {
 public:
  // Life of one connection attempt. Active: Idle -> Connecting -> Replied -> Connected.
  // Passive: Incoming -> Accepting -> Connected. Then Connected -> Disconnecting (local
  // NdkDisconnect) or PeerDisconnected (peer's DREQ or an abort) -> Disconnected. Failed ends
  // any attempt that did not connect (refused, rejected, timed out, aborted).
#define NDKSIM_CONNECTOR_STATES(X) \
  X(Idle)                          \
  X(Connecting)                    \
  X(Replied)                       \
  X(Incoming)                      \
  X(Accepting)                     \
  X(Connected)                     \
  X(PeerDisconnected)              \
  X(Disconnecting)                 \
  X(Disconnected)                  \
  X(Failed)
  enum class State : std::uint8_t {
#define NDKSIM_X(name) k##name,
    NDKSIM_CONNECTOR_STATES(NDKSIM_X)
#undef NDKSIM_X
  };

  static NTSTATUS Create(Adapter& adapter, NDK_CONNECTOR** out);
  // A connector for an incoming REQ, created on the listener's adapter (ref §3.18 passive 3).
  static Connector& CreateIncoming(Listener& listener, const CmMessage& request);
  Connector(Adapter& adapter, std::uint32_t id);
  ~Connector() override;

  static Connector& From(NDK_CONNECTOR* ndk) { return OwnerOf<Connector>(ndk); }
  NDK_CONNECTOR* Ndk() { return &handle_.ndk; }
  std::uint32_t Id() const { return id_; }

  // ---- NDK calls ----
  NTSTATUS Connect(NDK_QP* qp, const SOCKADDR* source, ULONG source_length,
                   const SOCKADDR* destination, ULONG destination_length, ULONG inbound_limit,
                   ULONG outbound_limit, const void* private_data, ULONG private_data_length,
                   NDK_FN_REQUEST_COMPLETION completion, void* context);
  NTSTATUS ConnectWithSharedEndpoint(NDK_QP* qp, NDK_SHARED_ENDPOINT* endpoint,
                                     const SOCKADDR* destination, ULONG destination_length,
                                     ULONG inbound_limit, ULONG outbound_limit,
                                     const void* private_data, ULONG private_data_length,
                                     NDK_FN_REQUEST_COMPLETION completion, void* context);
  NTSTATUS CompleteConnect(const DisconnectHandler& on_disconnect,
                           NDK_FN_REQUEST_COMPLETION completion, void* context);
  NTSTATUS Accept(NDK_QP* qp, ULONG inbound_limit, ULONG outbound_limit, const void* private_data,
                  ULONG private_data_length, const DisconnectHandler& on_disconnect,
                  NDK_FN_REQUEST_COMPLETION completion, void* context);
  NTSTATUS Reject(const void* private_data, ULONG private_data_length);
  NTSTATUS GetConnectionData(ULONG* inbound_limit, ULONG* outbound_limit, void* private_data,
                             ULONG* private_data_length) const;
  NTSTATUS GetLocalAddress(SOCKADDR* address, ULONG* length) const;
  NTSTATUS GetPeerAddress(SOCKADDR* address, ULONG* length) const;
  NTSTATUS Disconnect(NDK_FN_REQUEST_COMPLETION completion, void* context);

  // ref §3.18 ADDRESS_ALREADY_EXISTS: whether this connector holds the local/peer 4-tuple.
  bool Holds(const SocketAddress& local, const SocketAddress& peer) const;
  // Its (local, peer) endpoints once known (a request sent or received), else false.
  bool Endpoints(SocketAddress* local, SocketAddress* peer) const {
    if (!addresses_known_) return false;
    *local = local_;
    *peer = peer_;
    return true;
  }

  // ---- CM events (interrupt path / timers) ----
  void OnMessage(const CmMessage& message);
  void OnConnectionAbort();
  // The QP this connector uses belongs to another adapter object of the node, and that adapter is
  // being closed: the connection ends as if this connector were closed (the peer is told), the QP
  // is let go, a pending request completes with STATUS_CANCELLED and a connected consumer gets its
  // disconnect event. The connector stays open until its own consumer closes it.
  void LoseQp();

  // ---- Object ----
  void OnCloseRequested() override;
  bool HasPendingRequests() const override { return pending_.completion != nullptr; }
  void CancelPendingRequests() override;

 private:
  struct PendingRequest {
    NDK_FN_REQUEST_COMPLETION completion = nullptr;
    void* context = nullptr;
  };

  NTSTATUS CheckQp(NDK_QP* ndk_qp, Qp** out) const;
  // The checks and the REQ both connect calls share, after the local endpoint is known. Bound
  // endpoints are released by the caller when this fails.
  NTSTATUS SendRequest(Qp& qp, const SocketAddress& local, const SocketAddress& peer,
                       ULONG inbound_limit, ULONG outbound_limit, const void* private_data,
                       ULONG private_data_length);
  NTSTATUS CheckPrivateData(const void* data, ULONG length, ULONG limit) const;
  void Start(State state, NDK_FN_REQUEST_COMPLETION completion, void* context);
  void BindQp(Qp& qp);
  void ReleaseQp();
  void StoreRemote(const CmMessage& message);
  CmMessage Message(CmType type) const;
  bool SendToPeer(CmMessage& message);
  void ConnectQpInNic(NTSTATUS* status);
  void BreakQp();
  void OnTimeout();
  void Fail();
  // Completes the pending request with `status`. The consumer may close this connector inside the
  // callback (ref §4.4), so callers return right after and touch nothing of this object.
  void CompleteRequest(NTSTATUS status);
  // Calls the disconnect-event callback at most once (ref §3.18); same rule as CompleteRequest.
  void IndicateDisconnect();
  void SetState(State next);

  void OnRep(const CmMessage& m);
  void OnRej(const CmMessage& m);
  void OnRtu();
  void OnDreq();
  void OnDrep();

  Handle<NDK_CONNECTOR, Connector> handle_;
  const std::uint32_t id_;
  State state_ = State::kIdle;
  PendingRequest pending_;
  WorkId timer_ = 0;
  Qp* qp_ = nullptr;
  bool qp_connected_in_nic_ = false;
  Listener* listener_ = nullptr;  // passive connectors: the listener whose endpoint we share
  SharedEndpoint* shared_endpoint_ = nullptr;  // NdkConnectWithSharedEndpoint (ref §4.6)
  bool owns_endpoint_ = false;    // active connectors bind their own local endpoint
  bool peer_gave_up_ = false;     // REJ while Replied: CompleteConnect reports CONNECTION_ABORTED
  bool disconnect_indicated_ = false;
  DisconnectHandler on_disconnect_;

  SocketAddress local_;
  SocketAddress peer_;
  bool addresses_known_ = false;
  hw::NodeId peer_node_ = 0;
  std::uint32_t peer_connection_ = 0;
  std::uint32_t peer_qpn_ = 0;
  std::uint32_t peer_psn_ = 0;
  std::uint32_t send_psn_ = 0;
  std::uint32_t inbound_limit_ = 0;   // requested (capped) until the peer answers, then effective
  std::uint32_t outbound_limit_ = 0;
  bool peer_known_ = false;
  std::vector<std::byte> peer_private_data_;
};

class Listener final : public Object {
 public:
  static NTSTATUS Create(Adapter& adapter, NDK_FN_CONNECT_EVENT_CALLBACK on_connect,
                         void* context, NDK_LISTENER** out);
  Listener(Adapter& adapter, NDK_FN_CONNECT_EVENT_CALLBACK on_connect, void* context);
  ~Listener() override;

  static Listener& From(NDK_LISTENER* ndk) { return OwnerOf<Listener>(ndk); }
  NDK_LISTENER* Ndk() { return &handle_.ndk; }

  NTSTATUS Listen(const SOCKADDR* address, ULONG length);
  NTSTATUS GetLocalAddress(SOCKADDR* address, ULONG* length) const;
  // ref §4.6: from the moment close is requested, incoming requests are refused; ref §3.18:
  // while connect events are paused, requests are treated as if nobody listened.
  bool TakesRequests() const { return listening_ && !Closing() && !paused_; }
  void ControlConnectEvents(bool pause) { paused_ = pause; }
  // An incoming REQ: a new connector, handed to the consumer's connect-event callback.
  void OnRequest(const CmMessage& request);

 private:
  Handle<NDK_LISTENER, Listener> handle_;
  NDK_FN_CONNECT_EVENT_CALLBACK on_connect_;
  void* context_;
  bool listening_ = false;
  bool paused_ = false;
  SocketAddress local_;
};

// NDK_SHARED_ENDPOINT (ref §4.6): a bound local address:port that several connectors connect
// from. Each such connector is a successor, so the endpoint (and its binding) lives until the
// endpoint and all of them are closed.
class SharedEndpoint final : public Object {
 public:
  static NTSTATUS Create(Adapter& adapter, const SOCKADDR* address, ULONG length,
                         NDK_SHARED_ENDPOINT** out);
  explicit SharedEndpoint(Adapter& adapter);
  ~SharedEndpoint() override;

  static SharedEndpoint& From(NDK_SHARED_ENDPOINT* ndk) { return OwnerOf<SharedEndpoint>(ndk); }
  NDK_SHARED_ENDPOINT* Ndk() { return &handle_.ndk; }
  const SocketAddress& Local() const { return local_; }
  NTSTATUS GetLocalAddress(SOCKADDR* address, ULONG* length) const;

 private:
  Handle<NDK_SHARED_ENDPOINT, SharedEndpoint> handle_;
  SocketAddress local_;
  bool bound_ = false;
};

// The node's connection-management agent: local endpoints (address:port bindings, ref §4.6),
// connection ids, initial PSNs, and the demultiplexing of CM datagrams.
class ConnectionManager {
 public:
  explicit ConnectionManager(Driver& driver);

  // A datagram from the event queue.
  // `sender`: the node the fabric delivered it from. A datagram whose payload claims another
  // node is forged (a third node cannot speak for a connection's peer) and is dropped.
  void OnDatagram(std::span<const std::byte> bytes, hw::NodeId sender);

  // Binds `local` for `owner`. Port 0 picks an ephemeral port in 49152-65535 (deterministic
  // order) and writes it back. SHARING_VIOLATION if taken, TOO_MANY_ADDRESSES if none is free.
  NTSTATUS Bind(SocketAddress* local, const void* owner, Listener* listener);
  void Unbind(const void* owner);

  // Connection ids and PSNs: Peek gives the next value, Take commits it. Calls that can still
  // fail peek and take only on success, so a failed call changes nothing.
  std::uint32_t PeekConnectionId() const { return next_connection_id_; }
  std::uint32_t TakeConnectionId() { return next_connection_id_++; }
  std::uint32_t PeekPsn() const;
  void TakePsn() { ++psn_counter_; }

  void Register(Connector& connector);
  // The connector's endpoints became known: TupleInUse looks at it from now on.
  void AddTuple(const Connector& connector);
  void Unregister(const Connector& connector);
  // ref §3.18: another connector already connects (or is connected) from `local` to `peer`.
  bool TupleInUse(const SocketAddress& local, const SocketAddress& peer) const;

  // Sends `message` (fills in the source node). False when the fabric has no route.
  bool Send(const SocketAddress& destination, const CmMessage& message);
  // How long a connection step waits for the peer before IO_TIMEOUT.
  Duration StepTimeout() const;
  // Private data a connect (caller) or accept/reject (callee) may carry: the profile's limit,
  // bounded by what fits in one datagram.
  ULONG MaxCallerData() const;
  ULONG MaxCalleeData() const;

 private:
  struct Binding {
    SocketAddress local;
    const void* owner = nullptr;
    Listener* listener = nullptr;  // set for listeners: REQs are matched against these
  };
  static std::uint32_t Key(const SocketAddress& a) {
    return (std::uint32_t{a.address.family} << 16) | a.port;
  }
  // Connectors whose endpoints share this key may hold the same 4-tuple (Holds decides).
  static std::uint64_t TupleKey(const SocketAddress& local, const SocketAddress& peer) {
    std::uint64_t k = (std::uint64_t{local.port} << 32) | (std::uint64_t{peer.port} << 16) | peer.address.family;
    for (const std::uint8_t b : peer.address.bytes) k = k * 0x100000001b3ULL ^ b;
    return k;
  }
  bool InUse(const SocketAddress& a) const;
  Listener* FindListener(const SocketAddress& destination) const;
  void OnRequest(const CmMessage& request);
  void OnOrphan(const CmMessage& message);
  void Reply(const CmMessage& to, CmType type, RejectReason reason);

  Driver& driver_;
  std::unordered_multimap<std::uint32_t, Binding> bindings_;  // by (family, port)
  std::unordered_multimap<const void*, std::uint32_t> bound_by_;  // owner -> its bindings' keys
  std::unordered_map<std::uint32_t, Connector*> connections_;  // by our connection id
  std::unordered_multimap<std::uint64_t, const Connector*> tuples_;  // by TupleKey, once known
  std::uint32_t next_connection_id_ = 1;
  std::uint32_t psn_counter_ = 0;
  std::uint16_t next_ephemeral_ = kFirstEphemeralPort;

  static constexpr std::uint16_t kFirstEphemeralPort = 49152;  // ref §3.18: 49152-65535
  static constexpr std::uint32_t kEphemeralPorts = 65536 - kFirstEphemeralPort;
};

}  // namespace ndksim::provider
