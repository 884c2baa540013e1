// SPDX-License-Identifier: MIT
// NDK_QP: creation, the QP dispatch table and the posting path, mlx5-shaped (STYLE 17):
// validate -> build the WQE in its ring slot with small segment builders -> record the request
// context by slot -> one release store of the producer index -> one doorbell per batch.
// No heap allocation, no locks, no virtual calls on the posting path.
#include "qp.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "control.h"
#include "cq.h"
#include "driver.h"
#include "memory.h"
#include "srq.h"
#include "status.h"

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
  // ref §1.4: READ_LOCAL_INVALIDATE is honoured only where the adapter reports it, else ignored.
  const bool local_invalidate = r.opcode == hw::WqeOpcode::kRead &&
                                (r.flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) != 0 &&
                                GetDriver().Profile().read_local_invalidate;
  const hw::WqeControl control{
      r.opcode,
      static_cast<std::uint8_t>(WqeFlags(r.flags) | (local_invalidate ? hw::wqe_flag::kReadLocalInvalidate : 0)),
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
  // Control and remote segments, then the inline bytes or one segment per SGE, in 64-B blocks.
  const std::uint64_t body = (r.flags & NDK_OP_FLAG_INLINE) ? total_bytes : std::uint64_t{r.sge_count} * hw::kWqeSegmentBytes;
  const std::uint64_t used = hw::kSendWqeHeaderSegments * hw::kWqeSegmentBytes + body;
  PublishSend(r.flags, r.opcode, total_bytes,
              static_cast<std::uint32_t>((used + hw::kWqeBlockBytes - 1) / hw::kWqeBlockBytes * hw::kWqeBlockBytes));
  return STATUS_SUCCESS;
}

void Qp::PublishSend(ULONG flags, hw::WqeOpcode opcode, std::uint64_t bytes, std::uint32_t wqe_bytes) {
  RequestLog& log = GetDriver().Requests();
  if (log.Enabled()) {
    const std::uint32_t id = GetDriver().Nic().Id();
    log.Mark(id, qpn_.value, send_.posted, RequestStage::kPosted, GetDriver().Now());
    log.Describe(id, qpn_.value, send_.posted, hw::Name(opcode), bytes);
  }
  // Release store of the producer index (the doorbell record): the WQE and its context slot
  // are written before the NIC can see the new index.
  send_.ring->ProducerPublish(send_.stride);
  ++send_.posted;
  if (flags & NDK_OP_FLAG_DEFER) {
    // release: pairs with the exchange in KickDeferred; whoever rings for us sees our WQEs.
    deferred_pending_.store(true, std::memory_order_release);
  } else {
    RingSendDoorbell(wqe_bytes);  // one doorbell covers every deferred WQE before this one
  }
}

NTSTATUS Qp::CheckInitiatorRoom() const {
  if (!Connected()) return STATUS_CONNECTION_INVALID;  // ref §3.6-3.8
  if (QueueFull(send_)) return STATUS_NO_MORE_ENTRIES;
  return STATUS_SUCCESS;
}

void Qp::PostMemory(const MemoryRequest& m) {
  const std::uint32_t n = send_.posted;
  std::byte* wqe = WqeAt(send_, n);
  // Every send WQE has room for four segments (one block), all a memory operation needs.
  const std::uint8_t slots = m.opcode == hw::WqeOpcode::kFastRegister ? 2 : m.opcode == hw::WqeOpcode::kBind ? 1 : 0;
  const ULONG wqe_flags = m.flags & (NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE);
  // The control segment's inline_bytes names the target entry's generation, WqeRemote's reserved
  // the FBO or the bound region's generation (host_interface.h).
  PutSegment(wqe, 0, hw::WqeControl{m.opcode, WqeFlags(wqe_flags), slots, 0, n, m.target_generation, m.target_key});
  const std::uint32_t detail = m.opcode == hw::WqeOpcode::kBind ? m.region_generation : m.fbo;
  PutSegment(wqe, 1, hw::WqeRemote{m.address, m.region_key, detail});
  if (slots >= 1) PutSegment(wqe, 2, hw::WqeMemorySegment{m.length, 0, m.access});
  if (slots >= 2) {
    PutSegment(wqe, 3, hw::WqePageListSegment{reinterpret_cast<std::uint64_t>(m.page_list), 0, m.page_count});
  }
  send_.contexts[n & send_.slot_mask] = m.context;
  PublishSend(m.flags, m.opcode, 0, hw::kWqeBlockBytes);
}

