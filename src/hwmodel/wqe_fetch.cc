// SPDX-License-Identifier: MIT
// WQE fetch: burst DMA of WQEs and their parsing into descriptors.
#include "wqe_fetch.h"

#include <algorithm>
#include <cstring>

#include "completer.h"
#include "contexts.h"
#include "pcie_link.h"
#include "requester.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

namespace {

// 64-B blocks a send WQE uses: control and remote segments, then inline bytes or one segment per
// SGE (memory operations use the segments of one block).
std::uint32_t UsedBlocks(const WqeControl& control, std::uint32_t stride) {
  const std::uint32_t body = (control.flags & wqe_flag::kInline) ? (control.inline_bytes + kWqeSegmentBytes - 1) / kWqeSegmentBytes
                                                                  : control.sge_count;
  const std::uint32_t segments = static_cast<std::uint32_t>(kSendWqeHeaderSegments) + body;
  const std::uint32_t blocks = (segments + kSegmentsPerBlock - 1) / kSegmentsPerBlock;
  return std::clamp<std::uint32_t>(blocks, 1, stride);
}

}  // namespace

void WqeFetch::OnCreate(QpContext& qp) {
  // Blocks the host wrote before the QP existed are not WQEs of it.
  qp.fetch.fetched_blocks = qp.send_queue.ring->ProducerIndex();
}

void WqeFetch::Kick(QpContext& qp) {
  FetchState& f = qp.fetch;
  if (f.in_flight) return;
  if (qp.state != QpState::kReadyToSend && qp.state != QpState::kError) return;
  // In the error state every WQE the host has published is flushed, deferred ones included.
  const std::uint32_t limit =
      qp.state == QpState::kError ? qp.send_queue.ring->PublishedProducerIndex() : qp.doorbell.index;
  const std::uint32_t stride = qp.send_queue.stride_blocks;
  const std::uint32_t pending = (limit - f.fetched_blocks) / stride;
  const std::uint32_t free_descriptors = qp.DescriptorSlots() - (f.tail - qp.completer.head);
  const std::uint32_t count = std::min({pending, free_descriptors, kMaxBurstWqes});
  if (count == 0) return;
  // Fetch in bursts: while the QP still holds WQEs it has fetched (executing or awaiting their
  // acknowledgement), wait until a burst of descriptors is free (a quarter of them, at most
  // kMaxBurstWqes) rather than reading a WQE or two each time one retires.
  const std::uint32_t burst = std::clamp<std::uint32_t>(qp.DescriptorSlots() / 4, 1, kMaxBurstWqes);
  const bool short_of_descriptors = count < burst && count < pending;
  if (short_of_descriptors && f.tail != qp.completer.head && qp.state == QpState::kReadyToSend) return;
  f.in_flight = true;
  const std::uint32_t first_block = f.fetched_blocks;
  // Real send queues pack WQEs of different sizes; this ring gives every WQE the same stride, so
  // the read covers only the 64-B blocks each WQE uses, as it would in a packed ring.
  std::uint64_t bytes = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    WqeControl control;
    std::memcpy(&control, qp.send_queue.ring->SlotAt(first_block + i * stride).bytes.data(), sizeof control);
    bytes += UsedBlocks(control, stride) * kWqeBlockBytes;
  }
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), WqeFetch, "qp {} fetch {} wqe(s) from block {}",
               qp.qpn.value, count, first_block);
  const Qpn qpn = qp.qpn;
  ++nic_.MutableCounters().wqe_fetch_reads;
  nic_.Pcie().DmaRead(
      bytes,
      [this, qpn, first_block, count] {
        QpContext* q = nic_.FindQp(qpn);
        if (q != nullptr) OnFetched(*q, first_block, count);
      },
      &qp.counters);
}

bool WqeFetch::TakeFromDoorbell(QpContext& qp, std::uint32_t index) {
  const FetchState& f = qp.fetch;
  const std::uint32_t stride = qp.send_queue.stride_blocks;
  if (qp.state != QpState::kReadyToSend || f.in_flight || f.fetched_blocks + stride != index ||
      f.tail - qp.completer.head == qp.DescriptorSlots()) {
    return false;
  }
  ++nic_.MutableCounters().wqes_by_mmio;
  ++qp.counters.wqes_by_mmio;
  Accept(qp, f.fetched_blocks, 1);
  nic_.Req().Schedule(qp);
  return true;
}

void WqeFetch::OnFetched(QpContext& qp, std::uint32_t first_block, std::uint32_t count) {
  qp.fetch.in_flight = false;
  nic_.MutableCounters().wqes_fetched += count;
  qp.counters.wqes_fetched += count;
  Accept(qp, first_block, count);
  if (qp.state == QpState::kError) {
    nic_.Comp().FlushFetched(qp);
  } else {
    nic_.Req().Schedule(qp);
  }
  Kick(qp);
}

void WqeFetch::Accept(QpContext& qp, std::uint32_t first_block, std::uint32_t count) {
  FetchState& f = qp.fetch;
  const std::uint32_t stride = qp.send_queue.stride_blocks;
  SpscRing<WqeBlock>& ring = *qp.send_queue.ring;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::byte* wqe = ring.SlotAt(first_block + i * stride).bytes.data();
    WqeDescriptor& d = qp.Descriptor(f.tail);
    NDKSIM_CHECK(d.state == DescriptorState::kFree);
    // Only the header fields are reset: the data segments are read no further than the counts
    // written below.
    d.ResetHeader();
    std::memcpy(&d.control, wqe, sizeof(WqeControl));
    std::memcpy(&d.remote, wqe + kWqeSegmentBytes, sizeof(WqeRemote));
    const std::byte* segments = wqe + kSendWqeHeaderSegments * kWqeSegmentBytes;
    const std::size_t room = std::size_t{stride} * kWqeBlockBytes - kSendWqeHeaderSegments * kWqeSegmentBytes;
    if (d.control.flags & wqe_flag::kInline) {
      const std::uint32_t n = std::min<std::uint32_t>(d.control.inline_bytes, kMaxInlineBytes);
      NDKSIM_CHECK(n <= room && n <= d.inline_data.size());
      // Whole segments: the inline bytes fill (n + 15) / 16 of them, all inside the slot (`room`
      // is whole segments) and inside the descriptor's storage (whole segments too).
      CopySegments(d.inline_data.data(), segments, (n + kWqeSegmentBytes - 1) / kWqeSegmentBytes);
      d.total_length = n;
    } else {
      const std::uint32_t n = std::min<std::uint32_t>(d.control.sge_count, kMaxSge);
      NDKSIM_CHECK(n * kWqeSegmentBytes <= room && n <= d.sges.size());
      CopySegments(d.sges.data(), segments, n);
      d.control.sge_count = static_cast<std::uint8_t>(n);
      std::uint64_t total = 0;
      for (std::uint32_t s = 0; s < n; ++s) total += d.sges[s].length;
      d.total_length = static_cast<std::uint32_t>(std::min<std::uint64_t>(total, UINT32_MAX));
    }
    d.state = DescriptorState::kFetched;
    if (nic_.Trace().Requests().Enabled()) {
      nic_.Trace().Requests().Mark(nic_.Id(), qp.qpn.value, d.control.wqe_counter, RequestStage::kFetched,
                                   events_.Now());
    }
    ++f.tail;
  }
  f.fetched_blocks = first_block + count * stride;
}

}  // namespace ndksim::hw
