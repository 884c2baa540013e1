// SPDX-License-Identifier: MIT
// Winsock Kernel registration and its NDK extension, and the interface lookups of netioapi.h: the
// real way a kernel consumer finds and opens an NDK adapter. A machine's interfaces are the
// software loopback (index 1) and one per RNIC: every node in the machine (Environment::AddRnic;
// by default a node is a machine of its own), each with its own index (Environment::IfIndexOf).
#include <algorithm>
#include <cstring>
#include <string>

#include <arpa/inet.h>
#include <fmt/format.h>

#include "kernel_state.h"
#include "site_macros_off.h"

using ndksim::kernel::CurrentEnvironment;
using ndksim::kernel::DispatcherObject;
using ndksim::kernel::OpenAdapter;
using ndksim::kernel::Site;
using ndksim::kernel::WskRegistrationRecord;
using Impl = ndksim::kernel::Environment::Impl;

namespace {

constexpr NET_IFINDEX kLoopbackIndex = 1;
constexpr ULONGLONG kRegistered = 0x4B53574B53444E31ULL;  // the registration's "registered" mark

// The WSK_CLIENT a captured NPI names: the registration it came from.
PWSK_CLIENT ClientOf(PWSK_REGISTRATION registration) { return reinterpret_cast<PWSK_CLIENT>(registration); }

WskRegistrationRecord* RecordOf(Impl& s, PWSK_CLIENT client) {
  const auto it = s.wsk.find(reinterpret_cast<PWSK_REGISTRATION>(client));
  return it == s.wsk.end() ? nullptr : it->second.get();
}

ndksim::Node* Machine(Impl& s) { return s.Current().machine; }

NTSTATUS WskSocketUnsupported(PWSK_CLIENT, ADDRESS_FAMILY, USHORT, ULONG, ULONG, PVOID, const VOID*, PEPROCESS,
                              PETHREAD, PVOID, PIRP) {
  return STATUS_NOT_SUPPORTED;
}
NTSTATUS WskSocketConnectUnsupported(PWSK_CLIENT, USHORT, ULONG, PSOCKADDR, PSOCKADDR, ULONG, PVOID, const VOID*,
                                     PEPROCESS, PETHREAD, PVOID, PIRP) {
  return STATUS_NOT_SUPPORTED;
}
NTSTATUS WskGetAddressInfoUnsupported(PWSK_CLIENT, PUNICODE_STRING, PUNICODE_STRING, ULONG, GUID*, PVOID, PVOID*,
                                      PEPROCESS, PETHREAD, PIRP) {
  return STATUS_NOT_SUPPORTED;
}
VOID WskFreeAddressInfoUnsupported(PWSK_CLIENT, PVOID) {}
NTSTATUS WskGetNameInfoUnsupported(PWSK_CLIENT, PSOCKADDR, ULONG, PUNICODE_STRING, PUNICODE_STRING, ULONG, PEPROCESS,
                                   PETHREAD, PIRP) {
  return STATUS_NOT_SUPPORTED;
}

struct Interface {
  NET_IFINDEX index;
  NET_LUID luid;
  ndksim::Node* rnic;  // nullptr: the loopback
};

// The machine's interfaces: the loopback, then one per RNIC (every node of the fabric in the
// machine of `machine`, Environment::AddRnic), in the order the nodes were added.
std::vector<Interface> InterfacesOf(Impl& s, const ndksim::Node* machine) {
  std::vector<Interface> list;
  Interface loopback{};
  loopback.index = kLoopbackIndex;
  loopback.luid.Info.IfType = IF_TYPE_SOFTWARE_LOOPBACK;
  loopback.luid.Info.NetLuidIndex = 1;
  list.push_back(loopback);
  if (machine == nullptr) return list;
  for (std::size_t n = 0; n < s.fabric.NodeCount(); ++n) {
    ndksim::Node& node = s.fabric.GetNode(n);
    if (s.MachineOf(&node) != s.MachineOf(machine)) continue;
    Interface nic{};
    nic.index = Impl::IfIndexOf(node);
    nic.luid.Info.IfType = IF_TYPE_ETHERNET_CSMACD;
    nic.luid.Info.NetLuidIndex = nic.index;
    nic.rnic = &node;
    list.push_back(nic);
  }
  return list;
}

// Windows's alias for the interface ("Ethernet <n>", by the node's index), and its name
// (ConvertInterfaceLuidToNameW: the type's name, then the LUID's index).
std::string AliasOf(const Interface& i) {
  return i.rnic == nullptr ? "Loopback Pseudo-Interface 1" : fmt::format("Ethernet {}", i.rnic->Index() + 1);
}
std::string NameOf(const Interface& i) {
  return fmt::format("{}_{}", i.rnic == nullptr ? "loopback" : "ethernet", i.luid.Info.NetLuidIndex);
}

const Interface* FindInterface(const std::vector<Interface>& list, const NET_LUID* luid, NET_IFINDEX index) {
  for (const Interface& i : list) {
    if ((luid != nullptr && luid->Value != 0 && i.luid.Value == luid->Value) ||
        ((luid == nullptr || luid->Value == 0) && i.index == index)) {
      return &i;
    }
  }
  return nullptr;
}

NTSTATUS WskOpenNdkAdapter(PWSK_CLIENT Client, NDK_VERSION NdkVersion, NET_IFINDEX IfIndex, NDK_ADAPTER** ppNdkAdapter) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "WskOpenNdkAdapter", at);
  if (RecordOf(s, Client) == nullptr || ppNdkAdapter == nullptr) return STATUS_INVALID_PARAMETER;
  ndksim::Node* machine = Machine(s);
  if (machine == nullptr) return STATUS_NOT_FOUND;
  if (IfIndex == kLoopbackIndex) return STATUS_NOT_SUPPORTED;
  // The machine's RNIC with that interface index.
  const std::vector<Interface> list = InterfacesOf(s, machine);
  const Interface* i = FindInterface(list, nullptr, IfIndex);
  if (i == nullptr || i->rnic == nullptr) return STATUS_NOT_FOUND;
  ndksim::Node* rnic = i->rnic;
  NDK_ADAPTER* adapter = nullptr;
  const NTSTATUS status = rnic->OpenAdapter(NdkVersion, &adapter);
  if (!NT_SUCCESS(status)) return status;
  s.adapters.push_back(OpenAdapter{adapter, rnic, s.Current().driver});
  s.ndk.AdoptAdapter(adapter, s.Current().driver, machine);
  *ppNdkAdapter = adapter;
  return STATUS_SUCCESS;
}

