/* SPDX-License-Identifier: MIT */
/* The initiator driver: connects to the target, then submitter threads share a table of request
 * slots, one per request the queue depth allows in flight. A slot owns a page of data, lent to the
 * target per request through a fast-register MR that the target's response invalidates. Completions
 * are handled in the CQ's notification callback, which frees slots and wakes submitters. */
#include "rpc_common.h"

#ifndef RPC_PLANTED_RACE
#define RPC_PLANTED_RACE 0
#endif

#define RPC_INITIATOR_POLL 16

typedef enum _RPC_SLOT_STATE {
    RpcSlotFree = 0,
    RpcSlotBusy, /* from its claim until every completion of its request has arrived */
} RPC_SLOT_STATE;

typedef struct _RPC_SLOT {
    ULONG Index;
    RPC_SLOT_STATE State;
    PKTHREAD Owner;
    ULONG64 Request; /* its place in the workload */
    ULONG64 Tag;     /* the request and the slot, so a response finds its slot without a search */
    RPC_OPCODE Opcode;
    ULONG64 Lba;
    ULONG Length;
    LONG Pending;     /* completions still due: fast register, send, response, invalidate */
    BOOLEAN Answered;
    NTSTATUS Status; /* the request's first failure */
    RPC_BUFFER Data;
    NDK_MR *Mr;
    UINT32 Token;    /* the MR's remote token for this request's registration */
} RPC_SLOT;

typedef struct _RPC_INITIATOR {
    RpcInitiatorConfig Config;
    RpcInitiatorResults *Results;
    RPC_ADAPTER Adapter;
    NDK_PD *Pd;
    UINT32 PrivilegedToken;
    NDK_CQ *Cq;
    NDK_QP *Qp;
    NDK_CONNECTOR *Connector;
    BOOLEAN Connected;
    RPC_BUFFER Messages; /* a request message per slot, then a response receive per slot */
    RPC_SLOT Slots[RPC_MAX_QUEUE_DEPTH];

    /* Guards the slots' State and Owner, the counts below and the results: submitters and the CQ
     * callback both take it. */
    KSPIN_LOCK SlotLock;
    /* The initiator queue: NDK allows one posting call at a time on it. */
    KSPIN_LOCK PostLock;
    KEVENT SlotFreed;        /* notification; cleared under SlotLock when no slot is free */
    KEVENT WritesDone;       /* notification: READs may start */
    KEVENT AllDone;          /* notification: every request finished, or the run failed */
    KEVENT ReceivesDrained;  /* notification: no receive posted once stopping */
    LONG NextRequest;
    ULONG64 Total;
    ULONG64 WritesCompleted;
    ULONG64 Completed;
    ULONG64 Outstanding;
    PUCHAR Completions;      /* per request, the times it finished */
    ULONG PostedReceives;
    LONG Stopping;
    LONG Failed;
    PVOID Main;
    PVOID Submitters[RPC_MAX_SUBMITTERS];
} RPC_INITIATOR;

static RpcInitiatorConfig g_initiator_config;
static RpcInitiatorResults g_initiator_results;
static RPC_INITIATOR *g_initiator;

void RpcInitiatorConfigure(const RpcInitiatorConfig *config) { g_initiator_config = *config; }
const RpcInitiatorResults *RpcInitiatorGetResults(void) { return &g_initiator_results; }

uint8_t RpcPatternByte(uint32_t seed, uint64_t lba, uint32_t offset) {
    ULONG x = (ULONG)(lba * 2654435761u) ^ (offset * 40503u) ^ (seed * 97u);
    return (UCHAR)(x ^ (x >> 8) ^ (x >> 16) ^ (x >> 24));
}

static VOID InitiatorFail(RPC_INITIATOR *Initiator, NTSTATUS Status) {
    InterlockedCompareExchange((LONG volatile *)&Initiator->Results->status, Status, STATUS_SUCCESS);
    InterlockedExchange(&Initiator->Failed, 1);
    /* Everyone waiting for progress gets up to see the run is over. */
    KeSetEvent(&Initiator->SlotFreed, IO_NO_INCREMENT, FALSE);
    KeSetEvent(&Initiator->WritesDone, IO_NO_INCREMENT, FALSE);
    KeSetEvent(&Initiator->AllDone, IO_NO_INCREMENT, FALSE);
}

