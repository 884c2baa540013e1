// SPDX-License-Identifier: MIT
// Feeds NDK structures and connection private data to the provider as raw bytes: bad input must get
// an NTSTATUS and change nothing, good input must round-trip exactly. The first input byte picks a
// sub-harness (CM wire format, socket addresses, hostile node, connect path, adapter queries/LAMs).
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "hwmodel/nic.h"
#include "sim/node_access.h"
#include "ndkpi.h"
#include "ndksim/fabric.h"
#include "ndksim/harness.h"
#include "ndksim/profile.h"
#include "provider/cm_protocol.h"

namespace ndksim::fuzz {
namespace {

using provider::CmMessage;
using provider::CmType;
using provider::kCmHeaderBytes;
using provider::kCmMaxPrivateData;
using provider::RejectReason;
using provider::SocketAddress;

// What every output buffer is filled with before a call: bytes still equal to it were not written.
constexpr std::byte kUntouched{0xA5};
constexpr ULONG kSentinelLimit = 0xFEEDF00Du;  // an IRD/ORD out-parameter nobody wrote
constexpr ULONG kSentinelFbo = 0xFB0FB0u;
constexpr USHORT kListenPort = 4791;
constexpr Duration kStepLimit = Milliseconds(5);  // simulated time one connection step may take
constexpr std::size_t kMaxRogueDatagrams = 12;
constexpr std::size_t kPayloadBytes = 64;
// A private-data buffer never holds more than this; longer claimed lengths exceed every adapter
// limit, so the provider must refuse them before reading (ASan reports it if it reads anyway).
constexpr std::size_t kPrivateDataBufferBytes = 1024;
constexpr std::size_t kMaxSockaddrBytes = 40;  // a bit more than SOCKADDR_IN6
constexpr std::size_t kChainBufferBytes = 5 * PAGE_SIZE + 160;
constexpr std::size_t kMaxMdls = 4;
constexpr ULONG kMaxLamBytes = 160;
constexpr std::size_t kLamHeaderBytes = offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray);

constexpr std::array kAsyncModes = {AsyncCompletion::kInline, AsyncCompletion::kPending,
                                    AsyncCompletion::kPendingInCall, AsyncCompletion::kMixed};

struct HostAddresses {
  const char* v4;
  const char* v6;
  const char* Of(bool ipv6) const { return ipv6 ? v6 : v4; }
};
constexpr HostAddresses kHostA{"192.0.2.1", "2001:db8::1"};
constexpr HostAddresses kHostB{"192.0.2.2", "2001:db8::2"};
constexpr HostAddresses kHostC{"192.0.2.3", "2001:db8::3"};  // the rogue
constexpr const char* kNobodysAddress = "198.51.100.7";

// ---- bytes ----------------------------------------------------------------------------------------

bool SameBytes(const void* x, const void* y, std::size_t n) { return n == 0 || std::memcmp(x, y, n) == 0; }

bool AllUntouched(const std::byte* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::byte b) { return b == kUntouched; });
}

// Fills `out` from the input; what the input no longer has is zero, so a short input is still a
// deterministic one.
void FillFromInput(FuzzInput& in, std::span<std::byte> out) {
  const std::size_t n = in.Bytes(out.data(), out.size());
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), std::byte{0});
}

// A heap block of exactly `size` bytes, so AddressSanitizer reports any access past it.
class ExactBuffer {
 public:
  explicit ExactBuffer(std::size_t size) : size_(size), bytes_(new std::byte[size]) {
    std::fill_n(bytes_.get(), size_, kUntouched);
  }
  std::byte* Data() { return bytes_.get(); }
  const std::byte* Data() const { return bytes_.get(); }
  std::size_t Size() const { return size_; }
  std::span<std::byte> Span() { return {bytes_.get(), size_}; }
  std::span<const std::byte> View() const { return {bytes_.get(), size_}; }
  bool UntouchedFrom(std::size_t from) const {
    return from >= size_ || AllUntouched(bytes_.get() + from, size_ - from);
  }

 private:
  std::size_t size_;
  std::unique_ptr<std::byte[]> bytes_;
};

// `size` bytes the provider may write, 8-byte aligned, between guard zones it must never touch
// (writes inside one allocation are invisible to ASan, so the guards are checked by hand).
class GuardedBuffer {
 public:
  explicit GuardedBuffer(std::size_t size) : size_(size), words_((2 * kGuardBytes + size + 7) / 8) {
    std::fill_n(Raw(), Total(), kUntouched);
  }
  std::byte* Data() { return Raw() + kGuardBytes; }
  // The leading guard, and everything from byte `from` of the data on (the trailing guard included).
  bool UntouchedFrom(std::size_t from) const {
    const std::size_t start = kGuardBytes + std::min(from, size_);
    return AllUntouched(Raw(), kGuardBytes) && AllUntouched(Raw() + start, Total() - start);
  }

 private:
  static constexpr std::size_t kGuardBytes = 64;
  std::byte* Raw() { return reinterpret_cast<std::byte*>(words_.data()); }
  const std::byte* Raw() const { return reinterpret_cast<const std::byte*>(words_.data()); }
  std::size_t Total() const { return words_.size() * sizeof(std::uint64_t); }

  std::size_t size_;
  std::vector<std::uint64_t> words_;
};

// ---- addresses ------------------------------------------------------------------------------------

hw::NetworkAddress ParseAddress(const char* text) {
  hw::NetworkAddress a;
  const bool ipv6 = std::strchr(text, ':') != nullptr;
  a.family = ipv6 ? 6 : 4;
  NDKSIM_FUZZ_CHECK(inet_pton(ipv6 ? AF_INET6 : AF_INET, text, a.bytes.data()) == 1);
  return a;
}

SocketAddress EndpointAt(const char* text, std::uint16_t port) { return SocketAddress{ParseAddress(text), port}; }

// What the wire can carry: family 4 or 6 and all 16 address bytes, even past an IPv4 address.
SocketAddress ReadWireAddress(FuzzInput& in) {
  SocketAddress a;
  a.address.family = in.Bool() ? 6 : 4;
  a.port = in.Integral<std::uint16_t>();
  in.Bytes(reinterpret_cast<std::byte*>(a.address.bytes.data()), a.address.bytes.size());
  return a;
}

// The address a SOCKADDR round trip gives back: the bytes past an IPv4 address do not survive.
SocketAddress AsConsumerSees(SocketAddress a) {
  if (a.address.family == 4) std::fill(a.address.bytes.begin() + 4, a.address.bytes.end(), std::uint8_t{0});
  return a;
}

// What a consumer's SOCKADDR can say: an IPv4 address leaves bytes 4..16 zero.
SocketAddress ReadConsumerAddress(FuzzInput& in) { return AsConsumerSees(ReadWireAddress(in)); }

// A SOCKADDR_IN or SOCKADDR_IN6 as a consumer hands it to the provider.
struct ConsumerSockaddr {
  explicit ConsumerSockaddr(const SocketAddress& a) : length(provider::SockaddrLength(a)) {
    provider::ToSockaddr(a, Sa());
  }
  PSOCKADDR Sa() { return reinterpret_cast<PSOCKADDR>(&storage); }
  SOCKADDR_INET storage{};
  ULONG length;
};

// One of a connector's Get*Address slots, read back as a SocketAddress.
SocketAddress AddressOf(NDK_CONNECTOR* connector, NDK_FN_GET_LOCAL_ADDRESS query) {
  SOCKADDR_INET storage{};
  ULONG length = sizeof storage;
  NDKSIM_FUZZ_CHECK(query(connector, reinterpret_cast<PSOCKADDR>(&storage), &length) == STATUS_SUCCESS);
  SocketAddress a;
  NDKSIM_FUZZ_CHECK(provider::FromSockaddr(reinterpret_cast<const SOCKADDR*>(&storage), length, &a) ==
                    STATUS_SUCCESS);
  return a;
}

// ---- 1: CM wire format ----------------------------------------------------------------------------

bool SameMessage(const CmMessage& x, const CmMessage& y) {
  return x.type == y.type && x.reason == y.reason && x.source == y.source && x.destination == y.destination &&
         x.source_node == y.source_node && x.source_connection == y.source_connection &&
         x.destination_connection == y.destination_connection && x.qpn == y.qpn &&
         x.initial_psn == y.initial_psn && x.inbound_read_limit == y.inbound_read_limit &&
         x.outbound_read_limit == y.outbound_read_limit && x.private_data_length == y.private_data_length &&
         SameBytes(x.private_data.data(), y.private_data.data(), x.private_data_length);
}

