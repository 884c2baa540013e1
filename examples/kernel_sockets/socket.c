/* SPDX-License-Identifier: MIT */
/* socket.c - sockets and the data path of a connection.
 *
 * All of a connection's work after it is set up happens at DISPATCH_LEVEL under its spin lock:
 * the CQ notification polls the CQ, hands bytes to pending RECEIVEs, posts the receives the
 * program has emptied again, and posts what pending SENDs have left as credits allow; a SEND or
 * RECEIVE request does the same from its dispatch routine. IRPs are completed after the lock is
 * released. */
#include "precomp.h"

#ifdef ALLOC_PRAGMA
#pragma alloc_text(PAGE, NksSocketCreate)
#pragma alloc_text(PAGE, NksSocketDestroy)
#pragma alloc_text(PAGE, NksSocketClose)
#pragma alloc_text(PAGE, NksSocketCloseAll)
#pragma alloc_text(PAGE, NksConnectionPrepare)
#pragma alloc_text(PAGE, NksConnectionStart)
#pragma alloc_text(PAGE, NksConnect)
#endif

/* A SEND's progress, kept in the IRP while the socket holds it. */
#define NKS_IRP_SOCKET 0   /* the socket, whose reference the IRP holds */
#define NKS_IRP_POSTED 1   /* bytes posted */
#define NKS_IRP_IN_FLIGHT 2 /* its messages posted and not completed */
#define NKS_IRP_STATUS 3   /* why it ended short; 0 while it has not */

static ULONG_PTR NksIrpValue(_In_ PIRP Irp, _In_ ULONG Slot)
{
    return (ULONG_PTR)Irp->Tail.Overlay.DriverContext[Slot];
}

static VOID NksIrpSetValue(_Inout_ PIRP Irp, _In_ ULONG Slot, _In_ ULONG_PTR Value)
{
    Irp->Tail.Overlay.DriverContext[Slot] = (PVOID)Value;
}

static const NDKSOCK_SEND_IN *NksSendInput(_In_ PIRP Irp)
{
    return (const NDKSOCK_SEND_IN *)Irp->AssociatedIrp.SystemBuffer;
}

/* ---- IRPs a socket keeps -------------------------------------------------------------------- */

_IRQL_requires_max_(DISPATCH_LEVEL)
static VOID NksCompleteSocketIrp(_Inout_ PIRP Irp)
{
    PNKS_SOCKET socket = (PNKS_SOCKET)Irp->Tail.Overlay.DriverContext[NKS_IRP_SOCKET];

    if (Irp->IoStatus.Status == STATUS_CANCELLED) {
        InterlockedIncrement64(&socket->Device->Stats.RequestsCancelled);
    }
    IoCompleteRequest(Irp, IO_NETWORK_INCREMENT);
    /* The last touch of the socket: its teardown may go on from here. */
    ExReleaseRundownProtection(&socket->Rundown);
}

_Use_decl_annotations_
VOID NksDeferCompletion(PLIST_ENTRY Done, PIRP Irp, NTSTATUS Status, ULONG_PTR Information)
{
    Irp->IoStatus.Status = Status;
    Irp->IoStatus.Information = Information;
    InsertTailList(Done, &Irp->Tail.Overlay.ListEntry);
}

_Use_decl_annotations_
VOID NksCompleteIrps(PLIST_ENTRY Done)
{
    while (!IsListEmpty(Done)) {
        PLIST_ENTRY entry = RemoveHeadList(Done);
        NksCompleteSocketIrp(CONTAINING_RECORD(entry, IRP, Tail.Overlay.ListEntry));
    }
}

/* The cancel routine of every queue of a socket. */
_Requires_lock_held_(_Global_cancel_spin_lock_)
_Releases_lock_(_Global_cancel_spin_lock_)
static DRIVER_CANCEL NksCancelIrp;

_Use_decl_annotations_
static VOID NksCancelIrp(PDEVICE_OBJECT DeviceObject, PIRP Irp)
{
    PNKS_SOCKET socket = (PNKS_SOCKET)Irp->Tail.Overlay.DriverContext[NKS_IRP_SOCKET];
    KIRQL irql;

    UNREFERENCED_PARAMETER(DeviceObject);
    IoReleaseCancelSpinLock(Irp->CancelIrql);
    KeAcquireSpinLock(&socket->Lock, &irql);
    /* Still queued, or already off its queue and linked to itself by a dequeuer that lost the
     * race for it: either way this unlinks it. */
    RemoveEntryList(&Irp->Tail.Overlay.ListEntry);
    KeReleaseSpinLock(&socket->Lock, irql);
    Irp->IoStatus.Status = STATUS_CANCELLED;
    Irp->IoStatus.Information = 0;
    NksCompleteSocketIrp(Irp);
}

_Use_decl_annotations_
NTSTATUS NksQueueIrpLocked(PNKS_SOCKET Socket, PLIST_ENTRY Queue, PIRP Irp)
{
    Irp->Tail.Overlay.DriverContext[NKS_IRP_SOCKET] = Socket;
    IoSetCancelRoutine(Irp, NksCancelIrp);
    if (Irp->Cancel && IoSetCancelRoutine(Irp, NULL) != NULL) {
        /* Cancelled before the routine was in place: nobody else will complete it. */
        return STATUS_CANCELLED;
    }
    /* If a cancel routine has been called meanwhile, it waits for our lock and finds it here. */
    IoMarkIrpPending(Irp);
    InsertTailList(Queue, &Irp->Tail.Overlay.ListEntry);
    return STATUS_PENDING;
}

_Use_decl_annotations_
PIRP NksDequeueIrpLocked(PLIST_ENTRY Queue)
{
    while (!IsListEmpty(Queue)) {
        PLIST_ENTRY entry = RemoveHeadList(Queue);
        PIRP irp = CONTAINING_RECORD(entry, IRP, Tail.Overlay.ListEntry);
        if (IoSetCancelRoutine(irp, NULL) != NULL) {
            return irp;
        }
        /* Its cancel routine runs: the IRP is the routine's, which will unlink it from itself. */
        InitializeListHead(entry);
    }
    return NULL;
}

/* ---- the state of a connection ------------------------------------------------------------- */

/* Why the connection cannot carry any more data, or STATUS_SUCCESS while it can. */
_Requires_lock_held_(Socket->Lock)
static NTSTATUS NksStopReasonLocked(_In_ const NKS_SOCKET *Socket)
{
    if (Socket->Error != STATUS_SUCCESS) {
        return Socket->Error;
    }
    if (Socket->PeerDisconnected) {
        return STATUS_CONNECTION_DISCONNECTED;
    }
    if (Socket->Closing) {
        return STATUS_CANCELLED;
    }
    return STATUS_SUCCESS;
}

_Requires_lock_held_(Socket->Lock)
static BOOLEAN NksDrainedLocked(_In_ const NKS_SOCKET *Socket)
{
    return Socket->CqDead || (Socket->PostedReceives == 0 && Socket->PostedSends == 0);
}

