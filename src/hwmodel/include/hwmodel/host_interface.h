// SPDX-License-Identifier: MIT
// The host interface: what the RNIC defines and a driver programs against. WQE and CQE formats,
// the rings in host memory, doorbells, event-queue entries and the identifiers the NIC hands out.
// The provider and the hardware model share nothing else.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string_view>

#include "hwmodel/ring.h"
#include "ndksim/time.h"

namespace ndksim::hw {

// ---- identifiers -------------------------------------------------------------------------------

using NodeId = std::uint32_t;  // a node of the fabric: one NIC

struct Qpn {  // queue pair number, 24 bits as on the wire
  std::uint32_t value = 0;
  constexpr auto operator<=>(const Qpn&) const = default;
};
struct CqNumber {
  std::uint32_t value = 0;
  constexpr auto operator<=>(const CqNumber&) const = default;
};
struct PdNumber {
  std::uint32_t value = 0;
  constexpr auto operator<=>(const PdNumber&) const = default;
};
struct SrqNumber {  // 0 = none (a QP with its own receive queue)
  std::uint32_t value = 0;
  constexpr auto operator<=>(const SrqNumber&) const = default;
};

// How the NIC numbers the entries of a context table (QPs, CQs, SRQs). An identifier holds the
// entry's number (first + slot) in its low `number_bits` bits and the slot's generation above them,
// up to bit 30 (waiter ids shift QPNs left by one). Every allocation of a slot bumps its
// generation, so an identifier of a destroyed entry (a doorbell still in the FIFO, a scheduled
// event, an unpolled CQE, a peer's packet) never names the entry that reuses the slot: it would
// take 2^(31 - number_bits) reuses of one slot, which the NIC makes as unlikely as it can by handing
// out the least recently freed slot first. Both sides derive the layout from the profile's limit.
struct IdLayout {
  std::uint32_t first = 1;        // number of slot 0
  std::uint32_t number_bits = 1;  // bits that hold first + slot

