/* SPDX-License-Identifier: MIT */
/* ndk.c - the NDK sockets driver's plumbing: its WSK registration and the NDK adapters opened
 * through it, waits for NDK calls that pend, the message rings the adapter reaches, and address
 * text. */
#include "precomp.h"

#ifdef ALLOC_PRAGMA
#pragma alloc_text(PAGE, NksWskRegister)
#pragma alloc_text(PAGE, NksWskDeregister)
#pragma alloc_text(PAGE, NksAdapterOpen)
#pragma alloc_text(PAGE, NksAdapterRelease)
#pragma alloc_text(PAGE, NksBufferCreate)
#pragma alloc_text(PAGE, NksBufferDelete)
#endif

/* The driver asks WSK for nothing but its NDK extension: no client events. */
static const WSK_CLIENT_DISPATCH NksWskClientDispatch = {MAKE_WSK_VERSION(1, 0), 0, NULL};

/* ---- WSK ----------------------------------------------------------------------------------- */

_Use_decl_annotations_
NTSTATUS NksWskRegister(PNKS_DEVICE Device)
{
    WSK_CLIENT_NPI client;
    NTSTATUS status;

    PAGED_CODE();
    client.ClientContext = Device;
    client.Dispatch = &NksWskClientDispatch;
    status = WskRegister(&client, &Device->WskRegistration);
    Device->WskRegistered = NT_SUCCESS(status);
    return status;
}

/* The provider NPI is captured when the first socket needs it, not in DriverEntry: WSK may not be
 * ready while drivers load, and an infinite wait there could hold up the boot. */
_IRQL_requires_(PASSIVE_LEVEL)
static NTSTATUS NksWskCapture(_Inout_ PNKS_DEVICE Device)
{
    NTSTATUS status = STATUS_SUCCESS;

    PAGED_CODE();
    /* A guarded mutex, not a fast one: the capture waits, which needs PASSIVE_LEVEL, and a fast
     * mutex raises to APC_LEVEL. */
    KeAcquireGuardedMutex(&Device->WskLock);
    if (!Device->WskCaptured) {
        status = WskCaptureProviderNPI(&Device->WskRegistration, WSK_INFINITE_WAIT, &Device->WskProvider);
        if (NT_SUCCESS(status)) {
            status = Device->WskProvider.Dispatch->WskControlClient(
                Device->WskProvider.Client, WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH, 0, NULL,
                sizeof(Device->NdkDispatch), &Device->NdkDispatch, NULL, NULL);
            if (NT_SUCCESS(status)) {
                Device->WskCaptured = TRUE;
            } else {
                WskReleaseProviderNPI(&Device->WskRegistration);
            }
        }
    }
    KeReleaseGuardedMutex(&Device->WskLock);
    return status;
}

_Use_decl_annotations_
VOID NksWskDeregister(PNKS_DEVICE Device)
{
    PAGED_CODE();
    if (Device->WskCaptured) {
        WskReleaseProviderNPI(&Device->WskRegistration);
        Device->WskCaptured = FALSE;
    }
    if (Device->WskRegistered) {
        /* Waits until every captured NPI is released. */
        WskDeregister(&Device->WskRegistration);
        Device->WskRegistered = FALSE;
    }
}

/* ---- adapters -------------------------------------------------------------------------------- */

/* An NDK adapter is opened by interface; a socket is given an address. The interface is the one
 * the address is assigned to. */
_IRQL_requires_(PASSIVE_LEVEL)
static NTSTATUS NksInterfaceOf(_In_ const IN_ADDR *Address, _Out_ NET_IFINDEX *IfIndex)
{
    PMIB_UNICASTIPADDRESS_TABLE table = NULL;
    NTSTATUS status;
    ULONG i;

    PAGED_CODE();
    *IfIndex = NET_IFINDEX_UNSPECIFIED;
    status = GetUnicastIpAddressTable(AF_INET, &table);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    status = STATUS_INVALID_ADDRESS;
    for (i = 0; i < table->NumEntries; ++i) {
        const MIB_UNICASTIPADDRESS_ROW *row = &table->Table[i];
        if (row->Address.si_family == AF_INET && row->Address.Ipv4.sin_addr.s_addr == Address->s_addr) {
            *IfIndex = row->InterfaceIndex;
            status = STATUS_SUCCESS;
            break;
        }
    }
    FreeMibTable(table);
    return status;
}

