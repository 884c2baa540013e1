// SPDX-License-Identifier: MIT
// Queue pairs (NDK_QP): the send and receive rings in host memory and the posting path that
// builds WQEs in them (validate -> build in the slot -> record context -> publish -> doorbell).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "hwmodel/host_interface.h"
#include "hwmodel/device.h"
#include "hwmodel/ring.h"
#include "ndkpi.h"
#include "objects.h"

namespace ndksim::provider {

class Connector;
class Cq;
class Pd;
class Srq;
class Mr;
struct WindowBinding;

// One initiator work request, unpacked from the NDK arguments of Send/SendAndInvalidate/Read/Write.
struct InitiatorRequest {
  hw::WqeOpcode opcode = hw::WqeOpcode::kSend;
  void* context = nullptr;
  const NDK_SGE* sgl = nullptr;
  ULONG sge_count = 0;
  ULONG flags = 0;
  std::uint64_t remote_address = 0;
  std::uint32_t remote_token = 0;
  std::uint32_t invalidate_token = 0;  // SendAndInvalidate
};

// One memory work request (Bind, FastRegister, Invalidate) as it goes into a send WQE; the
// dispatch functions validate the NDK arguments and objects before building it (host_interface.h
// describes the segments).
struct MemoryRequest {
  hw::WqeOpcode opcode = hw::WqeOpcode::kLocalInvalidate;
  void* context = nullptr;
  ULONG flags = 0;
  std::uint32_t target_key = 0;  // the token the operation installs or invalidates
  std::uint32_t target_generation = 0;  // the target's protection entry (hw::Translation)
  std::uint32_t region_key = 0;  // Bind: the MR the window binds inside
  std::uint32_t region_generation = 0;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  std::uint32_t access = 0;      // hw::access bits
  std::uint32_t fbo = 0;
  const std::uint64_t* page_list = nullptr;  // FastRegister: this WQE's copy (Qp::PageListFor)
  std::uint32_t page_count = 0;
};

// One work queue as its poster and the CQ poller see it. ref §4.1: one poster per queue at a
// time, so the producer fields need no lock; the initiator and receive queues of one QP may be
// posted concurrently, so each queue keeps its own lines.
struct WorkQueueState {
  // Poster's line.
  alignas(hw::kCacheLineBytes) std::unique_ptr<hw::SpscRing<hw::WqeBlock>> ring;
  std::unique_ptr<void*[]> contexts;  // RequestContext by WQE slot (counter & slot_mask)
  std::uint32_t stride = 1;           // blocks per WQE, a power of two
  std::uint32_t depth = 0;            // WQEs the consumer asked for
  std::uint32_t slot_mask = 0;        // RoundUpPow2(depth) - 1
  std::uint32_t max_sge = 0;
  std::uint32_t posted = 0;           // WQEs posted so far (free-running)
  // Poller's line: one past the newest WQE a CQE retired (completions of one queue arrive in
  // order; an unsignaled WQE is retired by the next CQE of its queue). The poster reads it
  // (acquire) to tell a full queue.
  alignas(hw::kCacheLineBytes) std::atomic<std::uint32_t> retired{0};
};

class Qp final : public Object {
 public:
  struct Limits {
    ULONG receive_depth = 0;
    ULONG initiator_depth = 0;
    ULONG receive_sge = 0;
    ULONG initiator_sge = 0;
    ULONG inline_bytes = 0;
  };
  // ref §3.16: each limit above the adapter's, a zero depth or a NULL CQ is
  // STATUS_INVALID_PARAMETER.
  static NTSTATUS Create(Pd& pd, NDK_CQ* receive_cq, NDK_CQ* initiator_cq, void* qp_context,
                         const Limits& limits, NDK_QP** out, Srq* srq = nullptr);
  // `srq` non-null: NdkCreateQpWithSrq; the receive limits are unused (ref §3.16).
  Qp(Pd& pd, Cq& receive_cq, Cq& initiator_cq, void* qp_context, const Limits& limits, Srq* srq);
  ~Qp() override;

  static Qp& From(NDK_QP* ndk) { return OwnerOf<Qp>(ndk); }
  NDK_QP* Ndk() { return &handle_.ndk; }
  hw::Qpn Number() const { return qpn_; }
  Pd& GetPd() const { return pd_; }
  void* Context() const { return qp_context_; }
  Srq* GetSrq() const { return srq_; }