// What DecodeCm must leave alone when it refuses a datagram.
CmMessage SentinelMessage() {
  CmMessage m;
  m.type = CmType::kDrep;
  m.reason = RejectReason::kAborted;
  m.source_node = 0xDEADBEEFu;
  m.source_connection = 0xC0FFEEu;
  m.private_data_length = 7;
  m.private_data.fill(kUntouched);
  return m;
}

bool Unchanged(const CmMessage& m) {
  const CmMessage sentinel = SentinelMessage();
  return SameMessage(m, sentinel) && m.private_data == sentinel.private_data;
}

void CheckDecodesTo(std::span<const std::byte> wire, const CmMessage& expected) {
  CmMessage again = SentinelMessage();
  NDKSIM_FUZZ_CHECK(provider::DecodeCm(wire, &again));
  NDKSIM_FUZZ_CHECK(SameMessage(again, expected));
}

// Arbitrary bytes: no read past them, nothing written on refusal, and what is accepted re-encodes
// to the same bytes (the format has one encoding per message: reserved bytes and an IPv4
// address's unused bytes are zero).
void CheckArbitraryCmBytes(FuzzInput& in) {
  ExactBuffer wire(std::min(in.Remaining(), hw::kManagementPayloadBytes + 64));
  FillFromInput(in, wire.Span());
  CmMessage decoded = SentinelMessage();
  if (!provider::DecodeCm(wire.View(), &decoded)) {
    NDKSIM_FUZZ_CHECK(Unchanged(decoded));
    return;
  }
  NDKSIM_FUZZ_CHECK(decoded.private_data_length <= kCmMaxPrivateData);
  const std::size_t length = kCmHeaderBytes + decoded.private_data_length;
  NDKSIM_FUZZ_CHECK(length <= wire.Size());
  ExactBuffer encoded(length);
  NDKSIM_FUZZ_CHECK(provider::EncodeCm(decoded, encoded.Span()) == length);
  for (std::size_t i = 0; i < length; ++i) NDKSIM_FUZZ_CHECK(encoded.Data()[i] == wire.Data()[i]);
  CheckDecodesTo(encoded.View(), decoded);
}

CmMessage ReadAnyCmMessage(FuzzInput& in) {
  CmMessage m;
  m.type = static_cast<CmType>(in.Pick(provider::kCmTypeNames.size()));
  m.reason = static_cast<RejectReason>(in.Pick(4));
  m.source = ReadConsumerAddress(in);
  m.destination = ReadConsumerAddress(in);
  m.source_node = in.Integral<std::uint32_t>();
  m.source_connection = in.Integral<std::uint32_t>();
  m.destination_connection = in.Integral<std::uint32_t>();
  m.qpn = in.Integral<std::uint32_t>();
  m.initial_psn = in.Integral<std::uint32_t>();
  m.inbound_read_limit = in.Integral<std::uint32_t>();
  m.outbound_read_limit = in.Integral<std::uint32_t>();
  m.private_data_length = static_cast<std::uint16_t>(in.InRange<std::uint64_t>(0, kCmMaxPrivateData));
  FillFromInput(in, std::span(m.private_data).first(m.private_data_length));
  return m;
}

// A well-formed message: encodes to header + private data, decodes back field for field (trailing
// bytes after it ignored), and no truncation of it is accepted.
void CheckEncodedCmRoundTrips(FuzzInput& in) {
  const CmMessage m = ReadAnyCmMessage(in);
  const std::size_t length = kCmHeaderBytes + m.private_data_length;
  ExactBuffer wire(length + in.InRange<std::size_t>(0, 16));
  NDKSIM_FUZZ_CHECK(provider::EncodeCm(m, wire.Span()) == length);
  FillFromInput(in, wire.Span().subspan(length));
  CheckDecodesTo(wire.View(), m);

  ExactBuffer truncated(in.InRange<std::size_t>(0, length - 1));
  std::memcpy(truncated.Data(), wire.Data(), truncated.Size());
  CmMessage refused = SentinelMessage();
  NDKSIM_FUZZ_CHECK(!provider::DecodeCm(truncated.View(), &refused));
  NDKSIM_FUZZ_CHECK(Unchanged(refused));
}

void FuzzCmWireFormat(FuzzInput& in) {
  if (in.Bool()) {
    CheckEncodedCmRoundTrips(in);
  } else {
    CheckArbitraryCmBytes(in);
  }
}

// ---- 2: socket addresses --------------------------------------------------------------------------

SocketAddress SentinelAddress() {
  SocketAddress a;
  a.address.family = 0xEE;
  a.address.bytes.fill(0x5A);
  a.port = 0xBEEF;
  return a;
}

// The contract in cm_protocol.h, from the bytes alone.
NTSTATUS ExpectedFromSockaddr(const std::byte* bytes, std::size_t length) {
  if (bytes == nullptr) return STATUS_INVALID_PARAMETER;
  if (length < sizeof(sa_family_t)) return STATUS_INVALID_ADDRESS;
  sa_family_t family;
  std::memcpy(&family, bytes, sizeof family);
  if (family == AF_INET) return length < sizeof(SOCKADDR_IN) ? STATUS_INVALID_ADDRESS : STATUS_SUCCESS;
  if (family == AF_INET6) return length < sizeof(SOCKADDR_IN6) ? STATUS_INVALID_ADDRESS : STATUS_SUCCESS;
  return STATUS_INVALID_ADDRESS;
}

// What an accepted SOCKADDR says, read straight from its bytes.
SocketAddress DecodeSockaddrByHand(const std::byte* bytes) {
  sa_family_t family;
  std::memcpy(&family, bytes, sizeof family);
  SocketAddress a;
  std::uint16_t port;
  if (family == AF_INET) {
    a.address.family = 4;
    std::memcpy(&port, bytes + offsetof(SOCKADDR_IN, sin_port), sizeof port);
    std::memcpy(a.address.bytes.data(), bytes + offsetof(SOCKADDR_IN, sin_addr), 4);
  } else {
    a.address.family = 6;
    std::memcpy(&port, bytes + offsetof(SOCKADDR_IN6, sin6_port), sizeof port);
    std::memcpy(a.address.bytes.data(), bytes + offsetof(SOCKADDR_IN6, sin6_addr), 16);
  }
  a.port = ntohs(port);
  return a;
}

// ToSockaddr writes exactly SockaddrLength bytes, and FromSockaddr reads back the same address.
void CheckSockaddrRoundTrip(const SocketAddress& a) {
  const ULONG length = provider::SockaddrLength(a);
  NDKSIM_FUZZ_CHECK(length == (a.address.family == 6 ? sizeof(SOCKADDR_IN6) : sizeof(SOCKADDR_IN)));
  ExactBuffer out(length);
  provider::ToSockaddr(a, reinterpret_cast<SOCKADDR*>(out.Data()));
  SocketAddress back = SentinelAddress();
  NDKSIM_FUZZ_CHECK(provider::FromSockaddr(reinterpret_cast<const SOCKADDR*>(out.Data()), length, &back) ==
                    STATUS_SUCCESS);
  NDKSIM_FUZZ_CHECK(back == a);
}

// The ref §3.18 address-query protocol with any *length: short or missing buffer -> BUFFER_TOO_SMALL,
// the required length written back and nothing else; else exactly the address, nothing past it.
void CheckCopyOutAddress(FuzzInput& in, const SocketAddress& a) {
  const ULONG needed = provider::SockaddrLength(a);
  if (in.Chance(16)) {
    ExactBuffer out(needed);
    NDKSIM_FUZZ_CHECK(provider::CopyOutAddress(a, reinterpret_cast<SOCKADDR*>(out.Data()), nullptr) ==
                      STATUS_INVALID_PARAMETER);
    NDKSIM_FUZZ_CHECK(out.UntouchedFrom(0));
    return;
  }
  const bool null_buffer = in.Chance(32);
  // Without a buffer any length is fair; with one, the length is its true size.
  const ULONG given = null_buffer ? in.Integral<ULONG>() : in.InRange<ULONG>(0, kMaxSockaddrBytes);
  ExactBuffer out(null_buffer ? 0 : given);
  ULONG length = given;
  const NTSTATUS status =
      provider::CopyOutAddress(a, null_buffer ? nullptr : reinterpret_cast<SOCKADDR*>(out.Data()), &length);
  NDKSIM_FUZZ_CHECK(length == needed);
  if (null_buffer || given < needed) {
    NDKSIM_FUZZ_CHECK(status == STATUS_BUFFER_TOO_SMALL);
    NDKSIM_FUZZ_CHECK(out.UntouchedFrom(0));
    return;
  }
  NDKSIM_FUZZ_CHECK(status == STATUS_SUCCESS);
  NDKSIM_FUZZ_CHECK(out.UntouchedFrom(needed));
  SocketAddress back = SentinelAddress();
  NDKSIM_FUZZ_CHECK(provider::FromSockaddr(reinterpret_cast<const SOCKADDR*>(out.Data()), needed, &back) ==
                    STATUS_SUCCESS);
  NDKSIM_FUZZ_CHECK(back == a);
}

