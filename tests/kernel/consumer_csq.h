/* SPDX-License-Identifier: MIT */
/* The queueing driver of consumer_csq.c (a cancel-safe IRP queue, a worker thread, a remove lock
 * around dispatch), for the C++ test that drives it through the environment's I/O manager. Plain C
 * types only. */
#ifndef NDKSIM_TESTS_KERNEL_CONSUMER_CSQ_H_
#define NDKSIM_TESTS_KERNEL_CONSUMER_CSQ_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CTL_CODE(FILE_DEVICE_UNKNOWN, function, METHOD_BUFFERED, FILE_ANY_ACCESS), spelled out for C++. */
#define CSQ_TEST_CODE(function) ((0x22u << 16) | ((uint32_t)(function) << 2))
/* Input: a ULONG value. Queued (IoCsqInsertIrpEx) until the worker or a cancel completes it; the
 * worker's completion returns a CsqTestResult. STATUS_DEVICE_BUSY, not queued, once
 * CSQ_TEST_QUEUE_LIMIT IRPs are queued. */
#define CSQ_TEST_QUEUE CSQ_TEST_CODE(0x900)
/* The same, queued with the device's one IO_CSQ_IRP_CONTEXT. */
#define CSQ_TEST_NOTIFY CSQ_TEST_CODE(0x901)
/* IoCsqRemoveIrp of the NOTIFY IRP: completes it as the worker would; STATUS_NOT_FOUND if it got
 * none. */
#define CSQ_TEST_TAKE CSQ_TEST_CODE(0x902)
/* Wakes the worker, which completes every queued IRP, oldest first (IoCsqRemoveNextIrp). */
#define CSQ_TEST_DRAIN CSQ_TEST_CODE(0x903)
/* The device's removal, on a work item: IoReleaseRemoveLockAndWait, then completes with the
 * ULONGLONG KeQueryInterruptTime at which the wait returned. Every later IOCTL is refused. */
#define CSQ_TEST_REMOVE CSQ_TEST_CODE(0x904)
#define CSQ_TEST_REMOVE_TWICE CSQ_TEST_CODE(0x905)       /* a bug: IoReleaseRemoveLockAndWait twice */
#define CSQ_TEST_REMOVE_AT_DISPATCH CSQ_TEST_CODE(0x906) /* a bug: IoReleaseRemoveLockAndWait at DISPATCH_LEVEL */
#define CSQ_TEST_RELEASE_TWICE CSQ_TEST_CODE(0x907)      /* a bug: the IRP's acquisition released twice */
#define CSQ_TEST_RELEASE_OTHER_TAG CSQ_TEST_CODE(0x908)  /* a bug: a release under a tag never acquired */

#define CSQ_TEST_QUEUE_LIMIT 4

/* What a queued IRP completed by the driver returns. */
typedef struct CsqTestResult {
    uint32_t value;    /* the IRP's input */
    uint32_t sequence; /* 1 for the first IRP the driver completed, 2 for the next, ... */
} CsqTestResult;

typedef struct CsqTestCounts {
    int32_t queued;     /* IRPs in the queue now */
    int32_t completed;  /* IRPs the worker completed */
    int32_t cancelled;  /* IRPs completed through CsqCompleteCanceledIrp */
    int32_t cleaned_up; /* IRPs IRP_MJ_CLEANUP completed */
    int32_t peeks_past; /* CsqPeekNextIrp calls that looked past a given IRP */
} CsqTestCounts;

extern CsqTestCounts g_csq_counts;

struct _DRIVER_OBJECT;
struct _UNICODE_STRING;

/* "\Device\NdksimCsqTest", linked from "\DosDevices\NdksimCsqTest". */
int32_t CsqTestDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);

#ifdef __cplusplus
}
#endif

#endif