VOID WskCloseNdkAdapter(PWSK_CLIENT Client, NDK_ADAPTER* pNdkAdapter) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  (void)Client;
  s.RequireIrqlExactly(PASSIVE_LEVEL, "WskCloseNdkAdapter", at);
  const auto it = std::find_if(s.adapters.begin(), s.adapters.end(),
                               [&](const OpenAdapter& a) { return a.adapter == pNdkAdapter; });
  if (it == s.adapters.end()) {
    s.Fail("WSK", "WskCloseNdkAdapter of an adapter that is not open (closed twice?)", at);
    return;
  }
  ndksim::Node* node = it->node;
  s.adapters.erase(it);
  ndksim::kernel::NdkObjectRecord* record = ndksim::kernel::RecordOf(&pNdkAdapter->Header);
  node->CloseAdapter(pNdkAdapter);
  s.ndk.AdapterClosed(record);
}

const WSK_PROVIDER_NDK_DISPATCH kNdkDispatch = {&WskOpenNdkAdapter, &WskCloseNdkAdapter};

NTSTATUS WskControlClient(PWSK_CLIENT Client, ULONG ControlCode, SIZE_T InputSize, PVOID InputBuffer, SIZE_T OutputSize,
                          PVOID OutputBuffer, SIZE_T* OutputSizeReturned, PIRP Irp) {
  (void)InputBuffer;
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "WskControlClient", s.TakeSite());
  if (RecordOf(s, Client) == nullptr) return STATUS_INVALID_PARAMETER;
  if (ControlCode != WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH) return STATUS_NOT_SUPPORTED;
  if (Irp != nullptr) return STATUS_NOT_SUPPORTED;
  if (InputSize != 0 || OutputBuffer == nullptr || OutputSize < sizeof(WSK_PROVIDER_NDK_DISPATCH)) {
    return STATUS_INVALID_PARAMETER;
  }
  std::memcpy(OutputBuffer, &kNdkDispatch, sizeof(kNdkDispatch));
  if (OutputSizeReturned != nullptr) *OutputSizeReturned = sizeof(kNdkDispatch);
  return STATUS_SUCCESS;
}

