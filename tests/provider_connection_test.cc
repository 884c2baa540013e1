// SPDX-License-Identifier: MIT
// Provider connection-management tests through the NDK dispatch tables (ref §3.18, §4.4, §4.6):
// private data and read limits, endpoints and addresses, refusals, timeouts, close while pending,
// and disconnect races. Two nodes on the functional profile.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>
#include <string>
#include <vector>

#include "conformance/cm_fixture.h"
#include "ndksim/testing.h"

namespace ndksim {
namespace {

using conformance::CountDisconnect;
using conformance::Request;
using conformance::Side;

SOCKADDR_IN Ipv4(const char* text, USHORT port) {
  SOCKADDR_IN a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, text, &a.sin_addr);
  return a;
}

PSOCKADDR Sa(SOCKADDR_IN& a) { return reinterpret_cast<PSOCKADDR>(&a); }

// The conformance suite's two nodes with a listener on b:kPort, and its handshake helpers with
// kPort as the default destination.
class ConnectionManagement : public conformance::TwoNodes {
 protected:
  void SetUp() override { listener_ = ListenOnB(kPort); }

  // a's `connector` connects `qp` to b:port from a source port of 0 (ephemeral).
  NTSTATUS Connect(NDK_CONNECTOR* connector, NDK_QP* qp, Request* request, const std::string& pdata = "",
                   ULONG ird = 4, ULONG ord = 4, USHORT port = kPort) {
    return TwoNodes::Connect(connector, qp, request, port, pdata, ird, ord);
  }
  // A full handshake; returns the two connected connectors.
  void Establish(NDK_CONNECTOR** active, NDK_CONNECTOR** passive) { TwoNodes::Establish(kPort, active, passive); }

  static constexpr USHORT kPort = 4000;
  NDK_LISTENER* listener_ = nullptr;
};

TEST_F(ConnectionManagement, PrivateDataAndReadLimitsReachBothSides) {
  NDK_CONNECTOR* active = a_.NewConnector();
  Request connect;
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, "hello", /*ird=*/8, /*ord=*/3), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_NE(passive, nullptr);
  EXPECT_EQ(passive->Header.ObjectType, NdkObjectTypeConnector);