/* Completes (cancelled) whatever is still posted. A QP that failed does so itself; one whose post
 * failed inline, or whose peer went away, needs the flush. */
_Requires_lock_held_(Socket->Lock)
static VOID NksFlushLocked(_Inout_ PNKS_SOCKET Socket)
{
    if (Socket->Qp != NULL && !Socket->Flushed) {
        Socket->Flushed = TRUE;
        Socket->Qp->Dispatch->NdkFlush(Socket->Qp);
    }
}

_Requires_lock_held_(Socket->Lock)
static VOID NksFailLocked(_Inout_ PNKS_SOCKET Socket, _In_ NTSTATUS Status)
{
    if (Socket->Error != STATUS_SUCCESS) {
        return;
    }
    Socket->Error = Status;
    InterlockedIncrement64(&Socket->Device->Stats.ConnectionsFailed);
    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_WARNING_LEVEL, "ndksock: socket %lu failed with 0x%08lX\n", Socket->Id,
               (ULONG)Status);
    NksFlushLocked(Socket);
}

/* A request completed with an error. */
_Requires_lock_held_(Socket->Lock)
static VOID NksRequestFailedLocked(_Inout_ PNKS_SOCKET Socket, _In_ NTSTATUS Status)
{
    if (Status == STATUS_CANCELLED) {
        /* Our own flush cancels what was posted when we close, after the peer disconnected and
         * after a failure; otherwise the QP failed at the peer's end and took ours with it. */
        if (Socket->Closing || Socket->PeerDisconnected || Socket->Error != STATUS_SUCCESS) {
            return;
        }
        Status = STATUS_CONNECTION_ABORTED;
    }
    NksFailLocked(Socket, Status);
}

/* ---- receiving ----------------------------------------------------------------------------- */

_Requires_lock_held_(Socket->Lock)
static NTSTATUS NksPostReceiveLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PNKS_RECEIVE_SLOT Slot)
{
    NDK_SGE sge;
    NTSTATUS status;

    /* Privileged-token SGEs carry the adapter's logical address of the bytes. */
    sge.LogicalAddress.QuadPart =
        (LONGLONG)NksBufferLogical(&Socket->ReceiveRing, (SIZE_T)(Slot->Va - Socket->ReceiveRing.Va));
    sge.Length = NKS_SLOT_SIZE;
    sge.MemoryRegionToken = Socket->PrivilegedToken;
    status = Socket->Qp->Dispatch->NdkReceive(Socket->Qp, Slot, &sge, 1);
    if (NT_SUCCESS(status)) {
        Slot->Posted = TRUE;
        ++Socket->PostedReceives;
    }
    return status;
}

/* A receive buffer emptied goes back to the QP: one the program read, with a credit owed to the
 * peer for it; one a credit message took, with none. */
_Requires_lock_held_(Socket->Lock)
static VOID NksRecycleReceiveLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PNKS_RECEIVE_SLOT Slot, _In_ BOOLEAN Grant)
{
    NTSTATUS status;

    if (NksStopReasonLocked(Socket) != STATUS_SUCCESS || Socket->CqDead) {
        return; /* the connection is over: the buffer stays idle */
    }
    status = NksPostReceiveLocked(Socket, Slot);
    if (!NT_SUCCESS(status)) {
        NksFailLocked(Socket, status);
        return;
    }
    if (Grant) {
        ++Socket->PendingCredits;
    }
}

_Requires_lock_held_(Socket->Lock)
static VOID NksReceiveCompletedLocked(_Inout_ PNKS_SOCKET Socket, _In_ const NDK_RESULT_EX *Result)
{
    PNKS_RECEIVE_SLOT slot = (PNKS_RECEIVE_SLOT)Result->RequestContext;
    const NKS_MESSAGE_HEADER *header = (const NKS_MESSAGE_HEADER *)slot->Va;

    NT_ASSERT(slot->Posted && Socket->PostedReceives > 0);
    slot->Posted = FALSE;
    --Socket->PostedReceives;
    if (!NT_SUCCESS(Result->Status)) {
        NksRequestFailedLocked(Socket, Result->Status);
        return;
    }
    if (Result->BytesTransferred < sizeof(*header) || header->Magic != NKS_MESSAGE_MAGIC ||
        header->Length != Result->BytesTransferred - sizeof(*header) ||
        header->Sequence != Socket->NextReceiveSequence ||
        (header->Type != NKS_MESSAGE_DATA && header->Type != NKS_MESSAGE_CREDIT) ||
        Socket->SendCredits + header->Credits > Socket->PeerReceiveDepth) {
        /* Not our protocol, or a peer that grants receives it never had. */
        NksFailLocked(Socket, STATUS_DATA_ERROR);
        return;
    }
    ++Socket->NextReceiveSequence;
    Socket->SendCredits += header->Credits;
    Socket->PeerCreditEcho = header->CreditEcho;
    if (header->Type == NKS_MESSAGE_CREDIT) {
        /* Posted again before anything we send can echo it. */
        NksRecycleReceiveLocked(Socket, slot, FALSE);
        ++Socket->CreditMessagesReceived;
        return;
    }
    if (header->Length == 0) {
        NksRecycleReceiveLocked(Socket, slot, TRUE);
        return;
    }
    ++Socket->MessagesReceived;
    slot->Offset = sizeof(*header);
    slot->End = Result->BytesTransferred;
    InsertTailList(&Socket->ReadySlots, &slot->Link);
    Socket->BufferedBytes += header->Length;
}

/* Copies what has arrived into a RECEIVE, emptied buffers going back to the QP. */
_Requires_lock_held_(Socket->Lock)
static VOID NksCopyOutLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PIRP Irp, _Inout_ PLIST_ENTRY Done)
{
    PIO_STACK_LOCATION stack = IoGetCurrentIrpStackLocation(Irp);
    ULONG room = stack->Parameters.DeviceIoControl.OutputBufferLength;
    PUCHAR out = (PUCHAR)Irp->AssociatedIrp.SystemBuffer;
    ULONG copied = 0;

    while (copied < room && !IsListEmpty(&Socket->ReadySlots)) {
        PNKS_RECEIVE_SLOT slot = CONTAINING_RECORD(Socket->ReadySlots.Flink, NKS_RECEIVE_SLOT, Link);
        ULONG take = min(room - copied, slot->End - slot->Offset);
        RtlCopyMemory(out + copied, slot->Va + slot->Offset, take);
        copied += take;
        slot->Offset += take;
        Socket->BufferedBytes -= take;
        if (slot->Offset == slot->End) {
            RemoveEntryList(&slot->Link);
            NksRecycleReceiveLocked(Socket, slot, TRUE);
        }
    }
    Socket->BytesReceived += copied;
    InterlockedExchangeAdd64(&Socket->Device->Stats.BytesReceived, copied);
    NksDeferCompletion(Done, Irp, STATUS_SUCCESS, copied);
}

