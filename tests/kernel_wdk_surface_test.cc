// SPDX-License-Identifier: MIT
// The WDK surface real kernel consumers use beyond the core services (docs/kernel.md, "WDK
// surface"), driven by consumer C code (tests/kernel/consumer_wdk_surface.c): annotations and MSVC
// keywords that compile, ntdef's macros, byte swaps, interlocked forms, pool with priorities and
// extended parameters, critical and guarded regions, processor and tick queries, wdmsec.h,
// ntstrsafe.h, ip2string.h, DbgPrint's formats and work items on the driver object. Each test checks
// one behaviour.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <array>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>

#include "kernel/consumer_headers.h"
#include "kernel/consumer_ndk_wrappers.h"
#include "kernel/consumer_services.h"
#include "kernel/consumer_wdk_surface.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"
#include "ndksim/testing.h"

namespace ndksim::kernel {
namespace {

constexpr std::size_t kMaxCch = 2147483647;  // NTSTRSAFE_MAX_CCH
constexpr int kPoolExtendedParameterPriority = 1;
constexpr int kPoolExtendedParameterSecurePool = 2;
constexpr int kPoolExtendedParameterMax = 4;
constexpr std::uint64_t kPoolFlagUninitialized = 0x2;
constexpr std::uint64_t kPoolFlagSession = 0x4;
constexpr std::uint64_t kPoolFlagNonPaged = 0x40;
constexpr std::uint64_t kPoolFlagSpecialPool = 0x100000000ULL;
constexpr std::uint32_t kAnyNodeOk = 0x80000000u;
constexpr int kNormalPoolPriority = 16;
constexpr int kNormalPoolPrioritySpecialPoolOverrun = 24;
constexpr std::uint32_t kFileDeviceUnknown = 0x22;
constexpr std::uint32_t kFileDeviceSecureOpen = 0x100;
constexpr std::int64_t kUninitializedPool = 0xCD;  // Environment::Impl::Allocate's fill

// The text up to the NUL (the whole buffer if there is none).
std::string Text() { return std::string(g_surface.text, strnlen(g_surface.text, sizeof(g_surface.text))); }

// The wide text up to the NUL.
std::u16string Wide() {
  std::u16string s;
  for (std::size_t i = 0; i < std::size(g_surface.wide) && g_surface.wide[i] != 0; ++i) s.push_back(g_surface.wide[i]);
  return s;
}

// The first `n` WCHARs of the wide buffer, NULs included (a UNICODE_STRING has no terminator).
std::u16string WideUnits(std::size_t n) { return std::u16string(g_surface.wide, g_surface.wide + n); }

class WdkSurface : public ::testing::Test {
 protected:
  WdkSurface() { std::memset(&g_surface, 0, sizeof(g_surface)); }
};

// Scenarios that need a kernel environment: they run on a kernel thread of node 0's machine.
class WdkSurfaceKernel : public WdkSurface {
 protected:
  WdkSurfaceKernel() : node_(&fabric_.AddNode({"node", {"192.0.2.1"}})) {}

  void RunOnNode(const std::function<void()>& body) {
    env_.StartThread("test", body, node_);
    env_.Run();
  }

  // The verifier's check a scenario fails the run with, and its message.
  std::string ViolationOf(const std::function<void()>& body, std::string* message = nullptr) {
    try {
      RunOnNode(body);
    } catch (const VerifierError& e) {
      if (message != nullptr) *message = e.what();
      return e.Check();
    }
    return "none";
  }

  // The message of the leak check at the driver's unload ("" if it passes).
  std::string LeakAtUnload(std::int32_t (*entry)(_DRIVER_OBJECT*, _UNICODE_STRING*)) {
    _DRIVER_OBJECT* driver = env_.LoadDriver(*node_, "surface", entry);
    env_.Run();
    EXPECT_STATUS_EQ(STATUS_SUCCESS, env_.DriverStatus(driver));
    env_.UnloadDriver(driver);
    try {
      env_.Run();
    } catch (const VerifierError& e) {
      EXPECT_EQ(e.Check(), "LEAK");
      return e.what();
    }
    return "";
  }

  // What `body`'s one DbgPrint line says, after the "[time ps] thread: " prefix.
  std::string DebugTextOf(const std::function<void()>& body) {
    RunOnNode(body);
    EXPECT_EQ(env_.DebugLog().size(), 1u);
    if (env_.DebugLog().empty()) return "";
    const std::string& line = env_.DebugLog().back();
    const std::string prefix = "] test: ";
    const std::size_t at = line.find(prefix);
    return at == std::string::npos ? line : line.substr(at + prefix.size());
  }

