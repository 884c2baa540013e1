/* SPDX-License-Identifier: MIT */
/* A control-device driver written as the WDK's samples write one: a named device and a symbolic
 * link, dispatch routines for create, cleanup, close and device control, and IOCTLs of each
 * transfer method, some completed at once, some pended and completed or cancelled from a timer's
 * DPC. Three IOCTLs carry the bugs Driver Verifier's I/O checks find. */
#include <ntddk.h>

#include "consumer_io.h"

IoTestCounts g_io_counts;

typedef struct _IO_TEST_DEVICE {
    KSPIN_LOCK lock;
    PIRP held;         /* the IRP pended by IO_TEST_PEND or IO_TEST_CANCELLED */
    BOOLEAN cancel;    /* the DPC cancels the held IRP rather than completing it */
    KTIMER timer;
    KDPC dpc;
    UCHAR disk[256];   /* what IRP_MJ_READ and IRP_MJ_WRITE transfer, at their byte offsets */
} IO_TEST_DEVICE;

static ULONG g_io_method; /* the device's DO_BUFFERED_IO, DO_DIRECT_IO, or 0: neither */

static UNICODE_STRING g_device_name = RTL_CONSTANT_STRING(L"\\Device\\NdksimIoTest");
static UNICODE_STRING g_link_name = RTL_CONSTANT_STRING(L"\\DosDevices\\NdksimIoTest");
static BOOLEAN g_forget_link;

static NTSTATUS CompleteWith(PIRP Irp, NTSTATUS Status, ULONG_PTR Information) {
    Irp->IoStatus.Status = Status;
    Irp->IoStatus.Information = Information;
    IoCompleteRequest(Irp, IO_NO_INCREMENT);
    return Status;
}

static NTSTATUS TestCreate(PDEVICE_OBJECT Device, PIRP Irp) {
    UNREFERENCED_PARAMETER(Device);
    InterlockedIncrement((LONG volatile *)&g_io_counts.creates);
    return CompleteWith(Irp, STATUS_SUCCESS, 0);
}

static NTSTATUS TestCleanup(PDEVICE_OBJECT Device, PIRP Irp) {
    UNREFERENCED_PARAMETER(Device);
    InterlockedIncrement((LONG volatile *)&g_io_counts.cleanups);
    return CompleteWith(Irp, STATUS_SUCCESS, 0);
}

static NTSTATUS TestClose(PDEVICE_OBJECT Device, PIRP Irp) {
    UNREFERENCED_PARAMETER(Device);
    InterlockedIncrement((LONG volatile *)&g_io_counts.closes);
    return CompleteWith(Irp, STATUS_SUCCESS, 0);
}

/* Runs with the cancel spin lock held, which it releases. */
static VOID TestCancel(PDEVICE_OBJECT Device, PIRP Irp) {
    IO_TEST_DEVICE *ext = (IO_TEST_DEVICE *)Device->DeviceExtension;
    KIRQL old;
    IoReleaseCancelSpinLock(Irp->CancelIrql);
    KeAcquireSpinLock(&ext->lock, &old);
    if (ext->held == Irp) ext->held = NULL;
    KeReleaseSpinLock(&ext->lock, old);
    InterlockedIncrement((LONG volatile *)&g_io_counts.cancel_routines);
    (void)CompleteWith(Irp, STATUS_CANCELLED, 0);
}

/* The timer's DPC: completes the held IRP with "done", or cancels it. */
static VOID TestDpc(PKDPC Dpc, PVOID Context, PVOID Arg1, PVOID Arg2) {
    IO_TEST_DEVICE *ext = (IO_TEST_DEVICE *)Context;
    PIRP irp;
    BOOLEAN cancel;
    UNREFERENCED_PARAMETER(Dpc);
    UNREFERENCED_PARAMETER(Arg1);
    UNREFERENCED_PARAMETER(Arg2);
    KeAcquireSpinLockAtDpcLevel(&ext->lock);
    irp = ext->held;
    cancel = ext->cancel;
    if (!cancel) ext->held = NULL;
    KeReleaseSpinLockFromDpcLevel(&ext->lock);
    if (irp == NULL) return;
    if (cancel) {
        (void)IoCancelIrp(irp);
        return;
    }
    RtlCopyMemory(irp->AssociatedIrp.SystemBuffer, "done", 4);
    (void)CompleteWith(irp, STATUS_SUCCESS, 4);
}

