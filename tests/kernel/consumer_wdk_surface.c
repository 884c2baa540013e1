/* SPDX-License-Identifier: MIT */
/* Windows kernel-style C written the way real NDK and WSK consumers and the WDK samples write it:
 * SAL and concurrency annotations, MSVC keywords and pragmas, ntdef's macros, byte swaps, the
 * interlocked intrinsics, pool with priorities and extended parameters, critical regions, processor
 * queries, ntstrsafe.h, wdmsec.h, ip2string.h, DbgPrint's formats and work items on the driver object.
 * Compiled as consumer code (ndksim::kernel: -fshort-wchar, and
 * an undeclared service is an error); tests/kernel_wdk_surface_test.cc runs each function and checks
 * what it saw. */
#include <ntddk.h>
#include <ip2string.h>
#include <netioapi.h>
#include <ntstrsafe.h>
#include <wdmsec.h>

#include "consumer_wdk_surface.h"

/* MSVC pragmas in #pragma form: GCC ignores them, and the kernel target silences its warning. */
#pragma warning(disable : 4201)
#pragma warning(push)

#define TAG_PRIORITY 'oirP' /* "Prio" */
#define TAG_POOL3 '3loP'    /* "Pol3" */
#define TAG_POOL2 '2loP'    /* "Pol2" */
#define TAG_FREE 'eerF'     /* "Free" */

WdkSurfaceResults g_surface;

/* ---- annotations, MSVC keywords, base macros ---------------------------------------------------- */

typedef struct _ANNOTATED_SOCKET {
    KSPIN_LOCK Lock;
    _Write_guarded_by_(Lock) ULONG State;
    _Guarded_by_(Lock) ULONG Sends;
    ULONG Capacity;
    ULONG Used;
    _Field_size_bytes_part_(Capacity, Used) PUCHAR Buffer;
} ANNOTATED_SOCKET;

__drv_declspec("Noinline")
_IRQL_requires_max_(DISPATCH_LEVEL)
static VOID AnnotatedAppend(_Inout_updates_bytes_to_(Capacity, *Used) PUCHAR Buffer, _In_ ULONG Capacity,
                            _Inout_ PULONG Used, _Inout_bytecount_(1) PUCHAR Value) {
    __analysis_assume(*Used < Capacity);
    if (*Used < Capacity) Buffer[(*Used)++] = *Value;
}

_Success_(return != FALSE)
static BOOLEAN AnnotatedLookup(_Inout_ _Post_notnull_ ANNOTATED_SOCKET *Socket,
                               _Outptr_opt_result_maybenull_ PVOID *Context,
                               _Outptr_result_buffer_(1) PULONG *State,
                               _Outptr_result_buffer_maybenull_(1) PULONG *Sends,
                               _Outptr_opt_result_buffer_maybenull_(1) PUCHAR *Buffer,
                               _Outref_result_nullonfailure_ PVOID *Reference,
                               _Inout_updates_opt_(1) PULONG Spare,
                               __notnull PULONG Check) {
    if (Context != NULL) *Context = NULL;
    *State = &Socket->State;
    *Sends = &Socket->Sends;
    if (Buffer != NULL) *Buffer = Socket->Buffer;
    *Reference = Socket;
    if (Spare != NULL) *Spare = 0;
    *Check = 1;
    return TRUE;
}

_At_(Socket->State, _Pre_ _Const_ _Post_ _Notnull_)
_When_(Socket != _Null_, _Post_satisfies_(_Curr_ != NULL))
static _Post_maybenull_ _Post_writable_byte_size_(_Inexpressible_("the socket's")) PVOID
AnnotatedState(_In_ ANNOTATED_SOCKET *Socket) {
    __drv_nop(_IRQL_requires_max_(DISPATCH_LEVEL))
    return &Socket->State;
}

uint32_t SurfaceAnnotatedSum(uint32_t a, uint32_t b) {
    UCHAR bytes[4];
    UCHAR value = 1;
    ANNOTATED_SOCKET socket;
    PVOID context;
    PULONG state;
    PULONG sends;
    PUCHAR buffer;
    PVOID reference;
    ULONG check = 0;
    RtlZeroMemory(&socket, sizeof(socket));
    KeInitializeSpinLock(&socket.Lock);
    socket.Capacity = sizeof(bytes);
    socket.Buffer = bytes;
    _No_competing_thread_begin_
    socket.State = a;
    socket.Sends = b;
    _No_competing_thread_end_
    _Benign_race_begin_
    AnnotatedAppend(socket.Buffer, socket.Capacity, &socket.Used, &value);
    _Benign_race_end_
    if (!AnnotatedLookup(&socket, &context, &state, &sends, &buffer, &reference, NULL, &check)) return 0;
    if (AnnotatedState(&socket) != state || reference != &socket) return 0;
    return *state + *sends + check - socket.Used;
}

/* A statement macro whose end silences MSVC's "conditional expression is constant" (C4127), as
 * consumer utility headers write it. */
#define MULTI_LINE_MACRO_BEGIN do {
#define MULTI_LINE_MACRO_END                                   \
    __pragma(warning(push)) __pragma(warning(disable : 4127)) \
    } while (0) __pragma(warning(pop))
