/* SPDX-License-Identifier: MIT */
/* consumer_ndk_wrappers.c: a consumer's own functions named after NDK entries. */
#ifndef NDKSIM_TESTS_KERNEL_CONSUMER_NDK_WRAPPERS_H_
#define NDKSIM_TESTS_KERNEL_CONSUMER_NDK_WRAPPERS_H_
#ifdef __cplusplus
extern "C" {
#endif
int WrappersNamedAfterNdkEntriesCompile(void);
/* 1: an address parsed and a socket claimed as Microsoft's NDK sample does (only <ndis.h>, <wsk.h>). */
int WrappersParseAndClaim(void);
#ifdef __cplusplus
}
#endif
#endif
