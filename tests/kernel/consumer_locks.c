/* SPDX-License-Identifier: MIT */
/* Windows kernel-style C code using the executive's lookaside lists and blocking locks, compiled
 * against the kernel environment's stand-in WDK headers as a driver would be. Each Scenario*
 * function is one behaviour tests/kernel_locks_test.cc runs on kernel threads and checks; each
 * Violation* one mistake the verifier must name. */
#include <ntddk.h>
#include <wdm.h>

#include "consumer_locks.h"

#define TAG_LOOK 'kooL'
#define TAG_CUSTOM 'tsuC'

LockTestResults g_lock_results;

/* Waits `ticks` of 100 ns: where a holder would lose the processor to the others. */
static VOID Pause(LONGLONG ticks) {
    LARGE_INTEGER delay;
    delay.QuadPart = -ticks;
    KeDelayExecutionThread(KernelMode, FALSE, &delay);
}

static VOID StartThread(PKSTART_ROUTINE routine, PVOID context) {
    HANDLE handle;
    if (NT_SUCCESS(PsCreateSystemThread(&handle, THREAD_ALL_ACCESS, NULL, NULL, NULL, routine, context))) {
        ZwClose(handle);
    }
}

static VOID Record(char who) {
    if (g_lock_results.order_length < (int)sizeof(g_lock_results.order)) {
        g_lock_results.order[g_lock_results.order_length++] = who;
    }
}

/* Holders inside a lock at once (resources, push locks, semaphores): defined below. */
static VOID Inside(int writer);
static VOID Outside(int writer);

/* ---- lookaside lists ---- */

static NPAGED_LOOKASIDE_LIST g_npaged;
static LOOKASIDE_LIST_EX g_list_ex;

VOID ScenarioLookasideLists(VOID) {
    PVOID a;
    PVOID b;
    PVOID c;
    ExInitializeNPagedLookasideList(&g_npaged, NULL, NULL, POOL_NX_ALLOCATION, 100, TAG_LOOK, 0);
    a = ExAllocateFromNPagedLookasideList(&g_npaged);
    b = ExAllocateFromNPagedLookasideList(&g_npaged);
    RtlFillMemory(a, 100, 0xA5);
    RtlFillMemory(b, 100, 0x5A);
    ExFreeToNPagedLookasideList(&g_npaged, a);
    c = ExAllocateFromNPagedLookasideList(&g_npaged);
    g_lock_results.entries_distinct = (UCHAR)(a != b && b != c);
    ExFreeToNPagedLookasideList(&g_npaged, b);
    ExFreeToNPagedLookasideList(&g_npaged, c);
    g_lock_results.total_allocates = g_npaged.L.TotalAllocates;
    g_lock_results.total_frees = g_npaged.L.TotalFrees;
    ExDeleteNPagedLookasideList(&g_npaged);
}

static PVOID CustomAllocate(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, PLOOKASIDE_LIST_EX Lookaside) {
    UNREFERENCED_PARAMETER(PoolType);
    UNREFERENCED_PARAMETER(Tag);
    UNREFERENCED_PARAMETER(Lookaside);
    ++g_lock_results.custom_allocates;
    g_lock_results.entry_size_seen = (ULONG)NumberOfBytes;
    return ExAllocatePool2(POOL_FLAG_NON_PAGED, NumberOfBytes, TAG_CUSTOM);
}

static VOID CustomFree(PVOID Buffer, PLOOKASIDE_LIST_EX Lookaside) {
    UNREFERENCED_PARAMETER(Lookaside);
    ++g_lock_results.custom_frees;
    ExFreePoolWithTag(Buffer, TAG_CUSTOM);
}

VOID ScenarioLookasideListExWithRoutines(VOID) {
    PVOID a;
    if (!NT_SUCCESS(ExInitializeLookasideListEx(&g_list_ex, CustomAllocate, CustomFree, NonPagedPoolNx, 0, 48,
                                                TAG_LOOK, 0))) {
        return;
    }
    a = ExAllocateFromLookasideListEx(&g_list_ex);
    ExFreeToLookasideListEx(&g_list_ex, a);
    ExFlushLookasideListEx(&g_list_ex);
    ExDeleteLookasideListEx(&g_list_ex);
}

