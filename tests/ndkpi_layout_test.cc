// SPDX-License-Identifier: MIT
// Run-time checks of the ndkpi.h facts that matter most to binary compatibility: x64 layouts,
// the flag values resolved from contradictory docs, NTSTATUS numbers and the MDL helpers.
// The header pins the same layouts with static_assert; these tests make a regression visible
// by name in the test report.
#include "ndkpi.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

namespace {

TEST(NdkpiLayout, BaseTypesFollowWindowsLlp64Sizes) {
  EXPECT_EQ(sizeof(ULONG), 4u);
  EXPECT_EQ(sizeof(LONG), 4u);
  EXPECT_EQ(sizeof(NTSTATUS), 4u);
  EXPECT_EQ(sizeof(BOOLEAN), 1u);
  EXPECT_EQ(sizeof(SIZE_T), 8u);
  EXPECT_EQ(sizeof(ULONG_PTR), 8u);
  EXPECT_EQ(sizeof(PHYSICAL_ADDRESS), 8u);
}

TEST(NdkpiLayout, ObjectHeaderIs0x28AndEveryObjectIs0x30) {
  EXPECT_EQ(offsetof(NDK_OBJECT_HEADER, ObjectType), 0x04u);
  EXPECT_EQ(offsetof(NDK_OBJECT_HEADER, NdkReserved), 0x08u);
  EXPECT_EQ(sizeof(NDK_OBJECT_HEADER), 0x28u);
  EXPECT_EQ(offsetof(NDK_QP, Dispatch), 0x28u);
  EXPECT_EQ(sizeof(NDK_ADAPTER), 0x30u);
  EXPECT_EQ(sizeof(NDK_QP), 0x30u);
  EXPECT_EQ(sizeof(NDK_LISTENER), 0x30u);
}

TEST(NdkpiLayout, SgeUnionSharesOffsetZero) {
  NDK_SGE sge{};
  sge.VirtualAddress = reinterpret_cast<PVOID>(0x1234);
  EXPECT_EQ(sge.LogicalAddress.QuadPart, 0x1234);
  EXPECT_EQ(offsetof(NDK_SGE, Length), 0x08u);
  EXPECT_EQ(offsetof(NDK_SGE, MemoryRegionToken), 0x0Cu);
  EXPECT_EQ(sizeof(NDK_SGE), 0x10u);
}

TEST(NdkpiLayout, ResultExHasNdk21Layout) {
  EXPECT_EQ(sizeof(NDK_RESULT), 0x18u);
  EXPECT_EQ(offsetof(NDK_RESULT_EX, Type), 0x18u);
  EXPECT_EQ(offsetof(NDK_RESULT_EX, ProviderErrorCode), 0x1Cu);
  EXPECT_EQ(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput), 0x20u);
  EXPECT_EQ(sizeof(NDK_RESULT_EX), 0x28u);
}

TEST(NdkpiLayout, AdapterInfoIs0x68WithTechnologyLast) {
  EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize), 0x10u);
  EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, FRMRPageCount), 0x20u);
  EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, MaxCqDepth), 0x4Cu);
  EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, AdapterFlags), 0x5Cu);
  EXPECT_EQ(offsetof(NDK_ADAPTER_INFO, RdmaTechnology), 0x60u);
  EXPECT_EQ(sizeof(NDK_ADAPTER_INFO), 0x68u);
}

TEST(NdkpiLayout, LamPageArrayStartsAt0x10) {
  EXPECT_EQ(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray), 0x10u);
  EXPECT_EQ(sizeof(NDK_LOGICAL_ADDRESS_MAPPING), 0x18u);
}

TEST(NdkpiLayout, DispatchTableSizesMatchX64) {
  EXPECT_EQ(sizeof(NDK_ADAPTER_DISPATCH), 0x48u);
  EXPECT_EQ(sizeof(NDK_CQ_DISPATCH), 0x38u);
  EXPECT_EQ(sizeof(NDK_MR_DISPATCH), 0x38u);
  EXPECT_EQ(sizeof(NDK_MW_DISPATCH), 0x18u);
  EXPECT_EQ(sizeof(NDK_SRQ_DISPATCH), 0x20u);
  EXPECT_EQ(sizeof(NDK_QP_DISPATCH), 0x58u);
  EXPECT_EQ(sizeof(NDK_PD_DISPATCH), 0x40u);
  EXPECT_EQ(sizeof(NDK_SHARED_ENDPOINT_DISPATCH), 0x18u);
  EXPECT_EQ(sizeof(NDK_CONNECTOR_DISPATCH), 0x68u);
  EXPECT_EQ(sizeof(NDK_LISTENER_DISPATCH), 0x28u);
}

