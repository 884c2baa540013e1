// SPDX-License-Identifier: MIT
/// @file
/// Consumer-side helpers for tests, examples and benchmarks: a connected QP pair on a simulated
/// fabric, registered buffers, and polling. Everything here goes through the NDK dispatch tables,
/// exactly as consumer code does; nothing reaches into the provider or the hardware model.
#pragma once

#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ndkpi.h"
#include "ndksim/fabric.h"
#include "ndksim/names.h"

namespace ndksim {

/// Thrown when a set-up step of the harness fails; the message names the step and the NTSTATUS.
class HarnessError : public std::runtime_error {
 public:
  /// "NdkCreateMr failed: STATUS_INSUFFICIENT_RESOURCES (0xc000009a)"
  HarnessError(std::string_view step, NTSTATUS status)
      : std::runtime_error(fmt::format("{} failed: {} ({:#010x})", step, StatusString(status),
                                       static_cast<std::uint32_t>(status))),
        status_(status) {}
  /// The NTSTATUS the step failed with.
  NTSTATUS Status() const { return status_; }

 private:
  NTSTATUS status_;
};

class RegisteredBuffer;

namespace detail {
/// The buffers registered on one side of a QpPair. The pair closes them (deregisters and closes
/// their MRs) before it closes their PD, so a buffer that outlives the pair, such as a member of a
/// ConnectedQpPairTest subclass, only frees its memory when it goes.
class BufferRegistry {
 public:
  void Add(RegisteredBuffer* b) { live_.push_back(b); }
  void Remove(RegisteredBuffer* b) { std::erase(live_, b); }
  bool Closed() const { return closed_; }
  inline void CloseAll();

 private:
  std::vector<RegisteredBuffer*> live_;
  bool closed_ = false;
};
}  // namespace detail

/// A host buffer registered as a memory region of a PD (NdkCreateMr + NdkRegisterMr).
///
/// Lifetime: a buffer made by QpEnd::Register belongs to its pair's side; when the pair closes, the
/// buffer's MR is closed with it and the buffer keeps only its memory (Data() stays readable; the
/// token and SGE accessors throw HarnessError). A buffer constructed directly on a PD of your own must
/// be destroyed before that PD's adapter is closed or its fabric destroyed.
class RegisteredBuffer {
 public:
  /// Registers `size` zeroed bytes on `pd` with `mr_flags` (NDK_MR_FLAG_*); throws HarnessError if
  /// a step fails.
  RegisteredBuffer(NDK_PD* pd, std::size_t size, ULONG mr_flags) : RegisteredBuffer(pd, size, mr_flags, nullptr) {}
  /// The same for a buffer of a QpPair side, closed with the side (QpEnd::Register makes these).
  RegisteredBuffer(NDK_PD* pd, std::size_t size, ULONG mr_flags, std::shared_ptr<detail::BufferRegistry> registry)
      : size_(size), storage_(new std::byte[size == 0 ? 1 : size]()), registry_(std::move(registry)) {
    if (registry_ != nullptr && registry_->Closed()) {
      throw HarnessError("RegisteredBuffer (its QpPair side is already closed)", STATUS_INVALID_DEVICE_STATE);
    }
    NTSTATUS s = pd->Dispatch->NdkCreateMr(pd, FALSE, nullptr, nullptr, &mr_);
    if (s != STATUS_SUCCESS) throw HarnessError("NdkCreateMr", s);
    MmInitializeMdl(&mdl_, storage_.get(), size_);
    s = mr_->Dispatch->NdkRegisterMr(mr_, &mdl_, size_, mr_flags, nullptr, nullptr);
    if (s != STATUS_SUCCESS) {
      mr_->Dispatch->NdkCloseMr(&mr_->Header, nullptr, nullptr);
      throw HarnessError("NdkRegisterMr", s);
    }
    if (registry_ != nullptr) registry_->Add(this);
  }
  /// Deregisters and closes the MR if it is still open, and frees the memory.
  ~RegisteredBuffer() {
    if (registry_ != nullptr) registry_->Remove(this);
    Close();
  }
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;

  /// Deregisters and closes the MR now (the memory stays). Called by the owning pair when it closes.
  void Close() {
    if (mr_ == nullptr) return;
    mr_->Dispatch->NdkDeregisterMr(mr_, nullptr, nullptr);
    mr_->Dispatch->NdkCloseMr(&mr_->Header, nullptr, nullptr);
    mr_ = nullptr;
  }
  /// Whether the MR is still registered (Close has not run).
  bool IsOpen() const { return mr_ != nullptr; }

