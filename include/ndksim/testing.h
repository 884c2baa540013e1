// GoogleTest/GoogleMock helpers for suites that test NDK consumer code on ndksim: a fixture that
// gives a connected QP pair on two nodes, and matchers for NDK_RESULT and NDK_RESULT_EX.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <ostream>

#include "ndksim/harness.h"

// Printers so that failing expectations show the fields, not raw bytes.
inline void PrintTo(const NDK_RESULT& r, std::ostream* os) {
  *os << "NDK_RESULT{Status=0x" << std::hex << static_cast<std::uint32_t>(r.Status) << std::dec
      << ", BytesTransferred=" << r.BytesTransferred << ", QPContext=" << r.QPContext
      << ", RequestContext=" << r.RequestContext << "}";
}
inline void PrintTo(const NDK_RESULT_EX& r, std::ostream* os) {
  *os << "NDK_RESULT_EX{Status=0x" << std::hex << static_cast<std::uint32_t>(r.Status) << std::dec
      << ", BytesTransferred=" << r.BytesTransferred << ", QPContext=" << r.QPContext
      << ", RequestContext=" << r.RequestContext << ", Type=0x" << std::hex << static_cast<std::uint32_t>(r.Type)
      << ", ProviderErrorCode=0x" << r.ProviderErrorCode << ", TypeSpecificCompletionOutput=0x"
      << r.TypeSpecificCompletionOutput << std::dec << "}";
}

namespace ndksim::testing {

// Matches a result (NDK_RESULT or NDK_RESULT_EX) whose Status is `status`.
MATCHER_P(HasStatus, status, "has Status " + ::testing::PrintToString(static_cast<std::uint32_t>(status))) {
  return arg.Status == static_cast<NTSTATUS>(status);
}
// Matches a successful result.
MATCHER(Succeeded, "has Status STATUS_SUCCESS") { return arg.Status == STATUS_SUCCESS; }
// Matches a result whose RequestContext is `ctx`.
MATCHER_P(HasRequestContext, ctx, "has RequestContext " + ::testing::PrintToString(static_cast<const void*>(ctx))) {
  return arg.RequestContext == static_cast<const void*>(ctx);
}
// Matches a result whose QPContext is `ctx`.
MATCHER_P(HasQpContext, ctx, "has QPContext " + ::testing::PrintToString(static_cast<const void*>(ctx))) {
  return arg.QPContext == static_cast<const void*>(ctx);
}
// Matches a result whose BytesTransferred is `n`.
MATCHER_P(HasBytesTransferred, n, "has BytesTransferred " + ::testing::PrintToString(n)) {
  return arg.BytesTransferred == static_cast<ULONG>(n);
}
// Matches an NDK_RESULT_EX whose Type is `type` (an NDK_OPERATION_TYPE).
MATCHER_P(HasType, type, "has Type " + ::testing::PrintToString(static_cast<std::uint32_t>(type))) {
  return arg.Type == static_cast<NDK_OPERATION_TYPE>(type);
}
// The common case in one matcher: a successful result of `type` for request `ctx`.
MATCHER_P2(IsCompletion, type, ctx, "is a successful completion of the request") {
  return arg.Status == STATUS_SUCCESS && arg.Type == static_cast<NDK_OPERATION_TYPE>(type) &&
         arg.RequestContext == static_cast<const void*>(ctx);
}

// Fixture: a connected QP pair on a two-node fabric with the functional (zero-delay) profile by
// default. Override Config() to change the profile, loopback, depths or limits.
class ConnectedQpPairTest : public ::testing::Test {
 protected:
  virtual QpPairConfig Config() const {
    QpPairConfig c;
    c.fabric.profile = profiles::kFunctional;
    return c;
  }
  void SetUp() override { pair_ = std::make_unique<QpPair>(Config()); }
  void TearDown() override { pair_.reset(); }

  QpPair& pair() { return *pair_; }
  QpEnd& a() { return pair_->a(); }
  QpEnd& b() { return pair_->b(); }
  Fabric& fabric() { return pair_->fabric(); }

 private:
  std::unique_ptr<QpPair> pair_;
};

}  // namespace ndksim::testing
