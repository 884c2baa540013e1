// SPDX-License-Identifier: MIT
// The connected QP pair (ndksim/harness.h): both sides' adapters, PDs, CQs and QPs, the NDK
// connection between them (listener, connector, accept, complete-connect), extra connections, and
// the close of everything in the order NDK requires.
#include "ndksim/harness.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace ndksim {

QpPair::QpPair(QpPairConfig config) : config_(config), fabric_(config.fabric) {
  Node& na = fabric_.AddNode({"a", {"192.0.2.1", "2001:db8::1"}});
  Node& nb = config.loopback ? na : fabric_.AddNode({"b", {"192.0.2.2", "2001:db8::2"}});
  a_.node = &na;
  b_.node = &nb;
  a_.qp_context = &a_;
  b_.qp_context = &b_;
  Open(a_);
  Open(b_);
  Connect();
}

std::vector<NDK_RESULT_EX> QpPair::Collect(NDK_CQ* cq, std::size_t n, Duration limit) {
  std::vector<NDK_RESULT_EX> out;
  fabric_.RunUntil(
      [&] {
        QpEnd::Poll(cq, out, n - std::min(n, out.size()));
        return out.size() >= n;
      },
      limit);
  return out;
}

QpPair::ExtraQps QpPair::AddConnectedQps() {
  Extra e;
  e.qa = CreateQp(a_);
  e.qb = CreateQp(b_);
  Check("NdkCreateConnector", a_.adapter->Dispatch->NdkCreateConnector(a_.adapter, nullptr, nullptr, &e.ca));
  extras_.push_back(e);
  extras_.back().cb = ConnectOne(e.qa, e.ca, e.qb);
  return ExtraQps{e.qa, e.qb};
}

ULONG QpPair::Address(const QpEnd& end, USHORT port, SOCKADDR_INET* addr) const {
  std::memset(addr, 0, sizeof *addr);
  const bool is_a = &end == &a_ || config_.loopback;
  if (config_.ipv6) {
    addr->Ipv6.sin6_family = AF_INET6;
    addr->Ipv6.sin6_port = htons(port);
    inet_pton(AF_INET6, is_a ? "2001:db8::1" : "2001:db8::2", &addr->Ipv6.sin6_addr);
    return sizeof(SOCKADDR_IN6);
  }
  addr->Ipv4.sin_family = AF_INET;
  addr->Ipv4.sin_port = htons(port);
  inet_pton(AF_INET, is_a ? "192.0.2.1" : "192.0.2.2", &addr->Ipv4.sin_addr);
  return sizeof(SOCKADDR_IN);
}

void QpPair::Open(QpEnd& end) {
  if (config_.loopback && &end == &b_) {
    end.adapter = a_.adapter;  // one adapter, two QPs
  } else {
    Check("OpenAdapter", end.node->OpenAdapter(NDK_VERSION{2, 1}, &end.adapter));
  }
  const NDK_ADAPTER_DISPATCH* ad = end.adapter->Dispatch;
  Check("NdkCreateCq", ad->NdkCreateCq(end.adapter, config_.cq_depth, OnCqNotify, &end, nullptr, nullptr, nullptr,
                                       &end.receive_cq));
  if (config_.shared_cq) {
    end.initiator_cq = end.receive_cq;
  } else {
    Check("NdkCreateCq", ad->NdkCreateCq(end.adapter, config_.cq_depth, OnCqNotify, &end, nullptr, nullptr,
                                         nullptr, &end.initiator_cq));
  }
  Check("NdkCreatePd", ad->NdkCreatePd(end.adapter, nullptr, nullptr, &end.pd));
  if (config_.srq_depth != 0) {
    Check("NdkCreateSrq", end.pd->Dispatch->NdkCreateSrq(end.pd, config_.srq_depth, config_.max_receive_sge, 0,
                                                         OnSrqNotify, &end, nullptr, nullptr, nullptr, &end.srq));
  }
  end.qp = CreateQp(end);
  Check("NdkCreateConnector", ad->NdkCreateConnector(end.adapter, nullptr, nullptr, &end.connector));
}

