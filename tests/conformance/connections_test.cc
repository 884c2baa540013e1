// SPDX-License-Identifier: MIT
// Conformance: connection management (ref §3.18, §4.6, §7 "Connect state machine",
// "Disconnect") and version negotiation (ref §1.1). One rule per test, named after the rule.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cm_fixture.h"
#include "ndksim/harness.h"

namespace ndksim::conformance {
namespace {

constexpr USHORT kPort = 4000;

class Connections : public TwoNodes {};

// ---- connect state machine ----------------------------------------------------------------------

TEST_F(Connections, AcceptCompletesOnlyAfterCompleteConnect) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, kPort), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_EQ(Accept(passive, b_.NewQp(), &accept), STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  ASSERT_EQ(connect.status, STATUS_SUCCESS);
  fabric_.RunFor(Microseconds(200));  // well past the REP's arrival, short of the step timeout
  EXPECT_EQ(accept.calls, 0);
  ASSERT_EQ(active->Dispatch->NdkCompleteConnect(active, nullptr, nullptr, nullptr, nullptr),
            STATUS_SUCCESS);
  fabric_.RunUntil([&] { return accept.calls > 0; });
  EXPECT_EQ(accept.status, STATUS_SUCCESS);
  EXPECT_EQ(accept.calls, 1);
}

TEST_F(Connections, AcceptFailsWithIoTimeoutIfCompleteConnectNeverComes) {
  ListenOnB(kPort);
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  ASSERT_EQ(Accept(RunUntilIncoming(), b_.NewQp(), &accept), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.status, STATUS_SUCCESS);
  EXPECT_EQ(accept.status, STATUS_IO_TIMEOUT);
  EXPECT_EQ(accept.calls, 1);
}

TEST_F(Connections, CompleteConnectOnANonConnectingConnectorIsConnectionInvalid) {
  NDK_CONNECTOR* idle = a_.NewConnector();
  EXPECT_EQ(idle->Dispatch->NdkCompleteConnect(idle, nullptr, nullptr, nullptr, nullptr),
            STATUS_CONNECTION_INVALID);
  // Still connecting (no reply yet) is not "connecting state ready to complete" either.
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  Request& connect = Req();
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, kPort), STATUS_PENDING);
  EXPECT_EQ(active->Dispatch->NdkCompleteConnect(active, nullptr, nullptr, nullptr, nullptr),
            STATUS_CONNECTION_INVALID);
}

TEST_F(Connections, CompleteConnectAfterTheAcceptorGaveUpIsConnectionAborted) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, kPort), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_EQ(Accept(passive, b_.NewQp(), &accept), STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  ASSERT_EQ(passive->Dispatch->NdkCloseConnector(&passive->Header, nullptr, nullptr),
            STATUS_PENDING);  // its pending Accept is cancelled first
  fabric_.RunUntilIdle();
  EXPECT_EQ(active->Dispatch->NdkCompleteConnect(active, nullptr, nullptr, nullptr, nullptr),
            STATUS_CONNECTION_ABORTED);
}

TEST_F(Connections, ConnectWithoutAListenerIsConnectionRefused) {
  Request& connect = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.status, STATUS_CONNECTION_REFUSED);
  EXPECT_EQ(connect.calls, 1);
}

TEST_F(Connections, ConnectToAnUnknownHostIsHostUnreachable) {
  Request& connect = Req();
  NDK_CONNECTOR* c = a_.NewConnector();
  Address src = MakeAddress(a_.v4, 0);
  Address dst = MakeAddress("198.51.100.7", kPort);
  EXPECT_EQ(c->Dispatch->NdkConnect(c, a_.NewQp(), src.Sa(), src.length, dst.Sa(), dst.length, 4, 4,
                                    nullptr, 0, Request::Done, &connect),
            STATUS_HOST_UNREACHABLE);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.calls, 0);
}

TEST_F(Connections, PausedListenerRefusesConnectorsWithConnectionRefused) {
  NDK_LISTENER* listener = ListenOnB(kPort);
  listener->Dispatch->NdkControlConnectEvents(listener, TRUE);
  Request& connect = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.status, STATUS_CONNECTION_REFUSED);
  EXPECT_TRUE(incoming_.empty());
}

TEST_F(Connections, ResumedListenerDeliversConnectEventsAgain) {
  NDK_LISTENER* listener = ListenOnB(kPort);
  listener->Dispatch->NdkControlConnectEvents(listener, TRUE);
  listener->Dispatch->NdkControlConnectEvents(listener, FALSE);
  Request& connect = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  EXPECT_NE(RunUntilIncoming(), nullptr);
}

// ---- addresses and endpoints -----------------------------------------------------------------

TEST_F(Connections, ListenOnATakenAddressIsSharingViolation) {
  ListenOnB(kPort);
  EXPECT_EQ(Listen(NewListener(b_), MakeAddress(b_.v4, kPort)), STATUS_SHARING_VIOLATION);
  EXPECT_EQ(Listen(NewListener(b_), MakeAddress("0.0.0.0", kPort)), STATUS_SHARING_VIOLATION);
}

