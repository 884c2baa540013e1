// Counters of one node's RNIC: plain fields, each updated in exactly one place by the hardware
// block that owns the event, read by tests and tools through Node::Counters().
#pragma once

#include <cstdint>

namespace ndksim {

struct NicCounters {
  std::uint64_t doorbells = 0;
  std::uint64_t doorbells_dropped = 0;
  std::uint64_t wqes_fetched = 0;
  std::uint64_t wqes_executed = 0;
  std::uint64_t packets_sent = 0;
  std::uint64_t packets_received = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t dma_reads = 0;
  std::uint64_t dma_read_bytes = 0;
  std::uint64_t dma_writes = 0;
  std::uint64_t dma_write_bytes = 0;
  std::uint64_t cqes_written = 0;
  std::uint64_t interrupts = 0;
  std::uint64_t naks_sent = 0;
  std::uint64_t rnr_naks_sent = 0;
  std::uint64_t retransmissions = 0;
  std::uint64_t fence_stalls = 0;
  std::uint64_t protection_faults = 0;
};

}  // namespace ndksim
