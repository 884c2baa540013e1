/* SPDX-License-Identifier: MIT */
/* wdm.h - ndksim's stand-in for the WDK header of the same name: the kernel types and services NDK
 * consumers use, implemented by ndksim's kernel environment (docs/kernel.md). Code written against
 * the WDK compiles against it unmodified when it keeps to what is declared here; anything else is a
 * compile or link error naming the missing service, never a silent stub.
 *
 * Kernel threads, waits, DPCs, timers and work items run under the environment's deterministic
 * scheduler on simulated time. The services check what Driver Verifier checks (IRQL rules, spin
 * lock use, pool tags, leaks at unload) and fail the run with the call's site: many service names
 * are also function-like macros that record __FILE__/__LINE__/__func__ before the call, so taking a
 * service's address still works and only the report's site is lost. */
#ifndef NDKSIM_KERNEL_WDM_H_
#define NDKSIM_KERNEL_WDM_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ndksim/ntstatus.h"
#include "guiddef.h"
#include "sdkddkver.h"
#include "ndksim/wdk_types.h"
#include "sal.h"

#ifndef NDKSIM_DEFINES_WDK_TYPES
#error "the kernel environment defines the WDK base types itself: do not define NDKSIM_NO_WDK_TYPES with it"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- base types and conventions not in ndksim/wdk_types.h ------------------------------------- */
#define IN
#define OUT
#define OPTIONAL
#define CONST const
#define NTAPI
#define NTSYSAPI
#define NTKERNELAPI
#define FASTCALL
#define DECLSPEC_NORETURN __attribute__((noreturn))
#define DECLSPEC_ALIGN(x) __attribute__((aligned(x)))
#define DECLSPEC_NOINLINE __attribute__((noinline))
#define FORCEINLINE static inline __attribute__((always_inline, unused))
/* x64's cache line, the alignment of DECLSPEC_CACHEALIGN and POOL_FLAG_CACHE_ALIGNED. */
#ifndef SYSTEM_CACHE_ALIGNMENT_SIZE
#define SYSTEM_CACHE_ALIGNMENT_SIZE 64
#endif
#define DECLSPEC_CACHEALIGN DECLSPEC_ALIGN(SYSTEM_CACHE_ALIGNMENT_SIZE)
#define UNREFERENCED_PARAMETER(P) ((void)(P))
#define DBG_UNREFERENCED_PARAMETER(P) ((void)(P))
#define DBG_UNREFERENCED_LOCAL_VARIABLE(V) ((void)(V))
#define ANYSIZE_ARRAY 1
#define C_ASSERT(e) static_assert((e), #e)
#define FIELD_OFFSET(type, field) ((LONG)offsetof(type, field))
#define RTL_FIELD_SIZE(type, field) (sizeof(((type *)0)->field))
#define CONTAINING_RECORD(address, type, field) ((type *)((PUCHAR)(address) - offsetof(type, field)))
#define RTL_NUMBER_OF(a) (sizeof(a) / sizeof((a)[0]))
#define ARRAYSIZE(a) RTL_NUMBER_OF(a)
#define ALIGN_DOWN_BY(length, alignment) ((ULONG_PTR)(length) & ~((ULONG_PTR)(alignment) - 1))
#define ALIGN_UP_BY(length, alignment) (ALIGN_DOWN_BY(((ULONG_PTR)(length) + (alignment) - 1), alignment))
#define ROUND_TO_PAGES(Size) (((ULONG_PTR)(Size) + PAGE_SIZE - 1) & ~((ULONG_PTR)PAGE_SIZE - 1))
#define BYTES_TO_PAGES(Size) ((ULONG)(((ULONG_PTR)(Size) >> PAGE_SHIFT) + (((Size) & (PAGE_SIZE - 1)) != 0)))
/* TRUE when an optional pointer argument was supplied. */
#define ARGUMENT_PRESENT(ArgumentPointer) ((ULONG_PTR)(ArgumentPointer) != 0)
/* An NTSTATUS's severity, its top two bits: 0 success, 1 informational, 2 warning, 3 error. */
#ifndef NT_INFORMATION
#define NT_INFORMATION(Status) ((((ULONG)(Status)) >> 30) == 1)
#endif
#ifndef NT_WARNING
#define NT_WARNING(Status) ((((ULONG)(Status)) >> 30) == 2)
#endif
#ifndef NT_ERROR
#define NT_ERROR(Status) ((((ULONG)(Status)) >> 30) == 3)
#endif
/* ntdef.h's min and max, for C as on Windows (unless NOMINMAX). Not for C++: C++ code that includes
 * these headers uses std::min and std::numeric_limits<T>::max(), which a function-like macro of the
 * same name breaks; a C++ consumer written against the Windows macros defines NDKSIM_WDK_MINMAX. */
#if (!defined(__cplusplus) || defined(NDKSIM_WDK_MINMAX)) && !defined(NOMINMAX)
#ifndef min
#define min(a, b) (((a) < (b)) ? (a) : (b))
#endif
#ifndef max
#define max(a, b) (((a) > (b)) ? (a) : (b))
#endif
#endif
#ifndef NULL
#define NULL ((void *)0)
#endif
#ifndef MAXLONG
#define MAXLONG 0x7fffffff
#endif
#ifndef MAXUSHORT
#define MAXUSHORT 0xffff
#endif
#ifndef MAXULONG_PTR
#define MAXULONG_PTR (~(ULONG_PTR)0)
#endif

typedef signed char SCHAR, CCHAR;
typedef CHAR *PCHAR, *PSTR, *PSZ;
typedef const CHAR *PCSTR, *PCSZ, *PCCH;
typedef int16_t SHORT, *PSHORT;
typedef int INT, *PINT;
typedef unsigned int UINT, *PUINT;
typedef int8_t INT8;
typedef uint8_t UINT8, *PUINT8;
typedef int16_t INT16;
typedef uint16_t UINT16;
typedef int32_t INT32, *PINT32;
typedef uint32_t *PUINT32;
typedef int64_t INT64, LONGLONG, *PLONGLONG, *PLONG64;
typedef uint64_t ULONGLONG, *PULONGLONG, *PULONG64, *PUINT64;
typedef ULONG_PTR *PULONG_PTR, *PSIZE_T;
typedef KAFFINITY *PKAFFINITY;
typedef LONG_PTR SSIZE_T;
typedef BOOLEAN *PBOOLEAN;
typedef ULONG LOGICAL, *PLOGICAL;
typedef PVOID HANDLE, *PHANDLE;
typedef ULONG ACCESS_MASK, *PACCESS_MASK;
typedef CCHAR KPROCESSOR_MODE;
typedef LONG KPRIORITY;
typedef NTSTATUS *PNTSTATUS;
typedef const GUID *LPCGUID;
/* WDK wide characters are 16-bit; the kernel target compiles C with -fshort-wchar so L"..." agrees. */
typedef uint16_t WCHAR, *PWCHAR, *PWCH, *PWSTR;
typedef const uint16_t *PCWCH, *PCWSTR;
typedef union _ULARGE_INTEGER {
    __extension__ struct {
        ULONG LowPart;
        ULONG HighPart;
    };
    struct {
        ULONG LowPart;
        ULONG HighPart;
    } u;
    ULONGLONG QuadPart;
} ULARGE_INTEGER, *PULARGE_INTEGER;

/* ---- MSVC keywords ----------------------------------------------------------------------------- */
/* __forceinline: inlined at every call, as MSVC does (GCC already has __inline). */
#define __forceinline __inline__ __attribute__((__always_inline__))
/* __pragma(x) is MSVC's _Pragma with an unquoted operand. The pragma's name selects what it becomes:
 * pack and message are GCC pragmas too and keep their meaning; warning and prefast steer MSVC's
 * warnings and its analyser, and alloc_text, code_seg, data_seg and const_seg place code and data in
 * pageable or discardable sections, which the environment does not page; all of those compile to
 * nothing. Any other name is a compile error naming NDKSIM_PRAGMA_<name>, to be added here. */
#define __pragma(x) NDKSIM_PRAGMA_##x
#define NDKSIM_PRAGMA_STRING(x) #x
#define NDKSIM_PRAGMA_pack(...) _Pragma(NDKSIM_PRAGMA_STRING(pack(__VA_ARGS__)))
#define NDKSIM_PRAGMA_message(...) _Pragma(NDKSIM_PRAGMA_STRING(message(__VA_ARGS__)))
#define NDKSIM_PRAGMA_warning(...)
#define NDKSIM_PRAGMA_prefast(...)
#define NDKSIM_PRAGMA_alloc_text(...)
#define NDKSIM_PRAGMA_code_seg(...)
#define NDKSIM_PRAGMA_data_seg(...)
#define NDKSIM_PRAGMA_const_seg(...)
/* __declspec(x) the same way: align, noinline and noreturn become GCC's attributes; selectany (one
 * definition of a global kept program-wide, the others dropped) becomes a weak definition; restrict
 * and noalias only promise the optimiser something and compile to nothing. Any other is a compile
 * error naming NDKSIM_DECLSPEC_<name>. */
#define __declspec(x) NDKSIM_DECLSPEC_##x
#define NDKSIM_DECLSPEC_align(n) __attribute__((aligned(n)))
#define NDKSIM_DECLSPEC_noinline __attribute__((noinline))
#define NDKSIM_DECLSPEC_noreturn __attribute__((noreturn))
#define NDKSIM_DECLSPEC_selectany __attribute__((weak))
#define NDKSIM_DECLSPEC_restrict
#define NDKSIM_DECLSPEC_noalias

/* Structured exception handling, as far as C compiled by GCC or clang has it: a __try block runs,
 * a __finally block runs after it when the block ends normally, and an __except handler never
 * runs. Whatever would raise an exception here (ExRaiseStatus, ProbeForRead or ProbeForWrite of a
 * bad buffer) fails the run as RAISE with the status and the site, so what a handler was written
 * for is reported instead of taken. A __finally block does not run when its __try block is left
 * by return, break or goto; __leave does not compile. C only: in C++, libstdc++ owns __try. */
#ifndef __cplusplus
#define EXCEPTION_EXECUTE_HANDLER 1
#define EXCEPTION_CONTINUE_SEARCH 0
#define EXCEPTION_CONTINUE_EXECUTION (-1)
#define __try if (1)
#define __except(filter) else if (((void)sizeof(filter), 0))
#define __finally else if (0) {} if (1)
#define __leave _Static_assert(0, "__leave: the kernel environment's __try cannot be left early")
#define GetExceptionCode() ((NTSTATUS)0)
#define GetExceptionInformation() ((PVOID)0)
#define AbnormalTermination() 0
#endif

/* ---- where a call was made, for verifier reports ---------------------------------------------- */
/* Records the caller's site for the next service call (the macros below call it). */
VOID NdksimSetSite(PCSTR File, ULONG Line, PCSTR Function);
#define NDKSIM_AT(call) (NdksimSetSite(__FILE__, __LINE__, __func__), call)

/* ---- IRQL ---------------------------------------------------------------------------------- */
typedef UCHAR KIRQL, *PKIRQL;
#define PASSIVE_LEVEL 0
#define LOW_LEVEL 0
#define APC_LEVEL 1
#define DISPATCH_LEVEL 2
#define CMCI_LEVEL 5
#define CLOCK_LEVEL 13
#define HIGH_LEVEL 15

KIRQL KeGetCurrentIrql(VOID);
VOID KeRaiseIrql(KIRQL NewIrql, PKIRQL OldIrql);
VOID KeLowerIrql(KIRQL NewIrql);
KIRQL KeRaiseIrqlToDpcLevel(VOID);
#define KeRaiseIrql(NewIrql, OldIrql) NDKSIM_AT(KeRaiseIrql((NewIrql), (OldIrql)))
#define KeLowerIrql(NewIrql) NDKSIM_AT(KeLowerIrql(NewIrql))

/* Fails the run (Driver Verifier's IRQL check) if the caller runs above APC_LEVEL. */
VOID NdksimPagedCode(VOID);
#define PAGED_CODE() NDKSIM_AT(NdksimPagedCode())
#define PAGED_CODE_LOCKED() ((void)0)

/* ---- lists --------------------------------------------------------------------------------- */
typedef struct _LIST_ENTRY {
    struct _LIST_ENTRY *Flink;
    struct _LIST_ENTRY *Blink;
} LIST_ENTRY, *PLIST_ENTRY, *PRLIST_ENTRY;

typedef struct _SINGLE_LIST_ENTRY {
    struct _SINGLE_LIST_ENTRY *Next;
} SINGLE_LIST_ENTRY, *PSINGLE_LIST_ENTRY;

/* A corrupt list link: the kernel's fail-fast (KERNEL_SECURITY_CHECK_FAILURE, 0x139). */
DECLSPEC_NORETURN VOID NdksimFatalListEntryError(PVOID P1, PVOID P2, PVOID P3);

FORCEINLINE VOID InitializeListHead(PLIST_ENTRY ListHead) { ListHead->Flink = ListHead->Blink = ListHead; }
FORCEINLINE BOOLEAN IsListEmpty(const LIST_ENTRY *ListHead) { return (BOOLEAN)(ListHead->Flink == ListHead); }
FORCEINLINE BOOLEAN RemoveEntryList(PLIST_ENTRY Entry) {
    PLIST_ENTRY Flink = Entry->Flink;
    PLIST_ENTRY Blink = Entry->Blink;
    if (Flink->Blink != Entry || Blink->Flink != Entry) NdksimFatalListEntryError(Blink, Entry, Flink);
    Blink->Flink = Flink;
    Flink->Blink = Blink;
    return (BOOLEAN)(Flink == Blink);
}
FORCEINLINE PLIST_ENTRY RemoveHeadList(PLIST_ENTRY ListHead) {
    PLIST_ENTRY Entry = ListHead->Flink;
    PLIST_ENTRY Flink = Entry->Flink;
    if (Entry->Blink != ListHead || Flink->Blink != Entry) NdksimFatalListEntryError(ListHead, Entry, Flink);
    ListHead->Flink = Flink;
    Flink->Blink = ListHead;
    return Entry;
}
FORCEINLINE PLIST_ENTRY RemoveTailList(PLIST_ENTRY ListHead) {
    PLIST_ENTRY Entry = ListHead->Blink;
    PLIST_ENTRY Blink = Entry->Blink;
    if (Entry->Flink != ListHead || Blink->Flink != Entry) NdksimFatalListEntryError(Blink, Entry, ListHead);
    ListHead->Blink = Blink;
    Blink->Flink = ListHead;
    return Entry;
}
FORCEINLINE VOID InsertTailList(PLIST_ENTRY ListHead, PLIST_ENTRY Entry) {
    PLIST_ENTRY Blink = ListHead->Blink;
    if (Blink->Flink != ListHead) NdksimFatalListEntryError(Blink, ListHead, Blink->Flink);
    Entry->Flink = ListHead;
    Entry->Blink = Blink;
    Blink->Flink = Entry;
    ListHead->Blink = Entry;
}
FORCEINLINE VOID InsertHeadList(PLIST_ENTRY ListHead, PLIST_ENTRY Entry) {
    PLIST_ENTRY Flink = ListHead->Flink;
    if (Flink->Blink != ListHead) NdksimFatalListEntryError(ListHead, Flink, Flink->Blink);
    Entry->Flink = Flink;
    Entry->Blink = ListHead;
    Flink->Blink = Entry;
    ListHead->Flink = Entry;
}
FORCEINLINE VOID AppendTailList(PLIST_ENTRY ListHead, PLIST_ENTRY ListToAppend) {
    PLIST_ENTRY ListEnd = ListHead->Blink;
    ListHead->Blink->Flink = ListToAppend;
    ListHead->Blink = ListToAppend->Blink;
    ListToAppend->Blink->Flink = ListHead;
    ListToAppend->Blink = ListEnd;
}
FORCEINLINE VOID PushEntryList(PSINGLE_LIST_ENTRY ListHead, PSINGLE_LIST_ENTRY Entry) {
    Entry->Next = ListHead->Next;
    ListHead->Next = Entry;
}
FORCEINLINE PSINGLE_LIST_ENTRY PopEntryList(PSINGLE_LIST_ENTRY ListHead) {
    PSINGLE_LIST_ENTRY First = ListHead->Next;
    if (First != NULL) ListHead->Next = First->Next;
    return First;
}

