/* SPDX-License-Identifier: MIT */
/* driver.c - the NDK sockets driver's entry, unload and dispatch routines: a control device,
 * \Device\NdkSock (\\.\NdkSock to programs), whose I/O controls (nksioctl.h) open, use and close
 * sockets over NDK. */
#include "precomp.h"

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD NksUnload;
_Dispatch_type_(IRP_MJ_CREATE) _Dispatch_type_(IRP_MJ_CLOSE) static DRIVER_DISPATCH NksDispatchCreateClose;
_Dispatch_type_(IRP_MJ_CLEANUP) static DRIVER_DISPATCH NksDispatchCleanup;
_Dispatch_type_(IRP_MJ_DEVICE_CONTROL) static DRIVER_DISPATCH NksDispatchDeviceControl;

#ifdef ALLOC_PRAGMA
#pragma alloc_text(INIT, DriverEntry)
#pragma alloc_text(PAGE, NksUnload)
#pragma alloc_text(PAGE, NksDispatchCreateClose)
#pragma alloc_text(PAGE, NksDispatchCleanup)
#pragma alloc_text(PAGE, NksDispatchDeviceControl)
#endif

/* The device's class, for IoCreateDeviceSecure: {5B0F7E3A-2C1D-4E8B-9A61-3D27C4901E55}. */
static const GUID NksDeviceClassGuid = {0x5b0f7e3a, 0x2c1d, 0x4e8b, {0x9a, 0x61, 0x3d, 0x27, 0xc4, 0x90, 0x1e, 0x55}};

