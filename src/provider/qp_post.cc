// SPDX-License-Identifier: MIT
// NDK_QP's posting path (initiator, memory and receive WQEs), mlx5-shaped (STYLE 17):
// validate -> build the WQE in its ring slot with small segment builders -> record the request
// context by slot -> one release store of the producer index -> one doorbell per batch.
// No heap allocation, no locks, no virtual calls on the posting path.
#include "qp.h"

#include <array>
#include <atomic>
#include <cstring>

#include "common/asymmetric_fence.h"
#include "common/prefetch.h"
#include "driver.h"
#include "memory.h"
#include "qp_internal.h"

namespace ndksim::provider {

namespace {

// ---- per-opcode rules (ref §1.4 flag table) ----------------------------------------------------

using qp_internal::kCommonFlags;

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

// ---- segment builders ----------------------------------------------------------------------------

// WQE number n occupies blocks [n*stride, (n+1)*stride). The ring holds a whole number of WQEs,
// so a WQE never wraps and is contiguous from its first block.
std::byte* WqeAt(WorkQueueState& q, std::uint32_t n) {
  return reinterpret_cast<std::byte*>(&q.ring->SlotAt(n * q.stride));
}

// Takes the first line of a WQE a few posts ahead for writing (common/prefetch.h). In threaded
// mode the engine's thread read that slot a lap ago and may still hold a copy of the line; the
// prefetch takes it back now, while this post goes on, instead of when that post's first store
// waits for it with every later store queued behind.
void PrefetchWqeAhead(WorkQueueState& q, std::uint32_t n) {
  PrefetchForWrite(WqeAt(q, n + WriteAheadFor(q.slot_mask + 1)));
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
  PrefetchWqeAhead(send_, n);
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
  // The calling thread's core built the WQE and stores the doorbell record (host_cpu).
  const TimePoint posted = GetDriver().Host().Cpu().PostWqe(wqe_bytes);
  RequestLog& log = GetDriver().Requests();
  if (log.Enabled()) {
    const std::uint32_t id = GetDriver().Nic().Id();
    log.Mark(id, qpn_.value, send_.posted, RequestStage::kPosted, posted);
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
  PrefetchWqeAhead(send_, n);
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
  PrefetchWqeAhead(receive_, n);
  std::byte* wqe = WqeAt(receive_, n);
  const hw::WqeControl control{hw::WqeOpcode::kReceive, 0, static_cast<std::uint8_t>(sge_count),
                               0, n, 0, 0};
  PutSegment(wqe, 0, control);
  PutDataSegments(wqe, 1, sgl, sge_count);
  receive_.contexts[n & receive_.slot_mask] = context;
  (void)GetDriver().Host().Cpu().PostWqe((1 + sge_count) * hw::kWqeSegmentBytes);
  // Release store of the producer index. Receive queues need no MMIO doorbell: the NIC reads
  // the published index when a send arrives.
  receive_.ring->ProducerPublish(receive_.stride);
  ++receive_.posted;
  // ...except on a QP in error, where no send will arrive and the NIC must be told to flush.
  // Store-load on both sides, paired with the heavy half in MarkInError: either we see the flag
  // and ring, or MarkInError's doorbell finds this WQE published. The light half spares every
  // receive a full fence, which would wait for the stores above to leave this core.
  LightFence();
  if (in_error_.load(std::memory_order_relaxed)) RingReceiveDoorbell();
  return STATUS_SUCCESS;
}

void Qp::RingReceiveDoorbell() {
  if (receive_.ring == nullptr) return;  // on an SRQ: nothing of ours for the NIC to flush
  GetDriver().RingDoorbell({hw::Doorbell::Kind::kReceiveQueue, hw::CqArmKind::kNone, qpn_.value,
                            receive_.ring->PublishedProducerIndex()});
}

// ---- the dispatch table's posting entries ------------------------------------------------------

// Each entry is one function with the whole posting path inlined into it (flatten): no call
// inside pushes registers or spills a request onto the stack. While the engine's thread reads the
// WQEs (threaded mode), every store a post makes waits behind the store to the WQE line, which
// must first take that line back from the engine's core; the fewer stores a post makes, the less
// of that wait it sees (docs/performance.md, "Where a threaded post's cost comes from").
namespace qp_internal {

namespace {

// NdkRead and NdkWrite: an initiator request with a remote buffer.
NTSTATUS PostRemote(NDK_QP* ndk, hw::WqeOpcode opcode, PVOID context, const NDK_SGE* sgl, ULONG n,
                    UINT64 remote_address, UINT32 remote_token, ULONG flags) {
  return Qp::From(ndk).PostInitiator({.opcode = opcode,
                                      .context = context,
                                      .sgl = sgl,
                                      .sge_count = n,
                                      .flags = flags,
                                      .remote_address = remote_address,
                                      .remote_token = remote_token});
}

}  // namespace

[[gnu::flatten]] NTSTATUS Send(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, ULONG flags) {
  return Qp::From(ndk).PostInitiator({.opcode = hw::WqeOpcode::kSend,
                                      .context = context,
                                      .sgl = sgl,
                                      .sge_count = n,
                                      .flags = flags});
}

[[gnu::flatten]] NTSTATUS SendAndInvalidate(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, ULONG flags,
                                             UINT32 remote_token) {
  return Qp::From(ndk).PostInitiator({.opcode = hw::WqeOpcode::kSendInvalidate,
                                      .context = context,
                                      .sgl = sgl,
                                      .sge_count = n,
                                      .flags = flags,
                                      .invalidate_token = remote_token});
}

[[gnu::flatten]] NTSTATUS Read(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, UINT64 remote_address,
                                UINT32 remote_token, ULONG flags) {
  return PostRemote(ndk, hw::WqeOpcode::kRead, context, sgl, n, remote_address, remote_token, flags);
}

[[gnu::flatten]] NTSTATUS Write(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, UINT64 remote_address,
                                 UINT32 remote_token, ULONG flags) {
  return PostRemote(ndk, hw::WqeOpcode::kWrite, context, sgl, n, remote_address, remote_token, flags);
}

[[gnu::flatten]] NTSTATUS Receive(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n) {
  return Qp::From(ndk).PostReceive(context, sgl, n);
}

}  // namespace qp_internal

}  // namespace ndksim::provider