/* ---- interlocked operations (full barriers, as on Windows) ------------------------------------ */
#define NDKSIM_SEQ __ATOMIC_SEQ_CST
FORCEINLINE LONG InterlockedIncrement(LONG volatile *Addend) { return __atomic_add_fetch(Addend, 1, NDKSIM_SEQ); }
FORCEINLINE LONG InterlockedDecrement(LONG volatile *Addend) { return __atomic_sub_fetch(Addend, 1, NDKSIM_SEQ); }
FORCEINLINE LONG InterlockedExchange(LONG volatile *Target, LONG Value) { return __atomic_exchange_n(Target, Value, NDKSIM_SEQ); }
FORCEINLINE LONG InterlockedExchangeAdd(LONG volatile *Addend, LONG Value) { return __atomic_fetch_add(Addend, Value, NDKSIM_SEQ); }
FORCEINLINE LONG InterlockedAdd(LONG volatile *Addend, LONG Value) { return __atomic_add_fetch(Addend, Value, NDKSIM_SEQ); }
FORCEINLINE LONG InterlockedOr(LONG volatile *Destination, LONG Value) { return __atomic_fetch_or(Destination, Value, NDKSIM_SEQ); }
FORCEINLINE LONG InterlockedAnd(LONG volatile *Destination, LONG Value) { return __atomic_fetch_and(Destination, Value, NDKSIM_SEQ); }
FORCEINLINE LONG InterlockedXor(LONG volatile *Destination, LONG Value) { return __atomic_fetch_xor(Destination, Value, NDKSIM_SEQ); }
FORCEINLINE LONG InterlockedCompareExchange(LONG volatile *Destination, LONG Exchange, LONG Comparand) {
    __atomic_compare_exchange_n(Destination, &Comparand, Exchange, 0, NDKSIM_SEQ, NDKSIM_SEQ);
    return Comparand;
}
FORCEINLINE LONG64 InterlockedIncrement64(LONG64 volatile *Addend) { return __atomic_add_fetch(Addend, 1, NDKSIM_SEQ); }
FORCEINLINE LONG64 InterlockedDecrement64(LONG64 volatile *Addend) { return __atomic_sub_fetch(Addend, 1, NDKSIM_SEQ); }
FORCEINLINE LONG64 InterlockedExchange64(LONG64 volatile *Target, LONG64 Value) { return __atomic_exchange_n(Target, Value, NDKSIM_SEQ); }
FORCEINLINE LONG64 InterlockedExchangeAdd64(LONG64 volatile *Addend, LONG64 Value) { return __atomic_fetch_add(Addend, Value, NDKSIM_SEQ); }
FORCEINLINE LONG64 InterlockedAdd64(LONG64 volatile *Addend, LONG64 Value) { return __atomic_add_fetch(Addend, Value, NDKSIM_SEQ); }
FORCEINLINE LONG64 InterlockedOr64(LONG64 volatile *Destination, LONG64 Value) { return __atomic_fetch_or(Destination, Value, NDKSIM_SEQ); }
FORCEINLINE LONG64 InterlockedAnd64(LONG64 volatile *Destination, LONG64 Value) { return __atomic_fetch_and(Destination, Value, NDKSIM_SEQ); }
FORCEINLINE LONG64 InterlockedCompareExchange64(LONG64 volatile *Destination, LONG64 Exchange, LONG64 Comparand) {
    __atomic_compare_exchange_n(Destination, &Comparand, Exchange, 0, NDKSIM_SEQ, NDKSIM_SEQ);
    return Comparand;
}
FORCEINLINE PVOID InterlockedExchangePointer(PVOID volatile *Target, PVOID Value) { return __atomic_exchange_n(Target, Value, NDKSIM_SEQ); }
FORCEINLINE PVOID InterlockedCompareExchangePointer(PVOID volatile *Destination, PVOID Exchange, PVOID Comparand) {
    __atomic_compare_exchange_n(Destination, &Comparand, Exchange, 0, NDKSIM_SEQ, NDKSIM_SEQ);
    return Comparand;
}
/* In C, drivers pass the address of a typed pointer (`PMY_SOCKET *`) as MSVC takes it, without a
 * cast to PVOID *; GCC would call that an incompatible pointer type (an error from GCC 14 on). */
#ifndef __cplusplus
#define InterlockedExchangePointer(Target, Value) InterlockedExchangePointer((PVOID volatile *)(Target), (Value))
#define InterlockedCompareExchangePointer(Destination, Exchange, Comparand) \
    InterlockedCompareExchangePointer((PVOID volatile *)(Destination), (Exchange), (Comparand))
#endif
/* Interlocked{Increment,Decrement,Exchange,ExchangeAdd,CompareExchange}{Acquire,Release,NoFence}:
 * the same operation with only that ordering (on x64 every interlocked instruction is a full
 * barrier; on ARM64 these are cheaper, and code written for both relies on no more than the name
 * promises). */
#define NDKSIM_INTERLOCKED_ORDERED(Suffix, Order, FailureOrder)                                                   \
    FORCEINLINE LONG InterlockedIncrement##Suffix(LONG volatile *Addend) {                                      \
        return __atomic_add_fetch(Addend, 1, Order);                                                             \
    }                                                                                                            \
    FORCEINLINE LONG InterlockedDecrement##Suffix(LONG volatile *Addend) {                                      \
        return __atomic_sub_fetch(Addend, 1, Order);                                                             \
    }                                                                                                            \
    FORCEINLINE LONG InterlockedExchange##Suffix(LONG volatile *Target, LONG Value) {                           \
        return __atomic_exchange_n(Target, Value, Order);                                                        \
    }                                                                                                            \
    FORCEINLINE LONG InterlockedExchangeAdd##Suffix(LONG volatile *Addend, LONG Value) {                        \
        return __atomic_fetch_add(Addend, Value, Order);                                                         \
    }                                                                                                            \
    FORCEINLINE LONG InterlockedCompareExchange##Suffix(LONG volatile *Destination, LONG Exchange, LONG Comparand) { \
        __atomic_compare_exchange_n(Destination, &Comparand, Exchange, 0, Order, FailureOrder);                  \
        return Comparand;                                                                                        \
    }
