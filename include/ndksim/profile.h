// SPDX-License-Identifier: MIT
/// @file
/// Hardware profiles: one plain parameter struct describing a simulated RNIC, with units in the
/// types and a comment per field, plus named presets. Validated once, every bad field named.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ndksim/time.h"

namespace ndksim {

/// The wire protocol the NIC speaks. It decides per-packet header bytes and the behaviours the NDK
/// interface leaves to the transport (e.g. the status of a remote protection error).
enum class Transport : std::uint8_t {
  kRoCEv2,     ///< RoCE v2: the InfiniBand transport over UDP and IP on Ethernet
  kIWarp,      ///< iWARP: RDMAP, DDP and MPA over TCP
  kInfiniBand  ///< InfiniBand links
};
/// The name of `t`: "RoCEv2", "iWARP" or "InfiniBand".
std::string_view Name(Transport t);

/// What the initiator's completion reports when the peer refuses a request's token, rights or range
/// (the public sources disagree: the user-mode NetworkDirect tests expect ACCESS_VIOLATION, the
/// NdkRead page names REMOTE_RESOURCES).
enum class RemoteAccessErrorStatus : std::uint8_t {
  kAccessViolation,  ///< STATUS_ACCESS_VIOLATION
  kRemoteResources   ///< STATUS_REMOTE_RESOURCES
};

/// IBTA's Local ACK Timeout: a QP's timeout attribute `exponent` (0..31) means 4.096 us x 2^exponent.
constexpr Duration LocalAckTimeout(unsigned exponent) { return Nanoseconds(4096) * (std::int64_t{1} << exponent); }

/// A simulated RNIC: every parameter of the hardware model, grouped by the block it belongs to.
/// The presets are in ndksim::profiles; Validate names every bad field.
struct HardwareProfile {
  std::string_view name;                     ///< the profile's name, e.g. "connectx-100g-roce"
  Transport transport = Transport::kRoCEv2;  ///< the wire protocol
  /// The status of a completion the peer refused for its token, rights or range.
  RemoteAccessErrorStatus remote_access_error = RemoteAccessErrorStatus::kAccessViolation;
  /// The timing model's noise sources (the "noise" section below) are on: latencies have a spread
  /// and a tail. False: the same work always takes the same time.
  bool noise = true;

  /// @name identity (NDK_ADAPTER_INFO)
  ///@{
  std::uint32_t vendor_id = 0;   ///< PCI vendor id / OUI reported to consumers
  std::uint32_t device_id = 0;   ///< vendor device id
  ///@}

  /// @name PCIe link (pcie_link)
  /// The link is two directions, each a timeline of booked transfers. Numbers are PCIe Gen3
  /// x16 with 64-bit addressing (Neugebauer et al., SIGCOMM 2018, "pcie-bench").
  ///@{
  Duration pcie_mmio_write_latency{};  ///< CPU store to a doorbell register until the NIC sees it
  Duration pcie_dma_read_latency{};    ///< read request issued until its first completion returns; with
                                       ///< the TLP serialization a 64 B read takes the pcie-bench 546 ns
  Duration pcie_dma_write_latency{};   ///< NIC posted write until the data is visible in host memory
                                       ///< (pcie-bench write-then-read 770 ns minus a 546 ns read)
  BitRate pcie_bandwidth{};            ///< usable TLP bandwidth of one direction (Gen3 x16: 113.7 Gb/s)
  std::uint32_t pcie_max_payload_bytes = 256;       ///< MPS: data bytes per write TLP or read completion
  std::uint32_t pcie_max_read_request_bytes = 512;  ///< MRRS: a DMA read is split into requests this big
  std::uint32_t pcie_read_tags = 32;   ///< read requests in flight at once; more wait for a free tag
  /// The host returns a read request's data one 64-B line at a time, this far apart: it reads each
  /// line from its memory system in turn. So a request's latency grows with its size faster than
  /// the link's rate, while several requests stream in parallel and the link stays the limit of
  /// the total. 0: a request's data is ready all at once.
  Duration pcie_read_line_interval{};
  /// The NIC's DMA write engine issues one posted write TLP per this interval at most, so a stream
  /// of small writes (payload placements, CQEs) is bound by its TLP rate before the link's
  /// bandwidth. 0: only the bandwidth limits writes.
  Duration pcie_write_tlp_interval{};
  /// A WQE of at most this many bytes is written with its doorbell (BlueFlame-style MMIO) when the
  /// doorbell covers exactly that one WQE, and is not fetched again by DMA. 0: doorbells only.
  std::uint32_t wqe_by_mmio_bytes = 0;
  ///@}

