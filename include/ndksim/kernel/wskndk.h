/* SPDX-License-Identifier: MIT */
/* wskndk.h - ndksim's stand-in for the NDK extension of Winsock Kernel: the table a WSK client
 * fetches with WskControlClient(WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH), whose WskOpenNdkAdapter opens
 * the NDK adapter of an interface of the calling thread's machine, by interface index. */
#ifndef NDKSIM_KERNEL_WSKNDK_H_
#define NDKSIM_KERNEL_WSKNDK_H_
#include "ndkpi.h"
#include "wsk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PASSIVE_LEVEL. STATUS_NOT_FOUND for an index that is not an interface of the caller's machine;
 * STATUS_NOT_SUPPORTED for an interface without NDK (the loopback); the provider's own status
 * (NDIS_STATUS_BAD_VERSION, ...) otherwise. */
typedef NTSTATUS(WSKAPI *PFN_WSK_NDK_OPEN_ADAPTER)(PWSK_CLIENT Client, NDK_VERSION NdkVersion, NET_IFINDEX IfIndex,
                                                    NDK_ADAPTER **ppNdkAdapter);
/* PASSIVE_LEVEL. Blocking: every callback of every object of the adapter has returned when it does. */
typedef VOID(WSKAPI *PFN_WSK_NDK_CLOSE_ADAPTER)(PWSK_CLIENT Client, NDK_ADAPTER *pNdkAdapter);
typedef struct _WSK_PROVIDER_NDK_DISPATCH {
    PFN_WSK_NDK_OPEN_ADAPTER WskOpenNdkAdapter;
    PFN_WSK_NDK_CLOSE_ADAPTER WskCloseNdkAdapter;
} WSK_PROVIDER_NDK_DISPATCH, *PWSK_PROVIDER_NDK_DISPATCH;

#define WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH ((ULONG)0x4E444B44) /* 'NDKD' */


#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* NDKSIM_KERNEL_WSKNDK_H_ */