NDKSIM_INTERLOCKED_ORDERED(Acquire, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)
NDKSIM_INTERLOCKED_ORDERED(Release, __ATOMIC_RELEASE, __ATOMIC_RELAXED)
NDKSIM_INTERLOCKED_ORDERED(NoFence, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#undef NDKSIM_INTERLOCKED_ORDERED

/* 8- and 16-bit forms: the And/Or/Xor ones return the original value, Increment/Decrement the new. */
FORCEINLINE CHAR InterlockedOr8(CHAR volatile *Destination, CHAR Value) { return __atomic_fetch_or(Destination, Value, NDKSIM_SEQ); }
FORCEINLINE CHAR InterlockedAnd8(CHAR volatile *Destination, CHAR Value) { return __atomic_fetch_and(Destination, Value, NDKSIM_SEQ); }
FORCEINLINE CHAR InterlockedXor8(CHAR volatile *Destination, CHAR Value) { return __atomic_fetch_xor(Destination, Value, NDKSIM_SEQ); }
FORCEINLINE SHORT InterlockedIncrement16(SHORT volatile *Addend) { return __atomic_add_fetch(Addend, 1, NDKSIM_SEQ); }
FORCEINLINE SHORT InterlockedDecrement16(SHORT volatile *Addend) { return __atomic_sub_fetch(Addend, 1, NDKSIM_SEQ); }
FORCEINLINE SHORT InterlockedExchange16(SHORT volatile *Target, SHORT Value) { return __atomic_exchange_n(Target, Value, NDKSIM_SEQ); }
FORCEINLINE SHORT InterlockedCompareExchange16(SHORT volatile *Destination, SHORT Exchange, SHORT Comparand) {
    __atomic_compare_exchange_n(Destination, &Comparand, Exchange, 0, NDKSIM_SEQ, NDKSIM_SEQ);
    return Comparand;
}

/* The compiler-intrinsic spellings (intrin.h), which wdm.h's names are on Windows. MSVC declares
 * them on `long`, which is 32-bit there: here they take LONG. */
#define _InterlockedIncrement InterlockedIncrement
#define _InterlockedDecrement InterlockedDecrement
#define _InterlockedExchange InterlockedExchange
#define _InterlockedExchangeAdd InterlockedExchangeAdd
#define _InterlockedCompareExchange InterlockedCompareExchange
#define _InterlockedOr InterlockedOr
#define _InterlockedAnd InterlockedAnd
#define _InterlockedXor InterlockedXor
#define _InterlockedIncrement64 InterlockedIncrement64
#define _InterlockedDecrement64 InterlockedDecrement64
#define _InterlockedExchange64 InterlockedExchange64
#define _InterlockedExchangeAdd64 InterlockedExchangeAdd64
#define _InterlockedCompareExchange64 InterlockedCompareExchange64
#define _InterlockedOr64 InterlockedOr64
#define _InterlockedAnd64 InterlockedAnd64
#define _InterlockedExchangePointer InterlockedExchangePointer
#define _InterlockedCompareExchangePointer InterlockedCompareExchangePointer
#define _InterlockedOr8 InterlockedOr8
#define _InterlockedAnd8 InterlockedAnd8
#define _InterlockedXor8 InterlockedXor8
#define _InterlockedIncrement16 InterlockedIncrement16
#define _InterlockedDecrement16 InterlockedDecrement16
#define _InterlockedExchange16 InterlockedExchange16
#define _InterlockedCompareExchange16 InterlockedCompareExchange16

FORCEINLINE PVOID ReadPointerAcquire(PVOID const volatile *Source) { return __atomic_load_n(Source, __ATOMIC_ACQUIRE); }
FORCEINLINE PVOID ReadPointerNoFence(PVOID const volatile *Source) { return __atomic_load_n(Source, __ATOMIC_RELAXED); }
FORCEINLINE VOID WritePointerRelease(PVOID volatile *Destination, PVOID Value) {
    __atomic_store_n(Destination, Value, __ATOMIC_RELEASE);
}
FORCEINLINE VOID WritePointerNoFence(PVOID volatile *Destination, PVOID Value) {
    __atomic_store_n(Destination, Value, __ATOMIC_RELAXED);
}
#define ReadNoFence(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ReadAcquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define WriteNoFence(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define WriteRelease(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define KeMemoryBarrier() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define MemoryBarrier() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define YieldProcessor() ((void)0)

/* ---- memory and strings ---------------------------------------------------------------------- */
#define RtlZeroMemory(Destination, Length) memset((Destination), 0, (Length))
#define RtlFillMemory(Destination, Length, Fill) memset((Destination), (Fill), (Length))
#define RtlCopyMemory(Destination, Source, Length) memcpy((Destination), (Source), (Length))
#define RtlMoveMemory(Destination, Source, Length) memmove((Destination), (Source), (Length))
#define RtlEqualMemory(Destination, Source, Length) (!memcmp((Destination), (Source), (Length)))
#define RtlSecureZeroMemory(Destination, Length) memset((Destination), 0, (Length))
FORCEINLINE SIZE_T RtlCompareMemory(const VOID *Source1, const VOID *Source2, SIZE_T Length) {
    SIZE_T i = 0;
    while (i < Length && ((const UCHAR *)Source1)[i] == ((const UCHAR *)Source2)[i]) ++i;
    return i;
}
/* Byte order reversal, as on a little-endian x64 host: RtlUshortByteSwap(0x1234) is 0x3412. */
FORCEINLINE USHORT RtlUshortByteSwap(USHORT Source) { return __builtin_bswap16(Source); }
FORCEINLINE ULONG RtlUlongByteSwap(ULONG Source) { return __builtin_bswap32(Source); }
FORCEINLINE ULONGLONG RtlUlonglongByteSwap(ULONGLONG Source) { return __builtin_bswap64(Source); }

typedef struct _UNICODE_STRING {
    USHORT Length;        /* bytes, without a terminator */
    USHORT MaximumLength; /* bytes */
    PWCH Buffer;
} UNICODE_STRING, *PUNICODE_STRING;
typedef const UNICODE_STRING *PCUNICODE_STRING;
typedef struct _STRING {
    USHORT Length;
    USHORT MaximumLength;
    PCHAR Buffer;
} STRING, ANSI_STRING, *PSTRING, *PANSI_STRING;
typedef const STRING *PCSTRING, *PCANSI_STRING;
VOID RtlInitUnicodeString(PUNICODE_STRING DestinationString, PCWSTR SourceString);
VOID RtlInitAnsiString(PANSI_STRING DestinationString, PCSZ SourceString);
BOOLEAN RtlEqualUnicodeString(PCUNICODE_STRING String1, PCUNICODE_STRING String2, BOOLEAN CaseInSensitive);
#define RTL_CONSTANT_STRING(s) { sizeof(s) - sizeof((s)[0]), sizeof(s), (PWCH)(s) }
/* A constant UNICODE_STRING and its buffer, and a writable one of a given size (ntdef.h). */
#define DECLARE_CONST_UNICODE_STRING(_var, _string)                                                    \
    const WCHAR _var##_buffer[] = _string;                                                          \
    const UNICODE_STRING _var = {sizeof(_string) - sizeof(WCHAR), sizeof(_string), (PWCH)_var##_buffer}
#define DECLARE_UNICODE_STRING_SIZE(_var, _size)                                                       \
    WCHAR _var##_buffer[_size];                                                                       \
    UNICODE_STRING _var = {0, (_size) * sizeof(WCHAR), _var##_buffer}

/* ---- debugging --------------------------------------------------------------------------------- */
#define DPFLTR_ERROR_LEVEL 0
#define DPFLTR_WARNING_LEVEL 1
#define DPFLTR_TRACE_LEVEL 2
#define DPFLTR_INFO_LEVEL 3
#define DPFLTR_IHVDRIVER_ID 77
#define DPFLTR_IHVNETWORK_ID 80
#define DPFLTR_DEFAULT_ID 101
/* All three go to the environment's debug log (Environment::DebugLog), prefixed with the simulated
 * time and the kernel thread, formatted as the Windows kernel's runtime formats them (ntstrsafe.h's
 * printf: %ld is 32-bit, %I64d and %lld 64-bit, %Z/%wZ counted strings, %ws/%S wide strings). Not
 * declared with GCC's printf format attribute: its LP64 rules would flag correct Windows formats. */
ULONG DbgPrint(PCSTR Format, ...);
ULONG DbgPrintEx(ULONG ComponentId, ULONG Level, PCSTR Format, ...);
ULONG vDbgPrintEx(ULONG ComponentId, ULONG Level, PCCH Format, va_list arglist);
#define KdPrint(args) DbgPrint args
#define KdPrintEx(args) DbgPrintEx args

/* Format checking, at run time (C only). GCC's and clang's -Wformat check printf formats by LP64
 * rules, where `long` is 64-bit, so they would flag correct Windows formats (%lu of a ULONG) and
 * pass wrong ones (%lu of a ULONG_PTR). Instead each DbgPrint and DbgPrintEx call passes the kind of
 * each of its arguments, taken by _Generic without evaluating them, and the environment checks the
 * format against them by the Windows kernel runtime's rules: a mismatch fails the run (FORMAT) at
 * the call. Up to 31 arguments after the format; define NDKSIM_NO_FORMAT_CHECK to call the plain
 * functions. */
#if !defined(__cplusplus) && !defined(NDKSIM_NO_FORMAT_CHECK)
#define NDKSIM_ARG_KIND(x)                                                                                 \
    _Generic((x), _Bool: 1, char: 1, signed char: 1, unsigned char: 1, short: 1, unsigned short: 1, int: 1, \
             unsigned int: 1, long: 2, unsigned long: 2, long long: 2, unsigned long long: 2, float: 3,      \
             double: 3, char *: 4, const char *: 4, unsigned short *: 5, const unsigned short *: 5,          \
             UNICODE_STRING *: 6, const UNICODE_STRING *: 6, STRING *: 7, const STRING *: 7, default: 8)
#define NDKSIM_NARG(...) NDKSIM_NARG_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define NDKSIM_NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, N, ...) N
#define NDKSIM_KINDS_CAT(a, b) a##b
#define NDKSIM_KINDS_N(n, ...) NDKSIM_KINDS_CAT(NDKSIM_KINDS_, n)(__VA_ARGS__)
#define NDKSIM_KINDS(...) NDKSIM_KINDS_N(NDKSIM_NARG(__VA_ARGS__), __VA_ARGS__)
#define NDKSIM_KINDS_1(a) NDKSIM_ARG_KIND(a)
#define NDKSIM_KINDS_2(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_1(__VA_ARGS__)
#define NDKSIM_KINDS_3(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_2(__VA_ARGS__)
#define NDKSIM_KINDS_4(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_3(__VA_ARGS__)
#define NDKSIM_KINDS_5(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_4(__VA_ARGS__)
#define NDKSIM_KINDS_6(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_5(__VA_ARGS__)
#define NDKSIM_KINDS_7(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_6(__VA_ARGS__)
#define NDKSIM_KINDS_8(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_7(__VA_ARGS__)
#define NDKSIM_KINDS_9(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_8(__VA_ARGS__)
#define NDKSIM_KINDS_10(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_9(__VA_ARGS__)
#define NDKSIM_KINDS_11(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_10(__VA_ARGS__)
#define NDKSIM_KINDS_12(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_11(__VA_ARGS__)
#define NDKSIM_KINDS_13(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_12(__VA_ARGS__)
#define NDKSIM_KINDS_14(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_13(__VA_ARGS__)
#define NDKSIM_KINDS_15(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_14(__VA_ARGS__)
#define NDKSIM_KINDS_16(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_15(__VA_ARGS__)
#define NDKSIM_KINDS_17(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_16(__VA_ARGS__)
#define NDKSIM_KINDS_18(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_17(__VA_ARGS__)
#define NDKSIM_KINDS_19(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_18(__VA_ARGS__)
#define NDKSIM_KINDS_20(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_19(__VA_ARGS__)
#define NDKSIM_KINDS_21(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_20(__VA_ARGS__)
#define NDKSIM_KINDS_22(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_21(__VA_ARGS__)
#define NDKSIM_KINDS_23(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_22(__VA_ARGS__)
#define NDKSIM_KINDS_24(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_23(__VA_ARGS__)
#define NDKSIM_KINDS_25(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_24(__VA_ARGS__)
#define NDKSIM_KINDS_26(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_25(__VA_ARGS__)
#define NDKSIM_KINDS_27(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_26(__VA_ARGS__)
#define NDKSIM_KINDS_28(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_27(__VA_ARGS__)
#define NDKSIM_KINDS_29(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_28(__VA_ARGS__)
#define NDKSIM_KINDS_30(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_29(__VA_ARGS__)
#define NDKSIM_KINDS_31(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_30(__VA_ARGS__)
#define NDKSIM_KINDS_32(a, ...) NDKSIM_ARG_KIND(a), NDKSIM_KINDS_31(__VA_ARGS__)
ULONG NdksimDbgPrintChecked(PCSTR File, ULONG Line, PCSTR Function, ULONG Count, const UCHAR *Kinds, ULONG ComponentId,
                            ULONG Level, PCSTR Format, ...);
#define DbgPrint(...)                                                                                    \
    NdksimDbgPrintChecked(__FILE__, __LINE__, __func__, NDKSIM_NARG(__VA_ARGS__),                        \
                          (const UCHAR[]){NDKSIM_KINDS(__VA_ARGS__)}, DPFLTR_DEFAULT_ID, DPFLTR_ERROR_LEVEL, __VA_ARGS__)
#define DbgPrintEx(ComponentId, Level, ...)                                                                \
    NdksimDbgPrintChecked(__FILE__, __LINE__, __func__, NDKSIM_NARG(__VA_ARGS__),                        \
                          (const UCHAR[]){NDKSIM_KINDS(__VA_ARGS__)}, (ComponentId), (Level), __VA_ARGS__)
#endif
VOID DbgBreakPoint(VOID);
/* A failed assertion fails the run with the expression and the site, as a checked kernel's
 * assertion breaks into the debugger. NT_ASSERT is active in every build, like Driver Verifier. */
VOID NdksimAssertFailed(PCSTR Expression, PCSTR File, ULONG Line, PCSTR Function);
#define NT_ASSERT(e) ((e) ? (void)0 : NdksimAssertFailed(#e, __FILE__, __LINE__, __func__))
#define NT_ASSERTMSG(msg, e) ((e) ? (void)0 : NdksimAssertFailed(msg, __FILE__, __LINE__, __func__))
#define NT_VERIFY(e) NT_ASSERT(e)
#define NT_FRE_ASSERT(e) NT_ASSERT(e)
#define ASSERT(e) NT_ASSERT(e)
#define ASSERTMSG(msg, e) NT_ASSERTMSG(msg, e)
DECLSPEC_NORETURN VOID KeBugCheckEx(ULONG BugCheckCode, ULONG_PTR P1, ULONG_PTR P2, ULONG_PTR P3, ULONG_PTR P4);
DECLSPEC_NORETURN VOID KeBugCheck(ULONG BugCheckCode);
DECLSPEC_NORETURN VOID ExRaiseStatus(NTSTATUS Status);
/* Checks a buffer a program passed (METHOD_NEITHER): an address that is not aligned to Alignment
 * raises STATUS_DATATYPE_MISALIGNMENT, a range in the first 64 KiB or past the top of the address
 * space STATUS_ACCESS_VIOLATION (see __try above). A length of 0 checks nothing. */
VOID ProbeForRead(const volatile VOID *Address, SIZE_T Length, ULONG Alignment);
VOID ProbeForWrite(volatile VOID *Address, SIZE_T Length, ULONG Alignment);
#define ProbeForRead(Address, Length, Alignment) NDKSIM_AT(ProbeForRead((Address), (Length), (Alignment)))
#define ProbeForWrite(Address, Length, Alignment) NDKSIM_AT(ProbeForWrite((Address), (Length), (Alignment)))

/* ---- dispatcher objects: events, timers, threads --------------------------------------------- */
/* Type values of the dispatcher header (the kernel's own numbering). */
#define NDKSIM_NOTIFICATION_EVENT_OBJECT 0
#define NDKSIM_SYNCHRONIZATION_EVENT_OBJECT 1
typedef struct _DISPATCHER_HEADER {
    UCHAR Type;
    UCHAR Reserved[3];
    LONG SignalState;
    LIST_ENTRY WaitListHead; /* the environment's wait blocks */
} DISPATCHER_HEADER, *PDISPATCHER_HEADER;

typedef enum _EVENT_TYPE { NotificationEvent, SynchronizationEvent } EVENT_TYPE;
typedef enum _TIMER_TYPE { NotificationTimer, SynchronizationTimer } TIMER_TYPE;
typedef enum _WAIT_TYPE { WaitAll, WaitAny, WaitNotification, WaitDequeue } WAIT_TYPE;
typedef enum _MODE { KernelMode, UserMode, MaximumMode } MODE;
typedef enum _KWAIT_REASON {
    Executive, FreePage, PageIn, PoolAllocation, DelayExecution, Suspended, UserRequest,
    WrExecutive, WrFreePage, WrPageIn, WrPoolAllocation, WrDelayExecution, WrSuspended,
    WrUserRequest, MaximumWaitReason = 40
} KWAIT_REASON;
#define IO_NO_INCREMENT 0
#define IO_NETWORK_INCREMENT 2
#define EVENT_INCREMENT 1
#define THREAD_WAIT_OBJECTS 3
#define MAXIMUM_WAIT_OBJECTS 64

typedef struct _KEVENT {
    DISPATCHER_HEADER Header;
} KEVENT, *PKEVENT, *PRKEVENT;

/* A mutex (a mutant): waited for with KeWaitForSingleObject/KeWaitForMultipleObjects, recursive for
 * its owner, released once per acquisition by its owner. A semaphore: a count, each satisfied
 * wait takes one, KeReleaseSemaphore adds. */
#define NDKSIM_MUTANT_OBJECT 2
#define NDKSIM_SEMAPHORE_OBJECT 5
typedef struct _KMUTANT {
    DISPATCHER_HEADER Header;
    LIST_ENTRY MutantListEntry;
    struct _KTHREAD *OwnerThread; /* KeGetCurrentThread() of the holder; NULL while free */
    BOOLEAN Abandoned;
    UCHAR ApcDisable;
} KMUTANT, *PKMUTANT, *PRKMUTANT, KMUTEX, *PKMUTEX, *PRKMUTEX;
typedef struct _KSEMAPHORE {
    DISPATCHER_HEADER Header;
    LONG Limit;
} KSEMAPHORE, *PKSEMAPHORE, *PRKSEMAPHORE;
#define MUTANT_INCREMENT 1
#define SEMAPHORE_INCREMENT 1

typedef struct _KWAIT_BLOCK {
    UCHAR Reserved[0x30];
} KWAIT_BLOCK, *PKWAIT_BLOCK, *PRKWAIT_BLOCK;

VOID KeInitializeEvent(PRKEVENT Event, EVENT_TYPE Type, BOOLEAN State);
LONG KeSetEvent(PRKEVENT Event, KPRIORITY Increment, BOOLEAN Wait);
LONG KeResetEvent(PRKEVENT Event);
VOID KeClearEvent(PRKEVENT Event);
LONG KeReadStateEvent(PRKEVENT Event);
/* Timeout: NULL waits forever; negative is relative, in 100-ns units; positive is an absolute system
 * time (KeQuerySystemTime's clock); zero only tests. Simulated time, in every case. */
NTSTATUS KeWaitForSingleObject(PVOID Object, KWAIT_REASON WaitReason, KPROCESSOR_MODE WaitMode,
                               BOOLEAN Alertable, PLARGE_INTEGER Timeout);
NTSTATUS KeWaitForMultipleObjects(ULONG Count, PVOID Object[], WAIT_TYPE WaitType, KWAIT_REASON WaitReason,
                                  KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Timeout,
                                  PKWAIT_BLOCK WaitBlockArray);
NTSTATUS KeDelayExecutionThread(KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Interval);
VOID KeInitializeMutex(PRKMUTEX Mutex, ULONG Level);
LONG KeReleaseMutex(PRKMUTEX Mutex, BOOLEAN Wait);
LONG KeReadStateMutex(PRKMUTEX Mutex);
VOID KeInitializeSemaphore(PRKSEMAPHORE Semaphore, LONG Count, LONG Limit);
LONG KeReleaseSemaphore(PRKSEMAPHORE Semaphore, KPRIORITY Increment, LONG Adjustment, BOOLEAN Wait);
LONG KeReadStateSemaphore(PRKSEMAPHORE Semaphore);
#define KeReleaseMutex(Mutex, Wait) NDKSIM_AT(KeReleaseMutex((Mutex), (Wait)))
#define KeReleaseSemaphore(Semaphore, Increment, Adjustment, Wait) \
    NDKSIM_AT(KeReleaseSemaphore((Semaphore), (Increment), (Adjustment), (Wait)))
#define KeSetEvent(Event, Increment, Wait) NDKSIM_AT(KeSetEvent((Event), (Increment), (Wait)))
#define KeInitializeEvent(Event, Type, State) NDKSIM_AT(KeInitializeEvent((Event), (Type), (State)))
#define KeInitializeMutex(Mutex, Level) NDKSIM_AT(KeInitializeMutex((Mutex), (Level)))
#define KeInitializeSemaphore(Semaphore, Count, Limit) \
    NDKSIM_AT(KeInitializeSemaphore((Semaphore), (Count), (Limit)))
#define KeWaitForSingleObject(Object, WaitReason, WaitMode, Alertable, Timeout) \
    NDKSIM_AT(KeWaitForSingleObject((Object), (WaitReason), (WaitMode), (Alertable), (Timeout)))
#define KeWaitForMultipleObjects(Count, Object, WaitType, WaitReason, WaitMode, Alertable, Timeout, WaitBlockArray) \
    NDKSIM_AT(KeWaitForMultipleObjects((Count), (Object), (WaitType), (WaitReason), (WaitMode), (Alertable), \
                                       (Timeout), (WaitBlockArray)))
#define KeDelayExecutionThread(WaitMode, Alertable, Interval) \
    NDKSIM_AT(KeDelayExecutionThread((WaitMode), (Alertable), (Interval)))

/* ---- spin locks ------------------------------------------------------------------------------ */
typedef ULONG_PTR KSPIN_LOCK, *PKSPIN_LOCK;
typedef struct _KSPIN_LOCK_QUEUE {
    struct _KSPIN_LOCK_QUEUE *volatile Next;
    PKSPIN_LOCK volatile Lock;
} KSPIN_LOCK_QUEUE, *PKSPIN_LOCK_QUEUE;
typedef struct _KLOCK_QUEUE_HANDLE {
    KSPIN_LOCK_QUEUE LockQueue;
    KIRQL OldIrql;
} KLOCK_QUEUE_HANDLE, *PKLOCK_QUEUE_HANDLE;

VOID KeInitializeSpinLock(PKSPIN_LOCK SpinLock);
KIRQL KeAcquireSpinLockRaiseToDpc(PKSPIN_LOCK SpinLock);
VOID KeReleaseSpinLock(PKSPIN_LOCK SpinLock, KIRQL NewIrql);
VOID KeAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock);
VOID KeReleaseSpinLockFromDpcLevel(PKSPIN_LOCK SpinLock);
BOOLEAN KeTryToAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock);
BOOLEAN KeTestSpinLock(PKSPIN_LOCK SpinLock);
VOID KeAcquireInStackQueuedSpinLock(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle);
VOID KeReleaseInStackQueuedSpinLock(PKLOCK_QUEUE_HANDLE LockHandle);
VOID KeAcquireInStackQueuedSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle);
VOID KeReleaseInStackQueuedSpinLockFromDpcLevel(PKLOCK_QUEUE_HANDLE LockHandle);
#define KeAcquireSpinLock(SpinLock, OldIrql) (*(OldIrql) = KeAcquireSpinLockRaiseToDpc(SpinLock))
#define KeAcquireSpinLockRaiseToDpc(SpinLock) NDKSIM_AT(KeAcquireSpinLockRaiseToDpc(SpinLock))
#define KeReleaseSpinLock(SpinLock, NewIrql) NDKSIM_AT(KeReleaseSpinLock((SpinLock), (NewIrql)))
#define KeAcquireSpinLockAtDpcLevel(SpinLock) NDKSIM_AT(KeAcquireSpinLockAtDpcLevel(SpinLock))
#define KeReleaseSpinLockFromDpcLevel(SpinLock) NDKSIM_AT(KeReleaseSpinLockFromDpcLevel(SpinLock))
#define KeAcquireInStackQueuedSpinLock(SpinLock, LockHandle) \
    NDKSIM_AT(KeAcquireInStackQueuedSpinLock((SpinLock), (LockHandle)))
