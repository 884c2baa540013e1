/* SPDX-License-Identifier: MIT */
/* ndksim/wdk_types.h - the Windows base types the NDK headers (ndkpi.h, ndkinfo.h) are written in:
 * integer types, NTSTATUS, LARGE_INTEGER, GUID, GROUP_AFFINITY, socket addresses, the MDL and the
 * Mm*Mdl* helpers. Sizes follow the Windows LLP64 model: ULONG and LONG are 32-bit although
 * `unsigned long` is 64-bit on Linux.
 *
 * A consumer with a kernel shim of its own (one that already defines these WDK names) defines
 * NDKSIM_NO_WDK_TYPES before including any NDK header, and defines the names first. ndksim then
 * defines none of them and only checks, with static_asserts, what the library relies on: the sizes
 * of the integer types, LARGE_INTEGER, GUID and the socket addresses, and the x64 layout of the
 * MDL header. The names a shim must supply are exactly those defined below: VOID, PVOID, CHAR,
 * UCHAR/PUCHAR, CSHORT, USHORT/PUSHORT, ULONG/PULONG, LONG/PLONG, LONG64, ULONG64, UINT32, UINT64,
 * LONG_PTR, ULONG_PTR, SIZE_T, KAFFINITY, BOOLEAN, TRUE, FALSE, MAXULONG, NTSTATUS, NDIS_STATUS,
 * NDIS_HANDLE, NT_SUCCESS, LARGE_INTEGER, PHYSICAL_ADDRESS, GUID, GROUP_AFFINITY, ADDRESS_FAMILY,
 * SOCKADDR, SOCKADDR_IN, SOCKADDR_IN6, SOCKADDR_INET, SOCKADDR_STORAGE (and their P* pointer
 * types), MDL/PMDL, PAGE_SIZE, PAGE_SHIFT, PAGE_ALIGN, BYTE_OFFSET, ADDRESS_AND_SIZE_TO_SPAN_PAGES,
 * MmGetMdlVirtualAddress, MmGetMdlByteCount, MmGetMdlByteOffset, MmInitializeMdl and
 * NDIS_OBJECT_HEADER. */
#ifndef NDKSIM_WDK_TYPES_H_
#define NDKSIM_WDK_TYPES_H_

#include <stddef.h> /* offsetof */
#include <stdint.h>
#ifndef __cplusplus
#include <assert.h> /* C11 static_assert */
#endif

#if !defined(_WIN32) && !defined(NDKSIM_NO_WDK_TYPES)
#define NDKSIM_DEFINES_WDK_TYPES 1
#endif

#ifdef NDKSIM_DEFINES_WDK_TYPES
#include <netinet/in.h>
#include <sys/socket.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef NDKSIM_DEFINES_WDK_TYPES
typedef void VOID;
typedef void *PVOID;
typedef char CHAR;
typedef uint8_t UCHAR, *PUCHAR;
typedef int16_t CSHORT;
typedef uint16_t USHORT, *PUSHORT;
typedef uint32_t ULONG, *PULONG;
typedef int32_t LONG, *PLONG;
typedef int64_t LONG64;
typedef uint64_t ULONG64;
typedef uint32_t UINT32;
typedef uint64_t UINT64;
typedef intptr_t LONG_PTR;
typedef uintptr_t ULONG_PTR;
typedef ULONG_PTR SIZE_T;
typedef ULONG_PTR KAFFINITY;
typedef uint8_t BOOLEAN;

#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif
#ifndef MAXULONG
#define MAXULONG 0xffffffffU
#endif

typedef int32_t NTSTATUS;
typedef int32_t NDIS_STATUS;
typedef PVOID NDIS_HANDLE;

#ifndef NT_SUCCESS
#define NT_SUCCESS(Status) (((NTSTATUS)(Status)) >= 0)
#endif