  Fabric fabric_{FabricConfig{.seed = 5, .profile = profiles::kFunctional}};
  Node* node_;
  Environment env_{fabric_, EnvironmentConfig{.seed = 13}};
};

// ---- annotations, MSVC keywords, base macros ----

// A driver's IOCTL header that defines CTL_CODE itself, included before <ntddk.h>, compiles (the
// WDK headers redefined it, an error under -Werror) and keeps its codes.
TEST(WdkHeaders, AnIoctlHeaderThatDefinesCtlCodeFirstCompilesBesideTheWdk) {
  EXPECT_EQ(HeadersIoctlCode(), (0x8123u << 16) | (0x801u << 2));
}

// Microsoft's RdmaSample defines an NdkSend, NdkReceive, NdkFastRegister ... of its own: header
// macros named after the NDK entries (which recorded call sites) broke its declarations.
TEST(WdkHeaders, AConsumersOwnFunctionsNamedAfterNdkEntriesCompile) {
  EXPECT_EQ(WrappersNamedAfterNdkEntriesCompile(), 3);
}

// Microsoft's NDK sample calls RtlIpv4StringToAddressExW with only <ndis.h> and <wsk.h> (an
// implicit declaration, a compile error here, before), and passes a typed pointer's address to
// InterlockedCompareExchangePointer (an incompatible pointer type to GCC).
TEST(WdkHeaders, AnNdisConsumerParsesAddressesAndClaimsTypedPointersAsTheNdkSampleDoes) {
  EXPECT_EQ(WrappersParseAndClaim(), 1);
}

TEST(WdkHeaders, DefineGuidDefinesInTheFileWithInitguidAndDeclaresElsewhere) {
  EXPECT_EQ(HeadersGuidData1(), 0x6f1e2d3cu);
  EXPECT_EQ(HeadersGuidAddress(), HeadersGuidAddressFromAnotherFile());  // one GUID, linked
  EXPECT_EQ(HeadersGuidsCompare(), 1);
}

TEST(WdkHeaders, DeclaredUnicodeStringsHaveTheirLengthsInBytes) {
  EXPECT_EQ(HeadersConstantStringLength(), 2u * 21u);  // \Device\NdksimHeaders: 21 WCHARs
  EXPECT_EQ(HeadersWritableStringCapacity(), 64u);
}

TEST_F(WdkSurface, SalAndConcurrencyAnnotationsCompileToNothing) { EXPECT_EQ(SurfaceAnnotatedSum(40, 2), 42u); }

TEST_F(WdkSurface, PragmaInsideAStatementMacroCompilesToNothing) {
  EXPECT_EQ(SurfacePragmaInsideAStatementMacro(3), 6u);
}

TEST_F(WdkSurface, PragmaPackPacksTheStructure) { EXPECT_EQ(SurfacePackedHeaderSize(), 5u); }

TEST_F(WdkSurface, DeclspecCachealignAlignsToTheCacheLine) { EXPECT_EQ(SurfaceCacheAlignedAlignment(), 64u); }

TEST_F(WdkSurface, DeclspecAlignAligns) { EXPECT_EQ(SurfaceDeclspecAlignAlignment(), 16u); }

TEST_F(WdkSurface, DeclspecSelectanyKeepsOneDefinitionProgramWide) {
  EXPECT_EQ(SurfaceSelectAnyAddress(), ServicesSelectAnyAddress());
}

TEST_F(WdkSurface, ForceinlineFunctionsWork) { EXPECT_EQ(SurfaceForceInlineTwice(21), 42u); }

TEST_F(WdkSurface, ArgumentPresentIsFalseForNull) { EXPECT_EQ(SurfaceArgumentPresent(nullptr), 0); }

TEST_F(WdkSurface, ArgumentPresentIsTrueForAPointer) {
  int x = 0;
  EXPECT_EQ(SurfaceArgumentPresent(&x), 1);
}

TEST_F(WdkSurface, NtErrorHoldsForAnErrorStatus) { EXPECT_EQ(SurfaceSeverity(STATUS_INVALID_PARAMETER), 3); }

TEST_F(WdkSurface, NtWarningHoldsForAWarningStatus) { EXPECT_EQ(SurfaceSeverity(STATUS_BUFFER_OVERFLOW), 2); }

TEST_F(WdkSurface, NtInformationHoldsForAnInformationalStatus) {
  EXPECT_EQ(SurfaceSeverity(static_cast<std::int32_t>(0x40000000)), 1);
}

TEST_F(WdkSurface, NoSeverityMacroHoldsForSuccess) { EXPECT_EQ(SurfaceSeverity(STATUS_SUCCESS), 0); }

TEST_F(WdkSurface, MinOfCIsTheSmaller) { EXPECT_EQ(SurfaceMin(7, -3), -3); }

TEST_F(WdkSurface, MaxOfCIsTheLarger) { EXPECT_EQ(SurfaceMax(7, -3), 7); }

// ---- byte order ----

TEST_F(WdkSurface, RtlUshortByteSwapReversesTwoBytes) { EXPECT_EQ(SurfaceUshortByteSwap(0x1234), 0x3412); }

TEST_F(WdkSurface, RtlUshortByteSwapOfAPortIsItsNetworkOrder) { EXPECT_EQ(SurfaceUshortByteSwap(445), htons(445)); }

TEST_F(WdkSurface, RtlUlongByteSwapReversesFourBytes) { EXPECT_EQ(SurfaceUlongByteSwap(0x12345678u), 0x78563412u); }

TEST_F(WdkSurface, RtlUlonglongByteSwapReversesEightBytes) {
  EXPECT_EQ(SurfaceUlonglongByteSwap(0x0102030405060708ULL), 0x0807060504030201ULL);
}

// ---- interlocked forms ----

TEST_F(WdkSurface, InterlockedIncrement16ReturnsTheNewValue) {
  SurfaceInterlockedIncrement16(41);
  EXPECT_EQ(g_surface.values[0], 42);
  EXPECT_EQ(g_surface.values[1], 42);
}

TEST_F(WdkSurface, InterlockedIncrement16WrapsAt16Bits) {
  SurfaceInterlockedIncrement16(32767);
  EXPECT_EQ(g_surface.values[1], -32768);
}

TEST_F(WdkSurface, InterlockedDecrement16ReturnsTheNewValue) {
  SurfaceInterlockedDecrement16(0);
  EXPECT_EQ(g_surface.values[0], -1);
  EXPECT_EQ(g_surface.values[1], -1);
}

TEST_F(WdkSurface, InterlockedCompareExchange16ReplacesAMatchAndReturnsTheOldValue) {
  SurfaceInterlockedCompareExchange16(5, 9, 5);
  EXPECT_EQ(g_surface.values[0], 5);
  EXPECT_EQ(g_surface.values[1], 9);
}

TEST_F(WdkSurface, IntrinsicCompareExchangeReplacesAMatch) {
  SurfaceIntrinsicCompareExchange(5, 9, 5);
  EXPECT_EQ(g_surface.values[0], 5);
  EXPECT_EQ(g_surface.values[1], 9);
}

TEST_F(WdkSurface, IntrinsicCompareExchangeLeavesAMismatchAndReturnsTheCurrentValue) {
  SurfaceIntrinsicCompareExchange(6, 9, 5);
  EXPECT_EQ(g_surface.values[0], 6);
  EXPECT_EQ(g_surface.values[1], 6);
}

TEST_F(WdkSurface, IntrinsicIncrement16ReturnsTheNewValue) {
  SurfaceIntrinsicIncrement16(-1);
  EXPECT_EQ(g_surface.values[0], 0);
}

TEST_F(WdkSurface, InterlockedOr8ReturnsTheOriginalValue) {
  SurfaceInterlockedOr8(0x0C, 0x03);
  EXPECT_EQ(g_surface.values[0], 0x0C);
  EXPECT_EQ(g_surface.values[1], 0x0F);
}

TEST_F(WdkSurface, InterlockedAnd8ReturnsTheOriginalValue) {
  SurfaceInterlockedAnd8(0x0C, 0x06);
  EXPECT_EQ(g_surface.values[0], 0x0C);
  EXPECT_EQ(g_surface.values[1], 0x04);
}

TEST_F(WdkSurface, InterlockedXor8ReturnsTheOriginalValue) {
  SurfaceInterlockedXor8(0x0C, 0x06);
  EXPECT_EQ(g_surface.values[0], 0x0C);
  EXPECT_EQ(g_surface.values[1], 0x0A);
}

TEST_F(WdkSurface, InterlockedIncrementNoFenceReturnsTheNewValue) {
  SurfaceInterlockedIncrementNoFence(9);
  EXPECT_EQ(g_surface.values[0], 10);
  EXPECT_EQ(g_surface.values[1], 10);
}

TEST_F(WdkSurface, InterlockedDecrementReleaseReturnsTheNewValue) {
  SurfaceInterlockedDecrementRelease(1);
  EXPECT_EQ(g_surface.values[0], 0);
  EXPECT_EQ(g_surface.values[1], 0);
}

TEST_F(WdkSurface, InterlockedCompareExchangeAcquireReplacesAMatch) {
  SurfaceInterlockedCompareExchangeAcquire(3, 4, 3);
  EXPECT_EQ(g_surface.values[0], 3);
  EXPECT_EQ(g_surface.values[1], 4);
}

TEST_F(WdkSurface, InterlockedExchangeNoFenceReturnsTheOldValue) {
  SurfaceInterlockedExchangeNoFence(3, 8);
  EXPECT_EQ(g_surface.values[0], 3);
  EXPECT_EQ(g_surface.values[1], 8);
}

TEST_F(WdkSurface, APointerWrittenWithReleaseIsReadWithAcquire) {
  int x = 0;
  EXPECT_EQ(SurfacePointerPublishedAndRead(&x), &x);
}

// ---- pool ----

TEST_F(WdkSurfaceKernel, ExAllocatePoolWithTagPriorityIsChargedToItsTag) {
  RunOnNode([] { SurfaceAllocateWithPriority(kNormalPoolPriority, 100); });
  ASSERT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(env_.PoolUsage().at("Prio"), (PoolTagUsage{.allocations = 1, .bytes = 100, .total_allocations = 1}));
}

TEST_F(WdkSurfaceKernel, ExAllocatePoolWithTagPriorityDoesNotZeroTheBlock) {
  RunOnNode([] { SurfaceAllocateWithPriority(kNormalPoolPriority, 100); });
  EXPECT_EQ(g_surface.values[0], kUninitializedPool);
}

TEST_F(WdkSurfaceKernel, ASpecialPoolPriorityAllocatesFromTheNormalPool) {
  RunOnNode([] { SurfaceAllocateWithPriority(kNormalPoolPrioritySpecialPoolOverrun, 100); });
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(env_.PoolUsage().at("Prio").allocations, 1u);
}

TEST_F(WdkSurfaceKernel, APriorityAllocationLeakedAtUnloadIsReportedByTag) {
  const std::string leak = LeakAtUnload(&SurfacePriorityLeakDriverEntry);
  EXPECT_NE(leak.find("pool tag 'Prio': 1 allocation(s), 48 bytes"), std::string::npos) << leak;
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3ZeroesTheBlock) {
  RunOnNode([] { SurfaceAllocatePool3WithPriority(kPoolFlagNonPaged, 64); });
  ASSERT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 0);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3WithPoolFlagUninitializedLeavesTheBlockUnzeroed) {
  RunOnNode([] { SurfaceAllocatePool3WithPriority(kPoolFlagNonPaged | kPoolFlagUninitialized, 64); });
  EXPECT_EQ(g_surface.values[0], kUninitializedPool);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3OnNodeZeroSucceeds) {
  RunOnNode([] { SurfaceAllocatePool3OnNode(0); });
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3OnANodeThatDoesNotExistFails) {
  RunOnNode([] { SurfaceAllocatePool3OnNode(1); });
  EXPECT_STATUS_EQ(STATUS_INSUFFICIENT_RESOURCES, g_surface.status);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3PreferringAnotherNodeWithAnyNodeOkSucceeds) {
  RunOnNode([] { SurfaceAllocatePool3OnNode(1 | kAnyNodeOk); });
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3WithAnUnknownRequiredParameterFails) {
  RunOnNode([] { SurfaceAllocatePool3WithParameter(kPoolExtendedParameterMax, 0, 0); });
  EXPECT_STATUS_EQ(STATUS_INSUFFICIENT_RESOURCES, g_surface.status);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3IgnoresAnUnknownOptionalParameter) {
  RunOnNode([] { SurfaceAllocatePool3WithParameter(kPoolExtendedParameterMax, 1, 0); });
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3WithARequiredPriorityOutsideExPoolPriorityFails) {
  RunOnNode([] { SurfaceAllocatePool3WithParameter(kPoolExtendedParameterPriority, 0, 7); });
  EXPECT_STATUS_EQ(STATUS_INSUFFICIENT_RESOURCES, g_surface.status);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool3WithASecurePoolFailsTheRun) {
  EXPECT_EQ(ViolationOf([] { SurfaceAllocatePool3WithParameter(kPoolExtendedParameterSecurePool, 0, 0); }), "POOL");
}

TEST_F(WdkSurfaceKernel, APool3AllocationLeakedAtUnloadIsReportedByTag) {
  const std::string leak = LeakAtUnload(&SurfacePool3LeakDriverEntry);
  EXPECT_NE(leak.find("pool tag 'Pol3': 1 allocation(s), 80 bytes"), std::string::npos) << leak;
}

TEST_F(WdkSurfaceKernel, ADriverThatFreesItsPriorityAndPool3BlocksUnloadsSilently) {
  EXPECT_EQ(LeakAtUnload(&SurfacePoolCleanDriverEntry), "");
}

TEST_F(WdkSurfaceKernel, ExAllocatePool2OfSessionPoolFails) {
  RunOnNode([] { SurfaceAllocatePool2(kPoolFlagNonPaged | kPoolFlagSession); });
  EXPECT_STATUS_EQ(STATUS_INSUFFICIENT_RESOURCES, g_surface.status);
}

TEST_F(WdkSurfaceKernel, ExAllocatePool2IgnoresTheOptionalSpecialPoolFlag) {
  RunOnNode([] { SurfaceAllocatePool2(kPoolFlagNonPaged | kPoolFlagSpecialPool); });
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
}

TEST_F(WdkSurfaceKernel, ExFreePool2ReleasesTheCharge) {
  RunOnNode([] { SurfaceFreePool2(); });
  EXPECT_EQ(env_.PoolUsage().at("Free"), (PoolTagUsage{.allocations = 0, .bytes = 0, .total_allocations = 1}));
}

TEST_F(WdkSurfaceKernel, ExFreePool2WithTheWrongTagFailsTheRun) {
  EXPECT_EQ(ViolationOf([] { SurfaceFreePool2WithTheWrongTag(); }), "POOL");
}

// ---- critical and guarded regions ----

TEST_F(WdkSurfaceKernel, CriticalRegionsNest) {
  RunOnNode([] { SurfaceNestedCriticalRegions(); });
  EXPECT_EQ(g_surface.values[0], 1);  // two entered
  EXPECT_EQ(g_surface.values[1], 1);  // one of them left
  EXPECT_EQ(g_surface.values[2], 0);  // both left
}

TEST_F(WdkSurfaceKernel, AGuardedRegionDisablesAllApcs) {
  RunOnNode([] { SurfaceGuardedRegion(); });
  EXPECT_EQ(g_surface.values[0], 1);
  EXPECT_EQ(g_surface.values[1], 1);
  EXPECT_EQ(g_surface.values[2], 0);
}

TEST_F(WdkSurfaceKernel, ACriticalRegionLeavesSpecialApcsEnabled) {
  RunOnNode([] { SurfaceCriticalRegionAllApcs(); });
  EXPECT_EQ(g_surface.values[0], 0);
}

TEST_F(WdkSurfaceKernel, AllApcsAreDisabledAtApcLevel) {
  RunOnNode([] { SurfaceAllApcsDisabledAtApcLevel(); });
  EXPECT_EQ(g_surface.values[0], 1);
}

TEST_F(WdkSurfaceKernel, LeavingACriticalRegionNotEnteredFailsTheRun) {
  EXPECT_EQ(ViolationOf([] { SurfaceLeaveCriticalRegionNotEntered(); }), "CRITICAL_REGION");
}

TEST_F(WdkSurfaceKernel, AThreadThatEndsInsideACriticalRegionFailsTheRun) {
  std::string message;
  EXPECT_EQ(ViolationOf([] { SurfaceEndInsideACriticalRegion(); }, &message), "CRITICAL_REGION");
  EXPECT_NE(message.find("KERNEL_APC_PENDING_DURING_EXIT"), std::string::npos) << message;
}

TEST_F(WdkSurfaceKernel, AWorkItemThatReturnsInsideAGuardedRegionFailsTheRun) {
  std::string message;
  EXPECT_EQ(ViolationOf([] { SurfaceWorkItemEndsInsideAGuardedRegion(); }, &message), "CRITICAL_REGION");
  EXPECT_NE(message.find("a work item ended inside 0 critical and 1 guarded region(s)"), std::string::npos) << message;
}

TEST_F(WdkSurfaceKernel, EnteringACriticalRegionAtDispatchLevelFailsTheRun) {
  EXPECT_EQ(ViolationOf([] { SurfaceEnterCriticalRegionAtDispatchLevel(); }), "IRQL");
}

// ---- processors and ticks ----

TEST_F(WdkSurfaceKernel, KeGetCurrentProcessorNumberExFillsGroupZeroProcessorZero) {
  RunOnNode([] { SurfaceCurrentProcessorNumberEx(); });
  EXPECT_EQ(g_surface.values[0], 0);  // the index
  EXPECT_EQ(g_surface.values[1], 0);  // Group
  EXPECT_EQ(g_surface.values[2], 0);  // Number
  EXPECT_EQ(g_surface.values[3], 0);  // Reserved
}

TEST_F(WdkSurfaceKernel, KeQueryActiveProcessorCountExOfAllGroupsIsOne) {
  std::uint32_t count = 0;
  RunOnNode([&] { count = SurfaceActiveProcessorCountEx(0xffff); });
  EXPECT_EQ(count, 1u);
}

TEST_F(WdkSurfaceKernel, KeQueryActiveProcessorCountExOfGroupZeroIsOne) {
  std::uint32_t count = 0;
  RunOnNode([&] { count = SurfaceActiveProcessorCountEx(0); });
  EXPECT_EQ(count, 1u);
}

TEST_F(WdkSurfaceKernel, KeQueryActiveProcessorCountExOfAGroupThatDoesNotExistIsZero) {
  std::uint32_t count = 99;
  RunOnNode([&] { count = SurfaceActiveProcessorCountEx(1); });
  EXPECT_EQ(count, 0u);
}

TEST_F(WdkSurfaceKernel, KeGetCurrentNodeNumberIsZero) {
  std::uint16_t node = 99;
  RunOnNode([&] { node = SurfaceCurrentNodeNumber(); });
  EXPECT_EQ(node, 0);
}

TEST_F(WdkSurfaceKernel, NodeZeroHasProcessorZeroOfGroupZero) {
  RunOnNode([] { SurfaceNodeActiveAffinity(0); });
  EXPECT_EQ(g_surface.values[0], 1);  // Mask
  EXPECT_EQ(g_surface.values[1], 0);  // Group
  EXPECT_EQ(g_surface.values[2], 1);  // Count
}

TEST_F(WdkSurfaceKernel, ANodeThatDoesNotExistHasNoProcessors) {
  RunOnNode([] { SurfaceNodeActiveAffinity(1); });
  EXPECT_EQ(g_surface.values[0], 0);
  EXPECT_EQ(g_surface.values[2], 0);
}

TEST_F(WdkSurfaceKernel, KeQueryTickCountCountsTimeIncrementsOfSimulatedTime) {
  RunOnNode([] { SurfaceTickCountAfter(500'000); });  // 50 ms
  EXPECT_EQ(g_surface.values[2], 156'250);
  EXPECT_EQ(g_surface.values[0], g_surface.values[1] / 156'250);
  EXPECT_GE(g_surface.values[0], 3);
}

// ---- wdmsec.h ----

TEST_F(WdkSurfaceKernel, IoCreateDeviceSecureCreatesTheDriversDevice) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node_, "secure", &SurfaceSecureDeviceDriverEntry);
  env_.Run();
  ASSERT_STATUS_EQ(STATUS_SUCCESS, env_.DriverStatus(driver));
  EXPECT_EQ(g_surface.values[0], 1);  // the driver's device
  EXPECT_EQ(g_surface.values[1], kFileDeviceUnknown);
  EXPECT_EQ(g_surface.values[2], 1);  // with its extension
  EXPECT_EQ(g_surface.values[3], kFileDeviceSecureOpen);
}

TEST_F(WdkSurfaceKernel, ASecureDeviceDeletedAtUnloadLeavesNothing) {
  EXPECT_EQ(LeakAtUnload(&SurfaceSecureDeviceDriverEntry), "");
}

TEST_F(WdkSurfaceKernel, IoCreateDeviceSecureRefusesAStringOutsideTheDeviceObjectForm) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node_, "secure", &CleanDriverEntry);
  env_.Run();
  RunOnNode([driver] {
    SurfaceCreateDeviceSecureWithSddl(driver, reinterpret_cast<const std::uint16_t*>(u"O:BAG:SY"));
  });
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 0);  // no device
}

TEST_F(WdkSurfaceKernel, IoCreateDeviceSecureTakesHexRightsAndSidStrings) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node_, "secure", &CleanDriverEntry);
  env_.Run();
  RunOnNode([driver] {
    const char16_t* sddl = u"D:P(A;;0x1200a9;;;WD)(A;;GA;;;S-1-5-18)";
    SurfaceCreateDeviceSecureWithSddl(driver, reinterpret_cast<const std::uint16_t*>(sddl));
  });
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 1);
}