void FuzzSocketAddresses(FuzzInput& in) {
  const bool null_pointer = in.Chance(16);
  ExactBuffer raw(in.InRange<std::size_t>(0, kMaxSockaddrBytes));
  FillFromInput(in, raw.Span());
  const auto length = static_cast<ULONG>(raw.Size());
  const std::byte* bytes = null_pointer ? nullptr : raw.Data();
  SocketAddress parsed = SentinelAddress();
  const NTSTATUS status = provider::FromSockaddr(reinterpret_cast<const SOCKADDR*>(bytes), length, &parsed);
  NDKSIM_FUZZ_CHECK(status == ExpectedFromSockaddr(bytes, length));
  if (status != STATUS_SUCCESS) {
    NDKSIM_FUZZ_CHECK(parsed == SentinelAddress());
    CheckCopyOutAddress(in, ReadConsumerAddress(in));
    return;
  }
  NDKSIM_FUZZ_CHECK(parsed == DecodeSockaddrByHand(bytes));
  CheckSockaddrRoundTrip(parsed);
  CheckCopyOutAddress(in, parsed);
}

// ---- shared by the fabric sub-harnesses -----------------------------------------------------------

FabricConfig FunctionalConfig(AsyncCompletion mode) {
  FabricConfig config;
  config.profile = profiles::kFunctional;
  config.async_completion = mode;
  return config;
}

// One maybe-asynchronous request (ref §3.0): PENDING means exactly one callback follows.
struct Request {
  NTSTATUS status = STATUS_PENDING;
  int calls = 0;
  static void Done(PVOID context, NTSTATUS status) {
    auto* r = static_cast<Request*>(context);
    r->status = status;
    ++r->calls;
  }
  bool Finished() const { return calls > 0; }
  // Folds an inline return into the record; an inline return means no callback.
  NTSTATUS Returned(NTSTATUS s) {
    NDKSIM_FUZZ_CHECK(s == STATUS_PENDING || calls == 0);
    if (s != STATUS_PENDING) status = s;
    return s;
  }
};

void IgnoreCqNotification(PVOID, NTSTATUS) {}
void CountDisconnect(PVOID context) { ++*static_cast<int*>(context); }

struct Side {
  Node* node = nullptr;
  NDK_ADAPTER* adapter = nullptr;
  NDK_CQ* cq = nullptr;
  NDK_PD* pd = nullptr;
  NDK_ADAPTER_INFO info{};
  int disconnects = 0;

  NDK_QP* NewQp() {
    NDK_QP* qp = nullptr;
    NDKSIM_FUZZ_CHECK(pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 8, 8, 1, 1, 0, nullptr, nullptr, &qp) ==
                      STATUS_SUCCESS);
    return qp;
  }
  NDK_CONNECTOR* NewConnector() {
    NDK_CONNECTOR* c = nullptr;
    NDKSIM_FUZZ_CHECK(adapter->Dispatch->NdkCreateConnector(adapter, nullptr, nullptr, &c) == STATUS_SUCCESS);
    return c;
  }
};

// Nodes a and b with a 2.1 adapter, a CQ and a PD each, and optionally a rogue node c that opens
// nothing. Everything the provider may call back into lives here, so it outlives the adapter
// closes in the destructor (which cancel what is still pending).
class TestFabric {
 public:
  TestFabric(AsyncCompletion mode, bool with_rogue) : fabric_(FunctionalConfig(mode)) {
    Open(a_, fabric_.AddNode({"a", {kHostA.v4, kHostA.v6}}));
    Open(b_, fabric_.AddNode({"b", {kHostB.v4, kHostB.v6}}));
    if (with_rogue) rogue_ = &fabric_.AddNode({"c", {kHostC.v4, kHostC.v6}});
  }
  ~TestFabric() {
    a_.node->CloseAdapter(a_.adapter);
    b_.node->CloseAdapter(b_.adapter);
    fabric_.RunUntilIdle();
  }
  TestFabric(const TestFabric&) = delete;
  TestFabric& operator=(const TestFabric&) = delete;

  Fabric& Net() { return fabric_; }
  Side& A() { return a_; }
  Side& B() { return b_; }
  Node& Rogue() { return *rogue_; }
  Request& NewRequest() { return requests_.emplace_back(); }
  // Connectors the listener handed out, oldest first; the caller takes them.
  std::vector<NDK_CONNECTOR*>& Incoming() { return incoming_; }
  bool Run(const std::function<bool()>& done) { return static_cast<bool>(fabric_.RunUntil(done, kStepLimit)); }
  void RunBriefly() { fabric_.RunFor(Microseconds(10)); }  // far below the 1 ms step timeout

  NDK_LISTENER* ListenOnB(const SocketAddress& at) {
    NDK_LISTENER* listener = nullptr;
    NDKSIM_FUZZ_CHECK(b_.adapter->Dispatch->NdkCreateListener(b_.adapter, OnConnect, this, nullptr, nullptr,
                                                              &listener) == STATUS_SUCCESS);
    ConsumerSockaddr sa(at);
    NDKSIM_FUZZ_CHECK(listener->Dispatch->NdkListen(listener, sa.Sa(), sa.length, nullptr, nullptr) ==
                      STATUS_SUCCESS);
    return listener;
  }

 private:
  static void Open(Side& side, Node& node) {
    side.node = &node;
    NDKSIM_FUZZ_CHECK(node.OpenAdapter(NDK_VERSION{2, 1}, &side.adapter) == STATUS_SUCCESS);
    const NDK_ADAPTER_DISPATCH* d = side.adapter->Dispatch;
    NDKSIM_FUZZ_CHECK(d->NdkCreateCq(side.adapter, 64, IgnoreCqNotification, nullptr, nullptr, nullptr, nullptr,
                                     &side.cq) == STATUS_SUCCESS);
    NDKSIM_FUZZ_CHECK(d->NdkCreatePd(side.adapter, nullptr, nullptr, &side.pd) == STATUS_SUCCESS);
    ULONG size = sizeof side.info;
    NDKSIM_FUZZ_CHECK(d->NdkQueryAdapterInfo(side.adapter, &side.info, &size) == STATUS_SUCCESS);
  }
  static void OnConnect(PVOID context, NDK_CONNECTOR* connector) {
    static_cast<TestFabric*>(context)->incoming_.push_back(connector);
  }

  Fabric fabric_;
  Side a_;
  Side b_;
  Node* rogue_ = nullptr;
  std::deque<Request> requests_;  // a deque: records keep their address while more are added
  std::vector<NDK_CONNECTOR*> incoming_;
};

// Private data as a consumer passes it: a pointer (maybe NULL) and a claimed length, which may
// exceed what the buffer holds only when it exceeds every adapter's limit.
struct PrivateData {
  std::unique_ptr<std::byte[]> bytes;
  ULONG length = 0;
  bool null_pointer = false;

  void* Pointer() const { return null_pointer ? nullptr : bytes.get(); }
  bool Acceptable(ULONG limit) const { return length <= limit && (length == 0 || !null_pointer); }
  // What the peer must see (only meaningful when Acceptable).
  std::span<const std::byte> Sent() const { return {bytes.get(), null_pointer ? 0 : std::size_t{length}}; }
};

PrivateData PrivateDataOfLength(FuzzInput& in, ULONG length) {
  PrivateData p;
  p.length = length;
  const std::size_t stored = std::min<std::size_t>(length, kPrivateDataBufferBytes);
  p.bytes.reset(new std::byte[stored]);
  FillFromInput(in, {p.bytes.get(), stored});
  return p;
}

PrivateData ReadAcceptablePrivateData(FuzzInput& in, ULONG limit) {
  return PrivateDataOfLength(in, in.InRange<ULONG>(0, limit));
}

// Anything a consumer might pass, against the adapter's `limit` (MaxCallerData or MaxCalleeData).
PrivateData ReadPrivateData(FuzzInput& in, ULONG limit) {
  switch (in.Pick(4)) {
    case 0: return ReadAcceptablePrivateData(in, limit);
    case 1: return PrivateDataOfLength(in, limit + in.InRange<ULONG>(1, 64));  // just over
    case 2: return PrivateDataOfLength(in, in.Integral<ULONG>());
    default: {
      PrivateData p = ReadAcceptablePrivateData(in, limit);
      p.null_pointer = true;  // illegal unless the length is 0
      return p;
    }
  }
}

