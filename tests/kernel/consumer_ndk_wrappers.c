/* SPDX-License-Identifier: MIT */
/* Consumers name functions of their own after the NDK entries they wrap, as Microsoft's RdmaSample
 * does (an NdkSend of a socket, a work request and flags): the WDK headers must leave those names
 * free. This file only has to compile; the function tells the test it did (3, the wrappers it holds). */
#include <ndis.h>
#include <wskndk.h>

#include "consumer_ndk_wrappers.h"

typedef struct _WRAPPED_SOCKET {
    NDK_QP *Qp;
    NDK_SGE Sge;
} WRAPPED_SOCKET;

static NTSTATUS NdkSend(WRAPPED_SOCKET *Socket, PVOID Context, ULONG Flags) {
    return Socket->Qp->Dispatch->NdkSend(Socket->Qp, Context, &Socket->Sge, 1, Flags);
}

static NTSTATUS NdkReceive(WRAPPED_SOCKET *Socket, PVOID Context) {
    return Socket->Qp->Dispatch->NdkReceive(Socket->Qp, Context, &Socket->Sge, 1);
}

static NTSTATUS NdkFastRegister(WRAPPED_SOCKET *Socket, NDK_MR *Mr, const NDK_LOGICAL_ADDRESS *Page, ULONG Flags) {
    return Socket->Qp->Dispatch->NdkFastRegister(Socket->Qp, NULL, Mr, 1, Page, 0, PAGE_SIZE, NULL, Flags);
}

/* Referenced, never called: the wrappers need no QP to compile. */
typedef struct _WRAPPERS {
    NTSTATUS (*Send)(WRAPPED_SOCKET *, PVOID, ULONG);
    NTSTATUS (*Receive)(WRAPPED_SOCKET *, PVOID);
    NTSTATUS (*FastRegister)(WRAPPED_SOCKET *, NDK_MR *, const NDK_LOGICAL_ADDRESS *, ULONG);
} WRAPPERS;
const WRAPPERS g_NdksimTestNdkWrappers = {NdkSend, NdkReceive, NdkFastRegister};

int WrappersNamedAfterNdkEntriesCompile(void) {
    const WRAPPERS *w = &g_NdksimTestNdkWrappers;
    return (w->Send != NULL) + (w->Receive != NULL) + (w->FastRegister != NULL);
}

/* What Microsoft's NDK sample also relies on, including only <ndis.h>, <wsk.h> and <wskndk.h>: the
 * address conversions, and a typed pointer's address passed to InterlockedCompareExchangePointer. */
static WRAPPED_SOCKET *g_OnlySocket;

int WrappersParseAndClaim(void) {
    static WRAPPED_SOCKET socket;
    SOCKADDR_IN address;
    USHORT port = 0;
    const NTSTATUS parsed = RtlIpv4StringToAddressExW(L"192.0.2.7:4791", TRUE, &address.sin_addr, &port);
    const int claimed = InterlockedCompareExchangePointer(&g_OnlySocket, &socket, NULL) == NULL;
    return NT_SUCCESS(parsed) && RtlUshortByteSwap(port) == 4791 && claimed && g_OnlySocket == &socket;
}
