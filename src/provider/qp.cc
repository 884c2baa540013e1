// NDK_QP: creation, the QP dispatch table and the posting path, mlx5-shaped (STYLE 17):
// validate -> build the WQE in its ring slot with small segment builders -> record the request
// context by slot -> one release store of the producer index -> one doorbell per batch.
// No heap allocation, no locks, no virtual calls on the posting path.
#include "provider/qp.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "provider/cq.h"
#include "provider/driver.h"
#include "provider/memory.h"
#include "provider/status.h"

namespace ndksim::provider {

namespace {

// ---- per-opcode rules (ref §1.4 flag table) ----------------------------------------------------

constexpr ULONG kCommonFlags = NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_DEFER;

struct InitiatorRule {
  ULONG allowed_flags;
  bool read_sge_limit;  // ref §2.5: MaxReadRequestSge overrides MaxInitiatorRequestSge for reads
};

// Indexed by the initiator opcodes at the start of hw::WqeOpcode.
constexpr std::array<InitiatorRule, 4> kInitiatorRules = {{
    {kCommonFlags | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE, false},  // Send
    {kCommonFlags | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE, false},  // SendInvalidate
    {kCommonFlags | NDK_OP_FLAG_INLINE, false},  // Write: INLINE allowed (ref §6 item 3)
    // READ_LOCAL_INVALIDATE is accepted and ignored: the adapter flag is absent (ref §1.4).
    {kCommonFlags | NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, true},  // Read
}};
static_assert(static_cast<std::size_t>(hw::WqeOpcode::kSend) == 0);
static_assert(static_cast<std::size_t>(hw::WqeOpcode::kSendInvalidate) == 1);
static_assert(static_cast<std::size_t>(hw::WqeOpcode::kWrite) == 2);
static_assert(static_cast<std::size_t>(hw::WqeOpcode::kRead) == 3);

std::uint8_t WqeFlags(ULONG flags) {
  std::uint8_t w = 0;
  if (!(flags & NDK_OP_FLAG_SILENT_SUCCESS)) w |= hw::wqe_flag::kSignaled;
  if (flags & NDK_OP_FLAG_READ_FENCE) w |= hw::wqe_flag::kReadFence;
  if (flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) w |= hw::wqe_flag::kSolicited;
  if (flags & NDK_OP_FLAG_INLINE) w |= hw::wqe_flag::kInline;
  return w;
}

// ---- queue geometry --------------------------------------------------------------------------

std::uint32_t CeilDiv(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

// Send WQE = control + remote + max(SGE segments, inline payload segments).
std::uint32_t SendStride(std::uint32_t sge, std::uint32_t inline_bytes) {
  const std::uint32_t payload = std::max(sge, CeilDiv(inline_bytes, hw::kWqeSegmentBytes));
  const std::uint32_t segments = static_cast<std::uint32_t>(hw::kSendWqeHeaderSegments) + payload;
  return std::bit_ceil(CeilDiv(segments, hw::kSegmentsPerBlock));
}

// Receive WQE = control + SGE segments.
std::uint32_t ReceiveStride(std::uint32_t sge) {
  return std::bit_ceil(CeilDiv(1 + sge, hw::kSegmentsPerBlock));
}

void InitQueue(WorkQueueState& q, std::uint32_t depth, std::uint32_t max_sge, std::uint32_t stride) {
  const std::uint32_t slots = std::bit_ceil(depth);
  q.ring = std::make_unique<hw::SpscRing<hw::WqeBlock>>(slots * stride);
  q.contexts = std::make_unique<void*[]>(slots);
  q.stride = stride;
  q.depth = depth;
  q.slot_mask = slots - 1;
  q.max_sge = max_sge;
}

// ---- segment builders ----------------------------------------------------------------------------

// WQE number n occupies blocks [n*stride, (n+1)*stride). The ring holds a whole number of WQEs,
// so a WQE never wraps and is contiguous from its first block.
std::byte* WqeAt(WorkQueueState& q, std::uint32_t n) {
  return reinterpret_cast<std::byte*>(&q.ring->SlotAt(n * q.stride));
}

template <typename Segment>
void PutSegment(std::byte* wqe, std::size_t index, const Segment& segment) {
  static_assert(sizeof(Segment) == hw::kWqeSegmentBytes);
  std::memcpy(wqe + index * hw::kWqeSegmentBytes, &segment, sizeof segment);
}

void PutDataSegments(std::byte* wqe, std::size_t first, const NDK_SGE* sgl, ULONG count) {
  for (ULONG i = 0; i < count; ++i) {
    const hw::WqeDataSegment d{reinterpret_cast<std::uint64_t>(sgl[i].VirtualAddress),
                               sgl[i].Length, sgl[i].MemoryRegionToken};
    PutSegment(wqe, first + i, d);
  }
}

// ref §1.4 INLINE: the bytes are copied now, contiguously after the header segments.
void CopyInline(std::byte* wqe, const NDK_SGE* sgl, ULONG count) {
  std::byte* out = wqe + hw::kSendWqeHeaderSegments * hw::kWqeSegmentBytes;
  for (ULONG i = 0; i < count; ++i) {
    if (sgl[i].Length == 0) continue;
    std::memcpy(out, sgl[i].VirtualAddress, sgl[i].Length);
    out += sgl[i].Length;
  }
}

// ---- validation helpers ------------------------------------------------------------------------

std::uint64_t TotalBytes(const NDK_SGE* sgl, ULONG count) {
  std::uint64_t total = 0;
  for (ULONG i = 0; i < count; ++i) total += sgl[i].Length;
  return total;
}

bool QueueFull(const WorkQueueState& q) {
  // acquire: pairs with the release store in Qp::Retire; the poller's read of a retired slot's
  // context happens before we overwrite it.
  return q.posted - q.retired.load(std::memory_order_acquire) >= q.depth;
}

bool SgesCovered(const MemoryTable& memory, const NDK_SGE* sgl, ULONG count, hw::PdNumber pd) {
  for (ULONG i = 0; i < count; ++i) {
    if (!memory.CoversLocal(sgl[i], pd)) return false;
  }
  return true;
}

bool InlineSourcesPresent(const NDK_SGE* sgl, ULONG count) {
  for (ULONG i = 0; i < count; ++i) {
    if (sgl[i].Length != 0 && sgl[i].VirtualAddress == nullptr) return false;
  }
  return true;
}

}  // namespace

// ---- posting -------------------------------------------------------------------------------------

// Each check leaves everything unchanged on failure (DESIGN.md error kind 3).
NTSTATUS Qp::ValidateInitiator(const InitiatorRequest& r, std::uint64_t* total_bytes) const {
  if (!Connected()) return STATUS_CONNECTION_INVALID;  // ref §3.1
  const InitiatorRule& rule = kInitiatorRules[static_cast<std::size_t>(r.opcode)];
  if ((r.flags & ~rule.allowed_flags) != 0) return STATUS_INVALID_PARAMETER;
  const bool is_inline = (r.flags & NDK_OP_FLAG_INLINE) != 0;
  const std::uint32_t sge_limit = rule.read_sge_limit ? read_sge_ : send_.max_sge;
  // NDSPI analogue: too many SGEs is DATA_OVERRUN; INLINE may exceed the limit (ref §1.4).
  if (!is_inline && r.sge_count > sge_limit) return STATUS_DATA_OVERRUN;
  if (r.sgl == nullptr && r.sge_count > 0) return STATUS_INVALID_PARAMETER;
  const std::uint64_t total = TotalBytes(r.sgl, r.sge_count);
  if (total > max_transfer_) return STATUS_BUFFER_OVERFLOW;  // NDSPI: too much data
  if (is_inline && total > inline_bytes_) return STATUS_BUFFER_OVERFLOW;
  if (QueueFull(send_)) return STATUS_NO_MORE_ENTRIES;  // NDSPI: queue full
  if (is_inline) {
    // The tokens of inline SGEs are ignored (ref §2.2), but the bytes must be there to copy.
    if (!InlineSourcesPresent(r.sgl, r.sge_count)) return STATUS_INVALID_PARAMETER;
  } else if (!SgesCovered(GetDriver().Memory(), r.sgl, r.sge_count, pd_.Number())) {
    return STATUS_ACCESS_VIOLATION;
  }
  *total_bytes = total;
  return STATUS_SUCCESS;
}

void Qp::BuildSendWqe(const InitiatorRequest& r, std::uint64_t total_bytes) {
  const std::uint32_t n = send_.posted;
  std::byte* wqe = WqeAt(send_, n);
  const bool is_inline = (r.flags & NDK_OP_FLAG_INLINE) != 0;
  const hw::WqeControl control{
      r.opcode,
      WqeFlags(r.flags),
      static_cast<std::uint8_t>(is_inline ? 0 : r.sge_count),
      0,
      n,
      static_cast<std::uint32_t>(is_inline ? total_bytes : 0),
      r.invalidate_token,
  };
  PutSegment(wqe, 0, control);
  PutSegment(wqe, 1, hw::WqeRemote{r.remote_address, r.remote_token, 0});
  if (is_inline) {
    CopyInline(wqe, r.sgl, r.sge_count);
  } else {
    PutDataSegments(wqe, hw::kSendWqeHeaderSegments, r.sgl, r.sge_count);
  }
  send_.contexts[n & send_.slot_mask] = r.context;
}

NTSTATUS Qp::PostInitiator(const InitiatorRequest& r) {
  std::uint64_t total_bytes = 0;
  if (const NTSTATUS s = ValidateInitiator(r, &total_bytes); s != STATUS_SUCCESS) {
    KickDeferred();  // ref §4.3: a failing post hands deferred WRs to the hardware
    return s;
  }
  BuildSendWqe(r, total_bytes);
  // Release store of the producer index (the doorbell record): the WQE and its context slot
  // are written before the NIC can see the new index.
  send_.ring->ProducerPublish(send_.stride);
  ++send_.posted;
  if (r.flags & NDK_OP_FLAG_DEFER) {
    // release: pairs with the exchange in KickDeferred; whoever rings for us sees our WQEs.
    deferred_pending_.store(true, std::memory_order_release);
  } else {
    RingSendDoorbell();  // one doorbell covers every deferred WQE before this one
  }
  return STATUS_SUCCESS;
}

void Qp::RingSendDoorbell() {
  // relaxed: the flag only saves redundant doorbells; a concurrent KickDeferred that still sees
  // it set rings once more, which the NIC tolerates.
  if (deferred_pending_.load(std::memory_order_relaxed)) {
    deferred_pending_.store(false, std::memory_order_relaxed);
  }
  GetDriver().RingDoorbell({hw::Doorbell::Kind::kSendQueue, hw::CqArmKind::kNone, qpn_.value,
                            send_.ring->ProducerIndex()});
}

void Qp::KickDeferred() {
  // relaxed: a cheap look before the read-modify-write; the exchange below orders what matters.
  if (!deferred_pending_.load(std::memory_order_relaxed)) return;
  // acq_rel: acquire pairs with the release store in PostInitiator, so the published index we
  // read below covers every deferred WQE.
  if (!deferred_pending_.exchange(false, std::memory_order_acq_rel)) return;
  GetDriver().RingDoorbell({hw::Doorbell::Kind::kSendQueue, hw::CqArmKind::kNone, qpn_.value,
                            send_.ring->PublishedProducerIndex()});
}

NTSTATUS Qp::PostReceive(void* context, const NDK_SGE* sgl, ULONG sge_count) {
  NTSTATUS s = STATUS_SUCCESS;
  // Receives may be posted before the QP is connected (ref §3.5), so no connection check.
  if (sge_count > receive_.max_sge) {
    s = STATUS_DATA_OVERRUN;
  } else if (sgl == nullptr && sge_count > 0) {
    s = STATUS_INVALID_PARAMETER;
  } else if (TotalBytes(sgl, sge_count) > max_transfer_) {
    s = STATUS_BUFFER_OVERFLOW;
  } else if (QueueFull(receive_)) {
    s = STATUS_NO_MORE_ENTRIES;
  } else if (!SgesCovered(GetDriver().Memory(), sgl, sge_count, pd_.Number())) {
    s = STATUS_ACCESS_VIOLATION;
  }
  if (s != STATUS_SUCCESS) {
    KickDeferred();  // ref §4.3 applies to any posting call that fails
    return s;
  }
  const std::uint32_t n = receive_.posted;
  std::byte* wqe = WqeAt(receive_, n);
  const hw::WqeControl control{hw::WqeOpcode::kReceive, 0, static_cast<std::uint8_t>(sge_count),
                               0, n, 0, 0};
  PutSegment(wqe, 0, control);
  PutDataSegments(wqe, 1, sgl, sge_count);
  receive_.contexts[n & receive_.slot_mask] = context;
  // Release store of the producer index. Receive queues need no MMIO doorbell: the NIC reads
  // the published index when a send arrives.
  receive_.ring->ProducerPublish(receive_.stride);
  ++receive_.posted;
  // ...except on a QP in error, where no send will arrive and the NIC must be told to flush.
  // seq_cst fence: pairs with the one in MarkInError (store-load on both sides): either we see
  // the flag and ring, or MarkInError's doorbell finds this WQE published.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (in_error_.load(std::memory_order_relaxed)) RingReceiveDoorbell();
  return STATUS_SUCCESS;
}

void Qp::RingReceiveDoorbell() {
  GetDriver().RingDoorbell({hw::Doorbell::Kind::kReceiveQueue, hw::CqArmKind::kNone, qpn_.value,
                            receive_.ring->PublishedProducerIndex()});
}

void Qp::MarkInError() {
  // relaxed: a cheap look; whoever set the flag first has already rung for what it could see.
  if (in_error_.load(std::memory_order_relaxed)) return;
  if (in_error_.exchange(true, std::memory_order_seq_cst)) return;
  // seq_cst fence: pairs with the fence in PostReceive (see there).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  RingReceiveDoorbell();
}

void Qp::Flush() {
  // ref §3.9: returns at once; the NIC completes everything pending with STATUS_CANCELLED.
  GetDriver().Trace("flush qp {:#x}", qpn_.value);
  GetDriver().Nic().ModifyQpToError(qpn_);
  MarkInError();
}

// ---- dispatch ------------------------------------------------------------------------------------

namespace {

NTSTATUS CloseQp(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion, PVOID context) {
  Qp& qp = OwnerOfHeader<Qp, NDK_QP>(header);
  qp.GetDriver().Trace("close qp {:#x}", qp.Number().value);
  return qp.GetAdapter().Close(qp, completion, context);
}

VOID Flush(NDK_QP* ndk) { Qp::From(ndk).Flush(); }

NTSTATUS Send(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, ULONG flags) {
  return Qp::From(ndk).PostInitiator({.opcode = hw::WqeOpcode::kSend,
                                      .context = context,
                                      .sgl = sgl,
                                      .sge_count = n,
                                      .flags = flags});
}

NTSTATUS SendAndInvalidate(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, ULONG flags,
                           UINT32 remote_token) {
  return Qp::From(ndk).PostInitiator({.opcode = hw::WqeOpcode::kSendInvalidate,
                                      .context = context,
                                      .sgl = sgl,
                                      .sge_count = n,
                                      .flags = flags,
                                      .invalidate_token = remote_token});
}

NTSTATUS Read(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, UINT64 remote_address,
              UINT32 remote_token, ULONG flags) {
  return Qp::From(ndk).PostInitiator({.opcode = hw::WqeOpcode::kRead,
                                      .context = context,
                                      .sgl = sgl,
                                      .sge_count = n,
                                      .flags = flags,
                                      .remote_address = remote_address,
                                      .remote_token = remote_token});
}

NTSTATUS Write(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, UINT64 remote_address,
               UINT32 remote_token, ULONG flags) {
  return Qp::From(ndk).PostInitiator({.opcode = hw::WqeOpcode::kWrite,
                                      .context = context,
                                      .sgl = sgl,
                                      .sge_count = n,
                                      .flags = flags,
                                      .remote_address = remote_address,
                                      .remote_token = remote_token});
}

NTSTATUS Receive(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n) {
  return Qp::From(ndk).PostReceive(context, sgl, n);
}

// Not implemented yet. They are posting calls, so their failure kicks deferred WQEs (ref §4.3).
NTSTATUS Bind(NDK_QP* ndk, PVOID, NDK_MR*, NDK_MW*, PVOID, SIZE_T, ULONG) {
  Qp::From(ndk).KickDeferred();
  return STATUS_NOT_SUPPORTED;
}

NTSTATUS FastRegister(NDK_QP* ndk, PVOID, NDK_MR*, ULONG, const NDK_LOGICAL_ADDRESS*, ULONG, SIZE_T,
                      PVOID, ULONG) {
  Qp::From(ndk).KickDeferred();
  return STATUS_NOT_SUPPORTED;
}

NTSTATUS Invalidate(NDK_QP* ndk, PVOID, NDK_OBJECT_HEADER*, ULONG) {
  Qp::From(ndk).KickDeferred();
  return STATUS_NOT_SUPPORTED;
}

const NDK_QP_DISPATCH kQpDispatch = {
    CloseQp,
    NdkQueryExtensionNotSupported,
    Flush,
    Send,
    Receive,
    Bind,
    FastRegister,
    Invalidate,
    Read,
    Write,
    SendAndInvalidate,
};

}  // namespace

// ---- creation --------------------------------------------------------------------------------------

NTSTATUS Qp::Create(Pd& pd, NDK_CQ* receive_cq, NDK_CQ* initiator_cq, void* qp_context,
                    const Limits& limits, NDK_QP** out) {
  Driver& driver = pd.GetDriver();
  const HardwareProfile& p = driver.Profile();
  if (out == nullptr || receive_cq == nullptr || initiator_cq == nullptr) {
    return STATUS_INVALID_PARAMETER;
  }
  // ref §3.16: each limit against the adapter's; a zero depth is invalid too.
  if (limits.receive_depth == 0 || limits.receive_depth > p.max_receive_queue_depth ||
      limits.initiator_depth == 0 || limits.initiator_depth > p.max_initiator_queue_depth ||
      limits.receive_sge > p.max_receive_sge || limits.initiator_sge > p.max_initiator_sge ||
      limits.inline_bytes > p.max_inline_bytes) {
    return STATUS_INVALID_PARAMETER;
  }
  Cq& rcq = Cq::From(receive_cq);
  Cq& icq = Cq::From(initiator_cq);
  if (&rcq.GetAdapter() != &pd.GetAdapter() || &icq.GetAdapter() != &pd.GetAdapter()) {
    return STATUS_INVALID_PARAMETER;  // CQs of another adapter
  }
  auto qp = std::make_unique<Qp>(pd, rcq, icq, qp_context, limits);
  const hw::QpCreate create{
      pd.Number(),
      icq.Number(),
      rcq.Number(),
      hw::WorkQueue{qp->send_.ring.get(), qp->send_.stride},
      hw::WorkQueue{qp->receive_.ring.get(), qp->receive_.stride},
      limits.inline_bytes,
  };
  const hw::CommandStatus status = driver.Nic().CreateQp(create, &qp->qpn_);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  qp->created_ = true;
  driver.RegisterQp(qp->qpn_, qp.get());
  driver.Trace("create qp {:#x} rq {}x{} sq {}x{} inline {} strides {}/{}", qp->qpn_.value,
               limits.receive_depth, limits.receive_sge, limits.initiator_depth,
               limits.initiator_sge, limits.inline_bytes, qp->receive_.stride, qp->send_.stride);
  *out = pd.GetAdapter().Adopt(std::move(qp)).Ndk();
  return STATUS_SUCCESS;
}

Qp::Qp(Pd& pd, Cq& receive_cq, Cq& initiator_cq, void* qp_context, const Limits& limits)
    : Object(pd.GetAdapter(), NdkObjectTypeQp),
      pd_(pd),
      receive_cq_(receive_cq),
      initiator_cq_(initiator_cq),
      qp_context_(qp_context) {
  InitNdk(handle_.ndk, pd.Version(), NdkObjectTypeQp, &kQpDispatch);
  handle_.owner = this;
  const HardwareProfile& p = pd.GetDriver().Profile();
  inline_bytes_ = limits.inline_bytes;
  read_sge_ = std::min<std::uint32_t>(limits.initiator_sge, p.max_read_sge);
  max_transfer_ = p.max_transfer_bytes;
  InitQueue(send_, limits.initiator_depth, limits.initiator_sge,
            SendStride(limits.initiator_sge, limits.inline_bytes));
  InitQueue(receive_, limits.receive_depth, limits.receive_sge, ReceiveStride(limits.receive_sge));
  // ref §4.4: the QP is a successor of its PD and of both CQs.
  pd_.AddSuccessor();
  receive_cq_.AddSuccessor();
  initiator_cq_.AddSuccessor();
}

Qp::~Qp() {
  if (created_) {
    Driver& driver = GetDriver();
    driver.RegisterQp(qpn_, nullptr);
    driver.Nic().DestroyQp(qpn_);
  }
  initiator_cq_.ReleaseSuccessor();
  receive_cq_.ReleaseSuccessor();
  pd_.ReleaseSuccessor();
}

}  // namespace ndksim::provider
