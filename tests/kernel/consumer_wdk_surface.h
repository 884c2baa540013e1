/* SPDX-License-Identifier: MIT */
/* The C side of tests/kernel_wdk_surface_test.cc: consumer code (consumer_wdk_surface.c) that uses
 * the WDK surface real drivers use, each function one behaviour. Plain C types only, so the C++ side
 * does not include the WDK headers. */
#ifndef NDKSIM_TESTS_KERNEL_CONSUMER_WDK_SURFACE_H_
#define NDKSIM_TESTS_KERNEL_CONSUMER_WDK_SURFACE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a scenario saw, for the test to check. */
typedef struct WdkSurfaceResults {
    int32_t status;
    char text[64];
    uint16_t wide[64];
    int64_t values[8];
    void *pointer;
} WdkSurfaceResults;

extern WdkSurfaceResults g_surface;

struct _DRIVER_OBJECT;
struct _UNICODE_STRING;

/* ---- annotations, MSVC keywords, base macros ---- */
uint32_t SurfaceAnnotatedSum(uint32_t a, uint32_t b);
uint32_t SurfacePragmaInsideAStatementMacro(uint32_t n);
size_t SurfacePackedHeaderSize(void);
size_t SurfaceCacheAlignedAlignment(void);
size_t SurfaceDeclspecAlignAlignment(void);
/* The address of a __declspec(selectany) global that consumer_services.c defines too
 * (ServicesSelectAnyAddress there). */
const void *SurfaceSelectAnyAddress(void);
uint32_t SurfaceForceInlineTwice(uint32_t n);
int SurfaceArgumentPresent(const void *pointer);
int SurfaceSeverity(int32_t status); /* 0 success, 1 information, 2 warning, 3 error, from NT_* */
int SurfaceMin(int a, int b);
int SurfaceMax(int a, int b);

/* ---- byte order ---- */
uint16_t SurfaceUshortByteSwap(uint16_t value);
uint32_t SurfaceUlongByteSwap(uint32_t value);
uint64_t SurfaceUlonglongByteSwap(uint64_t value);

/* ---- interlocked forms: values[0] the return, values[1] the variable after ---- */
void SurfaceInterlockedIncrement16(int16_t start);
void SurfaceInterlockedDecrement16(int16_t start);
void SurfaceInterlockedCompareExchange16(int16_t start, int16_t exchange, int16_t comparand);
void SurfaceIntrinsicCompareExchange(int32_t start, int32_t exchange, int32_t comparand);
void SurfaceIntrinsicIncrement16(int16_t start);
void SurfaceInterlockedOr8(int8_t start, int8_t value);
void SurfaceInterlockedAnd8(int8_t start, int8_t value);
void SurfaceInterlockedXor8(int8_t start, int8_t value);
void SurfaceInterlockedIncrementNoFence(int32_t start);
void SurfaceInterlockedDecrementRelease(int32_t start);
void SurfaceInterlockedCompareExchangeAcquire(int32_t start, int32_t exchange, int32_t comparand);
void SurfaceInterlockedExchangeNoFence(int32_t start, int32_t value);
void *SurfacePointerPublishedAndRead(void *value);

/* ---- pool (on a kernel thread): status STATUS_SUCCESS for a block (values[0] its first byte), else
 * STATUS_INSUFFICIENT_RESOURCES ---- */
void SurfaceAllocateWithPriority(int priority, size_t bytes);
void SurfaceAllocatePool3WithPriority(uint64_t flags, size_t bytes);
void SurfaceAllocatePool3OnNode(uint32_t preferred_node);
/* One extended parameter of `type`, its union holding `value`. */
void SurfaceAllocatePool3WithParameter(int type, int optional, uint64_t value);
void SurfaceAllocatePool2(uint64_t flags);
void SurfaceFreePool2(void);
void SurfaceFreePool2WithTheWrongTag(void);
int32_t SurfacePriorityLeakDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
int32_t SurfacePool3LeakDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* The same with an unload that frees everything. */
int32_t SurfacePoolCleanDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);