TEST_F(Connections, ConnectFromAPortInUseIsSharingViolation) {
  NDK_LISTENER* local = NewListener(a_);
  ASSERT_EQ(Listen(local, MakeAddress(a_.v4, 5000)), STATUS_SUCCESS);
  ListenOnB(kPort);
  Request& connect = Req();
  EXPECT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort, "", 4, 4, /*source_port=*/5000),
            STATUS_SHARING_VIOLATION);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.calls, 0);
  EXPECT_TRUE(incoming_.empty());
}

// ---- QPs of other adapter objects ------------------------------------------------------------
// Adapter objects are handles to one RNIC (consumers often open one per socket): a connector takes
// a QP of any adapter object of its own node, and refuses only a QP of another node.

class ConnectionsAcrossAdapterObjects : public Connections {
 protected:
  // A second adapter object of `side`'s node, with its own CQ and PD (the fabric closes it).
  Side Another(const Side& side) {
    Side other;
    Open(other, *side.node, side.v4, side.v6);
    return other;
  }
  // a -> b over `qa` and `qb`, with a's and b's first adapter objects' connectors.
  void Connect(NDK_QP* qa, NDK_QP* qb) {
    ListenOnB(kPort);
    NDK_CONNECTOR* active = nullptr;
    NDK_CONNECTOR* passive = nullptr;
    Establish(kPort, qa, qb, &active, &passive);
  }
};

TEST_F(ConnectionsAcrossAdapterObjects, AcceptTakesAQpOfAnotherAdapterObjectOfTheSameNode) {
  Side b2 = Another(b_);
  Connect(a_.NewQp(), b2.NewQp());
  EXPECT_FALSE(HasFatalFailure());
}

TEST_F(ConnectionsAcrossAdapterObjects, ConnectTakesAQpOfAnotherAdapterObjectOfTheSameNode) {
  Side a2 = Another(a_);
  Connect(a2.NewQp(), b_.NewQp());  // a_'s connector, a2's QP
  EXPECT_FALSE(HasFatalFailure());
}

TEST_F(ConnectionsAcrossAdapterObjects, ClosingTheQpsAdapterObjectEndsTheConnectionAnotherAdapterHolds) {
  Side a2 = Another(a_);
  Connect(a2.NewQp(), b_.NewQp());
  ASSERT_FALSE(HasFatalFailure());
  a_.node->CloseAdapter(a2.adapter);  // a_'s connector still holds a2's QP
  fabric_.RunUntilIdle();
  EXPECT_EQ(a_.disconnects, 1);  // the connection a_'s connector held has ended
  EXPECT_EQ(b_.disconnects, 1);  // and the peer was told
}

TEST_F(Connections, AcceptWithAQpOfAnotherNodeIsInvalidParameter) {
  ListenOnB(kPort);
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  EXPECT_EQ(Accept(passive, a_.NewQp(), &accept), STATUS_INVALID_PARAMETER);
  fabric_.RunUntilIdle();
  EXPECT_EQ(accept.calls, 0);
}

TEST_F(Connections, ListenOnAnAddressOfAnotherAdapterIsInvalidAddress) {
  EXPECT_EQ(Listen(NewListener(b_), MakeAddress(a_.v4, kPort)), STATUS_INVALID_ADDRESS);
}

TEST_F(Connections, ConnectFromAnAddressOfAnotherAdapterIsInvalidAddress) {
  ListenOnB(kPort);
  Request& connect = Req();
  NDK_CONNECTOR* c = a_.NewConnector();
  Address src = MakeAddress(b_.v4, 0);
  Address dst = MakeAddress(b_.v4, kPort);
  EXPECT_EQ(c->Dispatch->NdkConnect(c, a_.NewQp(), src.Sa(), src.length, dst.Sa(), dst.length, 4, 4,
                                    nullptr, 0, Request::Done, &connect),
            STATUS_INVALID_ADDRESS);
}

TEST_F(Connections, CreateSharedEndpointOnAnAddressOfAnotherAdapterIsInvalidAddress) {
  Address at = MakeAddress(b_.v4, 0);
  NDK_SHARED_ENDPOINT* ep = nullptr;
  EXPECT_EQ(a_.D()->NdkCreateSharedEndpoint(a_.adapter, at.Sa(), at.length, nullptr, nullptr, &ep),
            STATUS_INVALID_ADDRESS);
  EXPECT_EQ(ep, nullptr);
}

TEST_F(Connections, CreateSharedEndpointOnABoundPortIsSharingViolation) {
  Address at = MakeAddress(a_.v4, 6000);
  NDK_SHARED_ENDPOINT* ep = nullptr;
  ASSERT_EQ(a_.D()->NdkCreateSharedEndpoint(a_.adapter, at.Sa(), at.length, nullptr, nullptr, &ep),
            STATUS_SUCCESS);
  NDK_SHARED_ENDPOINT* second = nullptr;
  EXPECT_EQ(a_.D()->NdkCreateSharedEndpoint(a_.adapter, at.Sa(), at.length, nullptr, nullptr,
                                            &second),
            STATUS_SHARING_VIOLATION);
  EXPECT_EQ(Listen(NewListener(a_), at), STATUS_SHARING_VIOLATION);
}