TEST_F(WdkSurface, SddlDevobjSysAllAdmAllHoldsItsSddl) {
  EXPECT_TRUE(SurfaceSddlSysAllAdmAllIs(reinterpret_cast<const std::uint16_t*>(u"D:P(A;;GA;;;SY)(A;;GA;;;BA)")));
}

// ---- ntstrsafe.h ----

TEST_F(WdkSurface, RtlStringCbPrintfAUsesWindowsLengthModifiers) {
  SurfaceCbPrintfWindowsLengthModifiers(4'000'000'000u, ~0ULL, -1);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "4000000000 18446744073709551615 -1 ee6b2800");
}

TEST_F(WdkSurface, RtlStringCbPrintfAFormatsWhatFits) {
  SurfaceCbPrintfA(8, "abcdefg");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "abcdefg");
}

TEST_F(WdkSurface, RtlStringCbPrintfATruncatesAndTerminatesOnOverflow) {
  SurfaceCbPrintfA(8, "abcdefghij");
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Text(), "abcdefg");
}

TEST_F(WdkSurface, RtlStringCbPrintfAOfZeroBytesIsInvalidAndWritesNothing) {
  SurfaceCbPrintfA(0, "abc");
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.text[0], '#');
}

TEST_F(WdkSurface, RtlStringCchPrintfAAboveTheMaximumIsInvalidAndEmptiesTheBuffer) {
  SurfaceCchPrintfA(kMaxCch + 1, "abc");
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(Text(), "");
}