void QpPair::Connect() {
  const NDK_ADAPTER_DISPATCH* bd = b_.adapter->Dispatch;
  Check("NdkCreateListener", bd->NdkCreateListener(b_.adapter, OnConnectEvent, this, nullptr, nullptr, &listener_));
  SOCKADDR_INET listen_addr;
  const ULONG listen_len = Address(b_, config_.port, &listen_addr);
  Check("NdkListen", listener_->Dispatch->NdkListen(listener_, reinterpret_cast<PSOCKADDR>(&listen_addr), listen_len,
                                                    nullptr, nullptr));
  // b's connector from NdkCreateConnector is unused on the passive side: the listener hands out
  // the connector that accepts.
  b_.connector->Dispatch->NdkCloseConnector(&b_.connector->Header, nullptr, nullptr);
  b_.connector = nullptr;
  b_.connector = ConnectOne(a_.qp, a_.connector, b_.qp);
}

NDK_CONNECTOR* QpPair::ConnectOne(NDK_QP* qa, NDK_CONNECTOR* ca, NDK_QP* qb) {
  incoming_ = nullptr;
  SOCKADDR_INET src;
  SOCKADDR_INET dst;
  const ULONG src_len = Address(a_, 0, &src);
  const ULONG dst_len = Address(b_, config_.port, &dst);
  NTSTATUS connect_status = STATUS_PENDING;
  NTSTATUS s = ca->Dispatch->NdkConnect(ca, qa, reinterpret_cast<PSOCKADDR>(&src), src_len,
                                        reinterpret_cast<PSOCKADDR>(&dst), dst_len, config_.inbound_read_limit,
                                        config_.outbound_read_limit, nullptr, 0, OnRequestDone, &connect_status);
  if (s != STATUS_PENDING) connect_status = s;
  fabric_.RunUntil([&] { return incoming_ != nullptr || connect_status != STATUS_PENDING; });
  if (incoming_ == nullptr) Check("NdkConnect", connect_status == STATUS_PENDING ? STATUS_IO_TIMEOUT : connect_status);
  NDK_CONNECTOR* cb = incoming_;
  NTSTATUS accept_status = STATUS_PENDING;
  s = cb->Dispatch->NdkAccept(cb, qb, config_.inbound_read_limit, config_.outbound_read_limit, nullptr, 0,
                              OnDisconnect, &b_, OnRequestDone, &accept_status);
  if (s != STATUS_PENDING) accept_status = s;
  Check("NdkAccept", accept_status == STATUS_PENDING ? STATUS_SUCCESS : accept_status);
  fabric_.RunUntil([&] { return connect_status != STATUS_PENDING; });
  Check("NdkConnect", connect_status);
  NTSTATUS complete_status = STATUS_PENDING;
  s = ca->Dispatch->NdkCompleteConnect(ca, OnDisconnect, &a_, OnRequestDone, &complete_status);
  if (s != STATUS_PENDING) complete_status = s;
  fabric_.RunUntil([&] { return complete_status != STATUS_PENDING && accept_status != STATUS_PENDING; });
  Check("NdkCompleteConnect", complete_status);
  Check("NdkAccept", accept_status);
  return cb;
}

NDK_QP* QpPair::CreateQp(QpEnd& end) {
  NDK_QP* qp = nullptr;
  if (end.srq != nullptr) {
    Check("NdkCreateQpWithSrq",
          end.pd->Dispatch->NdkCreateQpWithSrq(end.pd, end.receive_cq, end.initiator_cq, end.srq, end.qp_context,
                                               config_.initiator_queue_depth, config_.max_initiator_sge,
                                               config_.inline_data_size, nullptr, nullptr, &qp));
    return qp;
  }
  Check("NdkCreateQp",
        end.pd->Dispatch->NdkCreateQp(end.pd, end.receive_cq, end.initiator_cq, end.qp_context,
                                      config_.receive_queue_depth, config_.initiator_queue_depth,
                                      config_.max_receive_sge, config_.max_initiator_sge, config_.inline_data_size,
                                      nullptr, nullptr, &qp));
  return qp;
}