/* Holds the IRP pending; with `timer`, the DPC completes (or cancels) it in 10 microseconds. */
static NTSTATUS Pend(IO_TEST_DEVICE *ext, PIRP Irp, BOOLEAN cancel, BOOLEAN mark, BOOLEAN timer) {
    LARGE_INTEGER due;
    KIRQL old;
    if (mark) IoMarkIrpPending(Irp);
    KeAcquireSpinLock(&ext->lock, &old);
    ext->held = Irp;
    ext->cancel = cancel;
    if (cancel) (void)IoSetCancelRoutine(Irp, TestCancel);
    KeReleaseSpinLock(&ext->lock, old);
    if (timer) {
        due.QuadPart = -100; /* 10 microseconds */
        KeSetTimer(&ext->timer, due, &ext->dpc);
    }
    return STATUS_PENDING;
}

static NTSTATUS TestDeviceControl(PDEVICE_OBJECT Device, PIRP Irp) {
    IO_TEST_DEVICE *ext = (IO_TEST_DEVICE *)Device->DeviceExtension;
    PIO_STACK_LOCATION stack = IoGetCurrentIrpStackLocation(Irp);
    ULONG in = stack->Parameters.DeviceIoControl.InputBufferLength;
    ULONG out = stack->Parameters.DeviceIoControl.OutputBufferLength;
    PAGED_CODE();
    switch (stack->Parameters.DeviceIoControl.IoControlCode) {
        case IO_TEST_ECHO:
            if (out < in) return CompleteWith(Irp, STATUS_BUFFER_TOO_SMALL, 0);
            return CompleteWith(Irp, STATUS_SUCCESS, in); /* the input is in the system buffer already */
        case IO_TEST_PEND:
            if (out < 4) return CompleteWith(Irp, STATUS_BUFFER_TOO_SMALL, 0);
            return Pend(ext, Irp, FALSE, TRUE, TRUE);
        case IO_TEST_CANCELLED:
            return Pend(ext, Irp, TRUE, TRUE, TRUE);
        case IO_TEST_HOLD:
            return Pend(ext, Irp, TRUE, TRUE, FALSE); /* until the program cancels it */
        case IO_TEST_PARTIAL:
            /* A warning, not an error: the I/O manager still copies Information bytes back. */
            return CompleteWith(Irp, out < in ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS, min(in, out));
        case IO_TEST_FILL: {
            UCHAR *buffer;
            if (Irp->MdlAddress == NULL) return CompleteWith(Irp, STATUS_INVALID_PARAMETER, 0);
            buffer = (UCHAR *)MmGetSystemAddressForMdlSafe(Irp->MdlAddress, NormalPagePriority);
            if (buffer == NULL) return CompleteWith(Irp, STATUS_INSUFFICIENT_RESOURCES, 0);
            RtlFillMemory(buffer, MmGetMdlByteCount(Irp->MdlAddress), 0xA5);
            return CompleteWith(Irp, STATUS_SUCCESS, MmGetMdlByteCount(Irp->MdlAddress));
        }
        case IO_TEST_DOUBLE: {
            /* The program's own buffers: probed, and used, inside __try, as a driver must. */
            ULONG value;
            if (in < sizeof(ULONG) || out < sizeof(ULONG)) return CompleteWith(Irp, STATUS_BUFFER_TOO_SMALL, 0);
            __try {
                ProbeForRead(stack->Parameters.DeviceIoControl.Type3InputBuffer, in, sizeof(ULONG));
                ProbeForWrite(Irp->UserBuffer, out, sizeof(ULONG));
                value = *(ULONG *)stack->Parameters.DeviceIoControl.Type3InputBuffer;
                *(ULONG *)Irp->UserBuffer = 2 * value;
            } __except (EXCEPTION_EXECUTE_HANDLER) {
                return CompleteWith(Irp, GetExceptionCode(), 0);
            }
            return CompleteWith(Irp, STATUS_SUCCESS, sizeof(ULONG));
        }
        case IO_TEST_FORGET:
            return STATUS_SUCCESS; /* the bug: the IRP is never completed */
        case IO_TEST_UNMARKED:
            return Pend(ext, Irp, FALSE, FALSE, TRUE); /* the bug: no IoMarkIrpPending */
        case IO_TEST_MARKED:
            IoMarkIrpPending(Irp);
            return CompleteWith(Irp, STATUS_SUCCESS, 0); /* the bug: marked pending, so STATUS_PENDING is owed */
        case IO_TEST_TWICE:
            (void)CompleteWith(Irp, STATUS_SUCCESS, 0);
            return CompleteWith(Irp, STATUS_SUCCESS, 0); /* the bug */
        default:
            return CompleteWith(Irp, STATUS_INVALID_DEVICE_REQUEST, 0);
    }
}