TEST_F(WdkSurface, RtlStringCchPrintfATruncatesToTheCharacterCount) {
  SurfaceCchPrintfA(3, "abc");
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Text(), "ab");
}

TEST_F(WdkSurface, RtlStringCbPrintfAPrintsAPointerAs16HexDigits) {
  SurfaceCbPrintfAPointer(reinterpret_cast<void*>(0xabc123));
  EXPECT_EQ(Text(), "0000000000ABC123");
}

TEST_F(WdkSurface, RtlStringCbPrintfAPrintsAUnicodeStringForPercentWZ) {
  SurfaceCbPrintfAUnicodeString();
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "if=eth0");
}

TEST_F(WdkSurface, RtlStringCbPrintfAPrintsNullStringsAsNull) {
  SurfaceCbPrintfANullString();
  EXPECT_EQ(Text(), "[(null)|(null)]");
}

TEST_F(WdkSurface, RtlStringCbPrintfAConvertsAWideStringThroughTheAnsiCodePage) {
  SurfaceCbPrintfAWideString();
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "caf\xe9?");
}

TEST_F(WdkSurface, RtlStringCbPrintfARefusesPercentN) {
  SurfaceCbPrintfAPercentN();
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(Text(), "");
}

TEST_F(WdkSurface, RtlStringCbPrintfWFormatsSixteenBitCharacters) {
  SurfaceCbPrintfW(sizeof(g_surface.wide), 445);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Wide(), u"port=445");
}