#define KeReleaseInStackQueuedSpinLock(LockHandle) NDKSIM_AT(KeReleaseInStackQueuedSpinLock(LockHandle))
#define KeAcquireInStackQueuedSpinLockAtDpcLevel(SpinLock, LockHandle) \
    NDKSIM_AT(KeAcquireInStackQueuedSpinLockAtDpcLevel((SpinLock), (LockHandle)))
#define KeReleaseInStackQueuedSpinLockFromDpcLevel(LockHandle) \
    NDKSIM_AT(KeReleaseInStackQueuedSpinLockFromDpcLevel(LockHandle))

/* ---- DPCs and timers ------------------------------------------------------------------------- */
struct _KDPC;
typedef VOID KDEFERRED_ROUTINE(struct _KDPC *Dpc, PVOID DeferredContext, PVOID SystemArgument1,
                               PVOID SystemArgument2);
typedef KDEFERRED_ROUTINE *PKDEFERRED_ROUTINE;
typedef struct _KDPC {
    UCHAR Type;
    UCHAR Importance;
    volatile USHORT Number;
    SINGLE_LIST_ENTRY DpcListEntry;
    KAFFINITY ProcessorHistory;
    PKDEFERRED_ROUTINE DeferredRoutine;
    PVOID DeferredContext;
    PVOID SystemArgument1;
    PVOID SystemArgument2;
    volatile PVOID DpcData; /* non-NULL while queued */
} KDPC, *PKDPC, *PRKDPC;
typedef enum _KDPC_IMPORTANCE { LowImportance, MediumImportance, HighImportance, MediumHighImportance } KDPC_IMPORTANCE;

VOID KeInitializeDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext);
VOID KeInitializeThreadedDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext);
BOOLEAN KeInsertQueueDpc(PRKDPC Dpc, PVOID SystemArgument1, PVOID SystemArgument2);
BOOLEAN KeRemoveQueueDpc(PRKDPC Dpc);
VOID KeSetImportanceDpc(PRKDPC Dpc, KDPC_IMPORTANCE Importance);
VOID KeFlushQueuedDpcs(VOID);
#define KeInsertQueueDpc(Dpc, SystemArgument1, SystemArgument2) \
    NDKSIM_AT(KeInsertQueueDpc((Dpc), (SystemArgument1), (SystemArgument2)))

#define NDKSIM_NOTIFICATION_TIMER_OBJECT 8
#define NDKSIM_SYNCHRONIZATION_TIMER_OBJECT 9
typedef struct _KTIMER {
    DISPATCHER_HEADER Header;
    ULARGE_INTEGER DueTime;
    LIST_ENTRY TimerListEntry;
    struct _KDPC *Dpc;
    ULONG Processor;
    LONG Period;
} KTIMER, *PKTIMER, *PRKTIMER;

VOID KeInitializeTimer(PKTIMER Timer);
VOID KeInitializeTimerEx(PKTIMER Timer, TIMER_TYPE Type);
#define KeInitializeTimer(Timer) NDKSIM_AT(KeInitializeTimer((Timer)))
#define KeInitializeTimerEx(Timer, Type) NDKSIM_AT(KeInitializeTimerEx((Timer), (Type)))
BOOLEAN KeSetTimer(PKTIMER Timer, LARGE_INTEGER DueTime, PKDPC Dpc);
BOOLEAN KeSetTimerEx(PKTIMER Timer, LARGE_INTEGER DueTime, LONG Period, PKDPC Dpc);
BOOLEAN KeCancelTimer(PKTIMER Timer);
BOOLEAN KeReadStateTimer(PKTIMER Timer);

/* ---- time ------------------------------------------------------------------------------------ */
/* All on simulated time: the interrupt time counts 100-ns units from the fabric's time zero; the
 * system time is that plus a fixed epoch (2026-01-01 00:00 UTC, in 100-ns units since 1601); the
 * performance counter runs at 10 MHz. */
ULONGLONG KeQueryInterruptTime(VOID);
ULONGLONG KeQueryInterruptTimePrecise(PULONG64 QpcTimeStamp);
VOID KeQuerySystemTime(PLARGE_INTEGER CurrentTime);
VOID KeQuerySystemTimePrecise(PLARGE_INTEGER CurrentTime);
LARGE_INTEGER KeQueryPerformanceCounter(PLARGE_INTEGER PerformanceFrequency);
ULONG KeQueryTimeIncrement(VOID);
/* Clock ticks (of KeQueryTimeIncrement's 15.625 ms) since the fabric's time zero, the boot. */
VOID KeQueryTickCount(PLARGE_INTEGER CurrentCount);
VOID KeStallExecutionProcessor(ULONG MicroSeconds);

/* ---- threads ----------------------------------------------------------------------------------- */
typedef struct _KTHREAD *PKTHREAD, *PRKTHREAD;
typedef struct _ETHREAD *PETHREAD;
typedef struct _EPROCESS *PEPROCESS;
typedef struct _OBJECT_TYPE *POBJECT_TYPE;
typedef struct _CLIENT_ID {
    HANDLE UniqueProcess;
    HANDLE UniqueThread;
} CLIENT_ID, *PCLIENT_ID;
typedef struct _OBJECT_ATTRIBUTES {
    ULONG Length;
    HANDLE RootDirectory;
    PUNICODE_STRING ObjectName;
    ULONG Attributes;
    PVOID SecurityDescriptor;
    PVOID SecurityQualityOfService;
} OBJECT_ATTRIBUTES, *POBJECT_ATTRIBUTES;
#define OBJ_INHERIT 0x00000002L
#define OBJ_CASE_INSENSITIVE 0x00000040L
#define OBJ_KERNEL_HANDLE 0x00000200L
#define InitializeObjectAttributes(p, n, a, r, s) \
    do {                                          \
        (p)->Length = sizeof(OBJECT_ATTRIBUTES);  \
        (p)->RootDirectory = (r);                 \
        (p)->Attributes = (a);                    \
        (p)->ObjectName = (n);                    \
        (p)->SecurityDescriptor = (s);            \
        (p)->SecurityQualityOfService = NULL;     \
    } while (0)
#define SYNCHRONIZE 0x00100000L
#define STANDARD_RIGHTS_REQUIRED 0x000F0000L
#define THREAD_ALL_ACCESS (STANDARD_RIGHTS_REQUIRED | SYNCHRONIZE | 0xFFFF)
#define GENERIC_ALL 0x10000000L
#define NtCurrentProcess() ((HANDLE)(LONG_PTR)-1)
#define ZwCurrentProcess() NtCurrentProcess()

typedef VOID KSTART_ROUTINE(PVOID StartContext);
typedef KSTART_ROUTINE *PKSTART_ROUTINE;

extern POBJECT_TYPE *PsThreadType;
/* A new kernel thread (a fiber under the environment's scheduler) that runs StartRoutine at
 * PASSIVE_LEVEL. ProcessHandle must be NULL or NtCurrentProcess(); the handle must be closed with
 * ZwClose, and the thread object, referenced through ObReferenceObjectByHandle, is signaled when the
 * thread ends. */
NTSTATUS PsCreateSystemThread(PHANDLE ThreadHandle, ULONG DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                              HANDLE ProcessHandle, PCLIENT_ID ClientId, PKSTART_ROUTINE StartRoutine,
                              PVOID StartContext);
#define PsCreateSystemThread(ThreadHandle, DesiredAccess, ObjectAttributes, ProcessHandle, ClientId, StartRoutine, \
                             StartContext)                                                                         \
    NDKSIM_AT(PsCreateSystemThread((ThreadHandle), (DesiredAccess), (ObjectAttributes), (ProcessHandle), (ClientId), \
                                   (StartRoutine), (StartContext)))
DECLSPEC_NORETURN NTSTATUS PsTerminateSystemThread(NTSTATUS ExitStatus);
PKTHREAD KeGetCurrentThread(VOID);
PETHREAD PsGetCurrentThread(VOID);
HANDLE PsGetCurrentThreadId(VOID);
BOOLEAN PsIsSystemThread(PETHREAD Thread);
/* Processors: kernel threads, DPCs and callbacks run one at a time, so each machine is one
 * processor: processor 0 of group 0, in NUMA node 0. */
typedef struct _PROCESSOR_NUMBER {
    USHORT Group;
    UCHAR Number;
    UCHAR Reserved;
} PROCESSOR_NUMBER, *PPROCESSOR_NUMBER;
#define ALL_PROCESSOR_GROUPS 0xffff
ULONG KeGetCurrentProcessorNumber(VOID);
ULONG KeGetCurrentProcessorNumberEx(PPROCESSOR_NUMBER ProcNumber);
ULONG KeQueryActiveProcessorCount(PKAFFINITY ActiveProcessors);
/* The group's active processors (ALL_PROCESSOR_GROUPS: every group's); 0 for a group that does not exist. */
ULONG KeQueryActiveProcessorCountEx(USHORT GroupNumber);
USHORT KeQueryActiveGroupCount(VOID);
USHORT KeGetCurrentNodeNumber(VOID);
USHORT KeQueryHighestNodeNumber(VOID);
/* Node 0's group and processor mask; a node that does not exist has an empty mask and a count of 0. */
VOID KeQueryNodeActiveAffinity(USHORT NodeNumber, PGROUP_AFFINITY Affinity, PUSHORT Count);

/* Critical regions disable normal kernel APCs for the calling thread, guarded regions all APCs;
 * both nest. The environment delivers no APCs, so a region changes nothing else here, but its
 * nesting is the thread's and is checked: a leave without its enter, and a thread or work item that
 * ends inside a region (KERNEL_APC_PENDING_DURING_EXIT), fail the run. IRQL <= APC_LEVEL. */
VOID KeEnterCriticalRegion(VOID);
VOID KeLeaveCriticalRegion(VOID);
VOID KeEnterGuardedRegion(VOID);
VOID KeLeaveGuardedRegion(VOID);
/* TRUE inside a critical or guarded region. */
BOOLEAN KeAreApcsDisabled(VOID);
/* TRUE inside a guarded region or at IRQL >= APC_LEVEL. */
BOOLEAN KeAreAllApcsDisabled(VOID);
#define KeEnterCriticalRegion() NDKSIM_AT(KeEnterCriticalRegion())
#define KeLeaveCriticalRegion() NDKSIM_AT(KeLeaveCriticalRegion())
#define KeEnterGuardedRegion() NDKSIM_AT(KeEnterGuardedRegion())
#define KeLeaveGuardedRegion() NDKSIM_AT(KeLeaveGuardedRegion())
KPRIORITY KeSetPriorityThread(PKTHREAD Thread, KPRIORITY Priority);
NTSTATUS ZwClose(HANDLE Handle);
#define NtClose ZwClose
NTSTATUS ObReferenceObjectByHandle(HANDLE Handle, ACCESS_MASK DesiredAccess, POBJECT_TYPE ObjectType,
                                   KPROCESSOR_MODE AccessMode, PVOID *Object, PVOID HandleInformation);
LONG_PTR ObfReferenceObject(PVOID Object);
LONG_PTR ObfDereferenceObject(PVOID Object);
#define ObReferenceObject(Object) ObfReferenceObject(Object)
#define ObDereferenceObject(Object) ObfDereferenceObject(Object)

/* ---- pool ------------------------------------------------------------------------------------ */
typedef enum _POOL_TYPE {
    NonPagedPool = 0,
    NonPagedPoolExecute = 0,
    PagedPool = 1,
    NonPagedPoolMustSucceed = 2,
    NonPagedPoolCacheAligned = 4,
    PagedPoolCacheAligned = 5,
    NonPagedPoolNx = 512,
    NonPagedPoolNxCacheAligned = 516,
} POOL_TYPE;
typedef ULONG64 POOL_FLAGS;
/* The low 32 bits are required: an allocation with one the pool cannot satisfy or does not know
 * fails. The high 32 bits are optional: ignored when they cannot be satisfied or are unknown. */
#define POOL_FLAG_REQUIRED_START 0x0000000000000001ULL
#define POOL_FLAG_USE_QUOTA 0x0000000000000001ULL
#define POOL_FLAG_UNINITIALIZED 0x0000000000000002ULL
#define POOL_FLAG_SESSION 0x0000000000000004ULL
#define POOL_FLAG_CACHE_ALIGNED 0x0000000000000008ULL
#define POOL_FLAG_RESERVED1 0x0000000000000010ULL
#define POOL_FLAG_RAISE_ON_FAILURE 0x0000000000000020ULL
#define POOL_FLAG_NON_PAGED 0x0000000000000040ULL
#define POOL_FLAG_NON_PAGED_EXECUTE 0x0000000000000080ULL
#define POOL_FLAG_PAGED 0x0000000000000100ULL
#define POOL_FLAG_RESERVED2 0x0000000000000200ULL
#define POOL_FLAG_RESERVED3 0x0000000000000400ULL
#define POOL_FLAG_REQUIRED_END 0x0000000080000000ULL
#define POOL_FLAG_OPTIONAL_START 0x0000000100000000ULL
#define POOL_FLAG_SPECIAL_POOL 0x0000000100000000ULL
#define POOL_FLAG_OPTIONAL_END 0x8000000000000000ULL

/* How much an allocation may dip into the last of the pool. The pool is never short here, so every
 * priority succeeds. The special-pool variants ask Driver Verifier's special pool for the block;
 * special pool is not modelled (quarantine and poisoning catch a use after free instead), and the
 * block comes from the normal pool, as on a system without special pool enabled. */
