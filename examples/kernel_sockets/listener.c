/* SPDX-License-Identifier: MIT */
/* listener.c - listening sockets. The connect event arrives at DISPATCH_LEVEL, where nothing may
 * wait for the provider, so it only queues a work item; the work item opens the new connection's
 * own adapter, creates its objects and accepts at PASSIVE_LEVEL. */
#include "precomp.h"

#ifdef ALLOC_PRAGMA
#pragma alloc_text(PAGE, NksListen)
#pragma alloc_text(PAGE, NksListenerShutdown)
#pragma alloc_text(PAGE, NksListenerRelease)
#endif

/* One incoming connection on its way from the connect event to the work item. */
typedef struct _NKS_ACCEPT_WORK {
    PIO_WORKITEM Item;
    PNKS_SOCKET Listener; /* whose reference the work holds */
    NDK_CONNECTOR *Connector;
} NKS_ACCEPT_WORK, *PNKS_ACCEPT_WORK;

static IO_WORKITEM_ROUTINE NksAcceptWorker;

/* Refuses an incoming connection nobody will take. Allowed at DISPATCH_LEVEL: nothing waits for
 * the connector's close, which the adapter's close waits for in the end. */
_IRQL_requires_max_(DISPATCH_LEVEL)
static VOID NksRefuse(_Inout_ PNKS_DEVICE Device, _In_ NDK_CONNECTOR *Connector)
{
    (VOID) Connector->Dispatch->NdkReject(Connector, NULL, 0);
    (VOID) Connector->Dispatch->NdkCloseConnector(&Connector->Header, NksCloseIgnored, NULL);
    InterlockedIncrement64(&Device->Stats.ConnectionsRejected);
}

/* NDK_FN_CONNECT_EVENT_CALLBACK. Its context is the listener's adapter, which outlives both the
 * listener object and the socket: an event that comes while the socket closes finds no socket. */
_IRQL_requires_max_(DISPATCH_LEVEL)
static VOID NksConnectEvent(_In_ PVOID Context, _In_ NDK_CONNECTOR *Connector)
{
    PNKS_ADAPTER adapter = (PNKS_ADAPTER)Context;
    PNKS_SOCKET listener;
    PNKS_ACCEPT_WORK work = NULL;
    KIRQL irql;

    KeAcquireSpinLock(&adapter->Lock, &irql);
    listener = adapter->ListenerSocket;
    if (listener != NULL && !ExAcquireRundownProtection(&listener->Rundown)) {
        listener = NULL;
    }
    KeReleaseSpinLock(&adapter->Lock, irql);
    if (listener != NULL) {
        work = (PNKS_ACCEPT_WORK)ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(*work), NKS_TAG_ACCEPT);
        if (work != NULL) {
            work->Item = IoAllocateWorkItem(listener->Device->Self);
            if (work->Item == NULL) {
                ExFreePoolWithTag(work, NKS_TAG_ACCEPT);
                work = NULL;
            }
        }
    }
    if (work == NULL) {
        NksRefuse(adapter->Device, Connector);
        if (listener != NULL) {
            NksSocketDereference(listener);
        }
        return;
    }
    work->Listener = listener;
    work->Connector = Connector;
    IoQueueWorkItem(work->Item, NksAcceptWorker, DelayedWorkQueue, work);
}

/* Makes the connection a socket of the listener's open, or refuses it. The connector is the
 * socket's from the moment the socket exists, and its teardown closes it. */