TEST_F(WdkSurface, RtlStringCbPrintfWTakesAnOddByteCountAsWholeCharacters) {
  SurfaceCbPrintfW(9, 445);  // four characters
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Wide(), u"por");
  EXPECT_EQ(g_surface.wide[4], u'#');
}

TEST_F(WdkSurface, RtlStringCbPrintfWOfOneByteIsInvalid) {
  SurfaceCbPrintfW(1, 445);  // no whole character
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.wide[0], u'#');
}

TEST_F(WdkSurface, RtlStringCchPrintfWTruncatesAndTerminatesOnOverflow) {
  SurfaceCchPrintfW(7, 445);
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Wide(), u"port=4");
}

TEST_F(WdkSurface, RtlStringCbPrintfWConvertsCharStringsForCapitalSAndHs) {
  SurfaceCbPrintfWCharString();
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Wide(), u"abc/def");
}

TEST_F(WdkSurface, RtlStringCbVPrintfAFormatsAVaList) {
  SurfaceCbVPrintfA(sizeof(g_surface.text), 2, -3);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "2+-3");
}

TEST_F(WdkSurface, RtlStringCchVPrintfWTruncatesAVaListsResult) {
  SurfaceCchVPrintfW(3, 12, 34);
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Wide(), u"12");
}

TEST_F(WdkSurface, RtlStringCbCopyACopiesAndTerminates) {
  SurfaceCbCopyA(8, "abc");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "abc");
}

TEST_F(WdkSurface, RtlStringCbCopyATruncatesAndTerminatesOnOverflow) {
  SurfaceCbCopyA(4, "abcdef");
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Text(), "abc");
  EXPECT_EQ(g_surface.text[4], '#');
}

TEST_F(WdkSurface, RtlStringCbCopyAOfZeroBytesIsInvalid) {
  SurfaceCbCopyA(0, "abc");
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.text[0], '#');
}

TEST_F(WdkSurface, RtlStringCchCopyWTruncatesAndTerminatesOnOverflow) {
  SurfaceCchCopyW(3);
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Wide(), u"wx");
}

TEST_F(WdkSurface, RtlStringCbCopyWCopiesWholeCharacters) {
  SurfaceCbCopyW(10);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Wide(), u"wxyz");
}

TEST_F(WdkSurface, RtlStringCbCatAAppends) {
  SurfaceCbCatA(sizeof(g_surface.text), "ab", "cd");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "abcd");
}

TEST_F(WdkSurface, RtlStringCbCatATruncatesAndTerminatesOnOverflow) {
  SurfaceCbCatA(5, "ab", "cdef");
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Text(), "abcd");
}

TEST_F(WdkSurface, RtlStringCbCatAOfAnUnterminatedDestinationIsInvalidAndChangesNothing) {
  SurfaceCbCatAUnterminated();
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(std::string(g_surface.text, 5), "wxyz#");
}

TEST_F(WdkSurface, RtlStringCchCatWTruncatesAndTerminatesOnOverflow) {
  SurfaceCchCatW(4);
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(Wide(), u"abc");
}

TEST_F(WdkSurface, RtlStringCbLengthWCountsBytesWithoutTheTerminator) {
  SurfaceCbLengthW(8);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 6);
}

TEST_F(WdkSurface, RtlStringCbLengthWOfAStringLongerThanTheLimitIsInvalidAndZero) {
  SurfaceCbLengthW(6);  // no room for the terminator
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 0);
}

TEST_F(WdkSurface, RtlStringCchLengthACountsCharacters) {
  SurfaceCchLengthA(10, "hello");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 5);
}

TEST_F(WdkSurface, RtlStringCchLengthAOfNullIsInvalid) {
  SurfaceCchLengthA(10, nullptr);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 0);
}

TEST_F(WdkSurface, RtlUnicodeStringPrintfSetsTheLengthAndAddsNoTerminator) {
  SurfaceUnicodeStringPrintf(20, 12345);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 10);
  EXPECT_EQ(WideUnits(6), u"12345#");
}