_Requires_lock_held_(Socket->Lock)
static VOID NksSatisfyReceivesLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PLIST_ENTRY Done)
{
    while (!IsListEmpty(&Socket->ReceiveIrps)) {
        NTSTATUS ending = STATUS_PENDING;
        PIRP irp;

        if (IsListEmpty(&Socket->ReadySlots)) {
            if (Socket->Error != STATUS_SUCCESS) {
                ending = Socket->Error;
            } else if (Socket->PeerDisconnected && Socket->PostedReceives == 0) {
                /* Every message sent before the disconnect has been read: the end of the stream. */
                ending = STATUS_SUCCESS;
            } else {
                return;
            }
        }
        irp = NksDequeueIrpLocked(&Socket->ReceiveIrps);
        if (irp == NULL) {
            return;
        }
        if (ending != STATUS_PENDING) {
            NksDeferCompletion(Done, irp, ending, 0);
        } else {
            NksCopyOutLocked(Socket, irp, Done);
        }
    }
}

/* ---- sending ------------------------------------------------------------------------------- */

_Requires_lock_held_(Socket->Lock)
static NTSTATUS NksPostMessageLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PNKS_SEND_SLOT Slot, _In_ USHORT Type,
                                     _In_ USHORT Credits, _In_reads_bytes_(Length) const UCHAR *Payload,
                                     _In_ ULONG Length)
{
    NKS_MESSAGE_HEADER *header = (NKS_MESSAGE_HEADER *)Slot->Va;
    NDK_SGE sge;
    NTSTATUS status;

    NT_ASSERT(Length <= NKS_MAX_PAYLOAD);
    header->Magic = NKS_MESSAGE_MAGIC;
    header->Type = Type;
    header->Credits = Credits;
    header->CreditEcho = (USHORT)Socket->CreditMessagesReceived;
    header->Length = Length;
    header->Sequence = Socket->NextSendSequence;
    if (Length > 0) {
        RtlCopyMemory(Slot->Va + sizeof(*header), Payload, Length);
    }
    /* The send ring is fast-registered: its SGEs carry virtual addresses and the MR's token. */
    sge.VirtualAddress = Slot->Va;
    sge.Length = (ULONG)sizeof(*header) + Length;
    sge.MemoryRegionToken = Socket->SendToken;
    status = Socket->Qp->Dispatch->NdkSend(Socket->Qp, Slot, &sge, 1, 0);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    Slot->InUse = TRUE;
    ++Socket->PostedSends;
    ++Socket->NextSendSequence;
    Socket->PendingCredits -= Credits;
    if (Type == NKS_MESSAGE_DATA) {
        --Socket->SendCredits;
        ++Socket->MessagesSent;
    } else {
        ++Socket->CreditMessagesSent;
    }
    return STATUS_SUCCESS;
}

_Requires_lock_held_(Socket->Lock)
static PNKS_SEND_SLOT NksTakeSendSlotLocked(_Inout_ PNKS_SOCKET Socket)
{
    PSINGLE_LIST_ENTRY entry = PopEntryList(&Socket->FreeSendSlots);

    return entry == NULL ? NULL : CONTAINING_RECORD(entry, NKS_SEND_SLOT, Link);
}

_Requires_lock_held_(Socket->Lock)
static VOID NksReturnSendSlotLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PNKS_SEND_SLOT Slot)
{
    Slot->InUse = FALSE;
    Slot->Irp = NULL;
    PushEntryList(&Socket->FreeSendSlots, &Slot->Link);
}

/* The SEND that has bytes left to post: the last active one, or the first queued one (taken off
 * the queue, so no longer cancellable, only once a message of it is about to go). */
_Requires_lock_held_(Socket->Lock)
static PIRP NksNextSendLocked(_Inout_ PNKS_SOCKET Socket, _In_ BOOLEAN Take)
{
    PIRP irp;

    if (!IsListEmpty(&Socket->ActiveSends)) {
        irp = CONTAINING_RECORD(Socket->ActiveSends.Blink, IRP, Tail.Overlay.ListEntry);
        if (NksIrpValue(irp, NKS_IRP_POSTED) < NksSendInput(irp)->Length && NksIrpValue(irp, NKS_IRP_STATUS) == 0) {
            return irp;
        }
    }
    if (!Take) {
        return IsListEmpty(&Socket->SendIrps) ? NULL
                                              : CONTAINING_RECORD(Socket->SendIrps.Flink, IRP, Tail.Overlay.ListEntry);
    }
    irp = NksDequeueIrpLocked(&Socket->SendIrps);
    if (irp != NULL) {
        InsertTailList(&Socket->ActiveSends, &irp->Tail.Overlay.ListEntry);
    }
    return irp;
}

/* An active SEND is over once each of its messages has completed and it posts no more. */
_Requires_lock_held_(Socket->Lock)
static VOID NksSendProgressLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PIRP Irp, _Inout_ PLIST_ENTRY Done)
{
    const NDKSOCK_SEND_IN *input = NksSendInput(Irp);
    ULONG posted = (ULONG)NksIrpValue(Irp, NKS_IRP_POSTED);
    NTSTATUS status = (NTSTATUS)NksIrpValue(Irp, NKS_IRP_STATUS);

    if (NksIrpValue(Irp, NKS_IRP_IN_FLIGHT) != 0 || (posted < input->Length && status == STATUS_SUCCESS)) {
        return;
    }
    RemoveEntryList(&Irp->Tail.Overlay.ListEntry);
    if (status != STATUS_SUCCESS) {
        NksDeferCompletion(Done, Irp, status, 0);
        return;
    }
    /* The output overwrites the input in the system buffer, now that every byte is sent. */
    ((NDKSOCK_SEND_OUT *)Irp->AssociatedIrp.SystemBuffer)->BytesSent = posted;
    Socket->BytesSent += posted;
    InterlockedExchangeAdd64(&Socket->Device->Stats.BytesSent, posted);
    NksDeferCompletion(Done, Irp, STATUS_SUCCESS, sizeof(NDKSOCK_SEND_OUT));
}

/* The connection carries no more data: SENDs end with the reason. */
_Requires_lock_held_(Socket->Lock)
static VOID NksStopSendsLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PLIST_ENTRY Done)
{
    NTSTATUS reason = NksStopReasonLocked(Socket);
    PIRP irp;

    NT_ASSERT(reason != STATUS_SUCCESS);
    while ((irp = NksDequeueIrpLocked(&Socket->SendIrps)) != NULL) {
        NksDeferCompletion(Done, irp, reason, 0);
    }
    irp = NksNextSendLocked(Socket, FALSE);
    if (irp != NULL && !IsListEmpty(&Socket->ActiveSends) &&
        irp == CONTAINING_RECORD(Socket->ActiveSends.Blink, IRP, Tail.Overlay.ListEntry)) {
        /* Part of it is posted: it ends when those messages have completed. */
        NksIrpSetValue(irp, NKS_IRP_STATUS, (ULONG_PTR)(ULONG)reason);
        NksSendProgressLocked(Socket, irp, Done);
    }
}