typedef enum _EX_POOL_PRIORITY {
    LowPoolPriority,
    LowPoolPrioritySpecialPoolOverrun = 8,
    LowPoolPrioritySpecialPoolUnderrun = 9,
    NormalPoolPriority = 16,
    NormalPoolPrioritySpecialPoolOverrun = 24,
    NormalPoolPrioritySpecialPoolUnderrun = 25,
    HighPoolPriority = 32,
    HighPoolPrioritySpecialPoolOverrun = 40,
    HighPoolPrioritySpecialPoolUnderrun = 41
} EX_POOL_PRIORITY;

/* ExAllocatePool3's extended parameters. One with Optional clear must be one the pool knows, or
 * the allocation fails; one with Optional set may be ignored. */
typedef enum POOL_EXTENDED_PARAMETER_TYPE {
    PoolExtendedParameterInvalidType = 0,
    PoolExtendedParameterPriority,
    PoolExtendedParameterSecurePool,
    PoolExtendedParameterNumaNode,
    PoolExtendedParameterMax
} POOL_EXTENDED_PARAMETER_TYPE, *PPOOL_EXTENDED_PARAMETER_TYPE;
#define POOL_EXTENDED_PARAMETER_TYPE_BITS 8
#define POOL_EXTENDED_PARAMETER_REQUIRED_FIELD_BITS 1
#define POOL_EXTENDED_PARAMETER_RESERVED_BITS \
    (64 - POOL_EXTENDED_PARAMETER_TYPE_BITS - POOL_EXTENDED_PARAMETER_REQUIRED_FIELD_BITS)
typedef ULONG POOL_NODE_REQUIREMENT;
#define MM_ANY_NODE_OK 0x80000000
struct _POOL_EXTENDED_PARAMS_SECURE_POOL;
typedef struct _POOL_EXTENDED_PARAMETER {
    __extension__ struct {
        ULONG64 Type : POOL_EXTENDED_PARAMETER_TYPE_BITS;
        ULONG64 Optional : POOL_EXTENDED_PARAMETER_REQUIRED_FIELD_BITS;
        ULONG64 Reserved : POOL_EXTENDED_PARAMETER_RESERVED_BITS;
    };
    __extension__ union {
        ULONG64 Reserved2;
        PVOID Reserved3;
        EX_POOL_PRIORITY Priority;                                 /* PoolExtendedParameterPriority */
        struct _POOL_EXTENDED_PARAMS_SECURE_POOL *SecurePoolParams; /* PoolExtendedParameterSecurePool */
        POOL_NODE_REQUIREMENT PreferredNode;                       /* PoolExtendedParameterNumaNode */
    };
} POOL_EXTENDED_PARAMETER, *PPOOL_EXTENDED_PARAMETER;
typedef const POOL_EXTENDED_PARAMETER *PCPOOL_EXTENDED_PARAMETER;
static_assert(sizeof(POOL_EXTENDED_PARAMETER) == 16, "POOL_EXTENDED_PARAMETER is 16 bytes on x64");

/* Every allocation is tracked by tag (Environment::PoolUsage) and charged to the calling driver,
 * and checked when freed: a tag that does not match, a double free or a pointer that pool never
 * returned fails the run (BAD_POOL_CALLER); what a driver still holds at unload fails it too, by
 * tag. ExAllocatePool2 and ExAllocatePool3 zero the block unless POOL_FLAG_UNINITIALIZED; the
 * other allocators do not (except ExAllocatePoolZero). */
PVOID ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag);
/* ExtendedParameters: a priority (any EX_POOL_PRIORITY succeeds; another value fails the
 * allocation); a NUMA node for nonpaged pool (node 0, or any node with MM_ANY_NODE_OK; another node
 * alone fails the allocation); a required parameter of any other type fails it, an optional one is
 * ignored. A secure pool is not supported: a required secure-pool parameter fails the run (POOL). */
PVOID ExAllocatePool3(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag, PCPOOL_EXTENDED_PARAMETER ExtendedParameters,
                      ULONG ExtendedParametersCount);
PVOID ExAllocatePoolWithTag(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
PVOID ExAllocatePoolWithTagPriority(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, EX_POOL_PRIORITY Priority);
PVOID ExAllocatePoolZero(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
PVOID ExAllocatePoolUninitialized(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
VOID ExFreePoolWithTag(PVOID P, ULONG Tag);
VOID ExFreePool(PVOID P);
/* As ExFreePoolWithTag; ExtendedParameters are for secure pool, which is not supported (a
 * required secure-pool parameter fails the run), and any other is ignored. */
VOID ExFreePool2(PVOID P, ULONG Tag, PCPOOL_EXTENDED_PARAMETER ExtendedParameters, ULONG ExtendedParametersCount);
#define ExAllocatePool2(Flags, NumberOfBytes, Tag) NDKSIM_AT(ExAllocatePool2((Flags), (NumberOfBytes), (Tag)))
#define ExAllocatePool3(Flags, NumberOfBytes, Tag, ExtendedParameters, ExtendedParametersCount) \
    NDKSIM_AT(ExAllocatePool3((Flags), (NumberOfBytes), (Tag), (ExtendedParameters), (ExtendedParametersCount)))
#define ExAllocatePoolWithTag(PoolType, NumberOfBytes, Tag) \
    NDKSIM_AT(ExAllocatePoolWithTag((PoolType), (NumberOfBytes), (Tag)))
#define ExAllocatePoolWithTagPriority(PoolType, NumberOfBytes, Tag, Priority) \
    NDKSIM_AT(ExAllocatePoolWithTagPriority((PoolType), (NumberOfBytes), (Tag), (Priority)))
#define ExFreePool2(P, Tag, ExtendedParameters, ExtendedParametersCount) \
    NDKSIM_AT(ExFreePool2((P), (Tag), (ExtendedParameters), (ExtendedParametersCount)))
#define ExAllocatePoolZero(PoolType, NumberOfBytes, Tag) NDKSIM_AT(ExAllocatePoolZero((PoolType), (NumberOfBytes), (Tag)))
#define ExAllocatePoolUninitialized(PoolType, NumberOfBytes, Tag) \
    NDKSIM_AT(ExAllocatePoolUninitialized((PoolType), (NumberOfBytes), (Tag)))
#define ExFreePoolWithTag(P, Tag) NDKSIM_AT(ExFreePoolWithTag((P), (Tag)))
#define ExFreePool(P) NDKSIM_AT(ExFreePool(P))

/* ---- rundown protection -------------------------------------------------------------------- */
typedef struct _EX_RUNDOWN_REF {
    union {
        volatile ULONG_PTR Count;
        volatile PVOID Ptr;
    };
} EX_RUNDOWN_REF, *PEX_RUNDOWN_REF;
VOID ExInitializeRundownProtection(PEX_RUNDOWN_REF RunRef);
VOID ExReInitializeRundownProtection(PEX_RUNDOWN_REF RunRef);
BOOLEAN ExAcquireRundownProtection(PEX_RUNDOWN_REF RunRef);
BOOLEAN ExAcquireRundownProtectionEx(PEX_RUNDOWN_REF RunRef, ULONG Count);
VOID ExReleaseRundownProtection(PEX_RUNDOWN_REF RunRef);
VOID ExReleaseRundownProtectionEx(PEX_RUNDOWN_REF RunRef, ULONG Count);
VOID ExWaitForRundownProtectionRelease(PEX_RUNDOWN_REF RunRef);
VOID ExRundownCompleted(PEX_RUNDOWN_REF RunRef);

/* ---- lookaside lists ----------------------------------------------------------------------- */
/* Fixed-size blocks of one pool type and tag. Every allocation comes from the list's allocate
 * routine (the pool when it is NULL) and every free goes to its free routine (the pool when NULL):
 * the environment caches no entries, so the pool's leak, double-free and use-after-free checks see
 * each one. Depth is kept and ignored. The counters are the list's own. */
struct _LOOKASIDE_LIST_EX;
typedef PVOID ALLOCATE_FUNCTION(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag);
typedef ALLOCATE_FUNCTION *PALLOCATE_FUNCTION;
typedef VOID FREE_FUNCTION(PVOID Buffer);
typedef FREE_FUNCTION *PFREE_FUNCTION;
typedef PVOID ALLOCATE_FUNCTION_EX(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag,
                                   struct _LOOKASIDE_LIST_EX *Lookaside);
typedef ALLOCATE_FUNCTION_EX *PALLOCATE_FUNCTION_EX;
typedef VOID FREE_FUNCTION_EX(PVOID Buffer, struct _LOOKASIDE_LIST_EX *Lookaside);
typedef FREE_FUNCTION_EX *PFREE_FUNCTION_EX;

typedef struct DECLSPEC_CACHEALIGN _GENERAL_LOOKASIDE {
    SINGLE_LIST_ENTRY ListHead; /* unused: nothing is cached */
    USHORT Depth;
    USHORT MaximumDepth;
    ULONG TotalAllocates;
    ULONG AllocateMisses;
    ULONG TotalFrees;
    ULONG FreeMisses;
    POOL_TYPE Type;
    ULONG Tag;
    ULONG Size;
    union {
        PALLOCATE_FUNCTION_EX AllocateEx;
        PALLOCATE_FUNCTION Allocate;
    };
    union {
        PFREE_FUNCTION_EX FreeEx;
        PFREE_FUNCTION Free;
    };
    LIST_ENTRY ListEntry;
    ULONG LastTotalAllocates;
    ULONG LastAllocateMisses;
    ULONG Future[2];
} GENERAL_LOOKASIDE, *PGENERAL_LOOKASIDE;

typedef struct _NPAGED_LOOKASIDE_LIST {
    GENERAL_LOOKASIDE L;
} NPAGED_LOOKASIDE_LIST, *PNPAGED_LOOKASIDE_LIST;
typedef struct _PAGED_LOOKASIDE_LIST {
    GENERAL_LOOKASIDE L;
} PAGED_LOOKASIDE_LIST, *PPAGED_LOOKASIDE_LIST;
typedef struct _LOOKASIDE_LIST_EX {
    GENERAL_LOOKASIDE L;
} LOOKASIDE_LIST_EX, *PLOOKASIDE_LIST_EX;

/* The Flags of ExInitialize(N)PagedLookasideList: no-execute pool (the environment's pool is
 * never executable) and raise on failure. */
#define POOL_NX_ALLOCATION 512
#define POOL_RAISE_IF_ALLOCATION_FAILURE 16
#define EX_LOOKASIDE_LIST_EX_FLAGS_RAISE_ON_FAIL 0x00000001UL
#define EX_LOOKASIDE_LIST_EX_FLAGS_FAIL_NO_RAISE 0x00000002UL
#define LOOKASIDE_MINIMUM_BLOCK_SIZE (sizeof(SINGLE_LIST_ENTRY))

VOID ExInitializeNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside, PALLOCATE_FUNCTION Allocate,
                                     PFREE_FUNCTION Free, ULONG Flags, SIZE_T Size, ULONG Tag, USHORT Depth);
VOID ExDeleteNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside);
PVOID ExAllocateFromNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside);
VOID ExFreeToNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside, PVOID Entry);
VOID ExInitializePagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside, PALLOCATE_FUNCTION Allocate,
                                    PFREE_FUNCTION Free, ULONG Flags, SIZE_T Size, ULONG Tag, USHORT Depth);
VOID ExDeletePagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside);
PVOID ExAllocateFromPagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside);
VOID ExFreeToPagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside, PVOID Entry);
NTSTATUS ExInitializeLookasideListEx(PLOOKASIDE_LIST_EX Lookaside, PALLOCATE_FUNCTION_EX Allocate,
                                     PFREE_FUNCTION_EX Free, POOL_TYPE PoolType, ULONG Flags, SIZE_T Size,
                                     ULONG Tag, USHORT Depth);
VOID ExDeleteLookasideListEx(PLOOKASIDE_LIST_EX Lookaside);
PVOID ExAllocateFromLookasideListEx(PLOOKASIDE_LIST_EX Lookaside);
VOID ExFreeToLookasideListEx(PLOOKASIDE_LIST_EX Lookaside, PVOID Entry);
VOID ExFlushLookasideListEx(PLOOKASIDE_LIST_EX Lookaside);
#define ExInitializeNPagedLookasideList(Lookaside, Allocate, Free, Flags, Size, Tag, Depth) \
    NDKSIM_AT(ExInitializeNPagedLookasideList((Lookaside), (Allocate), (Free), (Flags), (Size), (Tag), (Depth)))
#define ExInitializePagedLookasideList(Lookaside, Allocate, Free, Flags, Size, Tag, Depth) \
    NDKSIM_AT(ExInitializePagedLookasideList((Lookaside), (Allocate), (Free), (Flags), (Size), (Tag), (Depth)))
#define ExInitializeLookasideListEx(Lookaside, Allocate, Free, PoolType, Flags, Size, Tag, Depth) \
    NDKSIM_AT(ExInitializeLookasideListEx((Lookaside), (Allocate), (Free), (PoolType), (Flags), (Size), (Tag), (Depth)))
#define ExAllocateFromNPagedLookasideList(Lookaside) NDKSIM_AT(ExAllocateFromNPagedLookasideList(Lookaside))
#define ExAllocateFromPagedLookasideList(Lookaside) NDKSIM_AT(ExAllocateFromPagedLookasideList(Lookaside))
#define ExAllocateFromLookasideListEx(Lookaside) NDKSIM_AT(ExAllocateFromLookasideListEx(Lookaside))
#define ExFreeToNPagedLookasideList(Lookaside, Entry) NDKSIM_AT(ExFreeToNPagedLookasideList((Lookaside), (Entry)))
#define ExFreeToPagedLookasideList(Lookaside, Entry) NDKSIM_AT(ExFreeToPagedLookasideList((Lookaside), (Entry)))
#define ExFreeToLookasideListEx(Lookaside, Entry) NDKSIM_AT(ExFreeToLookasideListEx((Lookaside), (Entry)))
#define ExDeleteNPagedLookasideList(Lookaside) NDKSIM_AT(ExDeleteNPagedLookasideList(Lookaside))
#define ExDeletePagedLookasideList(Lookaside) NDKSIM_AT(ExDeletePagedLookasideList(Lookaside))
#define ExDeleteLookasideListEx(Lookaside) NDKSIM_AT(ExDeleteLookasideListEx(Lookaside))

/* ---- fast and guarded mutexes --------------------------------------------------------------- */
/* Not recursive: acquiring one the thread holds is reported as the deadlock it is. A fast mutex
 * raises the IRQL to APC_LEVEL while held (ExAcquireFastMutex); the Unsafe forms require the
 * caller to be in a critical region already, or at APC_LEVEL, and leave the IRQL alone. A guarded
 * mutex is the same lock held in a guarded region. */