const WSK_PROVIDER_DISPATCH kProviderDispatch = {
    MAKE_WSK_VERSION(1, 0),        0, &WskSocketUnsupported, &WskSocketConnectUnsupported, &WskControlClient,
    &WskGetAddressInfoUnsupported, &WskFreeAddressInfoUnsupported, &WskGetNameInfoUnsupported};

// ---- interfaces ----

void SetText(WCHAR* out, const std::string& text) {
  std::size_t i = 0;
  for (; i < text.size() && i < IF_MAX_STRING_SIZE; ++i) out[i] = static_cast<WCHAR>(text[i]);
  out[i] = 0;
}

void FillRow(Impl& s, const Interface& i, MIB_IF_ROW2* row) {
  std::memset(row, 0, sizeof(*row));
  row->InterfaceLuid = i.luid;
  row->InterfaceIndex = i.index;
  row->InterfaceGuid.Data1 = i.index;
  row->AdminStatus = NET_IF_ADMIN_STATUS_UP;
  row->OperStatus = IfOperStatusUp;
  row->MediaConnectState = MediaConnectStateConnected;
  row->InterfaceAndOperStatusFlags.ConnectorPresent = i.rnic != nullptr ? 1 : 0;
  row->InterfaceAndOperStatusFlags.HardwareInterface = i.rnic != nullptr ? 1 : 0;
  SetText(row->Alias, AliasOf(i));
  if (i.rnic == nullptr) {
    SetText(row->Description, "Software Loopback Interface 1");
    row->Type = IF_TYPE_SOFTWARE_LOOPBACK;
    row->Mtu = 0xFFFFFFFFu;
    row->TransmitLinkSpeed = row->ReceiveLinkSpeed = 1'073'741'824'000ULL;
    return;
  }
  const ndksim::Node& rnic = *i.rnic;
  SetText(row->Description, fmt::format("ndksim simulated RNIC ({}, node '{}')", s.fabric.Profile().name, rnic.Name()));
  row->Type = IF_TYPE_ETHERNET_CSMACD;
  row->Mtu = 1500;
  row->PhysicalMediumType = 14;  // NdisPhysicalMedium802_3
  row->PhysicalAddressLength = 6;
  const UCHAR mac[6] = {0x02, 0x4E, 0x44, 0x4B, static_cast<UCHAR>(rnic.Index() >> 8), static_cast<UCHAR>(rnic.Index())};
  std::memcpy(row->PhysicalAddress, mac, 6);
  std::memcpy(row->PermanentPhysicalAddress, mac, 6);
  const auto bps = static_cast<ULONG64>(s.fabric.Profile().link_rate.bits_per_second);
  row->TransmitLinkSpeed = row->ReceiveLinkSpeed = bps;
}

bool ParseAddress(const std::string& text, SOCKADDR_INET* out) {
  std::memset(out, 0, sizeof(*out));
  if (inet_pton(AF_INET, text.c_str(), &out->Ipv4.sin_addr) == 1) {
    out->Ipv4.sin_family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), &out->Ipv6.sin6_addr) == 1) {
    out->Ipv6.sin6_family = AF_INET6;
    return true;
  }
  return false;
}

std::vector<MIB_UNICASTIPADDRESS_ROW> AddressesOf(Impl& s, const ndksim::Node* machine, ADDRESS_FAMILY family) {
  std::vector<MIB_UNICASTIPADDRESS_ROW> rows;
  const auto add = [&](const std::string& text, const Interface& i) {
    MIB_UNICASTIPADDRESS_ROW row{};
    if (!ParseAddress(text, &row.Address)) return;
    if (family != AF_UNSPEC && row.Address.si_family != family) return;
    row.InterfaceLuid = i.luid;
    row.InterfaceIndex = i.index;
    row.PrefixOrigin = IpPrefixOriginManual;
    row.SuffixOrigin = NlsoManual;
    row.ValidLifetime = row.PreferredLifetime = 0xFFFFFFFFu;
    row.OnLinkPrefixLength = row.Address.si_family == AF_INET ? 24 : 64;
    row.DadState = NldsPreferred;
    rows.push_back(row);
  };
  const std::vector<Interface> list = InterfacesOf(s, machine);
  add("127.0.0.1", list[0]);
  add("::1", list[0]);
  for (const Interface& i : list) {
    if (i.rnic == nullptr) continue;
    for (const std::string& a : i.rnic->Addresses()) add(a, i);
  }
  return rows;
}

