// SPDX-License-Identifier: MIT
// PCIe link timing: fixed latency per transaction plus serialization of TLPs, read tags.
#include "pcie_link.h"

#include <algorithm>

#include "hwmodel/host_cpu.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

PcieLink::PcieLink(Nic& nic, EventQueue& events, std::uint64_t seed)
    : nic_(nic),
      events_(events),
      noise_(seed, NoiseStreamId(NoiseSource::kPcieLink, nic.Id())),
      jitter_(nic.Profile().noise ? nic.Profile().pcie_latency_jitter : Duration::zero()),
      tag_free_(nic.Profile().pcie_read_tags),
      read_waiters_(events, [this] { return ReadSlotAt(); }) {}

std::uint64_t PcieLink::WireBytes(std::uint64_t bytes, std::uint32_t tlp_bytes, std::uint32_t overhead) {
  const std::uint64_t tlps = bytes == 0 ? 1 : (bytes + tlp_bytes - 1) / tlp_bytes;
  return bytes + tlps * overhead;
}

TimePoint PcieLink::MmioWrite(std::uint32_t bytes, QpCounters* qp) {
  const auto& p = nic_.Profile();
  auto& c = nic_.MutableCounters();
  ++c.mmio_writes;
  c.mmio_write_bytes += bytes;
  if (qp != nullptr) {
    ++qp->mmio_writes;
    qp->mmio_write_bytes += bytes;
  }
  const TimePoint now = events_.Now();
  const std::uint64_t wire = WireBytes(bytes, kWriteCombiningLineBytes, kWriteTlpOverheadBytes);
  c.pcie_to_nic_bytes += wire;
  const Duration length = p.pcie_bandwidth.TimeFor(wire);
  mmio_busy_ += length;
  mmio_free_ = downstream_.Book(now, std::max(now, mmio_free_), length);
  // Posted writes: in order, whatever each one's latency.
  mmio_arrives_ = std::max(mmio_arrives_, mmio_free_ + Latency(p.pcie_mmio_write_latency));
  return mmio_arrives_;
}

TimePoint PcieLink::ReadSlotAt() const {
  const Duration round_trip = nic_.Profile().pcie_bandwidth.TimeFor(kWriteTlpOverheadBytes) +
                              nic_.Profile().pcie_dma_read_latency;
  return std::max(tag_free_[next_tag_], completions_free_ - round_trip);
}

void PcieLink::DmaRead(std::uint64_t bytes, EventCallback done, QpCounters* qp) {
  events_.Schedule(DmaReadArrival(bytes, qp), EventPriority::kDevice, std::move(done));
}

