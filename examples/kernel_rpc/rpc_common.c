/* SPDX-License-Identifier: MIT */
/* The drivers' shared plumbing: adapter open through WSK, pending-aware waits, mapped buffers. */
#include "rpc_common.h"

static const WSK_CLIENT_DISPATCH g_rpc_wsk_dispatch = {MAKE_WSK_VERSION(1, 0), 0, NULL};

/* NDK adapters are found by interface, and the interface by the address it owns: the same lookup
 * SMB Direct does, since a consumer is configured with addresses, not interface indexes. */
static NTSTATUS RpcInterfaceOf(ULONG Ipv4, NET_IFINDEX *IfIndex) {
    PMIB_UNICASTIPADDRESS_TABLE table = NULL;
    NTSTATUS status;
    ULONG i;

    status = GetUnicastIpAddressTable(AF_INET, &table);
    if (!NT_SUCCESS(status)) return status;
    status = STATUS_NOT_FOUND;
    for (i = 0; i < table->NumEntries; ++i) {
        if (table->Table[i].Address.Ipv4.sin_addr.s_addr == Ipv4) {
            *IfIndex = table->Table[i].InterfaceIndex;
            status = STATUS_SUCCESS;
            break;
        }
    }
    FreeMibTable(table);
    return status;
}

NTSTATUS RpcOpenAdapter(RPC_ADAPTER *Adapter, ULONG Ipv4) {
    WSK_CLIENT_NPI client = {Adapter, &g_rpc_wsk_dispatch};
    NDK_VERSION version = {RPC_NDK_VERSION_MAJOR, RPC_NDK_VERSION_MINOR};
    NET_IFINDEX if_index = 0;
    SIZE_T returned = 0;
    ULONG info_size = sizeof(Adapter->Info);
    NTSTATUS status;

    PAGED_CODE();
    RtlZeroMemory(Adapter, sizeof(*Adapter));
    status = WskRegister(&client, &Adapter->Registration);
    if (!NT_SUCCESS(status)) return status;
    Adapter->Registered = TRUE;
    status = WskCaptureProviderNPI(&Adapter->Registration, WSK_INFINITE_WAIT, &Adapter->Provider);
    if (!NT_SUCCESS(status)) goto fail;
    Adapter->Captured = TRUE;
    status = Adapter->Provider.Dispatch->WskControlClient(Adapter->Provider.Client, WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH,
                                                          0, NULL, sizeof(Adapter->Ndk), &Adapter->Ndk, &returned,
                                                          NULL);
    if (!NT_SUCCESS(status)) goto fail;
    status = RpcInterfaceOf(Ipv4, &if_index);
    if (!NT_SUCCESS(status)) goto fail;
    status = Adapter->Ndk.WskOpenNdkAdapter(Adapter->Provider.Client, version, if_index, &Adapter->Adapter);
    if (!NT_SUCCESS(status)) goto fail;
    Adapter->Info.Version = version;
    status = Adapter->Adapter->Dispatch->NdkQueryAdapterInfo(Adapter->Adapter, &Adapter->Info, &info_size);
    if (!NT_SUCCESS(status)) goto fail;
    return STATUS_SUCCESS;

fail:
    RpcCloseAdapter(Adapter);
    return status;
}

VOID RpcCloseAdapter(RPC_ADAPTER *Adapter) {
    PAGED_CODE();
    if (Adapter->Adapter != NULL) {
        /* Blocking: every callback of every object of the adapter has returned after it. */
        Adapter->Ndk.WskCloseNdkAdapter(Adapter->Provider.Client, Adapter->Adapter);
        Adapter->Adapter = NULL;
    }
    if (Adapter->Captured) {
        WskReleaseProviderNPI(&Adapter->Registration);
        Adapter->Captured = FALSE;
    }
    if (Adapter->Registered) {
        WskDeregister(&Adapter->Registration);
        Adapter->Registered = FALSE;
    }
}

VOID RpcWaitInit(RPC_WAIT *Wait) {
    KeInitializeEvent(&Wait->Done, NotificationEvent, FALSE);
    Wait->Status = STATUS_PENDING;
    Wait->Object = NULL;
}

VOID RpcRequestDone(PVOID Context, NTSTATUS Status) {
    RPC_WAIT *wait = (RPC_WAIT *)Context;
    wait->Status = Status;
    KeSetEvent(&wait->Done, IO_NO_INCREMENT, FALSE);
}

VOID RpcCreateDone(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER *Object) {
    RPC_WAIT *wait = (RPC_WAIT *)Context;
    wait->Status = Status;
    wait->Object = Object;
    KeSetEvent(&wait->Done, IO_NO_INCREMENT, FALSE);
}

static VOID RpcCloseDone(PVOID Context) { KeSetEvent(&((RPC_WAIT *)Context)->Done, IO_NO_INCREMENT, FALSE); }

NTSTATUS RpcFinish(RPC_WAIT *Wait, NTSTATUS Returned) {
    if (Returned != STATUS_PENDING) return Returned;
    KeWaitForSingleObject(&Wait->Done, Executive, KernelMode, FALSE, NULL);
    return Wait->Status;
}

NTSTATUS RpcFinishCreate(RPC_WAIT *Wait, NTSTATUS Returned, PVOID *Object) {
    NTSTATUS status = RpcFinish(Wait, Returned);
    /* A pending create leaves the out-parameter unwritten: the object comes with the callback. */
    if (Returned == STATUS_PENDING) *Object = NT_SUCCESS(status) ? Wait->Object : NULL;
    if (!NT_SUCCESS(status)) *Object = NULL;
    return status;
}

