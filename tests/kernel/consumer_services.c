/* SPDX-License-Identifier: MIT */
/* Windows kernel-style C code, compiled against the kernel environment's stand-in WDK headers
 * exactly as a driver would be. Each Scenario* function is one behaviour that
 * tests/kernel_services_test.cc runs on a kernel thread and checks. */
#include <ndis.h>
#include <netioapi.h>
#include <ntddk.h>
#include <wdm.h>
#include <wsk.h>
#include <wskndk.h>

#include "consumer_services.h"

#define TAG_TEST 'tseT'

KernelTestResults g_results;

/* A pointer the compiler cannot see is NULL: the crash scenarios write through it. */
static volatile ULONG *volatile g_nowhere = NULL;

/* ---- adapter open the real way: WSK, its NDK extension, an interface index from netio ---- */

static const WSK_CLIENT_DISPATCH g_client_dispatch = {MAKE_WSK_VERSION(1, 0), 0, NULL};

/* A WSK client's registration, its capture of the provider, and the provider's NDK extension. */
typedef struct _WSK_SESSION {
    WSK_CLIENT_NPI client;
    WSK_REGISTRATION registration;
    WSK_PROVIDER_NPI provider;
    WSK_PROVIDER_NDK_DISPATCH ndk;
} WSK_SESSION;

static NTSTATUS OpenWskSession(WSK_SESSION *Session) {
    SIZE_T returned = 0;
    NTSTATUS status;
    Session->client.ClientContext = NULL;
    Session->client.Dispatch = &g_client_dispatch;
    status = WskRegister(&Session->client, &Session->registration);
    if (!NT_SUCCESS(status)) return status;
    status = WskCaptureProviderNPI(&Session->registration, WSK_NO_WAIT, &Session->provider);
    if (!NT_SUCCESS(status)) return status;
    status = Session->provider.Dispatch->WskControlClient(Session->provider.Client,
                                                          WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH, 0, NULL,
                                                          sizeof(Session->ndk), &Session->ndk, &returned, NULL);
    g_results.ndk_dispatch_bytes = (ULONG)returned;
    return status;
}

static VOID CloseWskSession(WSK_SESSION *Session) {
    WskReleaseProviderNPI(&Session->registration);
    WskDeregister(&Session->registration);
}

/* The interface index of the machine's interface with this IPv4 address, from netio; 0 if none. */
static NET_IFINDEX IfIndexOfAddress(ULONG ipv4_network_order) {
    PMIB_UNICASTIPADDRESS_TABLE table = NULL;
    NET_IFINDEX if_index = 0;
    ULONG i;
    if (!NT_SUCCESS(GetUnicastIpAddressTable(AF_INET, &table))) return 0;
    for (i = 0; i < table->NumEntries; ++i) {
        if (table->Table[i].Address.Ipv4.sin_addr.s_addr == ipv4_network_order) {
            if_index = table->Table[i].InterfaceIndex;
        }
    }
    FreeMibTable(table);
    return if_index;
}

NTSTATUS ScenarioOpenAdapterThroughWsk(ULONG ipv4_network_order) {
    WSK_SESSION wsk;
    NET_IFINDEX if_index;
    NDK_ADAPTER *adapter = NULL;
    NDK_ADAPTER_INFO info;
    ULONG info_size = sizeof(info);
    NTSTATUS status;

    PAGED_CODE();
    status = OpenWskSession(&wsk);
    if (!NT_SUCCESS(status)) return status;
    if_index = IfIndexOfAddress(ipv4_network_order);
    g_results.if_index = if_index;

    g_results.loopback_open_status = wsk.ndk.WskOpenNdkAdapter(wsk.provider.Client, (NDK_VERSION){2, 0}, 1, &adapter);
    g_results.unknown_open_status =
        wsk.ndk.WskOpenNdkAdapter(wsk.provider.Client, (NDK_VERSION){2, 0}, if_index + 1, &adapter);

    status = wsk.ndk.WskOpenNdkAdapter(wsk.provider.Client, (NDK_VERSION){2, 0}, if_index, &adapter);
    if (!NT_SUCCESS(status)) return status;
    RtlZeroMemory(&info, sizeof(info));
    info.Version.Major = 2;
    info.Version.Minor = 0;
    status = adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &info_size);
    g_results.max_receive_sge = info.MaxReceiveRequestSge;
    wsk.ndk.WskCloseNdkAdapter(wsk.provider.Client, adapter);
    CloseWskSession(&wsk);
    return status;
}