/* LowPart/HighPart are an anonymous struct in Windows; __extension__ keeps -Wpedantic quiet. */
typedef union _LARGE_INTEGER {
    __extension__ struct {
        ULONG LowPart;
        LONG HighPart;
    };
    struct {
        ULONG LowPart;
        LONG HighPart;
    } u;
    LONG64 QuadPart;
} LARGE_INTEGER, *PLARGE_INTEGER;
typedef LARGE_INTEGER PHYSICAL_ADDRESS, *PPHYSICAL_ADDRESS;

#ifndef GUID_DEFINED
#define GUID_DEFINED
typedef struct _GUID {
    ULONG Data1;
    USHORT Data2;
    USHORT Data3;
    UCHAR Data4[8];
} GUID;
#endif

typedef struct _GROUP_AFFINITY {
    KAFFINITY Mask;
    USHORT Group;
    USHORT Reserved[3];
} GROUP_AFFINITY, *PGROUP_AFFINITY;

/* Addresses are the host's own socket structs, so they go straight to the socket API. */
typedef USHORT ADDRESS_FAMILY;
typedef struct sockaddr SOCKADDR, *PSOCKADDR;
typedef struct sockaddr_in SOCKADDR_IN, *PSOCKADDR_IN;
typedef struct sockaddr_in6 SOCKADDR_IN6, *PSOCKADDR_IN6;
typedef struct sockaddr_storage SOCKADDR_STORAGE, *PSOCKADDR_STORAGE; /* ws2def.h on Windows */
typedef union _SOCKADDR_INET {
    SOCKADDR_IN Ipv4;
    SOCKADDR_IN6 Ipv6;
    ADDRESS_FAMILY si_family; /* overlays sin_family / sin6_family */
} SOCKADDR_INET, *PSOCKADDR_INET;

static_assert(sizeof(sa_family_t) == sizeof(ADDRESS_FAMILY), "si_family must overlay sa_family_t");

/* Memory descriptor lists: the header of the WDK's MDL, in its x64 layout (the page-frame array
 * that follows it on Windows is not modelled: in one process every buffer is mapped). NdkRegisterMr
 * and NdkBuildLam read Next, StartVa, ByteOffset and ByteCount. */
/* Spelled exactly as glibc's <sys/user.h> does so including both is a benign redefinition. */
#ifndef PAGE_SHIFT
#define PAGE_SHIFT 12
#endif
#ifndef PAGE_SIZE
#define PAGE_SIZE (1UL << PAGE_SHIFT)
#endif

#ifndef PAGE_ALIGN
#define PAGE_ALIGN(Va) ((PVOID)((ULONG_PTR)(Va) & ~(ULONG_PTR)(PAGE_SIZE - 1)))
#endif
#ifndef BYTE_OFFSET
#define BYTE_OFFSET(Va) ((ULONG)((ULONG_PTR)(Va) & (PAGE_SIZE - 1)))
#endif
/* Number of pages touched by [Va, Va + Size). */
#ifndef ADDRESS_AND_SIZE_TO_SPAN_PAGES
#define ADDRESS_AND_SIZE_TO_SPAN_PAGES(Va, Size) \
    ((ULONG)((BYTE_OFFSET(Va) + (ULONG_PTR)(Size) + (PAGE_SIZE - 1)) >> PAGE_SHIFT))
#endif

struct _EPROCESS;
typedef struct _MDL {
    struct _MDL *Next;          /* next piece of the same buffer, or NULL */
    CSHORT Size;                /* bytes of this descriptor */
    CSHORT MdlFlags;
    struct _EPROCESS *Process;  /* unused by ndksim */
    PVOID MappedSystemVa;       /* in-process: the buffer's own address */
    PVOID StartVa;              /* page-aligned base */
    ULONG ByteCount;
    ULONG ByteOffset;           /* offset of the first byte within the StartVa page */
} MDL, *PMDL;

