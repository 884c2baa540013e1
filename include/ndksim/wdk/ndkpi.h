/* SPDX-License-Identifier: MIT */
/* ndkpi.h - the NDKPI surface (NDK 1.1 .. 2.1) that ndksim providers implement and consumers call,
 * rebuilt for g++/clang on x86-64 Linux from Microsoft's public NDK reference pages, a copy of the
 * Windows ndkpi.h, the x64 type layouts in the Windows debug symbols, and mingw-w64's ntstatus.h.
 * Names, values and x64 layouts match Windows; every layout fact is pinned by a static_assert. */
#ifndef NDKSIM_NDKPI_H_
#define NDKSIM_NDKPI_H_

#include <stddef.h> /* offsetof */
#include <stdint.h>
#ifndef __cplusplus
#include <assert.h> /* C11 static_assert */
#endif

/* Every layout below is the x64 one. The 32-bit layouts differ: on x86, NDK_RESULT_EX is 0x18 bytes
 * before NDK 2.1, and the 2.1 ProviderErrorCode field moves TypeSpecificCompletionOutput, so the
 * x86 2.0 and 2.1 layouts are incompatible. */
static_assert(sizeof(void *) == 8, "ndksim supports the x64 NDK layout only");

#include "ndksim/wdk_types.h" /* the Windows base types, unless the consumer supplies them */
#include "ndksim/ntstatus.h"   /* the NTSTATUS values */