/* ---- provider callbacks run for the driver that owns the object ----
 * The driver opens an adapter in DriverEntry and creates a PD with a completion callback; the
 * provider pends the create (AsyncCompletion::kPending) and calls back later, from its own
 * context. The callback allocates pool and queues a work item, as a listener's connect event
 * does to accept; the work item opens a second adapter of the machine, as a socket layer with an
 * adapter per socket does. */

typedef struct _CALLBACK_DRIVER {
    WSK_SESSION wsk;
    NET_IFINDEX if_index;
    NDK_ADAPTER *adapter;
    NDK_PD *pd;
    PIO_WORKITEM io_item;  /* allocated for the driver object, as the WDK allows */
    WORK_QUEUE_ITEM ex_item;
    BOOLEAN use_ex_item;
    KTIMER timer;  /* the timer variant: a timer's DPC queues the work item, no PD is created */
    KDPC timer_dpc;
    BOOLEAN free_callback_pool;  /* at unload; when not, the block is the driver's leak */
    PVOID callback_pool;
    KEVENT done;
} CALLBACK_DRIVER;

static CALLBACK_DRIVER g_callback_driver;

#define TAG_CALLBACK 'kbaC'

static VOID OpenSecondAdapter(CALLBACK_DRIVER *Driver) {
    NDK_ADAPTER *second = NULL;
    g_results.work_open_status =
        Driver->wsk.ndk.WskOpenNdkAdapter(Driver->wsk.provider.Client, (NDK_VERSION){2, 0}, Driver->if_index, &second);
    if (NT_SUCCESS(g_results.work_open_status)) Driver->wsk.ndk.WskCloseNdkAdapter(Driver->wsk.provider.Client, second);
    KeSetEvent(&Driver->done, IO_NO_INCREMENT, FALSE);
}

static VOID OpenSecondAdapterIoWorker(PDEVICE_OBJECT Device, PVOID Context) {
    UNREFERENCED_PARAMETER(Device);
    OpenSecondAdapter((CALLBACK_DRIVER *)Context);
}

static VOID OpenSecondAdapterExWorker(PVOID Context) { OpenSecondAdapter((CALLBACK_DRIVER *)Context); }

static VOID PdCreated(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER *Header) {
    CALLBACK_DRIVER *driver = (CALLBACK_DRIVER *)Context;
    g_results.callback_irql = KeGetCurrentIrql();
    if (g_results.crash_in_callback) *g_nowhere = 1;
    if (g_results.assert_in_callback) {
        volatile ULONG *nowhere = NULL;
        NT_ASSERT(Header == NULL); /* fails: the run must stop here, */
        *nowhere = 1;              /* before this line crashes the process */
    }
    driver->pd = NT_SUCCESS(Status) ? CONTAINING_RECORD(Header, NDK_PD, Header) : NULL;
    driver->callback_pool = ExAllocatePool2(POOL_FLAG_NON_PAGED, 61, TAG_CALLBACK);
    if (driver->use_ex_item) {
        ExInitializeWorkItem(&driver->ex_item, OpenSecondAdapterExWorker, driver);
        ExQueueWorkItem(&driver->ex_item, DelayedWorkQueue);
    } else {
        IoQueueWorkItem(driver->io_item, OpenSecondAdapterIoWorker, DelayedWorkQueue, driver);
    }
}

static VOID QueueFromTimerDpc(PKDPC Dpc, PVOID Context, PVOID Arg1, PVOID Arg2) {
    CALLBACK_DRIVER *driver = (CALLBACK_DRIVER *)Context;
    UNREFERENCED_PARAMETER(Dpc);
    UNREFERENCED_PARAMETER(Arg1);
    UNREFERENCED_PARAMETER(Arg2);
    ExInitializeWorkItem(&driver->ex_item, OpenSecondAdapterExWorker, driver);
    ExQueueWorkItem(&driver->ex_item, DelayedWorkQueue);
}

static VOID CallbackDriverUnload(PDRIVER_OBJECT Driver) {
    CALLBACK_DRIVER *driver = &g_callback_driver;
    UNREFERENCED_PARAMETER(Driver);
    if (driver->pd != NULL) (void)driver->pd->Dispatch->NdkClosePd(&driver->pd->Header, NULL, NULL);
    driver->wsk.ndk.WskCloseNdkAdapter(driver->wsk.provider.Client, driver->adapter);
    IoFreeWorkItem(driver->io_item);
    if (driver->free_callback_pool && driver->callback_pool != NULL) ExFreePoolWithTag(driver->callback_pool, TAG_CALLBACK);
    CloseWskSession(&driver->wsk);
}