_Use_decl_annotations_
NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath)
{
    UNICODE_STRING deviceName = RTL_CONSTANT_STRING(NKS_DEVICE_NAME);
    UNICODE_STRING linkName = RTL_CONSTANT_STRING(NKS_DOS_DEVICE_NAME);
    PDEVICE_OBJECT deviceObject = NULL;
    PNKS_DEVICE device;
    NTSTATUS status;

    UNREFERENCED_PARAMETER(RegistryPath);

    /* Administrators and the system only: a socket reaches the network from the kernel. */
    status = IoCreateDeviceSecure(DriverObject, sizeof(NKS_DEVICE), &deviceName, FILE_DEVICE_NDKSOCK,
                                  FILE_DEVICE_SECURE_OPEN, FALSE, &SDDL_DEVOBJ_SYS_ALL_ADM_ALL, &NksDeviceClassGuid,
                                  &deviceObject);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    device = (PNKS_DEVICE)deviceObject->DeviceExtension;
    RtlZeroMemory(device, sizeof(*device));
    device->Self = deviceObject;
    KeInitializeGuardedMutex(&device->WskLock);
    KeInitializeSpinLock(&device->TableLock);
    InitializeListHead(&device->Sockets);

    status = NksWskRegister(device);
    if (!NT_SUCCESS(status)) {
        IoDeleteDevice(deviceObject);
        return status;
    }
    status = IoCreateSymbolicLink(&linkName, &deviceName);
    if (!NT_SUCCESS(status)) {
        NksWskDeregister(device);
        IoDeleteDevice(deviceObject);
        return status;
    }

    DriverObject->MajorFunction[IRP_MJ_CREATE] = NksDispatchCreateClose;
    DriverObject->MajorFunction[IRP_MJ_CLOSE] = NksDispatchCreateClose;
    DriverObject->MajorFunction[IRP_MJ_CLEANUP] = NksDispatchCleanup;
    DriverObject->MajorFunction[IRP_MJ_DEVICE_CONTROL] = NksDispatchDeviceControl;
    DriverObject->DriverUnload = NksUnload;
    deviceObject->Flags |= DO_BUFFERED_IO;
    deviceObject->Flags &= ~DO_DEVICE_INITIALIZING;
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
static VOID NksUnload(PDRIVER_OBJECT DriverObject)
{
    UNICODE_STRING linkName = RTL_CONSTANT_STRING(NKS_DOS_DEVICE_NAME);
    PDEVICE_OBJECT deviceObject = DriverObject->DeviceObject;
    PNKS_DEVICE device = (PNKS_DEVICE)deviceObject->DeviceExtension;

    PAGED_CODE();
    /* Every handle's cleanup has closed its sockets; whatever an accept added after that goes now. */
    NksSocketCloseAll(device, NULL);
    NksWskDeregister(device);
    IoDeleteSymbolicLink(&linkName);
    IoDeleteDevice(deviceObject);
}

_IRQL_requires_max_(DISPATCH_LEVEL)
static NTSTATUS NksCompleteRequest(_Inout_ PIRP Irp, _In_ NTSTATUS Status, _In_ ULONG_PTR Information)
{
    Irp->IoStatus.Status = Status;
    Irp->IoStatus.Information = Information;
    IoCompleteRequest(Irp, IO_NO_INCREMENT);
    return Status;
}

_Use_decl_annotations_
static NTSTATUS NksDispatchCreateClose(PDEVICE_OBJECT DeviceObject, PIRP Irp)
{
    UNREFERENCED_PARAMETER(DeviceObject);
    PAGED_CODE();
    /* Sockets belong to the open that makes them; the open itself needs nothing. */
    return NksCompleteRequest(Irp, STATUS_SUCCESS, 0);
}

_Use_decl_annotations_
static NTSTATUS NksDispatchCleanup(PDEVICE_OBJECT DeviceObject, PIRP Irp)
{
    PNKS_DEVICE device = (PNKS_DEVICE)DeviceObject->DeviceExtension;
    PIO_STACK_LOCATION stack = IoGetCurrentIrpStackLocation(Irp);

    PAGED_CODE();
    /* The program's last handle is gone: its sockets close, and their pending requests with them. */
    NksSocketCloseAll(device, stack->FileObject);
    return NksCompleteRequest(Irp, STATUS_SUCCESS, 0);
}

/* Requests on one socket: found by handle within the open, referenced while they run. A request
 * the socket keeps (STATUS_PENDING) keeps the reference until it completes. */
_IRQL_requires_(PASSIVE_LEVEL)
static NTSTATUS NksSocketRequest(_In_ PNKS_DEVICE Device, _In_ PIO_STACK_LOCATION Stack, _Inout_ PIRP Irp)
{
    ULONG code = Stack->Parameters.DeviceIoControl.IoControlCode;
    ULONG inputLength = Stack->Parameters.DeviceIoControl.InputBufferLength;
    ULONG outputLength = Stack->Parameters.DeviceIoControl.OutputBufferLength;
    const NDKSOCK_SOCKET_IN *input = (const NDKSOCK_SOCKET_IN *)Irp->AssociatedIrp.SystemBuffer;
    PNKS_SOCKET socket;
    NTSTATUS status;

    PAGED_CODE();
    if (inputLength < sizeof(NDKSOCK_SOCKET_IN)) {
        return NksCompleteRequest(Irp, STATUS_BUFFER_TOO_SMALL, 0);
    }
    switch (code) {
    case IOCTL_NDKSOCK_ACCEPT:
        if (outputLength < sizeof(NDKSOCK_SOCKET_OUT)) {
            return NksCompleteRequest(Irp, STATUS_BUFFER_TOO_SMALL, 0);
        }
        break;
    case IOCTL_NDKSOCK_SEND: {
        const NDKSOCK_SEND_IN *send = (const NDKSOCK_SEND_IN *)Irp->AssociatedIrp.SystemBuffer;
        if (inputLength < NDKSOCK_SEND_IN_SIZE(0) || send->Length == 0 ||
            NDKSOCK_SEND_IN_SIZE(send->Length) > inputLength) {
            return NksCompleteRequest(Irp, STATUS_INVALID_PARAMETER, 0);
        }
        if (outputLength < sizeof(NDKSOCK_SEND_OUT)) {
            return NksCompleteRequest(Irp, STATUS_BUFFER_TOO_SMALL, 0);
        }
        break;
    }
    case IOCTL_NDKSOCK_RECEIVE:
        if (outputLength == 0) {
            return NksCompleteRequest(Irp, STATUS_BUFFER_TOO_SMALL, 0);
        }
        break;
    default:
        break;
    }

    socket = NksSocketReference(Device, input->Socket, Stack->FileObject);
    if (socket == NULL) {
        return NksCompleteRequest(Irp, STATUS_INVALID_HANDLE, 0);
    }
    switch (code) {
    case IOCTL_NDKSOCK_ACCEPT:
        status = NksAccept(socket, Irp);
        break;
    case IOCTL_NDKSOCK_SEND:
        status = NksSend(socket, Irp);
        break;
    default:
        status = NksReceive(socket, Irp);
        break;
    }
    if (status == STATUS_PENDING) {
        return status;
    }
    NksSocketDereference(socket);
    return NksCompleteRequest(Irp, status, NT_SUCCESS(status) ? Irp->IoStatus.Information : 0);
}

_IRQL_requires_(PASSIVE_LEVEL)
static NTSTATUS NksQuery(_In_ PNKS_DEVICE Device, _In_ PIO_STACK_LOCATION Stack, _Inout_ PIRP Irp)
{
    NDKSOCK_SOCKET id = ((const NDKSOCK_SOCKET_IN *)Irp->AssociatedIrp.SystemBuffer)->Socket;
    NDKSOCK_QUERY_OUT *output = (NDKSOCK_QUERY_OUT *)Irp->AssociatedIrp.SystemBuffer;
    const NKS_STATS *stats = &Device->Stats;
    PNKS_SOCKET socket = NULL;

    PAGED_CODE();
    if (Stack->Parameters.DeviceIoControl.InputBufferLength < sizeof(NDKSOCK_SOCKET_IN) ||
        Stack->Parameters.DeviceIoControl.OutputBufferLength < sizeof(NDKSOCK_QUERY_OUT)) {
        return NksCompleteRequest(Irp, STATUS_BUFFER_TOO_SMALL, 0);
    }
    if (id != 0) {
        socket = NksSocketReference(Device, id, Stack->FileObject);
        if (socket == NULL) {
            return NksCompleteRequest(Irp, STATUS_INVALID_HANDLE, 0);
        }
    }
    /* The input is read; the output takes the same buffer. */
    RtlZeroMemory(output, sizeof(*output));
    output->Device.SocketsOpen = (uint32_t)stats->SocketsOpen;
    output->Device.AdaptersOpen = (uint32_t)stats->AdaptersOpen;
    output->Device.SocketsCreated = (uint64_t)stats->SocketsCreated;
    output->Device.AdaptersOpened = (uint64_t)stats->AdaptersOpened;
    output->Device.ConnectionsAccepted = (uint64_t)stats->ConnectionsAccepted;
    output->Device.ConnectionsRejected = (uint64_t)stats->ConnectionsRejected;
    output->Device.ConnectionsFailed = (uint64_t)stats->ConnectionsFailed;
    output->Device.BytesSent = (uint64_t)stats->BytesSent;
    output->Device.BytesReceived = (uint64_t)stats->BytesReceived;
    output->Device.RequestsCancelled = (uint64_t)stats->RequestsCancelled;
    if (socket != NULL) {
        NksSocketQuery(socket, &output->Socket);
        NksSocketDereference(socket);
    }
    return NksCompleteRequest(Irp, STATUS_SUCCESS, sizeof(*output));
}

_Use_decl_annotations_
static NTSTATUS NksDispatchDeviceControl(PDEVICE_OBJECT DeviceObject, PIRP Irp)
{
    PNKS_DEVICE device = (PNKS_DEVICE)DeviceObject->DeviceExtension;
    PIO_STACK_LOCATION stack = IoGetCurrentIrpStackLocation(Irp);
    ULONG inputLength = stack->Parameters.DeviceIoControl.InputBufferLength;
    ULONG outputLength = stack->Parameters.DeviceIoControl.OutputBufferLength;
    PVOID buffer = Irp->AssociatedIrp.SystemBuffer;
    NTSTATUS status;

    PAGED_CODE();
    switch (stack->Parameters.DeviceIoControl.IoControlCode) {
    case IOCTL_NDKSOCK_LISTEN: {
        NDKSOCK_LISTEN_IN input;
        if (inputLength < sizeof(input) || outputLength < sizeof(NDKSOCK_SOCKET_OUT)) {
            return NksCompleteRequest(Irp, STATUS_BUFFER_TOO_SMALL, 0);
        }
        /* Copied out: the output is written over the system buffer. */
        RtlCopyMemory(&input, buffer, sizeof(input));
        status = NksListen(device, stack->FileObject, &input, (NDKSOCK_SOCKET_OUT *)buffer);
        return NksCompleteRequest(Irp, status, NT_SUCCESS(status) ? sizeof(NDKSOCK_SOCKET_OUT) : 0);
    }
    case IOCTL_NDKSOCK_CONNECT: {
        NDKSOCK_CONNECT_IN input;
        if (inputLength < sizeof(input) || outputLength < sizeof(NDKSOCK_SOCKET_OUT)) {
            return NksCompleteRequest(Irp, STATUS_BUFFER_TOO_SMALL, 0);
        }
        RtlCopyMemory(&input, buffer, sizeof(input));
        status = NksConnect(device, stack->FileObject, &input, (NDKSOCK_SOCKET_OUT *)buffer);
        return NksCompleteRequest(Irp, status, NT_SUCCESS(status) ? sizeof(NDKSOCK_SOCKET_OUT) : 0);
    }
    case IOCTL_NDKSOCK_ACCEPT:
    case IOCTL_NDKSOCK_SEND:
    case IOCTL_NDKSOCK_RECEIVE:
        return NksSocketRequest(device, stack, Irp);
    case IOCTL_NDKSOCK_CLOSE:
        if (inputLength < sizeof(NDKSOCK_SOCKET_IN)) {
            return NksCompleteRequest(Irp, STATUS_BUFFER_TOO_SMALL, 0);
        }
        status = NksSocketClose(device, ((const NDKSOCK_SOCKET_IN *)buffer)->Socket, stack->FileObject);
        return NksCompleteRequest(Irp, status, 0);
    case IOCTL_NDKSOCK_QUERY:
        return NksQuery(device, stack, Irp);
    default:
        return NksCompleteRequest(Irp, STATUS_INVALID_DEVICE_REQUEST, 0);
    }
}