VOID RpcCloseObject(NDK_OBJECT_HEADER *Object, NDK_FN_CLOSE_OBJECT Close) {
    RPC_WAIT wait;
    RpcWaitInit(&wait);
    /* A close cannot fail; it only may take a while. */
    if (Close(Object, RpcCloseDone, &wait) == STATUS_PENDING) {
        KeWaitForSingleObject(&wait.Done, Executive, KernelMode, FALSE, NULL);
    }
}

NTSTATUS RpcBufferMap(RPC_ADAPTER *Adapter, RPC_BUFFER *Buffer, SIZE_T Bytes) {
    ULONG pages = BYTES_TO_PAGES(Bytes);
    ULONG lam_size = FIELD_OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + pages * sizeof(NDK_LOGICAL_ADDRESS);
    RPC_WAIT wait;
    NTSTATUS status;

    RtlZeroMemory(Buffer, sizeof(*Buffer));
    /* Whole pages: allocations of a page or more start on a page, so the buffer's offset in its
     * first page (the LAM's FBO) is 0 and a fast register may use its address as the base. */
    Buffer->Bytes = Bytes;
    Buffer->Va = (PUCHAR)ExAllocatePool2(POOL_FLAG_NON_PAGED, (SIZE_T)pages * PAGE_SIZE, RPC_TAG_BUFFER);
    if (Buffer->Va == NULL) return STATUS_INSUFFICIENT_RESOURCES;
    Buffer->Mdl = IoAllocateMdl(Buffer->Va, (ULONG)Bytes, FALSE, FALSE, NULL);
    if (Buffer->Mdl == NULL) {
        status = STATUS_INSUFFICIENT_RESOURCES;
        goto fail;
    }
    MmBuildMdlForNonPagedPool(Buffer->Mdl);
    Buffer->Lam = (NDK_LOGICAL_ADDRESS_MAPPING *)ExAllocatePool2(POOL_FLAG_NON_PAGED, lam_size, RPC_TAG_LAM);
    if (Buffer->Lam == NULL) {
        status = STATUS_INSUFFICIENT_RESOURCES;
        goto fail;
    }
    RpcWaitInit(&wait);
    status = RpcFinish(&wait, Adapter->Adapter->Dispatch->NdkBuildLAM(Adapter->Adapter, Buffer->Mdl, Bytes,
                                                                      RpcRequestDone, &wait, Buffer->Lam, &lam_size,
                                                                      &Buffer->Fbo));
    if (!NT_SUCCESS(status)) goto fail;
    NT_ASSERT(Buffer->Lam->AdapterPageCount == pages);
    return STATUS_SUCCESS;

fail:
    /* A failed NdkBuildLAM has released whatever it mapped. */
    if (Buffer->Lam != NULL) ExFreePoolWithTag(Buffer->Lam, RPC_TAG_LAM);
    if (Buffer->Mdl != NULL) IoFreeMdl(Buffer->Mdl);
    ExFreePoolWithTag(Buffer->Va, RPC_TAG_BUFFER);
    RtlZeroMemory(Buffer, sizeof(*Buffer));
    return status;
}

VOID RpcBufferUnmap(RPC_ADAPTER *Adapter, RPC_BUFFER *Buffer) {
    if (Buffer->Va == NULL) return;
    Adapter->Adapter->Dispatch->NdkReleaseLAM(Adapter->Adapter, Buffer->Lam);
    ExFreePoolWithTag(Buffer->Lam, RPC_TAG_LAM);
    IoFreeMdl(Buffer->Mdl);
    ExFreePoolWithTag(Buffer->Va, RPC_TAG_BUFFER);
    RtlZeroMemory(Buffer, sizeof(*Buffer));
}

ULONG RpcBufferSges(const RPC_BUFFER *Buffer, SIZE_T Offset, ULONG Length, UINT32 Token, NDK_SGE *Sges,
                    ULONG MaxSges) {
    SIZE_T at = Buffer->Fbo + Offset;
    ULONG count = 0;

    NT_ASSERT(Offset + Length <= Buffer->Bytes);
    while (Length > 0) {
        SIZE_T page = at / PAGE_SIZE;
        ULONG in_page = (ULONG)(at % PAGE_SIZE);
        ULONG room = (ULONG)PAGE_SIZE - in_page;
        ULONG chunk = Length < room ? Length : room;
        if (count == MaxSges) return 0;
        Sges[count].LogicalAddress.QuadPart = Buffer->Lam->AdapterPageArray[page].QuadPart + in_page;
        Sges[count].Length = chunk;
        Sges[count].MemoryRegionToken = Token;
        ++count;
        at += chunk;
        Length -= chunk;
    }
    return count;
}

VOID RpcWaitForThread(PVOID *Thread) {
    if (*Thread == NULL) return;
    KeWaitForSingleObject(*Thread, Executive, KernelMode, FALSE, NULL);
    ObDereferenceObject(*Thread);
    *Thread = NULL;
}

NTSTATUS RpcStartThread(PKSTART_ROUTINE Routine, PVOID Context, PVOID *Thread) {
    HANDLE handle;
    NTSTATUS status = PsCreateSystemThread(&handle, THREAD_ALL_ACCESS, NULL, NULL, NULL, Routine, Context);
    if (!NT_SUCCESS(status)) return status;
    /* The object, not the handle, is what a waiter needs: it is signaled when the thread ends. */
    status = ObReferenceObjectByHandle(handle, SYNCHRONIZE, *PsThreadType, KernelMode, Thread, NULL);
    ZwClose(handle);
    return status;
}

SOCKADDR_IN RpcSocketAddress(ULONG Ipv4, USHORT Port) {
    SOCKADDR_IN address;
    RtlZeroMemory(&address, sizeof(address));
    address.sin_family = AF_INET;
    address.sin_port = (USHORT)((Port >> 8) | (Port << 8));
    address.sin_addr.s_addr = Ipv4;
    return address;
}