_IRQL_requires_(PASSIVE_LEVEL)
static NTSTATUS NksAcceptConnection(_Inout_ PNKS_SOCKET Listener, _In_ NDK_CONNECTOR *Connector,
                                    _Outptr_result_maybenull_ PNKS_SOCKET *Accepted)
{
    PNKS_DEVICE device = Listener->Device;
    PNKS_SOCKET socket = NULL;
    NKS_HELLO hello;
    NKS_HELLO peer;
    ULONG peerLength = sizeof(peer);
    ULONG inboundReadLimit;
    ULONG outboundReadLimit;
    NKS_CALL call;
    NTSTATUS status;

    PAGED_CODE();
    *Accepted = NULL;
    status = Connector->Dispatch->NdkGetConnectionData(Connector, &inboundReadLimit, &outboundReadLimit, &peer,
                                                       &peerLength);
    if (NT_SUCCESS(status) && !NksHelloValid(&peer, peerLength)) {
        status = STATUS_CONNECTION_REFUSED;
    }
    if (NT_SUCCESS(status)) {
        /* On the listener's interface, but an adapter of its own, as every socket has. */
        status = NksSocketCreate(device, Listener->Owner, NksConnectionSocket, &Listener->Local, &socket);
    }
    if (NT_SUCCESS(status)) {
        status = NksConnectionPrepare(socket);
    }
    if (!NT_SUCCESS(status)) {
        NksRefuse(device, Connector);
        if (socket != NULL) {
            NksSocketDestroy(socket);
        }
        return status;
    }
    /* The connector stays on the listener's adapter, which the socket keeps open until it has
     * closed the connector. */
    socket->Connector = Connector;
    NksAdapterReference(Listener->Adapter);
    socket->ConnectorAdapter = Listener->Adapter;
    NksConnectionCredit(socket, &peer);
    NksHelloInit(&hello);
    NksCallInit(&call);
    status = NksCallFinish(&call, Connector->Dispatch->NdkAcceptEx(Connector, socket->Qp, 0, 0, &hello, sizeof(hello),
                                                                   NksDisconnectEvent, socket, NksCallRequestDone,
                                                                   &call));
    if (NT_SUCCESS(status)) {
        status = NksConnectionStart(socket);
    }
    if (!NT_SUCCESS(status)) {
        NksSocketDestroy(socket);
        return status;
    }
    *Accepted = socket;
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
static VOID NksAcceptWorker(PDEVICE_OBJECT DeviceObject, PVOID Context)
{
    PNKS_ACCEPT_WORK work = (PNKS_ACCEPT_WORK)Context;
    PNKS_SOCKET listener = work->Listener;
    NDK_CONNECTOR *connector = work->Connector;
    PNKS_DEVICE device = (PNKS_DEVICE)DeviceObject->DeviceExtension;
    PNKS_SOCKET socket = NULL;
    NTSTATUS status = STATUS_SUCCESS;
    LIST_ENTRY done;
    BOOLEAN room;
    KIRQL irql;
    PIRP irp;

    PAGED_CODE();
    /* Freed first: the work item is the I/O manager's, and the driver may unload as soon as the
     * listener's reference is dropped below. */
    IoFreeWorkItem(work->Item);
    ExFreePoolWithTag(work, NKS_TAG_ACCEPT);

    KeAcquireSpinLock(&listener->Lock, &irql);
    room = !listener->Closing && listener->AcceptedCount + listener->AcceptsInProgress < listener->Backlog;
    if (room) {
        ++listener->AcceptsInProgress;
    }
    KeReleaseSpinLock(&listener->Lock, irql);
    if (room) {
        status = NksAcceptConnection(listener, connector, &socket);
    } else {
        NksRefuse(device, connector);
    }
    if (socket != NULL) {
        NksSocketInsert(device, socket);
        InterlockedIncrement64(&device->Stats.ConnectionsAccepted);
        DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_INFO_LEVEL, "ndksock: listener %lu accepted socket %lu\n",
                   listener->Id, socket->Id);
    } else if (room) {
        DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_WARNING_LEVEL, "ndksock: listener %lu failed an accept: 0x%08lX\n",
                   listener->Id, (ULONG)status);
    }

    InitializeListHead(&done);
    KeAcquireSpinLock(&listener->Lock, &irql);
    if (room) {
        --listener->AcceptsInProgress;
    }
    if (socket != NULL) {
        irp = NksDequeueIrpLocked(&listener->AcceptIrps);
        if (irp != NULL) {
            NDKSOCK_SOCKET_OUT *output = (NDKSOCK_SOCKET_OUT *)irp->AssociatedIrp.SystemBuffer;
            RtlZeroMemory(output, sizeof(*output));
            output->Socket = socket->Id;
            NksFormatAddress(&socket->Peer, output->PeerAddress);
            NksDeferCompletion(&done, irp, STATUS_SUCCESS, sizeof(*output));
        } else {
            /* Kept for the next ACCEPT; a listener that closes meanwhile closes it. */
            NT_ASSERT(listener->AcceptedCount < NDKSOCK_MAX_BACKLOG);
            listener->Accepted[listener->AcceptedCount].Socket = socket->Id;
            listener->Accepted[listener->AcceptedCount].Peer = socket->Peer;
            ++listener->AcceptedCount;
        }
    }
    KeReleaseSpinLock(&listener->Lock, irql);
    NksCompleteIrps(&done);
    NksSocketDereference(listener);
}

_Use_decl_annotations_
NTSTATUS NksListen(PNKS_DEVICE Device, PFILE_OBJECT Owner, const NDKSOCK_LISTEN_IN *Input,
                   NDKSOCK_SOCKET_OUT *Output)
{
    NDK_LISTENER *listener = NULL;
    PNKS_SOCKET socket;
    PNKS_ADAPTER adapter;
    SOCKADDR_IN local;
    NKS_CALL call;
    NTSTATUS status;
    KIRQL irql;

    PAGED_CODE();
    RtlZeroMemory(Output, sizeof(*Output));
    if (Input->Backlog < 1 || Input->Backlog > NDKSOCK_MAX_BACKLOG) {
        return STATUS_INVALID_PARAMETER;
    }
    status = NksParseAddress(Input->Address, TRUE, &local);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    status = NksSocketCreate(Device, Owner, NksListenerSocket, &local, &socket);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    socket->Backlog = Input->Backlog;
    adapter = socket->Adapter;
    KeAcquireSpinLock(&adapter->Lock, &irql);
    adapter->ListenerSocket = socket;
    KeReleaseSpinLock(&adapter->Lock, irql);
    NksCallInit(&call);
    status = NksCallFinishCreate(&call,
                                 adapter->Ndk->Dispatch->NdkCreateListener(adapter->Ndk, NksConnectEvent, adapter,
                                                                           NksCallCreateDone, &call, &listener),
                                 (PVOID *)&listener);
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    adapter->Listener = listener;
    NksCallInit(&call);
    status = NksCallFinish(&call, listener->Dispatch->NdkListen(listener, (PSOCKADDR)&local, sizeof(local),
                                                                NksCallRequestDone, &call));
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    NksSocketInsert(Device, socket);
    Output->Socket = socket->Id;
    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_INFO_LEVEL, "ndksock: socket %lu listens on interface %lu\n", socket->Id,
               adapter->IfIndex);
    return STATUS_SUCCESS;