Qp::MemorySlot& Qp::MemorySlotFor(std::uint32_t counter) {
  if (memory_slots_ == nullptr) memory_slots_ = std::make_unique<MemorySlot[]>(send_.slot_mask + 1);
  return memory_slots_[counter & send_.slot_mask];
}

std::uint64_t* Qp::PageListFor(std::uint32_t page_count) {
  std::vector<std::uint64_t>& pages = MemorySlotFor(send_.posted).pages;
  // The slot is free: the WQE that last used it has retired, so the NIC has read its list.
  if (pages.size() < page_count) pages.resize(page_count);
  return pages.data();
}

void Qp::RecordBind(std::shared_ptr<WindowBinding> binding, Mr& mr) {
  MemorySlot& slot = MemorySlotFor(send_.posted);
  slot.binding = std::move(binding);
  slot.mr = &mr;
  binds_outstanding_.fetch_add(1, std::memory_order_relaxed);
}

void Qp::ResolveBinds(std::uint32_t wqe_counter, bool succeeded) {
  // relaxed: the poller's own earlier store (Retire).
  for (std::uint32_t c = send_.retired.load(std::memory_order_relaxed); c != wqe_counter + 1; ++c) {
    MemorySlot& slot = memory_slots_[c & send_.slot_mask];
    if (slot.binding == nullptr) continue;
    // An unsignaled bind retired by a later CQE executed: had it failed, its own error CQE would
    // have come first.
    const bool executed = c != wqe_counter || succeeded;
    slot.binding->Resolved(*slot.mr, *this,
                           executed ? WindowBinding::Outcome::kExecuted : WindowBinding::Outcome::kFailed);
    slot.binding.reset();
    binds_outstanding_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Qp::RingSendDoorbell(std::uint32_t wqe_bytes) {
  // relaxed: the flag only saves redundant doorbells; a concurrent KickDeferred that still sees
  // it set rings once more, which the NIC tolerates.
  const bool batch = deferred_pending_.load(std::memory_order_relaxed);
  if (batch) deferred_pending_.store(false, std::memory_order_relaxed);
  // A doorbell for just this WQE writes the WQE itself through the doorbell window when it fits
  // (BlueFlame-style); a doorbell for a deferred batch only names the producer index.
  const bool carries_wqe = !batch && wqe_bytes <= GetDriver().Profile().wqe_by_mmio_bytes;
  GetDriver().RingDoorbell({hw::Doorbell::Kind::kSendQueue, hw::CqArmKind::kNone, qpn_.value,
                            send_.ring->ProducerIndex(), static_cast<std::uint16_t>(carries_wqe ? wqe_bytes : 0)});
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
  // A QP on an SRQ has no receive queue: receives go to NdkSrqReceive (ndksim's status choice).
  if (srq_ != nullptr) {
    s = STATUS_INVALID_DEVICE_REQUEST;
  } else if (sge_count > receive_.max_sge) {
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
  if (receive_.ring == nullptr) return;  // on an SRQ: nothing of ours for the NIC to flush
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

// ---- memory operations (ref §3.6-3.8). Each validates, then posts; a failure kicks deferred WRs
// (ref §4.3) and changes nothing else. -------------------------------------------------------------

constexpr ULONG kRemoteWrite = NDK_OP_FLAG_ALLOW_REMOTE_WRITE;  // 0x30: includes LOCAL_WRITE
constexpr ULONG kBindFlags = kCommonFlags | NDK_OP_FLAG_ALLOW_REMOTE_READ | kRemoteWrite;
constexpr ULONG kFastRegisterFlags = kCommonFlags | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_LOCAL_WRITE |
                                     kRemoteWrite | NDK_OP_FLAG_RDMA_READ_SINK;

// ref §1.4 bit-test caution: remote write is (flags & 0x30) == 0x30, never a plain AND.
bool WantsRemoteWrite(ULONG flags) { return (flags & kRemoteWrite) == kRemoteWrite; }

std::uint32_t OpAccessBits(ULONG flags) {
  std::uint32_t access = 0;
  if (flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE) access |= hw::access::kLocalWrite;
  if (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ) access |= hw::access::kRemoteRead;
  if (WantsRemoteWrite(flags)) access |= hw::access::kRemoteWrite;
  // ref §1.4: READ_SINK is tolerated where it is not required; the bit then changes nothing.
  if (flags & NDK_OP_FLAG_RDMA_READ_SINK) access |= hw::access::kReadSink;
  return access;
}

bool InsideMr(const Mr& mr, std::uint64_t va, std::uint64_t length) {
  if (va < mr.Address()) return false;
  const std::uint64_t offset = va - mr.Address();
  return offset <= mr.Length() && length <= mr.Length() - offset;
}

NTSTATUS ValidateBind(const Qp& qp, NDK_MR* ndk_mr, NDK_MW* ndk_mw, PVOID va, SIZE_T length, ULONG flags) {
  if (const NTSTATUS s = qp.CheckInitiatorRoom(); s != STATUS_SUCCESS) return s;
  if (ndk_mr == nullptr || ndk_mw == nullptr || (flags & ~kBindFlags) != 0) return STATUS_INVALID_PARAMETER;
  // LOCAL_WRITE (0x10) alone is a FastRegister flag, not a Bind flag.
  if ((flags & kRemoteWrite) == NDK_OP_FLAG_ALLOW_LOCAL_WRITE) return STATUS_INVALID_PARAMETER;
  const Mr& mr = Mr::From(ndk_mr);
  const Mw& mw = Mw::From(ndk_mw);
  if (&mr.GetPd() != &qp.GetPd() || &mw.GetPd() != &qp.GetPd()) return STATUS_INVALID_PARAMETER;
  // A window binds inside an MR registered with NdkRegisterMr (ndksim's status for other MRs).
  if (mr.IsFastRegister() || !mr.Registered()) return STATUS_INVALID_DEVICE_REQUEST;
  const auto address = reinterpret_cast<std::uint64_t>(va);
  // ref §3.6: inside the MR's span; zero-based addresses unsupported.
  if (address == 0 || length > qp.GetDriver().Profile().max_window_bytes || !InsideMr(mr, address, length)) {
    return STATUS_INVALID_PARAMETER;
  }
  // ref §3.6, §6 item 4: remote write on the window needs the MR registered with LOCAL_WRITE.
  if (WantsRemoteWrite(flags) && !(mr.Access() & hw::access::kLocalWrite)) return STATUS_ACCESS_VIOLATION;
  return STATUS_SUCCESS;
}

NTSTATUS Bind(NDK_QP* ndk, PVOID context, NDK_MR* ndk_mr, NDK_MW* ndk_mw, PVOID va, SIZE_T length, ULONG flags) {
  Qp& qp = Qp::From(ndk);
  if (const NTSTATUS s = ValidateBind(qp, ndk_mr, ndk_mw, va, length, flags); s != STATUS_SUCCESS) {
    qp.KickDeferred();
    return s;
  }
  Mr& mr = Mr::From(ndk_mr);
  Mw& mw = Mw::From(ndk_mw);
  const hw::MemoryKey key = mw.NextKey();
  // ref §3.6: the token is valid when NdkBind returns; the MR -> MW edge follows the NIC.
  qp.RecordBind(mw.BindPosted(key, mr), mr);
  qp.PostMemory({.opcode = hw::WqeOpcode::kBind,
                 .context = context,
                 .flags = flags,
                 .target_key = key.value,
                 .target_generation = mw.Generation(),
                 .region_key = mr.Token(),
                 .region_generation = mr.Generation(),
                 .address = reinterpret_cast<std::uint64_t>(va),
                 .length = length,
                 .access = OpAccessBits(flags) & (hw::access::kRemoteRead | hw::access::kRemoteWrite)});
  return STATUS_SUCCESS;
}

NTSTATUS ValidateFastRegister(const Qp& qp, NDK_MR* ndk_mr, ULONG page_count, const NDK_LOGICAL_ADDRESS* pages,
                              ULONG fbo, SIZE_T length, PVOID base, ULONG flags) {
  if (const NTSTATUS s = qp.CheckInitiatorRoom(); s != STATUS_SUCCESS) return s;
  if (ndk_mr == nullptr || (flags & ~kFastRegisterFlags) != 0) return STATUS_INVALID_PARAMETER;
  Mr& mr = Mr::From(ndk_mr);
  if (&mr.GetPd() != &qp.GetPd()) return STATUS_INVALID_PARAMETER;
  // ref §3.15: only an MR created with FastRegister=TRUE and initialised (ndksim's status).
  if (!mr.IsFastRegister() || mr.PageCapacity() == 0) return STATUS_INVALID_DEVICE_REQUEST;
  // ref §3.7: remote rights need an MR initialised with RemoteAccess=TRUE.
  const ULONG remote_bits = NDK_OP_FLAG_ALLOW_REMOTE_READ | (kRemoteWrite & ~NDK_OP_FLAG_ALLOW_LOCAL_WRITE);
  const bool remote = (flags & remote_bits) != 0;
  if (remote && !mr.RemoteAccess()) return STATUS_ACCESS_VIOLATION;
  // ref §3.7: 1..init-count PAGE_SIZE-aligned pages; Length <= pages*PAGE_SIZE - FBO; the base
  // address is FBO + n*PAGE_SIZE (0 only with FBO 0).
  if (pages == nullptr || page_count == 0 || page_count > mr.PageCapacity()) return STATUS_INVALID_PARAMETER;
  for (ULONG i = 0; i < page_count; ++i) {
    if (pages[i].QuadPart == 0 || (pages[i].QuadPart & (PAGE_SIZE - 1)) != 0) return STATUS_INVALID_PARAMETER;
  }
  const auto address = reinterpret_cast<std::uint64_t>(base);
  const std::uint64_t span = std::uint64_t{page_count} * PAGE_SIZE;
  if (fbo >= PAGE_SIZE || length == 0 || length > span - fbo || address % PAGE_SIZE != fbo ||
      address + length < address) {
    return STATUS_INVALID_PARAMETER;
  }
  return STATUS_SUCCESS;
}

NTSTATUS FastRegister(NDK_QP* ndk, PVOID context, NDK_MR* ndk_mr, ULONG page_count,
                      const NDK_LOGICAL_ADDRESS* pages, ULONG fbo, SIZE_T length, PVOID base, ULONG flags) {
  Qp& qp = Qp::From(ndk);
  if (const NTSTATUS s = ValidateFastRegister(qp, ndk_mr, page_count, pages, fbo, length, base, flags);
      s != STATUS_SUCCESS) {
    qp.KickDeferred();
    return s;
  }
  Mr& mr = Mr::From(ndk_mr);
  std::uint64_t* list = qp.PageListFor(page_count);
  for (ULONG i = 0; i < page_count; ++i) list[i] = static_cast<std::uint64_t>(pages[i].QuadPart);
  const hw::MemoryKey key = mr.FastRegisterKey();
  const auto address = reinterpret_cast<std::uint64_t>(base);
  const std::uint32_t access = OpAccessBits(flags);
  qp.PostMemory({.opcode = hw::WqeOpcode::kFastRegister,
                 .context = context,
                 .flags = flags,
                 .target_key = key.value,
                 .target_generation = mr.Generation(),
                 .address = address,
                 .length = length,
                 .access = access,
                 .fbo = fbo,
                 .page_list = list,
                 .page_count = page_count});
  mr.FastRegisterPosted(key, address, length, access);  // ref §3.7: token available on return
  return STATUS_SUCCESS;
}

// The token an NdkInvalidate names, or a failure status (ndksim's choices: a non-MR/MW object is
// INVALID_PARAMETER; an MR registered with NdkRegisterMr is INVALID_DEVICE_REQUEST, ref §3.8).
NTSTATUS InvalidateTarget(const Qp& qp, NDK_OBJECT_HEADER* header, std::uint32_t* token, std::uint32_t* generation) {
  if (header == nullptr) return STATUS_INVALID_PARAMETER;
  if (header->ObjectType == NdkObjectTypeMr) {
    const Mr& mr = OwnerOfHeader<Mr, NDK_MR>(header);
    if (&mr.GetPd() != &qp.GetPd()) return STATUS_INVALID_PARAMETER;
    if (!mr.IsFastRegister() || mr.PageCapacity() == 0) return STATUS_INVALID_DEVICE_REQUEST;
    *token = mr.Token();
    *generation = mr.Generation();
    return STATUS_SUCCESS;
  }
  if (header->ObjectType == NdkObjectTypeMw) {
    const Mw& mw = OwnerOfHeader<Mw, NDK_MW>(header);
    if (&mw.GetPd() != &qp.GetPd()) return STATUS_INVALID_PARAMETER;
    *token = mw.Token();
    *generation = mw.Generation();
    return STATUS_SUCCESS;
  }
  return STATUS_INVALID_PARAMETER;
}

NTSTATUS Invalidate(NDK_QP* ndk, PVOID context, NDK_OBJECT_HEADER* header, ULONG flags) {
  Qp& qp = Qp::From(ndk);
  std::uint32_t token = 0;
  std::uint32_t generation = 0;
  NTSTATUS s = qp.CheckInitiatorRoom();
  if (s == STATUS_SUCCESS) s = (flags & ~kCommonFlags) != 0 ? STATUS_INVALID_PARAMETER : InvalidateTarget(qp, header, &token, &generation);
  if (s != STATUS_SUCCESS) {
    qp.KickDeferred();
    return s;
  }
  qp.PostMemory({.opcode = hw::WqeOpcode::kLocalInvalidate,
                 .context = context,
                 .flags = flags,
                 .target_key = token,
                 .target_generation = generation});
  // Whether the token was valid is known when the WQE executes (an unbound window or an
  // unregistered FR MR completes with STATUS_INVALID_DEVICE_REQUEST, ref §3.8).
  if (header->ObjectType == NdkObjectTypeMr) OwnerOfHeader<Mr, NDK_MR>(header).InvalidatePosted();
  return STATUS_SUCCESS;
}

const NDK_QP_DISPATCH kQpDispatch = {
    Control<Qp, NDK_QP, CloseQp>::Call,
    NdkQueryExtensionNotSupported,
    Control<Qp, NDK_QP, Flush>::Call,
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
                    const Limits& limits, NDK_QP** out, Srq* srq) {
  Driver& driver = pd.GetDriver();
  const HardwareProfile& p = driver.Profile();
  if (out == nullptr || receive_cq == nullptr || initiator_cq == nullptr) {
    return STATUS_INVALID_PARAMETER;
  }
  // ref §3.16: each limit against the adapter's; a zero depth is invalid too. With an SRQ the
  // receive limits are the SRQ's, checked when it was created.
  const bool own_receive_queue = srq == nullptr;
  if ((own_receive_queue && (limits.receive_depth == 0 || limits.receive_depth > p.max_receive_queue_depth)) ||
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
  if (srq != nullptr && &srq->GetPd() != &pd) return STATUS_INVALID_PARAMETER;  // SRQ of another PD
  auto qp = std::make_unique<Qp>(pd, rcq, icq, qp_context, limits, srq);
  const hw::QpCreate create{
      pd.Number(),
      icq.Number(),
      rcq.Number(),
      hw::WorkQueue{qp->send_.ring.get(), qp->send_.stride},
      hw::WorkQueue{qp->receive_.ring.get(), qp->receive_.stride},
      limits.inline_bytes,
      srq != nullptr ? srq->Number() : hw::SrqNumber{},
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

Qp::Qp(Pd& pd, Cq& receive_cq, Cq& initiator_cq, void* qp_context, const Limits& limits, Srq* srq)
    : Object(pd.GetAdapter(), NdkObjectTypeQp),
      pd_(pd),
      receive_cq_(receive_cq),
      initiator_cq_(initiator_cq),
      qp_context_(qp_context),
      srq_(srq) {
  InitNdk(handle_.ndk, pd.Version(), NdkObjectTypeQp, &kQpDispatch);
  handle_.owner = this;
  const HardwareProfile& p = pd.GetDriver().Profile();
  inline_bytes_ = limits.inline_bytes;
  read_sge_ = std::min<std::uint32_t>(limits.initiator_sge, p.max_read_sge);
  max_transfer_ = p.max_transfer_bytes;
  InitQueue(send_, limits.initiator_depth, limits.initiator_sge,
            SendStride(limits.initiator_sge, limits.inline_bytes));
  // With an SRQ the QP has no receive ring of its own (the NIC gets a null one).
  if (srq_ == nullptr) {
    InitQueue(receive_, limits.receive_depth, limits.receive_sge, ReceiveStride(limits.receive_sge));
  }
  // ref §4.4: the QP is a successor of its PD, both CQs and its SRQ.
  pd_.AddSuccessor();
  receive_cq_.AddSuccessor();
  initiator_cq_.AddSuccessor();
  if (srq_ != nullptr) srq_->AddSuccessor();
}

Qp::~Qp() {
  if (created_) {
    Driver& driver = GetDriver();
    driver.RegisterQp(qpn_, nullptr);
    driver.Nic().DestroyQp(qpn_);
  }
  // Binds whose WQEs never retired may or may not have executed before the NIC dropped them.
  if (binds_outstanding_.load(std::memory_order_relaxed) != 0) {
    for (std::uint32_t slot = 0; slot <= send_.slot_mask; ++slot) {
      MemorySlot& m = memory_slots_[slot];
      if (m.binding != nullptr) m.binding->Resolved(*m.mr, *this, WindowBinding::Outcome::kUnknown);
    }
  }
  if (srq_ != nullptr) srq_->ReleaseSuccessor();
  initiator_cq_.ReleaseSuccessor();
  receive_cq_.ReleaseSuccessor();
  pd_.ReleaseSuccessor();
}

}  // namespace ndksim::provider