// ref §3.18, §7: port 0 => a provider-chosen port in 49152-65535, visible via GetLocalAddress.
TEST_F(Connections, PortZeroGetsAnEphemeralPortVisibleViaGetLocalAddress) {
  NDK_LISTENER* listener = NewListener(b_);
  ASSERT_EQ(Listen(listener, MakeAddress(b_.v4, 0)), STATUS_SUCCESS);
  Address got;
  got.length = sizeof got.storage;
  ASSERT_EQ(listener->Dispatch->NdkGetLocalAddress(listener, got.Sa(), &got.length), STATUS_SUCCESS);
  EXPECT_EQ(got.length, sizeof(SOCKADDR_IN));
  EXPECT_GE(got.Port(), 49152);

  Address at = MakeAddress(a_.v6, 0);
  NDK_SHARED_ENDPOINT* ep = nullptr;
  ASSERT_EQ(a_.D()->NdkCreateSharedEndpoint(a_.adapter, at.Sa(), at.length, nullptr, nullptr, &ep),
            STATUS_SUCCESS);
  Address ep_got;
  ep_got.length = sizeof ep_got.storage;
  ASSERT_EQ(ep->Dispatch->NdkGetLocalAddress(ep, ep_got.Sa(), &ep_got.length), STATUS_SUCCESS);
  EXPECT_EQ(ep_got.length, sizeof(SOCKADDR_IN6));
  EXPECT_GE(ep_got.Port(), 49152);

  Request& connect = Req();
  NDK_CONNECTOR* c = a_.NewConnector();
  ASSERT_EQ(Connect(c, a_.NewQp(), &connect, got.Port()), STATUS_PENDING);
  Address c_got;
  c_got.length = sizeof c_got.storage;
  ASSERT_EQ(c->Dispatch->NdkGetLocalAddress(c, c_got.Sa(), &c_got.length), STATUS_SUCCESS);
  EXPECT_GE(c_got.Port(), 49152);
}