#ifdef __cplusplus
extern "C" {
#endif


/* ------------------------------------------------------------------------------------------------
 * NDIS_STATUS values; the NTSTATUS values are in ndksim/ntstatus.h (included above).
 * ---------------------------------------------------------------------------------------------- */
/* OPEN_NDK_ADAPTER_HANDLER results. */
#ifndef NDIS_STATUS_SUCCESS
#define NDIS_STATUS_SUCCESS ((NDIS_STATUS)STATUS_SUCCESS)
#endif
#ifndef NDIS_STATUS_BAD_VERSION
#define NDIS_STATUS_BAD_VERSION ((NDIS_STATUS)0xC0010004L)
#endif
#ifndef NDIS_STATUS_ADAPTER_NOT_READY
#define NDIS_STATUS_ADAPTER_NOT_READY ((NDIS_STATUS)0xC0010011L) /* NDK disabled on the adapter */
#endif
#ifndef NDIS_STATUS_RESOURCES
#define NDIS_STATUS_RESOURCES ((NDIS_STATUS)STATUS_INSUFFICIENT_RESOURCES)
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#include "ndkinfo.h" /* NDK_VERSION, NDK_ADAPTER_INFO and its flags */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------
 * Constants
 * ---------------------------------------------------------------------------------------------- */


/* The ObjectType of a live object's header is never NdkObjectTypeUndefined. */
typedef enum _NDK_OBJECT_TYPE {
    NdkObjectTypeUndefined = 0,
    NdkObjectTypeAdapter = 1,
    NdkObjectTypeQp = 2,
    NdkObjectTypeCq = 3,
    NdkObjectTypeMr = 4,
    NdkObjectTypeMw = 5,
    NdkObjectTypePd = 6,
    NdkObjectTypeSharedEndpoint = 7,
    NdkObjectTypeConnector = 8,
    NdkObjectTypeListener = 9,
    NdkObjectTypeSrq = 10,
    NdkObjectTypeMax = 11
} NDK_OBJECT_TYPE;
static_assert(sizeof(NDK_OBJECT_TYPE) == 4, "NDK_OBJECT_HEADER.ObjectType is 4 bytes");

/* NDK_RESULT_EX.Type. Values are bit-like, not sequential; ReceiveAndInvalidate keeps the
 * Receive bit so `Type & NdkOperationTypeReceive` matches both receive kinds. */
typedef enum _NDK_OPERATION_TYPE {
    NdkOperationTypeReceive = 0x0001,
    NdkOperationTypeReceiveAndInvalidate = 0x8001, /* receiver side of NdkSendAndInvalidate */
    NdkOperationTypeSend = 0x0002,
    NdkOperationTypeFastRegister = 0x0004,
    NdkOperationTypeBind = 0x0008,
    NdkOperationTypeInvalidate = 0x0010,
    NdkOperationTypeRead = 0x0020,
    NdkOperationTypeWrite = 0x0040
} NDK_OPERATION_TYPE;
static_assert(sizeof(NDK_OPERATION_TYPE) == 4, "NDK_RESULT_EX.Type is 4 bytes");

/* Work-request Flags. Not the user-mode ND_OP_FLAG_* numbers. */
#define NDK_OP_FLAG_SILENT_SUCCESS 0x00000001
#define NDK_OP_FLAG_READ_FENCE 0x00000002
#define NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT 0x00000004
#define NDK_OP_FLAG_ALLOW_REMOTE_READ 0x00000008
#define NDK_OP_FLAG_ALLOW_LOCAL_WRITE 0x00000010 /* fast-register only */
/* Includes the LOCAL_WRITE bit: test with (Flags & 0x30) == 0x30, not a plain AND. */
#define NDK_OP_FLAG_ALLOW_REMOTE_WRITE 0x00000030
#define NDK_OP_FLAG_INLINE 0x00000040
/* Fast-register only. The NdkFastRegister page requires it in its remarks but leaves it out of
 * its flag table. */
#define NDK_OP_FLAG_RDMA_READ_SINK 0x00000080
/* The NdkRead page shows 0x200 for both of the next two; the Windows header has 0x100 for
 * RDMA_READ_LOCAL_INVALIDATE, and every other page agrees DEFER is 0x200. */
#define NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE 0x00000100 /* NDK >= 1.2 */
#define NDK_OP_FLAG_DEFER 0x00000200                      /* NDK >= 1.2 */

/* NdkRegisterMr Flags. REMOTE_WRITE again carries the LOCAL_WRITE bit. */
#define NDK_MR_FLAG_ALLOW_LOCAL_READ 0x00000000 /* implicit, always granted */
#define NDK_MR_FLAG_ALLOW_LOCAL_WRITE 0x00000001
#define NDK_MR_FLAG_ALLOW_REMOTE_READ 0x00000002
#define NDK_MR_FLAG_ALLOW_REMOTE_WRITE 0x00000005
#define NDK_MR_FLAG_RDMA_READ_SINK 0x00000008

/* NdkArmCq Type. */
#define NDK_CQ_NOTIFY_ERRORS 0
#define NDK_CQ_NOTIFY_ANY 1
#define NDK_CQ_NOTIFY_SOLICITED 2


/* Registry keywords. Windows wraps them in NDIS_STRING_CONST; ndksim has no registry,
 * so they are plain strings. */
#define NETWORK_DIRECT_KEYWORD "*NetworkDirect"
#define NETWORK_DIRECT_GLOBAL_FLAGS_KEYWORD "*NetworkDirectGlobalFlags"
#define NETWORK_DIRECT_GLOBAL_FLAGS_ALLOW_REMOTE_IP_SUBNET 0x00000001
#define NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 1

/* ------------------------------------------------------------------------------------------------
 * Common records
 * ---------------------------------------------------------------------------------------------- */
typedef struct _NDK_ADAPTER NDK_ADAPTER;
typedef struct _NDK_CQ NDK_CQ;
typedef struct _NDK_MR NDK_MR;
typedef struct _NDK_MW NDK_MW;
typedef struct _NDK_SRQ NDK_SRQ;
typedef struct _NDK_QP NDK_QP;
typedef struct _NDK_PD NDK_PD;
typedef struct _NDK_SHARED_ENDPOINT NDK_SHARED_ENDPOINT;
typedef struct _NDK_CONNECTOR NDK_CONNECTOR;
typedef struct _NDK_LISTENER NDK_LISTENER;

/* Owned by the consumer/NDIS: the provider zeroes it at creation and never touches it again. */
typedef struct _NDK_OBJECT_HEADER_RESERVED_BLOCK {
    PVOID rf[4];
} NDK_OBJECT_HEADER_RESERVED_BLOCK;
static_assert(sizeof(NDK_OBJECT_HEADER_RESERVED_BLOCK) == 0x20,
              "NDK_OBJECT_HEADER_RESERVED_BLOCK x64 layout");

/* The provider sets Version to the negotiated version and ObjectType to a non-zero type. */
typedef struct _NDK_OBJECT_HEADER {
    NDK_VERSION Version;
    NDK_OBJECT_TYPE ObjectType;
    NDK_OBJECT_HEADER_RESERVED_BLOCK NdkReserved;
} NDK_OBJECT_HEADER;
static_assert(offsetof(NDK_OBJECT_HEADER, Version) == 0x00, "NDK_OBJECT_HEADER x64 layout");
static_assert(offsetof(NDK_OBJECT_HEADER, ObjectType) == 0x04, "NDK_OBJECT_HEADER x64 layout");
static_assert(offsetof(NDK_OBJECT_HEADER, NdkReserved) == 0x08, "NDK_OBJECT_HEADER x64 layout");
static_assert(sizeof(NDK_OBJECT_HEADER) == 0x28, "NDK_OBJECT_HEADER x64 layout");

/* Dispatch points to a table whose type only the extension's GUID identifies. */
typedef struct _NDK_EXTENSION_INTERFACE {
    const VOID *Dispatch;
} NDK_EXTENSION_INTERFACE;

typedef PHYSICAL_ADDRESS NDK_LOGICAL_ADDRESS;

/* The union holds a logical address when MemoryRegionToken is the PD's privileged token,
 * otherwise a virtual address inside the registered MR that owns the token. */
typedef struct _NDK_SGE {
    union {
        PVOID VirtualAddress;
        NDK_LOGICAL_ADDRESS LogicalAddress;
    };
    ULONG Length;
    UINT32 MemoryRegionToken;
} NDK_SGE;
static_assert(offsetof(NDK_SGE, Length) == 0x08, "NDK_SGE x64 layout");
static_assert(offsetof(NDK_SGE, MemoryRegionToken) == 0x0C, "NDK_SGE x64 layout");
static_assert(sizeof(NDK_SGE) == 0x10, "NDK_SGE x64 layout");

/* Variable length; a LAM of N pages needs
 * offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + N * sizeof(NDK_LOGICAL_ADDRESS). */
typedef struct _NDK_LOGICAL_ADDRESS_MAPPING {
    PVOID AdapterContext; /* provider-private */
    ULONG AdapterPageCount;
    NDK_LOGICAL_ADDRESS AdapterPageArray[1]; /* really AdapterPageCount entries */
} NDK_LOGICAL_ADDRESS_MAPPING;
static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount) == 0x08,
              "NDK_LOGICAL_ADDRESS_MAPPING x64 layout");
static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) == 0x10,
              "NDK_LOGICAL_ADDRESS_MAPPING x64 layout");
static_assert(sizeof(NDK_LOGICAL_ADDRESS_MAPPING) == 0x18,
              "NDK_LOGICAL_ADDRESS_MAPPING x64 layout");

