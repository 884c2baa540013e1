// SPDX-License-Identifier: MIT
// Unit tests of the protection table's memory operations and page-list, window and privileged
// checks (translation.h): one test per outcome, on a two-node rig without the provider.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "hw_test_driver.h"
#include "hwmodel/translation.h"

namespace ndksim::hw {
namespace {

using testing::TwoNodeRig;

constexpr std::uint64_t kPage = 4096;

struct AlignedPages {
  explicit AlignedPages(std::size_t n) : data(static_cast<std::byte*>(std::aligned_alloc(kPage, n * kPage))) {
    std::memset(data, 0, n * kPage);
  }
  ~AlignedPages() { std::free(data); }
  std::uint64_t Page(std::size_t i) const { return reinterpret_cast<std::uint64_t>(data + i * kPage); }
  std::byte* data;
};

class TranslationOps : public ::testing::Test {
 protected:
  Translation& tpt() { return rig_.a->Tpt(); }
  PdNumber pd() const { return rig_.pd_a; }
  static MemoryKey Next(MemoryKey k) { return MemoryKey::Make(k.Index(), static_cast<std::uint8_t>(k.KeyByte() + 1)); }
  MemoryKey FrKey(std::uint32_t pages, bool remote) {
    MemoryKey k;
    EXPECT_EQ(tpt().AllocateFastRegister(pd(), pages, remote, &k), CommandStatus::kOk);
    return k;
  }
  MemoryKey WindowKey() {
    MemoryKey k;
    EXPECT_EQ(tpt().AllocateWindow(pd(), &k), CommandStatus::kOk);
    return k;
  }
  MemoryKey Region(std::uint32_t access) {
    return rig_.Register(*rig_.a, pd(), buf_.data(), buf_.size(), access);
  }
  FastRegisterRequest Fr(MemoryKey k, const std::vector<std::uint64_t>& pages, std::uint64_t length,
                         std::uint32_t access = access::kLocalWrite) {
    return {Next(k), tpt().Generation(k), pd(), pages[0], length, 0, access, pages.data(),
            static_cast<std::uint32_t>(pages.size())};
  }
  BindRequest Bnd(MemoryKey w, MemoryKey region, std::uint64_t offset, std::uint64_t length,
                  std::uint32_t access = access::kRemoteRead) {
    return {Next(w), tpt().Generation(w), region, tpt().Generation(region), pd(),
            reinterpret_cast<std::uint64_t>(buf_.data()) + offset, length, access};
  }