TEST_F(WdkSurface, RtlUnicodeStringPrintfTruncatesToTheMaximumLength) {
  SurfaceUnicodeStringPrintf(6, 12345);
  EXPECT_STATUS_EQ(STATUS_BUFFER_OVERFLOW, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 6);
  EXPECT_EQ(WideUnits(4), u"123#");
}

TEST_F(WdkSurface, RtlUnicodeStringPrintfRefusesAnOddMaximumLength) {
  SurfaceUnicodeStringPrintfOddMaximum();
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.wide[0], u'#');
}

TEST_F(WdkSurfaceKernel, ACharacterConversionAboveApcLevelFailsTheRun) {
  EXPECT_EQ(ViolationOf([] { SurfaceCbPrintfAConvertingAtDispatchLevel(); }), "IRQL");
}

TEST_F(WdkSurfaceKernel, FormattingWithoutAConversionWorksAtDispatchLevel) {
  RunOnNode([] { SurfaceCbPrintfAPlainAtDispatchLevel(); });
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "42");
}

// ---- ip2string.h ----

// The address as IN_ADDR stores it: network order, as inet_addr gives it.
std::int64_t Stored(const char* dotted) { return static_cast<std::int64_t>(inet_addr(dotted)); }

TEST_F(WdkSurface, Ipv4StringToAddressStrictStoresFourDecimalPartsInNetworkOrder) {
  SurfaceIpv4StringToAddressA("192.0.2.1", 1);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("192.0.2.1"));
  EXPECT_EQ(g_surface.values[1], 9);
}

TEST_F(WdkSurface, Ipv4StringToAddressConvertsThePrefixAndPointsAtTheTerminator) {
  SurfaceIpv4StringToAddressA("192.0.2.1:80", 1);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("192.0.2.1"));
  EXPECT_EQ(g_surface.values[1], 9);
}

TEST_F(WdkSurface, Ipv4StringToAddressStrictRefusesFewerThanFourParts) {
  SurfaceIpv4StringToAddressA("10.1", 1);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressStrictRefusesHexadecimal) {
  SurfaceIpv4StringToAddressA("0x7f.0.0.1", 1);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressStrictRefusesALeadingZero) {
  SurfaceIpv4StringToAddressA("010.0.0.1", 1);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressRefusesAPartAbove255) {
  SurfaceIpv4StringToAddressA("192.0.2.256", 1);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressRefusesAnEmptyPart) {
  SurfaceIpv4StringToAddressA("192.0..1", 0);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressNonStrictTwoPartsFillsThreeBytesWithTheLast) {
  SurfaceIpv4StringToAddressA("10.1", 0);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("10.0.0.1"));
}

TEST_F(WdkSurface, Ipv4StringToAddressNonStrictThreePartsFillsTwoBytesWithTheLast) {
  SurfaceIpv4StringToAddressA("128.10.258", 0);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("128.10.1.2"));
}

TEST_F(WdkSurface, Ipv4StringToAddressNonStrictOnePartIsTheWholeAddress) {
  SurfaceIpv4StringToAddressA("3221225985", 0);  // 0xC0000201
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("192.0.2.1"));
}

TEST_F(WdkSurface, Ipv4StringToAddressNonStrictReadsHexadecimalAndOctal) {
  SurfaceIpv4StringToAddressA("0x7f.0.0.010", 0);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("127.0.0.8"));
}

TEST_F(WdkSurface, Ipv4StringToAddressNonStrictRefusesALastPartTooWideForTheBytesLeft) {
  SurfaceIpv4StringToAddressA("10.16777216", 0);  // 2^24 does not fit three bytes
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressWPointsAtTheTerminator) {
  SurfaceIpv4StringToAddressW();
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("192.0.2.1"));
  EXPECT_EQ(g_surface.values[1], 9);
}

TEST_F(WdkSurface, Ipv4StringToAddressExWStoresTheAddressAndPortInNetworkOrder) {
  SurfaceIpv4StringToAddressExW();
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("10.0.0.2"));
  EXPECT_EQ(g_surface.values[1], htons(54321));
}

TEST_F(WdkSurface, Ipv4StringToAddressExWithoutAPortGivesPortZero) {
  SurfaceIpv4StringToAddressExA("10.0.0.2", 1);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("10.0.0.2"));
  EXPECT_EQ(g_surface.values[1], 0);
}

TEST_F(WdkSurface, Ipv4StringToAddressExRefusesTextAfterTheAddress) {
  SurfaceIpv4StringToAddressExA("10.0.0.2/24", 1);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressExRefusesAPortAbove65535) {
  SurfaceIpv4StringToAddressExA("10.0.0.2:65536", 1);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressExRefusesAColonWithoutAPort) {
  SurfaceIpv4StringToAddressExA("10.0.0.2:", 1);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
}

TEST_F(WdkSurface, Ipv4StringToAddressExNonStrictTakesTheShortForms) {
  SurfaceIpv4StringToAddressExA("127.1:8080", 0);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[0], Stored("127.0.0.1"));
  EXPECT_EQ(g_surface.values[1], htons(8080));
}

TEST_F(WdkSurface, Ipv4AddressToStringAPrintsDottedDecimalAndReturnsTheEnd) {
  SurfaceIpv4AddressToStringA(inet_addr("192.0.2.1"));
  EXPECT_EQ(Text(), "192.0.2.1");
  EXPECT_EQ(g_surface.values[0], 9);
}

TEST_F(WdkSurface, Ipv4AddressToStringWPrintsDottedDecimal) {
  SurfaceIpv4AddressToStringW(inet_addr("10.0.0.255"));
  EXPECT_EQ(Wide(), u"10.0.0.255");
  EXPECT_EQ(g_surface.values[0], 10);
}

TEST_F(WdkSurface, Ipv4AddressToStringExAddsAPortOtherThanZero) {
  SurfaceIpv4AddressToStringExA(inet_addr("192.0.2.1"), htons(4791), 64);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "192.0.2.1:4791");
  EXPECT_EQ(g_surface.values[0], 15);  // with the NUL
}

TEST_F(WdkSurface, Ipv4AddressToStringExWithPortZeroPrintsTheAddressOnly) {
  SurfaceIpv4AddressToStringExA(inet_addr("192.0.2.1"), 0, 64);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "192.0.2.1");
  EXPECT_EQ(g_surface.values[0], 10);
}

TEST_F(WdkSurface, Ipv4AddressToStringExIntoAShortBufferIsInvalidAndGivesTheSizeNeeded) {
  SurfaceIpv4AddressToStringExA(inet_addr("192.0.2.1"), 0, 9);  // no room for the NUL
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 10);
  EXPECT_EQ(g_surface.text[0], '#');
}

