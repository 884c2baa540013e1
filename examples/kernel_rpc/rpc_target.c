/* SPDX-License-Identifier: MIT */
/* The target driver: listens on its address, accepts one connection from a work item, and serves
 * block requests against a disk in nonpaged pool. One system thread owns the connection's QP and
 * CQ (it alone posts and polls, so neither needs a lock); the provider's callbacks only wake it. */
#include "rpc_common.h"

/* Two initiator-queue requests per served request at most: the data transfer and the response. */
#define RPC_TARGET_INITIATOR_DEPTH (2 * RPC_MAX_QUEUE_DEPTH)
#define RPC_TARGET_CQ_DEPTH (RPC_MAX_QUEUE_DEPTH + RPC_TARGET_INITIATOR_DEPTH)
#define RPC_TARGET_MAX_SGES 2 /* a page of data at a block offset touches two pages of the disk */
#define RPC_TARGET_POLL 16

typedef struct _RPC_TARGET_OP {
    SINGLE_LIST_ENTRY Link; /* on the free list while idle */
    LONG Pending;           /* its work requests not yet completed */
    RPC_REQUEST Request;    /* copied out, so the receive can be posted again at once */
    RPC_RESPONSE *Response; /* its slot in the message area */
    SIZE_T ResponseOffset;
} RPC_TARGET_OP;

typedef struct _RPC_TARGET {
    RpcTargetConfig Config;
    RpcTargetResults *Results;
    PDEVICE_OBJECT Device;
    PIO_WORKITEM AcceptItem;
    RPC_ADAPTER Adapter;
    NDK_PD *Pd;
    UINT32 PrivilegedToken;
    RPC_BUFFER Disk;
    RPC_BUFFER Messages; /* receive_depth request slots, then RPC_MAX_QUEUE_DEPTH response slots */
    NDK_LISTENER *Listener;

    /* The one connection this driver serves. */
    LONG ConnectionTaken;
    NDK_CONNECTOR *Connector;
    NDK_CQ *Cq;
    NDK_QP *Qp;
    PVOID Server;           /* its thread object */
    KEVENT AcceptIdle;      /* notification: no accept work item queued or running */
    KEVENT ConnectionGone;  /* notification: no connection, or its teardown has finished */
    KEVENT ServerWake;      /* synchronization: completions, or the peer left */
    KEVENT AcceptDone;      /* notification: the accept has completed, or failed */
    LONG Disconnected;
    BOOLEAN Flushed;
    ULONG PostedReceives;   /* the server thread's alone, as are the counts below */
    ULONG OutstandingWork;  /* initiator-queue requests posted and not completed */
    SINGLE_LIST_ENTRY FreeOps;
    RPC_TARGET_OP Ops[RPC_MAX_QUEUE_DEPTH];
} RPC_TARGET;

static RpcTargetConfig g_target_config;
static RpcTargetResults g_target_results;
static RPC_TARGET *g_target;

void RpcTargetConfigure(const RpcTargetConfig *config) { g_target_config = *config; }
const RpcTargetResults *RpcTargetGetResults(void) { return &g_target_results; }

const uint8_t *RpcTargetDisk(size_t *bytes) {
    if (g_target == NULL) {
        *bytes = 0;
        return NULL;
    }
    *bytes = g_target->Disk.Bytes;
    return g_target->Disk.Va;
}

static VOID TargetFail(RPC_TARGET *Target, NTSTATUS Status) {
    InterlockedCompareExchange((LONG volatile *)&Target->Results->status, Status, STATUS_SUCCESS);
}

/* ---- the server thread: requests in, data moved, responses out ------------------------------ */

static SIZE_T TargetRequestOffset(ULONG Index) { return (SIZE_T)Index * RPC_MESSAGE_SLOT; }

static VOID TargetPostReceive(RPC_TARGET *Target, ULONG Index) {
    NDK_SGE sge;
    NTSTATUS status;
    RpcBufferSges(&Target->Messages, TargetRequestOffset(Index), RPC_MESSAGE_SLOT, Target->PrivilegedToken, &sge, 1);
    status = Target->Qp->Dispatch->NdkReceive(Target->Qp, Target->Messages.Va + TargetRequestOffset(Index), &sge, 1);
    if (NT_SUCCESS(status)) {
        ++Target->PostedReceives;
    } else {
        TargetFail(Target, status);
    }
}

