// SPDX-License-Identifier: MIT
/// @file
/// GoogleTest/GoogleMock helpers for suites that test NDK consumer code on ndksim: a fixture that
/// gives a connected QP pair on two nodes, matchers for NDK_RESULT and NDK_RESULT_EX, and status
/// assertions (IsStatus, EXPECT_STATUS_EQ, EXPECT_NT_SUCCESS) that print names, not numbers.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

#include "ndksim/harness.h"
#include "ndksim/names.h"

/// @name Printers

/// Printers so that failing expectations show the fields with names, not raw bytes:
///   NDK_RESULT{STATUS_IO_TIMEOUT, BytesTransferred=0, QPContext=0x.., RequestContext=0x..}
///   NDK_RESULT_EX{STATUS_IO_TIMEOUT, Write, BytesTransferred=0, QPContext=0x.., RequestContext=0x..,
///                 ProviderErrorCode=0x0, TypeSpecificCompletionOutput=0x0}
/// NTSTATUS is a plain int32_t and cannot have a printer of its own: compare statuses with
/// IsStatus, EXPECT_STATUS_EQ or EXPECT_NT_SUCCESS below to see names.
///@{
inline void PrintTo(const NDK_RESULT& r, std::ostream* os) {
  *os << "NDK_RESULT{" << ::ndksim::ResultString(r) << "}";
}
inline void PrintTo(const NDK_RESULT_EX& r, std::ostream* os) {
  *os << "NDK_RESULT_EX{" << ::ndksim::ResultString(r) << "}";
}
///@}

/// GoogleTest/GoogleMock helpers: the ConnectedQpPairTest fixture, matchers of NDK results and
/// statuses, and the predicate-formatters behind the status assertions.
namespace ndksim::testing {

/// Matches a result (NDK_RESULT or NDK_RESULT_EX) whose Status is `status`:
/// "has Status STATUS_IO_TIMEOUT"; explains a mismatch with "whose Status is STATUS_CANCELLED".
MATCHER_P(HasStatus, status,
          std::string(negation ? "doesn't have" : "has") + " Status " +
              ::ndksim::StatusString(static_cast<NTSTATUS>(status))) {
  *result_listener << "whose Status is " << ::ndksim::StatusString(arg.Status);
  return arg.Status == static_cast<NTSTATUS>(status);
}
/// Matches a successful result: "has Status STATUS_SUCCESS".
MATCHER(Succeeded, std::string(negation ? "doesn't have" : "has") + " Status STATUS_SUCCESS") {
  *result_listener << "whose Status is " << ::ndksim::StatusString(arg.Status);
  return arg.Status == STATUS_SUCCESS;
}
/// Matches a result whose RequestContext is `ctx`.
MATCHER_P(HasRequestContext, ctx, "has RequestContext " + ::testing::PrintToString(static_cast<const void*>(ctx))) {
  return arg.RequestContext == static_cast<const void*>(ctx);
}
/// Matches a result whose QPContext is `ctx`.
MATCHER_P(HasQpContext, ctx, "has QPContext " + ::testing::PrintToString(static_cast<const void*>(ctx))) {
  return arg.QPContext == static_cast<const void*>(ctx);
}
/// Matches a result whose BytesTransferred is `n`.
MATCHER_P(HasBytesTransferred, n, "has BytesTransferred " + ::testing::PrintToString(n)) {
  return arg.BytesTransferred == static_cast<ULONG>(n);
}
/// Matches an NDK_RESULT_EX whose Type is `type` (an NDK_OPERATION_TYPE): "has Type Write";
/// explains a mismatch with "whose Type is Read".
MATCHER_P(HasType, type,
          std::string(negation ? "doesn't have" : "has") + " Type " +
              ::ndksim::OperationTypeString(static_cast<NDK_OPERATION_TYPE>(type))) {
  *result_listener << "whose Type is " << ::ndksim::OperationTypeString(arg.Type);
  return arg.Type == static_cast<NDK_OPERATION_TYPE>(type);
}
/// The common case in one matcher: a successful result of `type` for request `ctx`
/// ("is a successful Write completion of request 0x1234"); a mismatch is explained with the
/// fields that differ ("whose Status is STATUS_CANCELLED, whose Type is Read").
MATCHER_P2(IsCompletion, type, ctx,
           std::string(negation ? "isn't" : "is") + " a successful " +
               ::ndksim::OperationTypeString(static_cast<NDK_OPERATION_TYPE>(type)) + " completion of request " +
               ::testing::PrintToString(static_cast<const void*>(ctx))) {
  const char* sep = "";
  if (arg.Status != STATUS_SUCCESS) {
    *result_listener << sep << "whose Status is " << ::ndksim::StatusString(arg.Status);
    sep = ", ";
  }
  if (arg.Type != static_cast<NDK_OPERATION_TYPE>(type)) {
    *result_listener << sep << "whose Type is " << ::ndksim::OperationTypeString(arg.Type);
    sep = ", ";
  }
  if (arg.RequestContext != static_cast<const void*>(ctx)) {
    *result_listener << sep << "whose RequestContext is "
                     << ::testing::PrintToString(static_cast<const void*>(arg.RequestContext));
    sep = ", ";
  }
  return *sep == '\0';
}

/// Matches an NTSTATUS (a return value of an NDK call, a callback's status) equal to `expected`:
/// "is STATUS_SUCCESS" / "isn't STATUS_SUCCESS", and explains with "which is STATUS_X".
///   EXPECT_THAT(qp->Dispatch->NdkFlush(qp), IsStatus(STATUS_SUCCESS));
class IsStatusMatcher {
 public:
  using is_gtest_matcher = void;  ///< makes the class a GoogleTest matcher
  /// Matches `expected`.
  explicit IsStatusMatcher(NTSTATUS expected) : expected_(expected) {}
  /// Whether `actual` is the expected status; `os`, if set, gets "which is" and its name.
  bool MatchAndExplain(NTSTATUS actual, std::ostream* os) const {
    if (os != nullptr) *os << "which is " << ::ndksim::StatusString(actual);
    return actual == expected_;
  }
  /// Writes "is" and the expected status's name.
  void DescribeTo(std::ostream* os) const { *os << "is " << ::ndksim::StatusString(expected_); }
  /// Writes "isn't" and the expected status's name.
  void DescribeNegationTo(std::ostream* os) const { *os << "isn't " << ::ndksim::StatusString(expected_); }