_Requires_lock_held_(Socket->Lock)
static BOOLEAN NksPostDataLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PNKS_SEND_SLOT Slot, _Inout_ PIRP Irp)
{
    const NDKSOCK_SEND_IN *input = NksSendInput(Irp);
    ULONG posted = (ULONG)NksIrpValue(Irp, NKS_IRP_POSTED);
    ULONG chunk = min(input->Length - posted, NKS_MAX_PAYLOAD);
    USHORT credits = (USHORT)min(Socket->PendingCredits, MAXUSHORT);
    NTSTATUS status;

    status = NksPostMessageLocked(Socket, Slot, NKS_MESSAGE_DATA, credits, input->Data + posted, chunk);
    if (!NT_SUCCESS(status)) {
        NksReturnSendSlotLocked(Socket, Slot);
        NksFailLocked(Socket, status);
        return FALSE;
    }
    Slot->Irp = Irp;
    NksIrpSetValue(Irp, NKS_IRP_POSTED, posted + chunk);
    NksIrpSetValue(Irp, NKS_IRP_IN_FLIGHT, NksIrpValue(Irp, NKS_IRP_IN_FLIGHT) + 1);
    return TRUE;
}

/* Posts as much data as credits allow, and a credit message when credits are owed and no data
 * carries them. Credit messages go to the peer's control receive, one at a time: the next waits
 * until a message of the peer's echoes the last, that is, until its receive is posted again. */
_Requires_lock_held_(Socket->Lock)
static VOID NksPumpLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PLIST_ENTRY Done)
{
    for (;;) {
        BOOLEAN waiting, credit, room;
        PNKS_SEND_SLOT slot;
        PIRP irp;

        if (NksStopReasonLocked(Socket) != STATUS_SUCCESS) {
            NksStopSendsLocked(Socket, Done);
            return;
        }
        if (!Socket->Connected || Socket->CqDead) {
            return;
        }
        waiting = NksNextSendLocked(Socket, FALSE) != NULL;
        credit = Socket->SendCredits > 0;
        room = Socket->FreeSendSlots.Next != NULL;
        if (waiting && credit && room) {
            irp = NksNextSendLocked(Socket, TRUE);
            if (irp == NULL) {
                continue; /* the queued ones were being cancelled */
            }
            slot = NksTakeSendSlotLocked(Socket);
            if (!NksPostDataLocked(Socket, slot, irp)) {
                continue; /* failed: the next round ends the SENDs */
            }
            Socket->Stalled = FALSE;
            continue;
        }
        if (waiting && !credit && !Socket->Stalled) {
            Socket->Stalled = TRUE;
            ++Socket->CreditStalls;
        }
        if (Socket->PendingCredits >= NKS_GRANT_THRESHOLD &&
            (USHORT)((USHORT)Socket->CreditMessagesSent - Socket->PeerCreditEcho) < NKS_CONTROL_RECEIVES && room) {
            USHORT credits = (USHORT)min(Socket->PendingCredits, MAXUSHORT);
            NTSTATUS status;

            slot = NksTakeSendSlotLocked(Socket);
            status = NksPostMessageLocked(Socket, slot, NKS_MESSAGE_CREDIT, credits, NULL, 0);
            if (!NT_SUCCESS(status)) {
                NksReturnSendSlotLocked(Socket, slot);
                NksFailLocked(Socket, status);
            }
            continue;
        }
        return;
    }
}

_Requires_lock_held_(Socket->Lock)
static VOID NksSendCompletedLocked(_Inout_ PNKS_SOCKET Socket, _In_ const NDK_RESULT_EX *Result,
                                   _Inout_ PLIST_ENTRY Done)
{
    PNKS_SEND_SLOT slot = (PNKS_SEND_SLOT)Result->RequestContext;
    PIRP irp = slot->Irp;

    NT_ASSERT(slot->InUse && Socket->PostedSends > 0);
    --Socket->PostedSends;
    NksReturnSendSlotLocked(Socket, slot);
    if (!NT_SUCCESS(Result->Status)) {
        NksRequestFailedLocked(Socket, Result->Status);
    }
    if (irp == NULL) {
        return;
    }
    NksIrpSetValue(irp, NKS_IRP_IN_FLIGHT, NksIrpValue(irp, NKS_IRP_IN_FLIGHT) - 1);
    if (!NT_SUCCESS(Result->Status) && NksIrpValue(irp, NKS_IRP_STATUS) == 0) {
        NTSTATUS reason = NksStopReasonLocked(Socket);
        NksIrpSetValue(irp, NKS_IRP_STATUS, (ULONG_PTR)(ULONG)(reason != STATUS_SUCCESS ? reason : Result->Status));
    }
    NksSendProgressLocked(Socket, irp, Done);
}

/* The CQ died: nothing posted will complete, so whatever waits for it ends now. */
_Requires_lock_held_(Socket->Lock)
static VOID NksAbandonPostedLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PLIST_ENTRY Done)
{
    ULONG i;

    for (i = 0; i < NKS_RECEIVE_SLOTS; ++i) {
        Socket->ReceiveSlots[i].Posted = FALSE;
    }
    Socket->PostedReceives = 0;
    for (i = 0; i < NKS_SEND_DEPTH; ++i) {
        PNKS_SEND_SLOT slot = &Socket->SendSlots[i];
        PIRP irp = slot->Irp;
        if (!slot->InUse) {
            continue;
        }
        NksReturnSendSlotLocked(Socket, slot);
        if (irp != NULL) {
            NksIrpSetValue(irp, NKS_IRP_IN_FLIGHT, NksIrpValue(irp, NKS_IRP_IN_FLIGHT) - 1);
            if (NksIrpValue(irp, NKS_IRP_STATUS) == 0) {
                NksIrpSetValue(irp, NKS_IRP_STATUS, (ULONG_PTR)(ULONG)Socket->Error);
            }
            NksSendProgressLocked(Socket, irp, Done);
        }
    }
    Socket->PostedSends = 0;
}

/* ---- the CQ and the connection's events ---------------------------------------------------- */

_Requires_lock_held_(Socket->Lock)
static VOID NksEvaluateLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PLIST_ENTRY Done)
{
    NksSatisfyReceivesLocked(Socket, Done);
    NksPumpLocked(Socket, Done);
    /* The pump's credits may have failed the connection, which the receives then report. */
    NksSatisfyReceivesLocked(Socket, Done);
    if (Socket->Closing && NksDrainedLocked(Socket)) {
        KeSetEvent(&Socket->Drained, IO_NO_INCREMENT, FALSE);
    }
}