static VOID IoTestUnload(PDRIVER_OBJECT Driver) {
    IO_TEST_DEVICE *ext = (IO_TEST_DEVICE *)Driver->DeviceObject->DeviceExtension;
    PAGED_CODE();
    (void)KeCancelTimer(&ext->timer);
    if (!g_forget_link) (void)IoDeleteSymbolicLink(&g_link_name);
    IoDeleteDevice(Driver->DeviceObject);
}

/* The transfer's data, where the device's I/O method puts it. */
static PUCHAR TransferBuffer(PDEVICE_OBJECT Device, PIRP Irp) {
    if (Device->Flags & DO_BUFFERED_IO) return (PUCHAR)Irp->AssociatedIrp.SystemBuffer;
    if (Device->Flags & DO_DIRECT_IO) {
        return Irp->MdlAddress == NULL ? NULL : (PUCHAR)MmGetSystemAddressForMdlSafe(Irp->MdlAddress, NormalPagePriority);
    }
    return (PUCHAR)Irp->UserBuffer; /* neither: the program's own buffer, used in its context */
}

/* Reads what the disk has from the offset on, up to the length: a short read at the end, and
 * STATUS_END_OF_FILE from the end on. */
static NTSTATUS TestRead(PDEVICE_OBJECT Device, PIRP Irp) {
    IO_TEST_DEVICE *ext = (IO_TEST_DEVICE *)Device->DeviceExtension;
    PIO_STACK_LOCATION stack = IoGetCurrentIrpStackLocation(Irp);
    LONGLONG offset = stack->Parameters.Read.ByteOffset.QuadPart;
    ULONG length = stack->Parameters.Read.Length;
    PUCHAR buffer = TransferBuffer(Device, Irp);
    ULONG n;
    if (offset < 0 || offset >= (LONGLONG)sizeof(ext->disk)) return CompleteWith(Irp, STATUS_END_OF_FILE, 0);
    n = min(length, (ULONG)(sizeof(ext->disk) - (ULONG)offset));
    if (n > 0 && buffer == NULL) return CompleteWith(Irp, STATUS_INSUFFICIENT_RESOURCES, 0);
    if (n > 0) RtlCopyMemory(buffer, ext->disk + offset, n);
    return CompleteWith(Irp, STATUS_SUCCESS, n);
}

/* Writes the whole buffer at the offset, or nothing (STATUS_INVALID_PARAMETER) past the end. */
static NTSTATUS TestWrite(PDEVICE_OBJECT Device, PIRP Irp) {
    IO_TEST_DEVICE *ext = (IO_TEST_DEVICE *)Device->DeviceExtension;
    PIO_STACK_LOCATION stack = IoGetCurrentIrpStackLocation(Irp);
    LONGLONG offset = stack->Parameters.Write.ByteOffset.QuadPart;
    ULONG length = stack->Parameters.Write.Length;
    PUCHAR buffer = TransferBuffer(Device, Irp);
    if (offset < 0 || offset + length > (LONGLONG)sizeof(ext->disk)) return CompleteWith(Irp, STATUS_INVALID_PARAMETER, 0);
    if (length > 0 && buffer == NULL) return CompleteWith(Irp, STATUS_INSUFFICIENT_RESOURCES, 0);
    if (length > 0) RtlCopyMemory(ext->disk + offset, buffer, length);
    return CompleteWith(Irp, STATUS_SUCCESS, length);
}