typedef struct _FAST_MUTEX {
    volatile LONG Count; /* 1 free; 0 held; below 0 held with waiters */
    PVOID Owner;
    ULONG Contention;
    KEVENT Event;
    ULONG OldIrql;
} FAST_MUTEX, *PFAST_MUTEX, KGUARDED_MUTEX, *PKGUARDED_MUTEX;
VOID ExInitializeFastMutex(PFAST_MUTEX FastMutex);
VOID ExAcquireFastMutex(PFAST_MUTEX FastMutex);
VOID ExReleaseFastMutex(PFAST_MUTEX FastMutex);
BOOLEAN ExTryToAcquireFastMutex(PFAST_MUTEX FastMutex);
VOID ExAcquireFastMutexUnsafe(PFAST_MUTEX FastMutex);
VOID ExReleaseFastMutexUnsafe(PFAST_MUTEX FastMutex);
VOID KeInitializeGuardedMutex(PKGUARDED_MUTEX Mutex);
VOID KeAcquireGuardedMutex(PKGUARDED_MUTEX Mutex);
VOID KeReleaseGuardedMutex(PKGUARDED_MUTEX Mutex);
BOOLEAN KeTryToAcquireGuardedMutex(PKGUARDED_MUTEX Mutex);
VOID KeAcquireGuardedMutexUnsafe(PKGUARDED_MUTEX Mutex);
VOID KeReleaseGuardedMutexUnsafe(PKGUARDED_MUTEX Mutex);
#define ExAcquireFastMutex(FastMutex) NDKSIM_AT(ExAcquireFastMutex(FastMutex))
#define ExReleaseFastMutex(FastMutex) NDKSIM_AT(ExReleaseFastMutex(FastMutex))
#define ExTryToAcquireFastMutex(FastMutex) NDKSIM_AT(ExTryToAcquireFastMutex(FastMutex))
#define ExAcquireFastMutexUnsafe(FastMutex) NDKSIM_AT(ExAcquireFastMutexUnsafe(FastMutex))
#define ExReleaseFastMutexUnsafe(FastMutex) NDKSIM_AT(ExReleaseFastMutexUnsafe(FastMutex))
#define KeAcquireGuardedMutex(Mutex) NDKSIM_AT(KeAcquireGuardedMutex(Mutex))
#define KeReleaseGuardedMutex(Mutex) NDKSIM_AT(KeReleaseGuardedMutex(Mutex))
#define KeTryToAcquireGuardedMutex(Mutex) NDKSIM_AT(KeTryToAcquireGuardedMutex(Mutex))
#define KeAcquireGuardedMutexUnsafe(Mutex) NDKSIM_AT(KeAcquireGuardedMutexUnsafe(Mutex))
#define KeReleaseGuardedMutexUnsafe(Mutex) NDKSIM_AT(KeReleaseGuardedMutexUnsafe(Mutex))

/* ---- executive resources and push locks ------------------------------------------------------ */
/* Reader/writer locks. An ERESOURCE may be acquired again by a thread that holds it (exclusively:
 * either way; shared: shared), and is released once per acquisition; it is taken inside a critical
 * region (KeEnterCriticalRegion, or the ExEnterCriticalRegionAndAcquire forms), which is checked.
 * Waiting exclusive acquirers go before later shared ones. A push lock is not recursive. The
 * holders are the environment's to track: the structures hold no pointers of their own. */
typedef struct _ERESOURCE {
    LIST_ENTRY SystemResourcesList;
    PVOID OwnerTable;
    SHORT ActiveCount;
    USHORT Flag;
    PVOID SharedWaiters;
    PVOID ExclusiveWaiters;
    ULONG_PTR Reserved[8];
} ERESOURCE, *PERESOURCE;
typedef ULONG_PTR ERESOURCE_THREAD, *PERESOURCE_THREAD;
NTSTATUS ExInitializeResourceLite(PERESOURCE Resource);
NTSTATUS ExReinitializeResourceLite(PERESOURCE Resource);
NTSTATUS ExDeleteResourceLite(PERESOURCE Resource);
BOOLEAN ExAcquireResourceExclusiveLite(PERESOURCE Resource, BOOLEAN Wait);
BOOLEAN ExAcquireResourceSharedLite(PERESOURCE Resource, BOOLEAN Wait);
BOOLEAN ExAcquireSharedStarveExclusive(PERESOURCE Resource, BOOLEAN Wait);
BOOLEAN ExAcquireSharedWaitForExclusive(PERESOURCE Resource, BOOLEAN Wait);
BOOLEAN ExTryToAcquireResourceExclusiveLite(PERESOURCE Resource);
VOID ExReleaseResourceLite(PERESOURCE Resource);
VOID ExReleaseResourceForThreadLite(PERESOURCE Resource, ERESOURCE_THREAD ResourceThreadId);
VOID ExConvertExclusiveToSharedLite(PERESOURCE Resource);
BOOLEAN ExIsResourceAcquiredExclusiveLite(PERESOURCE Resource);
ULONG ExIsResourceAcquiredSharedLite(PERESOURCE Resource);
#define ExIsResourceAcquiredLite ExIsResourceAcquiredSharedLite
ULONG ExGetExclusiveWaiterCount(PERESOURCE Resource);
ULONG ExGetSharedWaiterCount(PERESOURCE Resource);
ERESOURCE_THREAD ExGetCurrentResourceThread(VOID);
PVOID ExEnterCriticalRegionAndAcquireResourceExclusive(PERESOURCE Resource);
PVOID ExEnterCriticalRegionAndAcquireResourceShared(PERESOURCE Resource);
VOID ExReleaseResourceAndLeaveCriticalRegion(PERESOURCE Resource);
#define ExReleaseResource(Resource) ExReleaseResourceLite(Resource)
#define ExAcquireResourceExclusiveLite(Resource, Wait) NDKSIM_AT(ExAcquireResourceExclusiveLite((Resource), (Wait)))
#define ExAcquireResourceSharedLite(Resource, Wait) NDKSIM_AT(ExAcquireResourceSharedLite((Resource), (Wait)))
#define ExAcquireSharedStarveExclusive(Resource, Wait) NDKSIM_AT(ExAcquireSharedStarveExclusive((Resource), (Wait)))
#define ExAcquireSharedWaitForExclusive(Resource, Wait) NDKSIM_AT(ExAcquireSharedWaitForExclusive((Resource), (Wait)))
#define ExReleaseResourceLite(Resource) NDKSIM_AT(ExReleaseResourceLite(Resource))
#define ExDeleteResourceLite(Resource) NDKSIM_AT(ExDeleteResourceLite(Resource))

typedef struct _EX_PUSH_LOCK {
    union {
        volatile ULONG_PTR Value;
        volatile PVOID Ptr;
    };
} EX_PUSH_LOCK, *PEX_PUSH_LOCK;
VOID ExInitializePushLock(PEX_PUSH_LOCK PushLock);
VOID ExAcquirePushLockExclusiveEx(PEX_PUSH_LOCK PushLock, ULONG Flags);
VOID ExAcquirePushLockSharedEx(PEX_PUSH_LOCK PushLock, ULONG Flags);
VOID ExReleasePushLockExclusiveEx(PEX_PUSH_LOCK PushLock, ULONG Flags);
VOID ExReleasePushLockSharedEx(PEX_PUSH_LOCK PushLock, ULONG Flags);
#define ExAcquirePushLockExclusive(PushLock) ExAcquirePushLockExclusiveEx((PushLock), 0)
#define ExAcquirePushLockShared(PushLock) ExAcquirePushLockSharedEx((PushLock), 0)
#define ExReleasePushLockExclusive(PushLock) ExReleasePushLockExclusiveEx((PushLock), 0)
#define ExReleasePushLockShared(PushLock) ExReleasePushLockSharedEx((PushLock), 0)
#define ExAcquirePushLockExclusiveEx(PushLock, Flags) NDKSIM_AT(ExAcquirePushLockExclusiveEx((PushLock), (Flags)))
#define ExAcquirePushLockSharedEx(PushLock, Flags) NDKSIM_AT(ExAcquirePushLockSharedEx((PushLock), (Flags)))
#define ExReleasePushLockExclusiveEx(PushLock, Flags) NDKSIM_AT(ExReleasePushLockExclusiveEx((PushLock), (Flags)))
#define ExReleasePushLockSharedEx(PushLock, Flags) NDKSIM_AT(ExReleasePushLockSharedEx((PushLock), (Flags)))

/* ---- drivers, devices, work items ------------------------------------------------------------ */
struct _DRIVER_OBJECT;
struct _DEVICE_OBJECT;
struct _IRP;
typedef struct _IRP IRP, *PIRP;
typedef NTSTATUS DRIVER_INITIALIZE(struct _DRIVER_OBJECT *DriverObject, PUNICODE_STRING RegistryPath);
typedef DRIVER_INITIALIZE *PDRIVER_INITIALIZE;
typedef VOID DRIVER_UNLOAD(struct _DRIVER_OBJECT *DriverObject);
typedef DRIVER_UNLOAD *PDRIVER_UNLOAD;
typedef NTSTATUS DRIVER_DISPATCH(struct _DEVICE_OBJECT *DeviceObject, struct _IRP *Irp);
typedef DRIVER_DISPATCH *PDRIVER_DISPATCH;
#define IRP_MJ_MAXIMUM_FUNCTION 0x1b

/* The Type both objects start with, as the kernel sets it. */
#define IO_TYPE_DEVICE 0x00000003
#define IO_TYPE_DRIVER 0x00000004

/* The fields drivers read by name; the layout is not the kernel's. */
typedef struct _DRIVER_OBJECT {
    CSHORT Type;
    CSHORT Size;
    struct _DEVICE_OBJECT *DeviceObject; /* the driver's devices, newest first */
    ULONG Flags;
    PVOID DriverStart;
    ULONG DriverSize;
    PVOID DriverSection;
    PVOID DriverExtension;
    UNICODE_STRING DriverName;
    PUNICODE_STRING HardwareDatabase;
    PVOID FastIoDispatch;
    PDRIVER_INITIALIZE DriverInit;
    PVOID DriverStartIo;
    PDRIVER_UNLOAD DriverUnload;
    PDRIVER_DISPATCH MajorFunction[IRP_MJ_MAXIMUM_FUNCTION + 1];
} DRIVER_OBJECT, *PDRIVER_OBJECT;

typedef ULONG DEVICE_TYPE;
#define FILE_DEVICE_NETWORK 0x00000012
#define FILE_DEVICE_UNKNOWN 0x00000022
#define FILE_DEVICE_SECURE_OPEN 0x00000100
#define DO_BUFFERED_IO 0x00000004
#define DO_DIRECT_IO 0x00000010
#define DO_DEVICE_INITIALIZING 0x00000080
typedef struct _DEVICE_OBJECT {
    CSHORT Type;
    USHORT Size;
    LONG ReferenceCount;
    struct _DRIVER_OBJECT *DriverObject;
    struct _DEVICE_OBJECT *NextDevice;
    struct _DEVICE_OBJECT *AttachedDevice;
    struct _IRP *CurrentIrp;
    PVOID Timer;
    ULONG Flags;
    ULONG Characteristics;
    PVOID Vpb;
    PVOID DeviceExtension;
    DEVICE_TYPE DeviceType;
    CCHAR StackSize;
} DEVICE_OBJECT, *PDEVICE_OBJECT;

NTSTATUS IoCreateDevice(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                        DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                        PDEVICE_OBJECT *DeviceObject);
VOID IoDeleteDevice(PDEVICE_OBJECT DeviceObject);

typedef enum _WORK_QUEUE_TYPE {
    CriticalWorkQueue,
    DelayedWorkQueue,
    HyperCriticalWorkQueue,
    NormalWorkQueue,
    BackgroundWorkQueue,
    RealTimeWorkQueue,
    SuperCriticalWorkQueue,
    MaximumWorkQueue,
    CustomPriorityWorkQueue = 32
} WORK_QUEUE_TYPE;

typedef struct _IO_WORKITEM *PIO_WORKITEM;
typedef VOID IO_WORKITEM_ROUTINE(PDEVICE_OBJECT DeviceObject, PVOID Context);
typedef IO_WORKITEM_ROUTINE *PIO_WORKITEM_ROUTINE;
typedef VOID IO_WORKITEM_ROUTINE_EX(PVOID IoObject, PVOID Context, PIO_WORKITEM IoWorkItem);
typedef IO_WORKITEM_ROUTINE_EX *PIO_WORKITEM_ROUTINE_EX;
/* Work items run at PASSIVE_LEVEL on the environment's system worker threads (kernel threads of
 * their own, created as needed); which queued item a free worker takes next is the scheduler's.
 * IoAllocateWorkItem takes the caller's driver object (cast) or one of its device objects, told
 * apart by Type; the item, and what its routine does, is charged to that driver. The routine gets
 * the same object back. */
PIO_WORKITEM IoAllocateWorkItem(PDEVICE_OBJECT DeviceObject);
VOID IoFreeWorkItem(PIO_WORKITEM IoWorkItem);
VOID IoQueueWorkItem(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                     PVOID Context);
VOID IoQueueWorkItemEx(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE_EX WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                       PVOID Context);
#define IoAllocateWorkItem(DeviceObject) NDKSIM_AT(IoAllocateWorkItem(DeviceObject))
#define IoFreeWorkItem(IoWorkItem) NDKSIM_AT(IoFreeWorkItem(IoWorkItem))
#define IoQueueWorkItem(IoWorkItem, WorkerRoutine, QueueType, Context) \
    NDKSIM_AT(IoQueueWorkItem((IoWorkItem), (WorkerRoutine), (QueueType), (Context)))
#define IoQueueWorkItemEx(IoWorkItem, WorkerRoutine, QueueType, Context) \
    NDKSIM_AT(IoQueueWorkItemEx((IoWorkItem), (WorkerRoutine), (QueueType), (Context)))

typedef VOID WORKER_THREAD_ROUTINE(PVOID Parameter);
typedef WORKER_THREAD_ROUTINE *PWORKER_THREAD_ROUTINE;
typedef struct _WORK_QUEUE_ITEM {
    LIST_ENTRY List;
    PWORKER_THREAD_ROUTINE WorkerRoutine;
    volatile PVOID Parameter;
} WORK_QUEUE_ITEM, *PWORK_QUEUE_ITEM;
#define ExInitializeWorkItem(Item, Routine, Context) \
    do {                                             \
        (Item)->WorkerRoutine = (Routine);           \
        (Item)->Parameter = (Context);               \
        (Item)->List.Flink = NULL;                   \
    } while (0)
VOID ExQueueWorkItem(PWORK_QUEUE_ITEM WorkItem, WORK_QUEUE_TYPE QueueType);
#define ExQueueWorkItem(WorkItem, QueueType) NDKSIM_AT(ExQueueWorkItem((WorkItem), (QueueType)))

/* ---- memory descriptor lists ----------------------------------------------------------------- */
typedef ULONG_PTR PFN_NUMBER, *PPFN_NUMBER;
#define MDL_MAPPED_TO_SYSTEM_VA 0x0001
#define MDL_PAGES_LOCKED 0x0002
#define MDL_SOURCE_IS_NONPAGED_POOL 0x0004
#define MDL_ALLOCATED_FIXED_SIZE 0x0008
#define MDL_PARTIAL 0x0010
#define MDL_PARTIAL_HAS_BEEN_MAPPED 0x0020
#define MDL_IO_PAGE_READ 0x0040
#define MDL_WRITE_OPERATION 0x0080
#define MDL_ALLOCATED_MUST_SUCCEED 0x4000
#define MmGetMdlPfnArray(Mdl) ((PPFN_NUMBER)((Mdl) + 1))
#define MmGetMdlBaseVa(Mdl) ((Mdl)->StartVa)
#define MmSizeOfMdl(Base, Length) \
    ((SIZE_T)(sizeof(MDL) + ADDRESS_AND_SIZE_TO_SPAN_PAGES((Base), (Length)) * sizeof(PFN_NUMBER)))