#define ADD_TWICE(Total, Value) \
    MULTI_LINE_MACRO_BEGIN      \
    (Total) += (Value);         \
    (Total) += (Value);         \
    MULTI_LINE_MACRO_END

uint32_t SurfacePragmaInsideAStatementMacro(uint32_t n) {
    ULONG total = 0;
    ULONG i;
    __pragma(prefast(suppress : 28118, "a constant loop"))
    for (i = 0; i < n; ++i) ADD_TWICE(total, 1);
    return total;
}

__pragma(pack(push, 1))
typedef struct _WIRE_HEADER {
    UCHAR Kind;
    ULONG Length;
} WIRE_HEADER;
__pragma(pack(pop))

size_t SurfacePackedHeaderSize(void) { return sizeof(WIRE_HEADER); }

typedef struct DECLSPEC_CACHEALIGN _QUEUE_PAIR_BUNDLE {
    LONG Head;
    LONG Tail;
} QUEUE_PAIR_BUNDLE;

size_t SurfaceCacheAlignedAlignment(void) { return _Alignof(QUEUE_PAIR_BUNDLE); }

typedef struct __declspec(align(16)) _ALIGNED_COUNTER {
    LONG Value;
} ALIGNED_COUNTER;

size_t SurfaceDeclspecAlignAlignment(void) { return _Alignof(ALIGNED_COUNTER); }

/* consumer_services.c defines it too: selectany keeps one of the two. */
__declspec(selectany) ULONG g_surface_selectany = 7;

const void *SurfaceSelectAnyAddress(void) { return &g_surface_selectany; }

static __forceinline ULONG Twice(ULONG n) { return n * 2; }

uint32_t SurfaceForceInlineTwice(uint32_t n) { return Twice(n); }

int SurfaceArgumentPresent(const void *pointer) { return ARGUMENT_PRESENT(pointer) ? 1 : 0; }

int SurfaceSeverity(int32_t status) {
    if (NT_ERROR(status)) return 3;
    if (NT_WARNING(status)) return 2;
    if (NT_INFORMATION(status)) return 1;
    return 0;
}

int SurfaceMin(int a, int b) { return min(a, b); }
int SurfaceMax(int a, int b) { return max(a, b); }

/* ---- byte order --------------------------------------------------------------------------------- */

uint16_t SurfaceUshortByteSwap(uint16_t value) { return RtlUshortByteSwap(value); }
uint32_t SurfaceUlongByteSwap(uint32_t value) { return RtlUlongByteSwap(value); }
uint64_t SurfaceUlonglongByteSwap(uint64_t value) { return RtlUlonglongByteSwap(value); }

/* ---- interlocked forms -------------------------------------------------------------------------- */

void SurfaceInterlockedIncrement16(int16_t start) {
    SHORT volatile value = start;
    g_surface.values[0] = InterlockedIncrement16(&value);
    g_surface.values[1] = value;
}

void SurfaceInterlockedDecrement16(int16_t start) {
    SHORT volatile value = start;
    g_surface.values[0] = InterlockedDecrement16(&value);
    g_surface.values[1] = value;
}

void SurfaceInterlockedCompareExchange16(int16_t start, int16_t exchange, int16_t comparand) {
    SHORT volatile value = start;
    g_surface.values[0] = InterlockedCompareExchange16(&value, exchange, comparand);
    g_surface.values[1] = value;
}

void SurfaceIntrinsicCompareExchange(int32_t start, int32_t exchange, int32_t comparand) {
    LONG volatile value = start;
    g_surface.values[0] = _InterlockedCompareExchange(&value, exchange, comparand);
    g_surface.values[1] = value;
}

void SurfaceIntrinsicIncrement16(int16_t start) {
    SHORT volatile value = start;
    g_surface.values[0] = _InterlockedIncrement16(&value);
    g_surface.values[1] = value;
}

void SurfaceInterlockedOr8(int8_t start, int8_t operand) {
    CHAR volatile value = (CHAR)start;
    g_surface.values[0] = (signed char)InterlockedOr8(&value, (CHAR)operand);
    g_surface.values[1] = (signed char)value;
}

void SurfaceInterlockedAnd8(int8_t start, int8_t operand) {
    CHAR volatile value = (CHAR)start;
    g_surface.values[0] = (signed char)InterlockedAnd8(&value, (CHAR)operand);
    g_surface.values[1] = (signed char)value;
}

void SurfaceInterlockedXor8(int8_t start, int8_t operand) {
    CHAR volatile value = (CHAR)start;
    g_surface.values[0] = (signed char)InterlockedXor8(&value, (CHAR)operand);
    g_surface.values[1] = (signed char)value;
}

void SurfaceInterlockedIncrementNoFence(int32_t start) {
    LONG volatile value = start;
    g_surface.values[0] = InterlockedIncrementNoFence(&value);
    g_surface.values[1] = value;
}

void SurfaceInterlockedDecrementRelease(int32_t start) {
    LONG volatile value = start;
    g_surface.values[0] = InterlockedDecrementRelease(&value);
    g_surface.values[1] = value;
}