TEST_F(Connections, GetAddressCallsFollowTheBufferTooSmallProtocol) {
  NDK_LISTENER* listener = ListenOnB(kPort, /*ipv6=*/true);
  ULONG length = 0;
  EXPECT_EQ(listener->Dispatch->NdkGetLocalAddress(listener, nullptr, &length),
            STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(length, sizeof(SOCKADDR_IN6));
  Address got;
  got.length = sizeof(SOCKADDR_IN6) - 1;
  EXPECT_EQ(listener->Dispatch->NdkGetLocalAddress(listener, got.Sa(), &got.length),
            STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(got.length, sizeof(SOCKADDR_IN6));

  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(kPort, &active, &passive, /*ipv6=*/true);
  length = 4;
  EXPECT_EQ(passive->Dispatch->NdkGetPeerAddress(passive, got.Sa(), &length), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(length, sizeof(SOCKADDR_IN6));
  EXPECT_EQ(passive->Dispatch->NdkGetPeerAddress(passive, got.Sa(), &length), STATUS_SUCCESS);
  char text[64];
  inet_ntop(AF_INET6, &got.storage.sin6_addr, text, sizeof text);
  EXPECT_STREQ(text, "2001:db8::1");
  length = 0;
  EXPECT_EQ(active->Dispatch->NdkGetLocalAddress(active, nullptr, &length), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(length, sizeof(SOCKADDR_IN6));
}

TEST_F(Connections, ConnectionsWorkOverIpv4AndIpv6) {
  ListenOnB(kPort);
  ListenOnB(kPort, /*ipv6=*/true);  // same port, other family: no collision
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(kPort, &active, &passive, /*ipv6=*/false);
  Establish(kPort, &active, &passive, /*ipv6=*/true);
  Address peer;
  peer.length = sizeof peer.storage;
  ASSERT_EQ(active->Dispatch->NdkGetPeerAddress(active, peer.Sa(), &peer.length), STATUS_SUCCESS);
  EXPECT_EQ(peer.storage.sin6_family, AF_INET6);
  EXPECT_EQ(peer.Port(), kPort);
}

// ---- shared endpoints (ref §4.6) --------------------------------------------------------------

class SharedEndpoints : public TwoNodes {
 protected:
  NDK_SHARED_ENDPOINT* NewEndpoint(USHORT port) {
    Address at = MakeAddress(a_.v4, port);
    NDK_SHARED_ENDPOINT* ep = nullptr;
    EXPECT_EQ(a_.D()->NdkCreateSharedEndpoint(a_.adapter, at.Sa(), at.length, nullptr, nullptr, &ep),
              STATUS_SUCCESS);
    return ep;
  }
  NTSTATUS ConnectShared(NDK_CONNECTOR* c, NDK_SHARED_ENDPOINT* ep, USHORT port, Request* r) {
    Address dst = MakeAddress(b_.v4, port);
    return r->Returned(c->Dispatch->NdkConnectWithSharedEndpoint(
        c, a_.NewQp(), ep, dst.Sa(), dst.length, 4, 4, nullptr, 0, Request::Done, r));
  }
};

TEST_F(SharedEndpoints, ConnectorsConnectFromTheEndpointsAddress) {
  ListenOnB(kPort);
  ListenOnB(kPort + 1);
  NDK_SHARED_ENDPOINT* ep = NewEndpoint(7000);
  Request& r1 = Req();
  Request& r2 = Req();
  NDK_CONNECTOR* c1 = a_.NewConnector();
  NDK_CONNECTOR* c2 = a_.NewConnector();
  ASSERT_EQ(ConnectShared(c1, ep, kPort, &r1), STATUS_PENDING);
  ASSERT_EQ(ConnectShared(c2, ep, kPort + 1, &r2), STATUS_PENDING);
  fabric_.RunUntil([&] { return incoming_.size() == 2; });
  ASSERT_EQ(incoming_.size(), 2u);
  for (NDK_CONNECTOR* passive : incoming_) {
    Address peer;
    peer.length = sizeof peer.storage;
    ASSERT_EQ(passive->Dispatch->NdkGetPeerAddress(passive, peer.Sa(), &peer.length), STATUS_SUCCESS);
    EXPECT_EQ(peer.Port(), 7000);
  }
}

TEST_F(SharedEndpoints, DuplicateFourTupleIsAddressAlreadyExists) {
  ListenOnB(kPort);
  NDK_SHARED_ENDPOINT* ep = NewEndpoint(7000);
  Request& r1 = Req();
  Request& r2 = Req();
  ASSERT_EQ(ConnectShared(a_.NewConnector(), ep, kPort, &r1), STATUS_PENDING);
  EXPECT_EQ(ConnectShared(a_.NewConnector(), ep, kPort, &r2), STATUS_ADDRESS_ALREADY_EXISTS);
  fabric_.RunUntil([&] { return !incoming_.empty(); });
  fabric_.RunFor(Microseconds(100));
  EXPECT_EQ(incoming_.size(), 1u);  // the refused call sent nothing
  EXPECT_EQ(r2.calls, 0);
}

TEST_F(SharedEndpoints, ClosingTheEndpointPendsAndKeepsTheAddressBusyWhileConnectorsUseIt) {
  ListenOnB(kPort);
  NDK_SHARED_ENDPOINT* ep = NewEndpoint(7000);
  NDK_CONNECTOR* c = a_.NewConnector();
  Request& r = Req();
  ASSERT_EQ(ConnectShared(c, ep, kPort, &r), STATUS_PENDING);
  Closed closed;
  ASSERT_EQ(ep->Dispatch->NdkCloseSharedEndpoint(&ep->Header, Closed::Done, &closed), STATUS_PENDING);
  fabric_.RunFor(Microseconds(50));
  EXPECT_EQ(closed.calls, 0);
  Address at = MakeAddress(a_.v4, 7000);
  NDK_SHARED_ENDPOINT* again = nullptr;
  EXPECT_EQ(a_.D()->NdkCreateSharedEndpoint(a_.adapter, at.Sa(), at.length, nullptr, nullptr, &again),
            STATUS_SHARING_VIOLATION);
  ASSERT_EQ(c->Dispatch->NdkCloseConnector(&c->Header, nullptr, nullptr), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(closed.calls, 1);
  EXPECT_EQ(a_.D()->NdkCreateSharedEndpoint(a_.adapter, at.Sa(), at.length, nullptr, nullptr, &again),
            STATUS_SUCCESS);
}

TEST_F(SharedEndpoints, EndpointWithoutConnectorsClosesInline) {
  NDK_SHARED_ENDPOINT* ep = NewEndpoint(7000);
  EXPECT_EQ(ep->Dispatch->NdkCloseSharedEndpoint(&ep->Header, nullptr, nullptr), STATUS_SUCCESS);
}

// ---- listeners (ref §4.6) -----------------------------------------------------------------------

TEST_F(Connections, ClosingAListenerKeepsItsAddressBusyWhileAcceptedConnectorsLive) {
  NDK_LISTENER* listener = ListenOnB(kPort);
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(kPort, &active, &passive);
  Closed closed;
  ASSERT_EQ(listener->Dispatch->NdkCloseListener(&listener->Header, Closed::Done, &closed),
            STATUS_PENDING);
  EXPECT_EQ(Listen(NewListener(b_), MakeAddress(b_.v4, kPort)), STATUS_SHARING_VIOLATION);
  fabric_.RunFor(Microseconds(50));
  EXPECT_EQ(closed.calls, 0);
  passive->Dispatch->NdkCloseConnector(&passive->Header, nullptr, nullptr);
  fabric_.RunUntilIdle();
  EXPECT_EQ(closed.calls, 1);
  EXPECT_EQ(Listen(NewListener(b_), MakeAddress(b_.v4, kPort)), STATUS_SUCCESS);
}

TEST_F(Connections, ClosingAListenerRefusesNewRequestsFromThatMoment) {
  NDK_LISTENER* listener = ListenOnB(kPort);
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(kPort, &active, &passive);
  ASSERT_EQ(listener->Dispatch->NdkCloseListener(&listener->Header, nullptr, nullptr), STATUS_PENDING);
  const std::size_t events = incoming_.size();
  Request& connect = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  EXPECT_EQ(connect.status, STATUS_CONNECTION_REFUSED);
  EXPECT_EQ(incoming_.size(), events);
}

// ---- GetConnectionData (ref §3.18 private-data protocol, §3.16 IRD/ORD) ----------------------

class ConnectionData : public TwoNodes {
 protected:
  // b's connector for a's REQ carrying `pdata`, IRD 8, ORD 3.
  NDK_CONNECTOR* Incoming(const std::string& pdata) {
    ListenOnB(kPort);
    EXPECT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect_, kPort, pdata, 8, 3), STATUS_PENDING);
    return RunUntilIncoming();
  }
  Request connect_;
};

TEST_F(ConnectionData, NullBufferAndZeroLengthReturnsSuccessAndTheRequiredSize) {
  NDK_CONNECTOR* c = Incoming("hello");
  ULONG length = 0;
  EXPECT_EQ(c->Dispatch->NdkGetConnectionData(c, nullptr, nullptr, nullptr, &length), STATUS_SUCCESS);
  EXPECT_EQ(length, 5u);
}

// ndksim's choice for the illegal call: STATUS_INVALID_PARAMETER, nothing written.
TEST_F(ConnectionData, NullBufferWithANonZeroLengthIsInvalidParameter) {
  NDK_CONNECTOR* c = Incoming("hello");
  ULONG length = 3;
  ULONG ird = 77;
  EXPECT_EQ(c->Dispatch->NdkGetConnectionData(c, &ird, nullptr, nullptr, &length),
            STATUS_INVALID_PARAMETER);
  EXPECT_EQ(length, 3u);
  EXPECT_EQ(ird, 77u);
}

TEST_F(ConnectionData, ShortBufferGetsThePrefixBufferTooSmallAndTheRequiredSize) {
  NDK_CONNECTOR* c = Incoming("hello");
  char buffer[8] = {};
  ULONG length = 3;
  EXPECT_EQ(c->Dispatch->NdkGetConnectionData(c, nullptr, nullptr, buffer, &length),
            STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(length, 5u);
  EXPECT_EQ(std::string(buffer, 3), "hel");
  EXPECT_EQ(buffer[3], 0);
}

TEST_F(ConnectionData, LargeEnoughBufferGetsEverythingAndTheRequiredSize) {
  NDK_CONNECTOR* c = Incoming("hello");
  char buffer[16] = {};
  ULONG length = sizeof buffer;
  EXPECT_EQ(c->Dispatch->NdkGetConnectionData(c, nullptr, nullptr, buffer, &length), STATUS_SUCCESS);
  EXPECT_EQ(length, 5u);
  EXPECT_EQ(std::string(buffer, 5), "hello");
}

TEST_F(ConnectionData, PassiveReadLimitsBeforeAcceptAreBoundedByThePeer) {
  NDK_CONNECTOR* passive = Incoming("");
  ULONG ird = 0;
  ULONG ord = 0;
  ULONG length = 0;
  // Passive before Accept: bounded by the active side's opposite limits (IRD<=3, ORD<=8).
  ASSERT_EQ(passive->Dispatch->NdkGetConnectionData(passive, &ird, &ord, nullptr, &length),
            STATUS_SUCCESS);
  EXPECT_EQ(ird, 3u);
  EXPECT_EQ(ord, 8u);
}

TEST_F(Connections, ReadLimitsOnTheActiveSideAreTheMinimumRule) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, kPort, "", /*ird=*/8, /*ord=*/3), STATUS_PENDING);
  ASSERT_EQ(Accept(RunUntilIncoming(), b_.NewQp(), &accept, "", /*ird=*/16, /*ord=*/2),
            STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  ULONG ird = 0;
  ULONG ord = 0;
  ULONG length = 0;
  ASSERT_EQ(active->Dispatch->NdkGetConnectionData(active, &ird, &ord, nullptr, &length),
            STATUS_SUCCESS);
  EXPECT_EQ(ird, 2u);  // min(8, acceptor's ORD 2)
  EXPECT_EQ(ord, 3u);  // min(3, acceptor's IRD min(16, 3))
  // Huge requests are capped by the adapter's limits.
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  ASSERT_EQ(a_.D()->NdkQueryAdapterInfo(a_.adapter, &info, &size), STATUS_SUCCESS);
  NDK_CONNECTOR* big = a_.NewConnector();
  Request& r2 = Req();
  ListenOnB(kPort + 1);
  ASSERT_EQ(Connect(big, a_.NewQp(), &r2, kPort + 1, "", 1u << 20, 1u << 20), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_EQ(passive->Dispatch->NdkGetConnectionData(passive, &ird, &ord, nullptr, &length),
            STATUS_SUCCESS);
  EXPECT_LE(ird, info.MaxOutboundReadLimit);
  EXPECT_LE(ord, info.MaxInboundReadLimit);
}

// ---- Reject (ref §3.18) ---------------------------------------------------------------------------

TEST_F(Connections, PassiveRejectRefusesTheConnectorAndCarriesPrivateData) {
  ListenOnB(kPort);
  Request& connect = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  char pdata[] = "no";
  EXPECT_EQ(passive->Dispatch->NdkReject(passive, pdata, 2), STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.status, STATUS_CONNECTION_REFUSED);
  EXPECT_EQ(connect.calls, 1);
}

TEST_F(Connections, RejectWithTooMuchPrivateDataIsInvalidParameterAndChangesNothing) {
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  ASSERT_EQ(b_.D()->NdkQueryAdapterInfo(b_.adapter, &info, &size), STATUS_SUCCESS);
  ListenOnB(kPort);
  Request& connect = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  std::string big(info.MaxCalleeData + 1, 'x');
  EXPECT_EQ(passive->Dispatch->NdkReject(passive, big.data(), static_cast<ULONG>(big.size())),
            STATUS_INVALID_PARAMETER);
  EXPECT_EQ(passive->Dispatch->NdkReject(passive, nullptr, 1), STATUS_INVALID_PARAMETER);
  Request& accept = Req();
  EXPECT_EQ(Accept(passive, b_.NewQp(), &accept), STATUS_PENDING);  // still answerable
  fabric_.RunUntil([&] { return connect.calls > 0; });
  EXPECT_EQ(connect.status, STATUS_SUCCESS);
}

TEST_F(Connections, ActiveRejectAfterConnectCompletionAbortsTheAccept) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, kPort), STATUS_PENDING);
  ASSERT_EQ(Accept(RunUntilIncoming(), b_.NewQp(), &accept, "offer"), STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  char pdata[] = "ird too low";
  EXPECT_EQ(active->Dispatch->NdkReject(active, pdata, sizeof pdata), STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(accept.status, STATUS_CONNECTION_ABORTED);
  EXPECT_EQ(accept.calls, 1);
}

TEST_F(Connections, RejectAfterThePeerGaveUpIsConnectionAborted) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, kPort), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_EQ(Accept(passive, b_.NewQp(), &accept), STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  passive->Dispatch->NdkCloseConnector(&passive->Header, nullptr, nullptr);
  fabric_.RunUntilIdle();
  EXPECT_EQ(active->Dispatch->NdkReject(active, nullptr, 0), STATUS_CONNECTION_ABORTED);
}

// ---- disconnect (ref §3.18, §7 "Disconnect") ----------------------------------------------------

TEST_F(Connections, DisconnectCompletesAfterThePeersDisconnectAndFlushesTheQp) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  NDK_QP* qp = a_.NewQp();
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(active, qp, &connect, kPort), STATUS_PENDING);
  ASSERT_EQ(Accept(RunUntilIncoming(), b_.NewQp(), &accept), STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  ASSERT_EQ(active->Dispatch->NdkCompleteConnect(active, CountDisconnect, &a_.disconnects, nullptr,
                                                 nullptr),
            STATUS_SUCCESS);
  fabric_.RunUntil([&] { return accept.calls > 0; });
  // A receive that never gets data: the implicit flush must cancel it.
  RegisteredBuffer buffer(a_.pd, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  const NDK_SGE sge = buffer.Sge(0, 64);
  ASSERT_EQ(qp->Dispatch->NdkReceive(qp, &buffer, &sge, 1), STATUS_SUCCESS);
  Request& disconnect = Req();
  ASSERT_EQ(disconnect.Returned(active->Dispatch->NdkDisconnect(active, Request::Done, &disconnect)),
            STATUS_PENDING);
  EXPECT_EQ(disconnect.calls, 0);  // not before the peer's reply
  fabric_.RunUntilIdle();
  EXPECT_EQ(disconnect.status, STATUS_SUCCESS);
  EXPECT_EQ(disconnect.calls, 1);
  EXPECT_EQ(b_.disconnects, 1);  // the peer: exactly one event
  EXPECT_EQ(a_.disconnects, 0);  // none for one's own disconnect
  // The QP is flushed and cannot be reused.
  NDK_RESULT_EX results[4];
  ASSERT_EQ(a_.cq->Dispatch->NdkGetCqResultsEx(a_.cq, results, 4), 1u);
  EXPECT_EQ(results[0].Status, STATUS_CANCELLED);
  EXPECT_EQ(results[0].RequestContext, &buffer);
}

TEST_F(Connections, PeerGetsExactlyOneDisconnectEventEvenWhenItClosesAfterwards) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(kPort, &active, &passive);
  ASSERT_EQ(active->Dispatch->NdkCloseConnector(&active->Header, nullptr, nullptr), STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(b_.disconnects, 1);
  Request& disconnect = Req();
  disconnect.Returned(passive->Dispatch->NdkDisconnect(passive, Request::Done, &disconnect));
  fabric_.RunUntilIdle();
  EXPECT_EQ(disconnect.status, STATUS_SUCCESS);
  EXPECT_EQ(b_.disconnects, 1);
  EXPECT_EQ(a_.disconnects, 0);
}

TEST_F(Connections, DisconnectOnAnUnconnectedConnectorIsConnectionInvalid) {
  NDK_CONNECTOR* idle = a_.NewConnector();
  Request& r = Req();
  EXPECT_EQ(idle->Dispatch->NdkDisconnect(idle, Request::Done, &r), STATUS_CONNECTION_INVALID);
  fabric_.RunUntilIdle();
  EXPECT_EQ(r.calls, 0);
}

// 2.1: NdkCompleteConnectEx / NdkAcceptEx take the Ex disconnect callback with a reason.
struct ExEvents {
  int calls = 0;
  ULONG reason = 0xffffffff;
  static void On(PVOID ctx, ULONG reason) {
    auto* e = static_cast<ExEvents*>(ctx);
    ++e->calls;
    e->reason = reason;
  }
};

TEST_F(Connections, ExVariantsDeliverTheDisconnectEventWithAReason) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  Request& connect = Req();
  Request& accept = Req();
  ExEvents active_events;
  ExEvents passive_events;
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, kPort), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_EQ(accept.Returned(passive->Dispatch->NdkAcceptEx(passive, b_.NewQp(), 4, 4, nullptr, 0,
                                                           ExEvents::On, &passive_events,
                                                           Request::Done, &accept)),
            STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  ASSERT_EQ(active->Dispatch->NdkCompleteConnectEx(active, ExEvents::On, &active_events, nullptr,
                                                   nullptr),
            STATUS_SUCCESS);
  fabric_.RunUntil([&] { return accept.calls > 0; });
  ASSERT_EQ(accept.status, STATUS_SUCCESS);
  Request& disconnect = Req();
  disconnect.Returned(passive->Dispatch->NdkDisconnect(passive, Request::Done, &disconnect));
  fabric_.RunUntilIdle();
  EXPECT_EQ(active_events.calls, 1);
  EXPECT_EQ(active_events.reason, 0u);  // 0 = no provider reason given
  EXPECT_EQ(passive_events.calls, 0);
}