static NTSTATUS StartCallbackDriver(PDRIVER_OBJECT Driver) {
    CALLBACK_DRIVER *driver = &g_callback_driver;
    NTSTATUS status;
    PAGED_CODE();
    Driver->DriverUnload = CallbackDriverUnload;
    KeInitializeEvent(&driver->done, NotificationEvent, FALSE);
    status = OpenWskSession(&driver->wsk);
    if (!NT_SUCCESS(status)) return status;
    driver->if_index = IfIndexOfAddress(g_results.callback_driver_ipv4);
    status = driver->wsk.ndk.WskOpenNdkAdapter(driver->wsk.provider.Client, (NDK_VERSION){2, 0}, driver->if_index,
                                               &driver->adapter);
    if (!NT_SUCCESS(status)) return status;
    driver->io_item = IoAllocateWorkItem((PDEVICE_OBJECT)Driver);
    if (driver->io_item == NULL) return STATUS_INSUFFICIENT_RESOURCES;
    if (g_results.callback_from_timer) {
        LARGE_INTEGER due;
        due.QuadPart = -100; /* 10 microseconds */
        KeInitializeTimer(&driver->timer);
        KeInitializeDpc(&driver->timer_dpc, QueueFromTimerDpc, driver);
        KeSetTimer(&driver->timer, due, &driver->timer_dpc);
        return KeWaitForSingleObject(&driver->done, Executive, KernelMode, FALSE, NULL);
    }
    status = driver->adapter->Dispatch->NdkCreatePd(driver->adapter, PdCreated, driver, &driver->pd);
    g_results.create_status = status;
    if (status != STATUS_PENDING) return STATUS_UNSUCCESSFUL;  /* the scenario needs the callback */
    return KeWaitForSingleObject(&driver->done, Executive, KernelMode, FALSE, NULL);
}

NTSTATUS CallbackDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    RtlZeroMemory(&g_callback_driver, sizeof(g_callback_driver));
    g_callback_driver.free_callback_pool = TRUE;
    return StartCallbackDriver(Driver);
}

NTSTATUS CallbackExWorkItemDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    RtlZeroMemory(&g_callback_driver, sizeof(g_callback_driver));
    g_callback_driver.free_callback_pool = TRUE;
    g_callback_driver.use_ex_item = TRUE;
    return StartCallbackDriver(Driver);
}

NTSTATUS CallbackLeakyDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    RtlZeroMemory(&g_callback_driver, sizeof(g_callback_driver));
    return StartCallbackDriver(Driver);
}

/* ---- a machine with two RNICs ---- */

/* Finds both RNICs' interfaces by their addresses, opens an adapter on each, and converts their
 * LUIDs to aliases and names and back. */
NTSTATUS ScenarioTwoRnicsOnOneMachine(ULONG first_ipv4, ULONG second_ipv4) {
    WSK_SESSION wsk;
    PMIB_IF_TABLE2 interfaces = NULL;
    NDK_ADAPTER *first = NULL;
    NDK_ADAPTER *second = NULL;
    NET_LUID luid;
    NET_LUID back;
    WCHAR text[NDIS_IF_MAX_STRING_SIZE + 1];
    NTSTATUS status;
    ULONG i;

    PAGED_CODE();
    status = OpenWskSession(&wsk);
    if (!NT_SUCCESS(status)) return status;
    status = GetIfTable2(&interfaces);
    if (!NT_SUCCESS(status)) return status;
    g_results.interface_count = interfaces->NumEntries;
    FreeMibTable(interfaces);
    g_results.if_index = IfIndexOfAddress(first_ipv4);
    g_results.second_if_index = IfIndexOfAddress(second_ipv4);

    g_results.first_open_status =
        wsk.ndk.WskOpenNdkAdapter(wsk.provider.Client, (NDK_VERSION){2, 0}, g_results.if_index, &first);
    g_results.second_open_status =
        wsk.ndk.WskOpenNdkAdapter(wsk.provider.Client, (NDK_VERSION){2, 0}, g_results.second_if_index, &second);
    g_results.adapters_differ = first != NULL && second != NULL && first != second;

    /* The second RNIC's alias and name, and back to its LUID. */
    status = ConvertInterfaceIndexToLuid(g_results.second_if_index, &luid);
    if (!NT_SUCCESS(status)) return status;
    g_results.alias_status = ConvertInterfaceLuidToAlias(&luid, text, RTL_NUMBER_OF(text));
    for (i = 0; i < RTL_NUMBER_OF(g_results.alias) - 1 && text[i] != 0; ++i) g_results.alias[i] = (char)text[i];
    g_results.alias_round_trip = NT_SUCCESS(ConvertInterfaceAliasToLuid(text, &back)) && back.Value == luid.Value;
    g_results.name_status = ConvertInterfaceLuidToNameW(&luid, text, RTL_NUMBER_OF(text));
    for (i = 0; i < RTL_NUMBER_OF(g_results.name) - 1 && text[i] != 0; ++i) g_results.name[i] = (char)text[i];
    g_results.name_round_trip = NT_SUCCESS(ConvertInterfaceNameToLuidW(text, &back)) && back.Value == luid.Value;
    g_results.short_buffer_status = ConvertInterfaceLuidToAlias(&luid, text, 3);

    if (first != NULL) wsk.ndk.WskCloseNdkAdapter(wsk.provider.Client, first);
    if (second != NULL) wsk.ndk.WskCloseNdkAdapter(wsk.provider.Client, second);
    CloseWskSession(&wsk);
    return STATUS_SUCCESS;
}