  /// @name host CPU (host_cpu)
  ///@{

  /// Each node has this many cores, each a timeline of simulated time. What the driver does for a
  /// consumer thread costs time on that thread's core (include/ndksim/host_cpu.h), so a thread's
  /// posting rate is bounded by these costs and several cores add up. All zero: posting is free.
  std::uint32_t host_cores = 1;
  Duration host_post{};             ///< one posting call: checks, the WQE's control and address
                                    ///< segments, the request context (the first 64-B block)
  Duration host_wqe_block{};        ///< each further 64-B block of a WQE (data segments, inline bytes)
  Duration host_doorbell_record{};  ///< the release store of the queue's producer index
  Duration host_mmio_store{};       ///< one 64-B line of write-combining stores to the doorbell page
                                    ///< (a doorbell is one line; a WQE written through it, one a line)
  Duration host_mmio_flush{};       ///< the store fence after an MMIO write: the core waits while the
                                    ///< write-combining buffer drains towards PCIe
  Duration host_cqe_poll{};         ///< taking one CQE: reading the line the NIC wrote, converting it
  ///@}

  /// @name noise: the spread and the tail of latencies (pcie_link, host_cpu)
  /// Seeded sources of variation, each a stream of draws fixed by the fabric's seed, so the same
  /// seed and the same calls still give the same times. With `noise` off (the switch, at the top of
  /// the profile), or these fields zero, the same work always takes the same time.
  ///@{

  /// Standard deviation of each PCIe transaction's latency (a read request's, a posted write's, an
  /// MMIO write's): the root complex and the memory system do not answer in constant time.
  Duration pcie_latency_jitter{};
  /// Each core is taken away now and then (timer ticks, other interrupts, SMIs) for a while: the
  /// interruptions arrive at random (a Poisson process of this mean interval, in simulated time)
  /// and last a heavy-tailed time (Pareto of this shape from the minimum, cut at the maximum).
  /// Work that would start, or is in progress, when one strikes waits until it is over.
  Duration host_interruption_interval{};
  Duration host_interruption_min{};       ///< the shortest interruption, where the Pareto tail starts
  Duration host_interruption_max{};       ///< the longest interruption, where the tail is cut
  double host_interruption_shape = 1.5;   ///< the Pareto tail's shape
  ///@}

