/* SPDX-License-Identifier: MIT */
/* A queueing driver written as the WDK's cancel-safe queue samples write one: IOCTLs that park
 * their IRPs in an IO_CSQ (a list and a spin lock of the driver's), a system thread that takes them
 * out in order and completes them, cleanup that completes what an open left queued, and a remove
 * lock held by every device control from dispatch to completion, which the device's removal waits
 * out. Four IOCTLs carry remove-lock bugs Driver Verifier reports. */
#include <ntddk.h>

#include "consumer_csq.h"

CsqTestCounts g_csq_counts;

#define CSQ_TEST_TAG 'qsCT'

typedef struct _CSQ_TEST_DEVICE {
    IO_CSQ csq;
    LIST_ENTRY queue; /* queued IRPs, oldest first, linked through Tail.Overlay.ListEntry */
    KSPIN_LOCK queue_lock;
    ULONG queued;
    IO_CSQ_IRP_CONTEXT notify; /* the NOTIFY IRP's tie to the queue */
    IO_REMOVE_LOCK remove_lock;
    KEVENT work; /* wakes the worker */
    BOOLEAN stop;
    PVOID worker; /* the worker thread's object */
    PIO_WORKITEM remove_item;
    PIRP remove_irp;
    BOOLEAN remove_twice;
    LONG sequence; /* queued IRPs completed so far */
} CSQ_TEST_DEVICE;

static UNICODE_STRING g_device_name = RTL_CONSTANT_STRING(L"\\Device\\NdksimCsqTest");
static UNICODE_STRING g_link_name = RTL_CONSTANT_STRING(L"\\DosDevices\\NdksimCsqTest");
static const ULONG g_queue_limit = CSQ_TEST_QUEUE_LIMIT;

static IO_CSQ_INSERT_IRP_EX CsqTestInsertIrp;
static IO_CSQ_REMOVE_IRP CsqTestRemoveIrp;
static IO_CSQ_PEEK_NEXT_IRP CsqTestPeekNextIrp;
static IO_CSQ_ACQUIRE_LOCK CsqTestAcquireLock;
static IO_CSQ_RELEASE_LOCK CsqTestReleaseLock;
static IO_CSQ_COMPLETE_CANCELED_IRP CsqTestCompleteCanceledIrp;
static DRIVER_DISPATCH CsqTestOpenClose;
static DRIVER_DISPATCH CsqTestCleanup;
static DRIVER_DISPATCH CsqTestDeviceControl;
static DRIVER_UNLOAD CsqTestUnload;
static KSTART_ROUTINE CsqTestWorker;
static IO_WORKITEM_ROUTINE CsqTestRemoveDevice;

static CSQ_TEST_DEVICE *DeviceOf(PIO_CSQ Csq) { return CONTAINING_RECORD(Csq, CSQ_TEST_DEVICE, csq); }

static NTSTATUS CompleteWith(PIRP Irp, NTSTATUS Status, ULONG_PTR Information) {
    Irp->IoStatus.Status = Status;
    Irp->IoStatus.Information = Information;
    IoCompleteRequest(Irp, IO_NO_INCREMENT);
    return Status;
}

/* A queued IRP the driver took out of the queue: its value and completion order back, and the
 * remove lock it held since dispatch given up. */
static VOID CompleteQueued(CSQ_TEST_DEVICE *ext, PIRP Irp) {
    CsqTestResult *result = (CsqTestResult *)Irp->AssociatedIrp.SystemBuffer;
    result->value = *(const ULONG *)Irp->AssociatedIrp.SystemBuffer;
    result->sequence = (ULONG)InterlockedIncrement(&ext->sequence);
    (void)CompleteWith(Irp, STATUS_SUCCESS, sizeof(CsqTestResult));
    IoReleaseRemoveLock(&ext->remove_lock, Irp);
}

/* ---- the queue's callbacks, under its spin lock unless said otherwise ---- */

