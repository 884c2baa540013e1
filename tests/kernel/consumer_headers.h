/* SPDX-License-Identifier: MIT */
/* consumer_headers.c: a driver's own headers beside the WDK's (CTL_CODE defined first, DEFINE_GUID,
 * constant UNICODE_STRINGs). */
#ifndef NDKSIM_TESTS_KERNEL_CONSUMER_HEADERS_H_
#define NDKSIM_TESTS_KERNEL_CONSUMER_HEADERS_H_
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint32_t HeadersIoctlCode(void);
uint32_t HeadersGuidData1(void);
int HeadersGuidsCompare(void);                        /* 1: IsEqualGUID and InlineIsEqualGUID agree */
const void *HeadersGuidAddressFromAnotherFile(void);  /* the GUID as consumer_headers_guid.c sees it */
const void *HeadersGuidAddress(void);                 /* ... and as consumer_headers.c does */
uint32_t HeadersConstantStringLength(void);           /* DECLARE_CONST_UNICODE_STRING's Length */
uint32_t HeadersWritableStringCapacity(void);         /* DECLARE_UNICODE_STRING_SIZE(32): 64 + 0 */

#ifdef __cplusplus
}
#endif
#endif
