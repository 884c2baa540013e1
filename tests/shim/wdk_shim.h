/* SPDX-License-Identifier: MIT */
/* What the C shim translation unit (wdk_shim.c) offers the C++ test: plain C functions over an
 * NDK_ADAPTER, built against the shim's own WDK types. */
#ifndef NDKSIM_TESTS_WDK_SHIM_H_
#define NDKSIM_TESTS_WDK_SHIM_H_

#include "ndkpi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NDK_ADAPTER_INFO.MaxReceiveRequestSge, or 0 if the query failed. */
ULONG ShimMaxReceiveSge(NDK_ADAPTER *adapter);
/* Registers `length` bytes at `buffer` through an MDL the shim built; the MR's local token. */
NTSTATUS ShimRegister(NDK_ADAPTER *adapter, void *buffer, ULONG length, UINT32 *token);
/* Listens on an IPv4 address given in a SOCKADDR_STORAGE the shim defined. */
NTSTATUS ShimListen(NDK_ADAPTER *adapter, ULONG ipv4_network_order, USHORT port_network_order);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDKSIM_TESTS_WDK_SHIM_H_ */