void SurfaceInterlockedCompareExchangeAcquire(int32_t start, int32_t exchange, int32_t comparand) {
    LONG volatile value = start;
    g_surface.values[0] = InterlockedCompareExchangeAcquire(&value, exchange, comparand);
    g_surface.values[1] = value;
}

void SurfaceInterlockedExchangeNoFence(int32_t start, int32_t operand) {
    LONG volatile value = start;
    g_surface.values[0] = InterlockedExchangeNoFence(&value, operand);
    g_surface.values[1] = value;
}

void *SurfacePointerPublishedAndRead(void *value) {
    PVOID volatile slot = NULL;
    WritePointerRelease(&slot, value);
    return ReadPointerAcquire(&slot);
}

/* ---- pool --------------------------------------------------------------------------------------- */

static void RecordBlock(const UCHAR *block) {
    g_surface.status = block != NULL ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
    g_surface.values[0] = block != NULL ? block[0] : -1;
    g_surface.pointer = (void *)block;
}

void SurfaceAllocateWithPriority(int priority, size_t bytes) {
    RecordBlock((const UCHAR *)ExAllocatePoolWithTagPriority(NonPagedPoolNx, bytes, TAG_PRIORITY,
                                                             (EX_POOL_PRIORITY)priority));
}

void SurfaceAllocatePool3WithPriority(uint64_t flags, size_t bytes) {
    POOL_EXTENDED_PARAMETER parameter;
    RtlZeroMemory(&parameter, sizeof(parameter));
    parameter.Type = PoolExtendedParameterPriority;
    parameter.Optional = FALSE;
    parameter.Priority = NormalPoolPriority;
    RecordBlock((const UCHAR *)ExAllocatePool3(flags, bytes, TAG_POOL3, &parameter, 1));
}

void SurfaceAllocatePool3OnNode(uint32_t preferred_node) {
    POOL_EXTENDED_PARAMETER parameter;
    RtlZeroMemory(&parameter, sizeof(parameter));
    parameter.Type = PoolExtendedParameterNumaNode;
    parameter.PreferredNode = preferred_node;
    RecordBlock((const UCHAR *)ExAllocatePool3(POOL_FLAG_NON_PAGED, 64, TAG_POOL3, &parameter, 1));
}

void SurfaceAllocatePool3WithParameter(int type, int optional, uint64_t value) {
    POOL_EXTENDED_PARAMETER parameter;
    RtlZeroMemory(&parameter, sizeof(parameter));
    parameter.Type = (ULONG64)type;
    parameter.Optional = optional != 0;
    parameter.Reserved2 = value;
    RecordBlock((const UCHAR *)ExAllocatePool3(POOL_FLAG_NON_PAGED, 64, TAG_POOL3, &parameter, 1));
}

void SurfaceAllocatePool2(uint64_t flags) {
    RecordBlock((const UCHAR *)ExAllocatePool2(flags, 32, TAG_POOL2));
}

void SurfaceFreePool2(void) {
    PVOID block = ExAllocatePool2(POOL_FLAG_NON_PAGED, 24, TAG_FREE);
    if (block != NULL) ExFreePool2(block, TAG_FREE, NULL, 0);
}

void SurfaceFreePool2WithTheWrongTag(void) {
    PVOID block = ExAllocatePool2(POOL_FLAG_NON_PAGED, 24, TAG_FREE);
    ExFreePool2(block, TAG_PRIORITY, NULL, 0); /* the violation */
}

static PVOID g_priority_block;
static PVOID g_pool3_block;

static VOID LeakyUnload(PDRIVER_OBJECT Driver) {
    UNREFERENCED_PARAMETER(Driver);
    /* forgets its blocks */
}

NTSTATUS SurfacePriorityLeakDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    Driver->DriverUnload = LeakyUnload;
    g_priority_block = ExAllocatePoolWithTagPriority(NonPagedPoolNx, 48, TAG_PRIORITY, NormalPoolPriority);
    return g_priority_block != NULL ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
}

NTSTATUS SurfacePool3LeakDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    POOL_EXTENDED_PARAMETER priority;
    UNREFERENCED_PARAMETER(RegistryPath);
    Driver->DriverUnload = LeakyUnload;
    RtlZeroMemory(&priority, sizeof(priority));
    priority.Type = PoolExtendedParameterPriority;
    priority.Priority = HighPoolPriority;
    g_pool3_block = ExAllocatePool3(POOL_FLAG_NON_PAGED, 80, TAG_POOL3, &priority, 1);
    return g_pool3_block != NULL ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
}

static VOID CleanUnload(PDRIVER_OBJECT Driver) {
    UNREFERENCED_PARAMETER(Driver);
    ExFreePoolWithTag(g_priority_block, TAG_PRIORITY);
    ExFreePool2(g_pool3_block, TAG_POOL3, NULL, 0);
}

NTSTATUS SurfacePoolCleanDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    NTSTATUS status = SurfacePriorityLeakDriverEntry(Driver, RegistryPath);
    if (!NT_SUCCESS(status)) return status;
    status = SurfacePool3LeakDriverEntry(Driver, RegistryPath);
    Driver->DriverUnload = CleanUnload;
    return status;
}

/* ---- regions, processors, ticks ----------------------------------------------------------------- */