VOID ViolationLookasideNotInitialized(VOID) {
    static NPAGED_LOOKASIDE_LIST never;
    (void)ExAllocateFromNPagedLookasideList(&never); /* the violation */
}

static PAGED_LOOKASIDE_LIST g_leaky_list;

static VOID LookasideLeakUnload(PDRIVER_OBJECT Driver) {
    UNREFERENCED_PARAMETER(Driver);
    ExDeletePagedLookasideList(&g_leaky_list); /* the entry it gave out is still out */
}

NTSTATUS LookasideLeakDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    Driver->DriverUnload = LookasideLeakUnload;
    ExInitializePagedLookasideList(&g_leaky_list, NULL, NULL, 0, 64, TAG_LOOK, 0);
    return ExAllocateFromPagedLookasideList(&g_leaky_list) != NULL ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
}

/* ---- fast and guarded mutexes ---- */

static FAST_MUTEX g_mutex;
static int g_rounds;

static VOID IncrementUnderMutex(PVOID Context) {
    int i;
    UNREFERENCED_PARAMETER(Context);
    for (i = 0; i < g_rounds; ++i) {
        LONG seen;
        ExAcquireFastMutex(&g_mutex);
        g_lock_results.irql_held = KeGetCurrentIrql();
        seen = g_lock_results.counter;
        Pause(10); /* the others run meanwhile, and find the mutex held */
        g_lock_results.counter = seen + 1;
        ExReleaseFastMutex(&g_mutex);
        g_lock_results.irql_after = KeGetCurrentIrql();
    }
}

static KEVENT g_held;

static VOID TryWhileHeld(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    KeWaitForSingleObject(&g_held, Executive, KernelMode, FALSE, NULL);
    g_lock_results.try_while_held = ExTryToAcquireFastMutex(&g_mutex);
}

static VOID HoldForAWhile(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    ExAcquireFastMutex(&g_mutex);
    KeSetEvent(&g_held, IO_NO_INCREMENT, FALSE); /* a thread may not be made at APC_LEVEL: it waits */
    Pause(100);
    ExReleaseFastMutex(&g_mutex);
}

VOID ScenarioFastMutexExcludes(int threads, int rounds) {
    int i;
    ExInitializeFastMutex(&g_mutex);
    g_rounds = rounds;
    g_lock_results.counter = 0;
    g_lock_results.try_while_held = 2; /* neither TRUE nor FALSE until tried */
    KeInitializeEvent(&g_held, NotificationEvent, FALSE);
    for (i = 0; i < threads; ++i) StartThread(IncrementUnderMutex, NULL);
    StartThread(HoldForAWhile, NULL);
    StartThread(TryWhileHeld, NULL);
}

VOID ScenarioGuardedMutexDisablesApcs(VOID) {
    KGUARDED_MUTEX mutex;
    KeInitializeGuardedMutex(&mutex);
    KeAcquireGuardedMutex(&mutex);
    g_lock_results.apcs_disabled_held = KeAreAllApcsDisabled();
    g_lock_results.irql_held = KeGetCurrentIrql();
    KeReleaseGuardedMutex(&mutex);
    g_lock_results.irql_after = (UCHAR)KeAreAllApcsDisabled();
}

VOID ViolationFastMutexRecursive(VOID) {
    FAST_MUTEX mutex;
    ExInitializeFastMutex(&mutex);
    ExAcquireFastMutex(&mutex);
    ExAcquireFastMutex(&mutex); /* the violation: not recursive */
}

VOID ViolationFastMutexReleasedUnheld(VOID) {
    FAST_MUTEX mutex;
    ExInitializeFastMutex(&mutex);
    ExReleaseFastMutex(&mutex); /* the violation */
}

/* ---- kernel mutexes and semaphores ---- */

static KMUTEX g_kmutex;
static KSEMAPHORE g_semaphore;
static LONG volatile g_done;
static int g_threads;