/* Completion record returned by NdkGetCqResults. */
typedef struct _NDK_RESULT {
    NTSTATUS Status;
    ULONG BytesTransferred; /* defined for receive completions only */
    PVOID QPContext;
    PVOID RequestContext;
} NDK_RESULT;
static_assert(offsetof(NDK_RESULT, BytesTransferred) == 0x04, "NDK_RESULT x64 layout");
static_assert(offsetof(NDK_RESULT, QPContext) == 0x08, "NDK_RESULT x64 layout");
static_assert(offsetof(NDK_RESULT, RequestContext) == 0x10, "NDK_RESULT x64 layout");
static_assert(sizeof(NDK_RESULT) == 0x18, "NDK_RESULT x64 layout");

/* NDK 2.1 layout: ProviderErrorCode fills what was padding on x64, so the size and the
 * other offsets are the same as 1.2/2.0 (not so on x86, where it moves the last field). */
typedef struct _NDK_RESULT_EX {
    NTSTATUS Status;
    ULONG BytesTransferred;
    PVOID QPContext;
    PVOID RequestContext;
    NDK_OPERATION_TYPE Type;
    ULONG ProviderErrorCode; /* 0 on success; on failure 0 means "none given" */
    /* For ReceiveAndInvalidate: the invalidated token in the low 32 bits. */
    ULONG_PTR TypeSpecificCompletionOutput;
} NDK_RESULT_EX;
static_assert(offsetof(NDK_RESULT_EX, Status) == 0x00, "NDK_RESULT_EX x64 layout");
static_assert(offsetof(NDK_RESULT_EX, BytesTransferred) == 0x04, "NDK_RESULT_EX x64 layout");
static_assert(offsetof(NDK_RESULT_EX, QPContext) == 0x08, "NDK_RESULT_EX x64 layout");
static_assert(offsetof(NDK_RESULT_EX, RequestContext) == 0x10, "NDK_RESULT_EX x64 layout");
static_assert(offsetof(NDK_RESULT_EX, Type) == 0x18, "NDK_RESULT_EX x64 layout");
static_assert(offsetof(NDK_RESULT_EX, ProviderErrorCode) == 0x1C, "NDK_RESULT_EX x64 layout");
static_assert(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput) == 0x20,
              "NDK_RESULT_EX x64 layout");
static_assert(sizeof(NDK_RESULT_EX) == 0x28, "NDK_RESULT_EX x64 layout");


/* ------------------------------------------------------------------------------------------------
 * Consumer callbacks. All run at <= DISPATCH_LEVEL, so in ndksim they must not block.
 * ---------------------------------------------------------------------------------------------- */
typedef VOID (*NDK_FN_CLOSE_COMPLETION)(PVOID Context);
typedef VOID (*NDK_FN_REQUEST_COMPLETION)(PVOID Context, NTSTATUS Status);
typedef VOID (*NDK_FN_CREATE_COMPLETION)(PVOID Context, NTSTATUS Status,
                                         NDK_OBJECT_HEADER *pNdkObject);
typedef VOID (*NDK_FN_CQ_NOTIFICATION_CALLBACK)(PVOID CqNotificationContext, NTSTATUS CqStatus);
typedef VOID (*NDK_FN_SRQ_NOTIFICATION_CALLBACK)(PVOID SrqNotificationContext, NTSTATUS SrqStatus);
typedef VOID (*NDK_FN_CONNECT_EVENT_CALLBACK)(PVOID ConnectEventContext,
                                              NDK_CONNECTOR *pNdkConnector);
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK)(PVOID DisconnectEventContext);
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK_EX)(PVOID DisconnectEventContext,
                                                    ULONG ProviderDisconnectReason); /* 2.1 */

/* ------------------------------------------------------------------------------------------------
 * Provider functions and dispatch tables. Member order is the binary layout.
 * `const PSOCKADDR` / `const PVOID` parameters are const pointers to mutable data, as in Windows.
 * ---------------------------------------------------------------------------------------------- */

/* Slots 0 and 1 of every table except the adapter's (which has no close slot;
 * NDIS closes the adapter through CLOSE_NDK_ADAPTER_HANDLER). */
typedef NTSTATUS (*NDK_FN_CLOSE_OBJECT)(NDK_OBJECT_HEADER *pNdkObject,
                                        NDK_FN_CLOSE_COMPLETION CloseCompletion,
                                        PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_QUERY_EXTENSION_INTERFACE)(NDK_OBJECT_HEADER *pNdkObject,
                                                     GUID *ExtensionInterfaceID,
                                                     NDK_VERSION ExtensionInterfaceVersion,
                                                     NDK_EXTENSION_INTERFACE *pExtensionInterface);

/* --- CQ ---------------------------------------------------------------------------------------- */
typedef NTSTATUS (*NDK_FN_RESIZE_CQ)(NDK_CQ *pNdkCq, ULONG CqDepth,
                                     NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                     PVOID RequestContext);
typedef VOID (*NDK_FN_ARM_CQ)(NDK_CQ *pNdkCq, ULONG Type /* NDK_CQ_NOTIFY_* */);
typedef ULONG (*NDK_FN_GET_CQ_RESULTS)(NDK_CQ *pNdkCq, NDK_RESULT Results[], ULONG nResults);
typedef NTSTATUS (*NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION)(NDK_CQ *pNdkCq,
                                                           ULONG ModerationInterval,
                                                           ULONG ModerationCount);
typedef ULONG (*NDK_FN_GET_CQ_RESULTS_EX)(NDK_CQ *pNdkCq, NDK_RESULT_EX Results[],
                                          ULONG nResults); /* 1.2 */