TimePoint PcieLink::DmaReadArrival(std::uint64_t bytes, QpCounters* qp) {
  const auto& p = nic_.Profile();
  auto& c = nic_.MutableCounters();
  ++c.dma_reads;
  c.dma_read_bytes += bytes;
  if (qp != nullptr) {
    ++qp->dma_reads;
    qp->dma_read_bytes += bytes;
  }
  const TimePoint now = events_.Now();
  const Duration request_time = p.pcie_bandwidth.TimeFor(kWriteTlpOverheadBytes);
  std::uint64_t left = bytes;
  TimePoint last{};
  do {
    const std::uint64_t n = std::min<std::uint64_t>(left, p.pcie_max_read_request_bytes);
    left -= n;
    ++c.dma_read_requests;
    // The request header goes up once a read tag is free.
    TimePoint& tag = tag_free_[next_tag_];
    next_tag_ = (next_tag_ + 1) % tag_free_.size();
    const TimePoint ready = std::max(now, requests_free_);
    if (tag > ready) ++c.read_tag_stalls;
    c.pcie_to_host_bytes += kWriteTlpOverheadBytes;
    requests_free_ = upstream_.Book(now, std::max(ready, tag), request_time);
    const TimePoint tag_taken = requests_free_ - request_time;
    // The data comes back after the read latency and occupies the downstream direction for its
    // serialization time, in completions of at most MPS bytes. The host hands it over one 64-B
    // line at a time, so the last line is ready (lines - 1) intervals after the first, and the
    // last completion cannot arrive before it has crossed the link.
    const TimePoint first_ready = requests_free_ + Latency(p.pcie_dma_read_latency);
    const std::uint64_t wire = WireBytes(n, p.pcie_max_payload_bytes, kCompletionTlpOverheadBytes);
    c.pcie_to_nic_bytes += wire;
    completions_free_ = downstream_.Book(now, std::max(first_ready, completions_free_), p.pcie_bandwidth.TimeFor(wire));
    const std::uint64_t lines = n == 0 ? 1 : (n + kHostLineBytes - 1) / kHostLineBytes;
    const std::uint64_t last_line_bytes = n - (lines - 1) * kHostLineBytes;
    const TimePoint last_line_arrives =
        first_ready + static_cast<std::int64_t>(lines - 1) * p.pcie_read_line_interval +
        p.pcie_bandwidth.TimeFor(last_line_bytes + kCompletionTlpOverheadBytes);
    // Several requests stream at once; their reads still complete in issue order.
    last_read_done_ = std::max({completions_free_, last_line_arrives, last_read_done_});
    tag = last_read_done_;  // the tag is free once its last completion has arrived
    tag_busy_ += tag - tag_taken;
    last = last_read_done_;
  } while (left > 0);
  NDKSIM_TRACE(nic_.Trace(), now, nic_.Id(), Pcie, "dma read {} B done at {}", bytes, last);
  return last;
}

void PcieLink::DmaWrite(std::uint64_t bytes, EventCallback done, QpCounters* qp, WriteOrder* order,
                        TimePoint not_before) {
  const auto& p = nic_.Profile();
  auto& c = nic_.MutableCounters();
  ++c.dma_writes;
  c.dma_write_bytes += bytes;
  if (qp != nullptr) {
    ++qp->dma_writes;
    qp->dma_write_bytes += bytes;
  }
  const TimePoint now = events_.Now();
  // The NIC's write engine issues one TLP per pcie_write_tlp_interval at most (its own timeline:
  // a rate, not a latency, so small writes are bound by it rather than by their bytes); the TLPs
  // take the link for their bytes from when the engine issues the write. A write of nothing (a
  // 0-B message's placement) is no TLP: it only keeps its place in the order.
  const std::uint64_t tlps = (bytes + p.pcie_max_payload_bytes - 1) / p.pcie_max_payload_bytes;
  const std::uint64_t wire = bytes == 0 ? 0 : WireBytes(bytes, p.pcie_max_payload_bytes, kWriteTlpOverheadBytes);
  c.pcie_to_host_bytes += wire;
  const Duration length = p.pcie_bandwidth.TimeFor(wire);
  const Duration engine = p.pcie_write_tlp_interval * static_cast<std::int64_t>(tlps);
  TimePoint lands;
  if (order != nullptr && std::max(not_before, order->issued) > now) {
    // Issued later, when it may go: the writes issued before then do not wait for it.
    const TimePoint issued = IssueWrite(now, std::max(not_before, order->issued), engine);
    const TimePoint end = upstream_.Book(now, issued, length);
    lands = std::max(end + Latency(p.pcie_dma_write_latency), order->lands);
    order->issued = end;
  } else {
    const TimePoint issued = IssueWrite(now, std::max(now, writes_free_), engine);
    writes_free_ = upstream_.Book(now, issued, length);
    // Posted writes become visible in order: never before an earlier write.
    last_write_done_ = std::max(last_write_done_, writes_free_ + Latency(p.pcie_dma_write_latency));
    lands = last_write_done_;
    if (order != nullptr) {
      lands = std::max(lands, order->lands);
      order->issued = writes_free_;
    }
  }
  if (order != nullptr) order->lands = lands;
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Pcie, "dma write {} B done at {}", bytes, lands);
  events_.Schedule(lands, EventPriority::kDevice, std::move(done));
}

}  // namespace ndksim::hw