_IRQL_requires_(PASSIVE_LEVEL)
static VOID NksTraceAdapterOpen(_In_ const NKS_ADAPTER *Adapter, _In_ const IN_ADDR *Address)
{
    WCHAR alias[NDIS_IF_MAX_STRING_SIZE + 1];
    CHAR text[NDKSOCK_ADDRESS_CHARS];
    NET_LUID luid;

    PAGED_CODE();
    alias[0] = L'\0';
    if (NT_SUCCESS(ConvertInterfaceIndexToLuid(Adapter->IfIndex, &luid))) {
        (VOID) ConvertInterfaceLuidToAlias(&luid, alias, RTL_NUMBER_OF(alias));
    }
    RtlIpv4AddressToStringA(Address, text);
    DbgPrintEx(DPFLTR_IHVNETWORK_ID, DPFLTR_INFO_LEVEL, "ndksock: adapter of interface %lu (%ws) for %s\n",
               Adapter->IfIndex, alias, text);
}

_Use_decl_annotations_
NTSTATUS NksAdapterOpen(PNKS_DEVICE Device, const IN_ADDR *Address, PNKS_ADAPTER *Adapter)
{
    NDK_VERSION version;
    PNKS_ADAPTER adapter;
    ULONG infoSize;
    NTSTATUS status;

    PAGED_CODE();
    *Adapter = NULL;
    status = NksWskCapture(Device);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    adapter = (PNKS_ADAPTER)ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(*adapter), NKS_TAG_ADAPTER);
    if (adapter == NULL) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    adapter->References = 1;
    adapter->Device = Device;
    KeInitializeSpinLock(&adapter->Lock);
    KeInitializeEvent(&adapter->ListenerClosed, NotificationEvent, FALSE);
    status = NksInterfaceOf(Address, &adapter->IfIndex);
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    version.Major = NKS_NDK_MAJOR;
    version.Minor = NKS_NDK_MINOR;
    status = Device->NdkDispatch.WskOpenNdkAdapter(Device->WskProvider.Client, version, adapter->IfIndex,
                                                   &adapter->Ndk);
    if (!NT_SUCCESS(status)) {
        adapter->Ndk = NULL;
        goto Fail;
    }
    infoSize = sizeof(adapter->Info);
    adapter->Info.Version = version;
    status = adapter->Ndk->Dispatch->NdkQueryAdapterInfo(adapter->Ndk, &adapter->Info, &infoSize);
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    InterlockedIncrement(&Device->Stats.AdaptersOpen);
    InterlockedIncrement64(&Device->Stats.AdaptersOpened);
    NksTraceAdapterOpen(adapter, Address);
    *Adapter = adapter;
    return STATUS_SUCCESS;

Fail:
    if (adapter->Ndk != NULL) {
        Device->NdkDispatch.WskCloseNdkAdapter(Device->WskProvider.Client, adapter->Ndk);
    }
    ExFreePoolWithTag(adapter, NKS_TAG_ADAPTER);
    return status;
}

_Use_decl_annotations_
VOID NksAdapterReference(PNKS_ADAPTER Adapter)
{
    LONG references = InterlockedIncrement(&Adapter->References);
    NT_ASSERT(references > 1);
    UNREFERENCED_PARAMETER(references);
}

_Use_decl_annotations_
VOID NksAdapterRelease(PNKS_ADAPTER Adapter)
{
    PNKS_DEVICE device = Adapter->Device;

    PAGED_CODE();
    if (InterlockedDecrement(&Adapter->References) != 0) {
        return;
    }
    if (Adapter->ListenerClosing) {
        /* Its accepted connections have all closed their connectors by now, which lets the
         * listener's close complete. */
        KeWaitForSingleObject(&Adapter->ListenerClosed, Executive, KernelMode, FALSE, NULL);
    }
    /* Blocks until every callback of every object of the adapter has returned. */
    device->NdkDispatch.WskCloseNdkAdapter(device->WskProvider.Client, Adapter->Ndk);
    InterlockedDecrement(&device->Stats.AdaptersOpen);
    ExFreePoolWithTag(Adapter, NKS_TAG_ADAPTER);
}