typedef struct _NDK_CQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseCq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_RESIZE_CQ NdkResizeCq;
    NDK_FN_ARM_CQ NdkArmCq;
    NDK_FN_GET_CQ_RESULTS NdkGetCqResults;
    NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION NdkControlCqInterruptModeration;
    NDK_FN_GET_CQ_RESULTS_EX NdkGetCqResultsEx;
} NDK_CQ_DISPATCH;
static_assert(offsetof(NDK_CQ_DISPATCH, NdkGetCqResultsEx) == 0x30, "NDK_CQ_DISPATCH x64 layout");
static_assert(sizeof(NDK_CQ_DISPATCH) == 0x38, "NDK_CQ_DISPATCH x64 layout");

/* --- MR ---------------------------------------------------------------------------------------- */
typedef NTSTATUS (*NDK_FN_REGISTER_MR)(NDK_MR *pNdkMr, MDL *Mdl /* virtually contiguous */,
                                       SIZE_T Length, ULONG Flags /* NDK_MR_FLAG_* */,
                                       NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                       PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_DEREGISTER_MR)(NDK_MR *pNdkMr,
                                         NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                         PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_INITIALIZE_FAST_REGISTER_MR)(NDK_MR *pNdkMr, ULONG AdapterPageCount,
                                                       BOOLEAN RemoteAccess,
                                                       NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                                       PVOID RequestContext);
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MR)(NDK_MR *pNdkMr);
typedef UINT32 (*NDK_FN_GET_LOCAL_TOKEN_FROM_MR)(NDK_MR *pNdkMr);

typedef struct _NDK_MR_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseMr;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_REGISTER_MR NdkRegisterMr;
    NDK_FN_DEREGISTER_MR NdkDeregisterMr;
    NDK_FN_INITIALIZE_FAST_REGISTER_MR NdkInitializeFastRegisterMr;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MR NdkGetRemoteTokenFromMr;
    NDK_FN_GET_LOCAL_TOKEN_FROM_MR NdkGetLocalTokenFromMr;
} NDK_MR_DISPATCH;
static_assert(offsetof(NDK_MR_DISPATCH, NdkGetLocalTokenFromMr) == 0x30,
              "NDK_MR_DISPATCH x64 layout");
static_assert(sizeof(NDK_MR_DISPATCH) == 0x38, "NDK_MR_DISPATCH x64 layout");

/* --- MW ---------------------------------------------------------------------------------------- */
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MW)(NDK_MW *pNdkMw);

typedef struct _NDK_MW_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseMw;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MW NdkGetRemoteTokenFromMw;
} NDK_MW_DISPATCH;
static_assert(sizeof(NDK_MW_DISPATCH) == 0x18, "NDK_MW_DISPATCH x64 layout");

/* --- SRQ --------------------------------------------------------------------------------------- */
typedef NTSTATUS (*NDK_FN_MODIFY_SRQ)(NDK_SRQ *pNdkSrq, ULONG SrqDepth, ULONG NotifyThreshold,
                                      NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                      PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_SRQ_RECEIVE)(NDK_SRQ *pNdkSrq, PVOID RequestContext,
                                       const NDK_SGE *pSgl, ULONG nSge);
/* Alias for the name used in ndksim's planning notes; Windows spells it NDK_FN_SRQ_RECEIVE. */
typedef NDK_FN_SRQ_RECEIVE NDK_FN_SRQ_POST_RECEIVE;

typedef struct _NDK_SRQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseSrq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_MODIFY_SRQ NdkModifySrq;
    NDK_FN_SRQ_RECEIVE NdkSrqReceive;
} NDK_SRQ_DISPATCH;
static_assert(sizeof(NDK_SRQ_DISPATCH) == 0x20, "NDK_SRQ_DISPATCH x64 layout");

/* --- QP ---------------------------------------------------------------------------------------- */
/* Posting calls never pend: SUCCESS means one CQ entry will follow (unless SILENT_SUCCESS and
 * the request succeeds), an error means none ever will. */
typedef VOID (*NDK_FN_FLUSH)(NDK_QP *pNdkQp);
typedef NTSTATUS (*NDK_FN_SEND)(NDK_QP *pNdkQp, PVOID RequestContext, const NDK_SGE *pSgl,
                                ULONG nSge, ULONG Flags);
typedef NTSTATUS (*NDK_FN_RECEIVE)(NDK_QP *pNdkQp, PVOID RequestContext, const NDK_SGE *pSgl,
                                   ULONG nSge);
typedef NTSTATUS (*NDK_FN_BIND)(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr, NDK_MW *pMw,
                                PVOID VirtualAddress, SIZE_T Length, ULONG Flags);
typedef NTSTATUS (*NDK_FN_FAST_REGISTER)(NDK_QP *pNdkQp, PVOID RequestContext, NDK_MR *pMr,
                                         ULONG AdapterPageCount,
                                         const NDK_LOGICAL_ADDRESS *AdapterPageArray, ULONG FBO,
                                         SIZE_T Length, PVOID BaseVirtualAddress, ULONG Flags);
typedef NTSTATUS (*NDK_FN_INVALIDATE)(NDK_QP *pNdkQp, PVOID RequestContext,
                                      NDK_OBJECT_HEADER *pNdkMrOrMw, ULONG Flags);
typedef NTSTATUS (*NDK_FN_READ)(NDK_QP *pNdkQp, PVOID RequestContext, const NDK_SGE *pSgl,
                                ULONG nSge, UINT64 RemoteAddress, UINT32 RemoteToken,
                                ULONG Flags);
typedef NTSTATUS (*NDK_FN_WRITE)(NDK_QP *pNdkQp, PVOID RequestContext, const NDK_SGE *pSgl,
                                 ULONG nSge, UINT64 RemoteAddress, UINT32 RemoteToken,
                                 ULONG Flags);
