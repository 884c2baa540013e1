/* SPDX-License-Identifier: MIT */
/* netioapi.h - ndksim's stand-in for the interface lookups NDK consumers make to find the interface
 * index that WskOpenNdkAdapter takes: the interface table (GetIfTable2, GetIfEntry2), the unicast
 * addresses (GetUnicastIpAddressTable, GetUnicastIpAddressEntry) and the LUID conversions. Each
 * simulated node is one machine: a kernel thread sees its own machine's interfaces, the software
 * loopback (index 1) and its RNIC (Environment::IfIndexOf), with the node's configured addresses. */
#ifndef NDKSIM_KERNEL_NETIOAPI_H_
#define NDKSIM_KERNEL_NETIOAPI_H_
#include "wdm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef ULONG NET_IFINDEX, *PNET_IFINDEX, IF_INDEX, *PIF_INDEX;
typedef NTSTATUS NETIO_STATUS;
#define NET_IFINDEX_UNSPECIFIED ((NET_IFINDEX)0)
typedef union _NET_LUID_LH {
    ULONG64 Value;
    struct {
        ULONG64 Reserved : 24;
        ULONG64 NetLuidIndex : 24;
        ULONG64 IfType : 16;
    } Info;
} NET_LUID_LH, NET_LUID, *PNET_LUID, IF_LUID, *PIF_LUID;
typedef ULONG NET_IF_COMPARTMENT_ID;
typedef GUID NET_IF_NETWORK_GUID;
typedef ULONG IFTYPE;
typedef ULONG SCOPE_ID;

#define IF_TYPE_ETHERNET_CSMACD 6
#define IF_TYPE_SOFTWARE_LOOPBACK 24
#define IF_MAX_STRING_SIZE 256
#define NDIS_IF_MAX_STRING_SIZE IF_MAX_STRING_SIZE /* an alias or description, without its NUL */
#define IF_MAX_PHYS_ADDRESS_LENGTH 32

typedef enum _IF_OPER_STATUS { IfOperStatusUp = 1, IfOperStatusDown, IfOperStatusTesting, IfOperStatusUnknown,
                               IfOperStatusDormant, IfOperStatusNotPresent, IfOperStatusLowerLayerDown } IF_OPER_STATUS;
typedef enum _NET_IF_ADMIN_STATUS { NET_IF_ADMIN_STATUS_UP = 1, NET_IF_ADMIN_STATUS_DOWN, NET_IF_ADMIN_STATUS_TESTING } NET_IF_ADMIN_STATUS;
typedef enum _NET_IF_MEDIA_CONNECT_STATE { MediaConnectStateUnknown, MediaConnectStateConnected,
                                           MediaConnectStateDisconnected } NET_IF_MEDIA_CONNECT_STATE;
typedef enum _NL_PREFIX_ORIGIN { IpPrefixOriginOther, IpPrefixOriginManual, IpPrefixOriginWellKnown,
                                 IpPrefixOriginDhcp, IpPrefixOriginRouterAdvertisement } NL_PREFIX_ORIGIN;
typedef enum _NL_SUFFIX_ORIGIN { NlsoOther, NlsoManual, NlsoWellKnown, NlsoDhcp, NlsoLinkLayerAddress,
                                 NlsoRandom } NL_SUFFIX_ORIGIN;
typedef enum _NL_DAD_STATE { NldsInvalid, NldsTentative, NldsDuplicate, NldsDeprecated, NldsPreferred } NL_DAD_STATE;
typedef enum _MIB_IF_TABLE_LEVEL { MibIfTableNormal, MibIfTableRaw, MibIfTableNormalWithoutStatistics } MIB_IF_TABLE_LEVEL;