  /// @name NIC processing (processing units, requester, responder)
  ///@{
  ClockDomain nic_clock{1000};         ///< NIC core clock
  /// Processing units: each QP is served by one unit (QPN modulo the count), so the requests of a
  /// QP stay in order while several QPs run in parallel (Kalia et al., USENIX ATC 2016).
  std::uint32_t processing_units = 1;
  Cycles doorbell_processing{0};       ///< unit cycles per doorbell (context lookup, scheduling)
  Cycles wqe_processing{0};            ///< unit cycles per send-queue WQE (parse, translate, schedule)
  Cycles read_response_processing{0};  ///< responder unit cycles per inbound read request (its
                                       ///< checks and translation: on the read's latency path)
  /// A QP's inbound reads pass through its read context one at a time: it takes the next read
  /// this many cycles after it took the last, so one QP serves at most nic_clock / this reads a
  /// second, while other QPs' reads go on in parallel. Not on a lone read's latency path.
  Cycles read_context_turnaround{0};
  Cycles packet_processing{0};         ///< receive pipeline cycles per packet (checks, steering); a
                                       ///< latency, pipelined, not a server
  /// The receive pipeline takes in one packet per this many cycles at most: the NIC-wide rate of
  /// inbound packets. 0: no limit.
  Cycles receive_packet_interval{0};
  /// The QP-context cache (context_cache): the contexts of this many QPs are on chip, in sets of
  /// qp_context_cache_ways chosen by a hash of the QPN; a miss replaces the least recently used
  /// context of its set. Work for a QP whose context is not there waits for a DMA read of
  /// qp_context_bytes (its processing unit serves other QPs meanwhile; an arriving packet waits in
  /// the receive pipeline while other QPs' packets go on). 0 entries: every context is on chip.
  std::uint32_t qp_context_cache_entries = 0;
  std::uint32_t qp_context_cache_ways = 1;    ///< the QP-context cache's ways per set
  std::uint32_t qp_context_bytes = 256;       ///< bytes a QP-context miss reads from host memory
  /// The translation caches (translation): memory-key entries (MPT, one per key) and page
  /// translations (MTT, one 64-B line per 8 pages of 4 KiB), in sets of translation_cache_ways. An
  /// inbound write's placement and an inbound read's set-up wait for a key and pages not on chip
  /// (one 64-B read each). 0 entries: every entry is on chip.
  std::uint32_t mpt_cache_entries = 0;
  std::uint32_t mtt_cache_entries = 0;        ///< MTT lines the translation cache holds on chip
  std::uint32_t translation_cache_ways = 1;   ///< the translation caches' ways per set
  /// Bytes one QP may hold in NIC buffers between its payload DMA and the wire; bounds how far the
  /// requester reads ahead of transmission.
  std::uint32_t qp_transmit_buffer_bytes = 0;
  ///@}

  /// @name port and wire (port)
  ///@{
  BitRate link_rate{};                 ///< Ethernet/IB signalling rate after encoding
  Duration port_transmit_latency{};    ///< MAC, PCS and FEC encoder: packet handed to the port until its
                                       ///< first bit is on the cable
  Duration port_receive_latency{};     ///< PHY, FEC decoder and MAC: last bit in until the packet is
                                       ///< handed to the receive pipeline
  Duration propagation_delay{};        ///< cable, one direction
  Duration switch_latency{};           ///< cut-through forwarding delay when nodes meet at a switch
  std::uint32_t mtu_bytes = 4096;      ///< payload bytes per packet (path MTU)
  /// Header + trailer + framing bytes of every packet on the wire. Transport extension headers
  /// (RETH 16 B on write-first/only and read requests, AETH 4 B on ACKs and read responses, IETH
  /// 4 B on send-with-invalidate) are added per packet for RoCEv2 and InfiniBand.
  std::uint32_t packet_overhead_bytes = 0;
  Duration ack_turnaround{};           ///< responder: data placed until its ACK is handed to the port
  ///@}

  /// @name reliable transport
  ///@{
  Duration ack_timeout{};              ///< requester retransmission timeout
  std::uint32_t retry_count = 7;       ///< retransmissions before IO_TIMEOUT
  Duration rnr_delay{};                ///< wait before resending after a receiver-not-ready NAK
  std::uint32_t rnr_retry_count = 7;   ///< RNR retries before IO_TIMEOUT
  Duration management_latency{};       ///< one connection-management datagram, end to end
  ///@}

  /// @name limits reported in NDK_ADAPTER_INFO
  ///@{
  std::uint64_t max_registration_bytes = 0;     ///< MaxRegistrationSize
  std::uint64_t max_window_bytes = 0;           ///< MaxWindowSize
  std::uint32_t frmr_page_count = 0;            ///< FRMRPageCount
  std::uint32_t max_initiator_sge = 0;          ///< MaxInitiatorRequestSge
  std::uint32_t max_receive_sge = 0;            ///< MaxReceiveRequestSge
  std::uint32_t max_read_sge = 0;               ///< MaxReadRequestSge
  std::uint32_t max_transfer_bytes = 0;         ///< MaxTransferLength
  std::uint32_t max_inline_bytes = 0;           ///< MaxInlineDataSize
  std::uint32_t max_inbound_read_limit = 0;     ///< IRD per QP
  std::uint32_t max_outbound_read_limit = 0;    ///< ORD per QP
  std::uint32_t max_receive_queue_depth = 0;    ///< MaxReceiveQueueDepth
  std::uint32_t max_initiator_queue_depth = 0;  ///< MaxInitiatorQueueDepth
  std::uint32_t max_srq_depth = 0;              ///< MaxSrqDepth
  std::uint32_t max_cq_depth = 0;               ///< MaxCqDepth
  std::uint32_t large_request_threshold = 0;    ///< LargeRequestThreshold
  std::uint32_t max_caller_data = 0;            ///< private data bytes on connect
  std::uint32_t max_callee_data = 0;            ///< private data bytes on accept/reject
  std::uint32_t max_qps = 0;                    ///< QP table entries in the NIC
  std::uint32_t max_cqs = 0;                    ///< CQ table entries in the NIC (SRQs get as many)
  std::uint32_t max_mrs = 0;                    ///< protection table entries
  ///@}