static NTSTATUS TargetCheck(const RPC_TARGET *Target, const RPC_REQUEST *Request, ULONG Bytes) {
    ULONG64 blocks;
    if (Bytes != sizeof(RPC_REQUEST) || Request->Magic != RPC_REQUEST_MAGIC) return STATUS_INVALID_PARAMETER;
    if (Request->Opcode == RpcOpEcho) return STATUS_SUCCESS;
    if (Request->Opcode != RpcOpWrite && Request->Opcode != RpcOpRead) return STATUS_INVALID_PARAMETER;
    if (Request->Length == 0 || Request->Length % RPC_BLOCK_SIZE != 0 || Request->Length > PAGE_SIZE) {
        return STATUS_INVALID_PARAMETER;
    }
    blocks = Request->Length / RPC_BLOCK_SIZE;
    if (Request->Lba >= Target->Config.disk_blocks || blocks > Target->Config.disk_blocks - Request->Lba) {
        return STATUS_INVALID_PARAMETER;
    }
    return STATUS_SUCCESS;
}

static VOID TargetFreeOp(RPC_TARGET *Target, RPC_TARGET_OP *Op) { PushEntryList(&Target->FreeOps, &Op->Link); }

static VOID TargetPosted(RPC_TARGET *Target, RPC_TARGET_OP *Op, NTSTATUS Status) {
    if (NT_SUCCESS(Status)) {
        ++Op->Pending;
        ++Target->OutstandingWork;
    } else if (!Target->Flushed) {
        /* An inline failure means no completion will come for it. */
        TargetFail(Target, Status);
    }
}

static VOID TargetServe(RPC_TARGET *Target, RPC_TARGET_OP *Op, ULONG Bytes) {
    const RPC_REQUEST *request = &Op->Request;
    BOOLEAN lent = Bytes == sizeof(RPC_REQUEST) && (request->Opcode == RpcOpWrite || request->Opcode == RpcOpRead);
    NDK_QP *qp = Target->Qp;
    NDK_SGE data[RPC_TARGET_MAX_SGES];
    NDK_SGE response;
    ULONG sges = 0;
    NTSTATUS status = TargetCheck(Target, request, Bytes);

    if (NT_SUCCESS(status) && lent) {
        sges = RpcBufferSges(&Target->Disk, (SIZE_T)request->Lba * RPC_BLOCK_SIZE, request->Length,
                             Target->PrivilegedToken, data, RPC_TARGET_MAX_SGES);
        if (sges == 0) status = STATUS_INVALID_PARAMETER;
    }
    if (!NT_SUCCESS(status)) ++Target->Results->bad_requests;
    Op->Pending = 0;
    Op->Response->Magic = RPC_RESPONSE_MAGIC;
    Op->Response->Tag = request->Tag;
    Op->Response->Status = status;
    /* DEFER: the data transfer waits for the response's post, and both reach the adapter with one
     * doorbell. */
    if (NT_SUCCESS(status) && request->Opcode == RpcOpWrite) {
        status = qp->Dispatch->NdkRead(qp, Op, data, sges, request->RemoteAddress, request->RemoteToken,
                                       NDK_OP_FLAG_DEFER);
        TargetPosted(Target, Op, status);
    } else if (NT_SUCCESS(status) && request->Opcode == RpcOpRead) {
        status = qp->Dispatch->NdkWrite(qp, Op, data, sges, request->RemoteAddress, request->RemoteToken,
                                        NDK_OP_FLAG_DEFER);
        TargetPosted(Target, Op, status);
    } else if (NT_SUCCESS(status)) {
        ++Target->Results->echoes;
    }
    if (!NT_SUCCESS(status)) Op->Response->Status = status;
    RpcBufferSges(&Target->Messages, Op->ResponseOffset, sizeof(RPC_RESPONSE), Target->PrivilegedToken, &response, 1);
    if (lent && (request->Opcode == RpcOpWrite || Target->Config.invalidate_reads)) {
        /* The response takes back the buffer the initiator lent: its MR is invalidated on arrival,
         * so the buffer is out of our reach before the initiator reuses it. A WRITE is done only
         * when its data is in the disk: READ_FENCE holds the response until the RDMA read has
         * completed. A READ's RDMA write is placed before the send's invalidation takes effect:
         * messages execute in order at the responder. */
        ULONG flags = request->Opcode == RpcOpWrite ? NDK_OP_FLAG_READ_FENCE : 0;
        status = qp->Dispatch->NdkSendAndInvalidate(qp, Op, &response, 1, flags, request->RemoteToken);
    } else {
        status = qp->Dispatch->NdkSend(qp, Op, &response, 1, 0);
    }
    TargetPosted(Target, Op, status);
    if (Op->Pending == 0) TargetFreeOp(Target, Op);
}