// Most the effective IRD/ORD a connector reports may be (ref §3.16 min rule).
struct LimitBounds {
  ULONG inbound;
  ULONG outbound;
};

NTSTATUS GetConnectionData(NDK_CONNECTOR* c, ULONG* ird, ULONG* ord, void* data, ULONG* length) {
  return c->Dispatch->NdkGetConnectionData(c, ird, ord, data, length);
}

// ref §3.18 private-data protocol: a NULL buffer with *len 0 is a size query (SUCCESS + RDS).
void ProbeRequiredSize(FuzzInput& in, NDK_CONNECTOR* c, std::span<const std::byte> sent, LimitBounds bounds) {
  const bool want_limits = in.Bool();
  ULONG ird = kSentinelLimit;
  ULONG ord = kSentinelLimit;
  ULONG length = 0;
  NDKSIM_FUZZ_CHECK(GetConnectionData(c, want_limits ? &ird : nullptr, want_limits ? &ord : nullptr, nullptr,
                                      &length) == STATUS_SUCCESS);
  NDKSIM_FUZZ_CHECK(length >= sent.size());
  if (want_limits) NDKSIM_FUZZ_CHECK(ird <= bounds.inbound && ord <= bounds.outbound);
}

// A NULL buffer with *len > 0 is illegal; ndksim answers INVALID_PARAMETER and writes nothing
// (docs/conformance.md, "Where ndksim chose").
void ProbeIllegalCall(FuzzInput& in, NDK_CONNECTOR* c) {
  const ULONG given = in.InRange<ULONG>(1, MAXULONG);
  ULONG length = given;
  ULONG ird = kSentinelLimit;
  ULONG ord = kSentinelLimit;
  NDKSIM_FUZZ_CHECK(GetConnectionData(c, &ird, &ord, nullptr, &length) == STATUS_INVALID_PARAMETER);
  NDKSIM_FUZZ_CHECK(length == given && ird == kSentinelLimit && ord == kSentinelLimit);
}

// Otherwise min(*len, RDS) bytes are copied, SUCCESS iff *len >= RDS (else BUFFER_TOO_SMALL), and
// RDS is always written back; the bytes are what the peer sent.
void ProbeCopy(FuzzInput& in, NDK_CONNECTOR* c, std::span<const std::byte> sent) {
  const ULONG given = in.InRange<ULONG>(0, static_cast<ULONG>(sent.size()) + 8);
  ExactBuffer out(given);
  ULONG length = given;
  const NTSTATUS status = GetConnectionData(c, nullptr, nullptr, out.Data(), &length);
  const ULONG required = length;
  NDKSIM_FUZZ_CHECK(required >= sent.size());
  NDKSIM_FUZZ_CHECK(status == (given >= required ? STATUS_SUCCESS : STATUS_BUFFER_TOO_SMALL));
  const std::size_t copied = std::min(given, required);
  NDKSIM_FUZZ_CHECK(SameBytes(out.Data(), sent.data(), std::min(copied, sent.size())));
  NDKSIM_FUZZ_CHECK(out.UntouchedFrom(copied));
}

void CheckConnectionData(FuzzInput& in, NDK_CONNECTOR* c, std::span<const std::byte> sent, LimitBounds bounds) {
  const std::size_t probes = in.InRange<std::size_t>(1, 3);
  for (std::size_t i = 0; i < probes; ++i) {
    switch (in.Pick(3)) {
      case 0: ProbeRequiredSize(in, c, sent, bounds); break;
      case 1: ProbeIllegalCall(in, c); break;
      default: ProbeCopy(in, c, sent); break;
    }
  }
}

// ---- 3: a hostile node ----------------------------------------------------------------------------

// Node c's NIC sends datagrams (random bytes, or CM messages with guessed fields) at the addresses
// of a and b while a and b hold an established connection and b listens. c is not the peer of
// anything, so nothing it sends may end that connection or stop it carrying data, and every
// connect event must deliver the private data of a REQ that was actually sent.
class HostileNode {
 public:
  HostileNode(TestFabric& net, bool ipv6) : net_(net), ipv6_(ipv6) {}

  void Run(FuzzInput& in) {
    Establish();
    const std::size_t datagrams = in.InRange<std::size_t>(1, kMaxRogueDatagrams);
    for (std::size_t i = 0; i < datagrams; ++i) {
      SendRogueDatagram(in);
      net_.Net().RunFor(Microseconds(static_cast<std::int64_t>(in.InRange(0, 50))));
      AnswerConnectEvents(in);
    }
    net_.Net().RunFor(Microseconds(100));
    AnswerConnectEvents(in);
    CheckConnectionSurvived(in);
  }

 private:
  enum class Owner : std::uint8_t { kA, kB, kRogue, kNobody };
  struct Target {
    hw::NetworkAddress address;
    Owner owner;
  };

  void Establish() {
    Side& a = net_.A();
    Side& b = net_.B();
    listen_ = EndpointAt(kHostB.Of(ipv6_), kListenPort);
    net_.ListenOnB(listen_);
    qp_a_ = a.NewQp();
    qp_b_ = b.NewQp();
    NDK_CONNECTOR* active = a.NewConnector();
    ConsumerSockaddr source(EndpointAt(kHostA.Of(ipv6_), 0));
    ConsumerSockaddr destination(listen_);
    Request& connect = net_.NewRequest();
    NDKSIM_FUZZ_CHECK(connect.Returned(active->Dispatch->NdkConnect(
                          active, qp_a_, source.Sa(), source.length, destination.Sa(), destination.length, 4, 4,
                          nullptr, 0, Request::Done, &connect)) == STATUS_PENDING);
    net_.Run([&] { return !net_.Incoming().empty() || connect.Finished(); });
    NDKSIM_FUZZ_CHECK(net_.Incoming().size() == 1);
    NDK_CONNECTOR* passive = net_.Incoming().front();
    net_.Incoming().clear();
    Request& accept = net_.NewRequest();
    NDKSIM_FUZZ_CHECK(accept.Returned(passive->Dispatch->NdkAccept(passive, qp_b_, 4, 4, nullptr, 0, CountDisconnect,
                                                                   &b.disconnects, Request::Done, &accept)) ==
                      STATUS_PENDING);
    net_.Run([&] { return connect.Finished(); });
    NDKSIM_FUZZ_CHECK(connect.status == STATUS_SUCCESS);
    NDKSIM_FUZZ_CHECK(active->Dispatch->NdkCompleteConnect(active, CountDisconnect, &a.disconnects, nullptr,
                                                           nullptr) == STATUS_SUCCESS);
    net_.Run([&] { return accept.Finished(); });
    NDKSIM_FUZZ_CHECK(accept.status == STATUS_SUCCESS);

    active_endpoint_ = AddressOf(active, active->Dispatch->NdkGetLocalAddress);
    qpn_a_ = a.node->QpNumber(qp_a_).value_or(0);
    qpn_b_ = b.node->QpNumber(qp_b_).value_or(0);
    targets_ = {
        {ParseAddress(kHostB.Of(ipv6_)), Owner::kB},     {ParseAddress(kHostA.Of(ipv6_)), Owner::kA},
        {ParseAddress(kHostB.Of(!ipv6_)), Owner::kB},    {ParseAddress(kHostA.Of(!ipv6_)), Owner::kA},
        {ParseAddress(kHostC.Of(ipv6_)), Owner::kRogue}, {ParseAddress(kNobodysAddress), Owner::kNobody},
    };
  }

  // An address:port a forged message names: the listener, a's end of the connection, the rogue's
  // own, or anything the wire can carry.
  SocketAddress PickEndpoint(FuzzInput& in) {
    switch (in.Pick(4)) {
      case 0: return listen_;
      case 1: return active_endpoint_;
      case 2: return EndpointAt(kHostC.Of(ipv6_), in.Integral<std::uint16_t>());
      default: return ReadWireAddress(in);
    }
  }

  std::uint32_t PickNodeId(FuzzInput& in) {
    switch (in.Pick(4)) {
      case 0: return ndksim::sim::NicOf(*net_.A().node).Id();
      case 1: return ndksim::sim::NicOf(*net_.B().node).Id();
      case 2: return ndksim::sim::NicOf(net_.Rogue()).Id();
      default: return in.Integral<std::uint32_t>();
    }
  }