/* 1.2. Unlike Read/Write, Flags comes before the token. */
typedef NTSTATUS (*NDK_FN_SEND_AND_INVALIDATE)(NDK_QP *pNdkQp, PVOID RequestContext,
                                               const NDK_SGE *pSgl, ULONG nSge, ULONG Flags,
                                               UINT32 RemoteToken);

typedef struct _NDK_QP_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseQp;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_FLUSH NdkFlush;
    NDK_FN_SEND NdkSend;
    NDK_FN_RECEIVE NdkReceive;
    NDK_FN_BIND NdkBind;
    NDK_FN_FAST_REGISTER NdkFastRegister;
    NDK_FN_INVALIDATE NdkInvalidate;
    NDK_FN_READ NdkRead;
    NDK_FN_WRITE NdkWrite;
    NDK_FN_SEND_AND_INVALIDATE NdkSendAndInvalidate;
} NDK_QP_DISPATCH;
static_assert(offsetof(NDK_QP_DISPATCH, NdkFlush) == 0x10, "NDK_QP_DISPATCH x64 layout");
static_assert(offsetof(NDK_QP_DISPATCH, NdkSend) == 0x18, "NDK_QP_DISPATCH x64 layout");
static_assert(offsetof(NDK_QP_DISPATCH, NdkReceive) == 0x20, "NDK_QP_DISPATCH x64 layout");
static_assert(offsetof(NDK_QP_DISPATCH, NdkBind) == 0x28, "NDK_QP_DISPATCH x64 layout");
static_assert(offsetof(NDK_QP_DISPATCH, NdkFastRegister) == 0x30, "NDK_QP_DISPATCH x64 layout");
static_assert(offsetof(NDK_QP_DISPATCH, NdkInvalidate) == 0x38, "NDK_QP_DISPATCH x64 layout");
static_assert(offsetof(NDK_QP_DISPATCH, NdkRead) == 0x40, "NDK_QP_DISPATCH x64 layout");
static_assert(offsetof(NDK_QP_DISPATCH, NdkWrite) == 0x48, "NDK_QP_DISPATCH x64 layout");
static_assert(offsetof(NDK_QP_DISPATCH, NdkSendAndInvalidate) == 0x50,
              "NDK_QP_DISPATCH x64 layout");
static_assert(sizeof(NDK_QP_DISPATCH) == 0x58, "NDK_QP_DISPATCH x64 layout");

/* --- PD ---------------------------------------------------------------------------------------- */
/* Create calls: a PENDING return delivers the object only through CreateCompletion and leaves
 * the pp out-parameter unwritten. */
typedef NTSTATUS (*NDK_FN_CREATE_MR)(NDK_PD *pNdkPd, BOOLEAN FastRegister,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_MR **ppNdkMr);
typedef NTSTATUS (*NDK_FN_CREATE_MW)(NDK_PD *pNdkPd, NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_MW **ppNdkMw);
typedef NTSTATUS (*NDK_FN_CREATE_SRQ)(NDK_PD *pNdkPd, ULONG SrqDepth, ULONG MaxReceiveRequestSge,
                                      ULONG NotifyThreshold,
                                      NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
                                      PVOID SrqNotificationContext, GROUP_AFFINITY *Affinity,
                                      NDK_FN_CREATE_COMPLETION CreateCompletion,
                                      PVOID RequestContext, NDK_SRQ **ppNdkSrq);
typedef NTSTATUS (*NDK_FN_CREATE_QP)(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq, NDK_CQ *pInitiatorCq,
                                     PVOID QPContext, ULONG ReceiveQueueDepth,
                                     ULONG InitiatorQueueDepth, ULONG MaxReceiveRequestSge,
                                     ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_QP **ppNdkQp);
typedef NTSTATUS (*NDK_FN_CREATE_QP_WITH_SRQ)(NDK_PD *pNdkPd, NDK_CQ *pReceiveCq,
                                              NDK_CQ *pInitiatorCq, NDK_SRQ *pSrq,
                                              PVOID QPContext, ULONG InitiatorQueueDepth,
                                              ULONG MaxInitiatorRequestSge, ULONG InlineDataSize,
                                              NDK_FN_CREATE_COMPLETION CreateCompletion,
                                              PVOID RequestContext, NDK_QP **ppNdkQp);
typedef VOID (*NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN)(NDK_PD *pNdkPd, UINT32 *pToken);

typedef struct _NDK_PD_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkClosePd;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_CREATE_MR NdkCreateMr;
    NDK_FN_CREATE_MW NdkCreateMw;
    NDK_FN_CREATE_SRQ NdkCreateSrq;
    NDK_FN_CREATE_QP NdkCreateQp;
    NDK_FN_CREATE_QP_WITH_SRQ NdkCreateQpWithSrq;
    NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN NdkGetPrivilegedMemoryRegionToken;
} NDK_PD_DISPATCH;
static_assert(offsetof(NDK_PD_DISPATCH, NdkGetPrivilegedMemoryRegionToken) == 0x38,
              "NDK_PD_DISPATCH x64 layout");
static_assert(sizeof(NDK_PD_DISPATCH) == 0x40, "NDK_PD_DISPATCH x64 layout");

/* --- Shared endpoint --------------------------------------------------------------------------- */
/* The three GetLocalAddress slots (shared endpoint, connector, listener) have distinct typedefs
 * because their first parameter differs; names as in the Windows header. */
typedef NTSTATUS (*NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS)(
    NDK_SHARED_ENDPOINT *pNdkSharedEndpoint, PSOCKADDR pAddress, ULONG *pAddressLength);