template <typename Table, typename Row>
Table* NewTable(Impl& s, const std::vector<Row>& rows) {
  const std::size_t bytes = offsetof(Table, Table) + std::max<std::size_t>(rows.size(), 1) * sizeof(Row);
  auto* table = static_cast<Table*>(s.Allocate(bytes, 0x4D464E49 /* 'INFM' */, true, false, s.TakeSite(),
                                                  ndksim::kernel::BlockKind::kPool));
  if (table == nullptr) return nullptr;
  table->NumEntries = static_cast<ULONG>(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) table->Table[i] = rows[i];
  return table;
}

// Copies `text` and its NUL into `out` of `length` WCHARs.
NETIO_STATUS CopyText(const std::string& text, PWSTR out, SIZE_T length) {
  if (length < text.size() + 1) return STATUS_BUFFER_TOO_SMALL;
  for (std::size_t c = 0; c < text.size(); ++c) out[c] = static_cast<WCHAR>(text[c]);
  out[text.size()] = 0;
  return STATUS_SUCCESS;
}

// Whether the NUL-terminated `wide` reads `text`, character for character (ASCII).
bool SameText(const WCHAR* wide, const std::string& text) {
  std::size_t c = 0;
  for (; c < text.size(); ++c) {
    if (wide[c] != static_cast<WCHAR>(static_cast<unsigned char>(text[c]))) return false;
  }
  return wide[c] == 0;
}

// The LUID-to-text and text-to-LUID conversions, by `text_of` (AliasOf or NameOf).
NETIO_STATUS LuidToText(std::string (*text_of)(const Interface&), const NET_LUID* luid, PWSTR out, SIZE_T length) {
  Impl& s = CurrentEnvironment();
  if (luid == nullptr || out == nullptr || luid->Value == 0) return STATUS_INVALID_PARAMETER;
  const std::vector<Interface> list = InterfacesOf(s, Machine(s));
  const Interface* i = FindInterface(list, luid, 0);
  if (i == nullptr) return STATUS_INVALID_PARAMETER;
  return CopyText(text_of(*i), out, length);
}

NETIO_STATUS TextToLuid(std::string (*text_of)(const Interface&), const WCHAR* text, PNET_LUID luid) {
  Impl& s = CurrentEnvironment();
  if (text == nullptr || luid == nullptr) return STATUS_INVALID_PARAMETER;
  for (const Interface& i : InterfacesOf(s, Machine(s))) {
    if (SameText(text, text_of(i))) {
      *luid = i.luid;
      return STATUS_SUCCESS;
    }
  }
  return STATUS_INVALID_PARAMETER;
}

}  // namespace

extern "C" {
const NPIID NPI_WSK_INTERFACE_ID = {0x2227E803, 0x8D8B, 0x11D4, {0xAB, 0xAD, 0x00, 0x90, 0x27, 0x71, 0x9E, 0x09}};
}