  // ref §3.18 private-data protocol on the passive side, before Accept.
  ULONG ird = 0;
  ULONG ord = 0;
  ULONG len = 0;
  ASSERT_EQ(passive->Dispatch->NdkGetConnectionData(passive, &ird, &ord, nullptr, &len), STATUS_SUCCESS);
  EXPECT_EQ(len, 5u);
  EXPECT_EQ(ird, 3u);  // min(adapter max, peer's ORD)
  EXPECT_EQ(ord, 8u);  // min(adapter max, peer's IRD)
  char small[2] = {};
  len = sizeof small;
  EXPECT_EQ(passive->Dispatch->NdkGetConnectionData(passive, nullptr, nullptr, small, &len), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(len, 5u);
  EXPECT_EQ(std::string(small, 2), "he");
  char whole[16] = {};
  len = sizeof whole;
  EXPECT_EQ(passive->Dispatch->NdkGetConnectionData(passive, nullptr, nullptr, whole, &len), STATUS_SUCCESS);
  EXPECT_EQ(std::string(whole, len), "hello");
  len = 3;
  EXPECT_EQ(passive->Dispatch->NdkGetConnectionData(passive, nullptr, nullptr, nullptr, &len), STATUS_INVALID_PARAMETER);

  Request accept;
  ASSERT_EQ(Accept(passive, b_.NewQp(), &accept, "world!", /*ird=*/2, /*ord=*/16), STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  ASSERT_EQ(connect.status, STATUS_SUCCESS);
  EXPECT_EQ(accept.status, STATUS_PENDING);  // ref §3.18: Accept completes after CompleteConnect
  len = sizeof whole;
  ASSERT_EQ(active->Dispatch->NdkGetConnectionData(active, &ird, &ord, whole, &len), STATUS_SUCCESS);
  EXPECT_EQ(std::string(whole, len), "world!");
  EXPECT_EQ(ird, 8u);  // min(8, b's ORD 8)
  EXPECT_EQ(ord, 2u);  // min(3, b's IRD 2)

  ASSERT_EQ(active->Dispatch->NdkCompleteConnect(active, CountDisconnect, &a_.disconnects, nullptr, nullptr),
            STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(accept.status, STATUS_SUCCESS);
  EXPECT_EQ(accept.calls, 1);
  EXPECT_EQ(connect.calls, 1);
}

// Many connection requests reach one listener at the same simulated instant: each arrives as
// an event plus a datagram in the driver's rings, which are far smaller than the burst; every
// request reaches the listener exactly once.
TEST_F(ConnectionManagement, ABurstOfRequestsAtOneInstantAllReachTheListener) {
  constexpr int kRequests = 300;
  std::vector<Request> requests(kRequests);
  for (Request& r : requests) ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &r), STATUS_PENDING);
  fabric_.RunUntil([&] { return incoming_.size() >= static_cast<std::size_t>(kRequests); });
  EXPECT_EQ(incoming_.size(), static_cast<std::size_t>(kRequests));
  fabric_.RunUntilIdle();  // the connects time out (nobody accepts) while `requests` is alive
  EXPECT_EQ(incoming_.size(), static_cast<std::size_t>(kRequests));
}

TEST_F(ConnectionManagement, EphemeralSourcePortIsVisibleOnBothSides) {
  NDK_CONNECTOR* active = a_.NewConnector();
  SOCKADDR_IN local{};
  ULONG len = sizeof local;
  EXPECT_EQ(active->Dispatch->NdkGetLocalAddress(active, Sa(local), &len), STATUS_CONNECTION_INVALID);
  Request connect;
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_NE(passive, nullptr);
  len = sizeof local;
  ASSERT_EQ(active->Dispatch->NdkGetLocalAddress(active, Sa(local), &len), STATUS_SUCCESS);
  EXPECT_EQ(len, sizeof(SOCKADDR_IN));
  EXPECT_GE(ntohs(local.sin_port), 49152);
  SOCKADDR_IN seen{};
  len = sizeof seen;
  ASSERT_EQ(passive->Dispatch->NdkGetPeerAddress(passive, Sa(seen), &len), STATUS_SUCCESS);
  EXPECT_EQ(std::memcmp(&seen, &local, sizeof seen), 0);
  SOCKADDR_IN mine{};
  len = sizeof mine;
  ASSERT_EQ(passive->Dispatch->NdkGetLocalAddress(passive, Sa(mine), &len), STATUS_SUCCESS);
  EXPECT_EQ(ntohs(mine.sin_port), kPort);
  len = 4;
  EXPECT_EQ(passive->Dispatch->NdkGetLocalAddress(passive, Sa(mine), &len), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(len, sizeof(SOCKADDR_IN));
  fabric_.RunUntilIdle();  // let the connect end while `connect` is alive
}

TEST_F(ConnectionManagement, ListenRefusesTakenPortsAndForeignAddresses) {
  NDK_LISTENER* second = NewListener(b_);
  SOCKADDR_IN local{};
  ULONG len = sizeof local;
  EXPECT_EQ(second->Dispatch->NdkGetLocalAddress(second, Sa(local), &len), STATUS_INVALID_DEVICE_STATE);
  SOCKADDR_IN same = Ipv4("192.0.2.2", kPort);
  EXPECT_EQ(second->Dispatch->NdkListen(second, Sa(same), sizeof same, nullptr, nullptr), STATUS_SHARING_VIOLATION);
  SOCKADDR_IN any = Ipv4("0.0.0.0", kPort);
  EXPECT_EQ(second->Dispatch->NdkListen(second, Sa(any), sizeof any, nullptr, nullptr), STATUS_SHARING_VIOLATION);
  SOCKADDR_IN foreign = Ipv4("192.0.2.1", 5000);
  EXPECT_EQ(second->Dispatch->NdkListen(second, Sa(foreign), sizeof foreign, nullptr, nullptr), STATUS_INVALID_ADDRESS);
  SOCKADDR_IN zero = Ipv4("0.0.0.0", 0);
  ASSERT_EQ(second->Dispatch->NdkListen(second, Sa(zero), sizeof zero, nullptr, nullptr), STATUS_SUCCESS);
  len = sizeof local;
  ASSERT_EQ(second->Dispatch->NdkGetLocalAddress(second, Sa(local), &len), STATUS_SUCCESS);
  EXPECT_GE(ntohs(local.sin_port), 49152);
  EXPECT_EQ(second->Dispatch->NdkListen(second, Sa(zero), sizeof zero, nullptr, nullptr), STATUS_INVALID_DEVICE_STATE);
}

TEST_F(ConnectionManagement, BadConnectCallsFailInlineAndChangeNothing) {
  NDK_CONNECTOR* c = a_.NewConnector();
  NDK_QP* qp = a_.NewQp();
  SOCKADDR_IN not_mine = Ipv4("192.0.2.2", 0);
  SOCKADDR_IN dst = Ipv4("192.0.2.2", kPort);
  SOCKADDR_IN nowhere = Ipv4("198.51.100.9", kPort);
  SOCKADDR_IN src = Ipv4("192.0.2.1", 0);
  Request r;
  EXPECT_EQ(c->Dispatch->NdkConnect(c, qp, Sa(not_mine), sizeof src, Sa(dst), sizeof dst, 4, 4, nullptr, 0,
                                    Request::Done, &r),
            STATUS_INVALID_ADDRESS);
  EXPECT_EQ(c->Dispatch->NdkConnect(c, qp, Sa(src), sizeof src, Sa(nowhere), sizeof nowhere, 4, 4, nullptr, 0,
                                    Request::Done, &r),
            STATUS_HOST_UNREACHABLE);
  std::string big(4096, 'x');
  EXPECT_EQ(Connect(c, qp, &r, big), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(c->Dispatch->NdkConnect(c, qp, Sa(src), sizeof src, Sa(dst), sizeof dst, 4, 4, nullptr, 0, nullptr, nullptr),
            STATUS_INVALID_PARAMETER);
  EXPECT_EQ(c->Dispatch->NdkCompleteConnect(c, nullptr, nullptr, nullptr, nullptr), STATUS_CONNECTION_INVALID);
  EXPECT_EQ(c->Dispatch->NdkReject(c, nullptr, 0), STATUS_CONNECTION_INVALID);
  ULONG len = 0;
  EXPECT_EQ(c->Dispatch->NdkGetConnectionData(c, nullptr, nullptr, nullptr, &len), STATUS_CONNECTION_INVALID);
  fabric_.RunUntilIdle();
  EXPECT_EQ(r.calls, 0);
  EXPECT_TRUE(incoming_.empty());
  // Nothing changed: the same connector and QP still connect.
  Request ok;
  EXPECT_EQ(Connect(c, qp, &ok), STATUS_PENDING);
  EXPECT_NE(RunUntilIncoming(), nullptr);
  EXPECT_EQ(Connect(c, qp, &ok), STATUS_CONNECTION_ACTIVE);
  NDK_CONNECTOR* other = a_.NewConnector();
  EXPECT_EQ(Connect(other, qp, &ok), STATUS_CONNECTION_ACTIVE);  // the QP is taken
  fabric_.RunUntilIdle();  // let the connect end while `ok` is alive
}

TEST_F(ConnectionManagement, ConsumerRejectRefusesAndFreesTheQp) {
  NDK_CONNECTOR* c = a_.NewConnector();
  NDK_QP* qp = a_.NewQp();
  Request connect;
  ASSERT_EQ(Connect(c, qp, &connect), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_NE(passive, nullptr);
  EXPECT_EQ(passive->Dispatch->NdkReject(passive, const_cast<char*>("no"), 2), STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.status, STATUS_CONNECTION_REFUSED);
  EXPECT_EQ(connect.calls, 1);
  // A QP that never connected may try again with another connector.
  Request again;
  EXPECT_EQ(Connect(a_.NewConnector(), qp, &again), STATUS_PENDING);
  fabric_.RunUntilIdle();  // let the connect end while `again` is alive
}

TEST_F(ConnectionManagement, ClosingTheIncomingConnectorRejects) {
  Request connect;
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_NE(passive, nullptr);
  EXPECT_EQ(passive->Dispatch->NdkCloseConnector(&passive->Header, nullptr, nullptr), STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.status, STATUS_CONNECTION_REFUSED);
}

TEST_F(ConnectionManagement, ConnectTimesOutAndALateAcceptIsAborted) {
  Request connect;
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_NE(passive, nullptr);
  fabric_.RunUntilIdle();  // nobody answers
  EXPECT_EQ(connect.status, STATUS_IO_TIMEOUT);
  EXPECT_GE(fabric_.Now().time_since_epoch(), Milliseconds(1));
  Request accept;
  ASSERT_EQ(Accept(passive, b_.NewQp(), &accept), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(accept.status, STATUS_CONNECTION_ABORTED);
  EXPECT_EQ(accept.calls, 1);
  EXPECT_EQ(connect.calls, 1);
}

TEST_F(ConnectionManagement, AcceptTimesOutWithoutCompleteConnect) {
  NDK_CONNECTOR* active = a_.NewConnector();
  Request connect;
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect), STATUS_PENDING);
  NDK_CONNECTOR* passive = RunUntilIncoming();
  ASSERT_NE(passive, nullptr);
  Request accept;
  ASSERT_EQ(Accept(passive, b_.NewQp(), &accept), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(connect.status, STATUS_SUCCESS);
  EXPECT_EQ(accept.status, STATUS_IO_TIMEOUT);
  // The acceptor gave up; completing now is too late.
  EXPECT_EQ(active->Dispatch->NdkCompleteConnect(active, nullptr, nullptr, nullptr, nullptr), STATUS_CONNECTION_ABORTED);
}

// Events of one test in the order the provider delivered them.
std::vector<std::string>* g_events = nullptr;

TEST_F(ConnectionManagement, ClosingAConnectorWithAPendingConnectCancelsItFirst) {
  std::vector<std::string> events;
  g_events = &events;
  NDK_CONNECTOR* c = a_.NewConnector();
  SOCKADDR_IN src = Ipv4("192.0.2.1", 0);
  SOCKADDR_IN dst = Ipv4("192.0.2.2", kPort);
  ASSERT_EQ(c->Dispatch->NdkConnect(
                c, a_.NewQp(), Sa(src), sizeof src, Sa(dst), sizeof dst, 4, 4, nullptr, 0,
                [](PVOID, NTSTATUS s) { g_events->push_back(s == STATUS_CANCELLED ? "cancelled" : "other"); },
                nullptr),
            STATUS_PENDING);
  // ref §4.4: the close pends until the pending connect has completed.
  ASSERT_EQ(c->Dispatch->NdkCloseConnector(&c->Header, [](PVOID) { g_events->push_back("closed"); }, nullptr),
            STATUS_PENDING);
  EXPECT_TRUE(events.empty());  // nothing from inside the close call
  fabric_.RunUntilIdle();
  EXPECT_EQ(events, (std::vector<std::string>{"cancelled", "closed"}));
  g_events = nullptr;
}

TEST_F(ConnectionManagement, ClosingListenerRefusesNewRequestsButWaitsForItsConnectors) {
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(&active, &passive);
  int closed = 0;
  ASSERT_EQ(listener_->Dispatch->NdkCloseListener(
                &listener_->Header, [](PVOID ctx) { ++*static_cast<int*>(ctx); }, &closed),
            STATUS_PENDING);
  Request late;
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &late), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(late.status, STATUS_CONNECTION_REFUSED);
  EXPECT_EQ(closed, 0);
  ASSERT_EQ(passive->Dispatch->NdkCloseConnector(&passive->Header, nullptr, nullptr), STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(closed, 1);
  EXPECT_EQ(a_.disconnects, 1);  // closing a connected connector tells the peer
}

TEST_F(ConnectionManagement, SimultaneousDisconnectsBothSucceedWithoutEvents) {
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(&active, &passive);
  Request da;
  Request db;
  da.Returned(active->Dispatch->NdkDisconnect(active, Request::Done, &da));
  db.Returned(passive->Dispatch->NdkDisconnect(passive, Request::Done, &db));
  fabric_.RunUntilIdle();
  EXPECT_EQ(da.status, STATUS_SUCCESS);
  EXPECT_EQ(db.status, STATUS_SUCCESS);
  EXPECT_EQ(da.calls, 1);
  EXPECT_EQ(db.calls, 1);
  EXPECT_EQ(a_.disconnects, 0);
  EXPECT_EQ(b_.disconnects, 0);
}

TEST_F(ConnectionManagement, DisconnectAfterThePeersDisconnectCompletesInline) {
  NDK_CONNECTOR* active = nullptr;
  NDK_CONNECTOR* passive = nullptr;
  Establish(&active, &passive);
  Request da;
  ASSERT_EQ(active->Dispatch->NdkDisconnect(active, Request::Done, &da), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(da.status, STATUS_SUCCESS);
  EXPECT_EQ(b_.disconnects, 1);
  Request db;
  EXPECT_EQ(passive->Dispatch->NdkDisconnect(passive, Request::Done, &db), STATUS_SUCCESS);
  fabric_.RunUntilIdle();
  EXPECT_EQ(db.calls, 0);
  EXPECT_EQ(b_.disconnects, 1);
  EXPECT_EQ(active->Dispatch->NdkDisconnect(active, Request::Done, &da), STATUS_CONNECTION_INVALID);
}

}  // namespace
}  // namespace ndksim