_Requires_lock_held_(Socket->Lock)
static VOID NksPollLocked(_Inout_ PNKS_SOCKET Socket, _Inout_ PLIST_ENTRY Done)
{
    NDK_RESULT_EX results[NKS_POLL_BATCH];
    ULONG count;
    ULONG i;

    do {
        count = Socket->Cq->Dispatch->NdkGetCqResultsEx(Socket->Cq, results, RTL_NUMBER_OF(results));
        for (i = 0; i < count; ++i) {
            const NDK_RESULT_EX *result = &results[i];
            PUCHAR context = (PUCHAR)result->RequestContext;
            /* Told apart by context, which a flushed request keeps whatever its Type says. */
            if (context >= (PUCHAR)&Socket->ReceiveSlots[0] &&
                context < (PUCHAR)&Socket->ReceiveSlots[NKS_RECEIVE_SLOTS]) {
                NksReceiveCompletedLocked(Socket, result);
            } else if (context >= (PUCHAR)&Socket->SendSlots[0] &&
                       context < (PUCHAR)&Socket->SendSlots[NKS_SEND_DEPTH]) {
                NksSendCompletedLocked(Socket, result, Done);
            } else {
                /* The fast register of the send ring. */
                NT_ASSERT(context == (PUCHAR)Socket && Socket->PostedSends > 0);
                --Socket->PostedSends;
                if (!NT_SUCCESS(result->Status)) {
                    NksRequestFailedLocked(Socket, result->Status);
                }
            }
        }
    } while (count > 0);
}

/* NDK_FN_CQ_NOTIFICATION_CALLBACK */
_IRQL_requires_max_(DISPATCH_LEVEL)
static VOID NksCqNotification(_In_ PVOID Context, _In_ NTSTATUS CqStatus)
{
    PNKS_SOCKET socket = (PNKS_SOCKET)Context;
    LIST_ENTRY done;
    KIRQL irql;

    InitializeListHead(&done);
    KeAcquireSpinLock(&socket->Lock, &irql);
    if (NT_SUCCESS(CqStatus)) {
        NksPollLocked(socket, &done);
    } else {
        /* STATUS_BUFFER_OVERFLOW (an overrun) or STATUS_INTERNAL_ERROR (the adapter failed). */
        socket->CqDead = TRUE;
        NksFailLocked(socket, CqStatus);
        NksAbandonPostedLocked(socket, &done);
    }
    NksEvaluateLocked(socket, &done);
    /* Armed under the lock: a teardown that saw the CQ drained under it never races this arm.
     * An entry that arrived after the last poll fires the arm at once. */
    if (!socket->CqDead && !(socket->Closing && NksDrainedLocked(socket))) {
        socket->Cq->Dispatch->NdkArmCq(socket->Cq, NDK_CQ_NOTIFY_ANY);
    }
    KeReleaseSpinLock(&socket->Lock, irql);
    NksCompleteIrps(&done);
}

_Use_decl_annotations_
VOID NksDisconnectEvent(PVOID Context, ULONG Reason)
{
    PNKS_SOCKET socket = (PNKS_SOCKET)Context;
    LIST_ENTRY done;
    KIRQL irql;

    InitializeListHead(&done);
    KeAcquireSpinLock(&socket->Lock, &irql);
    socket->PeerDisconnected = TRUE;
    socket->DisconnectReason = Reason;
    /* The provider leaves our QP alone. Flushed, what we posted completes behind every message
     * that arrived before the disconnect, so a RECEIVE reports the end only after those. */
    NksFlushLocked(socket);
    NksEvaluateLocked(socket, &done);
    KeReleaseSpinLock(&socket->Lock, irql);
    NksCompleteIrps(&done);
}

/* ---- requests ------------------------------------------------------------------------------ */

_Use_decl_annotations_
NTSTATUS NksSend(PNKS_SOCKET Socket, PIRP Irp)
{
    LIST_ENTRY done;
    NTSTATUS status;
    KIRQL irql;

    Irp->IoStatus.Information = 0;
    if (Socket->Kind != NksConnectionSocket) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    InitializeListHead(&done);
    KeAcquireSpinLock(&Socket->Lock, &irql);
    status = NksStopReasonLocked(Socket);
    if (status == STATUS_SUCCESS) {
        NksIrpSetValue(Irp, NKS_IRP_POSTED, 0);
        NksIrpSetValue(Irp, NKS_IRP_IN_FLIGHT, 0);
        NksIrpSetValue(Irp, NKS_IRP_STATUS, 0);
        status = NksQueueIrpLocked(Socket, &Socket->SendIrps, Irp);
        if (status == STATUS_PENDING) {
            NksEvaluateLocked(Socket, &done);
        }
    }
    KeReleaseSpinLock(&Socket->Lock, irql);
    NksCompleteIrps(&done);
    return status;
}

_Use_decl_annotations_
NTSTATUS NksReceive(PNKS_SOCKET Socket, PIRP Irp)
{
    LIST_ENTRY done;
    NTSTATUS status;
    KIRQL irql;

    Irp->IoStatus.Information = 0;
    if (Socket->Kind != NksConnectionSocket) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    InitializeListHead(&done);
    KeAcquireSpinLock(&Socket->Lock, &irql);
    if (Socket->Closing) {
        status = STATUS_CANCELLED;
    } else {
        /* Queued even when bytes are there, behind earlier RECEIVEs, so that they keep their order. */
        status = NksQueueIrpLocked(Socket, &Socket->ReceiveIrps, Irp);
        if (status == STATUS_PENDING) {
            NksEvaluateLocked(Socket, &done);
        }
    }
    KeReleaseSpinLock(&Socket->Lock, irql);
    NksCompleteIrps(&done);
    return status;
}

/* ---- setting a connection up ----------------------------------------------------------------- */

_Use_decl_annotations_
VOID NksHelloInit(NKS_HELLO *Hello)
{
    RtlZeroMemory(Hello, sizeof(*Hello));
    Hello->Magic = NKS_HELLO_MAGIC;
    Hello->Version = NKS_HELLO_VERSION;
    Hello->ReceiveDepth = NKS_RECEIVE_DEPTH;
    Hello->SlotSize = NKS_SLOT_SIZE;
}

_Use_decl_annotations_
BOOLEAN NksHelloValid(const NKS_HELLO *Hello, ULONG Length)
{
    return Length >= sizeof(*Hello) && Hello->Magic == NKS_HELLO_MAGIC && Hello->Version == NKS_HELLO_VERSION &&
           Hello->ReceiveDepth >= 1 && Hello->SlotSize == NKS_SLOT_SIZE;
}

