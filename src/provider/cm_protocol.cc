// SPDX-License-Identifier: MIT
// Socket-address conversion and the CM message codec (layout documented in cm_protocol.h).
#include "cm_protocol.h"

#include <algorithm>
#include <cstring>

#include <arpa/inet.h>

#include "common/check.h"

namespace ndksim::provider {

bool IsWildcard(const hw::NetworkAddress& a) {
  return std::all_of(a.bytes.begin(), a.bytes.end(), [](std::uint8_t b) { return b == 0; });
}

bool BindingsCollide(const SocketAddress& a, const SocketAddress& b) {
  if (a.address.family != b.address.family || a.port != b.port) return false;
  return a.address == b.address || IsWildcard(a.address) || IsWildcard(b.address);
}

NTSTATUS FromSockaddr(const SOCKADDR* sockaddr, ULONG length, SocketAddress* out) {
  if (sockaddr == nullptr) return STATUS_INVALID_PARAMETER;
  if (length < sizeof(sa_family_t)) return STATUS_INVALID_ADDRESS;
  SocketAddress a;
  if (sockaddr->sa_family == AF_INET) {
    if (length < sizeof(SOCKADDR_IN)) return STATUS_INVALID_ADDRESS;
    SOCKADDR_IN in;
    std::memcpy(&in, sockaddr, sizeof in);
    a.address.family = 4;
    std::memcpy(a.address.bytes.data(), &in.sin_addr, 4);
    a.port = ntohs(in.sin_port);
  } else if (sockaddr->sa_family == AF_INET6) {
    if (length < sizeof(SOCKADDR_IN6)) return STATUS_INVALID_ADDRESS;
    SOCKADDR_IN6 in6;
    std::memcpy(&in6, sockaddr, sizeof in6);
    a.address.family = 6;
    std::memcpy(a.address.bytes.data(), &in6.sin6_addr, 16);
    a.port = ntohs(in6.sin6_port);
  } else {
    return STATUS_INVALID_ADDRESS;
  }
  *out = a;
  return STATUS_SUCCESS;
}

ULONG SockaddrLength(const SocketAddress& a) {
  return a.address.family == 6 ? sizeof(SOCKADDR_IN6) : sizeof(SOCKADDR_IN);
}

void ToSockaddr(const SocketAddress& a, SOCKADDR* out) {
  if (a.address.family == 6) {
    SOCKADDR_IN6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(a.port);
    std::memcpy(&in6.sin6_addr, a.address.bytes.data(), 16);
    std::memcpy(out, &in6, sizeof in6);
    return;
  }
  SOCKADDR_IN in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(a.port);
  std::memcpy(&in.sin_addr, a.address.bytes.data(), 4);
  std::memcpy(out, &in, sizeof in);
}

NTSTATUS CopyOutAddress(const SocketAddress& a, SOCKADDR* out, ULONG* length) {
  if (length == nullptr) return STATUS_INVALID_PARAMETER;
  const ULONG needed = SockaddrLength(a);
  if (out == nullptr || *length < needed) {
    *length = needed;
    return STATUS_BUFFER_TOO_SMALL;
  }
  ToSockaddr(a, out);
  *length = needed;
  return STATUS_SUCCESS;
}

namespace {

// Little-endian cursor over a datagram buffer; bounds are checked by the callers' size checks.
class Writer {
 public:
  explicit Writer(std::span<std::byte> out) : out_(out) {}
  void U8(std::uint8_t v) { out_[at_++] = std::byte{v}; }
  void U16(std::uint16_t v) {
    U8(static_cast<std::uint8_t>(v));
    U8(static_cast<std::uint8_t>(v >> 8));
  }
  void U32(std::uint32_t v) {
    U16(static_cast<std::uint16_t>(v));
    U16(static_cast<std::uint16_t>(v >> 16));
  }
  void Address(const SocketAddress& a) {
    U8(a.address.family);
    U8(0);
    U16(a.port);
    for (std::uint8_t b : a.address.bytes) U8(b);
  }
  void Bytes(const std::byte* p, std::size_t n) {
    std::memcpy(out_.data() + at_, p, n);
    at_ += n;
  }
  std::size_t Written() const { return at_; }