typedef enum _MM_PAGE_PRIORITY { LowPagePriority, NormalPagePriority = 16, HighPagePriority = 32 } MM_PAGE_PRIORITY;
#define MdlMappingNoWrite 0x80000000
#define MdlMappingNoExecute 0x40000000
typedef enum _LOCK_OPERATION { IoReadAccess, IoWriteAccess, IoModifyAccess } LOCK_OPERATION;

/* An MDL of the buffer, with its page-frame array; NULL if Length is 0 or too large for one MDL.
 * Irp must be NULL (the environment has no IRPs). Tracked until IoFreeMdl: one still allocated
 * at its driver's unload fails the run. */
PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota, PIRP Irp);
VOID IoFreeMdl(PMDL Mdl);
VOID IoBuildPartialMdl(PMDL SourceMdl, PMDL TargetMdl, PVOID VirtualAddress, ULONG Length);
VOID MmBuildMdlForNonPagedPool(PMDL MemoryDescriptorList);
VOID MmProbeAndLockPages(PMDL MemoryDescriptorList, KPROCESSOR_MODE AccessMode, LOCK_OPERATION Operation);
VOID MmUnlockPages(PMDL MemoryDescriptorList);
PVOID MmGetSystemAddressForMdlSafe(PMDL Mdl, ULONG Priority);
PHYSICAL_ADDRESS MmGetPhysicalAddress(PVOID BaseAddress);
#define IoAllocateMdl(VirtualAddress, Length, SecondaryBuffer, ChargeQuota, Irp) \
    NDKSIM_AT(IoAllocateMdl((VirtualAddress), (Length), (SecondaryBuffer), (ChargeQuota), (Irp)))
#define IoFreeMdl(Mdl) NDKSIM_AT(IoFreeMdl(Mdl))

/* ---- the I/O manager: IRPs, device names and symbolic links ---------------------------------- */
#define IRP_MJ_CREATE 0x00
#define IRP_MJ_CLOSE 0x02
#define IRP_MJ_READ 0x03
#define IRP_MJ_WRITE 0x04
#define IRP_MJ_FLUSH_BUFFERS 0x09
#define IRP_MJ_DEVICE_CONTROL 0x0e
#define IRP_MJ_INTERNAL_DEVICE_CONTROL 0x0f
#define IRP_MJ_SHUTDOWN 0x10
#define IRP_MJ_CLEANUP 0x12
#define IRP_MJ_POWER 0x16
#define IRP_MJ_SYSTEM_CONTROL 0x17
#define IRP_MJ_PNP 0x1b

/* I/O control codes (devioctl.h). */
/* Guarded: a driver's IOCTL header is often written for user mode too, where <winioctl.h>
 * defines these, and may define them itself. */
#ifndef CTL_CODE
#define METHOD_BUFFERED 0
#define METHOD_IN_DIRECT 1
#define METHOD_OUT_DIRECT 2
#define METHOD_NEITHER 3
#define FILE_ANY_ACCESS 0
#define FILE_SPECIAL_ACCESS FILE_ANY_ACCESS
#define FILE_READ_ACCESS 0x0001
#define FILE_WRITE_ACCESS 0x0002
#define CTL_CODE(DeviceType, Function, Method, Access) \
    (((ULONG)(DeviceType) << 16) | ((ULONG)(Access) << 14) | ((ULONG)(Function) << 2) | (ULONG)(Method))
#endif
#define DEVICE_TYPE_FROM_CTL_CODE(ctrlCode) (((ULONG)((ctrlCode) & 0xffff0000)) >> 16)
#define METHOD_FROM_CTL_CODE(ctrlCode) ((ULONG)((ctrlCode) & 3))

typedef struct _IO_STATUS_BLOCK {
    union {
        NTSTATUS Status;
        PVOID Pointer;
    };
    ULONG_PTR Information;
} IO_STATUS_BLOCK, *PIO_STATUS_BLOCK;

#define IO_TYPE_FILE 0x00000005
#define IO_TYPE_IRP 0x00000006

/* An open of a device: what IRP_MJ_CREATE gets and every later IRP of the open names. FsContext
 * and FsContext2 are the driver's, per open. */
typedef struct _FILE_OBJECT {
    CSHORT Type;
    CSHORT Size;
    struct _DEVICE_OBJECT *DeviceObject;
    PVOID FsContext;
    PVOID FsContext2;
    UNICODE_STRING FileName;
} FILE_OBJECT, *PFILE_OBJECT;

typedef VOID DRIVER_CANCEL(struct _DEVICE_OBJECT *DeviceObject, struct _IRP *Irp);
typedef DRIVER_CANCEL *PDRIVER_CANCEL;

#define SL_PENDING_RETURNED 0x01

typedef struct _IO_STACK_LOCATION {
    UCHAR MajorFunction;
    UCHAR MinorFunction;
    UCHAR Flags;
    UCHAR Control;
    union {
        struct {
            PVOID SecurityContext;
            ULONG Options;
            USHORT FileAttributes;
            USHORT ShareAccess;
            ULONG EaLength;
        } Create;
        struct {
            ULONG Length;
            ULONG Key;
            LARGE_INTEGER ByteOffset;
        } Read;
        struct {
            ULONG Length;
            ULONG Key;
            LARGE_INTEGER ByteOffset;
        } Write;
        struct {
            ULONG OutputBufferLength;
            ULONG InputBufferLength;
            ULONG IoControlCode;
            PVOID Type3InputBuffer;
        } DeviceIoControl;
        struct {
            PVOID Argument1;
            PVOID Argument2;
            PVOID Argument3;
            PVOID Argument4;
        } Others;
    } Parameters;
    struct _DEVICE_OBJECT *DeviceObject;
    PFILE_OBJECT FileObject;
    PVOID CompletionRoutine;
    PVOID Context;
} IO_STACK_LOCATION, *PIO_STACK_LOCATION;

/* The fields drivers use by name; the layout is not the kernel's. An IRP the environment issues
 * has one stack location, its driver's. */
struct _IRP {
    CSHORT Type;
    USHORT Size;
    PMDL MdlAddress;       /* METHOD_IN_DIRECT/OUT_DIRECT: the output buffer */
    ULONG Flags;
    union {
        struct _IRP *MasterIrp;
        LONG IrpCount;
        PVOID SystemBuffer;  /* METHOD_BUFFERED: the input, then the output; *_DIRECT: the input */
    } AssociatedIrp;
    LIST_ENTRY ThreadListEntry;
    IO_STATUS_BLOCK IoStatus;
    KPROCESSOR_MODE RequestorMode;
    BOOLEAN PendingReturned;
    CHAR StackCount;
    CHAR CurrentLocation;
    BOOLEAN Cancel;
    KIRQL CancelIrql;
    PIO_STATUS_BLOCK UserIosb;
    PKEVENT UserEvent;
    PDRIVER_CANCEL CancelRoutine;
    PVOID UserBuffer;      /* METHOD_NEITHER: the output buffer */
    struct {
        struct {
            PVOID DriverContext[4];
            PETHREAD Thread;
            LIST_ENTRY ListEntry;  /* the driver's, while it holds the IRP (a queue of pending IRPs) */
            struct _IO_STACK_LOCATION *CurrentStackLocation;
            PFILE_OBJECT OriginalFileObject;
        } Overlay;
    } Tail;
};

FORCEINLINE PIO_STACK_LOCATION IoGetCurrentIrpStackLocation(PIRP Irp) { return Irp->Tail.Overlay.CurrentStackLocation; }
FORCEINLINE VOID IoMarkIrpPending(PIRP Irp) { IoGetCurrentIrpStackLocation(Irp)->Control |= SL_PENDING_RETURNED; }
#define IoSetCancelRoutine(Irp, NewCancelRoutine) \
    ((PDRIVER_CANCEL)InterlockedExchangePointer((PVOID volatile *)&(Irp)->CancelRoutine, (PVOID)(NewCancelRoutine)))

/* Completes the IRP: the environment hands its status and output back to its requester. */
VOID IoCompleteRequest(PIRP Irp, CCHAR PriorityBoost);
#define IofCompleteRequest IoCompleteRequest
BOOLEAN IoCancelIrp(PIRP Irp);
VOID IoAcquireCancelSpinLock(PKIRQL Irql);
VOID IoReleaseCancelSpinLock(KIRQL Irql);
NTSTATUS IoCreateSymbolicLink(PUNICODE_STRING SymbolicLinkName, PUNICODE_STRING DeviceName);
NTSTATUS IoDeleteSymbolicLink(PUNICODE_STRING SymbolicLinkName);
#define IoCompleteRequest(Irp, PriorityBoost) NDKSIM_AT(IoCompleteRequest((Irp), (PriorityBoost)))

/* ---- cancel-safe IRP queues ------------------------------------------------------------------ */
/* The driver keeps the queue and its lock; the IoCsq routines keep the cancel logic. While an IRP
 * is queued, its cancel routine is the queue's and Tail.Overlay.DriverContext[3] is the queue's
 * (the IO_CSQ_IRP_CONTEXT given at insertion, or the IO_CSQ): a driver must leave both alone.
 * Cancellation (IoCancelIrp) calls CsqRemoveIrp under CsqAcquireLock/CsqReleaseLock, then
 * CsqCompleteCanceledIrp outside the lock. IRQL <= DISPATCH_LEVEL for the insert and remove
 * routines; the callbacks run at the caller's IRQL (the cancel path's: the canceller's). */
#define IO_TYPE_CSQ_IRP_CONTEXT 1
#define IO_TYPE_CSQ 2
#define IO_TYPE_CSQ_EX 3
struct _IO_CSQ;
typedef struct _IO_CSQ_IRP_CONTEXT {
    ULONG Type;
    PIRP Irp;
    struct _IO_CSQ *Csq;
} IO_CSQ_IRP_CONTEXT, *PIO_CSQ_IRP_CONTEXT;
typedef VOID IO_CSQ_INSERT_IRP(struct _IO_CSQ *Csq, PIRP Irp);
typedef IO_CSQ_INSERT_IRP *PIO_CSQ_INSERT_IRP;
typedef NTSTATUS IO_CSQ_INSERT_IRP_EX(struct _IO_CSQ *Csq, PIRP Irp, PVOID InsertContext);
typedef IO_CSQ_INSERT_IRP_EX *PIO_CSQ_INSERT_IRP_EX;
typedef VOID IO_CSQ_REMOVE_IRP(struct _IO_CSQ *Csq, PIRP Irp);
typedef IO_CSQ_REMOVE_IRP *PIO_CSQ_REMOVE_IRP;
typedef PIRP IO_CSQ_PEEK_NEXT_IRP(struct _IO_CSQ *Csq, PIRP Irp, PVOID PeekContext);
typedef IO_CSQ_PEEK_NEXT_IRP *PIO_CSQ_PEEK_NEXT_IRP;
typedef VOID IO_CSQ_ACQUIRE_LOCK(struct _IO_CSQ *Csq, PKIRQL Irql);
typedef IO_CSQ_ACQUIRE_LOCK *PIO_CSQ_ACQUIRE_LOCK;
typedef VOID IO_CSQ_RELEASE_LOCK(struct _IO_CSQ *Csq, KIRQL Irql);
typedef IO_CSQ_RELEASE_LOCK *PIO_CSQ_RELEASE_LOCK;
typedef VOID IO_CSQ_COMPLETE_CANCELED_IRP(struct _IO_CSQ *Csq, PIRP Irp);
typedef IO_CSQ_COMPLETE_CANCELED_IRP *PIO_CSQ_COMPLETE_CANCELED_IRP;
/* IoCsqInitializeEx keeps its PIO_CSQ_INSERT_IRP_EX in CsqInsertIrp, as the WDK's does. */
typedef struct _IO_CSQ {
    ULONG Type;
    PIO_CSQ_INSERT_IRP CsqInsertIrp;
    PIO_CSQ_REMOVE_IRP CsqRemoveIrp;
    PIO_CSQ_PEEK_NEXT_IRP CsqPeekNextIrp;
    PIO_CSQ_ACQUIRE_LOCK CsqAcquireLock;
    PIO_CSQ_RELEASE_LOCK CsqReleaseLock;
    PIO_CSQ_COMPLETE_CANCELED_IRP CsqCompleteCanceledIrp;
    PVOID ReservePointer;
} IO_CSQ, *PIO_CSQ;
NTSTATUS IoCsqInitialize(PIO_CSQ Csq, PIO_CSQ_INSERT_IRP CsqInsertIrp, PIO_CSQ_REMOVE_IRP CsqRemoveIrp,
                         PIO_CSQ_PEEK_NEXT_IRP CsqPeekNextIrp, PIO_CSQ_ACQUIRE_LOCK CsqAcquireLock,
                         PIO_CSQ_RELEASE_LOCK CsqReleaseLock, PIO_CSQ_COMPLETE_CANCELED_IRP CsqCompleteCanceledIrp);
NTSTATUS IoCsqInitializeEx(PIO_CSQ Csq, PIO_CSQ_INSERT_IRP_EX CsqInsertIrp, PIO_CSQ_REMOVE_IRP CsqRemoveIrp,
                           PIO_CSQ_PEEK_NEXT_IRP CsqPeekNextIrp, PIO_CSQ_ACQUIRE_LOCK CsqAcquireLock,
                           PIO_CSQ_RELEASE_LOCK CsqReleaseLock, PIO_CSQ_COMPLETE_CANCELED_IRP CsqCompleteCanceledIrp);
/* Queues the IRP (CsqInsertIrp) and marks it pending; an IRP cancelled already is completed through
 * CsqCompleteCanceledIrp at once (it is still pending: the dispatch routine returns STATUS_PENDING). */
VOID IoCsqInsertIrp(PIO_CSQ Csq, PIRP Irp, PIO_CSQ_IRP_CONTEXT Context);
/* The same with CsqInsertIrpEx's InsertContext: its status, and on an error the IRP is not queued
 * (nor pending, nor given a cancel routine). */
NTSTATUS IoCsqInsertIrpEx(PIO_CSQ Csq, PIRP Irp, PIO_CSQ_IRP_CONTEXT Context, PVOID InsertContext);
/* The first IRP CsqPeekNextIrp finds for PeekContext that is not being cancelled, out of the queue
 * and without its cancel routine; NULL if none. */
PIRP IoCsqRemoveNextIrp(PIO_CSQ Csq, PVOID PeekContext);
/* The IRP queued with Context, out of the queue; NULL if it has left it or is being cancelled. */
PIRP IoCsqRemoveIrp(PIO_CSQ Csq, PIO_CSQ_IRP_CONTEXT Context);
#define IoCsqInsertIrp(Csq, Irp, Context) NDKSIM_AT(IoCsqInsertIrp((Csq), (Irp), (Context)))
#define IoCsqInsertIrpEx(Csq, Irp, Context, InsertContext) \
    NDKSIM_AT(IoCsqInsertIrpEx((Csq), (Irp), (Context), (InsertContext)))