extern "C" {

NETIO_STATUS ConvertInterfaceLuidToAlias(const NET_LUID* InterfaceLuid, PWSTR InterfaceAlias, SIZE_T Length) {
  return LuidToText(&AliasOf, InterfaceLuid, InterfaceAlias, Length);
}

NETIO_STATUS ConvertInterfaceAliasToLuid(const WCHAR* InterfaceAlias, PNET_LUID InterfaceLuid) {
  return TextToLuid(&AliasOf, InterfaceAlias, InterfaceLuid);
}

NETIO_STATUS ConvertInterfaceLuidToNameW(const NET_LUID* InterfaceLuid, PWSTR InterfaceName, SIZE_T Length) {
  return LuidToText(&NameOf, InterfaceLuid, InterfaceName, Length);
}

NETIO_STATUS ConvertInterfaceNameToLuidW(const WCHAR* InterfaceName, PNET_LUID InterfaceLuid) {
  return TextToLuid(&NameOf, InterfaceName, InterfaceLuid);
}

NTSTATUS WskRegister(PWSK_CLIENT_NPI WskClientNpi, PWSK_REGISTRATION WskRegistration) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "WskRegister", s.TakeSite());
  if (WskClientNpi == nullptr || WskRegistration == nullptr || WskClientNpi->Dispatch == nullptr) {
    return STATUS_INVALID_PARAMETER;
  }
  if (WSK_MAJOR_VERSION(WskClientNpi->Dispatch->Version) != 1) return STATUS_NOINTERFACE;
  auto record = std::make_unique<WskRegistrationRecord>();
  record->driver = s.Current().driver;
  ndksim::kernel::Dispatcher::InitializeEvent(record->released, DispatcherObject::Kind::kNotificationEvent, true);
  s.wsk[WskRegistration] = std::move(record);
  std::memset(WskRegistration, 0, sizeof(*WskRegistration));
  WskRegistration->ReservedRegistrationState = kRegistered;
  return STATUS_SUCCESS;
}

NTSTATUS WskCaptureProviderNPI(PWSK_REGISTRATION WskRegistration, ULONG WaitTimeout, PWSK_PROVIDER_NPI WskProviderNpi) {
  (void)WaitTimeout;  // the subsystem is always ready: no wait is needed
  Impl& s = CurrentEnvironment();
  s.RequireIrqlAtMost(WaitTimeout == WSK_NO_WAIT ? DISPATCH_LEVEL : PASSIVE_LEVEL, "WskCaptureProviderNPI", s.TakeSite());
  const auto it = s.wsk.find(WskRegistration);
  if (it == s.wsk.end() || WskProviderNpi == nullptr) return STATUS_INVALID_PARAMETER;
  if (it->second->deregistered) return STATUS_DEVICE_NOT_READY;
  ++it->second->captures;
  (void)ndksim::kernel::Dispatcher::ResetEvent(it->second->released);
  WskProviderNpi->Client = ClientOf(WskRegistration);
  WskProviderNpi->Dispatch = &kProviderDispatch;
  return STATUS_SUCCESS;
}

VOID WskReleaseProviderNPI(PWSK_REGISTRATION WskRegistration) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  const auto it = s.wsk.find(WskRegistration);
  if (it == s.wsk.end() || it->second->captures == 0) {
    s.Fail("WSK", "WskReleaseProviderNPI without a capture to release", at);
    return;
  }
  if (--it->second->captures == 0) s.dispatcher.SetEvent(it->second->released);
}

VOID WskDeregister(PWSK_REGISTRATION WskRegistration) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "WskDeregister", at);
  const auto it = s.wsk.find(WskRegistration);
  if (it == s.wsk.end() || it->second->deregistered) {
    s.Fail("WSK", "WskDeregister of a registration that is not registered (deregistered twice?)", at);
    return;
  }
  it->second->deregistered = true;
  // Blocks until every captured NPI has been released.
  DispatcherObject* const objects[] = {&it->second->released};
  (void)s.Wait(objects, ndksim::kernel::WaitType::kAny, nullptr, at, "WskDeregister");
  WskRegistration->ReservedRegistrationState = 0;
}

NETIO_STATUS GetIfTable2Ex(MIB_IF_TABLE_LEVEL Level, PMIB_IF_TABLE2* Table) {
  (void)Level;
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "GetIfTable2", s.site);
  if (Table == nullptr) return STATUS_INVALID_PARAMETER;
  std::vector<MIB_IF_ROW2> rows;
  for (const Interface& i : InterfacesOf(s, Machine(s))) {
    MIB_IF_ROW2 row;
    FillRow(s, i, &row);
    rows.push_back(row);
  }
  *Table = NewTable<MIB_IF_TABLE2>(s, rows);
  return *Table != nullptr ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
}

NETIO_STATUS GetIfTable2(PMIB_IF_TABLE2* Table) { return GetIfTable2Ex(MibIfTableNormal, Table); }