typedef struct _MIB_IF_ROW2 {
    NET_LUID InterfaceLuid;
    NET_IFINDEX InterfaceIndex;
    GUID InterfaceGuid;
    WCHAR Alias[IF_MAX_STRING_SIZE + 1];
    WCHAR Description[IF_MAX_STRING_SIZE + 1];
    ULONG PhysicalAddressLength;
    UCHAR PhysicalAddress[IF_MAX_PHYS_ADDRESS_LENGTH];
    UCHAR PermanentPhysicalAddress[IF_MAX_PHYS_ADDRESS_LENGTH];
    ULONG Mtu;
    IFTYPE Type;
    ULONG TunnelType;
    ULONG MediaType;
    ULONG PhysicalMediumType;
    ULONG AccessType;
    ULONG DirectionType;
    struct {
        BOOLEAN HardwareInterface : 1;
        BOOLEAN FilterInterface : 1;
        BOOLEAN ConnectorPresent : 1;
        BOOLEAN NotAuthenticated : 1;
        BOOLEAN NotMediaConnected : 1;
        BOOLEAN Paused : 1;
        BOOLEAN LowPower : 1;
        BOOLEAN EndPointInterface : 1;
    } InterfaceAndOperStatusFlags;
    IF_OPER_STATUS OperStatus;
    NET_IF_ADMIN_STATUS AdminStatus;
    NET_IF_MEDIA_CONNECT_STATE MediaConnectState;
    NET_IF_NETWORK_GUID NetworkGuid;
    ULONG ConnectionType;
    ULONG64 TransmitLinkSpeed; /* bits per second */
    ULONG64 ReceiveLinkSpeed;
    ULONG64 InOctets;
    ULONG64 InUcastPkts;
    ULONG64 InNUcastPkts;
    ULONG64 InDiscards;
    ULONG64 InErrors;
    ULONG64 InUnknownProtos;
    ULONG64 InUcastOctets;
    ULONG64 InMulticastOctets;
    ULONG64 InBroadcastOctets;
    ULONG64 OutOctets;
    ULONG64 OutUcastPkts;
    ULONG64 OutNUcastPkts;
    ULONG64 OutDiscards;
    ULONG64 OutErrors;
    ULONG64 OutUcastOctets;
    ULONG64 OutMulticastOctets;
    ULONG64 OutBroadcastOctets;
    ULONG64 OutQLen;
} MIB_IF_ROW2, *PMIB_IF_ROW2;

typedef struct _MIB_IF_TABLE2 {
    ULONG NumEntries;
    MIB_IF_ROW2 Table[ANYSIZE_ARRAY];
} MIB_IF_TABLE2, *PMIB_IF_TABLE2;

typedef struct _MIB_UNICASTIPADDRESS_ROW {
    SOCKADDR_INET Address;
    NET_LUID InterfaceLuid;
    NET_IFINDEX InterfaceIndex;
    NL_PREFIX_ORIGIN PrefixOrigin;
    NL_SUFFIX_ORIGIN SuffixOrigin;
    ULONG ValidLifetime;
    ULONG PreferredLifetime;
    UINT8 OnLinkPrefixLength;
    BOOLEAN SkipAsSource;
    NL_DAD_STATE DadState;
    SCOPE_ID ScopeId;
    LARGE_INTEGER CreationTimeStamp;
} MIB_UNICASTIPADDRESS_ROW, *PMIB_UNICASTIPADDRESS_ROW;

typedef struct _MIB_UNICASTIPADDRESS_TABLE {
    ULONG NumEntries;
    MIB_UNICASTIPADDRESS_ROW Table[ANYSIZE_ARRAY];
} MIB_UNICASTIPADDRESS_TABLE, *PMIB_UNICASTIPADDRESS_TABLE;

/* Tables come from pool and go back with FreeMibTable. Lookups by index or LUID that match no
 * interface of the calling thread's machine return STATUS_NOT_FOUND; NULL arguments and unknown
 * families return STATUS_INVALID_PARAMETER. All at PASSIVE_LEVEL. */
NETIO_STATUS GetIfTable2(PMIB_IF_TABLE2 *Table);
NETIO_STATUS GetIfTable2Ex(MIB_IF_TABLE_LEVEL Level, PMIB_IF_TABLE2 *Table);
NETIO_STATUS GetIfEntry2(PMIB_IF_ROW2 Row);
NETIO_STATUS GetUnicastIpAddressTable(ADDRESS_FAMILY Family, PMIB_UNICASTIPADDRESS_TABLE *Table);
NETIO_STATUS GetUnicastIpAddressEntry(PMIB_UNICASTIPADDRESS_ROW Row);
VOID FreeMibTable(PVOID Memory);
NETIO_STATUS ConvertInterfaceIndexToLuid(NET_IFINDEX InterfaceIndex, PNET_LUID InterfaceLuid);
NETIO_STATUS ConvertInterfaceLuidToIndex(const NET_LUID *InterfaceLuid, PNET_IFINDEX InterfaceIndex);
/* Alias ("Ethernet 1") and name ("ethernet_10") conversions. Length counts WCHARs, the NUL
 * included; a buffer too short gets STATUS_BUFFER_TOO_SMALL (docs/kernel.md says why). */
NETIO_STATUS ConvertInterfaceLuidToAlias(const NET_LUID *InterfaceLuid, PWSTR InterfaceAlias, SIZE_T Length);
NETIO_STATUS ConvertInterfaceAliasToLuid(const WCHAR *InterfaceAlias, PNET_LUID InterfaceLuid);
NETIO_STATUS ConvertInterfaceLuidToNameW(const NET_LUID *InterfaceLuid, PWSTR InterfaceName, SIZE_T Length);
NETIO_STATUS ConvertInterfaceNameToLuidW(const WCHAR *InterfaceName, PNET_LUID InterfaceLuid);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* NDKSIM_KERNEL_NETIOAPI_H_ */