/* InsertContext points to the queue's limit: a full queue refuses the IRP. */
static NTSTATUS CsqTestInsertIrp(PIO_CSQ Csq, PIRP Irp, PVOID InsertContext) {
    CSQ_TEST_DEVICE *ext = DeviceOf(Csq);
    if (InsertContext != NULL && ext->queued >= *(const ULONG *)InsertContext) return STATUS_DEVICE_BUSY;
    InsertTailList(&ext->queue, &Irp->Tail.Overlay.ListEntry);
    g_csq_counts.queued = (int32_t)++ext->queued;
    return STATUS_SUCCESS;
}

static VOID CsqTestRemoveIrp(PIO_CSQ Csq, PIRP Irp) {
    CSQ_TEST_DEVICE *ext = DeviceOf(Csq);
    RemoveEntryList(&Irp->Tail.Overlay.ListEntry);
    g_csq_counts.queued = (int32_t)--ext->queued;
}

/* The first IRP after Irp (or the first of all) whose open is PeekContext (or any, for NULL). */
static PIRP CsqTestPeekNextIrp(PIO_CSQ Csq, PIRP Irp, PVOID PeekContext) {
    CSQ_TEST_DEVICE *ext = DeviceOf(Csq);
    PLIST_ENTRY entry = Irp == NULL ? ext->queue.Flink : Irp->Tail.Overlay.ListEntry.Flink;
    if (Irp != NULL) g_csq_counts.peeks_past++;
    for (; entry != &ext->queue; entry = entry->Flink) {
        PIRP next = CONTAINING_RECORD(entry, IRP, Tail.Overlay.ListEntry);
        if (PeekContext == NULL || IoGetCurrentIrpStackLocation(next)->FileObject == (PFILE_OBJECT)PeekContext) {
            return next;
        }
    }
    return NULL;
}

static VOID CsqTestAcquireLock(PIO_CSQ Csq, PKIRQL Irql) { KeAcquireSpinLock(&DeviceOf(Csq)->queue_lock, Irql); }

static VOID CsqTestReleaseLock(PIO_CSQ Csq, KIRQL Irql) { KeReleaseSpinLock(&DeviceOf(Csq)->queue_lock, Irql); }

/* Outside the lock: the IRP is out of the queue and its cancellation is the driver's to finish. */
static VOID CsqTestCompleteCanceledIrp(PIO_CSQ Csq, PIRP Irp) {
    CSQ_TEST_DEVICE *ext = DeviceOf(Csq);
    InterlockedIncrement((LONG volatile *)&g_csq_counts.cancelled);
    (void)CompleteWith(Irp, STATUS_CANCELLED, 0);
    IoReleaseRemoveLock(&ext->remove_lock, Irp);
}

/* ---- threads ---- */

/* Completes every queued IRP each time DRAIN wakes it, until the unload stops it. */
static VOID CsqTestWorker(PVOID Context) {
    CSQ_TEST_DEVICE *ext = (CSQ_TEST_DEVICE *)Context;
    PIRP irp;
    for (;;) {
        (void)KeWaitForSingleObject(&ext->work, Executive, KernelMode, FALSE, NULL);
        if (ext->stop) break;
        while ((irp = IoCsqRemoveNextIrp(&ext->csq, NULL)) != NULL) {
            CompleteQueued(ext, irp);
            InterlockedIncrement((LONG volatile *)&g_csq_counts.completed);
        }
    }
    PsTerminateSystemThread(STATUS_SUCCESS);
}

/* The device's removal: waits for every IRP that holds the remove lock, then completes REMOVE. */
static VOID CsqTestRemoveDevice(PDEVICE_OBJECT Device, PVOID Context) {
    CSQ_TEST_DEVICE *ext = (CSQ_TEST_DEVICE *)Context;
    PIRP irp = ext->remove_irp;
    UNREFERENCED_PARAMETER(Device);
    PAGED_CODE();
    IoReleaseRemoveLockAndWait(&ext->remove_lock, irp); /* gives back REMOVE's own acquisition too */
    if (ext->remove_twice) IoReleaseRemoveLockAndWait(&ext->remove_lock, irp); /* the bug */
    *(ULONGLONG *)irp->AssociatedIrp.SystemBuffer = KeQueryInterruptTime();
    (void)CompleteWith(irp, STATUS_SUCCESS, sizeof(ULONGLONG));
}

/* ---- dispatch ---- */