  // Drivers number their connectors from 1, so the real ids are small.
  static std::uint32_t GuessConnectionId(FuzzInput& in) {
    return in.Bool() ? in.InRange<std::uint32_t>(0, 7) : in.Integral<std::uint32_t>();
  }

  std::uint32_t PickQpn(FuzzInput& in) {
    switch (in.Pick(3)) {
      case 0: return qpn_a_;
      case 1: return qpn_b_;
      default: return in.Integral<std::uint32_t>();
    }
  }

  static std::uint32_t ReadReadLimit(FuzzInput& in) {
    return in.Bool() ? in.InRange<std::uint32_t>(0, 32) : in.Integral<std::uint32_t>();
  }

  CmMessage ForgedMessage(FuzzInput& in) {
    CmMessage m;
    m.type = static_cast<CmType>(in.Pick(provider::kCmTypeNames.size()));
    m.reason = static_cast<RejectReason>(in.Pick(4));
    m.source = PickEndpoint(in);
    m.destination = PickEndpoint(in);
    m.source_node = PickNodeId(in);
    m.source_connection = GuessConnectionId(in);
    m.destination_connection = GuessConnectionId(in);
    m.qpn = PickQpn(in);
    m.initial_psn = in.Integral<std::uint32_t>();
    m.inbound_read_limit = ReadReadLimit(in);
    m.outbound_read_limit = ReadReadLimit(in);
    m.private_data_length = static_cast<std::uint16_t>(in.InRange<std::uint64_t>(0, kCmMaxPrivateData));
    FillFromInput(in, std::span(m.private_data).first(m.private_data_length));
    return m;
  }

  void SendRogueDatagram(FuzzInput& in) {
    const Target& target = targets_[in.Pick(targets_.size())];
    std::array<std::byte, hw::kManagementPayloadBytes> wire{};
    std::size_t size = 0;
    if (in.Chance(64)) {
      size = in.InRange<std::size_t>(0, wire.size());
      FillFromInput(in, std::span(wire).first(size));
    } else {
      size = provider::EncodeCm(ForgedMessage(in), wire);
    }
    const std::span<const std::byte> bytes(wire.data(), size);
    const bool routed = ndksim::sim::NicOf(net_.Rogue()).SendManagementDatagram(target.address, bytes);
    NDKSIM_FUZZ_CHECK(routed == (target.owner != Owner::kNobody));
    // A REQ reaches the listener when it lands on b, names exactly the listener's address:port,
    // says it comes from the node that sent it (b's connection manager drops one that claims another
    // node) and carries no more private data than a connect may (it is rejected otherwise).
    CmMessage request;
    if (target.owner == Owner::kB && provider::DecodeCm(bytes, &request) && request.type == CmType::kReq &&
        request.destination == listen_ && request.source_node == ndksim::sim::NicOf(net_.Rogue()).Id() &&
        request.private_data_length <= net_.B().info.MaxCallerData) {
      sent_requests_.push_back(request);
    }
  }

  // Connect events come in the order b received the REQs for the listener (one that gave no event
  // is skipped). The connector's private data, peer address and read limits are those of the REQ.
  void MatchSentRequest(NDK_CONNECTOR* c) {
    ULONG required = 0;
    ULONG ird = kSentinelLimit;
    ULONG ord = kSentinelLimit;
    NDKSIM_FUZZ_CHECK(GetConnectionData(c, &ird, &ord, nullptr, &required) == STATUS_SUCCESS);
    ExactBuffer data(required);
    ULONG length = required;
    NDKSIM_FUZZ_CHECK(GetConnectionData(c, nullptr, nullptr, data.Data(), &length) == STATUS_SUCCESS);
    NDKSIM_FUZZ_CHECK(length == required);
    const SocketAddress peer = AddressOf(c, c->Dispatch->NdkGetPeerAddress);
    const NDK_ADAPTER_INFO& info = net_.B().info;
    while (!sent_requests_.empty()) {
      const CmMessage request = sent_requests_.front();
      sent_requests_.pop_front();
      if (required >= request.private_data_length &&
          SameBytes(data.Data(), request.private_data.data(), request.private_data_length) &&
          peer == AsConsumerSees(request.source)) {
        NDKSIM_FUZZ_CHECK(ird <= info.MaxInboundReadLimit && ird <= request.outbound_read_limit);
        NDKSIM_FUZZ_CHECK(ord <= info.MaxOutboundReadLimit && ord <= request.inbound_read_limit);
        return;
      }
    }
    const bool connect_event_matches_a_sent_request = false;
    NDKSIM_FUZZ_CHECK(connect_event_matches_a_sent_request);
  }

