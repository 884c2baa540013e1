// SPDX-License-Identifier: MIT
// NDK_SRQ: creation, the SRQ dispatch table, NdkSrqReceive (the same WQE format and ring as a
// QP's receive queue) and the limit notification (ref §3.16).
#include "srq.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/prefetch.h"
#include "control.h"
#include "driver.h"
#include "memory.h"
#include "status.h"

namespace ndksim::provider {

namespace {

std::uint32_t CeilDiv(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

// Receive WQE = control + SGE segments (as a QP's receive queue).
std::uint32_t ReceiveStride(std::uint32_t sge) {
  return std::bit_ceil(CeilDiv(1 + sge, static_cast<std::uint32_t>(hw::kSegmentsPerBlock)));
}

NTSTATUS CloseSrq(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion, PVOID context) {
  Srq& srq = OwnerOfHeader<Srq, NDK_SRQ>(header);
  srq.GetDriver().Trace("close srq {}", srq.Number().value);
  // ref §4.4: pends while QPs created with this SRQ live (they are its successors).
  return srq.GetAdapter().Close(srq, completion, context);
}

NTSTATUS ModifySrq(NDK_SRQ* ndk, ULONG depth, ULONG threshold, NDK_FN_REQUEST_COMPLETION completion,
                   PVOID context) {
  Srq& srq = Srq::From(ndk);
  return srq.GetAdapter().FinishRequest(srq, srq.Modify(depth, threshold), completion, context);
}

NTSTATUS SrqReceive(NDK_SRQ* ndk, PVOID context, const NDK_SGE* sgl, ULONG n) {
  return Srq::From(ndk).PostReceive(context, sgl, n);
}

const NDK_SRQ_DISPATCH kSrqDispatch = {
    Control<Srq, NDK_SRQ, CloseSrq>::Call,
    NdkQueryExtensionNotSupported,
    Control<Srq, NDK_SRQ, ModifySrq>::Call,
    SrqReceive,
};

}  // namespace

NTSTATUS Srq::Create(Pd& pd, ULONG depth, ULONG max_sge, ULONG threshold,
                     NDK_FN_SRQ_NOTIFICATION_CALLBACK notify, void* notify_context, NDK_SRQ** out) {
  Driver& driver = pd.GetDriver();
  const HardwareProfile& p = driver.Profile();
  if (depth == 0 || depth > p.max_srq_depth || max_sge > p.max_receive_sge) {
    return STATUS_INVALID_PARAMETER;
  }
  Adapter& adapter = pd.GetAdapter();
  auto srq = std::make_unique<Srq>(pd, depth, max_sge, notify, notify_context);
  // An armed threshold is first judged when the NIC takes a WQE, so that a new, still empty SRQ
  // does not notify at once (ndksim's choice; NdkModifySrq judges at once, ref §3.16).
  const hw::SrqCreate create{pd.Number(), hw::WorkQueue{srq->ring_.get(), srq->stride_}, threshold};
  const hw::CommandStatus status = driver.Nic().CreateSrq(create, &srq->number_);
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  srq->created_ = true;
  driver.RegisterSrq(srq->number_, srq.get());
  driver.Trace("create srq {} depth {}x{} threshold {}", srq->number_.value, depth, max_sge, threshold);
  *out = adapter.Adopt(std::move(srq)).Ndk();
  return STATUS_SUCCESS;
}

Srq::Srq(Pd& pd, std::uint32_t depth, std::uint32_t max_sge, NDK_FN_SRQ_NOTIFICATION_CALLBACK notify,
         void* notify_context)
    : Object(pd.GetAdapter(), NdkObjectTypeSrq), pd_(pd), notify_(notify), notify_context_(notify_context) {
  InitNdk(handle_.ndk, pd.Version(), NdkObjectTypeSrq, &kSrqDispatch);
  handle_.owner = this;
  const std::uint32_t slots = std::bit_ceil(depth);
  stride_ = ReceiveStride(max_sge);
  ring_ = std::make_unique<hw::SpscRing<hw::WqeBlock>>(slots * stride_);
  contexts_ = std::make_unique<void*[]>(slots);
  busy_ = std::make_unique<std::atomic<bool>[]>(slots);
  slot_mask_ = slots - 1;
  max_sge_ = max_sge;
  max_transfer_ = pd.GetDriver().Profile().max_transfer_bytes;
  depth_.store(depth, std::memory_order_relaxed);
  pd_.AddSuccessor();  // ref §4.4: PD -> SRQ
}

Srq::~Srq() {
  if (created_) {
    Driver& driver = GetDriver();
    driver.RegisterSrq(number_, nullptr);
    driver.Nic().DestroySrq(number_);
  }
  pd_.ReleaseSuccessor();
}

NTSTATUS Srq::Modify(ULONG depth, ULONG threshold) {
  Driver& driver = GetDriver();
  if (depth > driver.Profile().max_srq_depth) return STATUS_INVALID_PARAMETER;
  if (depth > slot_mask_ + 1) {
    if (const NTSTATUS s = Grow(std::bit_ceil(depth)); s != STATUS_SUCCESS) return s;
  }
  if (depth != 0) depth_.store(depth, std::memory_order_relaxed);
  if (threshold != 0) {
    const hw::CommandStatus status = driver.Nic().ArmSrqLimit(number_, threshold);
    if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  }
  driver.Trace("modify srq {} depth {} threshold {}", number_.value, depth, threshold);
  return STATUS_SUCCESS;
}

NTSTATUS Srq::Grow(std::uint32_t slots) {
  const std::uint32_t old_slots = slot_mask_ + 1;
  // The new ring starts where the NIC's consumer index is (the released index it publishes in
  // the ring, as a doorbell record) and holds the last `old_slots` WQEs at the same free-running
  // indices: those not taken yet and those taken whose CQE is not polled (still re-read for
  // placement, and named by their CQE).
  auto ring = std::make_unique<hw::SpscRing<hw::WqeBlock>>(slots * stride_, ring_->ConsumerIndex());
  auto contexts = std::make_unique<void*[]>(slots);
  auto busy = std::make_unique<std::atomic<bool>[]>(slots);
  for (std::uint32_t k = 0; k < old_slots; ++k) {
    const std::uint32_t n = posted_ - old_slots + k;
    for (std::uint32_t b = 0; b < stride_; ++b) ring->SlotAt(n * stride_ + b) = ring_->SlotAt(n * stride_ + b);
    contexts[n & (slots - 1)] = contexts_[n & slot_mask_];
    busy[n & (slots - 1)].store(busy_[n & slot_mask_].load(std::memory_order_acquire), std::memory_order_relaxed);
  }
  ring->ProducerPublish(posted_ * stride_ - ring_->ConsumerIndex());
  const hw::CommandStatus status = GetDriver().Nic().ReplaceSrqQueue(number_, hw::WorkQueue{ring.get(), stride_});
  if (status != hw::CommandStatus::kOk) return CommandToNtStatus(status);
  ring_ = std::move(ring);
  contexts_ = std::move(contexts);
  busy_ = std::move(busy);
  slot_mask_ = slots - 1;
  return STATUS_SUCCESS;
}

NTSTATUS Srq::PostReceive(void* context, const NDK_SGE* sgl, ULONG sge_count) {
  // Same inline statuses as NdkReceive (ndksim's choice for ref §6 item 14).
  if (sge_count > max_sge_) return STATUS_DATA_OVERRUN;
  if (sgl == nullptr && sge_count > 0) return STATUS_INVALID_PARAMETER;
  std::uint64_t total = 0;
  for (ULONG i = 0; i < sge_count; ++i) total += sgl[i].Length;
  if (total > max_transfer_) return STATUS_BUFFER_OVERFLOW;
  const std::uint32_t n = posted_;
  // acquire: pairs with the release stores in Retire; the poller's read of a freed slot's context
  // happens before we overwrite it.
  if (n - completed_.load(std::memory_order_acquire) >= depth_.load(std::memory_order_relaxed) ||
      busy_[n & slot_mask_].load(std::memory_order_acquire)) {
    return STATUS_NO_MORE_ENTRIES;
  }
  const MemoryTable& memory = GetDriver().Memory();
  for (ULONG i = 0; i < sge_count; ++i) {
    if (!memory.CoversLocal(sgl[i], pd_.Number())) return STATUS_ACCESS_VIOLATION;
  }
  // A WQE a few posts ahead, taken for writing now (common/prefetch.h, and qp_post.cc).
  PrefetchForWrite(&ring_->SlotAt((n + WriteAheadFor(slot_mask_ + 1)) * stride_));
  std::byte* wqe = reinterpret_cast<std::byte*>(&ring_->SlotAt(n * stride_));
  const hw::WqeControl control{hw::WqeOpcode::kReceive, 0, static_cast<std::uint8_t>(sge_count), 0, n, 0, 0};
  std::memcpy(wqe, &control, sizeof control);
  for (ULONG i = 0; i < sge_count; ++i) {
    const hw::WqeDataSegment d{reinterpret_cast<std::uint64_t>(sgl[i].VirtualAddress), sgl[i].Length,
                               sgl[i].MemoryRegionToken};
    std::memcpy(wqe + (1 + i) * hw::kWqeSegmentBytes, &d, sizeof d);
  }
  contexts_[n & slot_mask_] = context;
  busy_[n & slot_mask_].store(true, std::memory_order_relaxed);  // published by the store below
  (void)GetDriver().Host().Cpu().PostWqe((1 + sge_count) * hw::kWqeSegmentBytes);
  // Release store of the producer index: the NIC reads it when a send arrives on any attached QP.
  ring_->ProducerPublish(stride_);
  ++posted_;
  return STATUS_SUCCESS;
}

void* Srq::Retire(std::uint32_t wqe_counter) {
  const std::uint32_t slot = wqe_counter & slot_mask_;
  void* context = contexts_[slot];
  // release: pairs with the acquire loads in PostReceive; our read of the context comes first.
  busy_[slot].store(false, std::memory_order_release);
  completed_.fetch_add(1, std::memory_order_release);
  return context;
}

void Srq::Notify(NTSTATUS status) {
  // ref §4.4: nothing once a close was requested. Engine thread, one event at a time.
  if (Closing() || notify_ == nullptr) return;
  in_callback_ = true;
  notify_(notify_context_, status);
  in_callback_ = false;  // a close from inside the callback pends on in_callback_
}

}  // namespace ndksim::provider
