// SPDX-License-Identifier: MIT
// The connection-management protocol two drivers speak over management datagrams: socket
// addresses as the NIC routes them, and the REQ/REP/RTU/REJ/DREQ/DREP messages with their
// fixed little-endian wire format.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "hwmodel/host_interface.h"
#include "hwmodel/device.h"
#include "ndkpi.h"

namespace ndksim::provider {

// An IPv4 or IPv6 address plus a port in host byte order. IPv4 occupies address.bytes[0..4)
// (network order) and the rest stay zero; family is 4 or 6 as in hw::NetworkAddress.
struct SocketAddress {
  hw::NetworkAddress address;
  std::uint16_t port = 0;
  bool operator==(const SocketAddress&) const = default;
};

bool IsWildcard(const hw::NetworkAddress& a);  // 0.0.0.0 or ::
// Two local bindings collide when they share family and port and one address covers the other.
bool BindingsCollide(const SocketAddress& a, const SocketAddress& b);

// SOCKADDR_IN / SOCKADDR_IN6 -> SocketAddress. STATUS_INVALID_PARAMETER for a NULL pointer,
// STATUS_INVALID_ADDRESS for an unknown family or a length too short for the family.
NTSTATUS FromSockaddr(const SOCKADDR* sockaddr, ULONG length, SocketAddress* out);
// Bytes a SOCKADDR for `a` needs (sizeof SOCKADDR_IN or SOCKADDR_IN6).
ULONG SockaddrLength(const SocketAddress& a);
// Writes SockaddrLength(a) bytes at `out`.
void ToSockaddr(const SocketAddress& a, SOCKADDR* out);
// The ref §3.18 address-query protocol shared by every GetLocalAddress/GetPeerAddress slot:
// STATUS_BUFFER_TOO_SMALL with the required length when the buffer is missing or short.
NTSTATUS CopyOutAddress(const SocketAddress& a, SOCKADDR* out, ULONG* length);

#define NDKSIM_CM_TYPES(X) \
  X(Req)  /* active -> passive: connect request */           \
  X(Rep)  /* passive -> active: accepted, here is my QP */   \
  X(Rtu)  /* active -> passive: ready to use (CompleteConnect) */ \
  X(Rej)  /* either way: no listener, rejected or aborted */ \
  X(Dreq) /* either way: graceful disconnect request */      \
  X(Drep) /* reply to a DREQ */

enum class CmType : std::uint8_t {
#define NDKSIM_X(name) k##name,
  NDKSIM_CM_TYPES(NDKSIM_X)
#undef NDKSIM_X
};
inline constexpr std::array<std::string_view, 6> kCmTypeNames = {
#define NDKSIM_X(name) #name,
    NDKSIM_CM_TYPES(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kCmTypeNames.size() == static_cast<std::size_t>(CmType::kDrep) + 1);
constexpr std::string_view Name(CmType t) { return kCmTypeNames[static_cast<std::size_t>(t)]; }

enum class RejectReason : std::uint8_t {
  kNone = 0,
  kNoListener = 1,  // nobody listens on the destination (or the listener is closing)
  kConsumer = 2,    // NdkReject, or the consumer closed the connector instead of answering
  kAborted = 3,     // the peer connector is gone or gave up (timeout, close)
};

// Wire layout (all integers little-endian):
//   0 magic "NDKC" (u32)   4 version (u8)   5 type (u8)   6 reason (u8)   7 zero (u8)
//   8 source address (20)  28 destination address (20)
//     address = family (u8: 4|6), zero (u8), port (u16), address bytes (16)
//  48 source node (u32)  52 source connection (u32)  56 destination connection (u32)
//  60 qpn (u32)  64 initial psn (u32)  68 IRD (u32)  72 ORD (u32)
//  76 private data length (u16)  78 zero (u16)  80 private data
inline constexpr std::uint32_t kCmMagic = 0x434b444e;  // "NDKC" read little-endian
inline constexpr std::uint8_t kCmVersion = 1;
inline constexpr std::size_t kCmHeaderBytes = 80;
// Private data that fits in one management datagram after the header.
inline constexpr std::size_t kCmMaxPrivateData = hw::kManagementPayloadBytes - kCmHeaderBytes;

// One CM message. Fields a type does not use are zero. Connection ids are chosen by each driver
// for its own connectors (never 0); a message names the sender's id and, except in a REQ, the
// receiver's id, which is how the receiver finds the connector.
struct CmMessage {
  CmType type = CmType::kReq;
  RejectReason reason = RejectReason::kNone;
  SocketAddress source;       // sender's address:port (where replies go)
  SocketAddress destination;  // receiver's address:port (REQ: what the listener must match)
  hw::NodeId source_node = 0;
  std::uint32_t source_connection = 0;
  std::uint32_t destination_connection = 0;
  std::uint32_t qpn = 0;          // REQ, REP: sender's QP
  std::uint32_t initial_psn = 0;  // REQ, REP: first PSN the sender will send
  std::uint32_t inbound_read_limit = 0;   // REQ, REP: sender's IRD, already capped by its adapter
  std::uint32_t outbound_read_limit = 0;  // REQ, REP: sender's ORD, likewise
  std::uint16_t private_data_length = 0;  // REQ, REP, REJ
  std::array<std::byte, kCmMaxPrivateData> private_data{};
};

// Serialises `m` into `out` (at least kCmHeaderBytes + private_data_length bytes); returns the
// bytes written. private_data_length must not exceed kCmMaxPrivateData.
std::size_t EncodeCm(const CmMessage& m, std::span<std::byte> out);
// Parses a datagram. False when it is not a well-formed CM message of this version.
bool DecodeCm(std::span<const std::byte> bytes, CmMessage* out);

}  // namespace ndksim::provider