static NTSTATUS CsqTestOpenClose(PDEVICE_OBJECT Device, PIRP Irp) {
    UNREFERENCED_PARAMETER(Device);
    return CompleteWith(Irp, STATUS_SUCCESS, 0);
}

/* The open's handle closed: what it left queued completes as cancelled. */
static NTSTATUS CsqTestCleanup(PDEVICE_OBJECT Device, PIRP Irp) {
    CSQ_TEST_DEVICE *ext = (CSQ_TEST_DEVICE *)Device->DeviceExtension;
    PFILE_OBJECT file = IoGetCurrentIrpStackLocation(Irp)->FileObject;
    PIRP queued;
    while ((queued = IoCsqRemoveNextIrp(&ext->csq, file)) != NULL) {
        InterlockedIncrement((LONG volatile *)&g_csq_counts.cleaned_up);
        (void)CompleteWith(queued, STATUS_CANCELLED, 0);
        IoReleaseRemoveLock(&ext->remove_lock, queued);
    }
    return CompleteWith(Irp, STATUS_SUCCESS, 0);
}

/* Every device control holds the remove lock, tagged with its IRP, until it completes. */
static NTSTATUS CsqTestDeviceControl(PDEVICE_OBJECT Device, PIRP Irp) {
    CSQ_TEST_DEVICE *ext = (CSQ_TEST_DEVICE *)Device->DeviceExtension;
    PIO_STACK_LOCATION stack = IoGetCurrentIrpStackLocation(Irp);
    ULONG code = stack->Parameters.DeviceIoControl.IoControlCode;
    ULONG in = stack->Parameters.DeviceIoControl.InputBufferLength;
    ULONG out = stack->Parameters.DeviceIoControl.OutputBufferLength;
    NTSTATUS status;
    PAGED_CODE();
    status = IoAcquireRemoveLock(&ext->remove_lock, Irp);
    if (!NT_SUCCESS(status)) return CompleteWith(Irp, status, 0); /* the device is going away */
    switch (code) {
        case CSQ_TEST_QUEUE:
        case CSQ_TEST_NOTIFY:
            if (in < sizeof(ULONG) || out < sizeof(CsqTestResult)) {
                status = STATUS_BUFFER_TOO_SMALL;
                break;
            }
            status = IoCsqInsertIrpEx(&ext->csq, Irp, code == CSQ_TEST_NOTIFY ? &ext->notify : NULL,
                                      (PVOID)&g_queue_limit);
            if (NT_SUCCESS(status)) return STATUS_PENDING; /* it keeps the remove lock until completed */
            break;
        case CSQ_TEST_TAKE: {
            PIRP taken = IoCsqRemoveIrp(&ext->csq, &ext->notify);
            if (taken == NULL) {
                status = STATUS_NOT_FOUND;
                break;
            }
            CompleteQueued(ext, taken);
            status = STATUS_SUCCESS;
            break;
        }
        case CSQ_TEST_DRAIN:
            (void)KeSetEvent(&ext->work, IO_NO_INCREMENT, FALSE);
            status = STATUS_SUCCESS;
            break;
        case CSQ_TEST_REMOVE:
        case CSQ_TEST_REMOVE_TWICE:
            if (out < sizeof(ULONGLONG)) {
                status = STATUS_BUFFER_TOO_SMALL;
                break;
            }
            /* The wait needs PASSIVE_LEVEL and a thread of its own: a work item does it. */
            IoMarkIrpPending(Irp);
            ext->remove_irp = Irp;
            ext->remove_twice = code == CSQ_TEST_REMOVE_TWICE;
            IoQueueWorkItem(ext->remove_item, CsqTestRemoveDevice, DelayedWorkQueue, ext);
            return STATUS_PENDING;
        case CSQ_TEST_REMOVE_AT_DISPATCH: {
            KIRQL old;
            KeRaiseIrql(DISPATCH_LEVEL, &old);
            IoReleaseRemoveLockAndWait(&ext->remove_lock, Irp); /* the bug */
            KeLowerIrql(old);
            return CompleteWith(Irp, STATUS_SUCCESS, 0);
        }
        case CSQ_TEST_RELEASE_TWICE:
            IoReleaseRemoveLock(&ext->remove_lock, Irp); /* the bug: released again below */
            status = STATUS_SUCCESS;
            break;
        case CSQ_TEST_RELEASE_OTHER_TAG:
            IoReleaseRemoveLock(&ext->remove_lock, Device); /* the bug: it was acquired under the IRP */
            status = STATUS_SUCCESS;
            break;
        default:
            status = STATUS_INVALID_DEVICE_REQUEST;
            break;
    }
    (void)CompleteWith(Irp, status, 0);
    IoReleaseRemoveLock(&ext->remove_lock, Irp);
    return status;
}