/* ---- timers and DPCs on simulated time ---- */

static VOID TimerDpc(PKDPC Dpc, PVOID Context, PVOID Arg1, PVOID Arg2) {
    UNREFERENCED_PARAMETER(Dpc);
    UNREFERENCED_PARAMETER(Arg1);
    UNREFERENCED_PARAMETER(Arg2);
    g_results.dpc_irql = KeGetCurrentIrql();
    g_results.dpc_time = KeQueryInterruptTime();
    KeSetEvent((PKEVENT)Context, IO_NO_INCREMENT, FALSE);
}

VOID ScenarioTimerDpc(VOID) {
    KTIMER timer;
    KDPC dpc;
    KEVENT fired;
    LARGE_INTEGER due;
    KeInitializeEvent(&fired, NotificationEvent, FALSE);
    KeInitializeTimer(&timer);
    KeInitializeDpc(&dpc, TimerDpc, &fired);
    g_results.start_time = KeQueryInterruptTime();
    due.QuadPart = -1000; /* 100 microseconds */
    KeSetTimer(&timer, due, &dpc);
    KeWaitForSingleObject(&fired, Executive, KernelMode, FALSE, NULL);
    g_results.timer_signaled = KeReadStateTimer(&timer);
    g_results.wake_time = KeQueryInterruptTime();
}

NTSTATUS ScenarioWaitTimesOut(VOID) {
    KEVENT never;
    LARGE_INTEGER timeout;
    NTSTATUS status;
    KeInitializeEvent(&never, SynchronizationEvent, FALSE);
    timeout.QuadPart = -250; /* 25 microseconds */
    g_results.start_time = KeQueryInterruptTime();
    status = KeWaitForSingleObject(&never, Executive, KernelMode, FALSE, &timeout);
    g_results.wake_time = KeQueryInterruptTime();
    return status;
}

/* ---- work items, system threads ---- */

typedef struct _WORK_CONTEXT {
    KEVENT done;
    KIRQL irql;
    PIO_WORKITEM item;
} WORK_CONTEXT;

static VOID WorkRoutine(PDEVICE_OBJECT Device, PVOID Context) {
    WORK_CONTEXT *work = (WORK_CONTEXT *)Context;
    UNREFERENCED_PARAMETER(Device);
    work->irql = KeGetCurrentIrql();
    KeSetEvent(&work->done, IO_NO_INCREMENT, FALSE);
}

static VOID QueueFromDpc(PKDPC Dpc, PVOID Context, PVOID Arg1, PVOID Arg2) {
    WORK_CONTEXT *work = (WORK_CONTEXT *)Context;
    UNREFERENCED_PARAMETER(Dpc);
    UNREFERENCED_PARAMETER(Arg1);
    UNREFERENCED_PARAMETER(Arg2);
    IoQueueWorkItem(work->item, WorkRoutine, DelayedWorkQueue, work);
}

