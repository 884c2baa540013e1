// SPDX-License-Identifier: MIT
// NDK_CONNECTOR (ref §3.18, §4.6): its dispatch table and the connector state machine, the active
// and passive sides of connection setup, disconnect, and the queries.
#include "connection.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "control.h"
#include "driver.h"
#include "ndksim/names.h"
#include "qp.h"
#include "status.h"

namespace ndksim::provider {

namespace {

constexpr std::array<std::string_view, 10> kStateNames = {
#define NDKSIM_X(name) #name,
    NDKSIM_CONNECTOR_STATES(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kStateNames.size() == static_cast<std::size_t>(Connector::State::kFailed) + 1);

std::string_view Name(Connector::State s) { return kStateNames[static_cast<std::size_t>(s)]; }

void FireDisconnect(const DisconnectHandler& h) {
  // ProviderDisconnectReason 0 = none given (ref §3.18).
  if (h.ex != nullptr) {
    h.ex(h.context, 0);
  } else if (h.plain != nullptr) {
    h.plain(h.context);
  }
}

}  // namespace

// ==== Connector: dispatch =========================================================================

namespace {

NTSTATUS CloseConnector(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion,
                        PVOID context) {
  Connector& c = OwnerOfHeader<Connector, NDK_CONNECTOR>(header);
  c.GetDriver().Trace("close connector {}", c.Id());
  return c.GetAdapter().Close(c, completion, context);
}

NTSTATUS Connect(NDK_CONNECTOR* ndk, NDK_QP* qp, const PSOCKADDR source, ULONG source_length,
                 const PSOCKADDR destination, ULONG destination_length, ULONG inbound_limit,
                 ULONG outbound_limit, const PVOID private_data, ULONG private_data_length,
                 NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  return Connector::From(ndk).Connect(qp, source, source_length, destination, destination_length,
                                      inbound_limit, outbound_limit, private_data,
                                      private_data_length, completion, context);
}

NTSTATUS ConnectWithSharedEndpoint(NDK_CONNECTOR* ndk, NDK_QP* qp, NDK_SHARED_ENDPOINT* endpoint,
                                   const PSOCKADDR destination, ULONG destination_length,
                                   ULONG inbound_limit, ULONG outbound_limit,
                                   const PVOID private_data, ULONG private_data_length,
                                   NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  return Connector::From(ndk).ConnectWithSharedEndpoint(
      qp, endpoint, destination, destination_length, inbound_limit, outbound_limit, private_data,
      private_data_length, completion, context);
}

NTSTATUS CompleteConnect(NDK_CONNECTOR* ndk, NDK_FN_DISCONNECT_EVENT_CALLBACK on_disconnect,
                         PVOID disconnect_context, NDK_FN_REQUEST_COMPLETION completion,
                         PVOID context) {
  return Connector::From(ndk).CompleteConnect({on_disconnect, nullptr, disconnect_context},
                                              completion, context);
}

NTSTATUS CompleteConnectEx(NDK_CONNECTOR* ndk, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX on_disconnect,
                           PVOID disconnect_context, NDK_FN_REQUEST_COMPLETION completion,
                           PVOID context) {
  return Connector::From(ndk).CompleteConnect({nullptr, on_disconnect, disconnect_context},
                                              completion, context);
}

NTSTATUS Accept(NDK_CONNECTOR* ndk, NDK_QP* qp, ULONG inbound_limit, ULONG outbound_limit,
                const PVOID private_data, ULONG private_data_length,
                NDK_FN_DISCONNECT_EVENT_CALLBACK on_disconnect, PVOID disconnect_context,
                NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  return Connector::From(ndk).Accept(qp, inbound_limit, outbound_limit, private_data,
                                     private_data_length,
                                     {on_disconnect, nullptr, disconnect_context}, completion,
                                     context);
}

NTSTATUS AcceptEx(NDK_CONNECTOR* ndk, NDK_QP* qp, ULONG inbound_limit, ULONG outbound_limit,
                  const PVOID private_data, ULONG private_data_length,
                  NDK_FN_DISCONNECT_EVENT_CALLBACK_EX on_disconnect, PVOID disconnect_context,
                  NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  return Connector::From(ndk).Accept(qp, inbound_limit, outbound_limit, private_data,
                                     private_data_length,
                                     {nullptr, on_disconnect, disconnect_context}, completion,
                                     context);
}

NTSTATUS Reject(NDK_CONNECTOR* ndk, const PVOID private_data, ULONG private_data_length) {
  return Connector::From(ndk).Reject(private_data, private_data_length);
}

NTSTATUS GetConnectionData(NDK_CONNECTOR* ndk, ULONG* inbound_limit, ULONG* outbound_limit,
                           PVOID private_data, ULONG* private_data_length) {
  return Connector::From(ndk).GetConnectionData(inbound_limit, outbound_limit, private_data,
                                                private_data_length);
}

NTSTATUS GetLocalAddress(NDK_CONNECTOR* ndk, PSOCKADDR address, ULONG* length) {
  return Connector::From(ndk).GetLocalAddress(address, length);
}

NTSTATUS GetPeerAddress(NDK_CONNECTOR* ndk, PSOCKADDR address, ULONG* length) {
  return Connector::From(ndk).GetPeerAddress(address, length);
}

NTSTATUS Disconnect(NDK_CONNECTOR* ndk, NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  return Connector::From(ndk).Disconnect(completion, context);
}

const NDK_CONNECTOR_DISPATCH kConnectorDispatch = {
    Control<Connector, NDK_CONNECTOR, CloseConnector>::Call,
    NdkQueryExtensionNotSupported,
    Control<Connector, NDK_CONNECTOR, Connect>::Call,
    Control<Connector, NDK_CONNECTOR, ConnectWithSharedEndpoint>::Call,
    Control<Connector, NDK_CONNECTOR, CompleteConnect>::Call,
    Control<Connector, NDK_CONNECTOR, Accept>::Call,
    Control<Connector, NDK_CONNECTOR, Reject>::Call,
    Control<Connector, NDK_CONNECTOR, GetConnectionData>::Call,
    Control<Connector, NDK_CONNECTOR, GetLocalAddress>::Call,
    Control<Connector, NDK_CONNECTOR, GetPeerAddress>::Call,
    Control<Connector, NDK_CONNECTOR, Disconnect>::Call,
    Control<Connector, NDK_CONNECTOR, CompleteConnectEx>::Call,
    Control<Connector, NDK_CONNECTOR, AcceptEx>::Call,
};

}  // namespace

// ==== Connector: life ===========================================================================

NTSTATUS Connector::Create(Adapter& adapter, NDK_CONNECTOR** out) {
  if (out == nullptr) return STATUS_INVALID_PARAMETER;
  ConnectionManager& cm = adapter.GetDriver().Cm();
  Connector& c = adapter.Adopt(std::make_unique<Connector>(adapter, cm.TakeConnectionId()));
  cm.Register(c);
  adapter.GetDriver().Trace("create connector {}", c.Id());
  *out = c.Ndk();
  return STATUS_SUCCESS;
}

Connector& Connector::CreateIncoming(Listener& listener, const CmMessage& request) {
  Adapter& adapter = listener.GetAdapter();
  ConnectionManager& cm = adapter.GetDriver().Cm();
  Connector& c = adapter.Adopt(std::make_unique<Connector>(adapter, cm.TakeConnectionId()));
  cm.Register(c);
  c.listener_ = &listener;
  listener.AddSuccessor();  // ref §4.6: the accepted connector shares the listener's endpoint
  c.local_ = request.destination;
  c.peer_ = request.source;
  c.addresses_known_ = true;
  cm.AddTuple(c);
  c.StoreRemote(request);
  // What this side can at most use, until Accept names its own limits (ref §3.16 min rule).
  const HardwareProfile& p = adapter.GetDriver().Profile();
  c.inbound_limit_ = std::min(p.max_inbound_read_limit, request.outbound_read_limit);
  c.outbound_limit_ = std::min(p.max_outbound_read_limit, request.inbound_read_limit);
  c.SetState(State::kIncoming);
  return c;
}

Connector::Connector(Adapter& adapter, std::uint32_t id)
    : Object(adapter, NdkObjectTypeConnector), id_(id) {
  InitNdk(handle_.ndk, adapter.Version(), NdkObjectTypeConnector, &kConnectorDispatch);
  handle_.owner = this;
}

Connector::~Connector() {
  ConnectionManager& cm = GetDriver().Cm();
  if (timer_ != 0) GetDriver().Cancel(timer_);
  cm.Unregister(*this);
  if (owns_endpoint_) cm.Unbind(this);
  ReleaseQp();
  if (listener_ != nullptr) listener_->ReleaseSuccessor();
  if (shared_endpoint_ != nullptr) shared_endpoint_->ReleaseSuccessor();
}

bool Connector::Holds(const SocketAddress& local, const SocketAddress& peer) const {
  if (!addresses_known_) return false;
  switch (state_) {
    case State::kIdle:
    case State::kFailed:
    case State::kDisconnected:
      return false;
    default:
      return local_ == local && peer_ == peer;
  }
}

void Connector::SetState(State next) {
  GetDriver().Trace("connector {} {} -> {}", id_, Name(state_), Name(next));
  state_ = next;
}

// ref §3.18: closing tells the peer what a consumer call would have told it.
void Connector::OnCloseRequested() {
  switch (state_) {
    case State::kIncoming:  // closing the new connector without accepting also rejects
    case State::kReplied: {
      CmMessage rej = Message(CmType::kRej);
      rej.reason = RejectReason::kConsumer;
      SendToPeer(rej);
      break;
    }
    case State::kAccepting: {
      CmMessage rej = Message(CmType::kRej);
      rej.reason = RejectReason::kAborted;
      SendToPeer(rej);
      break;
    }
    case State::kConnected: {
      CmMessage dreq = Message(CmType::kDreq);
      SendToPeer(dreq);
      break;
    }
    default:
      break;
  }
  // The QP stops working with the connection (its flush is the implicit one of ref §3.18).
  if (qp_connected_in_nic_ && state_ != State::kDisconnecting) BreakQp();
  if (timer_ != 0) {
    GetDriver().Cancel(timer_);
    timer_ = 0;
  }
  const bool was_connected = state_ == State::kConnected || state_ == State::kDisconnecting ||
                             state_ == State::kPeerDisconnected;
  const State final_state = was_connected ? State::kDisconnected : State::kFailed;
  if (state_ != State::kIdle && state_ != final_state) SetState(final_state);
}

void Connector::CancelPendingRequests() {
  if (pending_.completion != nullptr) CompleteRequest(STATUS_CANCELLED);
}

// ==== Connector: helpers ========================================================================

NTSTATUS Connector::CheckQp(NDK_QP* ndk_qp, Qp** out) const {
  if (ndk_qp == nullptr) return STATUS_INVALID_PARAMETER;
  Qp& qp = Qp::From(ndk_qp);
  // Adapter objects are handles to one RNIC, and consumers often open one per socket: a QP of any
  // adapter object of this node will do. A QP of another node's RNIC will not.
  if (&qp.GetDriver() != &GetDriver()) return STATUS_INVALID_PARAMETER;
  // One connection per QP, ever (ref §3.18: a disconnected QP cannot be reused).
  if (qp.BoundConnector() != nullptr || qp.Connected()) return STATUS_CONNECTION_ACTIVE;
  *out = &qp;
  return STATUS_SUCCESS;
}

NTSTATUS Connector::CheckPrivateData(const void* data, ULONG length, ULONG limit) const {
  if (length > limit) return STATUS_INVALID_PARAMETER;
  if (data == nullptr && length > 0) return STATUS_INVALID_PARAMETER;
  return STATUS_SUCCESS;
}

void Connector::Start(State state, NDK_FN_REQUEST_COMPLETION completion, void* context) {
  pending_ = {completion, context};
  SetState(state);
  Driver& driver = GetDriver();
  timer_ = driver.StartTimer(driver.Cm().StepTimeout(), [this] {
    timer_ = 0;
    OnTimeout();
  });
}

// ref §4.4: QP -> Connector edge; the QP cannot close while we use it.
void Connector::BindQp(Qp& qp) {
  qp_ = &qp;
  qp.Bind(this);
  qp.AddSuccessor();
}

void Connector::ReleaseQp() {
  if (qp_ == nullptr) return;
  Qp* qp = std::exchange(qp_, nullptr);
  qp->Bind(nullptr);
  qp->ReleaseSuccessor();
}

void Connector::StoreRemote(const CmMessage& m) {
  peer_node_ = m.source_node;
  peer_connection_ = m.source_connection;
  peer_qpn_ = m.qpn;
  peer_psn_ = m.initial_psn;
  peer_private_data_.assign(m.private_data.begin(), m.private_data.begin() + m.private_data_length);
  peer_known_ = true;
}

CmMessage Connector::Message(CmType type) const {
  CmMessage m;
  m.type = type;
  m.source = local_;
  m.destination = peer_;
  m.source_connection = id_;
  m.destination_connection = peer_connection_;
  return m;
}

bool Connector::SendToPeer(CmMessage& message) {
  if (!addresses_known_) return false;
  return GetDriver().Cm().Send(peer_, message);
}

void Connector::ConnectQpInNic(NTSTATUS* status) {
  const hw::QpConnect connect{peer_node_, hw::Qpn{peer_qpn_}, send_psn_, peer_psn_,
                              inbound_limit_, outbound_limit_};
  *status = CommandToNtStatus(GetDriver().Nic().ConnectQp(qp_->Number(), connect));
  qp_connected_in_nic_ = *status == STATUS_SUCCESS;
}

// The connection is over for the QP: everything outstanding completes STATUS_CANCELLED.
void Connector::BreakQp() {
  if (qp_ == nullptr) return;
  GetDriver().Nic().ModifyQpToError(qp_->Number());
  qp_->MarkInError();
}

// An attempt that did not connect. A QP the NIC never connected may serve another connector.
void Connector::Fail() {
  SetState(State::kFailed);
  if (!qp_connected_in_nic_) ReleaseQp();
}

void Connector::CompleteRequest(NTSTATUS status) {
  if (timer_ != 0) {
    GetDriver().Cancel(timer_);
    timer_ = 0;
  }
  const PendingRequest request = std::exchange(pending_, PendingRequest{});
  GetDriver().Trace("connector {} request completes {}", id_, StatusString(status));
  if (request.completion != nullptr) request.completion(request.context, status);
}

void Connector::IndicateDisconnect() {
  if (disconnect_indicated_) return;
  disconnect_indicated_ = true;
  GetDriver().Trace("connector {} disconnect event", id_);
  FireDisconnect(on_disconnect_);
}

// ==== Connector: active side ======================================================================

namespace {

// A wildcard local address becomes the NIC's first address of the family (ref §3.18).
NTSTATUS ResolveLocal(const hw::Device& nic, SocketAddress* local) {
  if (!IsWildcard(local->address)) return STATUS_SUCCESS;
  const auto& mine = nic.Addresses();
  const auto it = std::find_if(mine.begin(), mine.end(), [&](const hw::NetworkAddress& a) {
    return a.family == local->address.family;
  });
  if (it == mine.end()) return STATUS_INVALID_ADDRESS;
  local->address = *it;
  return STATUS_SUCCESS;
}

}  // namespace

NTSTATUS Connector::Connect(NDK_QP* ndk_qp, const SOCKADDR* source, ULONG source_length,
                            const SOCKADDR* destination, ULONG destination_length,
                            ULONG inbound_limit, ULONG outbound_limit, const void* private_data,
                            ULONG private_data_length, NDK_FN_REQUEST_COMPLETION completion,
                            void* context) {
  Driver& driver = GetDriver();
  ConnectionManager& cm = driver.Cm();
  if (state_ != State::kIdle) return STATUS_CONNECTION_ACTIVE;  // a connector connects once
  if (completion == nullptr) return STATUS_INVALID_PARAMETER;
  Qp* qp = nullptr;
  if (const NTSTATUS s = CheckQp(ndk_qp, &qp); s != STATUS_SUCCESS) return s;
  if (const NTSTATUS s = CheckPrivateData(private_data, private_data_length, cm.MaxCallerData());
      s != STATUS_SUCCESS) {
    return s;
  }
  SocketAddress local;
  SocketAddress peer;
  if (const NTSTATUS s = FromSockaddr(source, source_length, &local); s != STATUS_SUCCESS) return s;
  if (const NTSTATUS s = FromSockaddr(destination, destination_length, &peer); s != STATUS_SUCCESS) {
    return s;
  }
  if (local.address.family != peer.address.family) return STATUS_INVALID_ADDRESS;
  if (IsWildcard(peer.address) || peer.port == 0) return STATUS_INVALID_ADDRESS;
  // From here on the outcomes are the ones ref §3.18 says "may occur inline or asynchronously".
  NTSTATUS status = ResolveLocal(driver.Nic(), &local);
  // ref §3.18: the source must be an address of this adapter.
  if (status == STATUS_SUCCESS && !driver.Nic().OwnsAddress(local.address)) {
    status = STATUS_INVALID_ADDRESS;
  }
  if (status == STATUS_SUCCESS) status = cm.Bind(&local, this, nullptr);
  if (status == STATUS_SUCCESS) {
    status = SendRequest(*qp, local, peer, inbound_limit, outbound_limit, private_data,
                         private_data_length);
    if (status != STATUS_SUCCESS) cm.Unbind(this);
  }
  if (status != STATUS_SUCCESS) {
    // Nothing changed. The consumer may close this connector inside the callback (ref §4.4
    // example): return at once.
    return GetAdapter().FinishRequest(*this, status, completion, context, /*failure_may_pend=*/true);
  }
  owns_endpoint_ = true;
  Start(State::kConnecting, completion, context);
  return STATUS_PENDING;
}

NTSTATUS Connector::ConnectWithSharedEndpoint(NDK_QP* ndk_qp, NDK_SHARED_ENDPOINT* ndk_endpoint,
                                              const SOCKADDR* destination,
                                              ULONG destination_length, ULONG inbound_limit,
                                              ULONG outbound_limit, const void* private_data,
                                              ULONG private_data_length,
                                              NDK_FN_REQUEST_COMPLETION completion,
                                              void* context) {
  ConnectionManager& cm = GetDriver().Cm();
  if (state_ != State::kIdle) return STATUS_CONNECTION_ACTIVE;
  if (completion == nullptr || ndk_endpoint == nullptr) return STATUS_INVALID_PARAMETER;
  SharedEndpoint& endpoint = SharedEndpoint::From(ndk_endpoint);
  if (&endpoint.GetAdapter() != &GetAdapter() || endpoint.Closing()) {
    return STATUS_INVALID_PARAMETER;
  }
  Qp* qp = nullptr;
  if (const NTSTATUS s = CheckQp(ndk_qp, &qp); s != STATUS_SUCCESS) return s;
  if (const NTSTATUS s = CheckPrivateData(private_data, private_data_length, cm.MaxCallerData());
      s != STATUS_SUCCESS) {
    return s;
  }
  SocketAddress peer;
  if (const NTSTATUS s = FromSockaddr(destination, destination_length, &peer); s != STATUS_SUCCESS) {
    return s;
  }
  SocketAddress local = endpoint.Local();
  if (local.address.family != peer.address.family) return STATUS_INVALID_ADDRESS;
  if (IsWildcard(peer.address) || peer.port == 0) return STATUS_INVALID_ADDRESS;
  NTSTATUS status = ResolveLocal(GetDriver().Nic(), &local);
  if (status == STATUS_SUCCESS) {
    status = SendRequest(*qp, local, peer, inbound_limit, outbound_limit, private_data,
                         private_data_length);
  }
  if (status != STATUS_SUCCESS) {
    return GetAdapter().FinishRequest(*this, status, completion, context, /*failure_may_pend=*/true);
  }
  // ref §4.6: one reference on the endpoint per connector using it.
  shared_endpoint_ = &endpoint;
  endpoint.AddSuccessor();
  Start(State::kConnecting, completion, context);
  return STATUS_PENDING;
}

NTSTATUS Connector::SendRequest(Qp& qp, const SocketAddress& local, const SocketAddress& peer,
                                ULONG inbound_limit, ULONG outbound_limit,
                                const void* private_data, ULONG private_data_length) {
  Driver& driver = GetDriver();
  ConnectionManager& cm = driver.Cm();
  // ref §3.18: the same 4-tuple may carry one connection only.
  if (cm.TupleInUse(local, peer)) return STATUS_ADDRESS_ALREADY_EXISTS;
  const HardwareProfile& p = driver.Profile();
  CmMessage req;
  req.type = CmType::kReq;
  req.source = local;
  req.destination = peer;
  req.source_connection = id_;
  req.qpn = qp.Number().value;
  req.initial_psn = cm.PeekPsn();
  req.inbound_read_limit = std::min<std::uint32_t>(inbound_limit, p.max_inbound_read_limit);
  req.outbound_read_limit = std::min<std::uint32_t>(outbound_limit, p.max_outbound_read_limit);
  req.private_data_length = static_cast<std::uint16_t>(private_data_length);
  if (private_data_length > 0) std::memcpy(req.private_data.data(), private_data, private_data_length);
  if (!cm.Send(peer, req)) return STATUS_HOST_UNREACHABLE;  // no node owns the destination
  // Committed.
  cm.TakePsn();
  local_ = local;
  peer_ = peer;
  addresses_known_ = true;
  cm.AddTuple(*this);
  send_psn_ = req.initial_psn;
  inbound_limit_ = req.inbound_read_limit;
  outbound_limit_ = req.outbound_read_limit;
  BindQp(qp);
  driver.Trace("connect conn {} qp {:#x} to port {} ird {} ord {} pdata {}", id_,
               qp.Number().value, peer.port, inbound_limit_, outbound_limit_, private_data_length);
  return STATUS_SUCCESS;
}

void Connector::OnRep(const CmMessage& m) {
  if (state_ != State::kConnecting) {
    // We gave up (timeout) or already answered: an acceptor waiting on us should stop waiting.
    if (state_ == State::kFailed) {
      CmMessage rej = Message(CmType::kRej);
      rej.reason = RejectReason::kAborted;
      rej.destination_connection = m.source_connection;
      GetDriver().Cm().Send(m.source, rej);
    }
    return;
  }
  StoreRemote(m);
  // ref §3.16: effective limits are the minimum of ours and the peer's opposite ones.
  inbound_limit_ = std::min(inbound_limit_, m.outbound_read_limit);
  outbound_limit_ = std::min(outbound_limit_, m.inbound_read_limit);
  SetState(State::kReplied);
  CompleteRequest(STATUS_SUCCESS);  // last
}

NTSTATUS Connector::CompleteConnect(const DisconnectHandler& on_disconnect,
                                    NDK_FN_REQUEST_COMPLETION completion, void* context) {
  if (state_ == State::kFailed && peer_gave_up_) return STATUS_CONNECTION_ABORTED;
  if (state_ != State::kReplied) return STATUS_CONNECTION_INVALID;
  NTSTATUS status = STATUS_SUCCESS;
  ConnectQpInNic(&status);
  if (status != STATUS_SUCCESS) return status;
  CmMessage rtu = Message(CmType::kRtu);
  if (!SendToPeer(rtu)) {
    BreakQp();
    Fail();
    return STATUS_CONNECTION_ABORTED;
  }
  on_disconnect_ = on_disconnect;
  qp_->MarkConnected();
  SetState(State::kConnected);
  // Errors above are inline; success may pend (ref §3.0).
  return GetAdapter().FinishRequest(*this, STATUS_SUCCESS, completion, context);
}

// ==== Connector: passive side =====================================================================

NTSTATUS Connector::Accept(NDK_QP* ndk_qp, ULONG inbound_limit, ULONG outbound_limit,
                           const void* private_data, ULONG private_data_length,
                           const DisconnectHandler& on_disconnect,
                           NDK_FN_REQUEST_COMPLETION completion, void* context) {
  Driver& driver = GetDriver();
  ConnectionManager& cm = driver.Cm();
  if (state_ != State::kIncoming) return STATUS_CONNECTION_INVALID;
  if (completion == nullptr) return STATUS_INVALID_PARAMETER;
  Qp* qp = nullptr;
  if (const NTSTATUS s = CheckQp(ndk_qp, &qp); s != STATUS_SUCCESS) return s;
  if (const NTSTATUS s = CheckPrivateData(private_data, private_data_length, cm.MaxCalleeData());
      s != STATUS_SUCCESS) {
    return s;
  }
  // ref §3.16 min rule; inbound_limit_/outbound_limit_ already hold the peer's side of it.
  const std::uint32_t inbound = std::min<std::uint32_t>(inbound_limit, inbound_limit_);
  const std::uint32_t outbound = std::min<std::uint32_t>(outbound_limit, outbound_limit_);
  const std::uint32_t psn = cm.PeekPsn();
  const hw::QpConnect connect{peer_node_, hw::Qpn{peer_qpn_}, psn, peer_psn_, inbound, outbound};
  const hw::CommandStatus status = driver.Nic().ConnectQp(qp->Number(), connect);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);

