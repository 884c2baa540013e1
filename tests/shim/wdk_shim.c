/* SPDX-License-Identifier: MIT */
/* A C translation unit written as a Windows kernel consumer's own shim would be: it defines the
 * WDK base types itself (with its own spellings), sets NDKSIM_NO_WDK_TYPES, and then includes the
 * NDK headers. The functions below drive a real adapter through them, so the suite shows that the
 * consumer's definitions and the library agree (tests/wdk_shim_test.cc calls them). */
#include <stddef.h>
#include <string.h>

#define NDKSIM_NO_WDK_TYPES 1

/* ---- the consumer's kernel shim --------------------------------------------------------------- */
typedef void VOID;
typedef void *PVOID;
typedef char CHAR;
typedef unsigned char UCHAR, *PUCHAR;
typedef short CSHORT;
typedef unsigned short USHORT, *PUSHORT;
typedef unsigned int ULONG, *PULONG; /* 32-bit: Windows is LLP64 */
typedef int LONG, *PLONG;
typedef long long LONG64;
typedef unsigned long long ULONG64;
typedef unsigned int UINT32;
typedef unsigned long long UINT64;
typedef long long LONG_PTR;
typedef unsigned long long ULONG_PTR;
typedef ULONG_PTR SIZE_T;
typedef ULONG_PTR KAFFINITY;
typedef unsigned char BOOLEAN;
#define TRUE 1
#define FALSE 0
#define MAXULONG 0xffffffffU
typedef LONG NTSTATUS;
typedef LONG NDIS_STATUS;
typedef PVOID NDIS_HANDLE;
#define NT_SUCCESS(Status) (((NTSTATUS)(Status)) >= 0)

typedef union _LARGE_INTEGER {
    struct {
        ULONG LowPart;
        LONG HighPart;
    } u;
    LONG64 QuadPart;
} LARGE_INTEGER, *PLARGE_INTEGER;
typedef LARGE_INTEGER PHYSICAL_ADDRESS, *PPHYSICAL_ADDRESS;

typedef struct _GUID {
    ULONG Data1;
    USHORT Data2;
    USHORT Data3;
    UCHAR Data4[8];
} GUID;

typedef struct _GROUP_AFFINITY {
    KAFFINITY Mask;
    USHORT Group;
    USHORT Reserved[3];
} GROUP_AFFINITY, *PGROUP_AFFINITY;

/* ws2def.h's socket addresses, spelled the Windows way. */
typedef USHORT ADDRESS_FAMILY;
#define AF_INET 2
typedef struct sockaddr {
    ADDRESS_FAMILY sa_family;
    CHAR sa_data[14];
} SOCKADDR, *PSOCKADDR;
typedef struct in_addr {
    ULONG S_addr;
} IN_ADDR;
typedef struct sockaddr_in {
    ADDRESS_FAMILY sin_family;
    USHORT sin_port;
    IN_ADDR sin_addr;
    CHAR sin_zero[8];
} SOCKADDR_IN, *PSOCKADDR_IN;
typedef struct sockaddr_in6 {
    ADDRESS_FAMILY sin6_family;
    USHORT sin6_port;
    ULONG sin6_flowinfo;
    UCHAR sin6_addr[16];
    ULONG sin6_scope_id;
} SOCKADDR_IN6, *PSOCKADDR_IN6;
typedef union _SOCKADDR_INET {
    SOCKADDR_IN Ipv4;
    SOCKADDR_IN6 Ipv6;
    ADDRESS_FAMILY si_family;
} SOCKADDR_INET, *PSOCKADDR_INET;
typedef struct sockaddr_storage {
    ADDRESS_FAMILY ss_family;
    CHAR ss_pad1[6];
    LONG64 ss_align;
    CHAR ss_pad2[112];
} SOCKADDR_STORAGE, *PSOCKADDR_STORAGE;