 private:
  NTSTATUS expected_;
};
/// The IsStatusMatcher of `expected`, for EXPECT_THAT and ASSERT_THAT.
inline ::testing::Matcher<NTSTATUS> IsStatus(NTSTATUS expected) { return IsStatusMatcher(expected); }

/// @name Predicate-formatters

/// Predicate-formatters behind EXPECT_STATUS_EQ and EXPECT_NT_SUCCESS (for EXPECT_PRED_FORMAT*).
///@{
inline ::testing::AssertionResult StatusEq(const char* expected_expr, const char* actual_expr, NTSTATUS expected,
                                           NTSTATUS actual) {
  if (expected == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Expected equality of these statuses:\n  " << expected_expr
                                       << "\n    Which is: " << ::ndksim::StatusString(expected) << "\n  "
                                       << actual_expr << "\n    Which is: " << ::ndksim::StatusString(actual);
}
inline ::testing::AssertionResult NtSuccess(const char* expr, NTSTATUS status) {
  if (NT_SUCCESS(status)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Expected NT_SUCCESS(" << expr << "), but it is "
                                       << ::ndksim::StatusString(status);
}
///@}

}  // namespace ndksim::testing

/// @name Status equality assertions

/// EXPECT_EQ for NTSTATUS values that prints both with names on failure:
///   Expected equality of these statuses:
///     STATUS_SUCCESS
///       Which is: STATUS_SUCCESS
///     qp->Dispatch->NdkFlush(qp)
///       Which is: STATUS_INVALID_DEVICE_STATE
/// The expressions are quoted here, before the preprocessor expands them, so a failure shows
/// "STATUS_SUCCESS" as written rather than the macro's expansion "((NTSTATUS)0x00000000L)".
///@{
#define EXPECT_STATUS_EQ(expected, actual) \
  GTEST_ASSERT_(::ndksim::testing::StatusEq(#expected, #actual, (expected), (actual)), GTEST_NONFATAL_FAILURE_)
#define ASSERT_STATUS_EQ(expected, actual) \
  GTEST_ASSERT_(::ndksim::testing::StatusEq(#expected, #actual, (expected), (actual)), GTEST_FATAL_FAILURE_)
///@}

/// @name NT_SUCCESS assertions

/// Expects NT_SUCCESS(expr) (STATUS_SUCCESS, STATUS_PENDING, STATUS_TIMEOUT, ...), naming the
/// status on failure: "Expected NT_SUCCESS(expr), but it is STATUS_INVALID_PARAMETER".
///@{
#define EXPECT_NT_SUCCESS(expr) GTEST_ASSERT_(::ndksim::testing::NtSuccess(#expr, (expr)), GTEST_NONFATAL_FAILURE_)
#define ASSERT_NT_SUCCESS(expr) GTEST_ASSERT_(::ndksim::testing::NtSuccess(#expr, (expr)), GTEST_FATAL_FAILURE_)
///@}

namespace ndksim::testing {

/// Fixture: a connected QP pair on a two-node fabric with the functional (zero-delay) profile by
/// default. Override Config() to change the profile, loopback, depths or limits.
class ConnectedQpPairTest : public ::testing::Test {
 protected:
  /// What SetUp makes the pair with: QpPairConfig's defaults on the functional profile.
  virtual QpPairConfig Config() const {
    QpPairConfig c;
    c.fabric.profile = profiles::kFunctional;
    return c;
  }
  /// An override of SetUp must call this one (ConnectedQpPairTest::SetUp()) first.
  void SetUp() override { pair_ = std::make_unique<QpPair>(Config()); }
  /// The fault rules the test added, with what each did, go into the test's XML report
  /// (--gtest_output=xml, property "ndksim_fault_rules"), and are printed when the test failed.
  void TearDown() override {
    if (pair_ != nullptr) {
      const std::string faults = pair_->fabric().DescribeFaults();
      if (!faults.empty()) {
        RecordProperty("ndksim_fault_rules", faults);
        if (HasFailure()) std::cout << "Fault rules of this test:\n" << faults;
      }
    }
    pair_.reset();
  }

  /// @name The pair

  /// The pair, its two ends and its fabric: there from SetUp to TearDown.
  ///@{
  QpPair& pair() { return Pair(); }
  QpEnd& a() { return Pair().a(); }
  QpEnd& b() { return Pair().b(); }
  Fabric& fabric() { return Pair().fabric(); }
  ///@}

 private:
  std::unique_ptr<QpPair> pair_;

  QpPair& Pair() {
    if (pair_ == nullptr) {
      throw std::logic_error(
          "ConnectedQpPairTest: the pair is made in SetUp() and gone after TearDown(); a SetUp() override must "
          "call ConnectedQpPairTest::SetUp() first, and the test's constructor cannot use pair(), a(), b() or "
          "fabric() (do that in SetUp() after the base's, or in the test body)");
    }
    return *pair_;
  }
};

}  // namespace ndksim::testing
