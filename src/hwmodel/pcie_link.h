// The PCIe link between host and NIC: MMIO doorbell writes (host -> NIC), DMA reads (request up,
// completions with data down) and posted DMA writes (NIC -> host). Each direction is a server with
// a busy-until time, so transfers queue behind each other and bandwidth limits emerge.
#pragma once

#include <cstdint>

#include "hwmodel/event_queue.h"
#include "hwmodel/nic.h"

namespace ndksim::hw {

class PcieLink {
 public:
  static constexpr std::uint32_t kMaxPayloadBytes = 256;        // MPS: bytes per TLP
  static constexpr std::uint32_t kWriteTlpOverheadBytes = 24;    // memory write request header
  static constexpr std::uint32_t kCompletionTlpOverheadBytes = 20;  // completion-with-data header

  PcieLink(Nic& nic, EventQueue& events);

  // When an MMIO write of `bytes` issued now reaches the NIC.
  TimePoint MmioWrite(std::uint32_t bytes);
  // Reads `bytes` of host memory; `done` runs when the last completion has arrived. The caller
  // copies the bytes out of host memory in `done`, so it sees memory as it is at that time.
  void DmaRead(std::uint64_t bytes, EventCallback done, TimePoint not_before = {});
  // Writes `bytes` to host memory; `done` runs when they are visible to the host. Posted writes
  // land in issue order. The caller copies into host memory in `done`.
  void DmaWrite(std::uint64_t bytes, EventCallback done, TimePoint not_before = {});

  // When every write issued so far is visible in host memory.
  TimePoint LastWriteLandsAt() const { return last_write_done_; }

 private:
  static std::uint64_t WireBytes(std::uint64_t bytes, std::uint32_t overhead);

  Nic& nic_;
  EventQueue& events_;
  TimePoint downstream_free_{};  // host -> NIC: MMIO and read completions
  TimePoint upstream_free_{};    // NIC -> host: writes and read requests
  TimePoint last_write_done_{};
};

}  // namespace ndksim::hw
