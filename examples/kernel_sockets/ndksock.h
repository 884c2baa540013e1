/* SPDX-License-Identifier: MIT */
/* ndksock.h - what a program hosting the NDK sockets driver needs to load it: its entry point.
 * The driver's sources name it DriverEntry, as every WDK driver does; its build renames the symbol
 * (DriverEntry=NdkSockDriverEntry) because here several drivers share one process. Everything
 * else goes through the device (nksioctl.h). */
#ifndef NDKSOCK_NDKSOCK_H_
#define NDKSOCK_NDKSOCK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct _DRIVER_OBJECT;
struct _UNICODE_STRING;

/* DRIVER_INITIALIZE: returns an NTSTATUS. */
int32_t NdkSockDriverEntry(struct _DRIVER_OBJECT *DriverObject, struct _UNICODE_STRING *RegistryPath);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDKSOCK_NDKSOCK_H_ */