void SurfaceNestedCriticalRegions(void) {
    KeEnterCriticalRegion();
    KeEnterCriticalRegion();
    g_surface.values[0] = KeAreApcsDisabled();
    KeLeaveCriticalRegion();
    g_surface.values[1] = KeAreApcsDisabled();
    KeLeaveCriticalRegion();
    g_surface.values[2] = KeAreApcsDisabled();
}

void SurfaceGuardedRegion(void) {
    KeEnterGuardedRegion();
    g_surface.values[0] = KeAreAllApcsDisabled();
    g_surface.values[1] = KeAreApcsDisabled();
    KeLeaveGuardedRegion();
    g_surface.values[2] = KeAreAllApcsDisabled();
}

void SurfaceCriticalRegionAllApcs(void) {
    KeEnterCriticalRegion();
    g_surface.values[0] = KeAreAllApcsDisabled();
    KeLeaveCriticalRegion();
}

void SurfaceAllApcsDisabledAtApcLevel(void) {
    KIRQL old;
    KeRaiseIrql(APC_LEVEL, &old);
    g_surface.values[0] = KeAreAllApcsDisabled();
    KeLowerIrql(old);
}

void SurfaceLeaveCriticalRegionNotEntered(void) { KeLeaveCriticalRegion(); /* the violation */ }

void SurfaceEndInsideACriticalRegion(void) { KeEnterCriticalRegion(); /* returns without leaving */ }

static WORK_QUEUE_ITEM g_guarded_work;

static VOID GuardedWork(PVOID Context) {
    UNREFERENCED_PARAMETER(Context);
    KeEnterGuardedRegion(); /* returns without leaving */
}

void SurfaceWorkItemEndsInsideAGuardedRegion(void) {
    ExInitializeWorkItem(&g_guarded_work, GuardedWork, NULL);
    ExQueueWorkItem(&g_guarded_work, DelayedWorkQueue);
}

void SurfaceEnterCriticalRegionAtDispatchLevel(void) {
    KIRQL old;
    KeRaiseIrql(DISPATCH_LEVEL, &old);
    KeEnterCriticalRegion(); /* the violation */
    KeLowerIrql(old);
}

void SurfaceCurrentProcessorNumberEx(void) {
    PROCESSOR_NUMBER number;
    RtlFillMemory(&number, sizeof(number), 0xA5);
    g_surface.values[0] = KeGetCurrentProcessorNumberEx(&number);
    g_surface.values[1] = number.Group;
    g_surface.values[2] = number.Number;
    g_surface.values[3] = number.Reserved;
}

uint32_t SurfaceActiveProcessorCountEx(uint16_t group) { return KeQueryActiveProcessorCountEx(group); }

uint16_t SurfaceCurrentNodeNumber(void) { return KeGetCurrentNodeNumber(); }

void SurfaceNodeActiveAffinity(uint16_t node) {
    GROUP_AFFINITY affinity;
    USHORT count = 0xA5A5;
    RtlFillMemory(&affinity, sizeof(affinity), 0xA5);
    KeQueryNodeActiveAffinity(node, &affinity, &count);
    g_surface.values[0] = (int64_t)affinity.Mask;
    g_surface.values[1] = affinity.Group;
    g_surface.values[2] = count;
}

void SurfaceTickCountAfter(int64_t delay_100ns) {
    LARGE_INTEGER interval;
    LARGE_INTEGER ticks;
    interval.QuadPart = -delay_100ns;
    KeDelayExecutionThread(KernelMode, FALSE, &interval);
    KeQueryTickCount(&ticks);
    g_surface.values[0] = ticks.QuadPart;
    g_surface.values[1] = (int64_t)KeQueryInterruptTime();
    g_surface.values[2] = KeQueryTimeIncrement();
}

/* ---- wdmsec.h ----------------------------------------------------------------------------------- */

static VOID SecureDeviceUnload(PDRIVER_OBJECT Driver) { IoDeleteDevice(Driver->DeviceObject); }

NTSTATUS SurfaceSecureDeviceDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNICODE_STRING name = RTL_CONSTANT_STRING(L"\\Device\\NdkSurface");
    PDEVICE_OBJECT device = NULL;
    NTSTATUS status;
    UNREFERENCED_PARAMETER(RegistryPath);
    Driver->DriverUnload = SecureDeviceUnload;
    status = IoCreateDeviceSecure(Driver, 16, &name, FILE_DEVICE_UNKNOWN, FILE_DEVICE_SECURE_OPEN, FALSE,
                                  &SDDL_DEVOBJ_SYS_ALL_ADM_ALL, NULL, &device);
    g_surface.status = status;
    if (NT_SUCCESS(status)) {
        g_surface.values[0] = Driver->DeviceObject == device;
        g_surface.values[1] = device->DeviceType;
        g_surface.values[2] = device->DeviceExtension != NULL;
        g_surface.values[3] = device->Characteristics;
    }
    return status;
}

void SurfaceCreateDeviceSecureWithSddl(PDRIVER_OBJECT Driver, const uint16_t *sddl) {
    UNICODE_STRING string;
    PDEVICE_OBJECT device = NULL;
    RtlInitUnicodeString(&string, sddl);
    g_surface.status = IoCreateDeviceSecure(Driver, 0, NULL, FILE_DEVICE_NETWORK, 0, FALSE, &string, NULL, &device);
    g_surface.values[0] = Driver->DeviceObject != NULL;
    if (NT_SUCCESS(g_surface.status)) IoDeleteDevice(device);
}