  /// @name optional capabilities (NDK_ADAPTER_INFO.AdapterFlags)
  ///@{

  /// The completion engine can delay notifications (NdkControlCqInterruptModeration);
  /// without it the call returns STATUS_NOT_SUPPORTED and the adapter flag is clear.
  bool cq_interrupt_moderation = true;
  /// RDMA read destinations need NDK_MR_FLAG_RDMA_READ_SINK / NDK_OP_FLAG_RDMA_READ_SINK. iWARP
  /// RNICs need it (the sink is an STag advertised to the peer); IB/RoCE do not, and then report
  /// NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED.
  bool read_sink_required = false;
  /// Honours NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE and reports
  /// NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED; without it the op flag is ignored.
  bool read_local_invalidate = true;
  /// Each NdkFastRegister gives the MR a new key byte, so the token changes at every registration
  /// and a stale token from an earlier registration can never reach the new one (as RNICs that
  /// rotate keys do). Off by default: the token read after NdkInitializeFastRegisterMr stays the
  /// MR's token across fast-register and invalidate cycles, which consumers cache.
  bool rotate_fast_register_keys = false;
  ///@}
};

/// Every problem found in `p`, one message per bad field naming it; empty when valid.
std::vector<std::string> Validate(const HardwareProfile& p);

/// Thrown by constructors given a bad configuration (error kind 2 in docs/architecture.md).
class ConfigurationError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Validates and throws ConfigurationError listing every bad field.
void ValidateOrThrow(const HardwareProfile& p);

/// The presets. Each number says where it comes from; docs/model.md says which were fitted.
namespace profiles {

namespace detail {
/// Limits shared by the presets: what a current 100 GbE RNIC reports through NDK_ADAPTER_INFO.
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
  // Fitted to pcie-bench's read latencies against size, one request each (128 B 573, 256 B 626,
  // 512 B 706 ns: a least-squares line through them from the 64-B point).
  p.pcie_read_line_interval = Picoseconds(23'500);
  p.wqe_by_mmio_bytes = 256;    // mlx5 BlueFlame: a 256 B write-combining buffer per doorbell page
  // The host: a two-socket server's cores. host_post and host_mmio_flush are fitted to one core's
  // request rates on Kalia et al.'s sequencer (USENIX ATC 2016; no newer measurement isolates
  // them): 7.0 M/s with a doorbell per request and 27.4 M/s with doorbells batched over several
  // QPs, so a doorbell's MMIO costs the core about 105 ns and the rest of a post about 30 ns.
  p.host_cores = 32;
  p.host_post = Nanoseconds(30);
  p.host_wqe_block = Nanoseconds(1);        // a 64-B WQE store with its index release, same core:
  p.host_doorbell_record = Nanoseconds(1);  // about 1 ns (calibration.md), counted for each
  p.host_mmio_store = Nanoseconds(5);       // an estimate: no published figure isolates it
  p.host_mmio_flush = Nanoseconds(100);
  p.host_cqe_poll = Nanoseconds(10);        // an estimate: a last-level cache hit on the CQE's line
  // Noise. pcie-bench's 64-B DMA reads spread from ~510 to ~580 ns around their 546-ns median
  // (p99.9): a standard deviation of about 11 ns. The interruptions are fitted to the p99.9 and
  // max of ConnectX-5 RoCE 8-B ib_write_lat/ib_send_lat (calibration.md, Model v2): about a
  // thousand a second per core (as a 1-kHz timer tick would), most under a microsecond and none
  // over 6.5 us.
  p.noise = true;
  p.pcie_latency_jitter = Nanoseconds(11);
  p.host_interruption_interval = Microseconds(1000);
  p.host_interruption_min = Nanoseconds(500);
  p.host_interruption_max = Nanoseconds(6500);
  p.host_interruption_shape = 1.3;
  p.nic_clock = ClockDomain(1000);
  p.processing_units = 16;
  // Fitted: a single QP posting 8 B inline writes in lists of 128 reaches ~7.5 Mpps (perftest
  // issue 273), i.e. ~132 cycles per WQE, and a doorbell per 2 KiB write still fills the wire.
  p.doorbell_processing = Cycles{30};
  p.wqe_processing = Cycles{132};
  // Fitted: ib_read_bw on one QP is flat at ~2.5 Mpps for 2-128 B (openucx/ucx issue 8851): a
  // QP's read context takes a read every 400 cycles. The unit's part of a read is an estimate:
  // the checks and translation of a WQE's processing without the WQE to parse.
  p.read_response_processing = Cycles{60};
  p.read_context_turnaround = Cycles{400};
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
  // The local ACK timeout real RC QPs run with: exponent 14, 67.1 ms, perftest's default
  // (DEF_QP_TIME) and the value most verbs applications set. A timer this long never fires while
  // a QP's requests merely wait behind thousands of others; loss inside a stream is recovered at
  // once by sequence NAKs (writes, sends) and implied NAKs (reads).
  p.ack_timeout = LocalAckTimeout(14);
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
  // error; the initiator sees the request fail at the remote end (STATUS_REMOTE_RESOURCES, the
  // code the NdkRead page gives for a read beyond the remote memory).
  p.remote_access_error = RemoteAccessErrorStatus::kRemoteResources;
  p.read_sink_required = true;       // the read sink is an STag the peer writes into
  p.read_local_invalidate = false;
  // preamble+SFD 8, IFG 12, Ethernet 14, FCS 4, IPv4 20, TCP 20 + timestamps 12, MPA 2 + CRC 4,
  // DDP/RDMAP tagged header 14
  p.packet_overhead_bytes = 110;
  // TCP, MPA marker/CRC and DDP checks in the offload engine's receive pipeline. Not calibrated:
  // it keeps a 32 B send just under a microsecond, as Chelsio's T6 "sub-us" claim has it.
  p.packet_processing = Cycles{100};
  return p;
}

/// The same NIC generation on EDR InfiniBand (ConnectX-4 class, PCIe Gen3 x16), for the figures
/// measured on one (Potter's ib_send_lat latencies). It differs from the RoCE preset in its link
/// layer: IB's headers instead of Ethernet/IP/UDP, and a port without 100 GbE's RS-FEC.
constexpr HardwareProfile MakeConnectXEdrIb() {
  HardwareProfile p = MakeConnectX();
  p.name = "connectx-edr-ib";
  p.transport = Transport::kInfiniBand;
  p.device_id = 0x1013;  // ConnectX-4
  p.link_rate = GigabitsPerSecond(100);  // EDR 4x: 25.78125 Gbaud per lane, 64b/66b
  // LRH 8, BTH 12, ICRC 4, VCRC 2, and the start and end delimiters of the link layer.
  p.packet_overhead_bytes = 28;
  // Fitted with the host and PCIe stages to Potter's 0.83 us one-way latency of a 32 B send.
  p.port_transmit_latency = Nanoseconds(60);
  p.port_receive_latency = Nanoseconds(58);
  return p;
}

/// A Connect-IB-class NIC: FDR InfiniBand, PCIe Gen3 x16, on the servers of Kalia et al. (USENIX
/// ATC 2016), whose measurements it reproduces. It shares every mechanism of the other presets
/// and differs from the EDR one in the sizes and rates named here.
constexpr HardwareProfile MakeConnectIb() {
  HardwareProfile p = MakeConnectXEdrIb();
  p.name = "connect-ib-fdr";
  p.device_id = 0x1011;  // Connect-IB
  // Two FDR 4x ports (14.0625 Gbaud per lane, 64b/66b: 54.5 Gb/s each), as Kalia et al. used
  // them, modelled as one link of twice the rate.
  p.link_rate = MegabitsPerSecond(2 * 54'545);
  // Fitted: one QP posting in batches of 16 is bound by its processing unit at 16.6 M requests/s
  // (Kalia et al.'s sequencer with doorbell batching), about 60 ns a request.
  p.wqe_processing = Cycles{56};
  // Fitted to rc-swarm's QP-scalability rows (32-B reads between 6 and 11 machines, 84 to 1,386
  // QPs per machine): a direct-mapped cache of 2,048 QP contexts, a miss reading one 64-B line of
  // the context (the part the step needs; an estimate). Hashed sets make misses start well below
  // 2,048 QPs and grow gradually, as the published rates fall.
  p.qp_context_cache_entries = 2048;
  p.qp_context_cache_ways = 1;
  p.qp_context_bytes = 64;
  // Fitted to Kalia et al.'s NIC-wide inbound rates: header-only writes and 0-B sends arrive at
  // 122 M/s, the receive pipeline's intake (8 cycles a packet: 125 M/s); sends with a payload at
  // 82 M/s, where each costs two posted writes (payload and CQE), 6 ns a write TLP.
  p.receive_packet_interval = Cycles{8};
  p.pcie_write_tlp_interval = Nanoseconds(6);
  return p;
}

constexpr HardwareProfile MakeFunctional() {
  HardwareProfile p = MakeConnectX();
  p.name = "functional";
  p.pcie_mmio_write_latency = Duration::zero();
  p.pcie_dma_read_latency = Duration::zero();
  p.pcie_dma_write_latency = Duration::zero();
  p.pcie_read_line_interval = Duration::zero();
  p.pcie_bandwidth = BitRate{0};
  p.processing_units = 1;
  p.doorbell_processing = Cycles{0};
  p.wqe_processing = Cycles{0};
  p.read_response_processing = Cycles{0};
  p.read_context_turnaround = Cycles{0};
  p.packet_processing = Cycles{0};
  p.link_rate = BitRate{0};
  p.port_transmit_latency = Duration::zero();
  p.port_receive_latency = Duration::zero();
  p.ack_turnaround = Duration::zero();
  p.propagation_delay = Duration::zero();
  p.switch_latency = Duration::zero();
  p.rnr_delay = Nanoseconds(1);
  p.management_latency = Duration::zero();
  p.host_post = Duration::zero();
  p.host_wqe_block = Duration::zero();
  p.host_doorbell_record = Duration::zero();
  p.host_mmio_store = Duration::zero();
  p.host_mmio_flush = Duration::zero();
  p.host_cqe_poll = Duration::zero();
  p.noise = false;
  p.pcie_latency_jitter = Duration::zero();
  p.host_interruption_interval = Duration::zero();
  return p;
}
}  // namespace detail

/// A ConnectX-class 100 GbE RoCEv2 RNIC on PCIe Gen3 x16 (the default).
inline constexpr HardwareProfile kConnectX100GbeRoce = detail::MakeConnectX();
/// An iWARP personality of the same NIC: read sinks need the READ_SINK right and
/// reads cannot invalidate locally.
inline constexpr HardwareProfile kIWarp = detail::MakeIWarp();
/// The ConnectX generation on EDR InfiniBand, for the published figures measured on one (Potter).
inline constexpr HardwareProfile kConnectXEdrIb = detail::MakeConnectXEdrIb();
/// A Connect-IB-class FDR InfiniBand NIC, for the published figures measured on one (Kalia et al.).
inline constexpr HardwareProfile kConnectIbFdr = detail::MakeConnectIb();
/// Zero-delay functional model: every block completes at once; for fast unit tests.
inline constexpr HardwareProfile kFunctional = detail::MakeFunctional();

/// `p` without its noise sources: the same work always takes the same time (a test that asserts
/// exact simulated times of a timed preset uses this).
constexpr HardwareProfile WithoutNoise(HardwareProfile p) {
  p.noise = false;
  return p;
}

}  // namespace profiles

}  // namespace ndksim