/* Plain `inline` in C++ (one definition program-wide); `static` in C. Either way no
 * unused-function warning when this header is compiled on its own. */
#ifdef __cplusplus
#define NDKSIM_INLINE inline
#else
#define NDKSIM_INLINE static inline __attribute__((unused))
#endif

NDKSIM_INLINE PVOID MmGetMdlVirtualAddress(const MDL *Mdl) {
    return (PVOID)((UCHAR *)Mdl->StartVa + Mdl->ByteOffset);
}
NDKSIM_INLINE ULONG MmGetMdlByteCount(const MDL *Mdl) { return Mdl->ByteCount; }
NDKSIM_INLINE ULONG MmGetMdlByteOffset(const MDL *Mdl) { return Mdl->ByteOffset; }

/* Same results as the Windows macro. In one process every buffer is already mapped, so
 * MappedSystemVa is filled in too. */
NDKSIM_INLINE VOID MmInitializeMdl(PMDL Mdl, PVOID BaseVa, SIZE_T Length) {
    Mdl->Next = NULL;
    Mdl->Size = (CSHORT)sizeof(MDL);
    Mdl->MdlFlags = 0;
    Mdl->Process = NULL;
    Mdl->MappedSystemVa = BaseVa;
    Mdl->StartVa = PAGE_ALIGN(BaseVa);
    Mdl->ByteOffset = BYTE_OFFSET(BaseVa);
    Mdl->ByteCount = (ULONG)Length;
}

typedef struct _NDIS_OBJECT_HEADER {
    UCHAR Type;
    UCHAR Revision;
    USHORT Size;
} NDIS_OBJECT_HEADER, *PNDIS_OBJECT_HEADER;
#endif /* NDKSIM_DEFINES_WDK_TYPES */

/* What the library was built with, checked against whoever defined the names. */
static_assert(sizeof(ULONG) == 4 && sizeof(LONG) == 4, "ULONG and LONG must be 32-bit (Windows LLP64)");
static_assert(sizeof(USHORT) == 2 && sizeof(UCHAR) == 1 && sizeof(BOOLEAN) == 1, "USHORT, UCHAR, BOOLEAN sizes");
static_assert(sizeof(UINT64) == 8 && sizeof(ULONG64) == 8 && sizeof(SIZE_T) == 8, "64-bit types");
static_assert(sizeof(NTSTATUS) == 4, "NTSTATUS is 32-bit");
static_assert(sizeof(LARGE_INTEGER) == 8, "LARGE_INTEGER is 8 bytes");
static_assert(sizeof(GUID) == 16, "GUID is 16 bytes");
static_assert(sizeof(GROUP_AFFINITY) == 0x10, "GROUP_AFFINITY is 16 bytes on x64");
static_assert(sizeof(SOCKADDR_IN) == 16 && sizeof(SOCKADDR_IN6) == 28, "socket address sizes");
static_assert(sizeof(SOCKADDR_STORAGE) == 128, "SOCKADDR_STORAGE is 128 bytes");
static_assert(offsetof(MDL, Next) == 0x00, "MDL: the WDK's x64 header layout");
static_assert(offsetof(MDL, Size) == 0x08, "MDL: the WDK's x64 header layout");
static_assert(offsetof(MDL, MdlFlags) == 0x0A, "MDL: the WDK's x64 header layout");
static_assert(offsetof(MDL, MappedSystemVa) == 0x18, "MDL: the WDK's x64 header layout");
static_assert(offsetof(MDL, StartVa) == 0x20, "MDL: the WDK's x64 header layout");
static_assert(offsetof(MDL, ByteCount) == 0x28, "MDL: the WDK's x64 header layout");
static_assert(offsetof(MDL, ByteOffset) == 0x2C, "MDL: the WDK's x64 header layout");
static_assert(PAGE_SIZE == 4096, "NDK logical pages are 4 KiB");

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NDKSIM_WDK_TYPES_H_ */