Fail:
    NksSocketDestroy(socket);
    return status;
}

_Use_decl_annotations_
NTSTATUS NksAccept(PNKS_SOCKET Listener, PIRP Irp)
{
    NDKSOCK_SOCKET_OUT *output = (NDKSOCK_SOCKET_OUT *)Irp->AssociatedIrp.SystemBuffer;
    NTSTATUS status;
    KIRQL irql;

    Irp->IoStatus.Information = 0;
    if (Listener->Kind != NksListenerSocket) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    KeAcquireSpinLock(&Listener->Lock, &irql);
    if (Listener->AcceptedCount > 0) {
        RtlZeroMemory(output, sizeof(*output));
        output->Socket = Listener->Accepted[0].Socket;
        NksFormatAddress(&Listener->Accepted[0].Peer, output->PeerAddress);
        --Listener->AcceptedCount;
        RtlMoveMemory(&Listener->Accepted[0], &Listener->Accepted[1], Listener->AcceptedCount * sizeof(NKS_ACCEPTED));
        Irp->IoStatus.Information = sizeof(*output);
        status = STATUS_SUCCESS;
    } else if (Listener->Closing) {
        status = STATUS_CANCELLED;
    } else {
        status = NksQueueIrpLocked(Listener, &Listener->AcceptIrps, Irp);
    }
    KeReleaseSpinLock(&Listener->Lock, irql);
    return status;
}

_Use_decl_annotations_
VOID NksListenerShutdown(PNKS_SOCKET Listener)
{
    PNKS_ADAPTER adapter = Listener->Adapter;
    LIST_ENTRY done;
    KIRQL irql;
    PIRP irp;

    PAGED_CODE();
    /* Connect events from now on find no socket and refuse their connections. */
    KeAcquireSpinLock(&adapter->Lock, &irql);
    adapter->ListenerSocket = NULL;
    KeReleaseSpinLock(&adapter->Lock, irql);
    InitializeListHead(&done);
    KeAcquireSpinLock(&Listener->Lock, &irql);
    Listener->Closing = TRUE;
    while ((irp = NksDequeueIrpLocked(&Listener->AcceptIrps)) != NULL) {
        NksDeferCompletion(&done, irp, STATUS_CANCELLED, 0);
    }
    KeReleaseSpinLock(&Listener->Lock, irql);
    NksCompleteIrps(&done);
}

/* NDK_FN_CLOSE_COMPLETION of the listener. */
_IRQL_requires_max_(DISPATCH_LEVEL)
static VOID NksListenerClosed(_In_opt_ PVOID Context)
{
    PNKS_ADAPTER adapter = (PNKS_ADAPTER)Context;

    KeSetEvent(&adapter->ListenerClosed, IO_NO_INCREMENT, FALSE);
}

_Use_decl_annotations_
VOID NksListenerRelease(PNKS_SOCKET Listener)
{
    PNKS_ADAPTER adapter = Listener->Adapter;
    NDKSOCK_SOCKET pending[NDKSOCK_MAX_BACKLOG];
    ULONG count;
    ULONG i;

    PAGED_CODE();
    /* No accept runs any more: the connections nobody took are closed, as a listening socket's
     * backlog is when it closes. */
    count = Listener->AcceptedCount;
    for (i = 0; i < count; ++i) {
        pending[i] = Listener->Accepted[i].Socket;
    }
    Listener->AcceptedCount = 0;
    for (i = 0; i < count; ++i) {
        (VOID) NksSocketClose(Listener->Device, pending[i], NULL);
    }
    if (adapter->Listener != NULL) {
        /* Its close completes only when every connector it produced is closed, and accepted
         * connections may outlive this socket: the adapter's last reference waits for it. */
        adapter->ListenerClosing = TRUE;
        if (adapter->Listener->Dispatch->NdkCloseListener(&adapter->Listener->Header, NksListenerClosed, adapter) !=
            STATUS_PENDING) {
            KeSetEvent(&adapter->ListenerClosed, IO_NO_INCREMENT, FALSE);
        }
        adapter->Listener = NULL;
    }
}
