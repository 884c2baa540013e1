/* SPDX-License-Identifier: MIT */
/* A second file that names the GUID with DEFINE_GUID without <initguid.h>: a declaration only, so
 * the two files link to one GUID. */
#include <ntddk.h>

#include "consumer_headers.h"

DEFINE_GUID(GUID_NDKSIM_HEADERS_TEST, 0x6f1e2d3c, 0x4b5a, 0x4978, 0x86, 0x95, 0xa4, 0xb3, 0xc2, 0xd1, 0xe0, 0xf1);

const void *HeadersGuidAddressFromAnotherFile(void) { return &GUID_NDKSIM_HEADERS_TEST; }