  /// The buffer's memory; it stays readable after Close.
  std::byte* Data() { return storage_.get(); }
  /// The buffer's size in bytes.
  std::size_t Size() const { return size_; }
  /// The address of byte `offset`, as a peer's NdkRead or NdkWrite names it.
  std::uint64_t Address(std::size_t offset = 0) const { return reinterpret_cast<std::uint64_t>(storage_.get() + offset); }
  /// The MR's local token (NdkGetLocalTokenFromMr); throws HarnessError once the MR is closed.
  UINT32 LocalToken() const { return Open()->Dispatch->NdkGetLocalTokenFromMr(mr_); }
  /// The MR's remote token (NdkGetRemoteTokenFromMr); throws HarnessError once the MR is closed.
  UINT32 RemoteToken() const { return Open()->Dispatch->NdkGetRemoteTokenFromMr(mr_); }
  /// The MR; throws HarnessError once it is closed.
  NDK_MR* Mr() const { return Open(); }
  /// An SGE of `length` bytes from byte `offset`, with the MR's local token.
  NDK_SGE Sge(std::size_t offset, ULONG length) const {
    NDK_SGE sge{};
    sge.VirtualAddress = storage_.get() + offset;
    sge.Length = length;
    sge.MemoryRegionToken = LocalToken();
    return sge;
  }

 private:
  NDK_MR* Open() const {
    if (mr_ == nullptr) {
      throw HarnessError("RegisteredBuffer (its MR was closed with its QpPair side)", STATUS_INVALID_DEVICE_STATE);
    }
    return mr_;
  }

  std::size_t size_;
  std::unique_ptr<std::byte[]> storage_;
  std::shared_ptr<detail::BufferRegistry> registry_;
  MDL mdl_{};
  NDK_MR* mr_ = nullptr;
};

namespace detail {
inline void BufferRegistry::CloseAll() {
  closed_ = true;
  for (RegisteredBuffer* b : live_) b->Close();
  live_.clear();
}
}  // namespace detail

/// How QpPair builds its pair: the fabric, the addresses, and the queues' depths and limits.
struct QpPairConfig {
  FabricConfig fabric;       ///< the fabric the pair is made on
  bool loopback = false;     ///< both QPs on one node (the adapter's loopback)
  bool ipv6 = false;         ///< connect over IPv6 addresses instead of IPv4
  bool shared_cq = false;    ///< one CQ per side for receive and initiator completions
  ULONG cq_depth = 1024;     ///< entries of each CQ
  /// Every QP of a side takes its receives from one SRQ of this depth (NdkCreateQpWithSrq);
  /// 0: each QP has its own receive queue.
  ULONG srq_depth = 0;
  ULONG receive_queue_depth = 256;    ///< each QP's receive queue (without an SRQ)
  ULONG initiator_queue_depth = 256;  ///< each QP's initiator queue
  ULONG max_receive_sge = 8;          ///< SGEs a receive request may have
  ULONG max_initiator_sge = 8;        ///< SGEs an initiator request may have
  ULONG inline_data_size = 64;        ///< inline bytes an initiator request may carry
  ULONG inbound_read_limit = 16;      ///< IRD, given to NdkConnect and NdkAccept
  ULONG outbound_read_limit = 16;     ///< ORD, given to NdkConnect and NdkAccept
  USHORT port = 4791;                 ///< the port node "b" listens on
};

/// One side of a connected pair.
struct QpEnd {
  Node* node = nullptr;            ///< the side's node
  NDK_ADAPTER* adapter = nullptr;  ///< the adapter opened on it (one for both sides in loopback)
  NDK_PD* pd = nullptr;            ///< the side's PD
  NDK_CQ* receive_cq = nullptr;    ///< the CQ of receive completions
  NDK_CQ* initiator_cq = nullptr;  ///< the CQ of initiator completions (receive_cq with shared_cq)
  NDK_QP* qp = nullptr;            ///< the connected QP
  NDK_SRQ* srq = nullptr;       ///< with QpPairConfig::srq_depth
  int srq_notifications = 0;    ///< calls of the SRQ notification callback
  NTSTATUS last_srq_status = STATUS_SUCCESS;  ///< the status of the last SRQ notification
  NDK_CONNECTOR* connector = nullptr;         ///< the QP's connector
  void* qp_context = nullptr;   ///< the QPContext given to NdkCreateQp
  int disconnect_events = 0;    ///< calls of the disconnect-event callback
  int cq_notifications = 0;     ///< calls of the CQ notification callback
  NTSTATUS last_cq_status = STATUS_SUCCESS;  ///< the status of the last CQ notification
  /// Called (after counting) from the CQ notification callback of this side's CQs, if set: lets a
  /// test poll, post or re-arm from inside the callback.
  std::function<void(NTSTATUS)> on_cq_notification;
  /// The buffers Register made on this side: closed with the side, before its PD.
  std::shared_ptr<detail::BufferRegistry> buffers = std::make_shared<detail::BufferRegistry>();