static VOID InitiatorDescribe(const RPC_INITIATOR *Initiator, ULONG64 Request, RPC_OPCODE *Opcode, ULONG64 *Lba,
                              ULONG *Length) {
    ULONG64 writes = Initiator->Config.write_count;
    *Length = Initiator->Config.blocks_per_io * RPC_BLOCK_SIZE;
    if (Request < 2 * writes) {
        *Opcode = Request < writes ? RpcOpWrite : RpcOpRead;
        *Lba = (Request % writes) * Initiator->Config.blocks_per_io;
    } else {
        *Opcode = RpcOpEcho;
        *Lba = 0;
        *Length = 0;
    }
}

static BOOLEAN InitiatorLends(RPC_OPCODE Opcode) { return Opcode == RpcOpWrite || Opcode == RpcOpRead; }

static SIZE_T InitiatorRequestOffset(ULONG Slot) { return (SIZE_T)Slot * RPC_MESSAGE_SLOT; }

static SIZE_T InitiatorResponseOffset(const RPC_INITIATOR *Initiator, ULONG Receive) {
    return (SIZE_T)(Initiator->Config.queue_depth + Receive) * RPC_MESSAGE_SLOT;
}

/* ---- completions, in the CQ's notification callback ------------------------------------------ */

static BOOLEAN InitiatorDataMatches(const RPC_INITIATOR *Initiator, const RPC_SLOT *Slot) {
    ULONG at;
    for (at = 0; at < Slot->Length; ++at) {
        if (Slot->Data.Va[at] !=
            RpcPatternByte(Initiator->Config.pattern_seed, Slot->Lba + at / RPC_BLOCK_SIZE, at % RPC_BLOCK_SIZE)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* Under SlotLock. */
static VOID InitiatorSlotProgress(RPC_INITIATOR *Initiator, RPC_SLOT *Slot) {
    RpcInitiatorResults *results = Initiator->Results;

    NT_ASSERT(Slot->State == RpcSlotBusy && Slot->Pending > 0);
    if (--Slot->Pending > 0) return;
    ++results->completed;
    if (Initiator->Completions[Slot->Request]++ != 0) ++results->duplicate_completions;
    if (NT_SUCCESS(Slot->Status)) {
        ++results->succeeded;
        if (Slot->Opcode == RpcOpWrite) ++results->writes;
        if (Slot->Opcode == RpcOpRead) ++results->reads;
        if (Slot->Opcode == RpcOpEcho) ++results->echoes;
    } else {
        InitiatorFail(Initiator, Slot->Status);
    }
    if (Slot->Opcode == RpcOpWrite && ++Initiator->WritesCompleted == Initiator->Config.write_count) {
        KeSetEvent(&Initiator->WritesDone, IO_NO_INCREMENT, FALSE);
    }
    Slot->State = RpcSlotFree;
    Slot->Owner = NULL;
    --Initiator->Outstanding;
    KeSetEvent(&Initiator->SlotFreed, IO_NO_INCREMENT, FALSE);
    if (++Initiator->Completed == Initiator->Total) KeSetEvent(&Initiator->AllDone, IO_NO_INCREMENT, FALSE);
}

static VOID InitiatorPostReceive(RPC_INITIATOR *Initiator, RPC_RESPONSE *Response) {
    SIZE_T offset = (PUCHAR)Response - Initiator->Messages.Va;
    NDK_SGE sge;
    NTSTATUS status;
    KIRQL irql;

    RpcBufferSges(&Initiator->Messages, offset, RPC_MESSAGE_SLOT, Initiator->PrivilegedToken, &sge, 1);
    status = Initiator->Qp->Dispatch->NdkReceive(Initiator->Qp, Response, &sge, 1);
    KeAcquireSpinLock(&Initiator->SlotLock, &irql);
    if (NT_SUCCESS(status)) {
        ++Initiator->PostedReceives;
    } else {
        InitiatorFail(Initiator, status);
    }
    KeReleaseSpinLock(&Initiator->SlotLock, irql);
}

static VOID InitiatorPostInvalidate(RPC_INITIATOR *Initiator, RPC_SLOT *Slot) {
    NTSTATUS status;
    KIRQL irql;

    KeAcquireSpinLock(&Initiator->PostLock, &irql);
    status = Initiator->Qp->Dispatch->NdkInvalidate(Initiator->Qp, Slot, &Slot->Mr->Header, 0);
    KeReleaseSpinLock(&Initiator->PostLock, irql);
    if (!NT_SUCCESS(status)) {
        /* No completion will come for it: the slot stays busy and the run is over. */
        InitiatorFail(Initiator, status);
    }
}

static VOID InitiatorResponseArrived(RPC_INITIATOR *Initiator, const NDK_RESULT_EX *Result) {
    RPC_RESPONSE *response = (RPC_RESPONSE *)Result->RequestContext;
    RpcInitiatorResults *results = Initiator->Results;
    BOOLEAN repost = FALSE;
    RPC_SLOT *invalidate = NULL;
    RPC_SLOT *slot;
    ULONG index;
    KIRQL irql;

    KeAcquireSpinLock(&Initiator->SlotLock, &irql);
    --Initiator->PostedReceives;
    if (!NT_SUCCESS(Result->Status)) {
        if (Result->Status == STATUS_CANCELLED) {
            ++results->flushed_receives;
        } else {
            InitiatorFail(Initiator, Result->Status);
        }
    } else {
        index = (ULONG)(response->Tag & 0xFF);
        slot = index < Initiator->Config.queue_depth ? &Initiator->Slots[index] : NULL;
        if (response->Magic != RPC_RESPONSE_MAGIC || slot == NULL || slot->State != RpcSlotBusy ||
            slot->Tag != response->Tag || slot->Answered) {
            ++results->unexpected_responses;
        } else {
            slot->Answered = TRUE;
            if (!NT_SUCCESS(response->Status) && NT_SUCCESS(slot->Status)) slot->Status = response->Status;
            if (InitiatorLends(slot->Opcode)) {
                /* The lent buffer must be taken back before the slot is reused: by the response,
                 * which then invalidated exactly the token this request carried, or by us. */
                if (Result->Type == NdkOperationTypeReceiveAndInvalidate) {
                    if ((UINT32)Result->TypeSpecificCompletionOutput == slot->Token) {
                        ++results->remote_invalidations;
                    } else if (NT_SUCCESS(slot->Status)) {
                        slot->Status = STATUS_INVALID_DEVICE_STATE;
                    }
                } else {
                    ++slot->Pending; /* the invalidate's completion */
                    invalidate = slot;
                }
            }
            if (slot->Opcode == RpcOpRead && NT_SUCCESS(slot->Status) && !InitiatorDataMatches(Initiator, slot)) {
                ++results->data_mismatches;
            }
            InitiatorSlotProgress(Initiator, slot);
        }
        repost = !ReadAcquire(&Initiator->Stopping);
    }
    if (ReadAcquire(&Initiator->Stopping) && Initiator->PostedReceives == 0) {
        KeSetEvent(&Initiator->ReceivesDrained, IO_NO_INCREMENT, FALSE);
    }
    KeReleaseSpinLock(&Initiator->SlotLock, irql);
    if (invalidate != NULL) InitiatorPostInvalidate(Initiator, invalidate);
    if (repost) InitiatorPostReceive(Initiator, response);
}

static VOID InitiatorWorkCompleted(RPC_INITIATOR *Initiator, const NDK_RESULT_EX *Result) {
    RPC_SLOT *slot = (RPC_SLOT *)Result->RequestContext;
    KIRQL irql;

    KeAcquireSpinLock(&Initiator->SlotLock, &irql);
    if (!NT_SUCCESS(Result->Status)) {
        if (NT_SUCCESS(slot->Status)) slot->Status = Result->Status;
    } else if (Result->Type == NdkOperationTypeFastRegister) {
        ++Initiator->Results->fast_registers;
    } else if (Result->Type == NdkOperationTypeInvalidate) {
        ++Initiator->Results->local_invalidations;
    }
    InitiatorSlotProgress(Initiator, slot);
    KeReleaseSpinLock(&Initiator->SlotLock, irql);
}

static VOID InitiatorCqNotify(PVOID Context, NTSTATUS CqStatus) {
    RPC_INITIATOR *initiator = (RPC_INITIATOR *)Context;
    NDK_RESULT_EX results[RPC_INITIATOR_POLL];
    ULONG count;
    ULONG k;

    if (!NT_SUCCESS(CqStatus)) {
        /* Overrun or a dead adapter: the CQ reports nothing more. */
        InitiatorFail(initiator, CqStatus);
        KeSetEvent(&initiator->ReceivesDrained, IO_NO_INCREMENT, FALSE);
        return;
    }
    do {
        count = initiator->Cq->Dispatch->NdkGetCqResultsEx(initiator->Cq, results, RPC_INITIATOR_POLL);
        for (k = 0; k < count; ++k) {
            if (results[k].Type & NdkOperationTypeReceive) {
                InitiatorResponseArrived(initiator, &results[k]);
            } else {
                InitiatorWorkCompleted(initiator, &results[k]);
            }
        }
    } while (count == RPC_INITIATOR_POLL);
    /* An entry that arrived after the empty poll fires this arm; the provider runs that callback
     * after this one returns. */
    initiator->Cq->Dispatch->NdkArmCq(initiator->Cq, NDK_CQ_NOTIFY_ANY);
}

static VOID InitiatorDisconnectEvent(PVOID Context) {
    RPC_INITIATOR *initiator = (RPC_INITIATOR *)Context;
    if (!ReadAcquire(&initiator->Stopping)) InitiatorFail(initiator, STATUS_CONNECTION_DISCONNECTED);
}

/* ---- submitters ------------------------------------------------------------------------------ */

/* Two submitters holding one slot would share its MR, its buffer and its tag. */
static VOID InitiatorTakeSlot(RPC_INITIATOR *Initiator, RPC_SLOT *Slot, ULONG64 Request) {
    NT_ASSERT(Slot->State == RpcSlotFree);
    Slot->State = RpcSlotBusy;
    Slot->Owner = KeGetCurrentThread();
    Slot->Request = Request;
    Slot->Tag = (Request << 8) | Slot->Index;
    InitiatorDescribe(Initiator, Request, &Slot->Opcode, &Slot->Lba, &Slot->Length);
    Slot->Pending = InitiatorLends(Slot->Opcode) ? 3 : 2;
    Slot->Answered = FALSE;
    Slot->Status = STATUS_SUCCESS;
    if (++Initiator->Outstanding > Initiator->Results->max_outstanding) {
        Initiator->Results->max_outstanding = Initiator->Outstanding;
    }
}

/* A free slot, waiting for one if need be; taken for `Request` unless the planted race is built
 * in. NULL once the run has failed. */
static RPC_SLOT *InitiatorFindSlot(RPC_INITIATOR *Initiator, ULONG64 Request) {
    RPC_SLOT *slot;
    KIRQL irql;
    ULONG k;

    UNREFERENCED_PARAMETER(Request);
    for (;;) {
        slot = NULL;
        KeAcquireSpinLock(&Initiator->SlotLock, &irql);
        if (ReadAcquire(&Initiator->Failed)) {
            KeReleaseSpinLock(&Initiator->SlotLock, irql);
            return NULL;
        }
        for (k = 0; k < Initiator->Config.queue_depth && slot == NULL; ++k) {
            if (Initiator->Slots[k].State == RpcSlotFree) slot = &Initiator->Slots[k];
        }
        if (slot == NULL) {
            /* Cleared under the lock, so a slot freed after the scan sets it again. */
            KeClearEvent(&Initiator->SlotFreed);
        }
#if !RPC_PLANTED_RACE
        else {
            InitiatorTakeSlot(Initiator, slot, Request);
        }
#endif
        KeReleaseSpinLock(&Initiator->SlotLock, irql);
        if (slot != NULL) return slot;
        KeWaitForSingleObject(&Initiator->SlotFreed, Executive, KernelMode, FALSE, NULL);
    }
}

/* Under PostLock. DEFER: the registration goes to the adapter with the send that follows it. */
static NTSTATUS InitiatorPostFastRegister(RPC_INITIATOR *Initiator, RPC_SLOT *Slot, RPC_OPCODE Opcode,
                                          ULONG Length) {
    NDK_QP *qp = Initiator->Qp;
    /* Only the access this request needs: the target reads what we write, writes what we read. */
    ULONG flags = NDK_OP_FLAG_DEFER | (Opcode == RpcOpWrite ? NDK_OP_FLAG_ALLOW_REMOTE_READ : NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    NTSTATUS status;

    if (!InitiatorLends(Opcode)) return STATUS_SUCCESS;
    /* The buffer starts a page (FBO 0), so its own address is a valid base for the region. */
    status = qp->Dispatch->NdkFastRegister(qp, Slot, Slot->Mr, Slot->Data.Lam->AdapterPageCount,
                                           Slot->Data.Lam->AdapterPageArray, Slot->Data.Fbo, Length, Slot->Data.Va,
                                           flags);
    /* The remote token is valid once the call has returned; read it for each registration, as
     * an adapter may give each one a new key. */
    if (NT_SUCCESS(status)) Slot->Token = Slot->Mr->Dispatch->NdkGetRemoteTokenFromMr(Slot->Mr);
    return status;
}

/* Under PostLock: the end of the chain, so no DEFER, and the doorbell rings for both. */
static NTSTATUS InitiatorPostSend(RPC_INITIATOR *Initiator, RPC_SLOT *Slot) {
    SIZE_T offset = InitiatorRequestOffset(Slot->Index);
    RPC_REQUEST *request = (RPC_REQUEST *)(Initiator->Messages.Va + offset);
    NDK_SGE sge;

    RtlZeroMemory(request, sizeof(*request));
    request->Magic = RPC_REQUEST_MAGIC;
    request->Opcode = (USHORT)Slot->Opcode;
    request->Tag = Slot->Tag;
    request->Lba = Slot->Lba;
    request->Length = Slot->Length;
    if (InitiatorLends(Slot->Opcode)) {
        request->RemoteToken = Slot->Token;
        request->RemoteAddress = (ULONG64)(ULONG_PTR)Slot->Data.Va;
    }
    RpcBufferSges(&Initiator->Messages, offset, sizeof(*request), Initiator->PrivilegedToken, &sge, 1);
    return Initiator->Qp->Dispatch->NdkSend(Initiator->Qp, Slot, &sge, 1, 0);
}

static VOID InitiatorFillData(const RPC_INITIATOR *Initiator, RPC_SLOT *Slot) {
    ULONG at;
    if (Slot->Opcode == RpcOpRead) {
        /* Anything but the pattern: a read that moved nothing must not compare equal. */
        RtlFillMemory(Slot->Data.Va, Slot->Length, 0xEE);
        return;
    }
    for (at = 0; at < Slot->Length; ++at) {
        Slot->Data.Va[at] =
            RpcPatternByte(Initiator->Config.pattern_seed, Slot->Lba + at / RPC_BLOCK_SIZE, at % RPC_BLOCK_SIZE);
    }
}

static NTSTATUS InitiatorSubmit(RPC_INITIATOR *Initiator, ULONG64 Request) {
    RPC_SLOT *slot;
    NTSTATUS status;
    KIRQL irql;
#if RPC_PLANTED_RACE
    RPC_OPCODE opcode;
    ULONG64 lba;
    ULONG length;

    InitiatorDescribe(Initiator, Request, &opcode, &lba, &length);
    slot = InitiatorFindSlot(Initiator, Request);
    if (slot == NULL) return STATUS_CANCELLED;
    /* THE PLANTED RACE. The slot was seen free under the lock but is taken only below, outside
     * it: in between, this thread registers the slot's MR (an NDK call and a spin lock, but no
     * wait). A scheduler that preempts here lets a second submitter see the same slot free, and
     * whichever takes it second trips the assertion in InitiatorTakeSlot. */
    KeAcquireSpinLock(&Initiator->PostLock, &irql);
    status = InitiatorPostFastRegister(Initiator, slot, opcode, length);
    KeReleaseSpinLock(&Initiator->PostLock, irql);
    InitiatorTakeSlot(Initiator, slot, Request);
    if (!NT_SUCCESS(status)) return status;
    InitiatorFillData(Initiator, slot);
    KeAcquireSpinLock(&Initiator->PostLock, &irql);
    status = InitiatorPostSend(Initiator, slot);
    KeReleaseSpinLock(&Initiator->PostLock, irql);
#else
    slot = InitiatorFindSlot(Initiator, Request);
    if (slot == NULL) return STATUS_CANCELLED;
    InitiatorFillData(Initiator, slot);
    KeAcquireSpinLock(&Initiator->PostLock, &irql);
    status = InitiatorPostFastRegister(Initiator, slot, slot->Opcode, slot->Length);
    if (NT_SUCCESS(status)) status = InitiatorPostSend(Initiator, slot);
    KeReleaseSpinLock(&Initiator->PostLock, irql);
#endif
    return status;
}

static VOID InitiatorSubmitter(PVOID Context) {
    RPC_INITIATOR *initiator = (RPC_INITIATOR *)Context;
    ULONG64 request;
    RPC_OPCODE opcode;
    ULONG64 lba;
    ULONG length;
    NTSTATUS status;

    for (;;) {
        request = (ULONG64)(InterlockedIncrement(&initiator->NextRequest) - 1);
        if (request >= initiator->Total || ReadAcquire(&initiator->Failed)) break;
        InitiatorDescribe(initiator, request, &opcode, &lba, &length);
        if (opcode == RpcOpRead) {
            /* A READ must not overtake the WRITE of its blocks at the target. */
            KeWaitForSingleObject(&initiator->WritesDone, Executive, KernelMode, FALSE, NULL);
        }
        status = InitiatorSubmit(initiator, request);
        if (!NT_SUCCESS(status)) {
            /* An inline failure: no completion will come for what failed to post. */
            if (status != STATUS_CANCELLED) InitiatorFail(initiator, status);
            break;
        }
    }
    PsTerminateSystemThread(STATUS_SUCCESS);
}

/* ---- the main thread: connect, run the workload, disconnect, close --------------------------- */

static NTSTATUS InitiatorSetUpSlots(RPC_INITIATOR *Initiator) {
    RPC_WAIT wait;
    NTSTATUS status;
    ULONG k;

    for (k = 0; k < Initiator->Config.queue_depth; ++k) {
        RPC_SLOT *slot = &Initiator->Slots[k];
        slot->Index = k;
        status = RpcBufferMap(&Initiator->Adapter, &slot->Data, PAGE_SIZE);
        if (!NT_SUCCESS(status)) return status;
        RpcWaitInit(&wait);
        status = RpcFinishCreate(&wait, Initiator->Pd->Dispatch->NdkCreateMr(Initiator->Pd, TRUE, RpcCreateDone, &wait,
                                                                             &slot->Mr),
                                 (PVOID *)&slot->Mr);
        if (!NT_SUCCESS(status)) return status;
        RpcWaitInit(&wait);
        /* RemoteAccess: every registration of it is lent to the target. */
        status = RpcFinish(&wait, slot->Mr->Dispatch->NdkInitializeFastRegisterMr(
                                      slot->Mr, slot->Data.Lam->AdapterPageCount, TRUE, RpcRequestDone, &wait));
        if (!NT_SUCCESS(status)) return status;
    }
    return STATUS_SUCCESS;
}

static NTSTATUS InitiatorConnect(RPC_INITIATOR *Initiator) {
    NDK_ADAPTER *adapter = Initiator->Adapter.Adapter;
    ULONG depth = Initiator->Config.queue_depth;
    ULONG read_limit = Initiator->Adapter.Info.MaxInboundReadLimit;
    SOCKADDR_IN local = RpcSocketAddress(Initiator->Config.ipv4, 0);
    SOCKADDR_IN remote = RpcSocketAddress(Initiator->Config.target_ipv4, Initiator->Config.port);
    RPC_WAIT wait;
    NTSTATUS status;
    ULONG k;

    RpcWaitInit(&wait);
    status = RpcFinishCreate(&wait,
                             adapter->Dispatch->NdkCreateCq(adapter, 3 * depth, InitiatorCqNotify, Initiator, NULL,
                                                            RpcCreateDone, &wait, &Initiator->Cq),
                             (PVOID *)&Initiator->Cq);
    if (!NT_SUCCESS(status)) return status;
    RpcWaitInit(&wait);
    /* Two initiator-queue requests per slot: the fast register and the send. */
    status = RpcFinishCreate(&wait,
                             Initiator->Pd->Dispatch->NdkCreateQp(Initiator->Pd, Initiator->Cq, Initiator->Cq,
                                                                  Initiator, depth, 2 * depth, 1, 1, 0, RpcCreateDone,
                                                                  &wait, &Initiator->Qp),
                             (PVOID *)&Initiator->Qp);
    if (!NT_SUCCESS(status)) return status;
    /* A receive for every response that can be outstanding, before the request can be sent. */
    for (k = 0; k < depth; ++k) {
        InitiatorPostReceive(Initiator, (RPC_RESPONSE *)(Initiator->Messages.Va + InitiatorResponseOffset(Initiator, k)));
    }
    if (ReadAcquire(&Initiator->Failed)) return Initiator->Results->status;
    Initiator->Cq->Dispatch->NdkArmCq(Initiator->Cq, NDK_CQ_NOTIFY_ANY);
    RpcWaitInit(&wait);
    status = RpcFinishCreate(&wait, adapter->Dispatch->NdkCreateConnector(adapter, RpcCreateDone, &wait,
                                                                          &Initiator->Connector),
                             (PVOID *)&Initiator->Connector);
    if (!NT_SUCCESS(status)) return status;
    if (read_limit > depth) read_limit = depth;
    RpcWaitInit(&wait);
    /* The target reads our buffers, we never read its: inbound as deep as our queue, outbound 0. */
    status = RpcFinish(&wait, Initiator->Connector->Dispatch->NdkConnect(
                                  Initiator->Connector, Initiator->Qp, (PSOCKADDR)&local, sizeof(local),
                                  (PSOCKADDR)&remote, sizeof(remote), read_limit, 0, NULL, 0, RpcRequestDone, &wait));
    if (!NT_SUCCESS(status)) return status;
    RpcWaitInit(&wait);
    status = RpcFinish(&wait, Initiator->Connector->Dispatch->NdkCompleteConnect(
                                  Initiator->Connector, InitiatorDisconnectEvent, Initiator, RpcRequestDone, &wait));
    if (!NT_SUCCESS(status)) return status;
    Initiator->Connected = TRUE;
    return STATUS_SUCCESS;
}

static NTSTATUS InitiatorSetUp(RPC_INITIATOR *Initiator) {
    NDK_ADAPTER *adapter = Initiator->Adapter.Adapter;
    RPC_WAIT wait;
    NTSTATUS status;

    RpcWaitInit(&wait);
    status = RpcFinishCreate(&wait, adapter->Dispatch->NdkCreatePd(adapter, RpcCreateDone, &wait, &Initiator->Pd),
                             (PVOID *)&Initiator->Pd);
    if (!NT_SUCCESS(status)) return status;
    Initiator->Pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(Initiator->Pd, &Initiator->PrivilegedToken);
    status = RpcBufferMap(&Initiator->Adapter, &Initiator->Messages,
                          (SIZE_T)2 * Initiator->Config.queue_depth * RPC_MESSAGE_SLOT);
    if (!NT_SUCCESS(status)) return status;
    status = InitiatorSetUpSlots(Initiator);
    if (!NT_SUCCESS(status)) return status;
    return InitiatorConnect(Initiator);
}

static VOID InitiatorRun(RPC_INITIATOR *Initiator) {
    NTSTATUS status = STATUS_SUCCESS;
    ULONG k;

    for (k = 0; k < Initiator->Config.submitters && NT_SUCCESS(status); ++k) {
        status = RpcStartThread(InitiatorSubmitter, Initiator, &Initiator->Submitters[k]);
    }
    if (!NT_SUCCESS(status)) InitiatorFail(Initiator, status);
    for (k = 0; k < Initiator->Config.submitters; ++k) RpcWaitForThread(&Initiator->Submitters[k]);
    KeWaitForSingleObject(&Initiator->AllDone, Executive, KernelMode, FALSE, NULL);
}

static VOID InitiatorTearDown(RPC_INITIATOR *Initiator) {
    RPC_WAIT wait;
    BOOLEAN drain;
    KIRQL irql;
    ULONG k;

    InterlockedExchange(&Initiator->Stopping, 1);
    if (Initiator->Connected) {
        RpcWaitInit(&wait);
        /* Graceful: done once the peer has answered and our QP has no DMA left; the provider then
         * flushes the QP, so the response receives complete cancelled. */
        (VOID) RpcFinish(&wait, Initiator->Connector->Dispatch->NdkDisconnect(Initiator->Connector, RpcRequestDone,
                                                                              &wait));
    } else if (Initiator->Qp != NULL) {
        Initiator->Qp->Dispatch->NdkFlush(Initiator->Qp);
    }
    KeAcquireSpinLock(&Initiator->SlotLock, &irql);
    drain = Initiator->PostedReceives > 0;
    KeReleaseSpinLock(&Initiator->SlotLock, irql);
    if (drain) KeWaitForSingleObject(&Initiator->ReceivesDrained, Executive, KernelMode, FALSE, NULL);

    /* Successors before antecedents: connector, QP, CQ, MRs, then the PD. */
    if (Initiator->Connector != NULL) {
        RpcCloseObject(&Initiator->Connector->Header, Initiator->Connector->Dispatch->NdkCloseConnector);
    }
    if (Initiator->Qp != NULL) RpcCloseObject(&Initiator->Qp->Header, Initiator->Qp->Dispatch->NdkCloseQp);
    if (Initiator->Cq != NULL) RpcCloseObject(&Initiator->Cq->Header, Initiator->Cq->Dispatch->NdkCloseCq);
    for (k = 0; k < Initiator->Config.queue_depth; ++k) {
        RPC_SLOT *slot = &Initiator->Slots[k];
        if (slot->Mr != NULL) RpcCloseObject(&slot->Mr->Header, slot->Mr->Dispatch->NdkCloseMr);
        RpcBufferUnmap(&Initiator->Adapter, &slot->Data);
    }
    RpcBufferUnmap(&Initiator->Adapter, &Initiator->Messages);
    if (Initiator->Pd != NULL) RpcCloseObject(&Initiator->Pd->Header, Initiator->Pd->Dispatch->NdkClosePd);
}

static VOID InitiatorMain(PVOID Context) {
    RPC_INITIATOR *initiator = (RPC_INITIATOR *)Context;
    NTSTATUS status = InitiatorSetUp(initiator);

    if (NT_SUCCESS(status)) {
        initiator->Results->connected = 1;
        InitiatorRun(initiator);
    } else {
        InitiatorFail(initiator, status);
    }
    InitiatorTearDown(initiator);
    initiator->Results->done = 1;
    PsTerminateSystemThread(STATUS_SUCCESS);
}

static VOID InitiatorUnload(PDRIVER_OBJECT Driver) {
    RPC_INITIATOR *initiator = g_initiator;

    UNREFERENCED_PARAMETER(Driver);
    PAGED_CODE();
    RpcWaitForThread(&initiator->Main);
    RpcCloseAdapter(&initiator->Adapter);
    if (initiator->Completions != NULL) ExFreePoolWithTag(initiator->Completions, RPC_TAG_CONTEXT);
    ExFreePoolWithTag(initiator, RPC_TAG_CONTEXT);
    g_initiator = NULL;
}

static BOOLEAN InitiatorConfigIsValid(const RpcInitiatorConfig *Config) {
    return Config->submitters >= 1 && Config->submitters <= RPC_MAX_SUBMITTERS && Config->queue_depth >= 1 &&
           Config->queue_depth <= RPC_MAX_QUEUE_DEPTH && Config->blocks_per_io >= 1 &&
           Config->blocks_per_io <= RPC_MAX_IO_BLOCKS && (ULONG64)2 * Config->write_count + Config->echo_count <= MAXLONG;
}

NTSTATUS RpcInitiatorDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    RPC_INITIATOR *initiator;
    NTSTATUS status;

    UNREFERENCED_PARAMETER(RegistryPath);
    PAGED_CODE();
    RtlZeroMemory(&g_initiator_results, sizeof(g_initiator_results));
    if (!InitiatorConfigIsValid(&g_initiator_config)) return STATUS_INVALID_PARAMETER;
    initiator = (RPC_INITIATOR *)ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(RPC_INITIATOR), RPC_TAG_CONTEXT);
    if (initiator == NULL) return STATUS_INSUFFICIENT_RESOURCES;
    initiator->Config = g_initiator_config;
    initiator->Results = &g_initiator_results;
    initiator->Total = (ULONG64)2 * initiator->Config.write_count + initiator->Config.echo_count;
    initiator->Results->requests = initiator->Total;
    KeInitializeSpinLock(&initiator->SlotLock);
    KeInitializeSpinLock(&initiator->PostLock);
    KeInitializeEvent(&initiator->SlotFreed, NotificationEvent, FALSE);
    KeInitializeEvent(&initiator->WritesDone, NotificationEvent, initiator->Config.write_count == 0);
    KeInitializeEvent(&initiator->AllDone, NotificationEvent, initiator->Total == 0);
    KeInitializeEvent(&initiator->ReceivesDrained, NotificationEvent, FALSE);
    if (initiator->Total > 0) {
        initiator->Completions = (PUCHAR)ExAllocatePool2(POOL_FLAG_NON_PAGED, (SIZE_T)initiator->Total, RPC_TAG_CONTEXT);
        if (initiator->Completions == NULL) {
            ExFreePoolWithTag(initiator, RPC_TAG_CONTEXT);
            return STATUS_INSUFFICIENT_RESOURCES;
        }
    }
    status = RpcOpenAdapter(&initiator->Adapter, initiator->Config.ipv4);
    if (NT_SUCCESS(status)) status = RpcStartThread(InitiatorMain, initiator, &initiator->Main);
    if (!NT_SUCCESS(status)) {
        RpcCloseAdapter(&initiator->Adapter);
        if (initiator->Completions != NULL) ExFreePoolWithTag(initiator->Completions, RPC_TAG_CONTEXT);
        ExFreePoolWithTag(initiator, RPC_TAG_CONTEXT);
        return status;
    }
    g_initiator = initiator;
    Driver->DriverUnload = InitiatorUnload;
    return STATUS_SUCCESS;
}