static VOID IncrementUnderKernelMutex(PVOID Context) {
    int i;
    UNREFERENCED_PARAMETER(Context);
    for (i = 0; i < g_rounds; ++i) {
        LONG seen;
        KeWaitForSingleObject(&g_kmutex, Executive, KernelMode, FALSE, NULL);
        KeWaitForSingleObject(&g_kmutex, Executive, KernelMode, FALSE, NULL); /* its owner takes it again */
        seen = g_lock_results.counter;
        Pause(10);
        g_lock_results.counter = seen + 1;
        KeReleaseMutex(&g_kmutex, FALSE);
        KeReleaseMutex(&g_kmutex, FALSE);
    }
    if (InterlockedIncrement(&g_done) == g_threads) g_lock_results.mutex_state_after = KeReadStateMutex(&g_kmutex);
}

VOID ScenarioKernelMutexExcludesAndRecurses(int threads, int rounds) {
    int i;
    KeInitializeMutex(&g_kmutex, 0);
    g_rounds = rounds;
    g_threads = threads;
    g_done = 0;
    g_lock_results.counter = 0;
    for (i = 0; i < threads; ++i) StartThread(IncrementUnderKernelMutex, NULL);
}

static VOID HoldSemaphore(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    KeWaitForSingleObject(&g_semaphore, Executive, KernelMode, FALSE, NULL);
    Inside(0);
    Pause(50);
    Outside(0);
    KeReleaseSemaphore(&g_semaphore, SEMAPHORE_INCREMENT, 1, FALSE);
}

VOID ScenarioSemaphoreAdmitsItsCount(int threads) {
    int i;
    KeInitializeSemaphore(&g_semaphore, 2, 2);
    for (i = 0; i < threads; ++i) StartThread(HoldSemaphore, NULL);
}

VOID ViolationKernelMutexReleasedUnheld(VOID) {
    KMUTEX mutex;
    KeInitializeMutex(&mutex, 0);
    KeReleaseMutex(&mutex, FALSE); /* the violation */
}

VOID ViolationSemaphoreAboveItsLimit(VOID) {
    KSEMAPHORE semaphore;
    KeInitializeSemaphore(&semaphore, 1, 1);
    KeReleaseSemaphore(&semaphore, SEMAPHORE_INCREMENT, 1, FALSE); /* the violation: 2 > 1 */
}

/* ---- executive resources ---- */

static ERESOURCE g_resource;
static EX_PUSH_LOCK g_push_lock;

static VOID Inside(int writer) {
    if (writer) {
        ++g_lock_results.writers_inside;
    } else {
        ++g_lock_results.readers_inside;
        if (g_lock_results.readers_inside > g_lock_results.max_readers_inside) {
            g_lock_results.max_readers_inside = g_lock_results.readers_inside;
        }
    }
    if (g_lock_results.writers_inside > 0 &&
        g_lock_results.readers_inside + g_lock_results.writers_inside > g_lock_results.max_inside_with_writer) {
        g_lock_results.max_inside_with_writer = g_lock_results.readers_inside + g_lock_results.writers_inside;
    }
}

static VOID Outside(int writer) {
    if (writer) {
        --g_lock_results.writers_inside;
    } else {
        --g_lock_results.readers_inside;
    }
}

static VOID ResourceUser(PVOID Context) {
    int writer = (int)(ULONG_PTR)Context;
    KeEnterCriticalRegion();
    if (writer) {
        ExAcquireResourceExclusiveLite(&g_resource, TRUE);
    } else {
        ExAcquireResourceSharedLite(&g_resource, TRUE);
    }
    Inside(writer);
    Pause(50);
    Outside(writer);
    ExReleaseResourceLite(&g_resource);
    KeLeaveCriticalRegion();
}

static VOID LastWriter(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    Pause(10); /* after the readers are in */
    ResourceUser((PVOID)1);
    ExDeleteResourceLite(&g_resource);
}

VOID ScenarioResourceReadersShareWritersExclude(int readers) {
    int i;
    ExInitializeResourceLite(&g_resource);
    for (i = 0; i < readers; ++i) StartThread(ResourceUser, (PVOID)0);
    StartThread(LastWriter, NULL);
}