typedef struct _NDK_SHARED_ENDPOINT_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseSharedEndpoint;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS NdkGetLocalAddress;
} NDK_SHARED_ENDPOINT_DISPATCH;
static_assert(sizeof(NDK_SHARED_ENDPOINT_DISPATCH) == 0x18,
              "NDK_SHARED_ENDPOINT_DISPATCH x64 layout");

/* --- Connector --------------------------------------------------------------------------------- */
typedef NTSTATUS (*NDK_FN_CONNECT)(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
                                   const PSOCKADDR pSrcAddress, ULONG SrcAddressLength,
                                   const PSOCKADDR pDestAddress, ULONG DestAddressLength,
                                   ULONG InboundReadLimit, ULONG OutboundReadLimit,
                                   const PVOID pPrivateData, ULONG PrivateDataLength,
                                   NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                   PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_CONNECT_WITH_SHARED_ENDPOINT)(
    NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp, NDK_SHARED_ENDPOINT *pNdkSharedEndpoint,
    const PSOCKADDR pDestAddress, ULONG DestAddressLength, ULONG InboundReadLimit,
    ULONG OutboundReadLimit, const PVOID pPrivateData, ULONG PrivateDataLength,
    NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT)(NDK_CONNECTOR *pNdkConnector,
                                            NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
                                            PVOID DisconnectEventContext,
                                            NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                            PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_ACCEPT)(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
                                  ULONG InboundReadLimit, ULONG OutboundReadLimit,
                                  const PVOID pPrivateData, ULONG PrivateDataLength,
                                  NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
                                  PVOID DisconnectEventContext,
                                  NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                  PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_REJECT)(NDK_CONNECTOR *pNdkConnector, const PVOID pPrivateData,
                                  ULONG PrivateDataLength); /* synchronous */
typedef NTSTATUS (*NDK_FN_GET_CONNECTION_DATA)(NDK_CONNECTOR *pNdkConnector,
                                               ULONG *pInboundReadLimit, ULONG *pOutboundReadLimit,
                                               PVOID pPrivateData, ULONG *pPrivateDataLength);
typedef NTSTATUS (*NDK_FN_GET_LOCAL_ADDRESS)(NDK_CONNECTOR *pNdkConnector, PSOCKADDR pAddress,
                                             ULONG *pAddressLength);
typedef NTSTATUS (*NDK_FN_GET_PEER_ADDRESS)(NDK_CONNECTOR *pNdkConnector, PSOCKADDR pAddress,
                                            ULONG *pAddressLength);
typedef NTSTATUS (*NDK_FN_DISCONNECT)(NDK_CONNECTOR *pNdkConnector,
                                      NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                      PVOID RequestContext);
/* 2.1: as CompleteConnect/Accept, with the disconnect callback that receives a reason code. */
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT_EX)(NDK_CONNECTOR *pNdkConnector,
                                               NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
                                               PVOID DisconnectEventContext,
                                               NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                               PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_ACCEPT_EX)(NDK_CONNECTOR *pNdkConnector, NDK_QP *pNdkQp,
                                     ULONG InboundReadLimit, ULONG OutboundReadLimit,
                                     const PVOID pPrivateData, ULONG PrivateDataLength,
                                     NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
                                     PVOID DisconnectEventContext,
                                     NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                     PVOID RequestContext);

/* 1.x providers fill the first 0x58 bytes; the two 2.1 slots are appended. */
typedef struct _NDK_CONNECTOR_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseConnector;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_CONNECT NdkConnect;
    NDK_FN_CONNECT_WITH_SHARED_ENDPOINT NdkConnectWithSharedEndpoint;
    NDK_FN_COMPLETE_CONNECT NdkCompleteConnect;
    NDK_FN_ACCEPT NdkAccept;
    NDK_FN_REJECT NdkReject;
    NDK_FN_GET_CONNECTION_DATA NdkGetConnectionData;
    NDK_FN_GET_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_GET_PEER_ADDRESS NdkGetPeerAddress;
    NDK_FN_DISCONNECT NdkDisconnect;
    NDK_FN_COMPLETE_CONNECT_EX NdkCompleteConnectEx; /* 2.1 */
    NDK_FN_ACCEPT_EX NdkAcceptEx;                    /* 2.1 */
} NDK_CONNECTOR_DISPATCH;
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkConnect) == 0x10,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkConnectWithSharedEndpoint) == 0x18,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkCompleteConnect) == 0x20,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkAccept) == 0x28,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkReject) == 0x30,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkGetConnectionData) == 0x38,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkGetLocalAddress) == 0x40,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkGetPeerAddress) == 0x48,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkDisconnect) == 0x50,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx) == 0x58,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(offsetof(NDK_CONNECTOR_DISPATCH, NdkAcceptEx) == 0x60,
              "NDK_CONNECTOR_DISPATCH x64 layout");
static_assert(sizeof(NDK_CONNECTOR_DISPATCH) == 0x68, "NDK_CONNECTOR_DISPATCH x64 layout");

/* --- Listener ---------------------------------------------------------------------------------- */
typedef NTSTATUS (*NDK_FN_LISTEN)(NDK_LISTENER *pNdkListener, const PSOCKADDR pAddress,
                                  ULONG AddressLength, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                  PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_GET_LISTENER_LOCAL_ADDRESS)(NDK_LISTENER *pNdkListener,
                                                      PSOCKADDR pAddress, ULONG *pAddressLength);
typedef VOID (*NDK_FN_CONTROL_CONNECT_EVENTS)(NDK_LISTENER *pNdkListener, BOOLEAN Pause);