  // ---- posting (qp_post.cc; Flush in qp.cc, bind bookkeeping in qp_memory.cc), hot path ----
  NTSTATUS PostInitiator(const InitiatorRequest& request);
  NTSTATUS PostReceive(void* context, const NDK_SGE* sgl, ULONG sge_count);
  // Memory operations: the connection and queue-room checks every initiator post makes, then a
  // post that cannot fail (the caller validated the rest in between).
  NTSTATUS CheckInitiatorRoom() const;
  void PostMemory(const MemoryRequest& request);
  // The page list of the fast register about to be posted, copied into storage of its own WQE
  // slot: the NIC reads it when the WQE executes, and two fast registers of one MR in flight must
  // not share a list (finding of docs/reliability.md).
  std::uint64_t* PageListFor(std::uint32_t page_count);
  // The bind about to be posted moves `binding`'s window into `mr`: resolved when its WQE retires.
  void RecordBind(std::shared_ptr<WindowBinding> binding, Mr& mr);
  // ref §4.3: a failing posting call hands deferred WQEs to the hardware before returning.
  // Any thread (a failing receive may race the initiator queue's poster).
  void KickDeferred();
  void Flush();

  // ---- completion side (cq.cc), poller thread ----
  // The RequestContext of the WQE a CQE names, retiring its queue up to that WQE. Binds among the
  // retired WQEs are resolved: those before the CQE's executed; the CQE's own by its status.
  void* RetireSend(std::uint32_t wqe_counter, bool succeeded) {
    // relaxed: set and read on this thread's poll and post paths (see WindowBinding).
    if (binds_outstanding_.load(std::memory_order_relaxed) != 0) ResolveBinds(wqe_counter, succeeded);
    return Retire(send_, wqe_counter);
  }
  void* RetireReceive(std::uint32_t wqe_counter) { return Retire(receive_, wqe_counter); }

  // ---- connection side (connector.cc), control path ----
  Connector* BoundConnector() const { return connector_; }
  void Bind(Connector* connector) { connector_ = connector; }
  // From now on initiator posts are accepted (ref §3.1: STATUS_CONNECTION_INVALID before).
  void MarkConnected() {
    // release: pairs with the acquire load in PostInitiator; the connection exists in the NIC.
    connected_.store(true, std::memory_order_release);
  }
  bool Connected() const { return connected_.load(std::memory_order_acquire); }

  // ---- error state (ref §4.7), any thread ----
  // The provider has learnt that the QP is in error in the NIC (flush, disconnect, an abort or
  // fatal event, an error completion). The NIC reads receive queues only when a send arrives, so
  // from now on each receive post rings the receive doorbell to have the NIC flush it; the first
  // call rings once for receives posted before we knew.
  void MarkInError();

 private:
  static void* Retire(WorkQueueState& q, std::uint32_t wqe_counter) {
    void* context = q.contexts[wqe_counter & q.slot_mask];
    // release: pairs with the acquire load in the poster's queue-full check; our read of the
    // context slot happens before the poster may reuse it.
    q.retired.store(wqe_counter + 1, std::memory_order_release);
    return context;
  }

  // Per send-queue slot: what a memory operation in that slot needs beyond its WQE.
  struct MemorySlot {
    std::shared_ptr<WindowBinding> binding;  // a bind not yet resolved
    Mr* mr = nullptr;                        // ... into this MR
    std::vector<std::uint64_t> pages;        // a fast register's page list
  };
  MemorySlot& MemorySlotFor(std::uint32_t counter);
  void ResolveBinds(std::uint32_t wqe_counter, bool succeeded);

  NTSTATUS ValidateInitiator(const InitiatorRequest& r, std::uint64_t* total_bytes) const;
  void BuildSendWqe(const InitiatorRequest& r, std::uint64_t total_bytes);
  // Publishes the WQE just built and rings (or defers) the doorbell.
  // Publishes the WQE just built; `opcode` and `bytes` describe it for the request log.
  // `wqe_bytes`: the bytes of the WQE actually used (64-B blocks), for a doorbell that carries it.
  void PublishSend(ULONG flags, hw::WqeOpcode opcode, std::uint64_t bytes, std::uint32_t wqe_bytes);
  void RingSendDoorbell(std::uint32_t wqe_bytes);
  void RingReceiveDoorbell();

  Handle<NDK_QP, Qp> handle_;
  Pd& pd_;
  Cq& receive_cq_;
  Cq& initiator_cq_;
  void* qp_context_;
  Srq* const srq_;  // receives come from this SRQ (ref §3.16); null: the QP's own queue
  hw::Qpn qpn_;
  bool created_ = false;
  Connector* connector_ = nullptr;
  std::uint32_t inline_bytes_ = 0;
  std::uint32_t read_sge_ = 0;         // min(initiator SGEs, adapter MaxReadRequestSge)
  std::uint32_t max_transfer_ = 0;     // adapter MaxTransferLength
  std::atomic<bool> connected_{false};
  std::atomic<bool> in_error_{false};  // see MarkInError
  // Deferred WQEs published but not yet rung (ref §4.3). Set by the initiator poster (release,
  // after publishing); taken by whoever rings (exchange, acq_rel).
  std::atomic<bool> deferred_pending_{false};
  WorkQueueState send_;
  WorkQueueState receive_;
  std::unique_ptr<MemorySlot[]> memory_slots_;  // by send slot, made with the first memory operation
  std::atomic<std::uint32_t> binds_outstanding_{0};
};

}  // namespace ndksim::provider
