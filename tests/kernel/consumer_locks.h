/* SPDX-License-Identifier: MIT */
/* The C scenarios of consumer_locks.c (lookaside lists, fast and guarded mutexes, executive
 * resources, push locks), for the C++ test that runs them. Plain C types only. */
#ifndef NDKSIM_TESTS_KERNEL_CONSUMER_LOCKS_H_
#define NDKSIM_TESTS_KERNEL_CONSUMER_LOCKS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct LockTestResults {
    /* lookaside lists */
    uint32_t total_allocates;
    uint32_t total_frees;
    uint32_t custom_allocates;
    uint32_t custom_frees;
    uint32_t entry_size_seen; /* the size the custom allocate routine was asked for */
    uint8_t entries_distinct;
    /* mutexes */
    int32_t counter;          /* incremented under the lock, with a wait inside */
    uint32_t contention;      /* FAST_MUTEX.Contention at the end */
    uint8_t irql_held;        /* KeGetCurrentIrql() while the lock is held */
    uint8_t irql_after;       /* ... after its release */
    uint8_t apcs_disabled_held;
    uint8_t try_while_held;   /* ExTryToAcquire... from another thread while held */
    /* resources and push locks */
    int32_t readers_inside;   /* shared holders inside at once, now */
    int32_t max_readers_inside;
    int32_t writers_inside;
    int32_t max_inside_with_writer; /* holders of any kind inside while a writer was */
    int32_t mutex_state_after;  /* KeReadStateMutex once every thread is done */
    uint32_t shared_count;    /* ExIsResourceAcquiredSharedLite of a recursive holder */
    uint8_t exclusive_seen;   /* ExIsResourceAcquiredExclusiveLite of the exclusive holder */
    uint32_t exclusive_waiters_seen;
    char order[8];            /* who acquired, in order: 'A', 'B', 'C' */
    int order_length;
} LockTestResults;

extern LockTestResults g_lock_results;

void ScenarioLookasideLists(void);
void ScenarioLookasideListExWithRoutines(void);
/* `threads` system threads each take the fast mutex `rounds` times. */
void ScenarioFastMutexExcludes(int threads, int rounds);
void ScenarioGuardedMutexDisablesApcs(void);
/* `readers` system threads hold the resource shared at once, then a writer takes it. */
void ScenarioResourceReadersShareWritersExclude(int readers);
/* A holds shared; B asks exclusive; C asks shared after B: the order is A, B, C. */
void ScenarioResourceExclusiveWaiterGoesFirst(void);
void ScenarioResourceRecursion(void);
void ScenarioPushLockReadersShare(int readers);
/* `threads` system threads each take the KMUTEX `rounds` times, twice over (it is recursive). */
void ScenarioKernelMutexExcludesAndRecurses(int threads, int rounds);
/* `threads` system threads hold a semaphore of count and limit 2 for a while each. */
void ScenarioSemaphoreAdmitsItsCount(int threads);
void ViolationKernelMutexReleasedUnheld(void);
void ViolationSemaphoreAboveItsLimit(void);
void ViolationLookasideNotInitialized(void);
void ViolationFastMutexRecursive(void);
void ViolationFastMutexReleasedUnheld(void);
void ViolationResourceOutsideCriticalRegion(void);
void ViolationResourceDeletedWhileHeld(void);
void ViolationResourceSharedThenExclusive(void);
void ViolationPushLockRecursive(void);
/* A fast mutex and a resource, then a kernel mutex and a push lock, taken in both orders. */
void ViolationMutexAndResourceInBothOrders(void);
void ViolationKernelMutexAndPushLockInBothOrders(void);
void ScenarioWaitableLockOrderKeptTriedOrRenewed(void);
int32_t LookasideLeakDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);

#ifdef __cplusplus
}
#endif

#endif
