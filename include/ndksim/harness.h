// SPDX-License-Identifier: MIT
/// @file
/// Consumer-side helpers for tests, examples and benchmarks: a connected QP pair on a simulated
/// fabric, registered buffers, and polling. Everything here goes through the NDK dispatch tables,
/// exactly as consumer code does; nothing reaches into the provider or the hardware model.
#pragma once

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
  explicit QpPair(QpPairConfig config = {});
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
  std::vector<NDK_RESULT_EX> Collect(NDK_CQ* cq, std::size_t n, Duration limit = Milliseconds(100));
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
  ExtraQps AddConnectedQps();

  /// Fills `addr` with the IPv4 or IPv6 address of side `end` and `port`; returns its length.
  ULONG Address(const QpEnd& end, USHORT port, SOCKADDR_INET* addr) const;

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

  void Open(QpEnd& end);

  void Connect();

  /// Connects `qa` (through connector `ca`) to the listener, accepts with `qb`, and returns b's
  /// connector.
  NDK_CONNECTOR* ConnectOne(NDK_QP* qa, NDK_CONNECTOR* ca, NDK_QP* qb);

  NDK_QP* CreateQp(QpEnd& end);

  void CloseExtras();

  void Close(QpEnd& end);

  /// Throws HarnessError if `s` is not STATUS_SUCCESS, naming the QpPairConfig fields that are
  /// outside what the adapter takes (a zero depth, a depth or limit above the adapter's), if any.
  void Check(const char* step, NTSTATUS s) const {
    if (s == STATUS_SUCCESS) return;
    const std::string why = OutOfRange();
    throw HarnessError(why.empty() ? std::string(step) : fmt::format("{} ({})", step, why), s);
  }

  std::string OutOfRange() const;

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