NETIO_STATUS GetIfEntry2(PMIB_IF_ROW2 Row) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "GetIfEntry2", s.TakeSite());
  if (Row == nullptr) return STATUS_INVALID_PARAMETER;
  const std::vector<Interface> list = InterfacesOf(s, Machine(s));
  const Interface* i = FindInterface(list, &Row->InterfaceLuid, Row->InterfaceIndex);
  if (i == nullptr) return STATUS_NOT_FOUND;
  FillRow(s, *i, Row);
  return STATUS_SUCCESS;
}

NETIO_STATUS GetUnicastIpAddressTable(ADDRESS_FAMILY Family, PMIB_UNICASTIPADDRESS_TABLE* Table) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "GetUnicastIpAddressTable", s.site);
  if (Table == nullptr || (Family != AF_UNSPEC && Family != AF_INET && Family != AF_INET6)) {
    return STATUS_INVALID_PARAMETER;
  }
  const std::vector<MIB_UNICASTIPADDRESS_ROW> rows = AddressesOf(s, Machine(s), Family);
  if (rows.empty()) return STATUS_NOT_FOUND;
  *Table = NewTable<MIB_UNICASTIPADDRESS_TABLE>(s, rows);
  return *Table != nullptr ? STATUS_SUCCESS : STATUS_INSUFFICIENT_RESOURCES;
}

NETIO_STATUS GetUnicastIpAddressEntry(PMIB_UNICASTIPADDRESS_ROW Row) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "GetUnicastIpAddressEntry", s.TakeSite());
  if (Row == nullptr) return STATUS_INVALID_PARAMETER;
  for (const MIB_UNICASTIPADDRESS_ROW& r : AddressesOf(s, Machine(s), Row->Address.si_family)) {
    const bool same_interface = (Row->InterfaceLuid.Value != 0 && Row->InterfaceLuid.Value == r.InterfaceLuid.Value) ||
                                (Row->InterfaceLuid.Value == 0 && Row->InterfaceIndex == r.InterfaceIndex);
    const bool same_address =
        r.Address.si_family == AF_INET
            ? std::memcmp(&r.Address.Ipv4.sin_addr, &Row->Address.Ipv4.sin_addr, sizeof(in_addr)) == 0
            : std::memcmp(&r.Address.Ipv6.sin6_addr, &Row->Address.Ipv6.sin6_addr, sizeof(in6_addr)) == 0;
    if (same_interface && same_address) {
      *Row = r;
      return STATUS_SUCCESS;
    }
  }
  return STATUS_NOT_FOUND;
}

VOID FreeMibTable(PVOID Memory) {
  Impl& s = CurrentEnvironment();
  s.Free(Memory, 0x4D464E49, s.TakeSite(), "FreeMibTable");
}

NETIO_STATUS ConvertInterfaceIndexToLuid(NET_IFINDEX InterfaceIndex, PNET_LUID InterfaceLuid) {
  Impl& s = CurrentEnvironment();
  if (InterfaceLuid == nullptr) return STATUS_INVALID_PARAMETER;
  const std::vector<Interface> list = InterfacesOf(s, Machine(s));
  const Interface* i = FindInterface(list, nullptr, InterfaceIndex);
  if (i == nullptr) {
    InterfaceLuid->Value = 0;
    return STATUS_NOT_FOUND;
  }
  *InterfaceLuid = i->luid;
  return STATUS_SUCCESS;
}

NETIO_STATUS ConvertInterfaceLuidToIndex(const NET_LUID* InterfaceLuid, PNET_IFINDEX InterfaceIndex) {
  Impl& s = CurrentEnvironment();
  if (InterfaceLuid == nullptr || InterfaceIndex == nullptr) return STATUS_INVALID_PARAMETER;
  const std::vector<Interface> list = InterfacesOf(s, Machine(s));
  const Interface* i = FindInterface(list, InterfaceLuid, 0);
  if (i == nullptr || InterfaceLuid->Value == 0) {
    *InterfaceIndex = NET_IFINDEX_UNSPECIFIED;
    return STATUS_NOT_FOUND;
  }
  *InterfaceIndex = i->index;
  return STATUS_SUCCESS;
}

}  // extern "C"