  /// NdkSend on the QP.
  NTSTATUS Send(void* ctx, std::span<const NDK_SGE> sgl, ULONG flags = 0) {
    return qp->Dispatch->NdkSend(qp, ctx, sgl.data(), static_cast<ULONG>(sgl.size()), flags);
  }
  /// NdkReceive on the QP.
  NTSTATUS Receive(void* ctx, std::span<const NDK_SGE> sgl) {
    return qp->Dispatch->NdkReceive(qp, ctx, sgl.data(), static_cast<ULONG>(sgl.size()));
  }
  /// NdkSrqReceive on the side's SRQ.
  NTSTATUS SrqReceive(void* ctx, std::span<const NDK_SGE> sgl) {
    return srq->Dispatch->NdkSrqReceive(srq, ctx, sgl.data(), static_cast<ULONG>(sgl.size()));
  }
  /// NdkWrite on the QP, to `raddr` under the peer's token `rtoken`.
  NTSTATUS Write(void* ctx, std::span<const NDK_SGE> sgl, UINT64 raddr, UINT32 rtoken, ULONG flags = 0) {
    return qp->Dispatch->NdkWrite(qp, ctx, sgl.data(), static_cast<ULONG>(sgl.size()), raddr, rtoken, flags);
  }
  /// NdkRead on the QP, from `raddr` under the peer's token `rtoken`.
  NTSTATUS Read(void* ctx, std::span<const NDK_SGE> sgl, UINT64 raddr, UINT32 rtoken, ULONG flags = 0) {
    return qp->Dispatch->NdkRead(qp, ctx, sgl.data(), static_cast<ULONG>(sgl.size()), raddr, rtoken, flags);
  }
  /// A buffer of `size` bytes registered on the side's PD (by default with local write and remote
  /// read and write rights), closed with the side.
  std::unique_ptr<RegisteredBuffer> Register(std::size_t size, ULONG mr_flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
                                                                                  NDK_MR_FLAG_ALLOW_REMOTE_READ |
                                                                                  NDK_MR_FLAG_ALLOW_REMOTE_WRITE) {
    return std::make_unique<RegisteredBuffer>(pd, size, mr_flags, buffers);
  }
  /// Removes up to `max` results from `cq` (NdkGetCqResultsEx) and appends them to `out`.
  static std::size_t Poll(NDK_CQ* cq, std::vector<NDK_RESULT_EX>& out, std::size_t max = 64) {
    NDK_RESULT_EX r[64];
    const ULONG n = cq->Dispatch->NdkGetCqResultsEx(cq, r, static_cast<ULONG>(std::min<std::size_t>(max, 64)));
    out.insert(out.end(), r, r + n);
    return n;
  }
};

/// Two QPs connected through the NDK connection interface (listener, connector, accept,
/// complete-connect) on a fresh fabric: node "a" connects to node "b" (or to itself in loopback).
class QpPair {
 public:
  /// Makes the fabric and both sides and connects them; throws HarnessError if a step fails.
  explicit QpPair(QpPairConfig config = {}) : config_(config), fabric_(config.fabric) {
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
  /// Stops the engine's thread if it runs, then closes every object of both sides (the registered
  /// buffers' MRs first).
  ~QpPair() {
    // Closing runs the fabric stepped: a pair whose engine still runs on its thread stops it first.
    fabric_.Stop(StopMode::kNow);
    CloseExtras();
    Close(a_);
    Close(b_);
  }
  QpPair(const QpPair&) = delete;
  QpPair& operator=(const QpPair&) = delete;

  Fabric& fabric() { return fabric_; }                    ///< the pair's fabric
  QpEnd& a() { return a_; }                               ///< side "a", which connects
  QpEnd& b() { return b_; }                               ///< side "b", which listens and accepts
  const QpPairConfig& config() const { return config_; }  ///< what the pair was made with

  /// Runs the fabric until `n` results have been collected from `cq` (or `limit` of simulated time
  /// passes); returns what was collected.
  std::vector<NDK_RESULT_EX> Collect(NDK_CQ* cq, std::size_t n, Duration limit = Milliseconds(100)) {
    std::vector<NDK_RESULT_EX> out;
    fabric_.RunUntil(
        [&] {
          QpEnd::Poll(cq, out, n - std::min(n, out.size()));
          return out.size() >= n;
        },
        limit);
    return out;
  }
  /// Runs until nothing is left to do, then returns every result on `cq`.
  std::vector<NDK_RESULT_EX> Drain(NDK_CQ* cq) {
    fabric_.RunUntilIdle();
    std::vector<NDK_RESULT_EX> out;
    while (QpEnd::Poll(cq, out) > 0) {
    }
    return out;
  }

  /// One more connected QP on each side, sharing that side's PD and CQs (for workloads over several
  /// connections). Its QPContext is the side's QpEnd, like the first QP's. Closed with the pair.
  struct ExtraQps {
    NDK_QP* a = nullptr;  ///< the new QP of side "a"
    NDK_QP* b = nullptr;  ///< the new QP of side "b", connected to it
  };
  /// Makes and connects the ExtraQps and returns them; throws HarnessError if a step fails.
  ExtraQps AddConnectedQps() {
    Extra e;
    e.qa = CreateQp(a_);
    e.qb = CreateQp(b_);
    Check("NdkCreateConnector", a_.adapter->Dispatch->NdkCreateConnector(a_.adapter, nullptr, nullptr, &e.ca));
    extras_.push_back(e);
    extras_.back().cb = ConnectOne(e.qa, e.ca, e.qb);
    return ExtraQps{e.qa, e.qb};
  }

  /// Fills `addr` with the IPv4 or IPv6 address of side `end` and `port`; returns its length.
  ULONG Address(const QpEnd& end, USHORT port, SOCKADDR_INET* addr) const {
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

 private:
  static void OnCqNotify(PVOID ctx, NTSTATUS status) {
    auto* end = static_cast<QpEnd*>(ctx);
    ++end->cq_notifications;
    end->last_cq_status = status;
    if (end->on_cq_notification) end->on_cq_notification(status);
  }
  static void OnSrqNotify(PVOID ctx, NTSTATUS status) {
    auto* end = static_cast<QpEnd*>(ctx);
    ++end->srq_notifications;
    end->last_srq_status = status;
  }
  static void OnDisconnect(PVOID ctx) { ++static_cast<QpEnd*>(ctx)->disconnect_events; }
  static void OnConnectEvent(PVOID ctx, NDK_CONNECTOR* connector) {
    auto* self = static_cast<QpPair*>(ctx);
    self->incoming_ = connector;
  }
  static void OnRequestDone(PVOID ctx, NTSTATUS status) {
    auto* slot = static_cast<NTSTATUS*>(ctx);
    *slot = status;
  }

  void Open(QpEnd& end) {
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

  void Connect() {
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

  /// Connects `qa` (through connector `ca`) to the listener, accepts with `qb`, and returns b's
  /// connector.
  NDK_CONNECTOR* ConnectOne(NDK_QP* qa, NDK_CONNECTOR* ca, NDK_QP* qb) {
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

  NDK_QP* CreateQp(QpEnd& end) {
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

  void CloseExtras() {
    for (Extra& e : extras_) {
      if (e.ca != nullptr) e.ca->Dispatch->NdkCloseConnector(&e.ca->Header, nullptr, nullptr);
      if (e.cb != nullptr) e.cb->Dispatch->NdkCloseConnector(&e.cb->Header, nullptr, nullptr);
      e.qa->Dispatch->NdkCloseQp(&e.qa->Header, nullptr, nullptr);
      e.qb->Dispatch->NdkCloseQp(&e.qb->Header, nullptr, nullptr);
    }
    extras_.clear();
    fabric_.RunUntilIdle();
  }

  void Close(QpEnd& end) {
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

  /// Throws HarnessError if `s` is not STATUS_SUCCESS, naming the QpPairConfig fields that are
  /// outside what the adapter takes (a zero depth, a depth or limit above the adapter's), if any.
  void Check(const char* step, NTSTATUS s) const {
    if (s == STATUS_SUCCESS) return;
    const std::string why = OutOfRange();
    throw HarnessError(why.empty() ? std::string(step) : fmt::format("{} ({})", step, why), s);
  }

  std::string OutOfRange() const {
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

  QpPairConfig config_;
  Fabric fabric_;
  QpEnd a_;
  QpEnd b_;
  NDK_LISTENER* listener_ = nullptr;
  NDK_CONNECTOR* incoming_ = nullptr;
  struct Extra {
    NDK_QP* qa = nullptr;
    NDK_QP* qb = nullptr;
    NDK_CONNECTOR* ca = nullptr;
    NDK_CONNECTOR* cb = nullptr;
  };
  std::vector<Extra> extras_;
};

}  // namespace ndksim