static NTSTATUS StartIoTest(PDRIVER_OBJECT Driver, BOOLEAN create_handler) {
    PDEVICE_OBJECT device = NULL;
    IO_TEST_DEVICE *ext;
    NTSTATUS status;
    PAGED_CODE();
    RtlZeroMemory(&g_io_counts, sizeof(g_io_counts));
    status = IoCreateDevice(Driver, sizeof(IO_TEST_DEVICE), &g_device_name, FILE_DEVICE_UNKNOWN,
                            FILE_DEVICE_SECURE_OPEN, FALSE, &device);
    if (!NT_SUCCESS(status)) return status;
    ext = (IO_TEST_DEVICE *)device->DeviceExtension;
    KeInitializeSpinLock(&ext->lock);
    KeInitializeTimer(&ext->timer);
    KeInitializeDpc(&ext->dpc, TestDpc, ext);
    status = IoCreateSymbolicLink(&g_link_name, &g_device_name);
    if (!NT_SUCCESS(status)) {
        IoDeleteDevice(device);
        return status;
    }
    if (create_handler) Driver->MajorFunction[IRP_MJ_CREATE] = TestCreate;
    Driver->MajorFunction[IRP_MJ_CLEANUP] = TestCleanup;
    Driver->MajorFunction[IRP_MJ_CLOSE] = TestClose;
    Driver->MajorFunction[IRP_MJ_DEVICE_CONTROL] = TestDeviceControl;
    Driver->MajorFunction[IRP_MJ_READ] = TestRead;
    Driver->MajorFunction[IRP_MJ_WRITE] = TestWrite;
    Driver->DriverUnload = IoTestUnload;
    RtlZeroMemory(ext->disk, sizeof(ext->disk));
    device->Flags |= g_io_method;
    device->Flags &= ~DO_DEVICE_INITIALIZING;
    return STATUS_SUCCESS;
}

/* The entries differ in the device's I/O method, the create routine and the symbolic link. */
static NTSTATUS LoadIoTest(PDRIVER_OBJECT Driver, ULONG method, BOOLEAN create_handler, BOOLEAN forget_link) {
    g_forget_link = forget_link;
    g_io_method = method;
    return StartIoTest(Driver, create_handler);
}

NTSTATUS IoTestDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    return LoadIoTest(Driver, DO_BUFFERED_IO, TRUE, FALSE);
}

NTSTATUS IoTestDirectDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    return LoadIoTest(Driver, DO_DIRECT_IO, TRUE, FALSE);
}

NTSTATUS IoTestNeitherDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    return LoadIoTest(Driver, 0, TRUE, FALSE);
}

NTSTATUS IoTestNoCreateDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    return LoadIoTest(Driver, DO_BUFFERED_IO, FALSE, FALSE);
}

NTSTATUS IoTestLeakyLinkDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    return LoadIoTest(Driver, DO_BUFFERED_IO, TRUE, TRUE);
}

/* Creates "\Device\NdksimTwice" twice for the driver: the second create's status, after the
 * first device is deleted again. */
NTSTATUS IoTestCreateDeviceTwice(PDRIVER_OBJECT Driver) {
    static UNICODE_STRING name = RTL_CONSTANT_STRING(L"\\Device\\NdksimTwice");
    PDEVICE_OBJECT first = NULL;
    PDEVICE_OBJECT second = NULL;
    NTSTATUS status = IoCreateDevice(Driver, 0, &name, FILE_DEVICE_UNKNOWN, 0, FALSE, &first);
    if (!NT_SUCCESS(status)) return status;
    status = IoCreateDevice(Driver, 0, &name, FILE_DEVICE_UNKNOWN, 0, FALSE, &second);
    if (NT_SUCCESS(status)) IoDeleteDevice(second);
    IoDeleteDevice(first);
    return status;
}