_Use_decl_annotations_
NTSTATUS NksConnectionPrepare(PNKS_SOCKET Socket)
{
    NDK_ADAPTER *adapter = Socket->Adapter->Ndk;
    const NDK_ADAPTER_INFO *info = &Socket->Adapter->Info;
    NKS_CALL call;
    NTSTATUS status;
    KIRQL irql;
    ULONG i;

    PAGED_CODE();
    if (info->MaxReceiveQueueDepth < NKS_RECEIVE_SLOTS || info->MaxInitiatorQueueDepth < NKS_SEND_DEPTH + 1 ||
        info->MaxCqDepth < NKS_CQ_DEPTH) {
        return STATUS_NOT_SUPPORTED;
    }
    NksCallInit(&call);
    status = NksCallFinishCreate(&call, adapter->Dispatch->NdkCreatePd(adapter, NksCallCreateDone, &call, &Socket->Pd),
                                 (PVOID *)&Socket->Pd);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    Socket->Pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(Socket->Pd, &Socket->PrivilegedToken);
    status = NksBufferCreate(Socket->Adapter, &Socket->ReceiveRing, (SIZE_T)NKS_RECEIVE_SLOTS * NKS_SLOT_SIZE);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    status = NksBufferCreate(Socket->Adapter, &Socket->SendRing, (SIZE_T)NKS_SEND_DEPTH * NKS_SLOT_SIZE);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    if (Socket->SendRing.Lam->AdapterPageCount > info->FRMRPageCount) {
        return STATUS_NOT_SUPPORTED;
    }
    NksCallInit(&call);
    status = NksCallFinishCreate(&call,
                                 adapter->Dispatch->NdkCreateCq(adapter, NKS_CQ_DEPTH, NksCqNotification, Socket, NULL,
                                                                NksCallCreateDone, &call, &Socket->Cq),
                                 (PVOID *)&Socket->Cq);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    NksCallInit(&call);
    status = NksCallFinishCreate(&call,
                                 Socket->Pd->Dispatch->NdkCreateQp(Socket->Pd, Socket->Cq, Socket->Cq, Socket,
                                                                   NKS_RECEIVE_SLOTS, NKS_SEND_DEPTH + 1, 1, 1, 0,
                                                                   NksCallCreateDone, &call, &Socket->Qp),
                                 (PVOID *)&Socket->Qp);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    NksCallInit(&call);
    status = NksCallFinishCreate(&call, Socket->Pd->Dispatch->NdkCreateMr(Socket->Pd, TRUE, NksCallCreateDone, &call,
                                                                          &Socket->SendMr),
                                 (PVOID *)&Socket->SendMr);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    /* Local access only: the peer never reaches our memory, it only receives our sends. */
    NksCallInit(&call);
    status = NksCallFinish(&call, Socket->SendMr->Dispatch->NdkInitializeFastRegisterMr(
                                      Socket->SendMr, Socket->SendRing.Lam->AdapterPageCount, FALSE,
                                      NksCallRequestDone, &call));
    if (!NT_SUCCESS(status)) {
        return status;
    }
    for (i = 0; i < NKS_SEND_DEPTH; ++i) {
        Socket->SendSlots[i].Va = Socket->SendRing.Va + (SIZE_T)i * NKS_SLOT_SIZE;
        PushEntryList(&Socket->FreeSendSlots, &Socket->SendSlots[i].Link);
    }
    /* Every receive is posted before the connection exists: the peer may send as soon as it is
     * connected, and the data receives among them are the credits our hello grants. */
    KeAcquireSpinLock(&Socket->Lock, &irql);
    for (i = 0; i < NKS_RECEIVE_SLOTS && NT_SUCCESS(status); ++i) {
        Socket->ReceiveSlots[i].Va = Socket->ReceiveRing.Va + (SIZE_T)i * NKS_SLOT_SIZE;
        status = NksPostReceiveLocked(Socket, &Socket->ReceiveSlots[i]);
    }
    /* Armed even after a failed post: the teardown waits for the completions of those posted. */
    Socket->Cq->Dispatch->NdkArmCq(Socket->Cq, NDK_CQ_NOTIFY_ANY);
    KeReleaseSpinLock(&Socket->Lock, irql);
    return status;
}

_Use_decl_annotations_
VOID NksConnectionCredit(PNKS_SOCKET Socket, const NKS_HELLO *Peer)
{
    KIRQL irql;

    KeAcquireSpinLock(&Socket->Lock, &irql);
    Socket->PeerReceiveDepth = Peer->ReceiveDepth;
    Socket->SendCredits += Peer->ReceiveDepth;
    KeReleaseSpinLock(&Socket->Lock, irql);
}

_IRQL_requires_(PASSIVE_LEVEL)
static VOID NksConnectionAddresses(_Inout_ PNKS_SOCKET Socket)
{
    SOCKADDR_IN local;
    SOCKADDR_IN peer;
    ULONG length;
    KIRQL irql;

    RtlZeroMemory(&local, sizeof(local));
    RtlZeroMemory(&peer, sizeof(peer));
    length = sizeof(local);
    (VOID) Socket->Connector->Dispatch->NdkGetLocalAddress(Socket->Connector, (PSOCKADDR)&local, &length);
    length = sizeof(peer);
    (VOID) Socket->Connector->Dispatch->NdkGetPeerAddress(Socket->Connector, (PSOCKADDR)&peer, &length);
    KeAcquireSpinLock(&Socket->Lock, &irql);
    if (local.sin_family == AF_INET) {
        Socket->Local = local;
    }
    Socket->Peer = peer;
    KeReleaseSpinLock(&Socket->Lock, irql);
}

_Use_decl_annotations_
NTSTATUS NksConnectionStart(PNKS_SOCKET Socket)
{
    const NDK_LOGICAL_ADDRESS_MAPPING *lam = Socket->SendRing.Lam;
    LIST_ENTRY done;
    NTSTATUS status;
    KIRQL irql;

    PAGED_CODE();
    NksConnectionAddresses(Socket);
    InitializeListHead(&done);
    KeAcquireSpinLock(&Socket->Lock, &irql);
    Socket->Connected = TRUE;
    /* The first request on the initiator queue: every send after it finds the ring registered. */
    status = Socket->Qp->Dispatch->NdkFastRegister(Socket->Qp, Socket, Socket->SendMr, lam->AdapterPageCount,
                                                   lam->AdapterPageArray, Socket->SendRing.Fbo,
                                                   Socket->SendRing.Bytes, Socket->SendRing.Va, 0);
    if (NT_SUCCESS(status)) {
        ++Socket->PostedSends;
        Socket->SendToken = Socket->SendMr->Dispatch->NdkGetLocalTokenFromMr(Socket->SendMr);
        /* Messages may have arrived already, and with them credits to use or to return. */
        NksEvaluateLocked(Socket, &done);
    } else {
        NksFailLocked(Socket, status);
    }
    KeReleaseSpinLock(&Socket->Lock, irql);
    NksCompleteIrps(&done);
    return status;
}