TEST(NdkpiLayout, Ndk21ConnectorEntriesAreAppended) {
  EXPECT_EQ(offsetof(NDK_CONNECTOR_DISPATCH, NdkDisconnect), 0x50u);
  EXPECT_EQ(offsetof(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx), 0x58u);
  EXPECT_EQ(offsetof(NDK_CONNECTOR_DISPATCH, NdkAcceptEx), 0x60u);
}

// Regression for ndk-reference §6 item 1: the NdkRead page gives both flags as 0x200.
TEST(NdkpiLayout, ReadLocalInvalidateAndDeferAreDistinct) {
  EXPECT_EQ(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, 0x100);
  EXPECT_EQ(NDK_OP_FLAG_DEFER, 0x200);
}

TEST(NdkpiLayout, AllowRemoteWriteIncludesLocalWriteBit) {
  EXPECT_EQ(NDK_OP_FLAG_ALLOW_REMOTE_WRITE, 0x30);
  EXPECT_EQ(NDK_OP_FLAG_ALLOW_REMOTE_WRITE & NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
            NDK_OP_FLAG_ALLOW_LOCAL_WRITE);
  EXPECT_EQ(NDK_MR_FLAG_ALLOW_REMOTE_WRITE & NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
            NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
}

TEST(NdkpiLayout, ReceiveAndInvalidateCarriesReceiveBit) {
  EXPECT_EQ(static_cast<int>(NdkOperationTypeReceiveAndInvalidate), 0x8001);
  EXPECT_NE(NdkOperationTypeReceiveAndInvalidate & NdkOperationTypeReceive, 0);
  EXPECT_EQ(NdkOperationTypeSend & NdkOperationTypeReceive, 0);
}

TEST(NdkpiLayout, ValuesMatchNtstatusH) {
  EXPECT_EQ(static_cast<uint32_t>(STATUS_PENDING), 0x00000103u);
  EXPECT_EQ(static_cast<uint32_t>(STATUS_BUFFER_OVERFLOW), 0x80000005u);
  EXPECT_EQ(static_cast<uint32_t>(STATUS_CANCELLED), 0xC0000120u);
  EXPECT_EQ(static_cast<uint32_t>(STATUS_CONNECTION_INVALID), 0xC000023Au);
  EXPECT_EQ(static_cast<uint32_t>(STATUS_IMPLEMENTATION_LIMIT), 0xC000042Bu);
  EXPECT_EQ(static_cast<uint32_t>(NDIS_STATUS_BAD_VERSION), 0xC0010004u);
  EXPECT_EQ(NDIS_STATUS_RESOURCES, STATUS_INSUFFICIENT_RESOURCES);
}

TEST(NdkpiLayout, NtSuccessRejectsWarningsAndErrors) {
  EXPECT_TRUE(NT_SUCCESS(STATUS_SUCCESS));
  EXPECT_TRUE(NT_SUCCESS(STATUS_PENDING));
  EXPECT_FALSE(NT_SUCCESS(STATUS_BUFFER_OVERFLOW));
  EXPECT_FALSE(NT_SUCCESS(STATUS_CANCELLED));
}

TEST(NdkpiLayout, InitializeSplitsUnalignedBufferIntoPageAndOffset) {
  alignas(4096) static unsigned char buffer[3 * 4096];
  unsigned char* base = buffer + 4096 + 100;  // 100 bytes into the second page
  MDL mdl;
  MmInitializeMdl(&mdl, base, 5000);

  EXPECT_EQ(mdl.Next, nullptr);
  EXPECT_EQ(mdl.StartVa, static_cast<PVOID>(buffer + 4096));
  EXPECT_EQ(MmGetMdlByteOffset(&mdl), 100u);
  EXPECT_EQ(MmGetMdlByteCount(&mdl), 5000u);
  EXPECT_EQ(MmGetMdlVirtualAddress(&mdl), static_cast<PVOID>(base));
  EXPECT_EQ(mdl.MappedSystemVa, static_cast<PVOID>(base));
}

TEST(NdkpiLayout, SpanPagesCountsPartialPages) {
  alignas(4096) static unsigned char buffer[3 * 4096];
  EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(buffer, 4096), 1u);
  EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(buffer + 100, 4096), 2u);
  EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(buffer + 4095, 2), 2u);
}

}  // namespace