#define IoCsqRemoveNextIrp(Csq, PeekContext) NDKSIM_AT(IoCsqRemoveNextIrp((Csq), (PeekContext)))
#define IoCsqRemoveIrp(Csq, Context) NDKSIM_AT(IoCsqRemoveIrp((Csq), (Context)))

/* ---- remove locks ------------------------------------------------------------------------------ */
/* A count of the lock's acquisitions and an event for IoReleaseRemoveLockAndWait. Every driver is
 * treated as a checked build under Driver Verifier: each acquisition is tracked by its Tag, and a
 * release of a tag that holds none, a second IoReleaseRemoveLockAndWait, or a lock that was never
 * initialized fails the run (REMOVE_LOCK). AllocateTag, MaxLockedMinutes and HighWatermark are
 * accepted and have no effect. As in the WDK, the four routines are macros over their Ex forms. */
typedef struct _IO_REMOVE_LOCK_COMMON_BLOCK {
    BOOLEAN Removed;
    BOOLEAN Reserved[3];
    volatile LONG IoCount; /* 1 for the lock itself, plus one per acquisition */
    KEVENT RemoveEvent;    /* signaled when IoCount reaches 0 after the remove */
} IO_REMOVE_LOCK_COMMON_BLOCK;
typedef struct _IO_REMOVE_LOCK {
    IO_REMOVE_LOCK_COMMON_BLOCK Common;
} IO_REMOVE_LOCK, *PIO_REMOVE_LOCK;
/* PASSIVE_LEVEL. */
VOID IoInitializeRemoveLockEx(PIO_REMOVE_LOCK Lock, ULONG AllocateTag, ULONG MaxLockedMinutes, ULONG HighWatermark,
                              ULONG RemlockSize);
/* STATUS_SUCCESS, or STATUS_DELETE_PENDING (nothing acquired) once IoReleaseRemoveLockAndWait was
 * called. IRQL <= DISPATCH_LEVEL. */
NTSTATUS IoAcquireRemoveLockEx(PIO_REMOVE_LOCK RemoveLock, PVOID Tag, PCSTR File, ULONG Line, ULONG RemlockSize);
/* IRQL <= DISPATCH_LEVEL. */
VOID IoReleaseRemoveLockEx(PIO_REMOVE_LOCK RemoveLock, PVOID Tag, ULONG RemlockSize);
/* Releases the caller's acquisition (Tag), refuses every later one, and blocks the calling thread
 * until every other acquisition is released. PASSIVE_LEVEL, once per lock. */
VOID IoReleaseRemoveLockAndWaitEx(PIO_REMOVE_LOCK RemoveLock, PVOID Tag, ULONG RemlockSize);
#define IoInitializeRemoveLockEx(Lock, AllocateTag, MaxLockedMinutes, HighWatermark, RemlockSize) \
    NDKSIM_AT(IoInitializeRemoveLockEx((Lock), (AllocateTag), (MaxLockedMinutes), (HighWatermark), (RemlockSize)))
#define IoAcquireRemoveLockEx(RemoveLock, Tag, File, Line, RemlockSize) \
    NDKSIM_AT(IoAcquireRemoveLockEx((RemoveLock), (Tag), (File), (Line), (RemlockSize)))
#define IoReleaseRemoveLockEx(RemoveLock, Tag, RemlockSize) \
    NDKSIM_AT(IoReleaseRemoveLockEx((RemoveLock), (Tag), (RemlockSize)))
#define IoReleaseRemoveLockAndWaitEx(RemoveLock, Tag, RemlockSize) \
    NDKSIM_AT(IoReleaseRemoveLockAndWaitEx((RemoveLock), (Tag), (RemlockSize)))
#define IoInitializeRemoveLock(Lock, AllocateTag, MaxLockedMinutes, HighWatermark) \
    IoInitializeRemoveLockEx((Lock), (AllocateTag), (MaxLockedMinutes), (HighWatermark), sizeof(IO_REMOVE_LOCK))
#define IoAcquireRemoveLock(RemoveLock, Tag) \
    IoAcquireRemoveLockEx((RemoveLock), (Tag), __FILE__, __LINE__, sizeof(IO_REMOVE_LOCK))
#define IoReleaseRemoveLock(RemoveLock, Tag) IoReleaseRemoveLockEx((RemoveLock), (Tag), sizeof(IO_REMOVE_LOCK))
#define IoReleaseRemoveLockAndWait(RemoveLock, Tag) \
    IoReleaseRemoveLockAndWaitEx((RemoveLock), (Tag), sizeof(IO_REMOVE_LOCK))

/* ---- what public drivers use besides (a survey of WDK samples and kernel NDK/WSK consumers) ---- */

/* ntdef.h and windef.h's other names for the base types. */
typedef ULONG DWORD;
typedef ULONG_PTR UINT_PTR;
typedef GUID *PGUID, *LPGUID;
typedef PWSTR LPWSTR;
typedef PCWSTR LPCWSTR;
typedef PVOID PSECURITY_DESCRIPTOR;
#define UNICODE_NULL ((WCHAR)0)
#define RtlCopyBytes RtlCopyMemory
#define Int32x32To64(a, b) ((LONGLONG)(LONG)(a) * (LONGLONG)(LONG)(b))
#define UInt32x32To64(a, b) ((ULONGLONG)(ULONG)(a) * (ULONGLONG)(ULONG)(b))

/* excpt.h's lower-case spellings of the structured exception keywords, in C (see "Structured
 * exceptions" in docs/kernel.md: the handler never runs here; `leave` is a compile error). */
#ifndef __cplusplus
#define try __try
#define except __except
#define finally __finally
#define leave __leave
#endif

/* Thread priorities (KeSetPriorityThread). */
#define LOW_PRIORITY 0
#define LOW_REALTIME_PRIORITY 16
#define HIGH_PRIORITY 31
#define MAXIMUM_PRIORITY 32

/* Access rights a driver asks for when it references an object by handle. */
#define DELETE 0x00010000L
#define SYNCHRONIZE 0x00100000L
#define STANDARD_RIGHTS_REQUIRED 0x000F0000L
#define STANDARD_RIGHTS_ALL 0x001F0000L
#define EVENT_QUERY_STATE 0x0001
#define EVENT_MODIFY_STATE 0x0002
#define EVENT_ALL_ACCESS (STANDARD_RIGHTS_REQUIRED | SYNCHRONIZE | 0x3)
#define FILE_READ_DATA 0x0001
#define FILE_WRITE_DATA 0x0002
#define FILE_APPEND_DATA 0x0004

/* Device types and flags drivers name in their CTL_CODEs and device objects. */
#define FILE_DEVICE_BUS_EXTENDER 0x0000002a
#define FILE_DEVICE_SCSI 0x0000001b
#define FILE_DEVICE_NETWORK 0x00000012
#define DO_POWER_PAGABLE 0x00002000

/* The driver runtime's NX opt-in: NonPagedPool requests become NonPagedPoolNx. The environment's
 * pool is never executable, so there is nothing to change. */
#define DrvRtPoolNxOptIn 0x00000001
FORCEINLINE VOID ExInitializeDriverRuntime(ULONG RuntimeFlags) { (void)RuntimeFlags; }

/* Pool charged to the current process's quota, zeroed: the environment has no process quota, so
 * as ExAllocatePoolZero; with POOL_QUOTA_FAIL_INSTEAD_OF_RAISE a failure returns NULL (the pool
 * does not fail here). */
#define POOL_QUOTA_FAIL_INSTEAD_OF_RAISE 8
#define ExAllocatePoolQuotaZero(PoolType, NumberOfBytes, Tag) \
    ExAllocatePoolZero((POOL_TYPE)((PoolType) & ~POOL_QUOTA_FAIL_INSTEAD_OF_RAISE), (NumberOfBytes), (Tag))
#define ExAllocatePoolWithQuotaTag(PoolType, NumberOfBytes, Tag) \
    ExAllocatePoolWithTag((POOL_TYPE)((PoolType) & ~POOL_QUOTA_FAIL_INSTEAD_OF_RAISE), (NumberOfBytes), (Tag))

/* Cache flushes around DMA: x86 and x64 keep DMA coherent, so the WDK's own is empty there. */
#define KeFlushIoBuffers(Mdl, ReadOperation, DmaOperation) ((void)(Mdl), (void)(ReadOperation), (void)(DmaOperation))

/* One processor, processor 0 of group 0 (see KeQueryActiveProcessorCountEx): affinity is only
 * kept and given back. */
FORCEINLINE VOID KeSetSystemGroupAffinityThread(PGROUP_AFFINITY Affinity, PGROUP_AFFINITY PreviousAffinity) {
    (void)Affinity;
    if (PreviousAffinity != NULL) {
        memset(PreviousAffinity, 0, sizeof(*PreviousAffinity));
        PreviousAffinity->Mask = 1;
    }
}
FORCEINLINE VOID KeRevertToUserGroupAffinityThread(PGROUP_AFFINITY PreviousAffinity) { (void)PreviousAffinity; }

/* MSVC intrinsics drivers use directly. */
#define _InlineInterlockedAdd64 InterlockedAdd64
FORCEINLINE BOOLEAN _interlockedbittestandset(LONG volatile *Base, LONG Offset) {
    const LONG bit = (LONG)(1u << (Offset & 31));
    return (BOOLEAN)((__atomic_fetch_or(Base + (Offset >> 5), bit, __ATOMIC_SEQ_CST) & bit) != 0);
}
FORCEINLINE BOOLEAN _interlockedbittestandreset(LONG volatile *Base, LONG Offset) {
    const LONG bit = (LONG)(1u << (Offset & 31));
    return (BOOLEAN)((__atomic_fetch_and(Base + (Offset >> 5), ~bit, __ATOMIC_SEQ_CST) & bit) != 0);
}
#define InterlockedBitTestAndSet _interlockedbittestandset
#define InterlockedBitTestAndReset _interlockedbittestandreset
#define __popcnt16(v) ((USHORT)__builtin_popcount((USHORT)(v)))
#define __popcnt(v) ((ULONG)__builtin_popcount((ULONG)(v)))
#define __popcnt64(v) ((ULONG64)__builtin_popcountll((ULONG64)(v)))
#define _mm_mfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __nop() ((void)0)
/* A breakpoint stops the run as a bug check does: the report names the site. */
#define __debugbreak() DbgBreakPoint()

/* Interlocked singly linked lists (SLIST_HEADER): a LIFO of entries, taken and given whole. */
typedef struct _SLIST_ENTRY {
    struct _SLIST_ENTRY *Next;
} SLIST_ENTRY, *PSLIST_ENTRY;
typedef union DECLSPEC_ALIGN(16) _SLIST_HEADER {
    struct {
        PSLIST_ENTRY Next;
        ULONGLONG Depth;
    } Header;
    ULONGLONG Alignment[2];
} SLIST_HEADER, *PSLIST_HEADER;
VOID InitializeSListHead(PSLIST_HEADER SListHead);
/* Each returns the previous first entry (NULL if the list was empty). Any IRQL. */
PSLIST_ENTRY InterlockedPushEntrySList(PSLIST_HEADER SListHead, PSLIST_ENTRY SListEntry);
PSLIST_ENTRY InterlockedPopEntrySList(PSLIST_HEADER SListHead);
PSLIST_ENTRY InterlockedFlushSList(PSLIST_HEADER SListHead);
USHORT QueryDepthSList(PSLIST_HEADER SListHead);
#define ExInterlockedPushEntrySList(Head, Entry, Lock) InterlockedPushEntrySList((Head), (Entry))
#define ExInterlockedPopEntrySList(Head, Lock) InterlockedPopEntrySList((Head))
#define ExInterlockedFlushSList(Head) InterlockedFlushSList((Head))
#define ExQueryDepthSList(Head) QueryDepthSList((Head))

/* Counted strings. RtlInitEmptyUnicodeString as ntdef.h; the allocating conversions take pool
 * (tag 'Strg', charged to the caller's driver) that RtlFreeUnicodeString/RtlFreeAnsiString give
 * back. */
#define RtlInitEmptyUnicodeString(UnicodeString, Buf, Size) \
    ((UnicodeString)->Buffer = (Buf), (UnicodeString)->Length = 0, (UnicodeString)->MaximumLength = (USHORT)(Size))
#define RtlInitEmptyAnsiString(AnsiString, Buf, Size) \
    ((AnsiString)->Buffer = (Buf), (AnsiString)->Length = 0, (AnsiString)->MaximumLength = (USHORT)(Size))
VOID RtlCopyUnicodeString(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString);
NTSTATUS RtlAppendUnicodeStringToString(PUNICODE_STRING Destination, PCUNICODE_STRING Source);
NTSTATUS RtlAppendUnicodeToString(PUNICODE_STRING Destination, PCWSTR Source);
NTSTATUS RtlAnsiStringToUnicodeString(PUNICODE_STRING DestinationString, PCANSI_STRING SourceString,
                                      BOOLEAN AllocateDestinationString);
NTSTATUS RtlUnicodeStringToAnsiString(PANSI_STRING DestinationString, PCUNICODE_STRING SourceString,
                                      BOOLEAN AllocateDestinationString);
VOID RtlFreeUnicodeString(PUNICODE_STRING UnicodeString);
VOID RtlFreeAnsiString(PANSI_STRING AnsiString);
NTSTATUS RtlUnicodeStringToInteger(PCUNICODE_STRING String, ULONG Base, PULONG Value);
NTSTATUS RtlIntegerToUnicodeString(ULONG Value, ULONG Base, PUNICODE_STRING String);
/* "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}" in upper case, in pool RtlFreeUnicodeString frees. */
NTSTATUS RtlStringFromGUID(REFGUID Guid, PUNICODE_STRING GuidString);
NTSTATUS RtlGUIDFromString(PCUNICODE_STRING GuidString, GUID *Guid);

/* The system event log: an entry a driver allocates and writes goes to the debug log here
 * (Environment::DebugLog), as "error log: code 0x..., status 0x...". */
typedef struct _IO_ERROR_LOG_PACKET {
    UCHAR MajorFunctionCode;
    UCHAR RetryCount;
    USHORT DumpDataSize;
    USHORT NumberOfStrings;
    USHORT StringOffset;
    USHORT EventCategory;
    NTSTATUS ErrorCode;
    ULONG UniqueErrorValue;
    NTSTATUS FinalStatus;
    ULONG SequenceNumber;
    ULONG IoControlCode;
    LARGE_INTEGER DeviceOffset;
    ULONG DumpData[1];
} IO_ERROR_LOG_PACKET, *PIO_ERROR_LOG_PACKET;
#define ERROR_LOG_MAXIMUM_SIZE 240
PVOID IoAllocateErrorLogEntry(PVOID IoObject, UCHAR EntrySize);
VOID IoWriteErrorLogEntry(PVOID ElEntry);
VOID IoFreeErrorLogEntry(PVOID ElEntry);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDKSIM_KERNEL_WDM_H_ */