_Use_decl_annotations_
NTSTATUS NksConnect(PNKS_DEVICE Device, PFILE_OBJECT Owner, const NDKSOCK_CONNECT_IN *Input,
                    NDKSOCK_SOCKET_OUT *Output)
{
    SOCKADDR_IN local;
    SOCKADDR_IN remote;
    NKS_HELLO hello;
    NKS_HELLO peer;
    ULONG peerLength = sizeof(peer);
    ULONG inboundReadLimit;
    ULONG outboundReadLimit;
    PNKS_SOCKET socket;
    NDK_ADAPTER *adapter;
    NKS_CALL call;
    NTSTATUS status;

    PAGED_CODE();
    RtlZeroMemory(Output, sizeof(*Output));
    status = NksParseAddress(Input->LocalAddress, FALSE, &local);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    status = NksParseAddress(Input->RemoteAddress, TRUE, &remote);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    status = NksSocketCreate(Device, Owner, NksConnectionSocket, &local, &socket);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    status = NksConnectionPrepare(socket);
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    adapter = socket->Adapter->Ndk;
    NksCallInit(&call);
    status = NksCallFinishCreate(&call, adapter->Dispatch->NdkCreateConnector(adapter, NksCallCreateDone, &call,
                                                                              &socket->Connector),
                                 (PVOID *)&socket->Connector);
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    NksAdapterReference(socket->Adapter);
    socket->ConnectorAdapter = socket->Adapter;
    NksHelloInit(&hello);
    /* No RDMA reads either way: inbound and outbound read limits of 0. */
    NksCallInit(&call);
    status = NksCallFinish(&call, socket->Connector->Dispatch->NdkConnect(
                                      socket->Connector, socket->Qp, (PSOCKADDR)&local, sizeof(local),
                                      (PSOCKADDR)&remote, sizeof(remote), 0, 0, &hello, sizeof(hello),
                                      NksCallRequestDone, &call));
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    status = socket->Connector->Dispatch->NdkGetConnectionData(socket->Connector, &inboundReadLimit,
                                                               &outboundReadLimit, &peer, &peerLength);
    if (!NT_SUCCESS(status) || !NksHelloValid(&peer, peerLength)) {
        status = STATUS_CONNECTION_REFUSED;
        goto Fail;
    }
    NksConnectionCredit(socket, &peer);
    NksCallInit(&call);
    status = NksCallFinish(&call, socket->Connector->Dispatch->NdkCompleteConnectEx(
                                      socket->Connector, NksDisconnectEvent, socket, NksCallRequestDone, &call));
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    status = NksConnectionStart(socket);
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    NksSocketInsert(Device, socket);
    Output->Socket = socket->Id;
    NksFormatAddress(&socket->Peer, Output->PeerAddress);
    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_INFO_LEVEL, "ndksock: socket %lu connected to %s\n", socket->Id,
               Output->PeerAddress);
    return STATUS_SUCCESS;

Fail:
    NksSocketDestroy(socket);
    return status;
}

/* ---- the socket table --------------------------------------------------------------------- */

_Use_decl_annotations_
NTSTATUS NksSocketCreate(PNKS_DEVICE Device, PFILE_OBJECT Owner, NKS_SOCKET_KIND Kind, const SOCKADDR_IN *Local,
                         PNKS_SOCKET *Socket)
{
    PNKS_SOCKET socket;
    NTSTATUS status;

    PAGED_CODE();
    *Socket = NULL;
    socket = (PNKS_SOCKET)ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(*socket), NKS_TAG_SOCKET);
    if (socket == NULL) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    InitializeListHead(&socket->TableLink);
    socket->Kind = Kind;
    socket->Owner = Owner;
    socket->Device = Device;
    ExInitializeRundownProtection(&socket->Rundown);
    KeInitializeSpinLock(&socket->Lock);
    KeInitializeEvent(&socket->Drained, NotificationEvent, FALSE);
    socket->Local = *Local;
    InitializeListHead(&socket->AcceptIrps);
    InitializeListHead(&socket->ReadySlots);
    InitializeListHead(&socket->ReceiveIrps);
    InitializeListHead(&socket->SendIrps);
    InitializeListHead(&socket->ActiveSends);
    status = NksAdapterOpen(Device, &Local->sin_addr, &socket->Adapter);
    if (!NT_SUCCESS(status)) {
        ExFreePoolWithTag(socket, NKS_TAG_SOCKET);
        return status;
    }
    InterlockedIncrement(&Device->Stats.SocketsOpen);
    InterlockedIncrement64(&Device->Stats.SocketsCreated);
    *Socket = socket;
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
VOID NksSocketInsert(PNKS_DEVICE Device, PNKS_SOCKET Socket)
{
    KIRQL irql;

    KeAcquireSpinLock(&Device->TableLock, &irql);
    /* Handles are not reused while the driver is loaded: a stale one finds nothing. */
    Socket->Id = ++Device->NextSocket;
    InsertTailList(&Device->Sockets, &Socket->TableLink);
    KeReleaseSpinLock(&Device->TableLock, irql);
}

_Use_decl_annotations_
PNKS_SOCKET NksSocketReference(PNKS_DEVICE Device, NDKSOCK_SOCKET Id, PFILE_OBJECT Owner)
{
    PNKS_SOCKET found = NULL;
    PLIST_ENTRY entry;
    KIRQL irql;

    KeAcquireSpinLock(&Device->TableLock, &irql);
    for (entry = Device->Sockets.Flink; entry != &Device->Sockets; entry = entry->Flink) {
        PNKS_SOCKET socket = CONTAINING_RECORD(entry, NKS_SOCKET, TableLink);
        if (socket->Id == Id && (Owner == NULL || socket->Owner == Owner)) {
            if (ExAcquireRundownProtection(&socket->Rundown)) {
                found = socket;
            }
            break;
        }
    }
    KeReleaseSpinLock(&Device->TableLock, irql);
    return found;
}

_Use_decl_annotations_
VOID NksSocketDereference(PNKS_SOCKET Socket)
{
    ExReleaseRundownProtection(&Socket->Rundown);
}

/* Takes a socket out of the table, so that no request can find it any more. */
_IRQL_requires_max_(DISPATCH_LEVEL)
static PNKS_SOCKET NksSocketRemove(_Inout_ PNKS_DEVICE Device, _In_ NDKSOCK_SOCKET Id, _In_opt_ PFILE_OBJECT Owner,
                                   _In_ BOOLEAN Any)
{
    PNKS_SOCKET found = NULL;
    PLIST_ENTRY entry;
    KIRQL irql;

    KeAcquireSpinLock(&Device->TableLock, &irql);
    for (entry = Device->Sockets.Flink; entry != &Device->Sockets; entry = entry->Flink) {
        PNKS_SOCKET socket = CONTAINING_RECORD(entry, NKS_SOCKET, TableLink);
        if ((Any || socket->Id == Id) && (Owner == NULL || socket->Owner == Owner)) {
            RemoveEntryList(&socket->TableLink);
            InitializeListHead(&socket->TableLink);
            found = socket;
            break;
        }
    }
    KeReleaseSpinLock(&Device->TableLock, irql);
    return found;
}