static VOID TargetRequestArrived(RPC_TARGET *Target, const NDK_RESULT_EX *Result) {
    PUCHAR buffer = (PUCHAR)Result->RequestContext;
    ULONG index = (ULONG)((buffer - Target->Messages.Va) / RPC_MESSAGE_SLOT);
    PSINGLE_LIST_ENTRY entry;
    RPC_TARGET_OP *op;

    --Target->PostedReceives;
    if (!NT_SUCCESS(Result->Status)) {
        if (Result->Status == STATUS_CANCELLED) {
            ++Target->Results->flushed;
        } else {
            TargetFail(Target, Result->Status);
        }
        return;
    }
    ++Target->Results->requests;
    entry = PopEntryList(&Target->FreeOps);
    /* The initiator never has more than RPC_MAX_QUEUE_DEPTH requests outstanding. */
    NT_ASSERT(entry != NULL);
    op = CONTAINING_RECORD(entry, RPC_TARGET_OP, Link);
    RtlCopyMemory(&op->Request, buffer, sizeof(RPC_REQUEST));
    /* Posting the buffer again before serving keeps the window in which the initiator's next
     * send finds no receive (and is NAKed receiver-not-ready) short. */
    if (!Target->Flushed) TargetPostReceive(Target, index);
    TargetServe(Target, op, Result->BytesTransferred);
}

static VOID TargetWorkCompleted(RPC_TARGET *Target, const NDK_RESULT_EX *Result) {
    RPC_TARGET_OP *op = (RPC_TARGET_OP *)Result->RequestContext;

    --Target->OutstandingWork;
    if (Result->Status == STATUS_CANCELLED) {
        ++Target->Results->flushed;
    } else if (!NT_SUCCESS(Result->Status)) {
        TargetFail(Target, Result->Status);
    } else if (Result->Type == NdkOperationTypeRead) {
        ++Target->Results->rdma_reads;
    } else if (Result->Type == NdkOperationTypeWrite) {
        ++Target->Results->rdma_writes;
    } else if (Result->Type == NdkOperationTypeSend) {
        ++Target->Results->responses;
    }
    if (--op->Pending == 0) TargetFreeOp(Target, op);
}

static ULONG TargetPoll(RPC_TARGET *Target) {
    NDK_RESULT_EX results[RPC_TARGET_POLL];
    ULONG count = Target->Cq->Dispatch->NdkGetCqResultsEx(Target->Cq, results, RPC_TARGET_POLL);
    ULONG k;
    for (k = 0; k < count; ++k) {
        /* ReceiveAndInvalidate keeps the Receive bit; nothing sends us one, but it is a receive. */
        if (results[k].Type & NdkOperationTypeReceive) {
            TargetRequestArrived(Target, &results[k]);
        } else {
            TargetWorkCompleted(Target, &results[k]);
        }
    }
    return count;
}

static VOID TargetCloseConnection(RPC_TARGET *Target) {
    /* Successors first: the connector holds the QP, the QP holds the CQ. An antecedent's close
     * would stay pending until its successors are closed. */
    if (Target->Connector != NULL) {
        RpcCloseObject(&Target->Connector->Header, Target->Connector->Dispatch->NdkCloseConnector);
        Target->Connector = NULL;
    }
    if (Target->Qp != NULL) {
        RpcCloseObject(&Target->Qp->Header, Target->Qp->Dispatch->NdkCloseQp);
        Target->Qp = NULL;
    }
    if (Target->Cq != NULL) {
        RpcCloseObject(&Target->Cq->Header, Target->Cq->Dispatch->NdkCloseCq);
        Target->Cq = NULL;
    }
}

