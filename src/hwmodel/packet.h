// SPDX-License-Identifier: MIT
// Packets of the reliable-connection transport as they cross the wire, and the PSN arithmetic.
// Header fields follow the InfiniBand/RoCE base and extended transport headers in spirit (BTH,
// RETH, AETH); the byte layout is not modelled, only the per-packet overhead bytes.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <vector>

#include "hwmodel/host_interface.h"
#include "ndksim/profile.h"

namespace ndksim::hw {

// A 24-bit packet sequence number with wrap-aware ordering.
struct Psn {
  static constexpr std::uint32_t kMask = 0x00ff'ffff;
  std::uint32_t value = 0;

  constexpr Psn operator+(std::uint32_t n) const { return Psn{(value + n) & kMask}; }
  constexpr bool operator==(const Psn&) const = default;
  // Signed distance from `b` to `a` in the 24-bit space: positive when a is after b.
  static constexpr std::int32_t Diff(Psn a, Psn b) {
    const std::uint32_t d = (a.value - b.value) & kMask;
    return d & 0x0080'0000 ? static_cast<std::int32_t>(d) - 0x0100'0000 : static_cast<std::int32_t>(d);
  }
  constexpr bool Before(Psn b) const { return Diff(*this, b) < 0; }
  constexpr bool AtOrBefore(Psn b) const { return Diff(*this, b) <= 0; }
};

#define NDKSIM_PACKET_OPCODES(X) \
  X(SendFirst)                   \
  X(SendMiddle)                  \
  X(SendLast)                    \
  X(SendOnly)                    \
  X(WriteFirst)                  \
  X(WriteMiddle)                 \
  X(WriteLast)                   \
  X(WriteOnly)                   \
  X(ReadRequest)                 \
  X(ReadResponseFirst)           \
  X(ReadResponseMiddle)          \
  X(ReadResponseLast)            \
  X(ReadResponseOnly)            \
  X(Acknowledge)                 \
  X(Terminate)                   \
  X(Management)

enum class PacketOpcode : std::uint8_t {
#define NDKSIM_X(name) k##name,
  NDKSIM_PACKET_OPCODES(NDKSIM_X)
#undef NDKSIM_X
};
inline constexpr std::array<std::string_view, 16> kPacketOpcodeNames = {
#define NDKSIM_X(name) #name,
    NDKSIM_PACKET_OPCODES(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kPacketOpcodeNames.size() == static_cast<std::size_t>(PacketOpcode::kManagement) + 1);
constexpr std::string_view Name(PacketOpcode op) { return kPacketOpcodeNames[static_cast<std::size_t>(op)]; }

// Position of a packet inside its message, from the opcode table.
struct OpcodeTraits {
  bool is_request;   // travels requester -> responder
  bool first;        // starts a message
  bool last;         // ends a message
  bool has_payload;
};
inline constexpr std::array<OpcodeTraits, 16> kOpcodeTraits = {{
    {true, true, false, true},     // SendFirst
    {true, false, false, true},    // SendMiddle
    {true, false, true, true},     // SendLast
    {true, true, true, true},      // SendOnly
    {true, true, false, true},     // WriteFirst (carries RETH)
    {true, false, false, true},    // WriteMiddle
    {true, false, true, true},     // WriteLast
    {true, true, true, true},      // WriteOnly (carries RETH)
    {true, true, true, false},     // ReadRequest (carries RETH)
    {false, true, false, true},    // ReadResponseFirst
    {false, false, false, true},   // ReadResponseMiddle
    {false, false, true, true},    // ReadResponseLast
    {false, true, true, true},     // ReadResponseOnly
    {false, true, true, false},    // Acknowledge (AETH)
    {true, true, true, false},     // Terminate
    {false, true, true, true},     // Management
}};
static_assert(kOpcodeTraits.size() == kPacketOpcodeNames.size());
constexpr const OpcodeTraits& Traits(PacketOpcode op) { return kOpcodeTraits[static_cast<std::size_t>(op)]; }

// The AETH syndromes a responder answers with, each with the status the requester's WQE completes
// with when a NAK of that kind fails it (an ACK, an RNR NAK and a sequence NAK fail nothing: the
// requester goes on, or retries).
#define NDKSIM_ACK_SYNDROMES(X)                                           \
  X(kAck, "ACK", kSuccess)                                                \
  X(kRnrNak, "RNR NAK", kRnrRetryExceeded)                                \
  X(kPsnSequenceError, "NAK sequence error", kTransportRetryExceeded)     \
  X(kRemoteInvalidRequest, "NAK invalid request", kRemoteInvalidRequest)  \
  X(kRemoteAccessError, "NAK access error", kRemoteAccessError)           \
  X(kRemoteOperationError, "NAK operation error", kRemoteOperationError)

enum class AckSyndrome : std::uint8_t {
#define NDKSIM_X(syndrome, name, status) syndrome,
  NDKSIM_ACK_SYNDROMES(NDKSIM_X)
#undef NDKSIM_X
};
struct AckSyndromeEntry {
  std::string_view name;
  CompletionSyndrome status;  // of the requester's WQE a NAK of this kind fails
};
inline constexpr AckSyndromeEntry kAckSyndromes[] = {
#define NDKSIM_X(syndrome, name, status) {name, CompletionSyndrome::status},
    NDKSIM_ACK_SYNDROMES(NDKSIM_X)
#undef NDKSIM_X
};
constexpr bool Known(AckSyndrome s) { return static_cast<std::size_t>(s) < std::size(kAckSyndromes); }
constexpr std::string_view Name(AckSyndrome s) { return Known(s) ? kAckSyndromes[static_cast<std::size_t>(s)].name : "?"; }
// The completion status of the WQE a NAK of kind `s` fails (a syndrome no responder sends: an
// invalid request).
constexpr CompletionSyndrome FailedBy(AckSyndrome s) {
  return Known(s) ? kAckSyndromes[static_cast<std::size_t>(s)].status : CompletionSyndrome::kRemoteInvalidRequest;
}

struct Packet {
  NodeId source_node = 0;
  NodeId destination_node = 0;
  PacketOpcode opcode = PacketOpcode::kAcknowledge;
  Qpn destination_qpn;
  Qpn source_qpn;
  Psn psn;
  bool ack_request = false;  // BTH AckReq: the responder acknowledges this packet once placed
  bool corrupted = false;    // a bit flipped on the wire (fault injection): its ICRC fails
  bool solicited = false;
  // RETH: Write First/Only and Read Request.
  std::uint64_t remote_address = 0;
  std::uint32_t remote_key = 0;
  std::uint32_t dma_length = 0;
  // SendInvalidate: the token the receiver must invalidate (IETH).
  bool has_invalidate_key = false;
  std::uint32_t invalidate_key = 0;
  // AETH
  AckSyndrome syndrome = AckSyndrome::kAck;
  // Simulation metadata, not on the wire: the requester's WQE number, for the request log.
  std::uint32_t trace_wqe = 0;
  // Payload bytes; the vector's capacity is kept across reuse so steady state does not allocate.
  std::vector<std::byte> payload;
};

// Extension-header bytes a packet carries beyond the profile's fixed per-packet overhead. RoCEv2
// and InfiniBand add RETH (16 B) to write-first/only and read requests, AETH (4 B) to ACKs and to
// the first, last and only read responses, and IETH (4 B) to the packet that ends a
// send-with-invalidate. The iWARP overhead already includes its DDP/RDMAP header.
constexpr std::uint32_t ExtensionHeaderBytes(Transport transport, const Packet& p) {
  if (transport == Transport::kIWarp) return 0;
  switch (p.opcode) {
    case PacketOpcode::kWriteFirst:
    case PacketOpcode::kWriteOnly:
    case PacketOpcode::kReadRequest:
      return 16;
    case PacketOpcode::kAcknowledge:
    case PacketOpcode::kReadResponseFirst:
    case PacketOpcode::kReadResponseLast:
    case PacketOpcode::kReadResponseOnly:
      return 4;
    case PacketOpcode::kSendLast:
    case PacketOpcode::kSendOnly:
      return p.has_invalidate_key ? 4 : 0;
    default:
      return 0;
  }
}

}  // namespace ndksim::hw
