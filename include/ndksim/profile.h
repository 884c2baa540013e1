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

  // ---- PCIe link (pcie_link) ----
  // The link is two directions; each is a server with a busy-until time. Numbers are PCIe Gen3
  // x16 with 64-bit addressing (Neugebauer et al., SIGCOMM 2018, "pcie-bench").
  Duration pcie_mmio_write_latency{};  // CPU store to a doorbell register until the NIC sees it
  Duration pcie_dma_read_latency{};    // read request issued until its first completion returns; with
                                       // the TLP serialization a 64 B read takes the pcie-bench 546 ns
  Duration pcie_dma_write_latency{};   // NIC posted write until the data is visible in host memory
                                       // (pcie-bench write-then-read 770 ns minus a 546 ns read)
  BitRate pcie_bandwidth{};            // usable TLP bandwidth of one direction (Gen3 x16: 113.7 Gb/s)
  std::uint32_t pcie_max_payload_bytes = 256;       // MPS: data bytes per write TLP or read completion
  std::uint32_t pcie_max_read_request_bytes = 512;  // MRRS: a DMA read is split into requests this big
  std::uint32_t pcie_read_tags = 32;   // read requests in flight at once; more wait for a free tag
  // A WQE of at most this many bytes is written with its doorbell (BlueFlame-style MMIO) when the
  // doorbell covers exactly that one WQE, and is not fetched again by DMA. 0: doorbells only.
  std::uint32_t wqe_by_mmio_bytes = 0;

  // ---- NIC processing (processing units, requester, responder) ----
  ClockDomain nic_clock{1000};         // NIC core clock
  // Processing units: each QP is served by one unit (QPN modulo the count), so the requests of a
  // QP stay in order while several QPs run in parallel (Kalia et al., USENIX ATC 2016).
  std::uint32_t processing_units = 1;
  Cycles doorbell_processing{0};       // unit cycles per doorbell (context lookup, scheduling)
  Cycles wqe_processing{0};            // unit cycles per send-queue WQE (parse, translate, schedule)
  Cycles read_response_processing{0};  // responder unit cycles per inbound read request
  Cycles packet_processing{0};         // receive pipeline cycles per packet (checks, steering); a
                                       // latency, pipelined, not a server
  // Bytes one QP may hold in NIC buffers between its payload DMA and the wire; bounds how far the
  // requester reads ahead of transmission.
  std::uint32_t qp_transmit_buffer_bytes = 0;

  // ---- port and wire (port) ----
  BitRate link_rate{};                 // Ethernet/IB signalling rate after encoding
  Duration port_transmit_latency{};    // MAC, PCS and FEC encoder: packet handed to the port until its
                                       // first bit is on the cable
  Duration port_receive_latency{};     // PHY, FEC decoder and MAC: last bit in until the packet is
                                       // handed to the receive pipeline
  Duration propagation_delay{};        // cable, one direction
  Duration switch_latency{};           // cut-through forwarding delay when nodes meet at a switch
  std::uint32_t mtu_bytes = 4096;      // payload bytes per packet (path MTU)
  // Header + trailer + framing bytes of every packet on the wire. Transport extension headers
  // (RETH 16 B on write-first/only and read requests, AETH 4 B on ACKs and read responses, IETH
  // 4 B on send-with-invalidate) are added per packet for RoCEv2 and InfiniBand.
  std::uint32_t packet_overhead_bytes = 0;
  Duration ack_turnaround{};           // responder: data placed until its ACK is handed to the port

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