/* ---- load and unload ---- */

static VOID CsqTestUnload(PDRIVER_OBJECT Driver) {
    CSQ_TEST_DEVICE *ext = (CSQ_TEST_DEVICE *)Driver->DeviceObject->DeviceExtension;
    PAGED_CODE();
    ext->stop = TRUE;
    (void)KeSetEvent(&ext->work, IO_NO_INCREMENT, FALSE);
    (void)KeWaitForSingleObject(ext->worker, Executive, KernelMode, FALSE, NULL);
    ObDereferenceObject(ext->worker);
    IoFreeWorkItem(ext->remove_item);
    (void)IoDeleteSymbolicLink(&g_link_name);
    IoDeleteDevice(Driver->DeviceObject);
}

NTSTATUS CsqTestDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    PDEVICE_OBJECT device = NULL;
    CSQ_TEST_DEVICE *ext;
    HANDLE thread;
    NTSTATUS status;
    UNREFERENCED_PARAMETER(RegistryPath);
    PAGED_CODE();
    RtlZeroMemory(&g_csq_counts, sizeof(g_csq_counts));
    status = IoCreateDevice(Driver, sizeof(CSQ_TEST_DEVICE), &g_device_name, FILE_DEVICE_UNKNOWN,
                            FILE_DEVICE_SECURE_OPEN, FALSE, &device);
    if (!NT_SUCCESS(status)) return status;
    ext = (CSQ_TEST_DEVICE *)device->DeviceExtension;
    InitializeListHead(&ext->queue);
    KeInitializeSpinLock(&ext->queue_lock);
    (void)IoCsqInitializeEx(&ext->csq, CsqTestInsertIrp, CsqTestRemoveIrp, CsqTestPeekNextIrp, CsqTestAcquireLock,
                            CsqTestReleaseLock, CsqTestCompleteCanceledIrp);
    IoInitializeRemoveLock(&ext->remove_lock, CSQ_TEST_TAG, 0, 0);
    KeInitializeEvent(&ext->work, SynchronizationEvent, FALSE);
    ext->remove_item = IoAllocateWorkItem(device);
    if (ext->remove_item == NULL) {
        IoDeleteDevice(device);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    status = PsCreateSystemThread(&thread, THREAD_ALL_ACCESS, NULL, NULL, NULL, CsqTestWorker, ext);
    if (NT_SUCCESS(status)) {
        status = ObReferenceObjectByHandle(thread, SYNCHRONIZE, *PsThreadType, KernelMode, &ext->worker, NULL);
        (void)ZwClose(thread);
    }
    if (NT_SUCCESS(status)) status = IoCreateSymbolicLink(&g_link_name, &g_device_name);
    if (!NT_SUCCESS(status)) {
        if (ext->worker != NULL) {
            ext->stop = TRUE;
            (void)KeSetEvent(&ext->work, IO_NO_INCREMENT, FALSE);
            (void)KeWaitForSingleObject(ext->worker, Executive, KernelMode, FALSE, NULL);
            ObDereferenceObject(ext->worker);
        }
        IoFreeWorkItem(ext->remove_item);
        IoDeleteDevice(device);
        return status;
    }
    Driver->MajorFunction[IRP_MJ_CREATE] = CsqTestOpenClose;
    Driver->MajorFunction[IRP_MJ_CLOSE] = CsqTestOpenClose;
    Driver->MajorFunction[IRP_MJ_CLEANUP] = CsqTestCleanup;
    Driver->MajorFunction[IRP_MJ_DEVICE_CONTROL] = CsqTestDeviceControl;
    Driver->DriverUnload = CsqTestUnload;
    device->Flags &= ~DO_DEVICE_INITIALIZING;
    return STATUS_SUCCESS;
}