_Use_decl_annotations_
NTSTATUS NksSocketClose(PNKS_DEVICE Device, NDKSOCK_SOCKET Id, PFILE_OBJECT Owner)
{
    PNKS_SOCKET socket;

    PAGED_CODE();
    socket = NksSocketRemove(Device, Id, Owner, FALSE);
    if (socket == NULL) {
        return STATUS_INVALID_HANDLE;
    }
    NksSocketDestroy(socket);
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
VOID NksSocketCloseAll(PNKS_DEVICE Device, PFILE_OBJECT Owner)
{
    PNKS_SOCKET socket;

    PAGED_CODE();
    while ((socket = NksSocketRemove(Device, 0, Owner, TRUE)) != NULL) {
        NksSocketDestroy(socket);
    }
}

/* Ends a connection's traffic: its pending requests, a graceful disconnect, and every completion
 * of what it posted. */
_IRQL_requires_(PASSIVE_LEVEL)
static VOID NksConnectionShutdown(_Inout_ PNKS_SOCKET Socket)
{
    LIST_ENTRY done;
    BOOLEAN disconnect;
    BOOLEAN wait;
    NKS_CALL call;
    KIRQL irql;
    PIRP irp;

    PAGED_CODE();
    InitializeListHead(&done);
    KeAcquireSpinLock(&Socket->Lock, &irql);
    Socket->Closing = TRUE;
    while ((irp = NksDequeueIrpLocked(&Socket->ReceiveIrps)) != NULL) {
        NksDeferCompletion(&done, irp, STATUS_CANCELLED, 0);
    }
    NksEvaluateLocked(Socket, &done); /* ends the SENDs */
    disconnect = Socket->Connected && !Socket->PeerDisconnected && Socket->Error == STATUS_SUCCESS;
    KeReleaseSpinLock(&Socket->Lock, irql);
    NksCompleteIrps(&done);

    if (disconnect) {
        /* Graceful: what we sent has arrived before the peer hears of the disconnect. */
        NksCallInit(&call);
        (VOID) NksCallFinish(&call, Socket->Connector->Dispatch->NdkDisconnect(Socket->Connector, NksCallRequestDone,
                                                                               &call));
    }
    KeAcquireSpinLock(&Socket->Lock, &irql);
    NksFlushLocked(Socket);
    wait = !NksDrainedLocked(Socket);
    KeReleaseSpinLock(&Socket->Lock, irql);
    if (wait) {
        /* The CQ notification sees the flushed requests complete and signals it. */
        KeWaitForSingleObject(&Socket->Drained, Executive, KernelMode, FALSE, NULL);
    }
}

/* Closes a connection's objects, successors first: the connector holds the QP, the QP the CQ. */
_IRQL_requires_(PASSIVE_LEVEL)
static VOID NksConnectionRelease(_Inout_ PNKS_SOCKET Socket)
{
    NKS_CALL call;

    PAGED_CODE();
    if (Socket->Connector != NULL) {
        NksCallInit(&call);
        (VOID) NksCallFinish(&call, Socket->Connector->Dispatch->NdkCloseConnector(&Socket->Connector->Header,
                                                                                   NksCallCloseDone, &call));
        Socket->Connector = NULL;
    }
    if (Socket->ConnectorAdapter != NULL) {
        NksAdapterRelease(Socket->ConnectorAdapter);
        Socket->ConnectorAdapter = NULL;
    }
    if (Socket->Qp != NULL) {
        NksCallInit(&call);
        (VOID) NksCallFinish(&call, Socket->Qp->Dispatch->NdkCloseQp(&Socket->Qp->Header, NksCallCloseDone, &call));
        Socket->Qp = NULL;
    }
    if (Socket->Cq != NULL) {
        NksCallInit(&call);
        (VOID) NksCallFinish(&call, Socket->Cq->Dispatch->NdkCloseCq(&Socket->Cq->Header, NksCallCloseDone, &call));
        Socket->Cq = NULL;
    }
    if (Socket->SendMr != NULL) {
        NksCallInit(&call);
        (VOID) NksCallFinish(&call,
                             Socket->SendMr->Dispatch->NdkCloseMr(&Socket->SendMr->Header, NksCallCloseDone, &call));
        Socket->SendMr = NULL;
    }
    NksBufferDelete(Socket->Adapter, &Socket->SendRing);
    NksBufferDelete(Socket->Adapter, &Socket->ReceiveRing);
    if (Socket->Pd != NULL) {
        NksCallInit(&call);
        (VOID) NksCallFinish(&call, Socket->Pd->Dispatch->NdkClosePd(&Socket->Pd->Header, NksCallCloseDone, &call));
        Socket->Pd = NULL;
    }
}

_Use_decl_annotations_
VOID NksSocketDestroy(PNKS_SOCKET Socket)
{
    PNKS_DEVICE device = Socket->Device;

    PAGED_CODE();
    if (Socket->Kind == NksListenerSocket) {
        NksListenerShutdown(Socket);
    } else {
        NksConnectionShutdown(Socket);
    }
    /* Requests that found the socket before it left the table, IRPs whose cancel routines are
     * running, and (for a listener) accepts in progress. */
    ExWaitForRundownProtectionRelease(&Socket->Rundown);
    if (Socket->Kind == NksListenerSocket) {
        NksListenerRelease(Socket);
    } else {
        NksConnectionRelease(Socket);
    }
    NksAdapterRelease(Socket->Adapter);
    InterlockedDecrement(&device->Stats.SocketsOpen);
    ExFreePoolWithTag(Socket, NKS_TAG_SOCKET);
}

_Use_decl_annotations_
VOID NksSocketQuery(PNKS_SOCKET Socket, NDKSOCK_SOCKET_INFO *Info)
{
    SOCKADDR_IN local;
    SOCKADDR_IN peer;
    KIRQL irql;

    RtlZeroMemory(Info, sizeof(*Info));
    KeAcquireSpinLock(&Socket->Lock, &irql);
    Info->Socket = Socket->Id;
    if (Socket->Kind == NksListenerSocket) {
        Info->State = NDKSOCK_STATE_LISTENING;
    } else if (Socket->Error != STATUS_SUCCESS) {
        Info->State = NDKSOCK_STATE_FAILED;
    } else if (Socket->PeerDisconnected) {
        Info->State = NDKSOCK_STATE_DISCONNECTED;
    } else {
        Info->State = NDKSOCK_STATE_CONNECTED;
    }
    Info->Status = Socket->Error;
    Info->InterfaceIndex = Socket->Adapter->IfIndex;
    local = Socket->Local;
    peer = Socket->Peer;
    Info->ReceiveDepth = Socket->Kind == NksConnectionSocket ? NKS_RECEIVE_DEPTH : 0;
    Info->PeerReceiveDepth = Socket->PeerReceiveDepth;
    Info->SendCredits = Socket->SendCredits;
    Info->PostedReceives = Socket->PostedReceives;
    Info->BufferedBytes = Socket->BufferedBytes;
    Info->DisconnectReason = Socket->DisconnectReason;
    Info->BytesSent = Socket->BytesSent;
    Info->BytesReceived = Socket->BytesReceived;
    Info->MessagesSent = Socket->MessagesSent;
    Info->MessagesReceived = Socket->MessagesReceived;
    Info->CreditMessagesSent = Socket->CreditMessagesSent;
    Info->CreditMessagesReceived = Socket->CreditMessagesReceived;
    Info->CreditStalls = Socket->CreditStalls;
    KeReleaseSpinLock(&Socket->Lock, irql);
    NksFormatAddress(&local, Info->LocalAddress);
    NksFormatAddress(&peer, Info->PeerAddress);
}