// ---- bad calls: the status ndksim chose, and nothing changed ------------------------------------

TEST_F(Connections, ListenTwiceIsInvalidDeviceState) {
  NDK_LISTENER* listener = ListenOnB(kPort);
  EXPECT_EQ(Listen(listener, MakeAddress(b_.v4, kPort + 1)), STATUS_INVALID_DEVICE_STATE);
  EXPECT_EQ(Listen(NewListener(b_), MakeAddress(b_.v4, kPort + 1)), STATUS_SUCCESS);  // not bound
}

TEST_F(Connections, ListenerGetLocalAddressBeforeListenIsInvalidDeviceState) {
  NDK_LISTENER* listener = NewListener(b_);
  Address got;
  got.length = sizeof got.storage;
  EXPECT_EQ(listener->Dispatch->NdkGetLocalAddress(listener, got.Sa(), &got.length),
            STATUS_INVALID_DEVICE_STATE);
}

TEST_F(Connections, SecondConnectOnAConnectorIsConnectionActive) {
  ListenOnB(kPort);
  NDK_CONNECTOR* c = a_.NewConnector();
  Request& first = Req();
  Request& second = Req();
  ASSERT_EQ(Connect(c, a_.NewQp(), &first, kPort), STATUS_PENDING);
  EXPECT_EQ(Connect(c, a_.NewQp(), &second, kPort), STATUS_CONNECTION_ACTIVE);
  fabric_.RunUntil([&] { return !incoming_.empty(); });
  fabric_.RunFor(Microseconds(100));
  EXPECT_EQ(incoming_.size(), 1u);
}