TEST_F(WdkSurface, Ipv4AddressToStringExWPrintsTheAddressAndPort) {
  SurfaceIpv4AddressToStringExW(inet_addr("10.0.0.2"), htons(54321), 64);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Wide(), u"10.0.0.2:54321");
  EXPECT_EQ(g_surface.values[0], 15);
}

// The 16 bytes of an IPv6 address in text, as inet_pton stores them.
std::array<std::uint8_t, 16> V6(const char* text) {
  std::array<std::uint8_t, 16> bytes{};
  EXPECT_EQ(inet_pton(AF_INET6, text, bytes.data()), 1) << text;
  return bytes;
}

// The address a Surface*Ipv6StringToAddress* scenario stored.
std::array<std::uint8_t, 16> StoredV6() {
  std::array<std::uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), &g_surface.values[0], 16);
  return bytes;
}

TEST_F(WdkSurface, Ipv6StringToAddressConvertsACompressedAddressToItsEnd) {
  SurfaceIpv6StringToAddressA("2001:db8:85a3::8a2e:370:7334");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(StoredV6(), V6("2001:db8:85a3::8a2e:370:7334"));
  EXPECT_EQ(g_surface.values[2], 28);
}

TEST_F(WdkSurface, Ipv6StringToAddressTakesADottedTail) {
  SurfaceIpv6StringToAddressA("::ffff:129.144.52.38");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(StoredV6(), V6("::ffff:129.144.52.38"));
  EXPECT_EQ(g_surface.values[2], 20);
}

// A "::" stands for a group at least: after seven groups the address ends, and the terminator
// points at the colon before an eighth, as on Windows.
TEST_F(WdkSurface, Ipv6StringToAddressEndsBeforeAnEighthGroupAfterADoubleColon) {
  SurfaceIpv6StringToAddressA("1111:2222:3333:4444:5555:6666::7777:8888");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(StoredV6(), V6("1111:2222:3333:4444:5555:6666:0:7777"));
  EXPECT_EQ(g_surface.values[2], 35);
}

TEST_F(WdkSurface, Ipv6StringToAddressRefusesMalformedText) {
  for (const char* text : {"::01234" /* a group of five digits */, "1.2.3.4" /* IPv4 */, ":1::2"}) {
    SurfaceIpv6StringToAddressA(text);
    EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  }
}

TEST_F(WdkSurface, Ipv6StringToAddressWStopsAtTheScope) {
  SurfaceIpv6StringToAddressW();
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(StoredV6(), V6("fe80::1"));
  EXPECT_EQ(g_surface.values[2], 7);
}

TEST_F(WdkSurface, Ipv6StringToAddressExTakesABracketedAddressWithScopeAndPort) {
  SurfaceIpv6StringToAddressExA("[fe80::1%4]:80");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(StoredV6(), V6("fe80::1"));
  EXPECT_EQ(g_surface.values[2], 4);
  EXPECT_EQ(g_surface.values[3], htons(80));
}

TEST_F(WdkSurface, Ipv6StringToAddressExTakesAnAddressWithAScopeAndNoPort) {
  SurfaceIpv6StringToAddressExA("fe80::1%4");
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(g_surface.values[2], 4);
  EXPECT_EQ(g_surface.values[3], 0);
}

TEST_F(WdkSurface, Ipv6StringToAddressExRefusesWhatIsNotAWholeAddressAndPort) {
  for (const char* text : {"fe80::1]:80" /* a port without brackets */, "[::1]:65536", "[::1", "::1 ", "fe80::1%", "1::2::3"}) {
    SurfaceIpv6StringToAddressExA(text);
    EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  }
}

TEST_F(WdkSurface, Ipv6StringToAddressExWFillsASockaddrIn6) {
  SurfaceIpv6StringToAddressExW();
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(StoredV6(), V6("2001:db8::7"));
  EXPECT_EQ(g_surface.values[2], 3);
  EXPECT_EQ(g_surface.values[3], htons(4791));
}

// Windows's forms: the longest run of two or more zero groups (the first of equals) compressed,
// a single zero group kept, the last 32 bits dotted for the IPv4-compatible, IPv4-mapped, SIIT and
// ISATAP forms (when the seventh group is not 0, but always for ISATAP).
TEST_F(WdkSurface, Ipv6AddressToStringWritesWindowsForms) {
  for (const auto& [address, text] : std::initializer_list<std::pair<const char*, std::string>>{
           {"::", "::"},
           {"::1", "::1"},
           {"::ffff", "::ffff"},
           {"::13.1.68.3", "::13.1.68.3"},
           {"::ffff:13.1.68.3", "::ffff:13.1.68.3"},
           {"::ffff:0:4403", "::ffff:0:4403"},
           {"::ffff:0:13.1.68.3", "::ffff:0:13.1.68.3"},
           {"::5efe:0.0.0.0", "::5efe:0.0.0.0"},
           {"1111::5efe:129.144.52.38", "1111::5efe:129.144.52.38"},
           {"::300:5efe:8190:3426", "::300:5efe:8190:3426"},
           {"3ffe:b00:0:0:1:0:0:a", "3ffe:b00::1:0:0:a"},
           {"2001:0:1234:0:0:c1c0:abcd:876", "2001:0:1234::c1c0:abcd:876"},
           {"1111:2222:3333:4444:5555:6666:0:8888", "1111:2222:3333:4444:5555:6666:0:8888"},
           {"2001:DB8::1428:57AB", "2001:db8::1428:57ab"},
       }) {
    SurfaceIpv6AddressToStringA(V6(address).data());
    EXPECT_EQ(Text(), text) << address;
    EXPECT_EQ(g_surface.values[0], static_cast<std::int64_t>(text.size())) << address;
  }
}

TEST_F(WdkSurface, Ipv6AddressToStringWWritesWideText) {
  SurfaceIpv6AddressToStringW(V6("fe80::1").data());
  EXPECT_EQ(Wide(), u"fe80::1");
  EXPECT_EQ(g_surface.values[0], 7);
}

TEST_F(WdkSurface, Ipv6AddressToStringExBracketsAnAddressWithAScopeAndAPort) {
  SurfaceIpv6AddressToStringExA(V6("::13.1.68.3").data(), 0xFFFFBBBBu, htons(65518), 64);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "[::13.1.68.3%4294949819]:65518");
  EXPECT_EQ(g_surface.values[0], 31);
}

TEST_F(WdkSurface, Ipv6AddressToStringExAddsAScopeWithoutAPort) {
  SurfaceIpv6AddressToStringExA(V6("::1").data(), 1, 0, 64);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, g_surface.status);
  EXPECT_EQ(Text(), "::1%1");
}