static VOID SharedThenRelease(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    ExEnterCriticalRegionAndAcquireResourceShared(&g_resource);
    Record('A');
    Pause(100);
    ExReleaseResourceAndLeaveCriticalRegion(&g_resource);
}

static VOID ExclusiveAfterA(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    Pause(10);
    ExEnterCriticalRegionAndAcquireResourceExclusive(&g_resource);
    Record('B');
    Pause(10);
    ExReleaseResourceAndLeaveCriticalRegion(&g_resource);
}

static VOID SharedAfterB(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    Pause(20);
    g_lock_results.exclusive_waiters_seen = ExGetExclusiveWaiterCount(&g_resource);
    ExEnterCriticalRegionAndAcquireResourceShared(&g_resource);
    Record('C');
    ExReleaseResourceAndLeaveCriticalRegion(&g_resource);
}

VOID ScenarioResourceExclusiveWaiterGoesFirst(VOID) {
    ExInitializeResourceLite(&g_resource);
    StartThread(SharedThenRelease, NULL);
    StartThread(ExclusiveAfterA, NULL);
    StartThread(SharedAfterB, NULL);
}

VOID ScenarioResourceRecursion(VOID) {
    ERESOURCE resource;
    ExInitializeResourceLite(&resource);
    KeEnterCriticalRegion();
    ExAcquireResourceExclusiveLite(&resource, TRUE);
    ExAcquireResourceExclusiveLite(&resource, TRUE);
    ExAcquireResourceSharedLite(&resource, TRUE); /* the exclusive holder's shared acquisition */
    g_lock_results.exclusive_seen = ExIsResourceAcquiredExclusiveLite(&resource);
    g_lock_results.shared_count = ExIsResourceAcquiredSharedLite(&resource);
    ExReleaseResourceLite(&resource);
    ExReleaseResourceLite(&resource);
    ExReleaseResourceLite(&resource);
    KeLeaveCriticalRegion();
    ExDeleteResourceLite(&resource);
}

VOID ViolationResourceOutsideCriticalRegion(VOID) {
    ERESOURCE resource;
    ExInitializeResourceLite(&resource);
    ExAcquireResourceExclusiveLite(&resource, TRUE); /* the violation: APCs are on */
}

VOID ViolationResourceDeletedWhileHeld(VOID) {
    ERESOURCE resource;
    ExInitializeResourceLite(&resource);
    KeEnterCriticalRegion();
    ExAcquireResourceSharedLite(&resource, TRUE);
    ExDeleteResourceLite(&resource); /* the violation */
}

VOID ViolationResourceSharedThenExclusive(VOID) {
    ERESOURCE resource;
    ExInitializeResourceLite(&resource);
    KeEnterCriticalRegion();
    ExAcquireResourceSharedLite(&resource, TRUE);
    ExAcquireResourceExclusiveLite(&resource, TRUE); /* the violation: it waits for itself */
}

/* ---- push locks ---- */

static VOID PushLockReader(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    KeEnterCriticalRegion();
    ExAcquirePushLockShared(&g_push_lock);
    Inside(0);
    Pause(50);
    Outside(0);
    ExReleasePushLockShared(&g_push_lock);
    KeLeaveCriticalRegion();
}

static VOID PushLockWriter(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    Pause(10);
    KeEnterCriticalRegion();
    ExAcquirePushLockExclusive(&g_push_lock);
    Inside(1);
    Pause(50);
    Outside(1);
    ExReleasePushLockExclusive(&g_push_lock);
    KeLeaveCriticalRegion();
}

VOID ScenarioPushLockReadersShare(int readers) {
    int i;
    ExInitializePushLock(&g_push_lock);
    for (i = 0; i < readers; ++i) StartThread(PushLockReader, NULL);
    StartThread(PushLockWriter, NULL);
}

