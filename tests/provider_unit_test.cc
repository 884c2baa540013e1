// SPDX-License-Identifier: MIT
// Unit tests of the provider's pure pieces: the NTSTATUS tables, socket-address conversion and the
// CM message codec. No fabric, no NIC.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>
#include <tuple>
#include <vector>

#include "provider/cm_protocol.h"
#include "provider/index_table.h"
#include "provider/status.h"

namespace ndksim::provider {
namespace {

using hw::CompletionSyndrome;

// ---- completion syndromes ------------------------------------------------------------------------

using SyndromeCase = std::tuple<CompletionSyndrome, NTSTATUS>;
class CompletionStatus : public ::testing::TestWithParam<SyndromeCase> {};

TEST_P(CompletionStatus, MapsEachSyndromeToItsStatus) {
  const auto [syndrome, status] = GetParam();
  EXPECT_EQ(CompletionStatusTable(RemoteAccessErrorStatus::kAccessViolation)(syndrome), status);
}

INSTANTIATE_TEST_SUITE_P(
    Table, CompletionStatus,
    ::testing::Values(SyndromeCase{CompletionSyndrome::kSuccess, STATUS_SUCCESS},
                      SyndromeCase{CompletionSyndrome::kLocalLengthError, STATUS_DATA_OVERRUN},
                      SyndromeCase{CompletionSyndrome::kLocalProtectionError, STATUS_ACCESS_VIOLATION},
                      SyndromeCase{CompletionSyndrome::kLocalQpOperationError, STATUS_INTERNAL_ERROR},
                      SyndromeCase{CompletionSyndrome::kFlushed, STATUS_CANCELLED},
                      SyndromeCase{CompletionSyndrome::kReceiveOverflow, STATUS_BUFFER_OVERFLOW},
                      SyndromeCase{CompletionSyndrome::kRemoteAccessError, STATUS_ACCESS_VIOLATION},
                      SyndromeCase{CompletionSyndrome::kRemoteInvalidRequest, STATUS_REMOTE_RESOURCES},
                      SyndromeCase{CompletionSyndrome::kRemoteOperationError, STATUS_REMOTE_RESOURCES},
                      SyndromeCase{CompletionSyndrome::kTransportRetryExceeded, STATUS_IO_TIMEOUT},
                      SyndromeCase{CompletionSyndrome::kRnrRetryExceeded, STATUS_IO_TIMEOUT},
                      SyndromeCase{CompletionSyndrome::kInvalidRequest, STATUS_INVALID_DEVICE_REQUEST},
                      SyndromeCase{CompletionSyndrome::kFatal, STATUS_INTERNAL_ERROR}),
    [](const auto& info) { return std::string(hw::Name(std::get<0>(info.param))); });

TEST(CompletionStatusPolicy, RemoteAccessErrorFollowsTheProfile) {
  const CompletionStatusTable table(RemoteAccessErrorStatus::kRemoteResources);
  EXPECT_EQ(table(CompletionSyndrome::kRemoteAccessError), STATUS_REMOTE_RESOURCES);
  EXPECT_EQ(table(CompletionSyndrome::kLocalProtectionError), STATUS_ACCESS_VIOLATION);
}

TEST(CompletionStatusPolicy, CorruptSyndromeIsAnInternalError) {
  const CompletionStatusTable table(RemoteAccessErrorStatus::kAccessViolation);
  EXPECT_EQ(table(static_cast<CompletionSyndrome>(200)), STATUS_INTERNAL_ERROR);
}

TEST(CommandStatus, MapsEachCommandOutcome) {
  EXPECT_EQ(CommandToNtStatus(hw::CommandStatus::kOk), STATUS_SUCCESS);
  EXPECT_EQ(CommandToNtStatus(hw::CommandStatus::kNoResources), STATUS_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(CommandToNtStatus(hw::CommandStatus::kInvalidArgument), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(CommandToNtStatus(hw::CommandStatus::kInvalidState), STATUS_INVALID_DEVICE_STATE);
  EXPECT_EQ(CommandToNtStatus(hw::CommandStatus::kNotFound), STATUS_INVALID_PARAMETER);
  EXPECT_EQ(CommandToNtStatus(hw::CommandStatus::kBusy), STATUS_DEVICE_BUSY);
}

TEST(CqErrorStatus, OverrunIsBufferOverflowAndFatalIsInternalError) {
  EXPECT_EQ(CqErrorToNtStatus(0), STATUS_BUFFER_OVERFLOW);
  EXPECT_EQ(CqErrorToNtStatus(1), STATUS_INTERNAL_ERROR);
}

// ---- socket addresses ---------------------------------------------------------------------------

SOCKADDR_IN Ipv4(const char* text, std::uint16_t port) {
  SOCKADDR_IN a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, text, &a.sin_addr);
  return a;
}

SOCKADDR_IN6 Ipv6(const char* text, std::uint16_t port) {
  SOCKADDR_IN6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  inet_pton(AF_INET6, text, &a.sin6_addr);
  return a;
}

TEST(SocketAddress, Ipv4RoundTrips) {
  const SOCKADDR_IN in = Ipv4("192.0.2.7", 4791);
  SocketAddress a;
  ASSERT_EQ(FromSockaddr(reinterpret_cast<const SOCKADDR*>(&in), sizeof in, &a), STATUS_SUCCESS);
  EXPECT_EQ(a.address.family, 4);
  EXPECT_EQ(a.port, 4791);
  EXPECT_EQ(a.address.bytes[0], 192);
  EXPECT_EQ(a.address.bytes[3], 7);
  SOCKADDR_IN out{};
  ULONG len = sizeof out;
  ASSERT_EQ(CopyOutAddress(a, reinterpret_cast<SOCKADDR*>(&out), &len), STATUS_SUCCESS);
  EXPECT_EQ(len, sizeof(SOCKADDR_IN));
  EXPECT_EQ(std::memcmp(&out, &in, sizeof in), 0);
}

TEST(SocketAddress, Ipv6RoundTrips) {
  const SOCKADDR_IN6 in = Ipv6("2001:db8::9", 50000);
  SocketAddress a;
  ASSERT_EQ(FromSockaddr(reinterpret_cast<const SOCKADDR*>(&in), sizeof in, &a), STATUS_SUCCESS);
  EXPECT_EQ(a.address.family, 6);
  SOCKADDR_IN6 out{};
  ULONG len = sizeof out;
  ASSERT_EQ(CopyOutAddress(a, reinterpret_cast<SOCKADDR*>(&out), &len), STATUS_SUCCESS);
  EXPECT_EQ(len, sizeof(SOCKADDR_IN6));
  EXPECT_EQ(std::memcmp(&out, &in, sizeof in), 0);
}

TEST(SocketAddress, BadInputsAreRefused) {
  SocketAddress a;
  EXPECT_EQ(FromSockaddr(nullptr, 16, &a), STATUS_INVALID_PARAMETER);
  const SOCKADDR_IN in = Ipv4("192.0.2.7", 1);
  EXPECT_EQ(FromSockaddr(reinterpret_cast<const SOCKADDR*>(&in), sizeof in - 1, &a), STATUS_INVALID_ADDRESS);
  const SOCKADDR_IN6 in6 = Ipv6("2001:db8::9", 1);
  EXPECT_EQ(FromSockaddr(reinterpret_cast<const SOCKADDR*>(&in6), sizeof(SOCKADDR_IN), &a), STATUS_INVALID_ADDRESS);
  SOCKADDR_IN unix_family = in;
  unix_family.sin_family = AF_UNIX;
  EXPECT_EQ(FromSockaddr(reinterpret_cast<const SOCKADDR*>(&unix_family), sizeof in, &a), STATUS_INVALID_ADDRESS);
}

TEST(SocketAddress, ShortBufferGetsTheRequiredLength) {
  SocketAddress a;
  a.address.family = 6;
  ULONG len = sizeof(SOCKADDR_IN);
  SOCKADDR_IN6 out{};
  EXPECT_EQ(CopyOutAddress(a, reinterpret_cast<SOCKADDR*>(&out), &len), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(len, sizeof(SOCKADDR_IN6));
  len = 100;
  EXPECT_EQ(CopyOutAddress(a, nullptr, &len), STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(len, sizeof(SOCKADDR_IN6));
  EXPECT_EQ(CopyOutAddress(a, nullptr, nullptr), STATUS_INVALID_PARAMETER);
}

TEST(SocketAddress, WildcardBindingsCollideWithSpecificOnes) {
  SocketAddress any;
  any.address.family = 4;
  any.port = 7;
  SocketAddress one = any;
  one.address.bytes[0] = 10;
  SocketAddress other = one;
  other.address.bytes[3] = 2;
  EXPECT_TRUE(BindingsCollide(any, one));
  EXPECT_TRUE(BindingsCollide(one, one));
  EXPECT_FALSE(BindingsCollide(one, other));
  SocketAddress other_port = one;
  other_port.port = 8;
  EXPECT_FALSE(BindingsCollide(one, other_port));
  SocketAddress v6 = any;
  v6.address.family = 6;
  EXPECT_FALSE(BindingsCollide(any, v6));
}

// ---- CM codec ------------------------------------------------------------------------------------

CmMessage SampleRequest() {
  CmMessage m;
  m.type = CmType::kReq;
  m.source.address.family = 4;
  m.source.address.bytes = {192, 0, 2, 1};
  m.source.port = 49152;
  m.destination.address.family = 4;
  m.destination.address.bytes = {192, 0, 2, 2};
  m.destination.port = 4791;
  m.source_node = 3;
  m.source_connection = 17;
  m.qpn = 0x41;
  m.initial_psn = 0xabcdef;
  m.inbound_read_limit = 8;
  m.outbound_read_limit = 4;
  m.private_data_length = 5;
  for (int i = 0; i < 5; ++i) m.private_data[i] = std::byte(0xa0 + i);
  return m;
}

TEST(CmCodec, MessagesRoundTrip) {
  const CmMessage m = SampleRequest();
  std::array<std::byte, hw::kManagementPayloadBytes> buf{};
  const std::size_t n = EncodeCm(m, buf);
  EXPECT_EQ(n, kCmHeaderBytes + 5);
  CmMessage back;
  ASSERT_TRUE(DecodeCm({buf.data(), n}, &back));
  EXPECT_EQ(back.type, m.type);
  EXPECT_EQ(back.source, m.source);
  EXPECT_EQ(back.destination, m.destination);
  EXPECT_EQ(back.source_node, m.source_node);
  EXPECT_EQ(back.source_connection, m.source_connection);
  EXPECT_EQ(back.destination_connection, 0u);
  EXPECT_EQ(back.qpn, m.qpn);
  EXPECT_EQ(back.initial_psn, m.initial_psn);
  EXPECT_EQ(back.inbound_read_limit, 8u);
  EXPECT_EQ(back.outbound_read_limit, 4u);
  ASSERT_EQ(back.private_data_length, 5);
  EXPECT_EQ(std::memcmp(back.private_data.data(), m.private_data.data(), 5), 0);
}

TEST(CmCodec, WireFormatIsLittleEndianWithTheMagicFirst) {
  std::array<std::byte, hw::kManagementPayloadBytes> buf{};
  EncodeCm(SampleRequest(), buf);
  EXPECT_EQ(buf[0], std::byte{'N'});
  EXPECT_EQ(buf[1], std::byte{'D'});
  EXPECT_EQ(buf[2], std::byte{'K'});
  EXPECT_EQ(buf[3], std::byte{'C'});
  EXPECT_EQ(buf[60], std::byte{0x41});  // qpn, low byte first
}

TEST(CmCodec, MalformedDatagramsAreRejected) {
  std::array<std::byte, hw::kManagementPayloadBytes> buf{};
  const std::size_t n = EncodeCm(SampleRequest(), buf);
  CmMessage out;
  EXPECT_FALSE(DecodeCm({buf.data(), kCmHeaderBytes - 1}, &out));  // short header
  EXPECT_FALSE(DecodeCm({buf.data(), n - 1}, &out));               // truncated private data
  auto bad = buf;
  bad[0] = std::byte{0};
  EXPECT_FALSE(DecodeCm({bad.data(), n}, &out));  // magic
  bad = buf;
  bad[4] = std::byte{9};
  EXPECT_FALSE(DecodeCm({bad.data(), n}, &out));  // version
  bad = buf;
  bad[5] = std::byte{6};
  EXPECT_FALSE(DecodeCm({bad.data(), n}, &out));  // type past kDrep
  bad = buf;
  bad[8] = std::byte{5};
  EXPECT_FALSE(DecodeCm({bad.data(), n}, &out));  // address family
  bad = buf;
  bad[76] = std::byte{0xff};
  bad[77] = std::byte{0xff};
  EXPECT_FALSE(DecodeCm({bad.data(), bad.size()}, &out));  // private data longer than fits
}

TEST(CmCodec, LargestPrivateDataFillsOneDatagram) {
  CmMessage m = SampleRequest();
  m.private_data_length = static_cast<std::uint16_t>(kCmMaxPrivateData);
  std::array<std::byte, hw::kManagementPayloadBytes> buf{};
  EXPECT_EQ(EncodeCm(m, buf), hw::kManagementPayloadBytes);
  CmMessage back;
  EXPECT_TRUE(DecodeCm(buf, &back));
}

// ---- IndexTable ------------------------------------------------------------------------------------

TEST(IndexTable, FindsOnlyWhatWasStoredAndRangeIsChecked) {
  IndexTable<std::atomic<int*>> table;
  int x = 0;
  EXPECT_EQ(table.Find(5), nullptr);
  table.Slot(5).store(&x);
  ASSERT_NE(table.Find(5), nullptr);
  EXPECT_EQ(table.Find(5)->load(), &x);
  ASSERT_NE(table.Find(4), nullptr);  // below a stored index: an empty slot
  EXPECT_EQ(table.Find(4)->load(), nullptr);
  EXPECT_EQ(table.Find(6), nullptr);  // past every stored index of its chunk: not there yet
  EXPECT_EQ(table.Find(1u << 20), nullptr);  // another chunk, never created
  EXPECT_EQ(table.Find(1u << 24), nullptr);  // out of range
}

}  // namespace
}  // namespace ndksim::provider