TEST_F(WdkSurface, Ipv6AddressToStringExIntoAShortBufferIsInvalidAndGivesTheSizeNeeded) {
  SurfaceIpv6AddressToStringExA(V6("::1").data(), 0, 0, 3);  // no room for the NUL
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, g_surface.status);
  EXPECT_EQ(g_surface.values[0], 4);
  EXPECT_EQ(g_surface.text[0], '#');
}

// ---- netioapi.h ----

TEST_F(WdkSurface, NdisIfMaxStringSizeSizesAnAliasAsMibIfRow2Does) { EXPECT_EQ(SurfaceAliasBufferCharacters(), 257u); }

// ---- DbgPrint with Windows formats ----

// Regression: DbgPrint handed its format to the host's printf, which reads %ld as 64-bit and
// printed (LONG)-5 as 4294967291.
TEST_F(WdkSurfaceKernel, DbgPrintReadsPercentLdAsThirtyTwoBit) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintLong(); }), "-5");
}

TEST_F(WdkSurfaceKernel, DbgPrintReadsPercentLxAsThirtyTwoBit) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintUnsignedLongHex(); }), "fffffffe");
}

TEST_F(WdkSurfaceKernel, DbgPrintReadsPercentI64dAsSixtyFourBit) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintI64d(); }), "-5000000000");
}

TEST_F(WdkSurfaceKernel, DbgPrintReadsPercentI64xAsSixtyFourBit) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintI64x(); }), "123456789abcdef0");
}

TEST_F(WdkSurfaceKernel, DbgPrintReadsPercentLluAsSixtyFourBit) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintLlu(); }), "18446744073709551615");
}

TEST_F(WdkSurfaceKernel, DbgPrintPercentZPrintsAnAnsiStringsLengthOnly) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintAnsiString(); }), "[nic0]");
}

TEST_F(WdkSurfaceKernel, DbgPrintPercentWZPrintsAUnicodeString) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintUnicodeString(); }), "[\\Device\\Ndk]");
}

TEST_F(WdkSurfaceKernel, DbgPrintPercentWsPrintsAWideString) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintWideString(); }), "[eth0]");
}

TEST_F(WdkSurfaceKernel, DbgPrintPercentCapitalSPrintsAWideString) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintCapitalS(); }), "[eth1]");
}

TEST_F(WdkSurfaceKernel, DbgPrintPercentPPrintsSixteenHexDigits) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintPointer(); }), "000000000000ABCD");
}

TEST_F(WdkSurfaceKernel, DbgPrintExFormatsAsDbgPrint) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintExLong(); }), "-7");
}

TEST_F(WdkSurfaceKernel, KdPrintFormatsAsDbgPrint) { EXPECT_EQ(DebugTextOf([] { SurfaceKdPrintLong(); }), "-9"); }

TEST_F(WdkSurfaceKernel, DbgPrintTakesEveryConversionWithAnArgumentOfItsKind) {
  EXPECT_EQ(DebugTextOf([] { SurfaceDbgPrintCheckedFormats(); }), "1 2 3 3 0000000000000010 s w u a c 1.5   4 5%");
}

// Windows is LLP64: %lu reads 32 bits, so a ULONG_PTR printed with it loses its high half there.
// GCC's -Wformat, by LP64 rules, takes it; the run-time check names it.
TEST_F(WdkSurfaceKernel, DbgPrintOfAUlongPtrWithPercentLuIsAFormatError) {
  std::string report;
  try {
    RunOnNode([] { SurfaceDbgPrintUlongPtrWithLu(); });
  } catch (const VerifierError& e) {
    EXPECT_EQ(e.Check(), "FORMAT");
    report = e.what();
  }
  EXPECT_NE(report.find("argument 1 is a 64-bit integer, but the conversion at offset 0 reads a 32-bit integer"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("consumer_wdk_surface.c:"), std::string::npos) << report;
}

TEST_F(WdkSurfaceKernel, DbgPrintOfAUnicodeStringWithPercentWsIsAFormatError) {
  std::string report;
  try {
    RunOnNode([] { SurfaceDbgPrintUnicodeStringWithWs(); });
  } catch (const VerifierError& e) {
    report = e.what();
  }
  EXPECT_NE(report.find("argument 1 is a UNICODE_STRING pointer, but the conversion at offset 0 reads a WCHAR string"),
            std::string::npos)
      << report;
}

TEST_F(WdkSurfaceKernel, DbgPrintWithFewerArgumentsThanConversionsIsAFormatError) {
  std::string report;
  try {
    RunOnNode([] { SurfaceDbgPrintTooFewArguments(); });
  } catch (const VerifierError& e) {
    report = e.what();
  }
  EXPECT_NE(report.find("the conversion at offset 7 reads a 32-bit integer that the call does not pass"),
            std::string::npos)
      << report;
}

TEST_F(WdkSurfaceKernel, VDbgPrintExFormatsItsVaList) {
  EXPECT_EQ(DebugTextOf([] { SurfaceVDbgPrintExLong(); }), "-11|4000000000");
}

TEST_F(WdkSurfaceKernel, DbgPrintOfAWideStringAboveApcLevelFailsTheRun) {
  EXPECT_EQ(ViolationOf([] { SurfaceDbgPrintWideAtDispatchLevel(); }), "IRQL");
}

// ---- a work item on the driver object ----

// Regression: IoAllocateWorkItem read a driver object as a device object, took its DeviceObject
// field (NULL: the driver has no device) for the device's DriverObject, and charged the work item
// to no driver, so pool its routine leaked went unreported at unload.
TEST_F(WdkSurfaceKernel, AWorkItemOnTheDriverObjectIsChargedToTheDriver) {
  const std::string leak = LeakAtUnload(&SurfaceDriverObjectWorkItemDriverEntry);
  EXPECT_NE(leak.find("pool tag 'Work': 1 allocation(s), 32 bytes"), std::string::npos) << leak;
}

TEST_F(WdkSurfaceKernel, AWorkItemOnTheDriverObjectGetsTheDriverObject) {
  _DRIVER_OBJECT* driver = env_.LoadDriver(*node_, "surface", &SurfaceDriverObjectWorkItemDriverEntry);
  env_.Run();
  EXPECT_EQ(g_surface.pointer, static_cast<void*>(driver));
}

TEST_F(WdkSurfaceKernel, AWorkItemOnAnObjectThatIsNeitherADriverNorADeviceFailsTheRun) {
  std::string message;
  EXPECT_EQ(ViolationOf([] { SurfaceWorkItemOnAnotherObject(); }, &message), "WORK_ITEM");
  EXPECT_NE(message.find("Type 5"), std::string::npos) << message;
}

}  // namespace
}  // namespace ndksim::kernel