TEST_F(Connections, ConnectWithAQpAlreadyInUseIsConnectionActive) {
  ListenOnB(kPort);
  NDK_QP* qp = a_.NewQp();
  Request& first = Req();
  Request& second = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), qp, &first, kPort), STATUS_PENDING);
  EXPECT_EQ(Connect(a_.NewConnector(), qp, &second, kPort), STATUS_CONNECTION_ACTIVE);
}

TEST_F(Connections, ConnectWithTooMuchPrivateDataIsInvalidParameter) {
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  ASSERT_EQ(a_.D()->NdkQueryAdapterInfo(a_.adapter, &info, &size), STATUS_SUCCESS);
  ListenOnB(kPort);
  Request& connect = Req();
  EXPECT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort,
                    std::string(info.MaxCallerData + 1, 'x')),
            STATUS_INVALID_PARAMETER);
  fabric_.RunFor(Microseconds(100));
  EXPECT_TRUE(incoming_.empty());
}

TEST_F(Connections, ConnectAcrossAddressFamiliesIsInvalidAddress) {
  ListenOnB(kPort);
  NDK_CONNECTOR* c = a_.NewConnector();
  Address src = MakeAddress(a_.v4, 0);
  Address dst = MakeAddress(b_.v6, kPort);
  Request& connect = Req();
  EXPECT_EQ(c->Dispatch->NdkConnect(c, a_.NewQp(), src.Sa(), src.length, dst.Sa(), dst.length, 4, 4,
                                    nullptr, 0, Request::Done, &connect),
            STATUS_INVALID_ADDRESS);
}

