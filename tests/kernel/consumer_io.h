/* SPDX-License-Identifier: MIT */
/* The control-device driver of consumer_io.c, for the C++ test that drives it through the
 * environment's I/O manager. Plain C types only. */
#ifndef NDKSIM_TESTS_KERNEL_CONSUMER_IO_H_
#define NDKSIM_TESTS_KERNEL_CONSUMER_IO_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CTL_CODE(FILE_DEVICE_UNKNOWN, function, method, FILE_ANY_ACCESS), spelled out for C++. */
#define IO_TEST_CODE(function, method) ((0x22u << 16) | ((uint32_t)(function) << 2) | (uint32_t)(method))
#define IO_TEST_ECHO IO_TEST_CODE(0x800, 0)        /* METHOD_BUFFERED: the input back */
#define IO_TEST_PEND IO_TEST_CODE(0x801, 0)        /* pended, completed "done" from a timer's DPC */
#define IO_TEST_CANCELLED IO_TEST_CODE(0x802, 0)   /* pended with a cancel routine; a DPC cancels it */
#define IO_TEST_FILL IO_TEST_CODE(0x803, 2)        /* METHOD_OUT_DIRECT: 0xA5 through the MDL */
#define IO_TEST_DOUBLE IO_TEST_CODE(0x804, 3)      /* METHOD_NEITHER: twice the input's ULONG */
#define IO_TEST_FORGET IO_TEST_CODE(0x805, 0)      /* a bug: success returned, the IRP never completed */
#define IO_TEST_UNMARKED IO_TEST_CODE(0x806, 0)    /* a bug: STATUS_PENDING without IoMarkIrpPending */
#define IO_TEST_TWICE IO_TEST_CODE(0x807, 0)       /* a bug: the IRP completed twice */
#define IO_TEST_HOLD IO_TEST_CODE(0x808, 0)        /* pended with a cancel routine until cancelled */
#define IO_TEST_MARKED IO_TEST_CODE(0x80A, 0)      /* a bug: IoMarkIrpPending, then completed and success returned */
#define IO_TEST_PARTIAL IO_TEST_CODE(0x809, 0)     /* METHOD_BUFFERED: as much of the input as fits, and
                                                      STATUS_BUFFER_OVERFLOW if that is not all of it */

typedef struct IoTestCounts {
    int32_t creates;
    int32_t cleanups;
    int32_t closes;
    int32_t cancel_routines;
} IoTestCounts;

extern IoTestCounts g_io_counts;

struct _DRIVER_OBJECT;
struct _UNICODE_STRING;

/* "\Device\NdksimIoTest", linked from "\DosDevices\NdksimIoTest". */
int32_t IoTestDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* The same device with DO_DIRECT_IO, or with neither method, for reads and writes (a buffered
 * device for the others). Its reads and writes move bytes of a 256-byte disk at their offsets. */
int32_t IoTestDirectDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
int32_t IoTestNeitherDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* The same device without an IRP_MJ_CREATE handler. */
int32_t IoTestNoCreateDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* The same, but its unload forgets the symbolic link. */
int32_t IoTestLeakyLinkDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* Names two devices alike: the second IoCreateDevice's status. */
int32_t IoTestCreateDeviceTwice(struct _DRIVER_OBJECT *driver);

#ifdef __cplusplus
}
#endif

#endif
