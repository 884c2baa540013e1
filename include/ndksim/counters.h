// SPDX-License-Identifier: MIT
// Counters of one node's RNIC and of each of its QPs: plain fields, each updated in exactly one
// place by the hardware block that owns the event. Read by tests and tools through
// Node::Counters() and Node::CountersOf(qp).
#pragma once

#include <cstdint>

namespace ndksim {

// What one QP caused. DMA and MMIO traffic is charged to the QP it serves (WQE fetch, payload,
// placement, CQEs of its requests); traffic with no QP (event entries, CQ arming) is only in the
// node's counters.
struct QpCounters {
  std::uint64_t doorbells = 0;          // send-queue doorbells that reached the NIC
  std::uint64_t mmio_writes = 0;        // send-queue doorbell MMIO writes (with the WQE when written through)
  std::uint64_t mmio_write_bytes = 0;
  std::uint64_t wqes_fetched = 0;       // WQEs read from the host ring by DMA
  std::uint64_t wqes_by_mmio = 0;       // WQEs that arrived with their doorbell, not fetched
  std::uint64_t wqes_executed = 0;
  std::uint64_t dma_reads = 0;          // DMA read operations (each may be several PCIe requests)
  std::uint64_t dma_read_bytes = 0;
  std::uint64_t dma_writes = 0;
  std::uint64_t dma_write_bytes = 0;
  std::uint64_t packets_sent = 0;
  std::uint64_t packets_received = 0;
  std::uint64_t bytes_sent = 0;         // payload bytes
  std::uint64_t bytes_received = 0;     // payload bytes
  std::uint64_t fence_stalls = 0;
  std::uint64_t completions = 0;        // CQEs of this QP written to host memory (send and receive side)
  std::uint64_t retransmissions = 0;
};

// The whole NIC. Doorbells and MMIO writes include receive-queue and CQ-arm doorbells, which no
// QP's counters hold.
struct NicCounters {
  std::uint64_t doorbells = 0;
  std::uint64_t mmio_writes = 0;
  std::uint64_t mmio_write_bytes = 0;
  std::uint64_t wqes_fetched = 0;
  std::uint64_t wqes_by_mmio = 0;
  std::uint64_t wqes_executed = 0;
  std::uint64_t packets_sent = 0;
  std::uint64_t packets_received = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t dma_reads = 0;
  std::uint64_t dma_read_requests = 0;  // PCIe read requests (MRRS-sized pieces of the reads)
  std::uint64_t dma_read_bytes = 0;
  std::uint64_t dma_writes = 0;
  std::uint64_t dma_write_bytes = 0;
  std::uint64_t read_tag_stalls = 0;    // read requests that waited for a free tag
  std::uint64_t qp_context_hits = 0;    // QP-context lookups the on-chip cache answered
  std::uint64_t qp_context_misses = 0;  // ... that read the context from host memory first
  std::uint64_t mpt_hits = 0;           // memory-key entry lookups the translation cache answered
  std::uint64_t mpt_misses = 0;
  std::uint64_t mtt_hits = 0;           // page-translation line lookups (8 pages a line)
  std::uint64_t mtt_misses = 0;
  std::uint64_t cqes_written = 0;
  std::uint64_t cq_overruns = 0;        // CQs that overran (each once: an overrun CQ takes no more)
  std::uint64_t interrupts = 0;
  std::uint64_t naks_sent = 0;
  std::uint64_t rnr_naks_sent = 0;
  std::uint64_t retransmissions = 0;
  std::uint64_t fence_stalls = 0;
  std::uint64_t protection_faults = 0;
  std::uint64_t icrc_errors = 0;        // packets discarded because a bit flipped on the wire
  std::uint64_t faults_injected = 0;    // fault rules that acted at this node's hook points
};

}  // namespace ndksim