#define PAGE_SHIFT 12
#define PAGE_SIZE (1UL << PAGE_SHIFT)
#define PAGE_ALIGN(Va) ((PVOID)((ULONG_PTR)(Va) & ~(ULONG_PTR)(PAGE_SIZE - 1)))
#define BYTE_OFFSET(Va) ((ULONG)((ULONG_PTR)(Va) & (PAGE_SIZE - 1)))
#define ADDRESS_AND_SIZE_TO_SPAN_PAGES(Va, Size) \
    ((ULONG)((BYTE_OFFSET(Va) + (ULONG_PTR)(Size) + (PAGE_SIZE - 1)) >> PAGE_SHIFT))

struct _EPROCESS;
typedef struct _MDL { /* wdm.h's x64 MDL header */
    struct _MDL *Next;
    CSHORT Size;
    CSHORT MdlFlags;
    struct _EPROCESS *Process;
    PVOID MappedSystemVa;
    PVOID StartVa;
    ULONG ByteCount;
    ULONG ByteOffset;
} MDL, *PMDL;

static void ShimInitializeMdl(PMDL mdl, PVOID base, SIZE_T length) {
    mdl->Next = NULL;
    mdl->Size = (CSHORT)sizeof(MDL);
    mdl->MdlFlags = 0;
    mdl->Process = NULL;
    mdl->MappedSystemVa = base;
    mdl->StartVa = PAGE_ALIGN(base);
    mdl->ByteOffset = BYTE_OFFSET(base);
    mdl->ByteCount = (ULONG)length;
}
#define MmInitializeMdl(Mdl, BaseVa, Length) ShimInitializeMdl((Mdl), (BaseVa), (Length))

typedef struct _NDIS_OBJECT_HEADER {
    UCHAR Type;
    UCHAR Revision;
    USHORT Size;
} NDIS_OBJECT_HEADER, *PNDIS_OBJECT_HEADER;

/* ---- the NDK headers, on top of the shim ------------------------------------------------------ */
#include "ndkinfo.h"
#include "ndkpi.h"

#include "wdk_shim.h"

static VOID OnConnect(PVOID context, NDK_CONNECTOR *connector) {
    (void)context;
    (void)connector;
}

ULONG ShimMaxReceiveSge(NDK_ADAPTER *adapter) {
    NDK_ADAPTER_INFO info;
    ULONG size = sizeof info;
    memset(&info, 0, sizeof info);
    if (adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size) != 0) return 0;
    return info.MaxReceiveRequestSge;
}

NTSTATUS ShimRegister(NDK_ADAPTER *adapter, void *buffer, ULONG length, UINT32 *token) {
    NDK_PD *pd = NULL;
    NDK_MR *mr = NULL;
    MDL mdl;
    NTSTATUS s = adapter->Dispatch->NdkCreatePd(adapter, NULL, NULL, &pd);
    if (!NT_SUCCESS(s)) return s;
    s = pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr);
    if (NT_SUCCESS(s)) {
        MmInitializeMdl(&mdl, buffer, length);
        s = mr->Dispatch->NdkRegisterMr(mr, &mdl, length, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NULL, NULL);
        if (NT_SUCCESS(s)) {
            *token = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
            mr->Dispatch->NdkDeregisterMr(mr, NULL, NULL);
        }
        mr->Dispatch->NdkCloseMr(&mr->Header, NULL, NULL);
    }
    pd->Dispatch->NdkClosePd(&pd->Header, NULL, NULL);
    return s;
}

NTSTATUS ShimListen(NDK_ADAPTER *adapter, ULONG ipv4_network_order, USHORT port_network_order) {
    SOCKADDR_STORAGE storage;
    SOCKADDR_IN *in = (SOCKADDR_IN *)&storage;
    NDK_LISTENER *listener = NULL;
    NTSTATUS s;
    memset(&storage, 0, sizeof storage);
    in->sin_family = AF_INET;
    in->sin_port = port_network_order;
    in->sin_addr.S_addr = ipv4_network_order;
    s = adapter->Dispatch->NdkCreateListener(adapter, OnConnect, NULL, NULL, NULL, &listener);
    if (!NT_SUCCESS(s)) return s;
    s = listener->Dispatch->NdkListen(listener, (PSOCKADDR)&storage, sizeof(SOCKADDR_IN), NULL, NULL);
    listener->Dispatch->NdkCloseListener(&listener->Header, NULL, NULL);
    return s;
}