/* A DPC queues a work item; the work item runs at PASSIVE_LEVEL and releases the waiting thread. */
NTSTATUS ScenarioWorkItemFromDpc(PDRIVER_OBJECT Driver) {
    PDEVICE_OBJECT device = NULL;
    WORK_CONTEXT work;
    KDPC dpc;
    NTSTATUS status = IoCreateDevice(Driver, 0, NULL, FILE_DEVICE_NETWORK, 0, FALSE, &device);
    if (!NT_SUCCESS(status)) return status;
    KeInitializeEvent(&work.done, NotificationEvent, FALSE);
    work.irql = HIGH_LEVEL;
    work.item = IoAllocateWorkItem(device);
    KeInitializeDpc(&dpc, QueueFromDpc, &work);
    KeInsertQueueDpc(&dpc, NULL, NULL);
    KeWaitForSingleObject(&work.done, Executive, KernelMode, FALSE, NULL);
    g_results.work_irql = work.irql;
    IoFreeWorkItem(work.item);
    IoDeleteDevice(device);
    return STATUS_SUCCESS;
}

static VOID CountingThread(PVOID Context) {
    LONG volatile *counter = (LONG volatile *)Context;
    LARGE_INTEGER delay;
    delay.QuadPart = -10; /* 1 microsecond */
    InterlockedIncrement(counter);
    KeDelayExecutionThread(KernelMode, FALSE, &delay);
    InterlockedIncrement(counter);
    PsTerminateSystemThread(STATUS_SUCCESS);
}

NTSTATUS ScenarioSystemThreadIsWaitable(VOID) {
    HANDLE handle;
    PVOID thread;
    LONG volatile counter = 0;
    NTSTATUS status = PsCreateSystemThread(&handle, THREAD_ALL_ACCESS, NULL, NULL, NULL, CountingThread, (PVOID)&counter);
    if (!NT_SUCCESS(status)) return status;
    status = ObReferenceObjectByHandle(handle, SYNCHRONIZE, *PsThreadType, KernelMode, &thread, NULL);
    ZwClose(handle);
    if (!NT_SUCCESS(status)) return status;
    status = KeWaitForSingleObject(thread, Executive, KernelMode, FALSE, NULL);
    ObDereferenceObject(thread);
    g_results.thread_counter = counter;
    return status;
}

/* ---- MDLs, pool, lists, rundown ---- */

NTSTATUS ScenarioMdlOfPool(VOID) {
    UCHAR *buffer = (UCHAR *)ExAllocatePool2(POOL_FLAG_NON_PAGED, 3 * PAGE_SIZE, TAG_TEST);
    PMDL mdl;
    if (buffer == NULL) return STATUS_INSUFFICIENT_RESOURCES;
    mdl = IoAllocateMdl(buffer + 100, 2 * PAGE_SIZE, FALSE, FALSE, NULL);
    if (mdl == NULL) return STATUS_INSUFFICIENT_RESOURCES;
    MmBuildMdlForNonPagedPool(mdl);
    g_results.mdl_system_address_matches = MmGetSystemAddressForMdlSafe(mdl, NormalPagePriority) == buffer + 100;
    g_results.mdl_byte_count = MmGetMdlByteCount(mdl);
    g_results.mdl_byte_offset = MmGetMdlByteOffset(mdl);
    g_results.zeroed = buffer[0] == 0 && buffer[3 * PAGE_SIZE - 1] == 0;
    IoFreeMdl(mdl);
    ExFreePoolWithTag(buffer, TAG_TEST);
    return STATUS_SUCCESS;
}

typedef struct _ITEM {
    LIST_ENTRY link;
    int value;
} ITEM;

int ScenarioListsKeepOrder(VOID) {
    LIST_ENTRY head;
    ITEM items[3];
    int i, sum = 0;
    InitializeListHead(&head);
    for (i = 0; i < 3; ++i) {
        items[i].value = i + 1;
        InsertTailList(&head, &items[i].link);
    }
    RemoveEntryList(&items[1].link);
    while (!IsListEmpty(&head)) {
        ITEM *item = CONTAINING_RECORD(RemoveHeadList(&head), ITEM, link);
        sum = sum * 10 + item->value;
    }
    return sum; /* 13 */
}

static EX_RUNDOWN_REF g_rundown;

static VOID HoldRundown(PVOID Context) {
    LARGE_INTEGER delay;
    UNREFERENCED_PARAMETER(Context);
    delay.QuadPart = -500; /* 50 microseconds */
    KeDelayExecutionThread(KernelMode, FALSE, &delay);
    ExReleaseRundownProtection(&g_rundown);
}