int SurfaceSddlSysAllAdmAllIs(const uint16_t *expected) {
    UNICODE_STRING string;
    RtlInitUnicodeString(&string, expected);
    return RtlEqualUnicodeString(&string, &SDDL_DEVOBJ_SYS_ALL_ADM_ALL, FALSE);
}

/* ---- ntstrsafe.h -------------------------------------------------------------------------------- */

static void FillText(void) {
    int i;
    RtlFillMemory(g_surface.text, sizeof(g_surface.text), '#');
    for (i = 0; i < 64; ++i) g_surface.wide[i] = L'#';
}

void SurfaceCbPrintfWindowsLengthModifiers(uint32_t ulong_value, uint64_t ulong64_value, int16_t short_value) {
    FillText();
    g_surface.status = RtlStringCbPrintfA(g_surface.text, sizeof(g_surface.text), "%lu %I64u %hd %lx",
                                          (ULONG)ulong_value, (ULONG64)ulong64_value, (SHORT)short_value,
                                          (ULONG)ulong_value);
}

void SurfaceCbPrintfA(size_t cb, const char *string_argument) {
    FillText();
    g_surface.status = RtlStringCbPrintfA(g_surface.text, cb, "%s", string_argument);
}

void SurfaceCchPrintfA(size_t cch, const char *string_argument) {
    FillText();
    g_surface.status = RtlStringCchPrintfA(g_surface.text, cch, "%s", string_argument);
}

void SurfaceCbPrintfAPointer(void *pointer) {
    FillText();
    g_surface.status = RtlStringCbPrintfA(g_surface.text, sizeof(g_surface.text), "%p", pointer);
}

void SurfaceCbPrintfAUnicodeString(void) {
    UNICODE_STRING alias = RTL_CONSTANT_STRING(L"eth0");
    FillText();
    g_surface.status = RtlStringCbPrintfA(g_surface.text, sizeof(g_surface.text), "if=%wZ", &alias);
}

void SurfaceCbPrintfANullString(void) {
    FillText();
    g_surface.status =
        RtlStringCbPrintfA(g_surface.text, sizeof(g_surface.text), "[%s|%ws]", (PCSTR)NULL, (PCWSTR)NULL);
}

void SurfaceCbPrintfAWideString(void) {
    FillText();
    g_surface.status = RtlStringCbPrintfA(g_surface.text, sizeof(g_surface.text), "%ws", L"caf\x00e9\x4e2d");
}

void SurfaceCbPrintfAPercentN(void) {
    int written = 0;
    FillText();
    g_surface.status = RtlStringCbPrintfA(g_surface.text, sizeof(g_surface.text), "ab%n", &written);
}

void SurfaceCbPrintfW(size_t cb, uint32_t port) {
    FillText();
    g_surface.status = RtlStringCbPrintfW(g_surface.wide, cb, L"%s=%u", L"port", (ULONG)port);
}

void SurfaceCchPrintfW(size_t cch, uint32_t port) {
    FillText();
    g_surface.status = RtlStringCchPrintfW(g_surface.wide, cch, L"%s=%u", L"port", (ULONG)port);
}

void SurfaceCbPrintfWCharString(void) {
    FillText();
    g_surface.status = RtlStringCbPrintfW(g_surface.wide, sizeof(g_surface.wide), L"%S/%hs", "abc", "def");
}

/* A logging helper of the kind drivers write around the V forms. */
static NTSTATUS FormatLineA(PSTR Buffer, size_t Size, PCSTR Format, ...) {
    va_list args;
    NTSTATUS status;
    va_start(args, Format);
    status = RtlStringCbVPrintfA(Buffer, Size, Format, args);
    va_end(args);
    return status;
}

static NTSTATUS FormatLineW(PWSTR Buffer, size_t Characters, PCWSTR Format, ...) {
    va_list args;
    NTSTATUS status;
    va_start(args, Format);
    status = RtlStringCchVPrintfW(Buffer, Characters, Format, args);
    va_end(args);
    return status;
}

void SurfaceCbVPrintfA(size_t cb, int a, int b) {
    FillText();
    g_surface.status = FormatLineA(g_surface.text, cb, "%d+%d", a, b);
}

void SurfaceCchVPrintfW(size_t cch, int a, int b) {
    FillText();
    g_surface.status = FormatLineW(g_surface.wide, cch, L"%d+%d", a, b);
}

void SurfaceCbCopyA(size_t cb, const char *source) {
    FillText();
    g_surface.status = RtlStringCbCopyA(g_surface.text, cb, source);
}

void SurfaceCchCopyW(size_t cch) {
    FillText();
    g_surface.status = RtlStringCchCopyW(g_surface.wide, cch, L"wxyz");
}

void SurfaceCbCopyW(size_t cb) {
    FillText();
    g_surface.status = RtlStringCbCopyW(g_surface.wide, cb, L"wxyz");
}