/* ---- regions, processors, ticks (on a kernel thread) ---- */
void SurfaceNestedCriticalRegions(void);      /* values[0..2]: KeAreApcsDisabled after 2 enters, 1 leave, 2 leaves */
/* values[0]: KeAreAllApcsDisabled inside, [1] KeAreApcsDisabled inside, [2] KeAreAllApcsDisabled after. */
void SurfaceGuardedRegion(void);
void SurfaceCriticalRegionAllApcs(void);      /* values[0]: KeAreAllApcsDisabled inside a critical region */
void SurfaceAllApcsDisabledAtApcLevel(void);  /* values[0]: KeAreAllApcsDisabled at APC_LEVEL */
void SurfaceLeaveCriticalRegionNotEntered(void);
void SurfaceEndInsideACriticalRegion(void);
void SurfaceWorkItemEndsInsideAGuardedRegion(void);
void SurfaceEnterCriticalRegionAtDispatchLevel(void);
void SurfaceCurrentProcessorNumberEx(void);   /* values[0] index, [1] Group, [2] Number, [3] Reserved */
uint32_t SurfaceActiveProcessorCountEx(uint16_t group);
uint16_t SurfaceCurrentNodeNumber(void);
void SurfaceNodeActiveAffinity(uint16_t node); /* values[0] Mask, [1] Group, [2] Count */
void SurfaceTickCountAfter(int64_t delay_100ns); /* values[0] tick count, [1] interrupt time, [2] time increment */

/* ---- wdmsec.h ---- */
int32_t SurfaceSecureDeviceDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
/* status: IoCreateDeviceSecure's (the device is deleted again); values[0]: whether the driver then had a device. */
void SurfaceCreateDeviceSecureWithSddl(struct _DRIVER_OBJECT *driver, const uint16_t *sddl);
int SurfaceSddlSysAllAdmAllIs(const uint16_t *expected); /* RtlEqualUnicodeString against the constant */

/* ---- ntstrsafe.h: status to status, the result to text or wide ---- */
void SurfaceCbPrintfWindowsLengthModifiers(uint32_t ulong_value, uint64_t ulong64_value, int16_t short_value);
void SurfaceCbPrintfA(size_t cb, const char *string_argument);        /* "%s" */
void SurfaceCchPrintfA(size_t cch, const char *string_argument);      /* "%s" */
void SurfaceCbPrintfAPointer(void *pointer);                          /* "%p" */
void SurfaceCbPrintfAUnicodeString(void);                             /* "%wZ" of L"eth0" */
void SurfaceCbPrintfANullString(void);                                /* "[%s|%ws]" of NULLs */
void SurfaceCbPrintfAWideString(void);                                /* "%ws" of L"caf\xe9\x4e2d" */
void SurfaceCbPrintfAPercentN(void);
void SurfaceCbPrintfW(size_t cb, uint32_t port);                      /* L"%s=%u" of L"port" */
void SurfaceCchPrintfW(size_t cch, uint32_t port);
void SurfaceCbPrintfWCharString(void);                                /* L"%S/%hs" of "abc", "def" */
void SurfaceCbVPrintfA(size_t cb, int a, int b);                      /* "%d+%d" through a va_list */
void SurfaceCchVPrintfW(size_t cch, int a, int b);                    /* L"%d+%d" through a va_list */
void SurfaceCbCopyA(size_t cb, const char *source);
void SurfaceCchCopyW(size_t cch);                                     /* of L"wxyz" */
void SurfaceCbCopyW(size_t cb);                                       /* of L"wxyz" */
void SurfaceCbCatA(size_t cb, const char *first, const char *second);
void SurfaceCchCatW(size_t cch);                                      /* L"ab" + L"cdef" */
void SurfaceCbCatAUnterminated(void);                                 /* 4 bytes of "wxyz", no NUL */
void SurfaceCbLengthW(size_t cb);                                     /* of L"abc"; values[0] the length */
void SurfaceCchLengthA(size_t cch, const char *text);                 /* values[0] the length */
/* L"%d" of `value` into a UNICODE_STRING of `maximum_length` bytes whose buffer holds '#'s:
 * values[0] Length, wide the buffer. */
void SurfaceUnicodeStringPrintf(uint16_t maximum_length, int value);
void SurfaceUnicodeStringPrintfOddMaximum(void);
void SurfaceCbPrintfAConvertingAtDispatchLevel(void);                 /* "%ws" at DISPATCH_LEVEL */
void SurfaceCbPrintfAPlainAtDispatchLevel(void);                      /* "%d" at DISPATCH_LEVEL */

/* ---- ip2string.h: status, values[0] the address as stored (network order), values[1] the
 * terminator's offset (-1 if none) or the port as stored ---- */