void QpPair::CloseExtras() {
  for (Extra& e : extras_) {
    if (e.ca != nullptr) e.ca->Dispatch->NdkCloseConnector(&e.ca->Header, nullptr, nullptr);
    if (e.cb != nullptr) e.cb->Dispatch->NdkCloseConnector(&e.cb->Header, nullptr, nullptr);
    e.qa->Dispatch->NdkCloseQp(&e.qa->Header, nullptr, nullptr);
    e.qb->Dispatch->NdkCloseQp(&e.qb->Header, nullptr, nullptr);
  }
  extras_.clear();
  fabric_.RunUntilIdle();
}

void QpPair::Close(QpEnd& end) {
  end.buffers->CloseAll();
  if (end.connector != nullptr) end.connector->Dispatch->NdkCloseConnector(&end.connector->Header, nullptr, nullptr);
  if (end.qp != nullptr) end.qp->Dispatch->NdkCloseQp(&end.qp->Header, nullptr, nullptr);
  if (end.srq != nullptr) end.srq->Dispatch->NdkCloseSrq(&end.srq->Header, nullptr, nullptr);
  if (end.pd != nullptr) end.pd->Dispatch->NdkClosePd(&end.pd->Header, nullptr, nullptr);
  if (end.initiator_cq != nullptr && end.initiator_cq != end.receive_cq) {
    end.initiator_cq->Dispatch->NdkCloseCq(&end.initiator_cq->Header, nullptr, nullptr);
  }
  if (end.receive_cq != nullptr) end.receive_cq->Dispatch->NdkCloseCq(&end.receive_cq->Header, nullptr, nullptr);
  if (&end == &b_ && listener_ != nullptr) listener_->Dispatch->NdkCloseListener(&listener_->Header, nullptr, nullptr);
  if (end.adapter != nullptr && !(config_.loopback && &end == &a_)) end.node->CloseAdapter(end.adapter);
  fabric_.RunUntilIdle();
}

std::string QpPair::OutOfRange() const {
  NDK_ADAPTER* adapter = a_.adapter != nullptr ? a_.adapter : b_.adapter;
  if (adapter == nullptr) return {};
  NDK_ADAPTER_INFO info{};
  info.Version = NDK_VERSION{2, 1};
  ULONG size = sizeof info;
  if (adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size) != STATUS_SUCCESS) return {};
  std::string why;
  const auto within = [&](const char* field, ULONG value, ULONG low, ULONG high, const char* limit) {
    if (value >= low && value <= high) return;
    why += fmt::format("{}QpPairConfig::{} is {}; the adapter takes {} to {} (NDK_ADAPTER_INFO::{})",
                       why.empty() ? "" : "; ", field, value, low, high, limit);
  };
  within("cq_depth", config_.cq_depth, 1, info.MaxCqDepth, "MaxCqDepth");
  if (config_.srq_depth == 0) {
    within("receive_queue_depth", config_.receive_queue_depth, 1, info.MaxReceiveQueueDepth, "MaxReceiveQueueDepth");
  } else {
    within("srq_depth", config_.srq_depth, 1, info.MaxSrqDepth, "MaxSrqDepth");
  }
  within("initiator_queue_depth", config_.initiator_queue_depth, 1, info.MaxInitiatorQueueDepth,
         "MaxInitiatorQueueDepth");
  within("max_receive_sge", config_.max_receive_sge, 0, info.MaxReceiveRequestSge, "MaxReceiveRequestSge");
  within("max_initiator_sge", config_.max_initiator_sge, 0, info.MaxInitiatorRequestSge, "MaxInitiatorRequestSge");
  within("inline_data_size", config_.inline_data_size, 0, info.MaxInlineDataSize, "MaxInlineDataSize");
  return why;
}

}  // namespace ndksim
