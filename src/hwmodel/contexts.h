// SPDX-License-Identifier: MIT
// The NIC's per-object context entries (its QP and CQ tables). Each block owns one part of a QP's
// context and changes only that part: the doorbell unit its DoorbellState, WQE fetch its
// FetchState, the requester its RequesterState, the responder its ResponderState, the completer
// its CompleterState. A block may read another's part; it tells the owner about a change through a
// call that carries a message ("WQEs retired", "read failed", "flushed"), or a scheduled event,
// never by writing the part itself (tests/layering/check_block_state.cmake rejects such a write).
//
// The WQE descriptors are handed along the pipeline rather than owned by one block: WQE fetch
// fills a free descriptor (kFree -> kFetched), the requester executes it (kFetched -> kExecuting
// -> kAwaitingAck, and back to kFetched on a rewind the completer asks for), and the completer
// finishes and frees it (kAwaitingAck -> kPlacing -> kCompleted -> kFree). A descriptor is
// changed only by the block whose stage its state names; the requester hands one it fails or
// finishes itself (a local error, a memory operation) to the completer by a call
// (Completer::CompleteWithError, CompleteLocal).
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <new>
#include <type_traits>
#include <span>

#include "hwmodel/host_interface.h"
#include "nic.h"
#include "packet.h"
#include "pcie_link.h"
#include "ndksim/limits.h"

namespace ndksim::hw {

// The architectural limits (include/ndksim/limits.h), by the names the blocks use.
inline constexpr std::uint32_t kMaxSge = limits::kMaxSge;                    // data segments a WQE may name
inline constexpr std::uint32_t kMaxInlineBytes = limits::kMaxInlineBytes;    // inline payload a WQE may carry
inline constexpr std::uint32_t kDescriptorSlots = limits::kDescriptorSlots;  // WQE descriptors a QP may hold

// Life cycle of a send WQE on the NIC. Fetched -> Executing -> AwaitingAck -> Completed -> (freed)
// in order for one WQE; a read passes through Placing (every response received, the last one's
// data still on its way to host memory) between AwaitingAck and Completed. A rewind takes an
// AwaitingAck or Executing WQE back to Fetched. Across WQEs of one QP, completion may be reached
// out of order (an ACK and a read response race) but retirement is strictly in posting order.
enum class DescriptorState : std::uint8_t { kFree, kFetched, kExecuting, kAwaitingAck, kPlacing, kCompleted };

struct WqeDescriptor {
  DescriptorState state = DescriptorState::kFree;
  WqeControl control{};
  WqeRemote remote{};
  std::uint32_t total_length = 0;
  std::uint32_t packet_count = 0;  // packets (sends, writes) or response packets (reads)
  Psn first_psn;
  Psn last_psn;                    // PSN of the last packet (reads: of the last response)
  // Reads: response packets received in order so far. A resent read asks only for the rest.
  std::uint32_t responses_received = 0;
  std::uint32_t response_bytes = 0;
  CompletionSyndrome syndrome = CompletionSyndrome::kSuccess;
  // The WQE's data segments as fetched: its SGEs, or the same storage as its inline bytes. The
  // storage is the QP's (QpContext::SizeDescriptors), as large as a WQE slot of its send queue
  // has room for after the header: the consumer's SGE and inline limits, not the NIC's maxima.
  std::span<WqeDataSegment> sges;
  std::span<std::byte> inline_data;

