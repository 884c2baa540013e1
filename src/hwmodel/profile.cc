// Hardware profile presets and their validation.
#include "ndksim/profile.h"

#include <fmt/format.h>

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
  require(p.wqe_by_mmio_bytes % 64 == 0 && p.wqe_by_mmio_bytes <= 1024, "wqe_by_mmio_bytes",
          "must be a multiple of 64 B up to 1024 (0 = doorbells only)");
  require(p.nic_clock.Megahertz() > 0, "nic_clock", "must be a positive frequency");
  require(p.processing_units >= 1 && p.processing_units <= 1024, "processing_units", "must be 1..1024");
  require(p.doorbell_processing.count >= 0, "doorbell_processing", "must not be negative");
  require(p.wqe_processing.count >= 0, "wqe_processing", "must not be negative");
  require(p.read_response_processing.count >= 0, "read_response_processing", "must not be negative");
  require(p.packet_processing.count >= 0, "packet_processing", "must not be negative");
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
  require(p.rnr_delay >= zero, "rnr_delay", "must not be negative");
  require(p.management_latency >= zero, "management_latency", "must not be negative");
  require(p.max_registration_bytes > 0, "max_registration_bytes", "must be positive");
  require(p.max_window_bytes > 0, "max_window_bytes", "must be positive");
  require(p.frmr_page_count >= 16, "frmr_page_count", "must be at least 16 (NDK requirement)");
  require(p.max_initiator_sge >= 1 && p.max_initiator_sge <= 62, "max_initiator_sge", "must be 1..62");
  require(p.max_receive_sge >= 1 && p.max_receive_sge <= 64, "max_receive_sge", "must be 1..64");
  require(p.max_read_sge >= 1 && p.max_read_sge <= p.max_initiator_sge, "max_read_sge",
          "must be 1..max_initiator_sge");
  require(p.max_transfer_bytes > 0, "max_transfer_bytes", "must be positive");
  require(p.max_inline_bytes <= 1024, "max_inline_bytes", "must be at most 1024");
  require(p.max_inbound_read_limit >= 1, "max_inbound_read_limit", "must be at least 1");
  require(p.max_outbound_read_limit >= 1, "max_outbound_read_limit", "must be at least 1");
  require(p.max_receive_queue_depth >= 1, "max_receive_queue_depth", "must be at least 1");
  require(p.max_initiator_queue_depth >= 1, "max_initiator_queue_depth", "must be at least 1");
  require(p.max_cq_depth >= 1 && p.max_cq_depth <= (1u << 24), "max_cq_depth", "must be 1..2^24");
  require(p.max_caller_data <= 512, "max_caller_data", "must be at most 512");
  require(p.max_callee_data <= 512, "max_callee_data", "must be at most 512");
  require(p.max_qps >= 1 && p.max_qps < (1u << 23), "max_qps", "must be 1..2^23-1 (24-bit QPNs)");
  require(p.max_cqs >= 1, "max_cqs", "must be at least 1");
  require(p.max_mrs >= 1 && p.max_mrs < (1u << 24), "max_mrs", "must be 1..2^24-1 (24-bit token index)");
  return errors;
}

void ValidateOrThrow(const HardwareProfile& p) {
  const auto errors = Validate(p);
  if (errors.empty()) return;
  throw ConfigurationError(fmt::format("invalid hardware profile '{}': {}", p.name, fmt::join(errors, "; ")));
}