VOID ViolationPushLockRecursive(VOID) {
    EX_PUSH_LOCK lock;
    ExInitializePushLock(&lock);
    KeEnterCriticalRegion();
    ExAcquirePushLockExclusive(&lock);
    ExAcquirePushLockExclusive(&lock); /* the violation: not recursive */
}

/* ---- lock order across kinds (Driver Verifier's deadlock detection) ---- */

static VOID MutexThenResource(VOID) {
    ExAcquireFastMutex(&g_mutex);
    KeEnterCriticalRegion();
    ExAcquireResourceExclusiveLite(&g_resource, TRUE);
    ExReleaseResourceLite(&g_resource);
    KeLeaveCriticalRegion();
    ExReleaseFastMutex(&g_mutex);
}

/* A reader takes the resource shared, then the mutex: the reverse of MutexThenResource's order.
 * Each is fine alone; a thread in each deadlocks. */
static VOID ResourceThenMutex(VOID) {
    KeEnterCriticalRegion();
    ExAcquireResourceSharedLite(&g_resource, TRUE);
    ExAcquireFastMutex(&g_mutex); /* the violation */
    ExReleaseFastMutex(&g_mutex);
    ExReleaseResourceLite(&g_resource);
    KeLeaveCriticalRegion();
}

VOID ViolationMutexAndResourceInBothOrders(VOID) {
    ExInitializeFastMutex(&g_mutex);
    ExInitializeResourceLite(&g_resource);
    MutexThenResource();
    ResourceThenMutex();
}

static VOID KernelMutexThenPushLock(VOID) {
    (void)KeWaitForSingleObject(&g_kmutex, Executive, KernelMode, FALSE, NULL);
    KeEnterCriticalRegion();
    ExAcquirePushLockExclusive(&g_push_lock);
    ExReleasePushLockExclusive(&g_push_lock);
    KeLeaveCriticalRegion();
    (void)KeReleaseMutex(&g_kmutex, FALSE);
}

VOID ViolationKernelMutexAndPushLockInBothOrders(VOID) {
    KeInitializeMutex(&g_kmutex, 0);
    ExInitializePushLock(&g_push_lock);
    KernelMutexThenPushLock();
    KeEnterCriticalRegion();
    ExAcquirePushLockShared(&g_push_lock);
    (void)KeWaitForSingleObject(&g_kmutex, Executive, KernelMode, FALSE, NULL); /* the violation */
    (void)KeReleaseMutex(&g_kmutex, FALSE);
    ExReleasePushLockShared(&g_push_lock);
    KeLeaveCriticalRegion();
}

/* No inversion: the same order again; the reverse order taken with a try (which cannot wait, so
 * cannot deadlock) or with a zero-timeout wait; and the reverse order on locks initialized again. */
VOID ScenarioWaitableLockOrderKeptTriedOrRenewed(VOID) {
    LARGE_INTEGER now;
    ExInitializeFastMutex(&g_mutex);
    ExInitializeResourceLite(&g_resource);
    KeInitializeMutex(&g_kmutex, 0);
    ExInitializePushLock(&g_push_lock);
    MutexThenResource();
    MutexThenResource();
    KeEnterCriticalRegion();
    ExAcquireResourceSharedLite(&g_resource, TRUE);
    if (ExTryToAcquireFastMutex(&g_mutex)) ExReleaseFastMutex(&g_mutex);
    ExReleaseResourceLite(&g_resource);
    KeLeaveCriticalRegion();
    KernelMutexThenPushLock();
    now.QuadPart = 0;
    KeEnterCriticalRegion();
    ExAcquirePushLockShared(&g_push_lock);
    if (KeWaitForSingleObject(&g_kmutex, Executive, KernelMode, FALSE, &now) == STATUS_SUCCESS) {
        (void)KeReleaseMutex(&g_kmutex, FALSE);
    }
    ExReleasePushLockShared(&g_push_lock);
    KeLeaveCriticalRegion();
    (void)ExDeleteResourceLite(&g_resource);
    ExInitializeFastMutex(&g_mutex);
    ExInitializeResourceLite(&g_resource);
    ResourceThenMutex();
    (void)ExDeleteResourceLite(&g_resource);
}