static VOID TargetServer(PVOID Context) {
    RPC_TARGET *target = (RPC_TARGET *)Context;

    /* Requests can arrive before our accept has completed (the initiator may send once its own
     * connect completes), but nothing may be posted on the initiator queue until it has: they
     * wait in the CQ. */
    KeWaitForSingleObject(&target->AcceptDone, Executive, KernelMode, FALSE, NULL);
    for (;;) {
        if (TargetPoll(target) > 0) continue;
        if (ReadAcquire(&target->Disconnected) && !target->Flushed) {
            /* The provider does not cancel our work because the peer left; the flush does, and
             * every request posted before it completes (cancelled, if it had not finished). */
            target->Qp->Dispatch->NdkFlush(target->Qp);
            target->Flushed = TRUE;
            continue;
        }
        if (target->Flushed && target->PostedReceives == 0 && target->OutstandingWork == 0) break;
        /* An entry that arrived after the empty poll fires this arm at once. */
        target->Cq->Dispatch->NdkArmCq(target->Cq, NDK_CQ_NOTIFY_ANY);
        KeWaitForSingleObject(&target->ServerWake, Executive, KernelMode, FALSE, NULL);
    }
    TargetCloseConnection(target);
    target->Results->torn_down = 1;
    KeSetEvent(&target->ConnectionGone, IO_NO_INCREMENT, FALSE);
    PsTerminateSystemThread(STATUS_SUCCESS);
}

/* ---- callbacks, at DISPATCH_LEVEL: they only hand work to threads ---------------------------- */

static VOID TargetCqNotify(PVOID Context, NTSTATUS CqStatus) {
    RPC_TARGET *target = (RPC_TARGET *)Context;
    if (!NT_SUCCESS(CqStatus)) TargetFail(target, CqStatus);
    KeSetEvent(&target->ServerWake, IO_NO_INCREMENT, FALSE);
}

static VOID TargetDisconnectEvent(PVOID Context) {
    RPC_TARGET *target = (RPC_TARGET *)Context;
    InterlockedExchange(&target->Disconnected, 1);
    KeSetEvent(&target->ServerWake, IO_NO_INCREMENT, FALSE);
}

static NTSTATUS TargetAccept(RPC_TARGET *Target) {
    NDK_ADAPTER *adapter = Target->Adapter.Adapter;
    ULONG read_limit = Target->Adapter.Info.MaxOutboundReadLimit;
    RPC_WAIT wait;
    NTSTATUS status;
    ULONG k;

    RpcWaitInit(&wait);
    status = RpcFinishCreate(&wait,
                             adapter->Dispatch->NdkCreateCq(adapter, RPC_TARGET_CQ_DEPTH, TargetCqNotify, Target, NULL,
                                                            RpcCreateDone, &wait, &Target->Cq),
                             (PVOID *)&Target->Cq);
    if (!NT_SUCCESS(status)) return status;
    RpcWaitInit(&wait);
    status = RpcFinishCreate(&wait,
                             Target->Pd->Dispatch->NdkCreateQp(Target->Pd, Target->Cq, Target->Cq, Target,
                                                               Target->Config.receive_depth,
                                                               RPC_TARGET_INITIATOR_DEPTH, 1, RPC_TARGET_MAX_SGES, 0,
                                                               RpcCreateDone, &wait, &Target->Qp),
                             (PVOID *)&Target->Qp);
    if (!NT_SUCCESS(status)) return status;
    /* Receives go up before the accept: the initiator may send as soon as it is connected. */
    for (k = 0; k < Target->Config.receive_depth; ++k) TargetPostReceive(Target, k);
    status = RpcStartThread(TargetServer, Target, &Target->Server);
    if (!NT_SUCCESS(status)) return status;
    if (read_limit > RPC_MAX_QUEUE_DEPTH) read_limit = RPC_MAX_QUEUE_DEPTH;
    RpcWaitInit(&wait);
    /* We read from the initiator and it never reads from us: inbound 0, outbound as deep as it
     * may queue requests. */
    status = RpcFinish(&wait, Target->Connector->Dispatch->NdkAccept(Target->Connector, Target->Qp, 0, read_limit,
                                                                     NULL, 0, TargetDisconnectEvent, Target,
                                                                     RpcRequestDone, &wait));
    if (NT_SUCCESS(status)) {
        Target->Results->accepted = 1;
        KeSetEvent(&Target->AcceptDone, IO_NO_INCREMENT, FALSE);
    }
    return status;
}