TEST_F(Connections, ConnectWithSharedEndpointWithoutAnEndpointIsInvalidParameter) {
  NDK_CONNECTOR* c = a_.NewConnector();
  Address dst = MakeAddress(b_.v4, kPort);
  Request& connect = Req();
  EXPECT_EQ(c->Dispatch->NdkConnectWithSharedEndpoint(c, a_.NewQp(), nullptr, dst.Sa(), dst.length, 4,
                                                      4, nullptr, 0, Request::Done, &connect),
            STATUS_INVALID_PARAMETER);
}

TEST_F(Connections, AcceptOnAConnectorWithoutAnIncomingRequestIsConnectionInvalid) {
  Request& accept = Req();
  EXPECT_EQ(Accept(a_.NewConnector(), a_.NewQp(), &accept), STATUS_CONNECTION_INVALID);
  fabric_.RunUntilIdle();
  EXPECT_EQ(accept.calls, 0);
}

TEST_F(Connections, ConnectionQueriesBeforeAnyPeerAreConnectionInvalid) {
  NDK_CONNECTOR* idle = a_.NewConnector();
  ULONG length = 0;
  EXPECT_EQ(idle->Dispatch->NdkGetConnectionData(idle, nullptr, nullptr, nullptr, &length),
            STATUS_CONNECTION_INVALID);
  Address got;
  got.length = sizeof got.storage;
  EXPECT_EQ(idle->Dispatch->NdkGetLocalAddress(idle, got.Sa(), &got.length), STATUS_CONNECTION_INVALID);
  EXPECT_EQ(idle->Dispatch->NdkGetPeerAddress(idle, got.Sa(), &got.length), STATUS_CONNECTION_INVALID);
  EXPECT_EQ(idle->Dispatch->NdkReject(idle, nullptr, 0), STATUS_CONNECTION_INVALID);
}