  cm.TakePsn();
  send_psn_ = psn;
  inbound_limit_ = inbound;
  outbound_limit_ = outbound;
  BindQp(*qp);
  qp_connected_in_nic_ = true;
  CmMessage rep = Message(CmType::kRep);
  rep.qpn = qp->Number().value;
  rep.initial_psn = psn;
  rep.inbound_read_limit = inbound;
  rep.outbound_read_limit = outbound;
  rep.private_data_length = static_cast<std::uint16_t>(private_data_length);
  if (private_data_length > 0) std::memcpy(rep.private_data.data(), private_data, private_data_length);
  if (!SendToPeer(rep)) {
    // The requester's node is gone: ref §3.18 lists CONNECTION_ABORTED for Accept.
    BreakQp();
    Fail();
    return STATUS_CONNECTION_ABORTED;
  }
  on_disconnect_ = on_disconnect;
  driver.Trace("accept conn {} qp {:#x} ird {} ord {} pdata {}", id_, qp->Number().value, inbound,
               outbound, private_data_length);
  Start(State::kAccepting, completion, context);
  return STATUS_PENDING;  // completes when the RTU arrives (ref §3.18: after CompleteConnect)
}

void Connector::OnRtu() {
  if (state_ != State::kAccepting) return;
  qp_->MarkConnected();
  SetState(State::kConnected);
  CompleteRequest(STATUS_SUCCESS);  // last
}

NTSTATUS Connector::Reject(const void* private_data, ULONG private_data_length) {
  ConnectionManager& cm = GetDriver().Cm();
  if (state_ == State::kFailed && peer_gave_up_) return STATUS_CONNECTION_ABORTED;
  if (state_ != State::kIncoming && state_ != State::kReplied) return STATUS_CONNECTION_INVALID;
  const ULONG limit = state_ == State::kIncoming ? cm.MaxCalleeData() : cm.MaxCallerData();
  if (const NTSTATUS s = CheckPrivateData(private_data, private_data_length, limit);
      s != STATUS_SUCCESS) {
    return s;
  }
  CmMessage rej = Message(CmType::kRej);
  rej.reason = RejectReason::kConsumer;
  rej.private_data_length = static_cast<std::uint16_t>(private_data_length);
  if (private_data_length > 0) std::memcpy(rej.private_data.data(), private_data, private_data_length);
  const bool sent = SendToPeer(rej);
  GetDriver().Trace("reject conn {}", id_);
  Fail();
  return sent ? STATUS_SUCCESS : STATUS_CONNECTION_ABORTED;
}

void Connector::OnRej(const CmMessage& m) {
  switch (state_) {
    case State::kConnecting:
      // ref §3.18: no listener and a consumer's reject are both CONNECTION_REFUSED.
      peer_private_data_.assign(m.private_data.begin(),
                                m.private_data.begin() + m.private_data_length);
      Fail();
      CompleteRequest(STATUS_CONNECTION_REFUSED);  // last
      return;
    case State::kReplied:
      // The acceptor gave up before our CompleteConnect.
      peer_gave_up_ = true;
      Fail();
      return;
    case State::kAccepting:
      // The active side rejected or abandoned after our REP (ref §3.18: Accept ... ABORTED).
      BreakQp();
      Fail();
      CompleteRequest(STATUS_CONNECTION_ABORTED);  // last
      return;
    default:
      return;
  }
}

void Connector::OnTimeout() {
  switch (state_) {
    case State::kConnecting:
      Fail();
      break;
    case State::kAccepting: {
      // The active side never completed: stop its CompleteConnect from succeeding later.
      CmMessage rej = Message(CmType::kRej);
      rej.reason = RejectReason::kAborted;
      SendToPeer(rej);
      BreakQp();
      Fail();
      break;
    }
    case State::kDisconnecting:
      SetState(State::kDisconnected);
      break;
    default:
      return;
  }
  CompleteRequest(STATUS_IO_TIMEOUT);  // last
}

// ==== Connector: disconnect =======================================================================

NTSTATUS Connector::Disconnect(NDK_FN_REQUEST_COMPLETION completion, void* context) {
  if (state_ == State::kPeerDisconnected) {
    // The peer's side is already gone: flush ours and we are done (ref §3.18 implicit flush).
    BreakQp();
    SetState(State::kDisconnected);
    return GetAdapter().FinishRequest(*this, STATUS_SUCCESS, completion, context);
  }
  if (state_ != State::kConnected) return STATUS_CONNECTION_INVALID;
  if (completion == nullptr) return STATUS_INVALID_PARAMETER;
  CmMessage dreq = Message(CmType::kDreq);
  // An unroutable DREQ leaves the timer to end the wait with IO_TIMEOUT.
  SendToPeer(dreq);
  BreakQp();  // ref §3.18: graceful disconnect flushes the QP
  disconnect_indicated_ = true;  // our own disconnect: no disconnect event for it
  Start(State::kDisconnecting, completion, context);
  return STATUS_PENDING;
}

void Connector::OnDreq() {
  CmMessage drep = Message(CmType::kDrep);
  switch (state_) {
    case State::kConnected:
      SendToPeer(drep);
      SetState(State::kPeerDisconnected);
      IndicateDisconnect();  // last
      return;
    case State::kDisconnecting:
      // Both sides disconnected at once: the peer's DREQ completes ours.
      SendToPeer(drep);
      SetState(State::kDisconnected);
      CompleteRequest(STATUS_SUCCESS);  // last
      return;
    default:
      SendToPeer(drep);  // idempotent answer so the peer's disconnect completes
      return;
  }
}

void Connector::OnDrep() {
  if (state_ != State::kDisconnecting) return;
  SetState(State::kDisconnected);
  CompleteRequest(STATUS_SUCCESS);  // last
}

void Connector::OnConnectionAbort() {
  switch (state_) {
    case State::kConnected:
      SetState(State::kPeerDisconnected);
      IndicateDisconnect();  // last
      return;
    case State::kAccepting:
      Fail();
      CompleteRequest(STATUS_CONNECTION_ABORTED);  // last
      return;
    default:
      return;  // our own disconnect is under way, or nothing to tell
  }
}

void Connector::LoseQp() {
  const bool was_connected = state_ == State::kConnected;
  OnCloseRequested();  // tells the peer, breaks the QP in the NIC, ends the state machine
  ReleaseQp();
  qp_connected_in_nic_ = false;
  CancelPendingRequests();
  if (was_connected) IndicateDisconnect();  // last
}

void Connector::OnMessage(const CmMessage& m) {
  // Only the peer of this connection may speak to it (a REP introduces the peer's id).
  if (peer_known_ && (m.source_node != peer_node_ || m.source_connection != peer_connection_)) {
    return;
  }
  switch (m.type) {
    case CmType::kRep: OnRep(m); return;
    case CmType::kRej: OnRej(m); return;
    case CmType::kRtu: OnRtu(); return;
    case CmType::kDreq: OnDreq(); return;
    case CmType::kDrep: OnDrep(); return;
    case CmType::kReq: return;  // REQs go to listeners
  }
}

// ==== Connector: queries ==========================================================================

// ref §3.18 private-data protocol (RDS = bytes of private data the peer sent).
NTSTATUS Connector::GetConnectionData(ULONG* inbound_limit, ULONG* outbound_limit,
                                      void* private_data, ULONG* private_data_length) const {
  if (private_data_length == nullptr) return STATUS_INVALID_PARAMETER;
  if (private_data == nullptr && *private_data_length > 0) return STATUS_INVALID_PARAMETER;
  if (!peer_known_) return STATUS_CONNECTION_INVALID;
  if (inbound_limit != nullptr) *inbound_limit = inbound_limit_;
  if (outbound_limit != nullptr) *outbound_limit = outbound_limit_;
  const auto rds = static_cast<ULONG>(peer_private_data_.size());
  const ULONG given = *private_data_length;
  *private_data_length = rds;
  if (private_data == nullptr) return STATUS_SUCCESS;  // a size query
  const ULONG n = std::min(given, rds);
  if (n > 0) std::memcpy(private_data, peer_private_data_.data(), n);
  return given >= rds ? STATUS_SUCCESS : STATUS_BUFFER_TOO_SMALL;
}

NTSTATUS Connector::GetLocalAddress(SOCKADDR* address, ULONG* length) const {
  if (!addresses_known_) return STATUS_CONNECTION_INVALID;
  return CopyOutAddress(local_, address, length);
}

NTSTATUS Connector::GetPeerAddress(SOCKADDR* address, ULONG* length) const {
  if (!addresses_known_) return STATUS_CONNECTION_INVALID;
  return CopyOutAddress(peer_, address, length);
}

}  // namespace ndksim::provider