void SurfaceCbCatA(size_t cb, const char *first, const char *second) {
    FillText();
    (void)RtlStringCbCopyA(g_surface.text, sizeof(g_surface.text), first);
    g_surface.status = RtlStringCbCatA(g_surface.text, cb, second);
}

void SurfaceCchCatW(size_t cch) {
    FillText();
    (void)RtlStringCchCopyW(g_surface.wide, RTL_NUMBER_OF(g_surface.wide), L"ab");
    g_surface.status = RtlStringCchCatW(g_surface.wide, cch, L"cdef");
}

void SurfaceCbCatAUnterminated(void) {
    FillText();
    RtlCopyMemory(g_surface.text, "wxyz", 4);
    g_surface.status = RtlStringCbCatA(g_surface.text, 4, "q");
}

void SurfaceCbLengthW(size_t cb) {
    size_t length = 99;
    g_surface.status = RtlStringCbLengthW(L"abc", cb, &length);
    g_surface.values[0] = (int64_t)length;
}

void SurfaceCchLengthA(size_t cch, const char *text) {
    size_t length = 99;
    g_surface.status = RtlStringCchLengthA(text, cch, &length);
    g_surface.values[0] = (int64_t)length;
}

void SurfaceUnicodeStringPrintf(uint16_t maximum_length, int value) {
    UNICODE_STRING string;
    FillText();
    string.Buffer = g_surface.wide;
    string.Length = 0;
    string.MaximumLength = maximum_length;
    g_surface.status = RtlUnicodeStringPrintf(&string, L"%d", value);
    g_surface.values[0] = string.Length;
}

void SurfaceUnicodeStringPrintfOddMaximum(void) {
    UNICODE_STRING string;
    FillText();
    string.Buffer = g_surface.wide;
    string.Length = 0;
    string.MaximumLength = 7;
    g_surface.status = RtlUnicodeStringPrintf(&string, L"%d", 1);
}

void SurfaceCbPrintfAConvertingAtDispatchLevel(void) {
    KIRQL old;
    KeRaiseIrql(DISPATCH_LEVEL, &old);
    g_surface.status = RtlStringCbPrintfA(g_surface.text, sizeof(g_surface.text), "%ws", L"x"); /* the violation */
    KeLowerIrql(old);
}

void SurfaceCbPrintfAPlainAtDispatchLevel(void) {
    KIRQL old;
    KeRaiseIrql(DISPATCH_LEVEL, &old);
    g_surface.status = RtlStringCbPrintfA(g_surface.text, sizeof(g_surface.text), "%d", 42);
    KeLowerIrql(old);
}


/* ---- ip2string.h -------------------------------------------------------------------------------- */

void SurfaceIpv4StringToAddressA(const char *text, int strict) {
    struct in_addr address;
    PCSTR terminator = NULL;
    address.s_addr = 0xEEEEEEEEu;
    g_surface.status = RtlIpv4StringToAddressA(text, strict ? TRUE : FALSE, &terminator, &address);
    g_surface.values[0] = address.s_addr;
    g_surface.values[1] = terminator != NULL ? terminator - text : -1;
}

void SurfaceIpv4StringToAddressW(void) {
    static const WCHAR text[] = L"192.0.2.1/24";
    IN_ADDR address;
    PCWSTR terminator = NULL;
    g_surface.status = RtlIpv4StringToAddressW(text, TRUE, &terminator, &address);
    g_surface.values[0] = address.s_addr;
    g_surface.values[1] = terminator != NULL ? terminator - text : -1;
}

void SurfaceIpv4StringToAddressExA(const char *text, int strict) {
    IN_ADDR address;
    USHORT port = 0xEEEE;
    address.s_addr = 0xEEEEEEEEu;
    g_surface.status = RtlIpv4StringToAddressExA(text, strict ? TRUE : FALSE, &address, &port);
    g_surface.values[0] = address.s_addr;
    g_surface.values[1] = port;
}

void SurfaceIpv4StringToAddressExW(void) {
    SOCKADDR_IN remote;
    RtlZeroMemory(&remote, sizeof(remote));
    remote.sin_family = AF_INET;
    g_surface.status = RtlIpv4StringToAddressExW(L"10.0.0.2:54321", TRUE, &remote.sin_addr, &remote.sin_port);
    g_surface.values[0] = remote.sin_addr.s_addr;
    g_surface.values[1] = remote.sin_port;
}

void SurfaceIpv4AddressToStringA(uint32_t network_address) {
    IN_ADDR address;
    PSTR end;
    FillText();
    address.s_addr = network_address;
    end = RtlIpv4AddressToStringA(&address, g_surface.text);
    g_surface.values[0] = end - g_surface.text;
}

void SurfaceIpv4AddressToStringW(uint32_t network_address) {
    IN_ADDR address;
    PWSTR end;
    FillText();
    address.s_addr = network_address;
    end = RtlIpv4AddressToStringW(&address, g_surface.wide);
    g_surface.values[0] = end - g_surface.wide;
}

void SurfaceIpv4AddressToStringExA(uint32_t network_address, uint16_t network_port, uint32_t length) {
    IN_ADDR address;
    ULONG size = length;
    FillText();
    address.s_addr = network_address;
    g_surface.status = RtlIpv4AddressToStringExA(&address, network_port, g_surface.text, &size);
    g_surface.values[0] = size;
}