// ---- version negotiation (ref §1.1) -------------------------------------------------------------

struct VersionCase {
  NDK_VERSION requested;
  NTSTATUS status;
  NDK_VERSION granted;
};

class VersionNegotiation : public ::testing::TestWithParam<VersionCase> {};

TEST_P(VersionNegotiation, GrantsTheHighestMinorOfTheMajorOrBadVersion) {
  Fabric fabric(FunctionalFabric());
  Node& node = fabric.AddNode({"n", {"192.0.2.9"}});
  const VersionCase& c = GetParam();
  NDK_ADAPTER* adapter = nullptr;
  ASSERT_EQ(node.OpenAdapter(c.requested, &adapter), c.status);
  if (c.status != STATUS_SUCCESS) {
    EXPECT_EQ(adapter, nullptr);
    return;
  }
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  ASSERT_EQ(adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size), STATUS_SUCCESS);
  EXPECT_EQ(info.Version.Major, c.granted.Major);
  EXPECT_EQ(info.Version.Minor, c.granted.Minor);
  EXPECT_EQ(adapter->Header.Version.Minor, c.granted.Minor);
  NDK_CONNECTOR* connector = nullptr;
  ASSERT_EQ(adapter->Dispatch->NdkCreateConnector(adapter, nullptr, nullptr, &connector),
            STATUS_SUCCESS);
  EXPECT_EQ(connector->Header.Version.Major, c.granted.Major);
  EXPECT_EQ(connector->Header.Version.Minor, c.granted.Minor);
  EXPECT_EQ(connector->Header.ObjectType, NdkObjectTypeConnector);
  node.CloseAdapter(adapter);
}

INSTANTIATE_TEST_SUITE_P(
    Rule, VersionNegotiation,
    ::testing::Values(VersionCase{{1, 0}, STATUS_SUCCESS, {1, 2}},
                      VersionCase{{1, 2}, STATUS_SUCCESS, {1, 2}},
                      VersionCase{{2, 0}, STATUS_SUCCESS, {2, 1}},
                      VersionCase{{2, 1}, STATUS_SUCCESS, {2, 1}},
                      VersionCase{{1, 3}, NDIS_STATUS_BAD_VERSION, {}},
                      VersionCase{{2, 2}, NDIS_STATUS_BAD_VERSION, {}},
                      VersionCase{{3, 0}, NDIS_STATUS_BAD_VERSION, {}},
                      VersionCase{{0, 9}, NDIS_STATUS_BAD_VERSION, {}}));

}  // namespace
}  // namespace ndksim::conformance