static VOID TargetAcceptWorker(PDEVICE_OBJECT Device, PVOID Context) {
    RPC_TARGET *target = (RPC_TARGET *)Context;
    NTSTATUS status;

    UNREFERENCED_PARAMETER(Device);
    PAGED_CODE();
    status = TargetAccept(target);
    if (!NT_SUCCESS(status)) {
        TargetFail(target, status);
        if (target->Server != NULL) {
            /* The server thread tears down what it owns, as after a disconnect. */
            TargetDisconnectEvent(target);
            KeSetEvent(&target->AcceptDone, IO_NO_INCREMENT, FALSE);
        } else {
            if (target->Qp != NULL && target->PostedReceives > 0) {
                /* No thread drains the flushed receives; closing the QP discards them. */
                target->PostedReceives = 0;
            }
            TargetCloseConnection(target);
            KeSetEvent(&target->ConnectionGone, IO_NO_INCREMENT, FALSE);
        }
    }
    KeSetEvent(&target->AcceptIdle, IO_NO_INCREMENT, FALSE);
}

static VOID TargetConnectEvent(PVOID Context, NDK_CONNECTOR *Connector) {
    RPC_TARGET *target = (RPC_TARGET *)Context;

    if (InterlockedExchange(&target->ConnectionTaken, 1) != 0) {
        /* One connection per load. Without a callback the close completes inline. */
        Connector->Dispatch->NdkReject(Connector, NULL, 0);
        Connector->Dispatch->NdkCloseConnector(&Connector->Header, NULL, NULL);
        return;
    }
    /* Creating the QP and accepting wait for the provider, which DISPATCH_LEVEL may not: a work
     * item does them at PASSIVE_LEVEL. */
    target->Connector = Connector;
    KeClearEvent(&target->AcceptIdle);
    KeClearEvent(&target->ConnectionGone);
    IoQueueWorkItem(target->AcceptItem, TargetAcceptWorker, DelayedWorkQueue, target);
}

/* ---- load and unload ------------------------------------------------------------------------ */

static VOID TargetRelease(RPC_TARGET *Target) {
    PAGED_CODE();
    if (Target->Listener != NULL) {
        /* Pending until the accepted connector is closed, which the disconnect brings. */
        RpcCloseObject(&Target->Listener->Header, Target->Listener->Dispatch->NdkCloseListener);
        Target->Listener = NULL;
    }
    KeWaitForSingleObject(&Target->AcceptIdle, Executive, KernelMode, FALSE, NULL);
    KeWaitForSingleObject(&Target->ConnectionGone, Executive, KernelMode, FALSE, NULL);
    RpcWaitForThread(&Target->Server);
    if (Target->Adapter.Adapter != NULL) {
        /* Every request that used them has completed: the connection is gone. */
        RpcBufferUnmap(&Target->Adapter, &Target->Messages);
        RpcBufferUnmap(&Target->Adapter, &Target->Disk);
    }
    if (Target->Pd != NULL) RpcCloseObject(&Target->Pd->Header, Target->Pd->Dispatch->NdkClosePd);
    RpcCloseAdapter(&Target->Adapter);
    if (Target->AcceptItem != NULL) IoFreeWorkItem(Target->AcceptItem);
    if (Target->Device != NULL) IoDeleteDevice(Target->Device);
    ExFreePoolWithTag(Target, RPC_TAG_CONTEXT);
}

static VOID TargetUnload(PDRIVER_OBJECT Driver) {
    UNREFERENCED_PARAMETER(Driver);
    TargetRelease(g_target);
    g_target = NULL;
}

