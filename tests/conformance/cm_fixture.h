// SPDX-License-Identifier: MIT
// Shared by the connection and lifetime conformance tests: two nodes with an adapter, CQ and PD
// each, socket-address helpers, and recorders for the NDK completion callbacks. Everything goes
// through the dispatch tables, as consumer code does.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "ndkpi.h"
#include "ndksim/fabric.h"
#include "ndksim/profile.h"

namespace ndksim::conformance {

// One asynchronous request: how it ended and how often its callback ran (ref §4.5: once).
struct Request {
  NTSTATUS status = STATUS_PENDING;
  int calls = 0;
  static void Done(PVOID ctx, NTSTATUS status) {
    auto* r = static_cast<Request*>(ctx);
    r->status = status;
    ++r->calls;
  }
  // Folds an inline return into the record (ref §3.0: non-PENDING means no callback).
  NTSTATUS Returned(NTSTATUS s) {
    if (s != STATUS_PENDING) status = s;
    return s;
  }
};

// One asynchronous create (NDK_FN_CREATE_COMPLETION).
struct Create {
  NTSTATUS status = STATUS_PENDING;
  NDK_OBJECT_HEADER* object = nullptr;
  int calls = 0;
  static void Done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER* object) {
    auto* c = static_cast<Create*>(ctx);
    c->status = status;
    c->object = object;
    ++c->calls;
  }
};

// One asynchronous close (NDK_FN_CLOSE_COMPLETION).
struct Closed {
  int calls = 0;
  static void Done(PVOID ctx) { ++static_cast<Closed*>(ctx)->calls; }
};

inline void IgnoreCq(PVOID, NTSTATUS) {}
inline void CountDisconnect(PVOID ctx) { ++*static_cast<int*>(ctx); }

// SOCKADDR_IN or SOCKADDR_IN6 in one buffer.
struct Address {
  SOCKADDR_IN6 storage{};
  ULONG length = 0;
  PSOCKADDR Sa() { return reinterpret_cast<PSOCKADDR>(&storage); }
  USHORT Port() const { return ntohs(storage.sin6_port); }  // same offset in both families
};

inline Address MakeAddress(const char* text, USHORT port) {
  Address a;
  if (std::strchr(text, ':') != nullptr) {
    a.storage.sin6_family = AF_INET6;
    a.storage.sin6_port = htons(port);
    inet_pton(AF_INET6, text, &a.storage.sin6_addr);
    a.length = sizeof(SOCKADDR_IN6);
  } else {
    auto* v4 = reinterpret_cast<SOCKADDR_IN*>(&a.storage);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    inet_pton(AF_INET, text, &v4->sin_addr);
    a.length = sizeof(SOCKADDR_IN);
  }
  return a;
}

struct Side {
  Node* node = nullptr;
  NDK_ADAPTER* adapter = nullptr;
  NDK_CQ* cq = nullptr;
  NDK_PD* pd = nullptr;
  int disconnects = 0;
  const char* v4 = nullptr;
  const char* v6 = nullptr;

  const NDK_ADAPTER_DISPATCH* D() const { return adapter->Dispatch; }
  NDK_QP* NewQp() {
    NDK_QP* qp = nullptr;
    EXPECT_EQ(pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 8, 8, 1, 1, 0, nullptr, nullptr, &qp),
              STATUS_SUCCESS);
    return qp;
  }
  NDK_CONNECTOR* NewConnector() {
    NDK_CONNECTOR* c = nullptr;
    EXPECT_EQ(D()->NdkCreateConnector(adapter, nullptr, nullptr, &c), STATUS_SUCCESS);
    return c;
  }
};

inline FabricConfig FunctionalFabric(AsyncCompletion mode = AsyncCompletion::kInline) {
  FabricConfig c;
  c.profile = profiles::kFunctional;
  c.async_completion = mode;
  return c;
}

// Node a (192.0.2.1, 2001:db8::1) and node b (192.0.2.2, 2001:db8::2), each with a 2.1 adapter,
// a CQ and a PD. Creates use no callback, so they complete inline in every async mode.
class TwoNodes : public ::testing::Test {
 protected:
  explicit TwoNodes(FabricConfig config = FunctionalFabric()) : fabric_(config) {
    Open(a_, fabric_.AddNode({"a", {"192.0.2.1", "2001:db8::1"}}), "192.0.2.1", "2001:db8::1");
    Open(b_, fabric_.AddNode({"b", {"192.0.2.2", "2001:db8::2"}}), "192.0.2.2", "2001:db8::2");
  }
  void TearDown() override {
    a_.node->CloseAdapter(a_.adapter);
    b_.node->CloseAdapter(b_.adapter);
    fabric_.RunUntilIdle();
  }