  static constexpr IdLayout For(std::uint32_t first, std::uint32_t limit) {
    std::uint32_t bits = 1;
    while (bits < 24 && ((first + limit - 1) >> bits) != 0) ++bits;
    return IdLayout{first, bits};
  }
  constexpr std::uint32_t GenerationMask() const { return (1u << (31 - number_bits)) - 1; }
  constexpr std::uint32_t Make(std::uint32_t slot, std::uint32_t generation) const {
    return ((generation & GenerationMask()) << number_bits) | (first + slot);
  }
  // The slot an identifier names; a number below `first` gives a slot no table has.
  constexpr std::uint32_t Slot(std::uint32_t id) const { return (id & ((1u << number_bits) - 1)) - first; }
};

// A memory token: the index of the entry in the NIC's protection table and a key byte that the
// NIC changes on every (re)registration, so a stale token stops matching.
struct MemoryKey {
  std::uint32_t value = 0;
  static constexpr MemoryKey Make(std::uint32_t index, std::uint8_t key) {
    return MemoryKey{(index << 8) | key};
  }
  constexpr std::uint32_t Index() const { return value >> 8; }
  constexpr std::uint8_t KeyByte() const { return static_cast<std::uint8_t>(value & 0xff); }
  constexpr auto operator<=>(const MemoryKey&) const = default;
};

// ---- work queue entries ------------------------------------------------------------------------

// A WQE is a run of 16-byte segments in consecutive 64-byte basic blocks of a ring; every WQE of a
// queue occupies the same number of blocks (the queue's stride, fixed at creation).
inline constexpr std::size_t kWqeBlockBytes = 64;
inline constexpr std::size_t kWqeSegmentBytes = 16;
inline constexpr std::size_t kSegmentsPerBlock = kWqeBlockBytes / kWqeSegmentBytes;

struct alignas(kWqeBlockBytes) WqeBlock {
  std::array<std::byte, kWqeBlockBytes> bytes;
};

#define NDKSIM_WQE_OPCODES(X) \
  X(Send)                     \
  X(SendInvalidate)           \
  X(Write)                    \
  X(Read)                     \
  X(Bind)                     \
  X(FastRegister)             \
  X(LocalInvalidate)          \
  X(Receive)

enum class WqeOpcode : std::uint8_t {
#define NDKSIM_X(name) k##name,
  NDKSIM_WQE_OPCODES(NDKSIM_X)
#undef NDKSIM_X
};
inline constexpr std::array<std::string_view, 8> kWqeOpcodeNames = {
#define NDKSIM_X(name) #name,
    NDKSIM_WQE_OPCODES(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kWqeOpcodeNames.size() == static_cast<std::size_t>(WqeOpcode::kReceive) + 1);
constexpr std::string_view Name(WqeOpcode op) { return kWqeOpcodeNames[static_cast<std::size_t>(op)]; }

namespace wqe_flag {
inline constexpr std::uint8_t kSignaled = 0x01;            // write a CQE on success
inline constexpr std::uint8_t kReadFence = 0x02;           // wait for earlier reads to finish
inline constexpr std::uint8_t kSolicited = 0x04;           // set the solicited-event bit
inline constexpr std::uint8_t kInline = 0x08;              // payload is in the WQE, not in SGEs
inline constexpr std::uint8_t kReadLocalInvalidate = 0x10; // invalidate first SGE's key on success
}  // namespace wqe_flag

// Segment 0 of every send-queue WQE.
struct WqeControl {
  WqeOpcode opcode;
  std::uint8_t flags;
  std::uint8_t sge_count;      // data segments that follow (0 when inline)
  std::uint8_t reserved;
  std::uint32_t wqe_counter;   // free-running WQE number; echoed in the CQE
  // Payload bytes carried inline. Memory operations (no payload): the generation of the
  // protection entry the operation was posted for (Translation::Register).
  std::uint32_t inline_bytes;
  std::uint32_t invalidate_key;  // SendInvalidate: the peer's token to invalidate
};
static_assert(sizeof(WqeControl) == kWqeSegmentBytes);

// Segment 1 of every send-queue WQE: the remote target of Read/Write.
struct WqeRemote {
  std::uint64_t remote_address;
  std::uint32_t remote_key;
  std::uint32_t reserved;
};
static_assert(sizeof(WqeRemote) == kWqeSegmentBytes);

// A scatter/gather element: the same format in send and receive WQEs.
struct WqeDataSegment {
  std::uint64_t address;
  std::uint32_t length;
  std::uint32_t local_key;
};
static_assert(sizeof(WqeDataSegment) == kWqeSegmentBytes);

// Copies `count` WQE segments out of (or into) a WQE. A WQE carries one segment or a few, and a
// copy whose length is known only at run time starts a string move, which costs tens of cycles
// before the first byte; one fixed-size copy per segment costs a load and a store.
inline void CopySegments(void* dst, const void* src, std::uint32_t count) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::memcpy(d + std::size_t{i} * kWqeSegmentBytes, s + std::size_t{i} * kWqeSegmentBytes, kWqeSegmentBytes);
  }
}

inline constexpr std::size_t kSendWqeHeaderSegments = 2;  // control + remote

// Memory-operation WQEs (Bind, FastRegister, LocalInvalidate) use the same header: the control
// segment's invalidate_key holds the target token (the window's or region's token with the key
// byte the operation installs, or the token to invalidate) and its inline_bytes the target
// entry's generation; WqeRemote holds the virtual address (remote_address), the region a window
// binds inside (remote_key) and, in reserved, the FBO (FastRegister) or the region's generation
// (Bind). Bind and FastRegister add data-segment slots (sge_count 1 or 2) whose length field
// (offset 8) is 0, so that WQE fetch, which sums SGE lengths, sees a zero-byte request.
struct WqeMemorySegment {  // data slot 0 of Bind and FastRegister
  std::uint64_t length;    // bytes of the window or registration
  std::uint32_t zero;      // the data segment's length field: always 0
  std::uint32_t access;    // access:: bits granted
};
static_assert(sizeof(WqeMemorySegment) == kWqeSegmentBytes);

struct WqePageListSegment {  // data slot 1 of FastRegister
  // Host address of the page array (8-byte logical page addresses): a copy the driver made for
  // this WQE, read when the WQE executes.
  std::uint64_t page_list;
  std::uint32_t zero;        // the data segment's length field: always 0
  std::uint32_t page_count;
};
static_assert(sizeof(WqePageListSegment) == kWqeSegmentBytes);

// A work queue in host memory: a ring of basic blocks plus the stride of its WQEs. The ring's
// published producer index is the queue's doorbell record: the NIC reads it when it is told to
// (a doorbell) or, for receive queues, when it needs a receive WQE.
struct WorkQueue {
  SpscRing<WqeBlock>* ring = nullptr;
  std::uint32_t stride_blocks = 1;  // blocks per WQE, a power of two
};