namespace profiles {

namespace {
// Limits shared by the presets: what a current 100 GbE RNIC reports through NDK_ADAPTER_INFO.
constexpr HardwareProfile WithRnicLimits(HardwareProfile p) {
  p.max_registration_bytes = std::uint64_t{1} << 40;
  p.max_window_bytes = std::uint64_t{1} << 40;
  p.frmr_page_count = 256;
  p.max_initiator_sge = 30;
  p.max_receive_sge = 30;
  p.max_read_sge = 30;
  p.max_transfer_bytes = 1u << 30;
  p.max_inline_bytes = 256;
  p.max_inbound_read_limit = 16;
  p.max_outbound_read_limit = 16;
  p.max_receive_queue_depth = 16384;
  p.max_initiator_queue_depth = 16384;
  p.max_srq_depth = 32768;
  p.max_cq_depth = 1u << 20;
  p.large_request_threshold = 8192;
  p.max_caller_data = 56;
  p.max_callee_data = 148;
  p.max_qps = 1u << 17;
  p.max_cqs = 1u << 16;
  p.max_mrs = 1u << 20;
  return p;
}

constexpr HardwareProfile MakeConnectX() {
  HardwareProfile p;
  p.name = "connectx-100g-roce";
  p.transport = Transport::kRoCEv2;
  p.remote_access_error = RemoteAccessErrorStatus::kAccessViolation;
  p.vendor_id = 0x02c9;   // Mellanox/NVIDIA
  p.device_id = 0x1017;   // ConnectX-5
  // PCIe Gen3 x16. A 64 B read: 24 B request TLP + 538 ns + 84 B completion = 546 ns (pcie-bench).
  p.pcie_mmio_write_latency = Nanoseconds(200);
  p.pcie_dma_read_latency = Nanoseconds(538);
  p.pcie_dma_write_latency = Nanoseconds(200);
  p.pcie_bandwidth = MegabitsPerSecond(113'700);  // Gen3 x16 usable TLP bandwidth (pcie-bench)
  p.pcie_max_payload_bytes = 256;
  p.pcie_max_read_request_bytes = 512;
  p.pcie_read_tags = 32;        // 32 x 512 B in flight covers the link's bandwidth-delay product
  p.wqe_by_mmio_bytes = 256;    // mlx5 BlueFlame: a 256 B write-combining buffer per doorbell page
  p.nic_clock = ClockDomain(1000);
  p.processing_units = 16;
  // Fitted: a single QP posting 8 B inline writes in lists of 128 reaches ~7.5 Mpps (perftest
  // issue 273), i.e. ~132 cycles per WQE, and a doorbell per 2 KiB write still fills the wire.
  p.doorbell_processing = Cycles{30};
  p.wqe_processing = Cycles{132};
  // Fitted: ib_read_bw on one QP is flat at ~2.5 Mpps for 2-128 B (openucx/ucx issue 8851).
  p.read_response_processing = Cycles{400};
  p.packet_processing = Cycles{40};
  p.qp_transmit_buffer_bytes = 64 * 1024;
  p.link_rate = GigabitsPerSecond(100);
  // Fitted with the stages above to the 0.83 us one-way latency of a 32 B send (Potter): MAC,
  // PCS and RS-FEC on each side.
  p.port_transmit_latency = Nanoseconds(100);
  p.port_receive_latency = Nanoseconds(95);
  p.propagation_delay = Nanoseconds(5);  // 1 m of cable
  p.switch_latency = Nanoseconds(300);
  p.mtu_bytes = 4096;
  // preamble+SFD 8, IFG 12, Ethernet 14, FCS 4, IPv4 20, UDP 8, BTH 12, ICRC 4
  p.packet_overhead_bytes = 82;
  p.ack_turnaround = Nanoseconds(20);
  p.ack_timeout = Microseconds(500);
  p.retry_count = 7;
  p.rnr_delay = Microseconds(10);
  p.rnr_retry_count = 7;
  p.management_latency = Microseconds(20);
  return WithRnicLimits(p);
}

constexpr HardwareProfile MakeIWarp() {
  HardwareProfile p = MakeConnectX();
  p.name = "iwarp";
  p.transport = Transport::kIWarp;
  p.vendor_id = 0x1425;  // Chelsio
  p.device_id = 0x6408;  // T6
  // An iWARP responder reports a bad STag or range with a TERMINATE carrying a remote operation
  // error; the initiator sees the request fail at the remote end (ref §4.7, NdkRead page).
  p.remote_access_error = RemoteAccessErrorStatus::kRemoteResources;
  p.read_sink_required = true;       // ref §1.7: the read sink is an STag the peer writes into
  p.read_local_invalidate = false;
  // preamble+SFD 8, IFG 12, Ethernet 14, FCS 4, IPv4 20, TCP 20 + timestamps 12, MPA 2 + CRC 4,
  // DDP/RDMAP tagged header 14
  p.packet_overhead_bytes = 110;
  // TCP, MPA marker/CRC and DDP checks in the offload engine's receive pipeline. Not calibrated:
  // it keeps a 32 B send just under a microsecond, as Chelsio's T6 "sub-us" claim has it.
  p.packet_processing = Cycles{100};
  return p;
}

constexpr HardwareProfile MakeFunctional() {
  HardwareProfile p = MakeConnectX();
  p.name = "functional";
  p.pcie_mmio_write_latency = Duration::zero();
  p.pcie_dma_read_latency = Duration::zero();
  p.pcie_dma_write_latency = Duration::zero();
  p.pcie_bandwidth = BitRate{0};
  p.processing_units = 1;
  p.doorbell_processing = Cycles{0};
  p.wqe_processing = Cycles{0};
  p.read_response_processing = Cycles{0};
  p.packet_processing = Cycles{0};
  p.link_rate = BitRate{0};
  p.port_transmit_latency = Duration::zero();
  p.port_receive_latency = Duration::zero();
  p.ack_turnaround = Duration::zero();
  p.propagation_delay = Duration::zero();
  p.switch_latency = Duration::zero();
  p.rnr_delay = Nanoseconds(1);
  p.management_latency = Duration::zero();
  return p;
}
}  // namespace

const HardwareProfile kConnectX100GbeRoce = MakeConnectX();
const HardwareProfile kIWarp = MakeIWarp();
const HardwareProfile kFunctional = MakeFunctional();

}  // namespace profiles
}  // namespace ndksim
