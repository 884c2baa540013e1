// SPDX-License-Identifier: MIT
// Readable failures (include/ndksim/names.h, include/ndksim/testing.h): names of NTSTATUS values,
// operation types, flag words and fault rules, and the printers, matchers and status assertions
// that use them in GoogleTest messages.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "ndksim/faults.h"
#include "ndksim/names.h"
#include "ndksim/testing.h"

namespace ndksim {
namespace {

using ::ndksim::testing::HasStatus;
using ::ndksim::testing::HasType;
using ::ndksim::testing::IsCompletion;
using ::ndksim::testing::IsStatus;
using ::testing::HasSubstr;

void* Ctx(std::uintptr_t n) { return reinterpret_cast<void*>(n); }

// What a matcher says about a value that it does not match.
template <typename T, typename M>
std::string Explain(const M& matcher, const T& value) {
  const ::testing::Matcher<T> m = matcher;
  ::testing::StringMatchResultListener listener;
  m.MatchAndExplain(value, &listener);
  return listener.str();
}

NDK_RESULT_EX TimedOutWrite() {
  NDK_RESULT_EX r{};
  r.Status = STATUS_IO_TIMEOUT;
  r.Type = NdkOperationTypeWrite;
  r.QPContext = Ctx(0x10);
  r.RequestContext = Ctx(0x20);
  r.ProviderErrorCode = 0x81;
  return r;
}

TEST(Names, StatusNameOfKnownValues) {
  EXPECT_EQ(StatusName(STATUS_SUCCESS), "STATUS_SUCCESS");
  EXPECT_EQ(StatusName(STATUS_PENDING), "STATUS_PENDING");
  EXPECT_EQ(StatusName(STATUS_BUFFER_OVERFLOW), "STATUS_BUFFER_OVERFLOW");
  EXPECT_EQ(StatusName(STATUS_CANCELLED), "STATUS_CANCELLED");
  EXPECT_EQ(StatusName(STATUS_IO_TIMEOUT), "STATUS_IO_TIMEOUT");
  EXPECT_EQ(StatusString(STATUS_IO_TIMEOUT), "STATUS_IO_TIMEOUT");
}

TEST(Names, StatusOfUnknownValueHasNoNameAndPrintsAsHex) {
  const auto unknown = static_cast<NTSTATUS>(0xC0001234u);
  EXPECT_TRUE(StatusName(unknown).empty());
  EXPECT_EQ(StatusString(unknown), "NTSTATUS 0xC0001234");
  EXPECT_EQ(StatusString(static_cast<NTSTATUS>(0x7)), "NTSTATUS 0x00000007");
}

TEST(Names, EveryStatusDefineMapsToItsOwnName) {
  const std::pair<NTSTATUS, std::string_view> statuses[] = {
      {STATUS_SUCCESS, "STATUS_SUCCESS"},
      {STATUS_TIMEOUT, "STATUS_TIMEOUT"},
      {STATUS_PENDING, "STATUS_PENDING"},
      {STATUS_BUFFER_OVERFLOW, "STATUS_BUFFER_OVERFLOW"},
      {STATUS_DEVICE_BUSY, "STATUS_DEVICE_BUSY"},
      {STATUS_NO_MORE_ENTRIES, "STATUS_NO_MORE_ENTRIES"},
      {STATUS_UNSUCCESSFUL, "STATUS_UNSUCCESSFUL"},
      {STATUS_ACCESS_VIOLATION, "STATUS_ACCESS_VIOLATION"},
      {STATUS_INVALID_PARAMETER, "STATUS_INVALID_PARAMETER"},
      {STATUS_INVALID_DEVICE_REQUEST, "STATUS_INVALID_DEVICE_REQUEST"},
      {STATUS_NO_MEMORY, "STATUS_NO_MEMORY"},
      {STATUS_BUFFER_TOO_SMALL, "STATUS_BUFFER_TOO_SMALL"},
      {STATUS_INVALID_PARAMETER_MIX, "STATUS_INVALID_PARAMETER_MIX"},
      {STATUS_DATA_OVERRUN, "STATUS_DATA_OVERRUN"},
      {STATUS_DATA_ERROR, "STATUS_DATA_ERROR"},
      {STATUS_SHARING_VIOLATION, "STATUS_SHARING_VIOLATION"},
      {STATUS_DELETE_PENDING, "STATUS_DELETE_PENDING"},
      {STATUS_INSUFFICIENT_RESOURCES, "STATUS_INSUFFICIENT_RESOURCES"},
      {STATUS_DEVICE_NOT_READY, "STATUS_DEVICE_NOT_READY"},
      {STATUS_IO_TIMEOUT, "STATUS_IO_TIMEOUT"},
      {STATUS_NOT_SUPPORTED, "STATUS_NOT_SUPPORTED"},
      {STATUS_INTERNAL_ERROR, "STATUS_INTERNAL_ERROR"},
      {STATUS_CANCELLED, "STATUS_CANCELLED"},
      {STATUS_REMOTE_RESOURCES, "STATUS_REMOTE_RESOURCES"},
      {STATUS_INVALID_ADDRESS, "STATUS_INVALID_ADDRESS"},
      {STATUS_INVALID_DEVICE_STATE, "STATUS_INVALID_DEVICE_STATE"},
      {STATUS_INVALID_BUFFER_SIZE, "STATUS_INVALID_BUFFER_SIZE"},
      {STATUS_TOO_MANY_ADDRESSES, "STATUS_TOO_MANY_ADDRESSES"},
      {STATUS_ADDRESS_ALREADY_EXISTS, "STATUS_ADDRESS_ALREADY_EXISTS"},
      {STATUS_CONNECTION_DISCONNECTED, "STATUS_CONNECTION_DISCONNECTED"},
      {STATUS_CONNECTION_RESET, "STATUS_CONNECTION_RESET"},
      {STATUS_CONNECTION_REFUSED, "STATUS_CONNECTION_REFUSED"},
      {STATUS_CONNECTION_INVALID, "STATUS_CONNECTION_INVALID"},
      {STATUS_CONNECTION_ACTIVE, "STATUS_CONNECTION_ACTIVE"},
      {STATUS_NETWORK_UNREACHABLE, "STATUS_NETWORK_UNREACHABLE"},
      {STATUS_HOST_UNREACHABLE, "STATUS_HOST_UNREACHABLE"},
      {STATUS_CONNECTION_ABORTED, "STATUS_CONNECTION_ABORTED"},
      {STATUS_DEVICE_REMOVED, "STATUS_DEVICE_REMOVED"},
      {STATUS_IMPLEMENTATION_LIMIT, "STATUS_IMPLEMENTATION_LIMIT"},
  };
  for (const auto& [status, name] : statuses) EXPECT_EQ(StatusName(status), name);
}

TEST(Names, NdisStatusValuesOfTheirOwnHaveNamesAndAliasesPrintAsTheStatus) {
  EXPECT_EQ(StatusName(NDIS_STATUS_BAD_VERSION), "NDIS_STATUS_BAD_VERSION");
  EXPECT_EQ(StatusName(NDIS_STATUS_ADAPTER_NOT_READY), "NDIS_STATUS_ADAPTER_NOT_READY");
  EXPECT_EQ(StatusName(NDIS_STATUS_RESOURCES), "STATUS_INSUFFICIENT_RESOURCES");
}

TEST(Names, OperationTypeNameIsTheEnumeratorWithoutItsPrefix) {
  EXPECT_EQ(OperationTypeName(NdkOperationTypeReceive), "Receive");
  EXPECT_EQ(OperationTypeName(NdkOperationTypeReceiveAndInvalidate), "ReceiveAndInvalidate");
  EXPECT_EQ(OperationTypeName(NdkOperationTypeSend), "Send");
  EXPECT_EQ(OperationTypeName(NdkOperationTypeFastRegister), "FastRegister");
  EXPECT_EQ(OperationTypeName(NdkOperationTypeBind), "Bind");
  EXPECT_EQ(OperationTypeName(NdkOperationTypeInvalidate), "Invalidate");
  EXPECT_EQ(OperationTypeName(NdkOperationTypeRead), "Read");
  EXPECT_EQ(OperationTypeName(NdkOperationTypeWrite), "Write");
}

TEST(Names, OperationTypeOfUnknownValueHasNoNameAndPrintsAsHex) {
  const auto unknown = static_cast<NDK_OPERATION_TYPE>(0x1234);
  EXPECT_TRUE(OperationTypeName(unknown).empty());
  EXPECT_EQ(OperationTypeString(unknown), "NDK_OPERATION_TYPE 0x1234");
}

TEST(Names, OpFlagsStringJoinsNamesAndShowsUnknownBitsAsHex) {
  EXPECT_EQ(OpFlagsString(0), "0");
  EXPECT_EQ(OpFlagsString(NDK_OP_FLAG_INLINE | NDK_OP_FLAG_DEFER), "NDK_OP_FLAG_INLINE|NDK_OP_FLAG_DEFER");
  EXPECT_EQ(OpFlagsString(NDK_OP_FLAG_SILENT_SUCCESS | 0x8000), "NDK_OP_FLAG_SILENT_SUCCESS|0x8000");
  EXPECT_EQ(OpFlagsString(0x10000), "0x10000");
}

TEST(Names, OpFlagsStringNamesRemoteWriteOnceAndLocalWriteAlone) {
  EXPECT_EQ(OpFlagsString(NDK_OP_FLAG_ALLOW_REMOTE_WRITE), "NDK_OP_FLAG_ALLOW_REMOTE_WRITE");
  EXPECT_EQ(OpFlagsString(NDK_OP_FLAG_ALLOW_LOCAL_WRITE), "NDK_OP_FLAG_ALLOW_LOCAL_WRITE");
}

TEST(Names, MrAndAdapterFlagsStrings) {
  EXPECT_EQ(MrFlagsString(NDK_MR_FLAG_ALLOW_LOCAL_READ), "0");
  EXPECT_EQ(MrFlagsString(NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ),
            "NDK_MR_FLAG_ALLOW_REMOTE_WRITE|NDK_MR_FLAG_ALLOW_REMOTE_READ");
  EXPECT_EQ(MrFlagsString(0x4), "0x4");  // half of ALLOW_REMOTE_WRITE
  EXPECT_EQ(AdapterFlagsString(NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED | NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED),
            "NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED|NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED");
}

TEST(Names, CqNotifyTypeName) {
  EXPECT_EQ(CqNotifyTypeName(NDK_CQ_NOTIFY_ERRORS), "NDK_CQ_NOTIFY_ERRORS");
  EXPECT_EQ(CqNotifyTypeName(NDK_CQ_NOTIFY_ANY), "NDK_CQ_NOTIFY_ANY");
  EXPECT_EQ(CqNotifyTypeName(NDK_CQ_NOTIFY_SOLICITED), "NDK_CQ_NOTIFY_SOLICITED");
  EXPECT_TRUE(CqNotifyTypeName(7).empty());
  EXPECT_EQ(CqNotifyTypeString(7), "NDK_CQ_NOTIFY 0x7");
}

TEST(Names, ResultStringOfPlainResult) {
  NDK_RESULT r{};
  r.Status = STATUS_CANCELLED;
  r.BytesTransferred = 12;
  r.QPContext = Ctx(0x10);
  r.RequestContext = Ctx(0x20);
  EXPECT_EQ(ResultString(r), "STATUS_CANCELLED, BytesTransferred=12, QPContext=0x10, RequestContext=0x20");
}

TEST(Names, PrintToOfResultExShowsStatusAndTypeNames) {
  const std::string printed = ::testing::PrintToString(TimedOutWrite());
  EXPECT_THAT(printed, HasSubstr("NDK_RESULT_EX{STATUS_IO_TIMEOUT, Write, BytesTransferred=0"));
  EXPECT_THAT(printed, HasSubstr("ProviderErrorCode=0x81"));
}

TEST(Names, ResultMatchersDescribeAndExplainWithNames) {
  EXPECT_EQ(::testing::DescribeMatcher<NDK_RESULT_EX>(HasStatus(STATUS_SUCCESS)), "has Status STATUS_SUCCESS");
  EXPECT_EQ(::testing::DescribeMatcher<NDK_RESULT_EX>(HasStatus(STATUS_SUCCESS), /*negation=*/true),
            "doesn't have Status STATUS_SUCCESS");
  EXPECT_EQ(Explain(HasStatus(STATUS_SUCCESS), TimedOutWrite()), "whose Status is STATUS_IO_TIMEOUT");
  EXPECT_EQ(::testing::DescribeMatcher<NDK_RESULT_EX>(HasType(NdkOperationTypeRead)), "has Type Read");
  EXPECT_EQ(Explain(HasType(NdkOperationTypeRead), TimedOutWrite()), "whose Type is Write");
}

TEST(Names, IsCompletionDescribesTypeAndRequestAndExplainsWhatDiffers) {
  EXPECT_EQ(::testing::DescribeMatcher<NDK_RESULT_EX>(IsCompletion(NdkOperationTypeWrite, Ctx(0x20))),
            "is a successful Write completion of request 0x20");
  EXPECT_EQ(Explain(IsCompletion(NdkOperationTypeRead, Ctx(0x20)), TimedOutWrite()),
            "whose Status is STATUS_IO_TIMEOUT, whose Type is Write");
}

TEST(Names, IsStatusDescribesAndExplainsWithNames) {
  EXPECT_EQ(::testing::DescribeMatcher<NTSTATUS>(IsStatus(STATUS_SUCCESS)), "is STATUS_SUCCESS");
  EXPECT_EQ(::testing::DescribeMatcher<NTSTATUS>(IsStatus(STATUS_SUCCESS), /*negation=*/true),
            "isn't STATUS_SUCCESS");
  EXPECT_EQ(Explain(IsStatus(STATUS_SUCCESS), STATUS_INVALID_PARAMETER), "which is STATUS_INVALID_PARAMETER");
}

TEST(Names, FailingIsStatusExpectationNamesBothStatuses) {
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(STATUS_INVALID_PARAMETER, IsStatus(STATUS_SUCCESS)),
                          "Expected: is STATUS_SUCCESS");
  EXPECT_NONFATAL_FAILURE(EXPECT_THAT(STATUS_INVALID_PARAMETER, IsStatus(STATUS_SUCCESS)),
                          "which is STATUS_INVALID_PARAMETER");
}

TEST(Names, FailingStatusEqNamesBothStatuses) {
  EXPECT_NONFATAL_FAILURE(EXPECT_STATUS_EQ(STATUS_SUCCESS, STATUS_CANCELLED), "Which is: STATUS_SUCCESS");
  EXPECT_NONFATAL_FAILURE(EXPECT_STATUS_EQ(STATUS_SUCCESS, STATUS_CANCELLED), "Which is: STATUS_CANCELLED");
  EXPECT_STATUS_EQ(STATUS_CANCELLED, STATUS_CANCELLED);
}

// Regression: the expression was quoted after the preprocessor had expanded it, so a failure said
// "((NTSTATUS)0x00000000L)" where the test said STATUS_SUCCESS.
TEST(Names, FailingStatusEqQuotesTheExpressionsAsWritten) {
  EXPECT_NONFATAL_FAILURE(EXPECT_STATUS_EQ(STATUS_SUCCESS, STATUS_CANCELLED),
                          "Expected equality of these statuses:\n  STATUS_SUCCESS\n");
}

TEST(Names, FailingNtSuccessQuotesTheExpressionAsWritten) {
  EXPECT_NONFATAL_FAILURE(EXPECT_NT_SUCCESS(STATUS_CANCELLED), "Expected NT_SUCCESS(STATUS_CANCELLED)");
}

// Regression: a TimePoint printed as "8-byte object <...>".
TEST(Names, ATimePointPrintsItsTime) {
  EXPECT_EQ(::testing::PrintToString(TimePoint{Picoseconds(1234567)}), "TimePoint{1234567 ps = 1.234567 us}");
}

TEST(Names, NtSuccessAcceptsSuccessCodesAndNamesAFailure) {
  EXPECT_NT_SUCCESS(STATUS_SUCCESS);
  EXPECT_NT_SUCCESS(STATUS_PENDING);
  EXPECT_NONFATAL_FAILURE(EXPECT_NT_SUCCESS(STATUS_DEVICE_BUSY), "but it is STATUS_DEVICE_BUSY");
}

TEST(Names, FaultEnumeratorNames) {
  EXPECT_EQ(FaultPointName(FaultPoint::kWire), "wire");
  EXPECT_EQ(FaultActionName(FaultAction::kForceRnr), "force-rnr");
  EXPECT_EQ(PacketClassName(PacketClass::kAny), "any");
  EXPECT_EQ(PacketClassName(PacketClass::kRequest), "request");
  EXPECT_EQ(PacketClassName(PacketClass::kAcknowledge), "acknowledge");
  EXPECT_EQ(PacketClassName(PacketClass::kReadResponse), "read-response");
}

TEST(FaultNames, EachActionActsAtTheHookPointItsListGives) {
  EXPECT_EQ(PointOf(FaultAction::kDrop), FaultPoint::kWire);
  EXPECT_EQ(PointOf(FaultAction::kLose), FaultPoint::kDoorbell);
  EXPECT_EQ(PointOf(FaultAction::kInvalidateToken), FaultPoint::kRemoteAccess);
  EXPECT_EQ(PointOf(FaultAction::kFailAdapter), FaultPoint::kAdapter);
  EXPECT_EQ(Name(FaultPoint::kPayloadRead), "payload-read");
}

TEST(FaultNames, AValueOutsideTheListHasNoName) {
  EXPECT_EQ(Name(static_cast<FaultAction>(kFaultActionCount)), "?");
  EXPECT_EQ(Name(static_cast<FaultPoint>(99)), "?");
}

TEST(Names, ToStringOfFaultRuleShowsOnlyWhatTheRuleSets) {
  FaultRule rule;
  rule.match.node = 0;
  rule.match.packet = PacketClass::kRequest;
  EXPECT_EQ(ToString(rule), "FaultRule{wire: drop, node 0, request packets, count 1}");
  EXPECT_EQ(::testing::PrintToString(rule), ToString(rule));
}

TEST(Names, ToStringOfFaultRuleWithEveryField) {
  FaultRule rule;
  rule.action = FaultAction::kDelay;
  rule.delay = Microseconds(2);
  rule.match.link_of = 1;
  rule.match.qpn = 7;
  rule.from = TimePoint{Microseconds(10)};
  rule.until = TimePoint{Nanoseconds(20'500)};
  rule.skip = 3;
  rule.count = kEveryTime;
  rule.probability = 0.5;
  EXPECT_EQ(ToString(rule),
            "FaultRule{wire: delay 2 us, link to node 1, qp 7, from 10 us, until 20500 ns, skip 3, every time, "
            "probability 0.5}");
}

}  // namespace
}  // namespace ndksim