  // The consumer's answer to a connector the rogue caused: reject it, close it, or leave it open
  // until the adapter closes.
  void AnswerConnectEvents(FuzzInput& in) {
    std::vector<NDK_CONNECTOR*> incoming;
    incoming.swap(net_.Incoming());
    for (NDK_CONNECTOR* c : incoming) {
      MatchSentRequest(c);
      switch (in.Pick(3)) {
        case 0: {
          const PrivateData refusal = ReadAcceptablePrivateData(in, net_.B().info.MaxCalleeData);
          const NTSTATUS s = c->Dispatch->NdkReject(c, refusal.Pointer(), refusal.length);
          // CONNECTION_ABORTED when the forged source address has no route back.
          NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS || s == STATUS_CONNECTION_ABORTED);
          Close(c);
          break;
        }
        case 1: Close(c); break;
        default: break;
      }
    }
  }

  static void Close(NDK_CONNECTOR* c) {
    const NTSTATUS s = c->Dispatch->NdkCloseConnector(&c->Header, nullptr, nullptr);
    NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS || s == STATUS_PENDING);
  }

  static void Poll(NDK_CQ* cq, std::optional<NDK_RESULT>& result) {
    NDK_RESULT r;
    if (!result && cq->Dispatch->NdkGetCqResults(cq, &r, 1) == 1) result = r;
  }

  // No disconnect event on either side, and a send a -> b still arrives intact.
  void CheckConnectionSurvived(FuzzInput& in) {
    const bool no_disconnect_event_caused_by_the_rogue = net_.A().disconnects == 0 && net_.B().disconnects == 0;
    NDKSIM_FUZZ_CHECK(no_disconnect_event_caused_by_the_rogue);
    const auto length = in.InRange<ULONG>(1, kPayloadBytes);
    RegisteredBuffer source(net_.A().pd, kPayloadBytes, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    RegisteredBuffer sink(net_.B().pd, kPayloadBytes, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    FillFromInput(in, {source.Data(), length});
    std::fill_n(sink.Data(), kPayloadBytes, kUntouched);
    const NDK_SGE receive_sge = sink.Sge(0, kPayloadBytes);
    const NDK_SGE send_sge = source.Sge(0, length);
    NDKSIM_FUZZ_CHECK(qp_b_->Dispatch->NdkReceive(qp_b_, &sink, &receive_sge, 1) == STATUS_SUCCESS);
    NDKSIM_FUZZ_CHECK(qp_a_->Dispatch->NdkSend(qp_a_, &source, &send_sge, 1, 0) == STATUS_SUCCESS);
    std::optional<NDK_RESULT> sent;
    std::optional<NDK_RESULT> received;
    net_.Net().RunUntil(
        [&] {
          Poll(net_.A().cq, sent);
          Poll(net_.B().cq, received);
          return sent && received;
        },
        Milliseconds(10));
    NDKSIM_FUZZ_CHECK(sent && received);
    NDKSIM_FUZZ_CHECK(sent->Status == STATUS_SUCCESS && sent->RequestContext == &source);
    NDKSIM_FUZZ_CHECK(received->Status == STATUS_SUCCESS && received->RequestContext == &sink);
    NDKSIM_FUZZ_CHECK(received->BytesTransferred == length);
    NDKSIM_FUZZ_CHECK(SameBytes(sink.Data(), source.Data(), length));
  }

  TestFabric& net_;
  const bool ipv6_;
  SocketAddress listen_;
  SocketAddress active_endpoint_;
  NDK_QP* qp_a_ = nullptr;
  NDK_QP* qp_b_ = nullptr;
  std::uint32_t qpn_a_ = 0;
  std::uint32_t qpn_b_ = 0;
  std::vector<Target> targets_;
  std::deque<CmMessage> sent_requests_;
};

void FuzzHostileNode(FuzzInput& in) {
  TestFabric net(AsyncCompletion::kInline, /*with_rogue=*/true);
  HostileNode rogue(net, in.Bool());
  rogue.Run(in);
}

// ---- 4: private data through the real connect path ------------------------------------------------

// a connects to b's listener with fuzzed private data; b accepts or rejects with fuzzed private
// data; a completes or rejects. Data above MaxCallerData/MaxCalleeData (or a NULL pointer with a
// length) fails inline with INVALID_PARAMETER, sends nothing and leaves the connector answerable;
// the peer's GetConnectionData gives back exactly what was sent.
class PrivateDataPath {
 public:
  explicit PrivateDataPath(TestFabric& net) : net_(net), a_(net.A()), b_(net.B()) {}

  void Run(FuzzInput& in) {
    const bool ipv6 = in.Bool();
    listen_ = EndpointAt(kHostB.Of(ipv6), kListenPort);
    net_.ListenOnB(listen_);
    source_ = EndpointAt(kHostA.Of(ipv6), 0);
    qp_a_ = a_.NewQp();
    qp_b_ = b_.NewQp();
    active_ = a_.NewConnector();
    ird_ = in.InRange<ULONG>(0, 32);
    ord_ = in.InRange<ULONG>(0, 32);
    const PrivateData request = Connect(in);
    net_.Run([&] { return !net_.Incoming().empty() || connect_.Finished(); });
    NDKSIM_FUZZ_CHECK(net_.Incoming().size() == 1 && !connect_.Finished());
    passive_ = net_.Incoming().front();
    net_.Incoming().clear();
    CheckConnectionData(in, passive_, request.Sent(),
                        {std::min(b_.info.MaxInboundReadLimit, ord_), std::min(b_.info.MaxOutboundReadLimit, ird_)});
    if (in.Bool()) {
      AcceptThenFinish(in);
    } else {
      RejectIncoming(in);
    }
  }

 private:
  NTSTATUS CallConnect(const PrivateData& p) {
    ConsumerSockaddr source(source_);
    ConsumerSockaddr destination(listen_);
    return connect_.Returned(active_->Dispatch->NdkConnect(active_, qp_a_, source.Sa(), source.length,
                                                           destination.Sa(), destination.length, ird_, ord_,
                                                           p.Pointer(), p.length, Request::Done, &connect_));
  }

  NTSTATUS CallAccept(const PrivateData& p, Request& accept) {
    return accept.Returned(passive_->Dispatch->NdkAccept(passive_, qp_b_, 4, 4, p.Pointer(), p.length,
                                                         CountDisconnect, &b_.disconnects, Request::Done, &accept));
  }

  static NTSTATUS CallReject(NDK_CONNECTOR* c, const PrivateData& p) {
    return c->Dispatch->NdkReject(c, p.Pointer(), p.length);
  }

  // Returns the private data of the connect that went out.
  PrivateData Connect(FuzzInput& in) {
    const ULONG limit = a_.info.MaxCallerData;
    PrivateData p = ReadPrivateData(in, limit);
    NTSTATUS s = CallConnect(p);
    if (!p.Acceptable(limit)) {
      NDKSIM_FUZZ_CHECK(s == STATUS_INVALID_PARAMETER);
      net_.RunBriefly();
      NDKSIM_FUZZ_CHECK(connect_.calls == 0 && net_.Incoming().empty());  // no callback, no REQ
      p = ReadAcceptablePrivateData(in, limit);
      s = CallConnect(p);  // the same connector and QP: the failed call left both unused
    }
    NDKSIM_FUZZ_CHECK(s == STATUS_PENDING);
    return p;
  }

  void AcceptThenFinish(FuzzInput& in) {
    const ULONG limit = b_.info.MaxCalleeData;
    Request& accept = net_.NewRequest();
    PrivateData reply = ReadPrivateData(in, limit);
    NTSTATUS s = CallAccept(reply, accept);
    if (!reply.Acceptable(limit)) {
      NDKSIM_FUZZ_CHECK(s == STATUS_INVALID_PARAMETER);
      net_.RunBriefly();
      NDKSIM_FUZZ_CHECK(accept.calls == 0 && connect_.calls == 0);  // no callback, no REP
      reply = ReadAcceptablePrivateData(in, limit);
      s = CallAccept(reply, accept);
    }
    NDKSIM_FUZZ_CHECK(s == STATUS_PENDING);
    net_.Run([&] { return connect_.Finished(); });
    NDKSIM_FUZZ_CHECK(connect_.status == STATUS_SUCCESS && connect_.calls == 1);
    CheckConnectionData(in, active_, reply.Sent(),
                        {std::min(a_.info.MaxInboundReadLimit, ird_), std::min(a_.info.MaxOutboundReadLimit, ord_)});
    if (in.Bool()) {
      Complete(accept);
    } else {
      RejectAfterReply(in, accept);
    }
  }

  void Complete(Request& accept) {
    Request& complete = net_.NewRequest();
    const NTSTATUS s = complete.Returned(
        active_->Dispatch->NdkCompleteConnect(active_, CountDisconnect, &a_.disconnects, Request::Done, &complete));
    NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS || s == STATUS_PENDING);
    net_.Run([&] { return accept.Finished() && complete.status != STATUS_PENDING; });
    NDKSIM_FUZZ_CHECK(accept.status == STATUS_SUCCESS && complete.status == STATUS_SUCCESS);
    NDKSIM_FUZZ_CHECK(accept.calls == 1 && complete.calls == (s == STATUS_PENDING ? 1 : 0));
  }

  // ref §3.18: the active side may still reject after its connect completed (limit MaxCallerData);
  // the acceptor's Accept then fails with CONNECTION_ABORTED.
  void RejectAfterReply(FuzzInput& in, Request& accept) {
    const ULONG limit = a_.info.MaxCallerData;
    PrivateData refusal = ReadPrivateData(in, limit);
    NTSTATUS s = CallReject(active_, refusal);
    if (!refusal.Acceptable(limit)) {
      NDKSIM_FUZZ_CHECK(s == STATUS_INVALID_PARAMETER);
      net_.RunBriefly();
      NDKSIM_FUZZ_CHECK(accept.calls == 0);  // no REJ went out
      refusal = ReadAcceptablePrivateData(in, limit);
      s = CallReject(active_, refusal);
    }
    NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS);
    net_.Run([&] { return accept.Finished(); });
    NDKSIM_FUZZ_CHECK(accept.status == STATUS_CONNECTION_ABORTED);
  }

  void RejectIncoming(FuzzInput& in) {
    const ULONG limit = b_.info.MaxCalleeData;
    PrivateData refusal = ReadPrivateData(in, limit);
    NTSTATUS s = CallReject(passive_, refusal);
    if (!refusal.Acceptable(limit)) {
      NDKSIM_FUZZ_CHECK(s == STATUS_INVALID_PARAMETER);
      net_.RunBriefly();
      NDKSIM_FUZZ_CHECK(connect_.calls == 0);  // no REJ went out
      refusal = ReadAcceptablePrivateData(in, limit);
      s = CallReject(passive_, refusal);
    }
    NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS);
    net_.Run([&] { return connect_.Finished(); });
    NDKSIM_FUZZ_CHECK(connect_.status == STATUS_CONNECTION_REFUSED && connect_.calls == 1);
    CheckRefusedConnectionData(refusal.Sent());
  }

  // ndksim keeps no connection data for a refused connect (CONNECTION_INVALID); if it ever
  // answers, the data must be the reject's.
  void CheckRefusedConnectionData(std::span<const std::byte> sent) {
    ULONG required = 0;
    const NTSTATUS s = GetConnectionData(active_, nullptr, nullptr, nullptr, &required);
    if (s == STATUS_CONNECTION_INVALID) return;
    NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS && required >= sent.size());
    ExactBuffer data(required);
    ULONG length = required;
    NDKSIM_FUZZ_CHECK(GetConnectionData(active_, nullptr, nullptr, data.Data(), &length) == STATUS_SUCCESS);
    NDKSIM_FUZZ_CHECK(SameBytes(data.Data(), sent.data(), sent.size()));
  }

  TestFabric& net_;
  Side& a_;
  Side& b_;
  SocketAddress listen_;
  SocketAddress source_;
  NDK_QP* qp_a_ = nullptr;
  NDK_QP* qp_b_ = nullptr;
  NDK_CONNECTOR* active_ = nullptr;
  NDK_CONNECTOR* passive_ = nullptr;
  ULONG ird_ = 0;
  ULONG ord_ = 0;
  Request& connect_ = net_.NewRequest();
};

void FuzzConnectPrivateData(FuzzInput& in) {
  TestFabric net(kAsyncModes[in.Pick(kAsyncModes.size())], /*with_rogue=*/false);
  PrivateDataPath path(net);
  path.Run(in);
}

// ---- 5: adapter queries and LAMs ------------------------------------------------------------------