/* ---- NDK calls that may pend ---------------------------------------------------------------- */

_Use_decl_annotations_
VOID NksCallInit(PNKS_CALL Call)
{
    KeInitializeEvent(&Call->Done, NotificationEvent, FALSE);
    Call->Status = STATUS_PENDING;
    Call->Object = NULL;
}

/* NDK_FN_REQUEST_COMPLETION */
_Use_decl_annotations_
VOID NksCallRequestDone(PVOID Context, NTSTATUS Status)
{
    PNKS_CALL call = (PNKS_CALL)Context;

    call->Status = Status;
    KeSetEvent(&call->Done, IO_NO_INCREMENT, FALSE);
}

/* NDK_FN_CREATE_COMPLETION */
_Use_decl_annotations_
VOID NksCallCreateDone(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER *Object)
{
    PNKS_CALL call = (PNKS_CALL)Context;

    call->Status = Status;
    call->Object = Object;
    KeSetEvent(&call->Done, IO_NO_INCREMENT, FALSE);
}

/* NDK_FN_CLOSE_COMPLETION */
_Use_decl_annotations_
VOID NksCallCloseDone(PVOID Context)
{
    PNKS_CALL call = (PNKS_CALL)Context;

    call->Status = STATUS_SUCCESS;
    KeSetEvent(&call->Done, IO_NO_INCREMENT, FALSE);
}

/* NDK_FN_CLOSE_COMPLETION, for a close nobody waits for. */
_Use_decl_annotations_
VOID NksCloseIgnored(PVOID Context)
{
    UNREFERENCED_PARAMETER(Context);
}

_Use_decl_annotations_
NTSTATUS NksCallFinish(PNKS_CALL Call, NTSTATUS Returned)
{
    if (Returned != STATUS_PENDING) {
        return Returned;
    }
    KeWaitForSingleObject(&Call->Done, Executive, KernelMode, FALSE, NULL);
    return Call->Status;
}

_Use_decl_annotations_
NTSTATUS NksCallFinishCreate(PNKS_CALL Call, NTSTATUS Returned, PVOID *Object)
{
    NTSTATUS status = NksCallFinish(Call, Returned);

    if (Returned == STATUS_PENDING) {
        *Object = NT_SUCCESS(status) ? Call->Object : NULL;
    }
    if (!NT_SUCCESS(status)) {
        *Object = NULL;
    }
    return status;
}

/* ---- message rings -------------------------------------------------------------------------- */