  // Everything but the data segments back to its initial value.
  void ResetHeader() {
    state = DescriptorState::kFree;
    control = WqeControl{};
    remote = WqeRemote{};
    total_length = 0;
    packet_count = 0;
    first_psn = Psn{};
    last_psn = Psn{};
    responses_received = 0;
    response_bytes = 0;
    syndrome = CompletionSyndrome::kSuccess;
  }
};

inline constexpr std::uint32_t kStagedPackets = 64;     // packets a QP may hold between payload DMA and wire
inline constexpr std::uint32_t kMaxWqesAhead = 8;       // WQEs the processing unit may run ahead of segmentation
// The requester asks for an acknowledgement (the BTH AckReq bit) on the last packet of every
// message and on every this many packets inside a long one, so a long message shows progress and
// its ACK timer does not expire while it is still being sent.
inline constexpr std::uint32_t kAckRequestInterval = 16;

// A packet the requester has built and whose payload is being read (or has been read) from host
// memory, waiting for its turn on the wire. Packets of one QP leave in PSN order.
struct StagedPacket {
  std::uint32_t packet_id = 0;
  std::uint32_t counter = 0;   // WQE it belongs to
  std::uint32_t index = 0;     // packet number within its message
  std::uint32_t bytes = 0;     // payload bytes (held in the QP's transmit buffer)
  bool ready = false;          // payload is in the NIC
};

// Doorbell-unit part of a QP context: the send queue's doorbell register.
struct DoorbellState {
  std::uint32_t index = 0;    // send-queue producer index (blocks) of the last doorbell handled
  std::uint32_t arrived = 0;  // ... and of the last doorbell that reached the NIC
};

// WQE-fetch part of a QP context.
struct FetchState {
  std::uint32_t fetched_blocks = 0;  // send-queue blocks fetched so far
  bool in_flight = false;            // a burst read is on its way
  std::uint32_t tail = 0;            // one past the newest fetched WQE
};

// Requester part of a QP context. A WQE goes through two in-order stages: the processing unit
// (checks, PSN assignment) and the segmenter (packets, payload DMA, staging); staged packets are
// transmitted in order as their payload arrives. With the completer's retirement cursor `head`
// and fetch's `tail`: head <= segment_next <= next_exec <= tail.
struct RequesterState {
  std::uint32_t segment_next = 0;  // next WQE to segment
  std::uint32_t next_exec = 0;     // next WQE for the processing unit
  std::uint32_t segment_packet = 0;  // next packet of WQE segment_next
  bool scheduled = false;          // a processing-unit step is pending
  Psn next_psn;
  std::uint32_t outstanding_reads = 0;
  bool fence_blocked = false;
  // Staged packets: a ring addressed modulo kStagedPackets.
  std::array<StagedPacket, kStagedPackets> staged{};
  std::uint32_t staged_head = 0;
  std::uint32_t staged_tail = 0;
  std::uint64_t staged_bytes = 0;
  bool drain_scheduled = false;    // waiting for the port to finish its current packet
  bool tag_wait_scheduled = false; // the segmenter waits for a free PCIe read tag
  std::uint64_t generation = 0;  // bumped by rewind and abort; in-flight work of older ones is dropped
  // WQE `halt_at` failed a check at execution while earlier ones were still in flight: nothing
  // from it on is executed (a rewind re-executes only the earlier ones) until the QP's error.
  bool halted = false;
  std::uint32_t halt_at = 0;
};

inline constexpr std::uint32_t kReceivePrefetchWqes = 16;  // receive WQEs read ahead per queue

// The receive WQEs a queue (RQ or SRQ) holds on the NIC, read ahead of need by DMA. Only the
// timing is kept: the WQE bytes are read from the host ring when a message takes them, which is
// the same data (the host may not touch a posted WQE).
struct ReceivePrefetch {
  std::uint32_t landed_end = 0;     // WQEs before this are on the NIC
  std::uint32_t in_flight_end = 0;  // a read of WQEs [landed_end, in_flight_end) is in flight
  TimePoint in_flight_lands{};      // ... and arrives then
};

inline constexpr std::uint32_t kMaxInboundReads = limits::kMaxInboundReads;  // IRD a profile may grant
// Reads a responder can hold: its IRD's worth and replays (duplicate read requests executed
// again, which take no IRD resource: they repeat reads the requester counts already). With the
// largest IRD a profile may grant there is no room for replays, and duplicates are dropped.
inline constexpr std::uint32_t kInboundReadSlots = kMaxInboundReads;

// An inbound read the responder is answering: its responses are read from host memory a packet
// at a time and leave in PSN order.
struct InboundRead {
  std::uint64_t address = 0;
  std::uint32_t key = 0;
  std::uint32_t length = 0;
  Psn first;
  std::uint32_t count = 0;  // response packets
  // When the processing unit has set the read up; no response before this. The unit takes a
  // QP's reads one at a time, in order: a read waiting for its turn has TimePoint::max().
  TimePoint start = TimePoint::max();
  bool replay = false;      // executed for a duplicate request
};

// A response packet whose data is being (or has been) read, waiting for the port.
struct StagedResponse {
  std::uint32_t read = 0;   // its InboundRead
  std::uint32_t index = 0;  // packet number within the read's responses
  std::uint32_t bytes = 0;
  bool ready = false;       // the data is in the NIC
  // A duplicate read request asked again from this response's PSN or an earlier one: the packet
  // is not sent, and leaves the buffer once its data has landed (its DMA cannot be recalled).
  bool discarded = false;
};

// Responder part of a QP context.
struct ResponderState {
  Psn expected_psn;
  bool in_message = false;        // between First and Last of a send or write
  PacketOpcode message_kind = PacketOpcode::kSendOnly;
  // Current receive WQE (sends).
  std::uint32_t receive_counter = 0;  // receive WQEs consumed from the QP's own receive queue
  std::uint32_t receive_wqe = 0;      // number of the current WQE in its queue (RQ or SRQ)
  std::uint32_t receive_sge_count = 0;
  std::array<WqeDataSegment, kMaxSge> receive_sges{};
  std::uint64_t receive_capacity = 0;
  std::uint64_t message_bytes = 0;
  bool message_failed = false;
  // Current write target.
  std::uint64_t write_address = 0;
  std::uint32_t write_key = 0;
  TimePoint write_translated{};  // the write's key and pages are on chip then (translation caches)
  std::uint64_t write_remaining = 0;
  TimePoint placement_ready{};  // placements of this QP may not start before this (WQE fetch)
  // The QP's read context takes one read at a time: the next set-up starts no earlier than this
  // (read_context_turnaround after the last began).
  TimePoint read_context_free{};
  // Read responses: reads in a ring addressed modulo kInboundReadSlots, in PSN order, from the
  // moment they are accepted (head: the oldest not fully sent; read_cursor/read_packet: the next
  // response whose data to read), and the responses whose data is being read, addressed modulo
  // kStagedPackets, sent in order. Every read in the ring is accepted and not fully answered;
  // those that are not replays hold the QP's IRD resources.
  std::array<InboundRead, kInboundReadSlots> reads{};
  std::uint32_t replays = 0;  // reads in the ring that are replays
  std::uint32_t ReadsInProgress() const { return reads_tail - reads_head; }
  // The processing unit sets up one read of the QP at a time: reads before setup_next have been
  // given to it; while setup_pending, the last of them is still being set up (its OnReadSetUp
  // event carries setup_generation, which a drop of that read moves on).
  std::uint32_t setup_next = 0;
  bool setup_pending = false;
  bool awaiting_context = false;  // the read context is busy; an event is due at read_context_free
  std::uint32_t setup_generation = 0;
  std::uint32_t reads_head = 0;
  std::uint32_t reads_tail = 0;
  std::uint32_t read_cursor = 0;
  std::uint32_t read_packet = 0;
  std::array<StagedResponse, kStagedPackets> responses{};
  std::uint32_t responses_head = 0;
  std::uint32_t responses_tail = 0;
  std::uint64_t responses_bytes = 0;
  bool response_drain_scheduled = false;     // waiting for the port's transmitter
  bool response_tag_wait_scheduled = false;  // waiting for a PCIe read slot
  bool rnr_nak_outstanding = false;
  // A request was refused while responses to earlier reads were still to be sent: its NAK
  // follows them (Responder::Fail).
  bool nak_pending = false;
  Psn nak_psn;
  AckSyndrome nak_syndrome = AckSyndrome::kAck;
  ReceivePrefetch prefetch;     // of the QP's own receive queue
};

// Completer part of a QP context.
struct CompleterState {
  std::uint32_t head = 0;              // oldest unretired WQE
  Psn acknowledged;                    // newest PSN the peer has acknowledged (explicitly or not)
  std::uint32_t retries_left = 0;
  std::uint32_t rnr_retries_left = 0;
  std::uint64_t timer_generation = 0;  // bumped when the timer is cancelled; stale events compare
  bool timer_armed = false;
  // A restart only moves the deadline: at most one timer event per QP is in the event queue, and
  // when it fires early it goes back to sleep until the deadline. When nothing awaits an
  // acknowledgement any more, the event is cancelled, so an idle QP leaves nothing scheduled.
  TimePoint timer_deadline{};
  bool timer_event_pending = false;
  EventId timer_event;  // while timer_event_pending
  EventId rnr_event;    // the end of an RNR delay, while rnr_wait
  bool rnr_wait = false;
  // A read response past the one expected showed a gap (IBTA's implied NAK) and the read was
  // asked again from `reread_psn`: later responses of the same gap ask nothing more until the
  // response at `reread_psn` arrives.
  bool reread_pending = false;
  Psn reread_psn;
  // A WQE that failed at execution behind earlier ones still in flight: it holds its error and
  // retires in its turn, and the QP enters the error state then (Completer::FailInOrder).
  bool deferred_error = false;
  std::uint32_t deferred_counter = 0;
  // With a translation cache, a read response's placement may wait for its sink's key and pages:
  // the QP's placements keep their order among themselves, and the read completes after its last.
  WriteOrder read_placement;
};

struct QpContext {
  Qpn qpn;
  QpState state = QpState::kReset;
  PdNumber pd;
  CqNumber send_cq;
  CqNumber receive_cq;
  WorkQueue send_queue;
  WorkQueue receive_queue;
  std::uint32_t max_inline_bytes = 0;
  // Connection (from the connection manager).
  NodeId remote_node = 0;
  Qpn remote_qpn;
  std::uint32_t inbound_read_limit = 0;
  std::uint32_t outbound_read_limit = 0;
  SrqNumber srq;                         // receives come from this SRQ (0: own receive queue)

