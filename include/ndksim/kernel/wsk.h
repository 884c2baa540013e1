/* SPDX-License-Identifier: MIT */
/* wsk.h - ndksim's stand-in for Winsock Kernel, as far as NDK consumers use it: registration as a
 * WSK client, capturing the provider NPI, and WskControlClient, through which the NDK extension
 * (wskndk.h) is fetched. WSK sockets are not part of the kernel environment: WskSocket,
 * WskSocketConnect, WskGetAddressInfo and WskGetNameInfo return STATUS_NOT_SUPPORTED without
 * touching their IRP. */
#ifndef NDKSIM_KERNEL_WSK_H_
#define NDKSIM_KERNEL_WSK_H_
#include "netioapi.h"
#include "wdm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WSKAPI

#define MAKE_WSK_VERSION(Mj, Mn) ((USHORT)((Mj) << 8) | (USHORT)((Mn) & 0xff))
#define WSK_MAJOR_VERSION(V) ((UCHAR)((V) >> 8))
#define WSK_MINOR_VERSION(V) ((UCHAR)(V))
#define WSK_FIRST_VERSION MAKE_WSK_VERSION(1, 0)
#define WSK_NO_WAIT 0
#define WSK_INFINITE_WAIT 0xffffffff

/* The WSK network programming interface's identifier (netiodef.h's NPIID), which event callback
 * controls name. */
typedef GUID NPIID;
typedef const NPIID *PNPIID;
extern const NPIID NPI_WSK_INTERFACE_ID;

typedef struct _WSK_CLIENT WSK_CLIENT, *PWSK_CLIENT;
typedef NTSTATUS(WSKAPI *PFN_WSK_CLIENT_EVENT)(PVOID ClientContext, ULONG EventType, PVOID Information,
                                                 SIZE_T InformationLength);
typedef struct _WSK_CLIENT_DISPATCH {
    USHORT Version;
    USHORT Reserved;
    PFN_WSK_CLIENT_EVENT WskClientEvent;
} WSK_CLIENT_DISPATCH, *PWSK_CLIENT_DISPATCH;
typedef struct _WSK_CLIENT_NPI {
    PVOID ClientContext;
    const WSK_CLIENT_DISPATCH *Dispatch;
} WSK_CLIENT_NPI, *PWSK_CLIENT_NPI;
typedef struct _WSK_REGISTRATION {
    ULONGLONG ReservedRegistrationState;
    PVOID ReservedRegistrationContext;
    KSPIN_LOCK ReservedRegistrationLock;
} WSK_REGISTRATION, *PWSK_REGISTRATION;

typedef NTSTATUS(WSKAPI *PFN_WSK_SOCKET)(PWSK_CLIENT Client, ADDRESS_FAMILY AddressFamily, USHORT SocketType,
                                          ULONG Protocol, ULONG Flags, PVOID SocketContext, const VOID *Dispatch,
                                          PEPROCESS OwningProcess, PETHREAD OwningThread, PVOID SecurityDescriptor,
                                          PIRP Irp);
typedef NTSTATUS(WSKAPI *PFN_WSK_SOCKET_CONNECT)(PWSK_CLIENT Client, USHORT SocketType, ULONG Protocol,
                                                  PSOCKADDR LocalAddress, PSOCKADDR RemoteAddress, ULONG Flags,
                                                  PVOID SocketContext, const VOID *Dispatch, PEPROCESS OwningProcess,
                                                  PETHREAD OwningThread, PVOID SecurityDescriptor, PIRP Irp);
typedef NTSTATUS(WSKAPI *PFN_WSK_CONTROL_CLIENT)(PWSK_CLIENT Client, ULONG ControlCode, SIZE_T InputSize,
                                                  PVOID InputBuffer, SIZE_T OutputSize, PVOID OutputBuffer,
                                                  SIZE_T *OutputSizeReturned, PIRP Irp);
typedef NTSTATUS(WSKAPI *PFN_WSK_GET_ADDRESS_INFO)(PWSK_CLIENT Client, PUNICODE_STRING NodeName,
                                                    PUNICODE_STRING ServiceName, ULONG NameSpace, GUID *Provider,
                                                    PVOID Hints, PVOID *Result, PEPROCESS OwningProcess,
                                                    PETHREAD OwningThread, PIRP Irp);
typedef VOID(WSKAPI *PFN_WSK_FREE_ADDRESS_INFO)(PWSK_CLIENT Client, PVOID AddrInfo);
typedef NTSTATUS(WSKAPI *PFN_WSK_GET_NAME_INFO)(PWSK_CLIENT Client, PSOCKADDR SockAddr, ULONG SockAddrLength,
                                                 PUNICODE_STRING NodeName, PUNICODE_STRING ServiceName, ULONG Flags,
                                                 PEPROCESS OwningProcess, PETHREAD OwningThread, PIRP Irp);
typedef struct _WSK_PROVIDER_DISPATCH {
    USHORT Version;
    USHORT Reserved;
    PFN_WSK_SOCKET WskSocket;
    PFN_WSK_SOCKET_CONNECT WskSocketConnect;
    PFN_WSK_CONTROL_CLIENT WskControlClient;
    PFN_WSK_GET_ADDRESS_INFO WskGetAddressInfo;
    PFN_WSK_FREE_ADDRESS_INFO WskFreeAddressInfo;
    PFN_WSK_GET_NAME_INFO WskGetNameInfo;
} WSK_PROVIDER_DISPATCH, *PWSK_PROVIDER_DISPATCH;
typedef struct _WSK_PROVIDER_NPI {
    PWSK_CLIENT Client;
    const WSK_PROVIDER_DISPATCH *Dispatch;
} WSK_PROVIDER_NPI, *PWSK_PROVIDER_NPI;

/* WskRegister: STATUS_NOINTERFACE for a client dispatch whose major version is not 1. WskCapture-
 * ProviderNPI: the subsystem is always ready; STATUS_DEVICE_NOT_READY after WskDeregister.
 * WskDeregister waits (in simulated time) until every captured NPI is released. */
NTSTATUS WskRegister(PWSK_CLIENT_NPI WskClientNpi, PWSK_REGISTRATION WskRegistration);
NTSTATUS WskCaptureProviderNPI(PWSK_REGISTRATION WskRegistration, ULONG WaitTimeout, PWSK_PROVIDER_NPI WskProviderNpi);
VOID WskReleaseProviderNPI(PWSK_REGISTRATION WskRegistration);
VOID WskDeregister(PWSK_REGISTRATION WskRegistration);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* NDKSIM_KERNEL_WSK_H_ */
