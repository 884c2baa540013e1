// Hardware profiles: one plain parameter struct describing a simulated RNIC, with units in the
// types and a comment per field, plus named presets. Validated once, every bad field named.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ndksim/time.h"

namespace ndksim {

// The wire protocol the NIC speaks. It decides per-packet header bytes and the behaviours the NDK
// interface leaves to the transport (e.g. the status of a remote protection error).
enum class Transport : std::uint8_t { kRoCEv2, kIWarp, kInfiniBand };
std::string_view Name(Transport t);

// What the initiator's completion reports when the peer refuses a request's token, rights or range
// (ndk-reference §4.7: NDSPI tests expect ACCESS_VIOLATION, the NdkRead page REMOTE_RESOURCES).
enum class RemoteAccessErrorStatus : std::uint8_t { kAccessViolation, kRemoteResources };

struct HardwareProfile {
  std::string_view name;
  Transport transport = Transport::kRoCEv2;
  RemoteAccessErrorStatus remote_access_error = RemoteAccessErrorStatus::kAccessViolation;

  // ---- identity (NDK_ADAPTER_INFO) ----
  std::uint32_t vendor_id = 0;   // PCI vendor id / OUI reported to consumers
  std::uint32_t device_id = 0;   // vendor device id

  // ---- PCIe link ----
  Duration pcie_mmio_write_latency{};  // CPU store to doorbell register until the NIC sees it
  Duration pcie_dma_read_latency{};    // NIC read request until the first completion returns (pcie-bench: 546 ns median, 64 B, Gen3)
  Duration pcie_dma_write_latency{};   // NIC posted write until the data is visible in host memory
  BitRate pcie_bandwidth{};            // usable TLP bandwidth of the link (Gen3 x16: 113.7 Gb/s)

  // ---- NIC processing ----
  ClockDomain nic_clock{1000};         // NIC core clock
  Cycles wqe_processing{0};            // cycles a processing unit spends per WQE (parse, translate, schedule)
  Cycles packet_processing{0};         // cycles per received packet (checks, placement set-up)

  // ---- port and wire ----
  BitRate link_rate{};                 // Ethernet/IB signalling rate after encoding
  Duration propagation_delay{};        // cable and PHY, one direction
  Duration switch_latency{};           // cut-through forwarding delay when nodes meet at a switch
  std::uint32_t mtu_bytes = 4096;      // payload bytes per packet (path MTU)
  std::uint32_t packet_overhead_bytes = 0;  // header + trailer + framing bytes per packet on the wire

  // ---- reliable transport ----
  Duration ack_timeout{};              // requester retransmission timeout
  std::uint32_t retry_count = 7;       // retransmissions before IO_TIMEOUT
  Duration rnr_delay{};                // wait before resending after a receiver-not-ready NAK
  std::uint32_t rnr_retry_count = 7;   // RNR retries before IO_TIMEOUT
  Duration management_latency{};       // one connection-management datagram, end to end

  // ---- limits reported in NDK_ADAPTER_INFO ----
  std::uint64_t max_registration_bytes = 0;
  std::uint64_t max_window_bytes = 0;
  std::uint32_t frmr_page_count = 0;
  std::uint32_t max_initiator_sge = 0;
  std::uint32_t max_receive_sge = 0;
  std::uint32_t max_read_sge = 0;
  std::uint32_t max_transfer_bytes = 0;
  std::uint32_t max_inline_bytes = 0;
  std::uint32_t max_inbound_read_limit = 0;   // IRD per QP
  std::uint32_t max_outbound_read_limit = 0;  // ORD per QP
  std::uint32_t max_receive_queue_depth = 0;
  std::uint32_t max_initiator_queue_depth = 0;
  std::uint32_t max_srq_depth = 0;
  std::uint32_t max_cq_depth = 0;
  std::uint32_t large_request_threshold = 0;
  std::uint32_t max_caller_data = 0;   // private data bytes on connect
  std::uint32_t max_callee_data = 0;   // private data bytes on accept/reject
  std::uint32_t max_qps = 0;           // QP table entries in the NIC
  std::uint32_t max_cqs = 0;
  std::uint32_t max_mrs = 0;           // protection table entries

  // ---- optional capabilities (NDK_ADAPTER_INFO.AdapterFlags) ----
  // The completion engine can delay notifications (NdkControlCqInterruptModeration, ref §3.14);
  // without it the call returns STATUS_NOT_SUPPORTED and the adapter flag is clear.
  bool cq_interrupt_moderation = true;
  // RDMA read destinations need NDK_MR_FLAG_RDMA_READ_SINK / NDK_OP_FLAG_RDMA_READ_SINK (ref §1.7,
  // §3.3). iWARP RNICs need it (the sink is an STag advertised to the peer); IB/RoCE do not, and
  // then report NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED.
  bool read_sink_required = false;
  // Honours NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE and reports
  // NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED (ref §1.4, §1.7).
  bool read_local_invalidate = true;
};

// Every problem found in `p`, one message per bad field naming it; empty when valid.
std::vector<std::string> Validate(const HardwareProfile& p);

// Thrown by constructors given a bad configuration (error kind 2 of DESIGN.md).
class ConfigurationError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Validates and throws ConfigurationError listing every bad field.
void ValidateOrThrow(const HardwareProfile& p);

namespace profiles {

// A ConnectX-class 100 GbE RoCEv2 RNIC on PCIe Gen3 x16 (the default).
extern const HardwareProfile kConnectX100GbeRoce;
// An iWARP personality of the same NIC: read sinks need the READ_SINK right (ref §1.7) and
// reads cannot invalidate locally.
extern const HardwareProfile kIWarp;
// Zero-delay functional model: every block completes at once; for fast unit tests.
extern const HardwareProfile kFunctional;

}  // namespace profiles

}  // namespace ndksim