typedef struct _NDK_LISTENER_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseListener;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_LISTEN NdkListen;
    NDK_FN_GET_LISTENER_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_CONTROL_CONNECT_EVENTS NdkControlConnectEvents;
} NDK_LISTENER_DISPATCH;
static_assert(sizeof(NDK_LISTENER_DISPATCH) == 0x28, "NDK_LISTENER_DISPATCH x64 layout");

/* --- Adapter ----------------------------------------------------------------------------------- */
/* PASSIVE_LEVEL and blocking, unlike every other provider function. */
typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO)(NDK_ADAPTER *pNdkAdapter, NDK_ADAPTER_INFO *pInfo,
                                              ULONG *pBufferSize);
typedef NTSTATUS (*NDK_FN_CREATE_CQ)(NDK_ADAPTER *pNdkAdapter, ULONG CqDepth,
                                     NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
                                     PVOID CqNotificationContext, GROUP_AFFINITY *Affinity,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_CQ **ppNdkCq);
typedef NTSTATUS (*NDK_FN_CREATE_PD)(NDK_ADAPTER *pNdkAdapter,
                                     NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     PVOID RequestContext, NDK_PD **ppNdkPd);
typedef NTSTATUS (*NDK_FN_CREATE_SHARED_ENDPOINT)(NDK_ADAPTER *pNdkAdapter,
                                                  const PSOCKADDR pAddress, ULONG AddressLength,
                                                  NDK_FN_CREATE_COMPLETION CreateCompletion,
                                                  PVOID RequestContext,
                                                  NDK_SHARED_ENDPOINT **ppNdkSharedEndpoint);
typedef NTSTATUS (*NDK_FN_CREATE_CONNECTOR)(NDK_ADAPTER *pNdkAdapter,
                                            NDK_FN_CREATE_COMPLETION CreateCompletion,
                                            PVOID RequestContext, NDK_CONNECTOR **ppNdkConnector);
typedef NTSTATUS (*NDK_FN_CREATE_LISTENER)(NDK_ADAPTER *pNdkAdapter,
                                           NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
                                           PVOID ConnectEventContext,
                                           NDK_FN_CREATE_COMPLETION CreateCompletion,
                                           PVOID RequestContext, NDK_LISTENER **ppNdkListener);
/* RequestCompletion is optional in the Windows header, required on the NdkBuildLam page. */
typedef NTSTATUS (*NDK_FN_BUILD_LAM)(NDK_ADAPTER *pNdkAdapter, MDL *Mdl /* virtually contiguous */,
                                     SIZE_T Length, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                     PVOID RequestContext, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM,
                                     ULONG *pLAMSize, ULONG *pFBO);
typedef VOID (*NDK_FN_RELEASE_LAM)(NDK_ADAPTER *pNdkAdapter, NDK_LOGICAL_ADDRESS_MAPPING *pNdkLAM);

/* No close slot: NDIS closes the adapter through CLOSE_NDK_ADAPTER_HANDLER. */
typedef struct _NDK_ADAPTER_DISPATCH {
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_QUERY_ADAPTER_INFO NdkQueryAdapterInfo;
    NDK_FN_CREATE_CQ NdkCreateCq;
    NDK_FN_CREATE_PD NdkCreatePd;
    NDK_FN_CREATE_SHARED_ENDPOINT NdkCreateSharedEndpoint;
    NDK_FN_CREATE_CONNECTOR NdkCreateConnector;
    NDK_FN_CREATE_LISTENER NdkCreateListener;
    NDK_FN_BUILD_LAM NdkBuildLAM;
    NDK_FN_RELEASE_LAM NdkReleaseLAM;
} NDK_ADAPTER_DISPATCH;
static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkQueryAdapterInfo) == 0x08,
              "NDK_ADAPTER_DISPATCH x64 layout");
static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreateCq) == 0x10,
              "NDK_ADAPTER_DISPATCH x64 layout");
static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreatePd) == 0x18,
              "NDK_ADAPTER_DISPATCH x64 layout");
static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreateSharedEndpoint) == 0x20,
              "NDK_ADAPTER_DISPATCH x64 layout");
static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreateConnector) == 0x28,
              "NDK_ADAPTER_DISPATCH x64 layout");
static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkCreateListener) == 0x30,
              "NDK_ADAPTER_DISPATCH x64 layout");
static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkBuildLAM) == 0x38,
              "NDK_ADAPTER_DISPATCH x64 layout");
static_assert(offsetof(NDK_ADAPTER_DISPATCH, NdkReleaseLAM) == 0x40,
              "NDK_ADAPTER_DISPATCH x64 layout");
static_assert(sizeof(NDK_ADAPTER_DISPATCH) == 0x48, "NDK_ADAPTER_DISPATCH x64 layout");

/* --- Unofficial ------------------------------------------------------------------------------- */
/* Declared in the Windows header but referenced by no dispatch table and no document.
 * Kept for completeness; ndksim neither implements nor calls them. */
typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO_EX)(NDK_ADAPTER *pNdkAdapter, NDK_VERSION Version,
                                                 NDK_ADAPTER_INFO *pInfo, ULONG *pBufferSize);
typedef NTSTATUS (*NDK_FN_DISCONNECT_EX)(NDK_CONNECTOR *pNdkConnector, BOOLEAN Abortive,
                                         NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                         PVOID RequestContext);

/* ------------------------------------------------------------------------------------------------
 * The objects. Each is a header plus its dispatch table; the provider sets Dispatch before
 * handing the object out and never reads it again (the consumer may interpose its own table).
 * ---------------------------------------------------------------------------------------------- */
