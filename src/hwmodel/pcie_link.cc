// PCIe link timing: fixed latency per transaction plus serialization of TLPs on a shared link.
#include "hwmodel/pcie_link.h"

#include <algorithm>

#include "ndksim/trace.h"

namespace ndksim::hw {

PcieLink::PcieLink(Nic& nic, EventQueue& events) : nic_(nic), events_(events) {}

std::uint64_t PcieLink::WireBytes(std::uint64_t bytes, std::uint32_t overhead) {
  const std::uint64_t tlps = bytes == 0 ? 1 : (bytes + kMaxPayloadBytes - 1) / kMaxPayloadBytes;
  return bytes + tlps * overhead;
}

TimePoint PcieLink::MmioWrite(std::uint32_t bytes) {
  const auto& p = nic_.Profile();
  const TimePoint start = std::max(events_.Now(), downstream_free_);
  downstream_free_ = start + p.pcie_bandwidth.TimeFor(WireBytes(bytes, kWriteTlpOverheadBytes));
  return downstream_free_ + p.pcie_mmio_write_latency;
}

void PcieLink::DmaRead(std::uint64_t bytes, EventCallback done, TimePoint not_before) {
  const auto& p = nic_.Profile();
  auto& c = nic_.MutableCounters();
  ++c.dma_reads;
  c.dma_read_bytes += bytes;
  // The request goes up, the data comes back after the read latency and then occupies the
  // downstream direction for its serialization time.
  const TimePoint issue = std::max(events_.Now(), not_before);
  const TimePoint data_start = std::max(issue + p.pcie_dma_read_latency, downstream_free_);
  downstream_free_ = data_start + p.pcie_bandwidth.TimeFor(WireBytes(bytes, kCompletionTlpOverheadBytes));
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Pcie, "dma read {} B done at {}", bytes, downstream_free_);
  events_.Schedule(downstream_free_, EventPriority::kDevice, std::move(done));
}

void PcieLink::DmaWrite(std::uint64_t bytes, EventCallback done, TimePoint not_before) {
  const auto& p = nic_.Profile();
  auto& c = nic_.MutableCounters();
  ++c.dma_writes;
  c.dma_write_bytes += bytes;
  const TimePoint start = std::max({events_.Now(), not_before, upstream_free_});
  upstream_free_ = start + p.pcie_bandwidth.TimeFor(WireBytes(bytes, kWriteTlpOverheadBytes));
  // Posted writes become visible in order: never before an earlier write.
  last_write_done_ = std::max(last_write_done_, upstream_free_ + p.pcie_dma_write_latency);
  NDKSIM_TRACE(nic_.Trace(), events_.Now(), nic_.Id(), Pcie, "dma write {} B done at {}", bytes, last_write_done_);
  events_.Schedule(last_write_done_, EventPriority::kDevice, std::move(done));
}

}  // namespace ndksim::hw