  TwoNodeRig rig_;
  std::vector<std::byte> buf_ = std::vector<std::byte>(4096);
  AlignedPages pages_{2};
};

// ---- fast register ----

TEST_F(TranslationOps, FastRegisterMakesThePageListValid) {
  const MemoryKey k = FrKey(2, true);
  const std::vector<std::uint64_t> list = {pages_.Page(1), pages_.Page(0)};
  ASSERT_EQ(tpt().FastRegister(Fr(k, list, 2 * kPage, access::kRemoteWrite)), MemoryOpOutcome::kOk);
  // Bytes across the page boundary land on page 1's end and page 0's start.
  std::byte src[8];
  std::memset(src, 0x6d, sizeof src);
  EXPECT_TRUE(tpt().CopyTo(Next(k), pd(), pages_.Page(1) + kPage - 4, src, 8, access::kRemoteWrite));
  EXPECT_EQ(std::to_integer<int>(pages_.data[2 * kPage - 1]), 0x6d);
  EXPECT_EQ(std::to_integer<int>(pages_.data[3]), 0x6d);
  EXPECT_EQ(std::to_integer<int>(pages_.data[4]), 0);
}

TEST_F(TranslationOps, FastRegisterWithAnUnknownKeyIsBadKey) {
  const std::vector<std::uint64_t> list = {pages_.Page(0)};
  EXPECT_EQ(tpt().FastRegister(Fr(MemoryKey::Make(999, 0), list, 64)), MemoryOpOutcome::kBadKey);
}

TEST_F(TranslationOps, FastRegisterOfAWindowIsWrongKind) {
  const std::vector<std::uint64_t> list = {pages_.Page(0)};
  EXPECT_EQ(tpt().FastRegister(Fr(WindowKey(), list, 64)), MemoryOpOutcome::kWrongKind);
}

TEST_F(TranslationOps, FastRegisterFromAnotherPdIsPdMismatch) {
  const std::vector<std::uint64_t> list = {pages_.Page(0)};
  FastRegisterRequest r = Fr(FrKey(1, true), list, 64);
  r.pd = PdNumber{pd().value + 100};
  EXPECT_EQ(tpt().FastRegister(r), MemoryOpOutcome::kPdMismatch);
}

TEST_F(TranslationOps, RemoteRightsOnALocalOnlyRegionAreAccessDenied) {
  const std::vector<std::uint64_t> list = {pages_.Page(0)};
  EXPECT_EQ(tpt().FastRegister(Fr(FrKey(1, false), list, 64, access::kRemoteRead)), MemoryOpOutcome::kAccessDenied);
}

TEST_F(TranslationOps, MorePagesThanAllocatedIsTooManyPages) {
  const std::vector<std::uint64_t> list = {pages_.Page(0), pages_.Page(1)};
  EXPECT_EQ(tpt().FastRegister(Fr(FrKey(1, true), list, 64)), MemoryOpOutcome::kTooManyPages);
}

TEST_F(TranslationOps, LengthPastThePageListIsOutOfBounds) {
  const std::vector<std::uint64_t> list = {pages_.Page(0)};
  FastRegisterRequest r = Fr(FrKey(1, true), list, kPage - 8);
  r.fbo = 16;
  EXPECT_EQ(tpt().FastRegister(r), MemoryOpOutcome::kOutOfBounds);
}

// ---- bind ----

TEST_F(TranslationOps, BindMakesTheWindowValidInsideItsRange) {
  const MemoryKey region = Region(access::kLocalWrite);
  const MemoryKey w = WindowKey();
  ASSERT_EQ(tpt().Bind(Bnd(w, region, 64, 128, access::kRemoteWrite)), MemoryOpOutcome::kOk);
  const auto base = reinterpret_cast<std::uint64_t>(buf_.data());
  EXPECT_TRUE(tpt().Check(Next(w), pd(), base + 64, 128, access::kRemoteWrite).Ok());
  EXPECT_EQ(tpt().Check(Next(w), pd(), base + 64, 129, access::kRemoteWrite).outcome, TranslationOutcome::kOutOfBounds);
}

TEST_F(TranslationOps, BindInsideAStaleRegionTokenIsBadKey) {
  const MemoryKey region = Region(access::kLocalWrite);
  EXPECT_EQ(tpt().Bind(Bnd(WindowKey(), Next(region), 0, 64)), MemoryOpOutcome::kBadKey);
}

TEST_F(TranslationOps, BindInsideAFastRegisterRegionIsWrongKind) {
  EXPECT_EQ(tpt().Bind(Bnd(WindowKey(), FrKey(1, true), 0, 64)), MemoryOpOutcome::kWrongKind);
}

TEST_F(TranslationOps, BindFromAnotherPdIsPdMismatch) {
  const MemoryKey region = Region(access::kLocalWrite);
  BindRequest r = Bnd(WindowKey(), region, 0, 64);
  r.pd = PdNumber{pd().value + 100};
  EXPECT_EQ(tpt().Bind(r), MemoryOpOutcome::kPdMismatch);
}

TEST_F(TranslationOps, RemoteWriteWindowOverARegionWithoutLocalWriteIsAccessDenied) {
  const MemoryKey region = Region(access::kRemoteRead);
  EXPECT_EQ(tpt().Bind(Bnd(WindowKey(), region, 0, 64, access::kRemoteWrite)), MemoryOpOutcome::kAccessDenied);
}

TEST_F(TranslationOps, WindowOutsideItsRegionIsOutOfBounds) {
  const MemoryKey region = Region(access::kLocalWrite);
  EXPECT_EQ(tpt().Bind(Bnd(WindowKey(), region, 4000, 200)), MemoryOpOutcome::kOutOfBounds);
}

TEST_F(TranslationOps, ARegionWithABoundWindowIsBusyUntilTheWindowGoes) {
  const MemoryKey region = Region(access::kLocalWrite);
  const MemoryKey w = WindowKey();
  ASSERT_EQ(tpt().Bind(Bnd(w, region, 0, 64)), MemoryOpOutcome::kOk);
  EXPECT_EQ(tpt().Deregister(region), CommandStatus::kBusy);
  ASSERT_EQ(tpt().Free(w), CommandStatus::kOk);
  EXPECT_EQ(tpt().Deregister(region), CommandStatus::kOk);
}

// ---- invalidate ----

TEST_F(TranslationOps, InvalidateEndsAFastRegistration) {
  const MemoryKey k = FrKey(1, true);
  const std::vector<std::uint64_t> list = {pages_.Page(0)};
  ASSERT_EQ(tpt().FastRegister(Fr(k, list, 64)), MemoryOpOutcome::kOk);
  ASSERT_EQ(tpt().Invalidate(Next(k), pd()), MemoryOpOutcome::kOk);
  EXPECT_EQ(tpt().Check(Next(k), pd(), pages_.Page(0), 8, 0).outcome, TranslationOutcome::kInvalid);
}

TEST_F(TranslationOps, InvalidateWithAStaleKeyIsBadKey) {
  const MemoryKey k = FrKey(1, true);
  EXPECT_EQ(tpt().Invalidate(Next(Next(k)), pd()), MemoryOpOutcome::kBadKey);
}

TEST_F(TranslationOps, InvalidateOfARegisteredRegionIsWrongKind) {
  EXPECT_EQ(tpt().Invalidate(Region(0), pd()), MemoryOpOutcome::kWrongKind);
}

TEST_F(TranslationOps, InvalidateOfAnUnboundWindowIsNotValid) {
  EXPECT_EQ(tpt().Invalidate(WindowKey(), pd()), MemoryOpOutcome::kNotValid);
}

TEST_F(TranslationOps, InvalidateFromAnotherPdIsPdMismatch) {
  const MemoryKey region = Region(access::kLocalWrite);
  const MemoryKey w = WindowKey();
  ASSERT_EQ(tpt().Bind(Bnd(w, region, 0, 64)), MemoryOpOutcome::kOk);
  EXPECT_EQ(tpt().Invalidate(Next(w), PdNumber{pd().value + 100}), MemoryOpOutcome::kPdMismatch);
}

// ---- privileged entry and read sinks ----

TEST_F(TranslationOps, PrivilegedEntryMapsLogicalAddressesForLocalAccess) {
  MemoryKey k;
  ASSERT_EQ(tpt().AllocatePrivileged(pd(), &k), CommandStatus::kOk);
  const TranslationResult t = tpt().Check(k, pd(), pages_.Page(1) + 8, 64, access::kLocalWrite);
  ASSERT_TRUE(t.Ok());
  EXPECT_EQ(t.host, pages_.data + kPage + 8);
}

TEST_F(TranslationOps, PrivilegedEntryRefusesRemoteAccess) {
  MemoryKey k;
  ASSERT_EQ(tpt().AllocatePrivileged(pd(), &k), CommandStatus::kOk);
  EXPECT_EQ(tpt().Check(k, pd(), pages_.Page(0), 8, access::kRemoteRead).outcome, TranslationOutcome::kAccessDenied);
  EXPECT_EQ(tpt().Check(k, pd(), pages_.Page(0), 8, access::kRemoteWrite).outcome, TranslationOutcome::kAccessDenied);
}

TEST_F(TranslationOps, ReadSinkRightIsNotNeededWhenTheProfileSaysSo) {
  const MemoryKey region = Region(access::kLocalWrite);
  const auto base = reinterpret_cast<std::uint64_t>(buf_.data());
  EXPECT_TRUE(tpt().Check(region, pd(), base, 8, access::kLocalWrite | access::kReadSink).Ok());
}

TEST(TranslationReadSink, RequiredReadSinkRightIsAccessDeniedWithoutIt) {
  TwoNodeRig rig(profiles::kIWarp);
  std::vector<std::byte> buf(64);
  const MemoryKey plain = rig.Register(*rig.a, rig.pd_a, buf.data(), buf.size(), access::kLocalWrite);
  const MemoryKey sink = rig.Register(*rig.a, rig.pd_a, buf.data(), buf.size(), access::kLocalWrite | access::kReadSink);
  const auto base = reinterpret_cast<std::uint64_t>(buf.data());
  EXPECT_EQ(rig.a->Tpt().Check(plain, rig.pd_a, base, 8, access::kLocalWrite | access::kReadSink).outcome,
            TranslationOutcome::kAccessDenied);
  EXPECT_TRUE(rig.a->Tpt().Check(sink, rig.pd_a, base, 8, access::kLocalWrite | access::kReadSink).Ok());
}

}  // namespace
}  // namespace ndksim::hw