  static void Open(Side& side, Node& node, const char* v4, const char* v6) {
    side.node = &node;
    side.v4 = v4;
    side.v6 = v6;
    ASSERT_EQ(node.OpenAdapter({2, 1}, &side.adapter), STATUS_SUCCESS);
    ASSERT_EQ(side.D()->NdkCreateCq(side.adapter, 64, IgnoreCq, nullptr, nullptr, nullptr, nullptr,
                                    &side.cq),
              STATUS_SUCCESS);
    ASSERT_EQ(side.D()->NdkCreatePd(side.adapter, nullptr, nullptr, &side.pd), STATUS_SUCCESS);
  }

  static void OnConnect(PVOID ctx, NDK_CONNECTOR* c) {
    static_cast<TwoNodes*>(ctx)->incoming_.push_back(c);
  }

  NDK_LISTENER* NewListener(Side& side) {
    NDK_LISTENER* l = nullptr;
    EXPECT_EQ(side.D()->NdkCreateListener(side.adapter, OnConnect, this, nullptr, nullptr, &l),
              STATUS_SUCCESS);
    return l;
  }
  NTSTATUS Listen(NDK_LISTENER* l, Address at) {
    return l->Dispatch->NdkListen(l, at.Sa(), at.length, nullptr, nullptr);
  }
  // A listener on b at `port` (IPv4 unless `ipv6`).
  NDK_LISTENER* ListenOnB(USHORT port, bool ipv6 = false) {
    NDK_LISTENER* l = NewListener(b_);
    EXPECT_EQ(Listen(l, MakeAddress(ipv6 ? b_.v6 : b_.v4, port)), STATUS_SUCCESS);
    return l;
  }

  // a's `connector` connects `qp` from a:source_port to b:port.
  NTSTATUS Connect(NDK_CONNECTOR* connector, NDK_QP* qp, Request* request, USHORT port,
                   const std::string& pdata = "", ULONG ird = 4, ULONG ord = 4,
                   USHORT source_port = 0, bool ipv6 = false) {
    Address src = MakeAddress(ipv6 ? a_.v6 : a_.v4, source_port);
    Address dst = MakeAddress(ipv6 ? b_.v6 : b_.v4, port);
    return request->Returned(connector->Dispatch->NdkConnect(
        connector, qp, src.Sa(), src.length, dst.Sa(), dst.length, ird, ord,
        pdata.empty() ? nullptr : const_cast<char*>(pdata.data()),
        static_cast<ULONG>(pdata.size()), Request::Done, request));
  }

  NDK_CONNECTOR* RunUntilIncoming() {
    const std::size_t before = incoming_.size();
    fabric_.RunUntil([&] { return incoming_.size() > before; });
    return incoming_.size() > before ? incoming_.back() : nullptr;
  }

  NTSTATUS Accept(NDK_CONNECTOR* c, NDK_QP* qp, Request* request, const std::string& pdata = "",
                  ULONG ird = 4, ULONG ord = 4) {
    return request->Returned(c->Dispatch->NdkAccept(
        c, qp, ird, ord, pdata.empty() ? nullptr : const_cast<char*>(pdata.data()),
        static_cast<ULONG>(pdata.size()), CountDisconnect, &b_.disconnects, Request::Done,
        request));
  }

  // A full handshake a -> b:port; returns both connectors.
  void Establish(USHORT port, NDK_CONNECTOR** active, NDK_CONNECTOR** passive,
                 bool ipv6 = false) {
    Establish(port, a_.NewQp(), b_.NewQp(), active, passive, ipv6);
  }
  // The same with the QPs given: `qa` on a connects to `qb` on b.
  void Establish(USHORT port, NDK_QP* qa, NDK_QP* qb, NDK_CONNECTOR** active, NDK_CONNECTOR** passive,
                 bool ipv6 = false) {
    *active = a_.NewConnector();
    Request& connect = Req();
    Request& accept = Req();
    ASSERT_EQ(Connect(*active, qa, &connect, port, "", 4, 4, 0, ipv6), STATUS_PENDING);
    *passive = RunUntilIncoming();
    ASSERT_NE(*passive, nullptr);
    ASSERT_EQ(Accept(*passive, qb, &accept), STATUS_PENDING);
    fabric_.RunUntil([&] { return connect.calls > 0; });
    ASSERT_EQ(connect.status, STATUS_SUCCESS);
    ASSERT_EQ((*active)->Dispatch->NdkCompleteConnect(*active, CountDisconnect, &a_.disconnects,
                                                      nullptr, nullptr),
              STATUS_SUCCESS);
    fabric_.RunUntil([&] { return accept.calls > 0; });
    ASSERT_EQ(accept.status, STATUS_SUCCESS);
  }

  // A request record that outlives the test body: requests still pending when the body ends are
  // cancelled by the adapter close in TearDown, and their callbacks write here.
  Request& Req() { return requests_.emplace_back(); }

  Fabric fabric_;
  Side a_;
  Side b_;
  std::vector<NDK_CONNECTOR*> incoming_;
  std::deque<Request> requests_;
};

}  // namespace ndksim::conformance