_Use_decl_annotations_
NTSTATUS NksBufferCreate(PNKS_ADAPTER Adapter, PNKS_BUFFER Buffer, SIZE_T Bytes)
{
    ULONG pages = BYTES_TO_PAGES(Bytes);
    ULONG lamSize = FIELD_OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + pages * sizeof(NDK_LOGICAL_ADDRESS);
    NDK_ADAPTER *ndk = Adapter->Ndk;
    NKS_CALL call;
    NTSTATUS status;

    PAGED_CODE();
    RtlZeroMemory(Buffer, sizeof(*Buffer));
    /* Whole pages, so the ring starts a page and no message slot straddles two. */
    Buffer->Va = (PUCHAR)ExAllocatePoolWithTagPriority(NonPagedPoolNx, ROUND_TO_PAGES(Bytes), NKS_TAG_BUFFER,
                                                       NormalPoolPriority);
    if (Buffer->Va == NULL) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    RtlZeroMemory(Buffer->Va, ROUND_TO_PAGES(Bytes));
    Buffer->Bytes = Bytes;
    Buffer->Mdl = IoAllocateMdl(Buffer->Va, (ULONG)Bytes, FALSE, FALSE, NULL);
    if (Buffer->Mdl == NULL) {
        status = STATUS_INSUFFICIENT_RESOURCES;
        goto Fail;
    }
    MmBuildMdlForNonPagedPool(Buffer->Mdl);
    Buffer->Lam = (NDK_LOGICAL_ADDRESS_MAPPING *)ExAllocatePool2(POOL_FLAG_NON_PAGED, lamSize, NKS_TAG_LAM);
    if (Buffer->Lam == NULL) {
        status = STATUS_INSUFFICIENT_RESOURCES;
        goto Fail;
    }
    NksCallInit(&call);
    status = NksCallFinish(&call, ndk->Dispatch->NdkBuildLAM(ndk, Buffer->Mdl, Bytes, NksCallRequestDone, &call,
                                                             Buffer->Lam, &lamSize, &Buffer->Fbo));
    if (!NT_SUCCESS(status)) {
        goto Fail;
    }
    NT_ASSERT(Buffer->Lam->AdapterPageCount == pages);
    NT_ASSERT(Buffer->Fbo % NKS_SLOT_SIZE == 0);
    return STATUS_SUCCESS;

Fail:
    /* A failed NdkBuildLAM has mapped nothing. */
    if (Buffer->Lam != NULL) {
        ExFreePoolWithTag(Buffer->Lam, NKS_TAG_LAM);
    }
    if (Buffer->Mdl != NULL) {
        IoFreeMdl(Buffer->Mdl);
    }
    ExFreePoolWithTag(Buffer->Va, NKS_TAG_BUFFER);
    RtlZeroMemory(Buffer, sizeof(*Buffer));
    return status;
}

_Use_decl_annotations_
VOID NksBufferDelete(PNKS_ADAPTER Adapter, PNKS_BUFFER Buffer)
{
    PAGED_CODE();
    if (Buffer->Va == NULL) {
        return;
    }
    Adapter->Ndk->Dispatch->NdkReleaseLAM(Adapter->Ndk, Buffer->Lam);
    ExFreePoolWithTag(Buffer->Lam, NKS_TAG_LAM);
    IoFreeMdl(Buffer->Mdl);
    ExFreePoolWithTag(Buffer->Va, NKS_TAG_BUFFER);
    RtlZeroMemory(Buffer, sizeof(*Buffer));
}

_Use_decl_annotations_
ULONGLONG NksBufferLogical(const NKS_BUFFER *Buffer, SIZE_T Offset)
{
    SIZE_T at = Buffer->Fbo + Offset;

    NT_ASSERT(Offset < Buffer->Bytes);
    return (ULONGLONG)Buffer->Lam->AdapterPageArray[at / PAGE_SIZE].QuadPart + at % PAGE_SIZE;
}

/* ---- addresses ------------------------------------------------------------------------------- */

_Use_decl_annotations_
NTSTATUS NksParseAddress(const uint16_t *Text, BOOLEAN PortRequired, SOCKADDR_IN *Address)
{
    size_t length;
    IN_ADDR address;
    USHORT port;
    NTSTATUS status;

    RtlZeroMemory(Address, sizeof(*Address));
    /* The program's field need not hold a terminator; the conversion must not run past it. */
    status = RtlStringCchLengthW((PCWSTR)Text, NDKSOCK_ADDRESS_CHARS, &length);
    if (!NT_SUCCESS(status)) {
        return STATUS_INVALID_PARAMETER;
    }
    status = RtlIpv4StringToAddressExW((PCWSTR)Text, TRUE, &address, &port);
    if (!NT_SUCCESS(status)) {
        return status;
    }
    if (PortRequired && port == 0) {
        return STATUS_INVALID_PARAMETER;
    }
    Address->sin_family = AF_INET;
    Address->sin_port = port; /* both in network order */
    Address->sin_addr = address;
    return STATUS_SUCCESS;
}

_Use_decl_annotations_
VOID NksFormatAddress(const SOCKADDR_IN *Address, char *Text)
{
    ULONG length = NDKSOCK_ADDRESS_CHARS;

    if (Address->sin_family != AF_INET ||
        !NT_SUCCESS(RtlIpv4AddressToStringExA(&Address->sin_addr, Address->sin_port, Text, &length))) {
        Text[0] = '\0';
    }
}
