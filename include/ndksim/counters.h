// SPDX-License-Identifier: MIT
/// @file
/// Counters of one node's RNIC and of each of its QPs: plain fields, each updated in exactly one
/// place by the hardware block that owns the event. Read by tests and tools through
/// Node::Counters() and Node::CountersOf(qp).
#pragma once

#include <cstdint>
#include <vector>

#include "ndksim/time.h"

namespace ndksim {

/// What one QP caused. DMA and MMIO traffic is charged to the QP it serves (WQE fetch, payload,
/// placement, CQEs of its requests); traffic with no QP (event entries, CQ arming) is only in the
/// node's counters.
struct QpCounters {
  std::uint64_t doorbells = 0;          ///< send-queue doorbells that reached the NIC
  std::uint64_t mmio_writes = 0;        ///< send-queue doorbell MMIO writes (with the WQE when written through)
  std::uint64_t mmio_write_bytes = 0;   ///< bytes of those MMIO writes
  std::uint64_t wqes_fetched = 0;       ///< WQEs read from the host ring by DMA
  std::uint64_t wqes_by_mmio = 0;       ///< WQEs that arrived with their doorbell, not fetched
  std::uint64_t wqes_executed = 0;      ///< send-queue WQEs the requester executed
  std::uint64_t dma_reads = 0;          ///< DMA read operations (each may be several PCIe requests)
  std::uint64_t dma_read_bytes = 0;     ///< bytes those DMA reads moved
  std::uint64_t dma_writes = 0;         ///< DMA write operations (payload placements, CQEs)
  std::uint64_t dma_write_bytes = 0;    ///< bytes those DMA writes moved
  std::uint64_t packets_sent = 0;       ///< packets the port sent from this QP
  std::uint64_t packets_received = 0;   ///< packets the port received for this QP
  std::uint64_t bytes_sent = 0;         ///< payload bytes
  std::uint64_t bytes_received = 0;     ///< payload bytes
  std::uint64_t fence_stalls = 0;       ///< read-fenced WQEs that had to wait for earlier reads (each once)
  std::uint64_t completions = 0;        ///< CQEs of this QP written to host memory (send and receive side)
  std::uint64_t requests_completed = 0; ///< send-queue requests retired, signaled or not, in any status
  std::uint64_t retransmissions = 0;    ///< resends: after a sequence NAK, an ACK timeout or a read-response gap
};

/// What happened to one CQ (Node::CqCountersOf). A CQ overruns at most once: the CQE that finds
/// it full is lost, the CQ takes no more, and its QPs fail (docs/conformance.md).
struct CqCounters {
  std::uint64_t cqes_written = 0;   ///< CQEs written to the CQ's memory
  std::uint64_t overruns = 0;       ///< 1 once a CQE found the CQ full (or a fault rule said so)
  std::uint64_t cqes_lost = 0;      ///< CQEs that found the CQ dead (overrun or a NIC failure), the overrunning one included
  std::uint64_t notifications = 0;  ///< arms that were satisfied: notifications raised
  std::uint32_t depth = 0;          ///< entries, as the NIC sees them (the consumer's depth, rounded to a power of two)
};

/// The whole NIC. Doorbells and MMIO writes include receive-queue and CQ-arm doorbells, which no
/// QP's counters hold.
struct NicCounters {
  std::uint64_t doorbells = 0;          ///< doorbells that reached the NIC (send queue, receive queue, CQ arm)
  std::uint64_t mmio_writes = 0;        ///< doorbell MMIO writes (with the WQE when written through)
  std::uint64_t mmio_write_bytes = 0;   ///< bytes of those MMIO writes
  std::uint64_t wqes_fetched = 0;       ///< WQEs read from the host rings by DMA
  std::uint64_t wqe_fetch_reads = 0;      ///< DMA reads that fetched WQEs (one may bring several)
  std::uint64_t wqes_by_mmio = 0;       ///< WQEs that arrived with their doorbell, not fetched
  std::uint64_t wqes_executed = 0;      ///< send-queue WQEs the requester executed
  std::uint64_t packets_sent = 0;       ///< packets the port sent
  std::uint64_t packets_received = 0;   ///< packets the port received
  std::uint64_t bytes_sent = 0;         ///< payload bytes
  std::uint64_t bytes_received = 0;     ///< payload bytes
  std::uint64_t dma_reads = 0;          ///< DMA read operations
  std::uint64_t dma_read_requests = 0;  ///< PCIe read requests (MRRS-sized pieces of the reads)
  std::uint64_t dma_read_bytes = 0;     ///< bytes those DMA reads moved
  std::uint64_t dma_writes = 0;         ///< DMA write operations (payload placements, CQEs, event entries)
  std::uint64_t dma_write_bytes = 0;    ///< bytes those DMA writes moved
  std::uint64_t payload_read_bytes = 0;   ///< message data read from host memory (sends, writes, read responses)
  std::uint64_t payload_write_bytes = 0;  ///< message data placed in host memory (receives, inbound writes, reads)
  std::uint64_t pcie_to_nic_bytes = 0;    ///< on the link towards the NIC: MMIO writes, read completions (TLP headers included)
  std::uint64_t pcie_to_host_bytes = 0;   ///< towards the host: read requests, DMA writes (TLP headers included)
  std::uint64_t read_tag_stalls = 0;    ///< read requests that waited for a free tag
  std::uint64_t qp_context_hits = 0;    ///< QP-context lookups the on-chip cache answered
  std::uint64_t qp_context_misses = 0;  ///< ... that read the context from host memory first
  std::uint64_t mpt_hits = 0;           ///< memory-key entry lookups the translation cache answered
  std::uint64_t mpt_misses = 0;         ///< ... that read the entry from host memory first
  std::uint64_t mtt_hits = 0;           ///< page-translation line lookups (8 pages a line)
  std::uint64_t mtt_misses = 0;         ///< ... that read the line from host memory first
  std::uint64_t cqes_written = 0;       ///< CQEs written to host memory
  std::uint64_t requests_completed = 0;   ///< send-queue requests retired, signaled or not, in any status
  std::uint64_t cq_overruns = 0;        ///< CQs that overran (each once: an overrun CQ takes no more)
  std::uint64_t interrupts = 0;         ///< interrupts raised to the host
  std::uint64_t naks_sent = 0;          ///< NAKs the responder sent (RNR NAKs included)
  std::uint64_t rnr_naks_sent = 0;      ///< receiver-not-ready NAKs the responder sent
  std::uint64_t retransmissions = 0;    ///< resends: after a sequence NAK, an ACK timeout or a read-response gap
  std::uint64_t fence_stalls = 0;       ///< read-fenced WQEs that had to wait for earlier reads (each once)
  std::uint64_t protection_faults = 0;  ///< accesses a key, rights or range check refused (local or remote)
  std::uint64_t icrc_errors = 0;        ///< packets discarded because a bit flipped on the wire
  std::uint64_t faults_injected = 0;    ///< fault rules that acted at this node's hook points
};

/// How long each shared resource of one NIC has been taken, in simulated time, since the node was
/// made (Node::Busy). What was booked for the future is counted: read once the fabric is idle, the
/// figures are exact. A resource busy for nearly all of a stretch is what bounded the rate then.
struct NicBusy {
  Duration pcie_to_nic;       ///< the link towards the NIC: MMIO writes and read completions
  Duration mmio;              ///< ... the part of it that MMIO writes took
  Duration pcie_to_host;      ///< towards the host: read requests and DMA writes
  Duration write_engine;      ///< the DMA write engine's TLP issue (pcie_write_tlp_interval)
  Duration read_tags;         ///< summed over the read tags: time each held an outstanding read
  std::uint32_t read_tag_count = 0;  ///< the link's read tags (read_tags sums over them)
  Duration transmit;          ///< the port's transmitter: packets serialized onto the wire
  Duration receive;           ///< the receive pipeline's intake (receive_packet_interval)
  std::vector<Duration> processing_units;  ///< each unit's booked work, in unit order
};

}  // namespace ndksim