void SurfaceIpv4AddressToStringExW(uint32_t network_address, uint16_t network_port, uint32_t length) {
    IN_ADDR address;
    ULONG size = length;
    FillText();
    address.s_addr = network_address;
    g_surface.status = RtlIpv4AddressToStringExW(&address, network_port, g_surface.wide, &size);
    g_surface.values[0] = size;
}

/* An IN6_ADDR's 16 bytes into values[first] and values[first + 1], as they lie in memory. */
static void StoreIpv6(const IN6_ADDR *address, int first) {
    RtlCopyMemory(&g_surface.values[first], address, 16);
}

void SurfaceIpv6StringToAddressA(const char *text) {
    IN6_ADDR address;
    PCSTR terminator = NULL;
    RtlFillMemory(&address, sizeof(address), 0xEE);
    g_surface.status = RtlIpv6StringToAddressA(text, &terminator, &address);
    StoreIpv6(&address, 0);
    g_surface.values[2] = terminator != NULL ? terminator - text : -1;
}

void SurfaceIpv6StringToAddressW(void) {
    static const WCHAR text[] = L"fe80::1%4";
    IN6_ADDR address;
    PCWSTR terminator = NULL;
    g_surface.status = RtlIpv6StringToAddressW(text, &terminator, &address);
    StoreIpv6(&address, 0);
    g_surface.values[2] = terminator != NULL ? terminator - text : -1;
}

void SurfaceIpv6StringToAddressExA(const char *text) {
    IN6_ADDR address;
    ULONG scope = 0xEEEEEEEEu;
    USHORT port = 0xEEEE;
    RtlFillMemory(&address, sizeof(address), 0xEE);
    g_surface.status = RtlIpv6StringToAddressExA(text, &address, &scope, &port);
    StoreIpv6(&address, 0);
    g_surface.values[2] = scope;
    g_surface.values[3] = port;
}

void SurfaceIpv6StringToAddressExW(void) {
    SOCKADDR_IN6 remote;
    RtlZeroMemory(&remote, sizeof(remote));
    remote.sin6_family = AF_INET6;
    g_surface.status = RtlIpv6StringToAddressExW(L"[2001:db8::7%3]:4791", &remote.sin6_addr, &remote.sin6_scope_id,
                                                 &remote.sin6_port);
    StoreIpv6(&remote.sin6_addr, 0);
    g_surface.values[2] = remote.sin6_scope_id;
    g_surface.values[3] = remote.sin6_port;
}

void SurfaceIpv6AddressToStringA(const uint8_t bytes[16]) {
    IN6_ADDR address;
    PSTR end;
    FillText();
    RtlCopyMemory(&address, bytes, 16);
    end = RtlIpv6AddressToStringA(&address, g_surface.text);
    g_surface.values[0] = end - g_surface.text;
}

void SurfaceIpv6AddressToStringW(const uint8_t bytes[16]) {
    IN6_ADDR address;
    PWSTR end;
    FillText();
    RtlCopyMemory(&address, bytes, 16);
    end = RtlIpv6AddressToStringW(&address, g_surface.wide);
    g_surface.values[0] = end - g_surface.wide;
}

void SurfaceIpv6AddressToStringExA(const uint8_t bytes[16], uint32_t scope, uint16_t network_port, uint32_t length) {
    IN6_ADDR address;
    ULONG size = length;
    FillText();
    RtlCopyMemory(&address, bytes, 16);
    g_surface.status = RtlIpv6AddressToStringExA(&address, scope, network_port, g_surface.text, &size);
    g_surface.values[0] = size;
}

/* ---- netioapi.h -------------------------------------------------------------------------------- */

/* The buffer a consumer sizes for an interface alias: the row's own alias field. */
size_t SurfaceAliasBufferCharacters(void) {
    WCHAR alias[NDIS_IF_MAX_STRING_SIZE + 1];
    MIB_IF_ROW2 row;
    (void)row;
    return sizeof(alias) == sizeof(row.Alias) ? sizeof(alias) / sizeof(alias[0]) : 0;
}

/* ---- DbgPrint with Windows formats -------------------------------------------------------------- */

void SurfaceDbgPrintLong(void) { DbgPrint("%ld", (LONG)-5); }

void SurfaceDbgPrintUnsignedLongHex(void) { DbgPrint("%lx", (ULONG)0xFFFFFFFEu); }

void SurfaceDbgPrintI64d(void) { DbgPrint("%I64d", (LONG64)-5000000000LL); }

void SurfaceDbgPrintI64x(void) { DbgPrint("%I64x", (ULONG64)0x123456789ABCDEF0ULL); }

void SurfaceDbgPrintLlu(void) { DbgPrint("%llu", (ULONGLONG)18446744073709551615ULL); }

void SurfaceDbgPrintAnsiString(void) {
    static CHAR text[] = {'n', 'i', 'c', '0', 'X'};
    ANSI_STRING string;
    string.Buffer = text;
    string.Length = 4; /* no terminator: the X is not part of it */
    string.MaximumLength = sizeof(text);
    DbgPrint("[%Z]", &string);
}

