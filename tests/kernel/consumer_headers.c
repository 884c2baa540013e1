/* SPDX-License-Identifier: MIT */
/* How drivers' own headers meet the WDK's: an IOCTL header written for user mode too, which defines
 * CTL_CODE and the method and access constants itself, included before <ntddk.h>; GUIDs named with
 * DEFINE_GUID and defined by the file that includes <initguid.h>; constant UNICODE_STRINGs. */
#define FILE_DEVICE_NDKSIM_TEST 0x8123
#define CTL_CODE(DeviceType, Function, Method, Access) \
    (((unsigned long)(DeviceType) << 16) | ((Access) << 14) | ((Function) << 2) | (Method))
#define METHOD_BUFFERED 0
#define FILE_ANY_ACCESS 0
#define IOCTL_HEADERS_TEST CTL_CODE(FILE_DEVICE_NDKSIM_TEST, 0x801, METHOD_BUFFERED, FILE_ANY_ACCESS)

#include <ntddk.h>

#include <initguid.h>

#include "consumer_headers.h"

/* Defined here (this file included <initguid.h>); consumer_headers_guid.c only declares it. */
DEFINE_GUID(GUID_NDKSIM_HEADERS_TEST, 0x6f1e2d3c, 0x4b5a, 0x4978, 0x86, 0x95, 0xa4, 0xb3, 0xc2, 0xd1, 0xe0, 0xf1);

DECLARE_CONST_UNICODE_STRING(g_HeadersDeviceName, L"\\Device\\NdksimHeaders");

uint32_t HeadersIoctlCode(void) { return IOCTL_HEADERS_TEST; }

uint32_t HeadersGuidData1(void) { return GUID_NDKSIM_HEADERS_TEST.Data1; }

const void *HeadersGuidAddress(void) { return &GUID_NDKSIM_HEADERS_TEST; }

int HeadersGuidsCompare(void) {
    static const GUID same = {0x6f1e2d3c, 0x4b5a, 0x4978, {0x86, 0x95, 0xa4, 0xb3, 0xc2, 0xd1, 0xe0, 0xf1}};
    static const GUID other = {0x6f1e2d3c, 0x4b5a, 0x4978, {0x86, 0x95, 0xa4, 0xb3, 0xc2, 0xd1, 0xe0, 0xf2}};
    return IsEqualGUID(&GUID_NDKSIM_HEADERS_TEST, &same) && !InlineIsEqualGUID(&GUID_NDKSIM_HEADERS_TEST, &other);
}

uint32_t HeadersConstantStringLength(void) { return g_HeadersDeviceName.Length; }

uint32_t HeadersWritableStringCapacity(void) {
    DECLARE_UNICODE_STRING_SIZE(name, 32);
    return (uint32_t)name.MaximumLength + name.Length;
}