bool SameInfo(const NDK_ADAPTER_INFO& x, const NDK_ADAPTER_INFO& y) {
  return x.Version.Major == y.Version.Major && x.Version.Minor == y.Version.Minor && x.VendorId == y.VendorId &&
         x.DeviceId == y.DeviceId && x.MaxRegistrationSize == y.MaxRegistrationSize &&
         x.MaxWindowSize == y.MaxWindowSize && x.FRMRPageCount == y.FRMRPageCount &&
         x.MaxInitiatorRequestSge == y.MaxInitiatorRequestSge && x.MaxReceiveRequestSge == y.MaxReceiveRequestSge &&
         x.MaxReadRequestSge == y.MaxReadRequestSge && x.MaxTransferLength == y.MaxTransferLength &&
         x.MaxInlineDataSize == y.MaxInlineDataSize && x.MaxInboundReadLimit == y.MaxInboundReadLimit &&
         x.MaxOutboundReadLimit == y.MaxOutboundReadLimit && x.MaxReceiveQueueDepth == y.MaxReceiveQueueDepth &&
         x.MaxInitiatorQueueDepth == y.MaxInitiatorQueueDepth && x.MaxSrqDepth == y.MaxSrqDepth &&
         x.MaxCqDepth == y.MaxCqDepth && x.LargeRequestThreshold == y.LargeRequestThreshold &&
         x.MaxCallerData == y.MaxCallerData && x.MaxCalleeData == y.MaxCalleeData &&
         x.AdapterFlags == y.AdapterFlags && x.RdmaTechnology == y.RdmaTechnology;
}

// Any version: the ones NDK defines open at the provider's highest minor of that major; anything
// else is BAD_VERSION and hands out nothing (then 2.1 is opened instead).
NDK_ADAPTER* OpenAdapterAnyVersion(FuzzInput& in, Node& node) {
  const NDK_VERSION version{in.InRange<USHORT>(0, 3), in.InRange<USHORT>(0, 3)};
  const bool defined = (version.Major == 1 && version.Minor <= 2) || (version.Major == 2 && version.Minor <= 1);
  NDK_ADAPTER* adapter = nullptr;
  const NTSTATUS s = node.OpenAdapter(version, &adapter);
  if (!defined) {
    NDKSIM_FUZZ_CHECK(s == NDIS_STATUS_BAD_VERSION && adapter == nullptr);
    NDKSIM_FUZZ_CHECK(node.OpenAdapter(NDK_VERSION{2, 1}, &adapter) == STATUS_SUCCESS);
    return adapter;
  }
  NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS && adapter != nullptr);
  NDKSIM_FUZZ_CHECK(adapter->Header.Version.Major == version.Major &&
                    adapter->Header.Version.Minor >= version.Minor);
  return adapter;
}

NDK_ADAPTER_INFO ReferenceInfo(NDK_ADAPTER* adapter) {
  NDK_ADAPTER_INFO info{};
  ULONG size = sizeof info;
  NDKSIM_FUZZ_CHECK(adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size) == STATUS_SUCCESS);
  NDKSIM_FUZZ_CHECK(size == sizeof info);
  NDKSIM_FUZZ_CHECK(info.Version.Major == adapter->Header.Version.Major &&
                    info.Version.Minor == adapter->Header.Version.Minor);
  NDKSIM_FUZZ_CHECK(info.FRMRPageCount >= 16);  // ref §2.5
  // Connection private data travels in one CM datagram: the limits must fit in it.
  NDKSIM_FUZZ_CHECK(info.MaxCallerData <= kCmMaxPrivateData && info.MaxCalleeData <= kCmMaxPrivateData);
  return info;
}

// ref §3.17: BUFFER_TOO_SMALL with the required size when the buffer is missing or short, else the
// record and *size = bytes written; never a byte past the size given.
void CheckQueryAdapterInfo(FuzzInput& in, NDK_ADAPTER* adapter, const NDK_ADAPTER_INFO& reference) {
  constexpr ULONG kRequired = sizeof(NDK_ADAPTER_INFO);
  const NDK_FN_QUERY_ADAPTER_INFO query = adapter->Dispatch->NdkQueryAdapterInfo;
  switch (in.Pick(3)) {
    case 0: {  // no size pointer: a failure, nothing written
      GuardedBuffer out(kRequired);
      NDKSIM_FUZZ_CHECK(!NT_SUCCESS(query(adapter, reinterpret_cast<NDK_ADAPTER_INFO*>(out.Data()), nullptr)));
      NDKSIM_FUZZ_CHECK(out.UntouchedFrom(0));
      return;
    }
    case 1: {  // no buffer, any size
      ULONG size = in.Integral<ULONG>();
      NDKSIM_FUZZ_CHECK(query(adapter, nullptr, &size) == STATUS_BUFFER_TOO_SMALL);
      NDKSIM_FUZZ_CHECK(size == kRequired);
      return;
    }
    default: {
      const ULONG given = in.InRange<ULONG>(0, kRequired + 32);
      GuardedBuffer out(given);
      ULONG size = given;
      const NTSTATUS s = query(adapter, reinterpret_cast<NDK_ADAPTER_INFO*>(out.Data()), &size);
      NDKSIM_FUZZ_CHECK(size == kRequired);
      if (given < kRequired) {
        NDKSIM_FUZZ_CHECK(s == STATUS_BUFFER_TOO_SMALL && out.UntouchedFrom(0));
        return;
      }
      NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS && out.UntouchedFrom(kRequired));
      NDK_ADAPTER_INFO info;
      std::memcpy(&info, out.Data(), sizeof info);
      NDKSIM_FUZZ_CHECK(SameInfo(info, reference));
    }
  }
}

// Up to four MDLs over one heap buffer: each starts where the previous one ended unless the input
// moves it, and now and then one claims far more bytes than the buffer has (NdkBuildLam only does
// arithmetic on the described range, it never touches the bytes).
class MdlChain {
 public:
  explicit MdlChain(FuzzInput& in) : buffer_(kChainBufferBytes) {
    const auto base = reinterpret_cast<std::uintptr_t>(buffer_.Data());
    const std::uintptr_t end = base + buffer_.Size();
    count_ = in.InRange<std::size_t>(1, kMaxMdls);
    std::uintptr_t next = 0;
    for (std::size_t i = 0; i < count_; ++i) {
      const bool moved = i == 0 || in.Chance(64);
      const std::uintptr_t start = moved ? base + in.InRange<std::size_t>(0, buffer_.Size()) : next;
      const ULONG byte_count = in.Chance(16) ? in.Integral<ULONG>()
                                             : in.InRange<ULONG>(0, start < end ? static_cast<ULONG>(end - start) : 0);
      MmInitializeMdl(&mdls_[i], reinterpret_cast<PVOID>(start), byte_count);
      if (i > 0) mdls_[i - 1].Next = &mdls_[i];
      total_ += byte_count;
      next = start + byte_count;
    }
  }
  MDL* Head() { return &mdls_[0]; }
  std::uint64_t Total() const { return total_; }

 private:
  ExactBuffer buffer_;
  std::array<MDL, kMaxMdls> mdls_{};
  std::size_t count_ = 0;
  std::uint64_t total_ = 0;
};

// What a LAM for `length` bytes of the chain must be (ref §2.3, §3.15). `ambiguous` when the walk
// breaks at or after an empty MDL: whether an empty piece may sit elsewhere (and so whether the
// range starts at the next piece) is a choice, not a rule.
struct LamExpectation {
  bool contiguous = false;
  bool ambiguous = false;
  std::uintptr_t va = 0;
  std::uint64_t pages = 0;
  std::uint64_t required = 0;
};

LamExpectation ExpectLam(const MDL* head, std::uint64_t length) {
  LamExpectation e;
  e.va = reinterpret_cast<std::uintptr_t>(MmGetMdlVirtualAddress(head));
  std::uintptr_t expected = e.va;
  std::uint64_t covered = 0;
  bool seen_empty = false;
  for (const MDL* piece = head; piece != nullptr && covered < length; piece = piece->Next) {
    seen_empty = seen_empty || piece->ByteCount == 0;
    if (reinterpret_cast<std::uintptr_t>(MmGetMdlVirtualAddress(piece)) != expected) {
      e.ambiguous = seen_empty;
      return e;
    }
    covered += piece->ByteCount;
    expected += piece->ByteCount;
  }
  if (covered < length || length == 0) return e;  // past the chain, or nothing described
  e.contiguous = true;
  e.pages = (BYTE_OFFSET(e.va) + length + PAGE_SIZE - 1) / PAGE_SIZE;
  e.required = kLamHeaderBytes + e.pages * sizeof(NDK_LOGICAL_ADDRESS);
  return e;
}

