/* SPDX-License-Identifier: MIT */
/* ndkinfo.h - the NDK version and adapter-information records (NDK_VERSION, NDK_ADAPTER_INFO, the
 * NDK_ADAPTER_FLAG_* capability bits, NDK_RDMA_TECHNOLOGY), as the WDK's ndkinfo.h holds them.
 * ndkpi.h includes it; a consumer may include it on its own. x64 layouts, pinned by static_asserts. */
#ifndef NDKSIM_NDKINFO_H_
#define NDKSIM_NDKINFO_H_

#include <stddef.h> /* offsetof */
#include <stdint.h>
#ifndef __cplusplus
#include <assert.h> /* C11 static_assert */
#endif

#include "ndksim/wdk_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NDK versions ({Major, Minor}):
 *   1.0  what a consumer may ask for when opening; the provider answers with its highest 1.x
 *   1.1  Server 2012 / NDIS 6.30: base interface
 *   1.2  Server 2012 R2 / NDIS 6.40: NdkSendAndInvalidate, NdkGetCqResultsEx, NDK_RESULT_EX,
 *        NDK_OP_FLAG_DEFER, NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE and its adapter flag
 *   2.0  only named indirectly (RESULT_EX layout without ProviderErrorCode)
 *   2.1  Server 2022: NdkCompleteConnectEx, NdkAcceptEx, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
 *        NDK_RESULT_EX.ProviderErrorCode
 * There is no 1.3. Open fails with NDIS_STATUS_BAD_VERSION if the major is unknown or the
 * requested minor exceeds the provider's highest. */
typedef struct _NDK_VERSION {
    USHORT Major;
    USHORT Minor;
} NDK_VERSION;
static_assert(sizeof(NDK_VERSION) == 4, "NDK_VERSION x64 layout");

/* NDK_ADAPTER_INFO.AdapterFlags. */
#define NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED 0x00000001
#define NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED 0x00000002
#define NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED 0x00000004
#define NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED 0x00000008
#define NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED 0x00000010 /* NDK >= 1.2 */
#define NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED 0x00000100
#define NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED 0x00010000

/* NDK_ADAPTER_INFO.RdmaTechnology (newer ndkinfo.h only). */
typedef enum _NDK_RDMA_TECHNOLOGY {
    NdkUndefined = 0,
    NdkiWarp = 1,
    NdkInfiniBand = 2,
    NdkRoCE = 3,
    NdkRoCEv2 = 4,
    NdkMaxTechnology = 5
} NDK_RDMA_TECHNOLOGY;

/* Capability record returned by NdkQueryAdapterInfo. */
typedef struct _NDK_ADAPTER_INFO {
    NDK_VERSION Version;
    UINT32 VendorId;
    UINT32 DeviceId;
    SIZE_T MaxRegistrationSize;
    SIZE_T MaxWindowSize;
    ULONG FRMRPageCount; /* must be >= 16 */
    ULONG MaxInitiatorRequestSge;
    ULONG MaxReceiveRequestSge;
    ULONG MaxReadRequestSge;
    ULONG MaxTransferLength;
    ULONG MaxInlineDataSize;
    ULONG MaxInboundReadLimit;
    ULONG MaxOutboundReadLimit;
    ULONG MaxReceiveQueueDepth;
    ULONG MaxInitiatorQueueDepth;
    ULONG MaxSrqDepth; /* 0: no SRQ support */
    ULONG MaxCqDepth;
    ULONG LargeRequestThreshold;
    ULONG MaxCallerData;
    ULONG MaxCalleeData;
    ULONG AdapterFlags; /* NDK_ADAPTER_FLAG_* */
    NDK_RDMA_TECHNOLOGY RdmaTechnology;
} NDK_ADAPTER_INFO;
static_assert(offsetof(NDK_ADAPTER_INFO, Version) == 0x00, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, VendorId) == 0x04, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, DeviceId) == 0x08, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize) == 0x10,
              "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxWindowSize) == 0x18, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, FRMRPageCount) == 0x20, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxInitiatorRequestSge) == 0x24,
              "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxReceiveRequestSge) == 0x28,
              "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxReadRequestSge) == 0x2C, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxTransferLength) == 0x30, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxInlineDataSize) == 0x34, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxInboundReadLimit) == 0x38,
              "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxOutboundReadLimit) == 0x3C,
              "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxReceiveQueueDepth) == 0x40,
              "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxInitiatorQueueDepth) == 0x44,
              "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxSrqDepth) == 0x48, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxCqDepth) == 0x4C, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, LargeRequestThreshold) == 0x50,
              "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxCallerData) == 0x54, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, MaxCalleeData) == 0x58, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, AdapterFlags) == 0x5C, "NDK_ADAPTER_INFO x64 layout");
static_assert(offsetof(NDK_ADAPTER_INFO, RdmaTechnology) == 0x60, "NDK_ADAPTER_INFO x64 layout");
static_assert(sizeof(NDK_ADAPTER_INFO) == 0x68, "NDK_ADAPTER_INFO x64 layout");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDKSIM_NDKINFO_H_ */