NTSTATUS ScenarioRundownWaitsForRelease(VOID) {
    HANDLE handle;
    NTSTATUS status;
    ExInitializeRundownProtection(&g_rundown);
    if (!ExAcquireRundownProtection(&g_rundown)) return STATUS_UNSUCCESSFUL;
    status = PsCreateSystemThread(&handle, THREAD_ALL_ACCESS, NULL, NULL, NULL, HoldRundown, NULL);
    if (!NT_SUCCESS(status)) return status;
    ZwClose(handle);
    g_results.start_time = KeQueryInterruptTime();
    ExWaitForRundownProtectionRelease(&g_rundown);
    g_results.wake_time = KeQueryInterruptTime();
    g_results.acquire_after_rundown = ExAcquireRundownProtection(&g_rundown);
    return STATUS_SUCCESS;
}

/* ---- what the verifier catches ---- */

VOID ViolationWaitAtDispatch(VOID) {
    KSPIN_LOCK lock;
    KIRQL old;
    KEVENT event;
    KeInitializeSpinLock(&lock);
    KeInitializeEvent(&event, NotificationEvent, FALSE);
    KeAcquireSpinLock(&lock, &old);
    KeWaitForSingleObject(&event, Executive, KernelMode, FALSE, NULL); /* the violation */
    KeReleaseSpinLock(&lock, old);
}

VOID ViolationSpinLockReleasedTwiceAtPassive(VOID) {
    KSPIN_LOCK lock;
    KIRQL old;
    KeInitializeSpinLock(&lock);
    KeAcquireSpinLock(&lock, &old);
    KeReleaseSpinLock(&lock, old);
    KeReleaseSpinLock(&lock, old); /* the violation, at the IRQL the first release restored */
}

VOID ViolationSpinLockReleasedTwice(VOID) {
    KSPIN_LOCK lock;
    KLOCK_QUEUE_HANDLE handle;
    KIRQL old;
    KeInitializeSpinLock(&lock);
    KeAcquireInStackQueuedSpinLock(&lock, &handle);
    KeReleaseInStackQueuedSpinLock(&handle);
    KeRaiseIrql(DISPATCH_LEVEL, &old);
    KeReleaseSpinLockFromDpcLevel(&lock); /* the violation */
    KeLowerIrql(old);
}

VOID ViolationPagedCodeAtDispatch(VOID) {
    KIRQL old;
    KeRaiseIrql(DISPATCH_LEVEL, &old);
    PAGED_CODE(); /* the violation */
    KeLowerIrql(old);
}

VOID ViolationSetEventAfterFree(VOID) {
    PKEVENT event = (PKEVENT)ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(KEVENT), TAG_TEST);
    KeInitializeEvent(event, NotificationEvent, FALSE);
    ExFreePoolWithTag(event, TAG_TEST);
    KeSetEvent(event, IO_NO_INCREMENT, FALSE); /* the violation */
}

VOID ViolationFreeWithWrongTag(VOID) {
    PVOID p = ExAllocatePool2(POOL_FLAG_NON_PAGED, 64, TAG_TEST);
    ExFreePoolWithTag(p, 'gnrW'); /* the violation */
}

/* ---- special pool: writes outside a block, and into a freed one ---- */

VOID ViolationOverrunPool(VOID) {
    UCHAR *p = (UCHAR *)ExAllocatePool2(POOL_FLAG_NON_PAGED, 61, TAG_TEST);
    volatile UCHAR *q = p;
    q[61] = 1; /* the violation: one byte past the end */
    ExFreePoolWithTag(p, TAG_TEST);
}

VOID ViolationUnderrunPool(VOID) {
    UCHAR *p = (UCHAR *)ExAllocatePool2(POOL_FLAG_NON_PAGED, 61, TAG_TEST);
    volatile UCHAR *q = p - 4;
    *q = 1; /* the violation: four bytes before the start */
    ExFreePoolWithTag(p, TAG_TEST);
}

VOID ViolationWriteAfterFree(VOID) {
    UCHAR *p = (UCHAR *)ExAllocatePool2(POOL_FLAG_NON_PAGED, 64, TAG_TEST);
    volatile UCHAR *q = p;
    ExFreePoolWithTag(p, TAG_TEST);
    q[10] = 1; /* the violation */
}

/* ---- dispatcher objects freed or made anew under a waiting thread ---- */

static VOID WaitOnEvent(PVOID Context) {
    KeWaitForSingleObject((PKEVENT)Context, Executive, KernelMode, FALSE, NULL);
    PsTerminateSystemThread(STATUS_SUCCESS);
}