std::uint64_t LamPage(const std::byte* lam, std::uint64_t i) {
  LONG64 page;
  std::memcpy(&page, lam + kLamHeaderBytes + i * sizeof(NDK_LOGICAL_ADDRESS), sizeof page);
  return static_cast<std::uint64_t>(page);
}

// Any LAM the provider hands out: a header and page array inside the size it was given, an FBO
// inside the first page, PAGE_SIZE-aligned pages that reach past the last described byte.
ULONG CheckLamShape(const std::byte* lam, ULONG lam_size, ULONG given, ULONG fbo, std::uint64_t length) {
  ULONG page_count;
  std::memcpy(&page_count, lam + offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount), sizeof page_count);
  NDKSIM_FUZZ_CHECK(lam_size <= given);
  NDKSIM_FUZZ_CHECK(lam_size >= kLamHeaderBytes + std::uint64_t{page_count} * sizeof(NDK_LOGICAL_ADDRESS));
  NDKSIM_FUZZ_CHECK(fbo < PAGE_SIZE);
  NDKSIM_FUZZ_CHECK(std::uint64_t{page_count} * PAGE_SIZE >= fbo + length);
  for (std::uint64_t i = 0; i < page_count; ++i) NDKSIM_FUZZ_CHECK(LamPage(lam, i) % PAGE_SIZE == 0);
  return page_count;
}

// A LAM for a range the MDLs describe contiguously: FBO plus pages cover exactly the described
// bytes, and (logical address = virtual address in one process, which the privileged token relies
// on) page i is the i-th page of the range.
void CheckExactLam(const std::byte* lam, ULONG page_count, ULONG fbo, const LamExpectation& e, std::uint64_t length) {
  NDKSIM_FUZZ_CHECK(fbo == BYTE_OFFSET(e.va));
  NDKSIM_FUZZ_CHECK(page_count == e.pages && page_count > 0);
  NDKSIM_FUZZ_CHECK((std::uint64_t{page_count} - 1) * PAGE_SIZE < fbo + length);
  const std::uint64_t first_page = e.va & ~std::uint64_t{PAGE_SIZE - 1};
  for (std::uint64_t i = 0; i < page_count; ++i) NDKSIM_FUZZ_CHECK(LamPage(lam, i) == first_page + i * PAGE_SIZE);
}

// The status the chain and sizes call for (ref §3.15); nothing when the case is ambiguous.
void CheckLamStatus(NTSTATUS s, const LamExpectation& e, std::uint64_t length, bool null_lam, ULONG given,
                    ULONG lam_size) {
  if (e.ambiguous) return;
  if (!e.contiguous) {
    // Not contiguous, or longer than the chain; an empty range is ndksim's choice either way.
    if (length != 0) NDKSIM_FUZZ_CHECK(s == STATUS_INVALID_PARAMETER && lam_size == given);
  } else if (null_lam || given < e.required) {
    NDKSIM_FUZZ_CHECK(s == STATUS_BUFFER_TOO_SMALL && lam_size == e.required);
  } else {
    NDKSIM_FUZZ_CHECK(s == STATUS_SUCCESS);
  }
}

// Calls NdkBuildLAM; a PENDING return must be followed by exactly one successful callback.
NTSTATUS BuildLam(Fabric& fabric, NDK_ADAPTER* adapter, MDL* mdl, std::uint64_t length, bool with_callback,
                  Request& request, NDK_LOGICAL_ADDRESS_MAPPING* lam, ULONG* lam_size, ULONG* fbo) {
  const NDK_FN_REQUEST_COMPLETION callback = with_callback ? Request::Done : nullptr;
  const NTSTATUS s = adapter->Dispatch->NdkBuildLAM(adapter, mdl, length, callback, &request, lam, lam_size, fbo);
  if (s != STATUS_PENDING) {
    NDKSIM_FUZZ_CHECK(request.calls == 0);
    return s;
  }
  NDKSIM_FUZZ_CHECK(with_callback);
  fabric.RunUntil([&] { return request.Finished(); }, kStepLimit);
  NDKSIM_FUZZ_CHECK(request.calls == 1 && request.status == STATUS_SUCCESS);  // only success pends
  return request.status;
}

void CheckBuildLam(FuzzInput& in, Fabric& fabric, NDK_ADAPTER* adapter, std::deque<Request>& requests) {
  MdlChain chain(in);
  const std::uint64_t length =
      in.Chance(32) ? in.Integral<std::uint64_t>() : in.InRange<std::uint64_t>(0, chain.Total() + 32);
  const LamExpectation e = ExpectLam(chain.Head(), length);
  const bool null_lam = in.Chance(24);
  const bool null_size = in.Chance(8);
  const bool null_fbo = in.Chance(8);
  // Without a LAM buffer any size is fair; with one, the size is its true size.
  const ULONG given = null_lam ? in.Integral<ULONG>() : in.InRange<ULONG>(0, kMaxLamBytes);
  GuardedBuffer lam(null_lam ? 0 : given);
  auto* lam_pointer = null_lam ? nullptr : reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(lam.Data());
  ULONG lam_size = given;
  ULONG fbo = kSentinelFbo;
  const NTSTATUS s = BuildLam(fabric, adapter, chain.Head(), length, in.Bool(), requests.emplace_back(),
                              lam_pointer, null_size ? nullptr : &lam_size, null_fbo ? nullptr : &fbo);
  NDKSIM_FUZZ_CHECK(lam.UntouchedFrom(given));  // nothing past the size given, whatever happened
  if (null_size || null_fbo) {
    NDKSIM_FUZZ_CHECK(s == STATUS_INVALID_PARAMETER && lam_size == given && fbo == kSentinelFbo);
    NDKSIM_FUZZ_CHECK(lam.UntouchedFrom(0));
    return;
  }
  CheckLamStatus(s, e, length, null_lam, given, lam_size);
  if (s != STATUS_SUCCESS) {
    NDKSIM_FUZZ_CHECK(s == STATUS_INVALID_PARAMETER || s == STATUS_BUFFER_TOO_SMALL);
    NDKSIM_FUZZ_CHECK(fbo == kSentinelFbo && lam.UntouchedFrom(0));  // a failure writes no LAM
    if (s == STATUS_BUFFER_TOO_SMALL) NDKSIM_FUZZ_CHECK(lam_size > kLamHeaderBytes && (null_lam || lam_size > given));
    return;
  }
  NDKSIM_FUZZ_CHECK(!null_lam);
  const ULONG page_count = CheckLamShape(lam.Data(), lam_size, given, fbo, length);
  if (!e.ambiguous && e.contiguous) CheckExactLam(lam.Data(), page_count, fbo, e, length);
  NDKSIM_FUZZ_CHECK(e.ambiguous || e.contiguous || length == 0);  // a LAM only for what the MDLs describe
  adapter->Dispatch->NdkReleaseLAM(adapter, lam_pointer);
  NDKSIM_FUZZ_CHECK(lam.UntouchedFrom(given));
}

void FuzzAdapterQueries(FuzzInput& in) {
  Fabric fabric(FunctionalConfig(kAsyncModes[in.Pick(kAsyncModes.size())]));
  Node& node = fabric.AddNode({"a", {kHostA.v4}});
  std::deque<Request> requests;  // outlives the adapter close, which delivers what is queued
  NDK_ADAPTER* adapter = OpenAdapterAnyVersion(in, node);
  const NDK_ADAPTER_INFO reference = ReferenceInfo(adapter);
  const std::size_t queries = in.InRange<std::size_t>(1, 3);
  for (std::size_t i = 0; i < queries; ++i) CheckQueryAdapterInfo(in, adapter, reference);
  const std::size_t lams = in.InRange<std::size_t>(1, 3);
  for (std::size_t i = 0; i < lams; ++i) CheckBuildLam(in, fabric, adapter, requests);
  node.CloseAdapter(adapter);
  fabric.RunUntilIdle();
}

constexpr std::array<void (*)(FuzzInput&), 5> kSubHarnesses = {
    FuzzCmWireFormat, FuzzSocketAddresses, FuzzHostileNode, FuzzConnectPrivateData, FuzzAdapterQueries,
};

}  // namespace
}  // namespace ndksim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using ndksim::fuzz::kSubHarnesses;
  if (size == 0) return 0;
  ndksim::fuzz::FuzzInput in(data + 1, size - 1);
  kSubHarnesses[data[0] % kSubHarnesses.size()](in);
  return 0;
}
