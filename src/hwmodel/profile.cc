// SPDX-License-Identifier: MIT
// Hardware profile presets and their validation.
#include "ndksim/profile.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "ndksim/limits.h"

namespace ndksim {

std::string_view Name(Transport t) {
  switch (t) {
    case Transport::kRoCEv2: return "RoCEv2";
    case Transport::kIWarp: return "iWARP";
    case Transport::kInfiniBand: return "InfiniBand";
  }
  return "?";
}

std::vector<std::string> Validate(const HardwareProfile& p) {
  std::vector<std::string> errors;
  auto require = [&](bool ok, std::string_view field, std::string_view rule) {
    if (!ok) errors.push_back(fmt::format("{}: {}", field, rule));
  };
  const Duration zero = Duration::zero();
  require(!p.name.empty(), "name", "must not be empty");
  require(p.transport <= Transport::kInfiniBand, "transport", "must be RoCEv2, iWARP or InfiniBand");
  require(p.remote_access_error <= RemoteAccessErrorStatus::kRemoteResources, "remote_access_error",
          "must be kAccessViolation or kRemoteResources");
  require(p.pcie_mmio_write_latency >= zero, "pcie_mmio_write_latency", "must not be negative");
  require(p.pcie_dma_read_latency >= zero, "pcie_dma_read_latency", "must not be negative");
  require(p.pcie_dma_write_latency >= zero, "pcie_dma_write_latency", "must not be negative");
  require(p.pcie_bandwidth.bits_per_second >= 0, "pcie_bandwidth", "must not be negative (0 = unlimited)");
  auto power_of_two_in = [](std::uint32_t v, std::uint32_t lo, std::uint32_t hi) {
    return v >= lo && v <= hi && (v & (v - 1)) == 0;
  };
  require(power_of_two_in(p.pcie_max_payload_bytes, 128, 4096), "pcie_max_payload_bytes",
          "must be 128, 256, 512, 1024, 2048 or 4096 (PCIe MPS)");
  require(power_of_two_in(p.pcie_max_read_request_bytes, 128, 4096), "pcie_max_read_request_bytes",
          "must be 128, 256, 512, 1024, 2048 or 4096 (PCIe MRRS)");
  require(p.pcie_read_tags >= 1 && p.pcie_read_tags <= 1024, "pcie_read_tags", "must be 1..1024");
  require(p.pcie_read_line_interval >= zero, "pcie_read_line_interval", "must not be negative");
  require(p.wqe_by_mmio_bytes % 64 == 0 && p.wqe_by_mmio_bytes <= 1024, "wqe_by_mmio_bytes",
          "must be a multiple of 64 B up to 1024 (0 = doorbells only)");
  require(p.host_cores >= 1 && p.host_cores <= 4096, "host_cores", "must be 1..4096");
  require(p.host_post >= zero, "host_post", "must not be negative");
  require(p.host_wqe_block >= zero, "host_wqe_block", "must not be negative");
  require(p.host_doorbell_record >= zero, "host_doorbell_record", "must not be negative");
  require(p.host_mmio_store >= zero, "host_mmio_store", "must not be negative");
  require(p.host_mmio_flush >= zero, "host_mmio_flush", "must not be negative");
  require(p.host_cqe_poll >= zero, "host_cqe_poll", "must not be negative");
  require(p.pcie_latency_jitter >= zero, "pcie_latency_jitter", "must not be negative");
  // The jitter is bounded by 2*sqrt(3) standard deviations; a latency must stay positive.
  const Duration shortest_pcie_latency =
      std::min({p.pcie_mmio_write_latency, p.pcie_dma_read_latency, p.pcie_dma_write_latency});
  require(p.pcie_latency_jitter == zero || shortest_pcie_latency < zero ||  // a negative one is its own error
              p.pcie_latency_jitter * 4 <= shortest_pcie_latency,
          "pcie_latency_jitter", "must be at most a quarter of every PCIe latency (a latency never goes negative)");
  require(p.host_interruption_interval >= zero, "host_interruption_interval", "must not be negative (0 = none)");
  require(p.host_interruption_interval == zero ||
              (p.host_interruption_min > zero && p.host_interruption_max >= p.host_interruption_min),
          "host_interruption_min", "must be positive and at most host_interruption_max");
  require(p.host_interruption_interval <= zero || p.host_interruption_interval > p.host_interruption_max,
          "host_interruption_interval", "must be longer than host_interruption_max");
  require(p.host_interruption_shape >= 0.5 && p.host_interruption_shape <= 10, "host_interruption_shape",
          "must be 0.5..10 (Pareto shape: smaller is a heavier tail)");
  require(p.nic_clock.Megahertz() > 0, "nic_clock", "must be a positive frequency");
  require(p.processing_units >= 1 && p.processing_units <= 1024, "processing_units", "must be 1..1024");
  require(p.doorbell_processing.count >= 0, "doorbell_processing", "must not be negative");
  require(p.wqe_processing.count >= 0, "wqe_processing", "must not be negative");
  require(p.read_response_processing.count >= 0, "read_response_processing", "must not be negative");
  require(p.read_context_turnaround.count >= 0, "read_context_turnaround", "must not be negative");
  require(p.packet_processing.count >= 0, "packet_processing", "must not be negative");
  require(p.receive_packet_interval.count >= 0, "receive_packet_interval", "must not be negative (0 = no limit)");
  require(p.pcie_write_tlp_interval >= zero, "pcie_write_tlp_interval", "must not be negative (0 = no limit)");
  require(p.qp_context_cache_entries <= (1u << 20), "qp_context_cache_entries", "must be 0..1048576 (0 = every context on chip)");
  require(p.qp_context_cache_entries == 0 || (p.qp_context_cache_ways >= 1 && p.qp_context_cache_ways <= 64 &&
                                              p.qp_context_cache_entries % p.qp_context_cache_ways == 0),
          "qp_context_cache_ways", "must be 1..64 and divide qp_context_cache_entries");
  require(p.qp_context_cache_entries == 0 || (p.qp_context_bytes >= 1 && p.qp_context_bytes <= 4096),
          "qp_context_bytes", "must be 1..4096");
  require(p.mpt_cache_entries <= (1u << 20), "mpt_cache_entries", "must be 0..1048576 (0 = every entry on chip)");
  require(p.mtt_cache_entries <= (1u << 20), "mtt_cache_entries", "must be 0..1048576 (0 = every entry on chip)");
  require(p.translation_cache_ways >= 1 && p.translation_cache_ways <= 64 &&
              p.mpt_cache_entries % p.translation_cache_ways == 0 && p.mtt_cache_entries % p.translation_cache_ways == 0,
          "translation_cache_ways", "must be 1..64 and divide mpt_cache_entries and mtt_cache_entries");
  require(p.qp_transmit_buffer_bytes >= p.mtu_bytes, "qp_transmit_buffer_bytes", "must hold at least one MTU");
  require(p.link_rate.bits_per_second >= 0, "link_rate", "must not be negative (0 = unlimited)");
  require(p.port_transmit_latency >= zero, "port_transmit_latency", "must not be negative");
  require(p.port_receive_latency >= zero, "port_receive_latency", "must not be negative");
  require(p.ack_turnaround >= zero, "ack_turnaround", "must not be negative");
  require(p.propagation_delay >= zero, "propagation_delay", "must not be negative");
  require(p.switch_latency >= zero, "switch_latency", "must not be negative");
  const bool mtu_ok = p.mtu_bytes == 256 || p.mtu_bytes == 512 || p.mtu_bytes == 1024 ||
                      p.mtu_bytes == 2048 || p.mtu_bytes == 4096;
  require(mtu_ok, "mtu_bytes", "must be 256, 512, 1024, 2048 or 4096");
  require(p.ack_timeout > zero, "ack_timeout", "must be positive");
  require(p.retry_count <= limits::kMaxRetryCount, "retry_count",
          fmt::format("must be 0..{} (a 3-bit field of the QP context)", limits::kMaxRetryCount));
  require(p.rnr_delay >= zero, "rnr_delay", "must not be negative");
  require(p.rnr_retry_count <= limits::kMaxRetryCount, "rnr_retry_count",
          fmt::format("must be 0..{} (a 3-bit field of the QP context)", limits::kMaxRetryCount));
  require(p.management_latency >= zero, "management_latency", "must not be negative");
  require(p.max_registration_bytes > 0, "max_registration_bytes", "must be positive");
  require(p.max_window_bytes > 0, "max_window_bytes", "must be positive");
  require(p.frmr_page_count >= limits::kMinFastRegisterPages, "frmr_page_count",
          fmt::format("must be at least {} (NDK requirement)", limits::kMinFastRegisterPages));
  const std::string sge_range = fmt::format("must be 1..{} (a WQE's data segments)", limits::kMaxSge);
  require(p.max_initiator_sge >= 1 && p.max_initiator_sge <= limits::kMaxSge, "max_initiator_sge", sge_range);
  require(p.max_receive_sge >= 1 && p.max_receive_sge <= limits::kMaxSge, "max_receive_sge", sge_range);
  require(p.max_read_sge >= 1 && p.max_read_sge <= p.max_initiator_sge, "max_read_sge",
          "must be 1..max_initiator_sge");
  require(p.max_transfer_bytes > 0, "max_transfer_bytes", "must be positive");
  require(p.max_inline_bytes <= limits::kMaxInlineBytes, "max_inline_bytes",
          fmt::format("must be at most {}", limits::kMaxInlineBytes));
  require(p.max_inbound_read_limit >= 1 && p.max_inbound_read_limit <= limits::kMaxInboundReads,
          "max_inbound_read_limit",
          fmt::format("must be 1..{} (reads a QP's responder can queue)", limits::kMaxInboundReads));
  require(p.max_outbound_read_limit >= 1, "max_outbound_read_limit", "must be at least 1");
  require(p.max_receive_queue_depth >= 1, "max_receive_queue_depth", "must be at least 1");
  require(p.max_initiator_queue_depth >= 1, "max_initiator_queue_depth", "must be at least 1");
  require(p.max_cq_depth >= 1 && p.max_cq_depth <= limits::kMaxCqDepth, "max_cq_depth",
          fmt::format("must be 1..{}", limits::kMaxCqDepth));
  require(p.max_caller_data <= limits::kMaxPrivateData, "max_caller_data",
          fmt::format("must be at most {}", limits::kMaxPrivateData));
  require(p.max_callee_data <= limits::kMaxPrivateData, "max_callee_data",
          fmt::format("must be at most {}", limits::kMaxPrivateData));
  require(p.max_qps >= 1 && p.max_qps <= limits::kMaxQps, "max_qps",
          fmt::format("must be 1..{} (24-bit QPNs with a generation)", limits::kMaxQps));
  require(p.max_cqs >= 1 && p.max_cqs <= limits::kMaxCqs, "max_cqs",
          fmt::format("must be 1..{} (CQ and SRQ numbers)", limits::kMaxCqs));
  require(p.max_mrs >= 1 && p.max_mrs <= limits::kMaxMrs, "max_mrs",
          fmt::format("must be 1..{} (24-bit token index)", limits::kMaxMrs));
  return errors;
}

void ValidateOrThrow(const HardwareProfile& p) {
  const auto errors = Validate(p);
  if (errors.empty()) return;
  throw ConfigurationError(fmt::format("invalid hardware profile '{}': {}", p.name, fmt::join(errors, "; ")));
}

}  // namespace ndksim