void SurfaceIpv4StringToAddressA(const char *text, int strict);
void SurfaceIpv4StringToAddressW(void);   /* L"192.0.2.1/24", strict */
void SurfaceIpv4StringToAddressExA(const char *text, int strict);
void SurfaceIpv4StringToAddressExW(void); /* L"10.0.0.2:54321", strict, into a SOCKADDR_IN */
/* Into text (A) or wide (W), filled with '#' first; values[0] the returned end's offset (plain
 * forms) or the length out (Ex forms, `length` in). */
void SurfaceIpv4AddressToStringA(uint32_t network_address);
void SurfaceIpv4AddressToStringW(uint32_t network_address);
void SurfaceIpv4AddressToStringExA(uint32_t network_address, uint16_t network_port, uint32_t length);
void SurfaceIpv4AddressToStringExW(uint32_t network_address, uint16_t network_port, uint32_t length);
/* IPv6: the address's bytes go to values[0] and values[1] as they lie in memory; the plain
 * parse's terminator offset to values[2]; the Ex parse's scope to values[2], port to values[3]. */
void SurfaceIpv6StringToAddressA(const char *text);
void SurfaceIpv6StringToAddressW(void);   /* L"fe80::1%4" */
void SurfaceIpv6StringToAddressExA(const char *text);
void SurfaceIpv6StringToAddressExW(void); /* L"[2001:db8::7%3]:4791", into a SOCKADDR_IN6 */
void SurfaceIpv6AddressToStringA(const uint8_t bytes[16]);
void SurfaceIpv6AddressToStringW(const uint8_t bytes[16]);
void SurfaceIpv6AddressToStringExA(const uint8_t bytes[16], uint32_t scope, uint16_t network_port, uint32_t length);

/* ---- netioapi.h ---- */
size_t SurfaceAliasBufferCharacters(void); /* NDIS_IF_MAX_STRING_SIZE + 1, if MIB_IF_ROW2's Alias is as big */

/* ---- DbgPrint with Windows formats (on a kernel thread; Environment::DebugLog has the line) ---- */
void SurfaceDbgPrintLong(void);              /* "%ld" of (LONG)-5 */
void SurfaceDbgPrintUnsignedLongHex(void);   /* "%lx" of (ULONG)0xFFFFFFFE */
void SurfaceDbgPrintI64d(void);              /* "%I64d" of -5000000000 */
void SurfaceDbgPrintI64x(void);              /* "%I64x" of 0x123456789ABCDEF0 */
void SurfaceDbgPrintLlu(void);               /* "%llu" of 2^64 - 1 */
void SurfaceDbgPrintAnsiString(void);        /* "[%Z]" of 4 characters "nic0", no terminator */
void SurfaceDbgPrintUnicodeString(void);     /* "[%wZ]" of L"\\Device\\Ndk" */
void SurfaceDbgPrintWideString(void);        /* "[%ws]" of L"eth0" */
void SurfaceDbgPrintCapitalS(void);          /* "[%S]" of L"eth1" */
void SurfaceDbgPrintPointer(void);           /* "%p" of 0xABCD */
void SurfaceDbgPrintExLong(void);            /* DbgPrintEx "%ld" of (LONG)-7 */
void SurfaceDbgPrintCheckedFormats(void);     /* every conversion with an argument of its kind */
void SurfaceDbgPrintUlongPtrWithLu(void);     /* "%lu" of a ULONG_PTR: reported (FORMAT) */
void SurfaceDbgPrintUnicodeStringWithWs(void); /* "%ws" of a UNICODE_STRING*: reported */
void SurfaceDbgPrintTooFewArguments(void);    /* "%d and %d" with one argument: reported */
void SurfaceKdPrintLong(void);               /* KdPrint "%ld" of (LONG)-9 */
void SurfaceVDbgPrintExLong(void);           /* vDbgPrintEx "%ld|%lu" of -11, 4000000000 */
void SurfaceDbgPrintWideAtDispatchLevel(void); /* "%ws" at DISPATCH_LEVEL */

/* ---- a work item on the driver object ---- */
/* Allocates an IO_WORKITEM on its DRIVER_OBJECT and queues it (IoQueueWorkItemEx); the routine puts
 * its IoObject in `pointer` and leaves 32 bytes of pool tagged "Work"; the unload waits for it. */
int32_t SurfaceDriverObjectWorkItemDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
void SurfaceWorkItemOnAnotherObject(void); /* an object whose Type is IO_TYPE_FILE */

#ifdef __cplusplus
}
#endif

#endif