/* Starts a system thread that waits on `event`, and lets it block. */
static VOID StartWaiter(PKEVENT event) {
    HANDLE handle;
    LARGE_INTEGER delay;
    delay.QuadPart = -10; /* 1 microsecond */
    if (NT_SUCCESS(PsCreateSystemThread(&handle, THREAD_ALL_ACCESS, NULL, NULL, NULL, WaitOnEvent, event))) {
        ZwClose(handle);
    }
    KeDelayExecutionThread(KernelMode, FALSE, &delay);
}

VOID ViolationFreeEventWithWaiter(VOID) {
    PKEVENT event = (PKEVENT)ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(KEVENT), TAG_TEST);
    KeInitializeEvent(event, NotificationEvent, FALSE);
    StartWaiter(event);
    ExFreePoolWithTag(event, TAG_TEST); /* the violation: the thread still waits on it */
}

static KEVENT g_waited_on;

VOID ViolationReinitializeEventWithWaiter(VOID) {
    KeInitializeEvent(&g_waited_on, NotificationEvent, FALSE);
    StartWaiter(&g_waited_on);
    KeInitializeEvent(&g_waited_on, NotificationEvent, FALSE); /* the violation */
}

/* ---- lock order: a thread takes A then B, a DPC B then A ---- */

static KSPIN_LOCK g_lock_a;
static KSPIN_LOCK g_lock_b;
static KDPC g_order_dpc;

static VOID TakeBThenA(PKDPC Dpc, PVOID Context, PVOID Arg1, PVOID Arg2) {
    UNREFERENCED_PARAMETER(Dpc);
    UNREFERENCED_PARAMETER(Context);
    UNREFERENCED_PARAMETER(Arg1);
    UNREFERENCED_PARAMETER(Arg2);
    KeAcquireSpinLockAtDpcLevel(&g_lock_b);
    KeAcquireSpinLockAtDpcLevel(&g_lock_a); /* the violation: the reverse of the thread's order */
    KeReleaseSpinLockFromDpcLevel(&g_lock_a);
    KeReleaseSpinLockFromDpcLevel(&g_lock_b);
}

static VOID TakeAThenB(VOID) {
    KIRQL old;
    KeAcquireSpinLock(&g_lock_a, &old);
    KeAcquireSpinLockAtDpcLevel(&g_lock_b);
    KeReleaseSpinLockFromDpcLevel(&g_lock_b);
    KeReleaseSpinLock(&g_lock_a, old);
}

VOID ViolationLockOrderInversion(VOID) {
    KeInitializeSpinLock(&g_lock_a);
    KeInitializeSpinLock(&g_lock_b);
    TakeAThenB();
    KeInitializeDpc(&g_order_dpc, TakeBThenA, NULL);
    KeInsertQueueDpc(&g_order_dpc, NULL, NULL); /* runs at once: the caller is below DISPATCH_LEVEL */
}

/* The same order twice is no inversion; nor is the reverse order on a lock initialized again
 * (a new lock, as one on a stack is). */
VOID ScenarioLockOrderKeptOrRenewed(VOID) {
    KeInitializeSpinLock(&g_lock_a);
    KeInitializeSpinLock(&g_lock_b);
    TakeAThenB();
    TakeAThenB();
    KeInitializeSpinLock(&g_lock_a);
    KeInitializeDpc(&g_order_dpc, TakeBThenA, NULL);
    KeInsertQueueDpc(&g_order_dpc, NULL, NULL);
}

/* ---- structured exception handling ---- */

/* A __try block with an __except handler, then one with a __finally block: 1 + 10 + 1000. */
LONG ScenarioTryExceptFinally(VOID) {
    LONG steps = 0;
    __try {
        steps += 1;
    } __except (EXCEPTION_EXECUTE_HANDLER) {
        steps += 100; /* never: nothing raised */
    }
    __try {
        steps += 10;
    } __finally {
        steps += 1000;
    }
    return steps;
}

VOID ViolationProbeMisaligned(VOID) {
    static ULONG buffer[4];
    __try {
        ProbeForRead((UCHAR *)buffer + 1, sizeof(ULONG), sizeof(ULONG)); /* raises: misaligned */
    } __except (EXCEPTION_EXECUTE_HANDLER) {
        g_results.thread_counter = -1;
    }
}

/* ---- crashes: a wild write, a stack overflow ---- */

VOID CrashWriteThroughNull(VOID) { *g_nowhere = 1; }