// Segment `s` of the WQE that starts at block index `first_block`.
inline std::byte* WqeSegment(SpscRing<WqeBlock>& ring, std::uint32_t first_block, std::size_t s) {
  WqeBlock& b = ring.SlotAt(first_block + static_cast<std::uint32_t>(s / kSegmentsPerBlock));
  return b.bytes.data() + (s % kSegmentsPerBlock) * kWqeSegmentBytes;
}

// ---- completion queue entries ------------------------------------------------------------------

// Outcome of a work request as the NIC reports it. The provider maps each to one NTSTATUS in one
// table; nothing else in the model knows NTSTATUS.
#define NDKSIM_COMPLETION_SYNDROMES(X)                                                   \
  X(Success)                /* done */                                                   \
  X(LocalLengthError)       /* SGEs describe more than the request may move */           \
  X(LocalProtectionError)   /* a local SGE failed translation or rights */               \
  X(LocalQpOperationError)  /* internal inconsistency of the local QP */                 \
  X(Flushed)                /* cancelled: QP in error, flushed or disconnected */         \
  X(ReceiveOverflow)        /* incoming send larger than the receive buffer */           \
  X(RemoteAccessError)      /* the peer refused the token, rights or range */            \
  X(RemoteInvalidRequest)   /* the peer could not parse or accept the request */         \
  X(RemoteOperationError)   /* the peer failed while executing the request */            \
  X(TransportRetryExceeded) /* no acknowledgement within the retry budget */             \
  X(RnrRetryExceeded)       /* peer had no receive posted within the RNR budget */       \
  X(InvalidRequest)         /* malformed WR, e.g. invalidating an unbound window */      \
  X(Fatal)                  /* catastrophic NIC or CQ failure */