  DoorbellState doorbell;
  FetchState fetch;
  RequesterState requester;
  ResponderState responder;
  CompleterState completer;
  QpCounters counters;
  // The order of the QP's inbound placements and receive CQEs on the PCIe link. The responder
  // hands it to PcieLink::DmaWrite and CompletionEngine::Post with each write; only the link
  // changes it. The responder reads when the newest write lands.
  WriteOrder write_order;
  // Descriptors of fetched WQEs, addressed by WQE counter modulo DescriptorSlots(), handed along
  // the pipeline (see the top of this file). As many as the send queue holds WQEs, up to
  // kDescriptorSlots, so a QP costs the NIC what its consumer asked for.
  struct FreeSegments {
    void operator()(WqeDataSegment* p) const { std::free(p); }
  };
  std::unique_ptr<WqeDescriptor[]> descriptors;
  // `segments` per descriptor; zeroed by calloc, which leaves fresh pages untouched until a WQE
  // is fetched into them.
  std::unique_ptr<WqeDataSegment, FreeSegments> descriptor_segments;
  std::uint32_t descriptor_mask = 0;

  // At creation: `slots` descriptors (a power of two), each with room for `segments` data segments.
  void SizeDescriptors(std::uint32_t slots, std::uint32_t segments) {
    descriptors = std::make_unique<WqeDescriptor[]>(slots);
    static_assert(std::is_trivially_default_constructible_v<WqeDataSegment>, "zeroed memory is a valid segment");
    descriptor_segments.reset(static_cast<WqeDataSegment*>(std::calloc(std::size_t{slots} * segments, sizeof(WqeDataSegment))));
    if (descriptor_segments == nullptr) throw std::bad_alloc();
    descriptor_mask = slots - 1;
    for (std::uint32_t i = 0; i < slots; ++i) {
      WqeDescriptor& d = descriptors[i];
      d.sges = {descriptor_segments.get() + std::size_t{i} * segments, segments};
      d.inline_data = std::as_writable_bytes(d.sges);
    }
  }
  std::uint32_t DescriptorSlots() const { return descriptor_mask + 1; }
  WqeDescriptor& Descriptor(std::uint32_t counter) { return descriptors[counter & descriptor_mask]; }
  const WqeDescriptor& Descriptor(std::uint32_t counter) const { return descriptors[counter & descriptor_mask]; }
};

// A shared receive queue: receive WQEs any attached QP takes, in posting order.
struct SrqContext {
  SrqNumber number;
  PdNumber pd;
  WorkQueue queue;
  std::uint32_t consumed = 0;  // WQEs taken so far
  std::uint32_t limit = 0;     // notify when fewer than this many WQEs are queued
  bool armed = false;          // the limit notification is one-shot
  ReceivePrefetch prefetch;
  std::uint32_t qps = 0;       // QPs that take their receives from it (DestroySrq is kBusy)
};

struct CqContext {
  CqNumber number;
  CompletionQueueMemory memory;
  CqCounters counters;  // the completion engine's
  std::uint32_t interrupt_vector = 0;
  std::uint32_t producer_index = 0;     // CQEs written
  // The host's consumer index as the NIC last read it: a lower bound (the host only moves it
  // forward), read again only when it leaves no room for the next CQE.
  std::uint32_t consumer_seen = 0;
  std::uint32_t notify_index = 0;       // one past the newest solicited or error CQE
  CqArmKind arm = CqArmKind::kNone;
  std::uint32_t arm_epoch = 0;          // of the pending arm
  std::uint32_t satisfied_epoch = 0;    // of the newest arm that was notified
  bool dead = false;                    // overrun or fatal: no more CQEs
  bool error_pending = false;           // error not yet reported through an arm
  std::uint32_t error_status = 0;       // cq_error::
  std::uint32_t in_flight = 0;          // CQE writes issued but not yet landed
  // Interrupt moderation (ref §3.14): a notification that satisfied an arm waits until
  // `moderation_count` completions have accumulated or `moderation_interval` has passed.
  CqModeration moderation;
  bool moderation_pending = false;      // an arm is satisfied, its notification is held back
  std::uint32_t moderation_seen = 0;    // completions counted towards moderation_count
  std::uint64_t moderation_generation = 0;  // stale moderation timers compare against this
  std::uint32_t qps = 0;                // QPs that complete on it (DestroyCq is kBusy)
};

}  // namespace ndksim::hw