/* Each level keeps a page of its own on the stack, and uses it after the call below, so no
 * compiler makes the recursion a loop. It stops only at a depth no kernel stack reaches. */
static ULONG Recurse(ULONG depth) {
    volatile UCHAR page[4096];
    page[0] = (UCHAR)depth;
    if (depth == MAXULONG) return 0;
    return Recurse(depth + 1) + page[0];
}

VOID CrashStackOverflow(VOID) { (void)Recurse(0); }

/* ---- a driver that leaks at unload ---- */

static PVOID g_leaked;
static PMDL g_leaked_mdl;

static VOID LeakyUnload(PDRIVER_OBJECT Driver) {
    UNREFERENCED_PARAMETER(Driver);
    /* forgets g_leaked and g_leaked_mdl */
}

NTSTATUS LeakyDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    Driver->DriverUnload = LeakyUnload;
    g_leaked = ExAllocatePool2(POOL_FLAG_NON_PAGED, 200, 'kaeL');
    g_leaked_mdl = IoAllocateMdl(g_leaked, 200, FALSE, FALSE, NULL);
    return g_leaked != NULL ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
}

static VOID CleanUnload(PDRIVER_OBJECT Driver) {
    UNREFERENCED_PARAMETER(Driver);
    IoFreeMdl(g_leaked_mdl);
    ExFreePoolWithTag(g_leaked, 'kaeL');
}

NTSTATUS CleanDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    NTSTATUS status = LeakyDriverEntry(Driver, RegistryPath);
    Driver->DriverUnload = CleanUnload;
    g_results.registry_path_chars = RegistryPath->Length / sizeof(WCHAR);
    return status;
}

/* ---- order among work items, for the scheduler's seeds ---- */

static LONG volatile g_order_next;

static VOID RecordOrder(PVOID Context) {
    int which = (int)(ULONG_PTR)Context;
    g_results.order[InterlockedIncrement(&g_order_next) - 1] = which;
}

VOID ScenarioThreeSystemThreads(VOID) {
    HANDLE handle;
    int i;
    g_order_next = 0;
    for (i = 0; i < 3; ++i) {
        PsCreateSystemThread(&handle, THREAD_ALL_ACCESS, NULL, NULL, NULL, RecordOrder, (PVOID)(ULONG_PTR)(i + 1));
        ZwClose(handle);
    }
}

/* ---- a planted race: an update made outside the lock it should be under ---- */

static KSPIN_LOCK g_stats_lock;
static ULONG g_stats_updates;

/* Reads the shared counter, takes and drops a spin lock for something else, then writes the
 * counter back: two threads lose an update if one is preempted between its read and its write. */
static VOID RacyIncrement(PVOID Context) {
    LONG seen;
    KIRQL irql;
    UNREFERENCED_PARAMETER(Context);
    seen = g_results.thread_counter;
    KeAcquireSpinLock(&g_stats_lock, &irql);
    ++g_stats_updates;
    KeReleaseSpinLock(&g_stats_lock, irql);
    g_results.thread_counter = seen + 1;
}

VOID ScenarioRacyIncrements(int threads) {
    HANDLE handle;
    int i;
    KeInitializeSpinLock(&g_stats_lock);
    g_results.thread_counter = 0;
    for (i = 0; i < threads; ++i) {
        PsCreateSystemThread(&handle, THREAD_ALL_ACCESS, NULL, NULL, NULL, RacyIncrement, NULL);
        ZwClose(handle);
    }
}

/* ---- a driver whose periodic timer stays set while it is loaded ---- */

static KTIMER g_heartbeat;

static VOID HeartbeatUnload(PDRIVER_OBJECT Driver) {
    UNREFERENCED_PARAMETER(Driver);
    KeCancelTimer(&g_heartbeat);
}

NTSTATUS HeartbeatDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    LARGE_INTEGER due;
    UNREFERENCED_PARAMETER(RegistryPath);
    Driver->DriverUnload = HeartbeatUnload;
    KeInitializeTimerEx(&g_heartbeat, NotificationTimer);
    due.QuadPart = -10000; /* 1 ms, then every 1 ms */
    KeSetTimerEx(&g_heartbeat, due, 1, NULL);
    return STATUS_SUCCESS;
}

/* ---- one global, defined here and in consumer_wdk_surface.c ---- */

/* __declspec(selectany): the linker keeps one of the two definitions, as MSVC's does. */
__declspec(selectany) ULONG g_surface_selectany = 7;

const void *ServicesSelectAnyAddress(void) { return &g_surface_selectany; }