void SurfaceDbgPrintUnicodeString(void) {
    UNICODE_STRING string;
    RtlInitUnicodeString(&string, L"\\Device\\Ndk");
    DbgPrint("[%wZ]", &string);
}

void SurfaceDbgPrintWideString(void) { DbgPrint("[%ws]", L"eth0"); }

void SurfaceDbgPrintCapitalS(void) { DbgPrint("[%S]", L"eth1"); }

void SurfaceDbgPrintPointer(void) { DbgPrint("%p", (PVOID)(ULONG_PTR)0xABCD); }

void SurfaceDbgPrintExLong(void) { DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, "%ld", (LONG)-7); }

void SurfaceKdPrintLong(void) { KdPrint(("%ld", (LONG)-9)); }

/* ---- DbgPrint's formats checked against its arguments ---- */

/* Every conversion with an argument of its kind: no report, and the line as Windows prints it. */
void SurfaceDbgPrintCheckedFormats(void) {
    UNICODE_STRING unicode;
    ANSI_STRING ansi;
    SIZE_T size = 3;
    RtlInitUnicodeString(&unicode, L"u");
    RtlInitAnsiString(&ansi, "a");
    DbgPrint("%lu %I64u %Iu %zu %p %s %ws %wZ %Z %c %.1f %*d %hd%%", (ULONG)1, (ULONG64)2, size, size,
             (PVOID)(ULONG_PTR)0x10, "s", L"w", &unicode, &ansi, 'c', 1.5, 3, 4, (SHORT)5);
}

/* The classic LLP64 slip: a pointer-sized value printed with %lu, which reads 32 bits on Windows. */
void SurfaceDbgPrintUlongPtrWithLu(void) {
    ULONG_PTR address = 0x123456789ULL;
    DbgPrint("%lu\n", address);
}

/* A UNICODE_STRING given to %ws, which wants its Buffer (or %wZ for the string itself). */
void SurfaceDbgPrintUnicodeStringWithWs(void) {
    UNICODE_STRING name;
    RtlInitUnicodeString(&name, L"x");
    DbgPrint("%ws\n", &name);
}

void SurfaceDbgPrintTooFewArguments(void) { DbgPrint("%d and %d\n", 1); }

static ULONG DebugPrintThroughAVaList(PCSTR Format, ...) {
    va_list args;
    ULONG status;
    va_start(args, Format);
    status = vDbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_ERROR_LEVEL, Format, args);
    va_end(args);
    return status;
}

void SurfaceVDbgPrintExLong(void) { (void)DebugPrintThroughAVaList("%ld|%lu", (LONG)-11, (ULONG)4000000000u); }

void SurfaceDbgPrintWideAtDispatchLevel(void) {
    KIRQL old;
    KeRaiseIrql(DISPATCH_LEVEL, &old);
    DbgPrint("%ws", L"x"); /* the violation */
    KeLowerIrql(old);
}

/* ---- a work item on the driver object ----------------------------------------------------------- */

#define TAG_WORK 'kroW' /* "Work" */

static IO_WORKITEM_ROUTINE_EX DriverWorkRoutine;
static DRIVER_UNLOAD DriverWorkUnload;
static PIO_WORKITEM g_driver_work;
static KEVENT g_driver_work_done;

/* It leaves pool behind: pool a work item allocates is its driver's, so the unload's leak check
 * counts it. */
static VOID DriverWorkRoutine(PVOID IoObject, PVOID Context, PIO_WORKITEM IoWorkItem) {
    UNREFERENCED_PARAMETER(Context);
    UNREFERENCED_PARAMETER(IoWorkItem);
    g_surface.pointer = IoObject;
    (void)ExAllocatePoolWithTag(NonPagedPoolNx, 32, TAG_WORK);
    KeSetEvent(&g_driver_work_done, IO_NO_INCREMENT, FALSE);
}

static VOID DriverWorkUnload(PDRIVER_OBJECT Driver) {
    UNREFERENCED_PARAMETER(Driver);
    KeWaitForSingleObject(&g_driver_work_done, Executive, KernelMode, FALSE, NULL);
    IoFreeWorkItem(g_driver_work);
}

/* As a driver with no device object does it: the driver object, cast, is the work item's owner. */
NTSTATUS SurfaceDriverObjectWorkItemDriverEntry(PDRIVER_OBJECT Driver, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    Driver->DriverUnload = DriverWorkUnload;
    KeInitializeEvent(&g_driver_work_done, NotificationEvent, FALSE);
    g_driver_work = IoAllocateWorkItem((PDEVICE_OBJECT)Driver);
    if (g_driver_work == NULL) return STATUS_INSUFFICIENT_RESOURCES;
    IoQueueWorkItemEx(g_driver_work, DriverWorkRoutine, DelayedWorkQueue, NULL);
    return STATUS_SUCCESS;
}

void SurfaceWorkItemOnAnotherObject(void) {
    DEVICE_OBJECT object;
    RtlZeroMemory(&object, sizeof(object));
    object.Type = 5; /* IO_TYPE_FILE */
    g_surface.pointer = IoAllocateWorkItem(&object); /* the violation */
}

#pragma warning(pop)