static NTSTATUS TargetStart(RPC_TARGET *Target, PDRIVER_OBJECT Driver) {
    NDK_ADAPTER *adapter;
    SOCKADDR_IN address;
    RPC_WAIT wait;
    NTSTATUS status;
    ULONG k;

    status = IoCreateDevice(Driver, 0, NULL, FILE_DEVICE_NETWORK, 0, FALSE, &Target->Device);
    if (!NT_SUCCESS(status)) return status;
    Target->AcceptItem = IoAllocateWorkItem(Target->Device);
    if (Target->AcceptItem == NULL) return STATUS_INSUFFICIENT_RESOURCES;
    status = RpcOpenAdapter(&Target->Adapter, Target->Config.ipv4);
    if (!NT_SUCCESS(status)) return status;
    adapter = Target->Adapter.Adapter;
    RpcWaitInit(&wait);
    status = RpcFinishCreate(&wait, adapter->Dispatch->NdkCreatePd(adapter, RpcCreateDone, &wait, &Target->Pd),
                             (PVOID *)&Target->Pd);
    if (!NT_SUCCESS(status)) return status;
    /* Our own buffers need no MR: the privileged token reaches any logical address the adapter
     * mapped for us, and never grants the peer anything. */
    Target->Pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(Target->Pd, &Target->PrivilegedToken);
    status = RpcBufferMap(&Target->Adapter, &Target->Disk, (SIZE_T)Target->Config.disk_blocks * RPC_BLOCK_SIZE);
    if (!NT_SUCCESS(status)) return status;
    status = RpcBufferMap(&Target->Adapter, &Target->Messages,
                          (SIZE_T)(Target->Config.receive_depth + RPC_MAX_QUEUE_DEPTH) * RPC_MESSAGE_SLOT);
    if (!NT_SUCCESS(status)) return status;
    for (k = 0; k < RPC_MAX_QUEUE_DEPTH; ++k) {
        RPC_TARGET_OP *op = &Target->Ops[k];
        op->ResponseOffset = TargetRequestOffset(Target->Config.receive_depth + k);
        op->Response = (RPC_RESPONSE *)(Target->Messages.Va + op->ResponseOffset);
        TargetFreeOp(Target, op);
    }
    RpcWaitInit(&wait);
    status = RpcFinishCreate(&wait,
                             adapter->Dispatch->NdkCreateListener(adapter, TargetConnectEvent, Target, RpcCreateDone,
                                                                  &wait, &Target->Listener),
                             (PVOID *)&Target->Listener);
    if (!NT_SUCCESS(status)) return status;
    address = RpcSocketAddress(Target->Config.ipv4, Target->Config.port);
    RpcWaitInit(&wait);
    return RpcFinish(&wait, Target->Listener->Dispatch->NdkListen(Target->Listener, (PSOCKADDR)&address,
                                                                  sizeof(address), RpcRequestDone, &wait));
}

NTSTATUS RpcTargetDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    RPC_TARGET *target;
    NTSTATUS status;

    UNREFERENCED_PARAMETER(RegistryPath);
    PAGED_CODE();
    RtlZeroMemory(&g_target_results, sizeof(g_target_results));
    if (g_target_config.disk_blocks == 0 || g_target_config.receive_depth == 0 ||
        g_target_config.receive_depth > RPC_MAX_QUEUE_DEPTH) {
        return STATUS_INVALID_PARAMETER;
    }
    target = (RPC_TARGET *)ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(RPC_TARGET), RPC_TAG_CONTEXT);
    if (target == NULL) return STATUS_INSUFFICIENT_RESOURCES;
    target->Config = g_target_config;
    target->Results = &g_target_results;
    KeInitializeEvent(&target->AcceptIdle, NotificationEvent, TRUE);
    KeInitializeEvent(&target->ConnectionGone, NotificationEvent, TRUE);
    KeInitializeEvent(&target->ServerWake, SynchronizationEvent, FALSE);
    KeInitializeEvent(&target->AcceptDone, NotificationEvent, FALSE);
    status = TargetStart(target, Driver);
    if (!NT_SUCCESS(status)) {
        TargetRelease(target);
        return status;
    }
    g_target = target;
    Driver->DriverUnload = TargetUnload;
    return STATUS_SUCCESS;
}