 private:
  std::span<std::byte> out_;
  std::size_t at_ = 0;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  std::uint8_t U8() { return std::to_integer<std::uint8_t>(in_[at_++]); }
  std::uint16_t U16() {
    const std::uint16_t lo = U8();
    return static_cast<std::uint16_t>(lo | (U8() << 8));
  }
  std::uint32_t U32() {
    const std::uint32_t lo = U16();
    return lo | (std::uint32_t{U16()} << 16);
  }
  bool Address(SocketAddress* a) {
    a->address.family = U8();
    const std::uint8_t pad = U8();
    a->port = U16();
    for (std::uint8_t& b : a->address.bytes) b = U8();
    if (pad != 0 || (a->address.family != 4 && a->address.family != 6)) return false;
    // An IPv4 address has 4 bytes; the rest are zero on the wire, as everywhere else.
    if (a->address.family == 4) {
      for (std::size_t i = 4; i < a->address.bytes.size(); ++i) {
        if (a->address.bytes[i] != 0) return false;
      }
    }
    return true;
  }
  void Bytes(std::byte* p, std::size_t n) {
    std::memcpy(p, in_.data() + at_, n);
    at_ += n;
  }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

}  // namespace

std::size_t EncodeCm(const CmMessage& m, std::span<std::byte> out) {
  NDKSIM_CHECK(m.private_data_length <= kCmMaxPrivateData);
  NDKSIM_CHECK(out.size() >= kCmHeaderBytes + m.private_data_length);
  Writer w(out);
  w.U32(kCmMagic);
  w.U8(kCmVersion);
  w.U8(static_cast<std::uint8_t>(m.type));
  w.U8(static_cast<std::uint8_t>(m.reason));
  w.U8(0);
  w.Address(m.source);
  w.Address(m.destination);
  w.U32(m.source_node);
  w.U32(m.source_connection);
  w.U32(m.destination_connection);
  w.U32(m.qpn);
  w.U32(m.initial_psn);
  w.U32(m.inbound_read_limit);
  w.U32(m.outbound_read_limit);
  w.U16(m.private_data_length);
  w.U16(0);
  NDKSIM_CHECK(w.Written() == kCmHeaderBytes);
  w.Bytes(m.private_data.data(), m.private_data_length);
  return w.Written();
}

bool DecodeCm(std::span<const std::byte> bytes, CmMessage* out) {
  if (bytes.size() < kCmHeaderBytes) return false;
  Reader r(bytes);
  CmMessage m;
  if (r.U32() != kCmMagic || r.U8() != kCmVersion) return false;
  const std::uint8_t type = r.U8();
  const std::uint8_t reason = r.U8();
  if (r.U8() != 0) return false;  // reserved: one canonical encoding per message
  if (type > static_cast<std::uint8_t>(CmType::kDrep)) return false;
  if (reason > static_cast<std::uint8_t>(RejectReason::kAborted)) return false;
  m.type = static_cast<CmType>(type);
  m.reason = static_cast<RejectReason>(reason);
  if (!r.Address(&m.source) || !r.Address(&m.destination)) return false;
  m.source_node = r.U32();
  m.source_connection = r.U32();
  m.destination_connection = r.U32();
  m.qpn = r.U32();
  m.initial_psn = r.U32();
  m.inbound_read_limit = r.U32();
  m.outbound_read_limit = r.U32();
  m.private_data_length = r.U16();
  if (r.U16() != 0) return false;  // reserved
  if (m.private_data_length > kCmMaxPrivateData) return false;
  if (bytes.size() < kCmHeaderBytes + m.private_data_length) return false;
  r.Bytes(m.private_data.data(), m.private_data_length);
  *out = m;
  return true;
}

}  // namespace ndksim::provider