enum class CompletionSyndrome : std::uint8_t {
#define NDKSIM_X(name) k##name,
  NDKSIM_COMPLETION_SYNDROMES(NDKSIM_X)
#undef NDKSIM_X
};
inline constexpr std::array<std::string_view, 13> kCompletionSyndromeNames = {
#define NDKSIM_X(name) #name,
    NDKSIM_COMPLETION_SYNDROMES(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kCompletionSyndromeNames.size() == static_cast<std::size_t>(CompletionSyndrome::kFatal) + 1);
constexpr std::string_view Name(CompletionSyndrome s) {
  return kCompletionSyndromeNames[static_cast<std::size_t>(s)];
}

namespace cqe_flag {
inline constexpr std::uint8_t kReceive = 0x01;      // completion of a receive-queue WQE
inline constexpr std::uint8_t kInvalidated = 0x02;  // invalidated_key is valid (send-with-invalidate)
inline constexpr std::uint8_t kSolicited = 0x04;    // the incoming send carried the solicited bit
inline constexpr std::uint8_t kSrq = 0x08;          // wqe_counter names a WQE of SRQ `srqn`
}  // namespace cqe_flag

// One CQE. The completion engine writes every field, then the owner byte with a release store; the
// poller reads the owner byte with an acquire load. The owner bit toggles on every pass of the
// ring, so an entry belongs to the poller when its owner bit equals the pass parity of its index.
struct alignas(32) Cqe {
  std::uint32_t qpn;
  std::uint32_t wqe_counter;
  std::uint32_t byte_count;
  std::uint32_t invalidated_key;
  std::uint32_t vendor_error;
  WqeOpcode opcode;
  CompletionSyndrome syndrome;
  std::uint8_t flags;
  std::atomic<std::uint8_t> owner;
  // The SRQ an SRQ receive's WQE came from (cqe_flag::kSrq), so the driver can free that WQE's
  // slot even when the QP it served is gone; 0 otherwise.
  std::uint32_t srqn;
  std::uint32_t reserved;
};
static_assert(sizeof(Cqe) == 32);

// The owner value of CQE number `index` in a ring of `entries` (a power of two, which the command
// interface enforces): the parity of the pass, (index / entries) & 1, without the division.
constexpr std::uint8_t OwnerParity(std::uint32_t index, std::uint32_t entries) {
  return static_cast<std::uint8_t>((index & entries) != 0);
}
static_assert(OwnerParity(0, 4) == 0 && OwnerParity(3, 4) == 0 && OwnerParity(4, 4) == 1 && OwnerParity(7, 4) == 1 &&
              OwnerParity(8, 4) == 0 && OwnerParity(0xffff'ffffu, 1u << 31) == 1);

// A completion queue in host memory. The consumer index is written by the driver (release) after it
// has read entries; the NIC reads it (acquire) to detect overrun and to evaluate arming.
struct CompletionQueueMemory {
  Cqe* entries = nullptr;
  std::uint32_t entry_count = 0;             // a power of two
  std::atomic<std::uint32_t>* consumer_index = nullptr;
};

// Arm request carried by a CQ doorbell: notify on the next completion of the given kind that lands
// at or after `consumer_index`.
enum class CqArmKind : std::uint8_t { kNone = 0, kErrors = 1, kSolicited = 2, kAny = 3 };

// ---- doorbells ---------------------------------------------------------------------------------

// One MMIO write to a doorbell register, as it travels from a posting thread to the NIC.
struct Doorbell {
#define NDKSIM_DOORBELL_KINDS(X) \
  X(kSendQueue, "send queue")    \
  X(kReceiveQueue, "receive queue") \
  X(kCqArm, "CQ arm")
  enum class Kind : std::uint8_t {
#define NDKSIM_X(kind, name) kind,
    NDKSIM_DOORBELL_KINDS(NDKSIM_X)
#undef NDKSIM_X
  } kind;
  static constexpr std::string_view Name(Kind k) {
    constexpr std::string_view kNames[] = {
#define NDKSIM_X(kind, name) name,
        NDKSIM_DOORBELL_KINDS(NDKSIM_X)
#undef NDKSIM_X
    };
    const auto i = static_cast<std::size_t>(k);
    return i < std::size(kNames) ? kNames[i] : "?";
  }
  CqArmKind arm = CqArmKind::kNone;
  std::uint32_t object = 0;  // QPN or CQ number
  std::uint32_t index = 0;   // producer index (queues) or consumer index (CQ arm)
  // Send queues: the MMIO write carried the one WQE it covers, this many bytes of it (BlueFlame-
  // style), so the NIC need not fetch it; 0 when it did not. At most the profile's
  // wqe_by_mmio_bytes.
  std::uint16_t wqe_bytes = 0;
  // CQ arms: which of the consumer's arms this is. Arms made before the callback of an earlier one
  // merge with it (ref §4.2) and carry its epoch; the NIC satisfies an epoch once. 0: no epoch.
  std::uint32_t arm_epoch = 0;
  // When the MMIO write left the CPU core that made it (HostCpu::MmioWrite); TimePoint{}: at the
  // engine's current time, as with a CPU that charges nothing.
  TimePoint issued{};
};

// ---- event queue (interrupt causes) -------------------------------------------------------------

enum class EventType : std::uint8_t {
  kCqNotify,        // an armed CQ matched a completion
  kCqError,         // CQ overrun or CQ fatal error: object = CQ number
  kQpFatal,         // QP entered the error state on its own: object = QPN
  kConnectionAbort, // peer aborted or terminated the connection: object = QPN
  kManagement,      // a management datagram arrived: it is the next entry of the datagram ring,
                    // object = the node that sent it (the fabric's own record of the sender, not
                    // anything in the datagram)
  kSrqLimit,        // an armed SRQ's queued receives fell below its limit: object = SRQ number
  kSrqError,        // the SRQ failed (catastrophic NIC error): object = SRQ number
};

// Room for a connection-management header plus the largest private data a profile may allow.
inline constexpr std::size_t kManagementPayloadBytes = 640;

// EventEntry::status of a kCqError.
namespace cq_error {
inline constexpr std::uint32_t kOverrun = 0;  // a CQE found the CQ full
inline constexpr std::uint32_t kFatal = 1;    // catastrophic NIC error
}  // namespace cq_error

// What the NIC writes by DMA for one event: the entry's fields (a datagram's bytes follow it). The
// model's transfer size, whatever the layout of the struct below.
inline constexpr std::size_t kEventEntryBytes = 20;

// An entry of the event queue: small, so that the queue costs a node little however deep it is.
struct EventEntry {
  EventType type;
  std::uint32_t object = 0;
  std::uint32_t status = 0;  // kCqError: cq_error::
  std::uint32_t arm_epoch = 0;  // kCqNotify, kCqError: the arm (Doorbell::arm_epoch) it satisfies
};

// A management datagram as the NIC writes it into the driver's datagram ring, one per kManagement
// event, in the same order.
struct ManagementDatagram {
  std::uint32_t bytes = 0;
  std::array<std::byte, kManagementPayloadBytes> payload;
};

}  // namespace ndksim::hw