typedef struct _NDK_ADAPTER {
    NDK_OBJECT_HEADER Header;
    const NDK_ADAPTER_DISPATCH *Dispatch;
} NDK_ADAPTER;
typedef struct _NDK_CQ {
    NDK_OBJECT_HEADER Header;
    const NDK_CQ_DISPATCH *Dispatch;
} NDK_CQ;
typedef struct _NDK_MR {
    NDK_OBJECT_HEADER Header;
    const NDK_MR_DISPATCH *Dispatch;
} NDK_MR;
typedef struct _NDK_MW {
    NDK_OBJECT_HEADER Header;
    const NDK_MW_DISPATCH *Dispatch;
} NDK_MW;
typedef struct _NDK_SRQ {
    NDK_OBJECT_HEADER Header;
    const NDK_SRQ_DISPATCH *Dispatch;
} NDK_SRQ;
typedef struct _NDK_QP {
    NDK_OBJECT_HEADER Header;
    const NDK_QP_DISPATCH *Dispatch;
} NDK_QP;
typedef struct _NDK_PD {
    NDK_OBJECT_HEADER Header;
    const NDK_PD_DISPATCH *Dispatch;
} NDK_PD;
typedef struct _NDK_SHARED_ENDPOINT {
    NDK_OBJECT_HEADER Header;
    const NDK_SHARED_ENDPOINT_DISPATCH *Dispatch;
} NDK_SHARED_ENDPOINT;
typedef struct _NDK_CONNECTOR {
    NDK_OBJECT_HEADER Header;
    const NDK_CONNECTOR_DISPATCH *Dispatch;
} NDK_CONNECTOR;
typedef struct _NDK_LISTENER {
    NDK_OBJECT_HEADER Header;
    const NDK_LISTENER_DISPATCH *Dispatch;
} NDK_LISTENER;

#define NDKSIM_PIN_OBJECT(T)                                                  \
    static_assert(offsetof(T, Header) == 0x00, "x64 layout: " #T ".Header");     \
    static_assert(offsetof(T, Dispatch) == 0x28, "x64 layout: " #T ".Dispatch"); \
    static_assert(sizeof(T) == 0x30, "x64 layout: sizeof " #T)
NDKSIM_PIN_OBJECT(NDK_ADAPTER);
NDKSIM_PIN_OBJECT(NDK_CQ);
NDKSIM_PIN_OBJECT(NDK_MR);
NDKSIM_PIN_OBJECT(NDK_MW);
NDKSIM_PIN_OBJECT(NDK_SRQ);
NDKSIM_PIN_OBJECT(NDK_QP);
NDKSIM_PIN_OBJECT(NDK_PD);
NDKSIM_PIN_OBJECT(NDK_SHARED_ENDPOINT);
NDKSIM_PIN_OBJECT(NDK_CONNECTOR);
NDKSIM_PIN_OBJECT(NDK_LISTENER);
#undef NDKSIM_PIN_OBJECT

/* ------------------------------------------------------------------------------------------------
 * NDIS glue (ndisndk.h). The miniport registers open/close handlers; the adapter is
 * closed only through CloseNDKAdapterHandler, which blocks until every descendant's callbacks
 * have returned.
 * ---------------------------------------------------------------------------------------------- */

/* NDIS >= 6.50 appends SwitchId and VPortId (NIC-switch ids); ndksim models no NIC switch. */
typedef struct _NDIS_OPEN_NDK_ADAPTER_PARAMETERS {
    NDK_VERSION Version; /* major + lowest acceptable minor; see NDK_VERSION */
} NDIS_OPEN_NDK_ADAPTER_PARAMETERS, *PNDIS_OPEN_NDK_ADAPTER_PARAMETERS;

typedef NDIS_STATUS (*OPEN_NDK_ADAPTER_HANDLER)(NDIS_HANDLE MiniportAdapterContext,
                                                PNDIS_OPEN_NDK_ADAPTER_PARAMETERS Parameters,
                                                NDK_ADAPTER **ppNdkAdapter);
typedef VOID (*CLOSE_NDK_ADAPTER_HANDLER)(NDIS_HANDLE MiniportAdapterContext,
                                          NDK_ADAPTER *pNdkAdapter);

typedef struct _NDIS_NDK_PROVIDER_CHARACTERISTICS {
    NDIS_OBJECT_HEADER Header; /* Revision = NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 */
    ULONG Flags;               /* reserved, 0 */
    OPEN_NDK_ADAPTER_HANDLER OpenNDKAdapterHandler;
    CLOSE_NDK_ADAPTER_HANDLER CloseNDKAdapterHandler;
} NDIS_NDK_PROVIDER_CHARACTERISTICS, *PNDIS_NDK_PROVIDER_CHARACTERISTICS;

/* NDIS-level capability record. */
typedef struct _NDIS_NDK_CAPABILITIES {
    NDIS_OBJECT_HEADER Header;
    ULONG Flags;
    ULONG MaxQpCount;
    ULONG MaxCqCount;
    ULONG MaxMrCount;
    ULONG MaxPdCount;
    ULONG MaxInboundReadLimit;
    ULONG MaxOutboundReadLimit;
    ULONG MaxMwCount;
    ULONG MaxSrqCount;
    ULONG64 MissingCounterMask;
    NDK_ADAPTER_INFO *NdkInfo;
} NDIS_NDK_CAPABILITIES, *PNDIS_NDK_CAPABILITIES;
static_assert(sizeof(NDIS_NDK_CAPABILITIES) == 0x38, "NDIS_NDK_CAPABILITIES x64 layout");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDKSIM_NDKPI_H_ */
