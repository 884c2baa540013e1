/* SPDX-License-Identifier: MIT */
/* What the two drivers share: opening the adapter the way a kernel consumer must (WSK, its NDK
 * extension, the interface that owns our address), waiting out calls that may pend, and pool
 * buffers the adapter reaches through logical addresses (a LAM) and the privileged token. */
#ifndef NDKSIM_EXAMPLES_KERNEL_RPC_RPC_COMMON_H_
#define NDKSIM_EXAMPLES_KERNEL_RPC_RPC_COMMON_H_

#include <ndis.h>
#include <netioapi.h>
#include <wdm.h>
#include <wsk.h>
#include <wskndk.h>

#include "rpc.h"
#include "rpc_protocol.h"

#define RPC_TAG_CONTEXT 'xcpR'
#define RPC_TAG_BUFFER 'fbpR'
#define RPC_TAG_LAM 'mlpR'

#define RPC_NDK_VERSION_MAJOR 2
#define RPC_NDK_VERSION_MINOR 0

typedef struct _RPC_ADAPTER {
    WSK_REGISTRATION Registration;
    WSK_PROVIDER_NPI Provider;
    WSK_PROVIDER_NDK_DISPATCH Ndk;
    BOOLEAN Registered;
    BOOLEAN Captured;
    NDK_ADAPTER *Adapter;
    NDK_ADAPTER_INFO Info;
} RPC_ADAPTER;

NTSTATUS RpcOpenAdapter(RPC_ADAPTER *Adapter, ULONG Ipv4);
VOID RpcCloseAdapter(RPC_ADAPTER *Adapter);

/* One call that may pend. NDK's rule: STATUS_PENDING means exactly one callback later, any other
 * return means none, so a caller waits on Done only after STATUS_PENDING. The callback may already
 * have run when the call returns (from inside the call), which the event absorbs. */
typedef struct _RPC_WAIT {
    KEVENT Done;
    NTSTATUS Status;
    NDK_OBJECT_HEADER *Object;
} RPC_WAIT;

VOID RpcWaitInit(RPC_WAIT *Wait);
VOID RpcRequestDone(PVOID Context, NTSTATUS Status);
VOID RpcCreateDone(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER *Object);
/* The status the call finally has: `Returned`, or the callback's after waiting for it. */
NTSTATUS RpcFinish(RPC_WAIT *Wait, NTSTATUS Returned);
/* As RpcFinish for a create; a pending create delivers the object only to the callback. */
NTSTATUS RpcFinishCreate(RPC_WAIT *Wait, NTSTATUS Returned, PVOID *Object);
/* Closes an NDK object and returns once it is closed: no callback of it runs after this. */
VOID RpcCloseObject(NDK_OBJECT_HEADER *Object, NDK_FN_CLOSE_OBJECT Close);

/* Nonpaged pool, page-aligned, described by an MDL and mapped for the adapter. */
typedef struct _RPC_BUFFER {
    PUCHAR Va;
    SIZE_T Bytes;
    PMDL Mdl;
    NDK_LOGICAL_ADDRESS_MAPPING *Lam;
    ULONG Fbo;
} RPC_BUFFER;

NTSTATUS RpcBufferMap(RPC_ADAPTER *Adapter, RPC_BUFFER *Buffer, SIZE_T Bytes);
/* Only once every work request that used it has completed. */
VOID RpcBufferUnmap(RPC_ADAPTER *Adapter, RPC_BUFFER *Buffer);
/* SGEs with the privileged token for [Offset, Offset + Length) of the buffer, one per page it
 * touches (logical pages need not be contiguous); 0 if more than MaxSges would be needed. */
ULONG RpcBufferSges(const RPC_BUFFER *Buffer, SIZE_T Offset, ULONG Length, UINT32 Token, NDK_SGE *Sges,
                    ULONG MaxSges);

/* A wait for a thread object to end, then its reference dropped. */
VOID RpcWaitForThread(PVOID *Thread);
NTSTATUS RpcStartThread(PKSTART_ROUTINE Routine, PVOID Context, PVOID *Thread);

SOCKADDR_IN RpcSocketAddress(ULONG Ipv4, USHORT Port);

#endif
