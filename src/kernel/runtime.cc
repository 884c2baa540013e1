// SPDX-License-Identifier: MIT
// The rest of the kernel runtime library that drivers call: interlocked singly linked lists,
// counted-string conversions and copies, GUID text, and the system error log.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "kernel_state.h"
#include "site_macros_off.h"

using Impl = ndksim::kernel::Environment::Impl;

namespace {

// Pool for the strings the runtime allocates for a driver ('Strg' in its pool usage), freed by
// RtlFreeUnicodeString and RtlFreeAnsiString.
constexpr ULONG kStringTag = 0x67727453;  // 'Strg'

// Null-terminates a counted string's buffer when a terminator fits behind its Length.
template <typename Char, typename Counted>
void TerminateIfRoom(Counted* s) {
  if (s->Length + sizeof(Char) <= s->MaximumLength) s->Buffer[s->Length / sizeof(Char)] = 0;
}

int DigitValue(WCHAR c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

}  // namespace

extern "C" {

// ---- SLIST ----

VOID InitializeSListHead(PSLIST_HEADER SListHead) { std::memset(SListHead, 0, sizeof(*SListHead)); }

PSLIST_ENTRY InterlockedPushEntrySList(PSLIST_HEADER SListHead, PSLIST_ENTRY SListEntry) {
  PSLIST_ENTRY first = __atomic_load_n(&SListHead->Header.Next, __ATOMIC_ACQUIRE);
  do {
    SListEntry->Next = first;
  } while (!__atomic_compare_exchange_n(&SListHead->Header.Next, &first, SListEntry, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
  __atomic_add_fetch(&SListHead->Header.Depth, 1, __ATOMIC_RELAXED);
  return first;
}

PSLIST_ENTRY InterlockedPopEntrySList(PSLIST_HEADER SListHead) {
  PSLIST_ENTRY first = __atomic_load_n(&SListHead->Header.Next, __ATOMIC_ACQUIRE);
  while (first != nullptr &&
         !__atomic_compare_exchange_n(&SListHead->Header.Next, &first, first->Next, true, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
  }
  if (first != nullptr) __atomic_sub_fetch(&SListHead->Header.Depth, 1, __ATOMIC_RELAXED);
  return first;
}

PSLIST_ENTRY InterlockedFlushSList(PSLIST_HEADER SListHead) {
  PSLIST_ENTRY first = __atomic_exchange_n(&SListHead->Header.Next, nullptr, __ATOMIC_ACQ_REL);
  __atomic_store_n(&SListHead->Header.Depth, 0, __ATOMIC_RELAXED);
  return first;
}

USHORT QueryDepthSList(PSLIST_HEADER SListHead) {
  return static_cast<USHORT>(__atomic_load_n(&SListHead->Header.Depth, __ATOMIC_RELAXED));
}

// ---- counted strings ----

VOID RtlCopyUnicodeString(PUNICODE_STRING DestinationString, PCUNICODE_STRING SourceString) {
  if (SourceString == nullptr) {
    DestinationString->Length = 0;
    return;
  }
  const USHORT n = std::min(SourceString->Length, DestinationString->MaximumLength);
  std::memmove(DestinationString->Buffer, SourceString->Buffer, n);
  DestinationString->Length = n;
  TerminateIfRoom<WCHAR>(DestinationString);
}

NTSTATUS RtlAppendUnicodeStringToString(PUNICODE_STRING Destination, PCUNICODE_STRING Source) {
  if (Source == nullptr || Source->Length == 0) return STATUS_SUCCESS;
  if (Destination->Length + Source->Length > Destination->MaximumLength) return STATUS_BUFFER_TOO_SMALL;
  std::memmove(reinterpret_cast<char*>(Destination->Buffer) + Destination->Length, Source->Buffer, Source->Length);
  Destination->Length = static_cast<USHORT>(Destination->Length + Source->Length);
  TerminateIfRoom<WCHAR>(Destination);
  return STATUS_SUCCESS;
}

NTSTATUS RtlAppendUnicodeToString(PUNICODE_STRING Destination, PCWSTR Source) {
  if (Source == nullptr) return STATUS_SUCCESS;
  UNICODE_STRING source{};
  RtlInitUnicodeString(&source, Source);
  return RtlAppendUnicodeStringToString(Destination, &source);
}

NTSTATUS RtlAnsiStringToUnicodeString(PUNICODE_STRING DestinationString, PCANSI_STRING SourceString,
                                      BOOLEAN AllocateDestinationString) {
  const std::size_t bytes = std::size_t{SourceString->Length} * sizeof(WCHAR);
  if (bytes + sizeof(WCHAR) > 0xFFFF) return STATUS_INVALID_PARAMETER_2;
  if (AllocateDestinationString) {
    DestinationString->MaximumLength = static_cast<USHORT>(bytes + sizeof(WCHAR));
    DestinationString->Buffer =
        static_cast<PWCH>(ExAllocatePoolWithTag(NonPagedPoolNx, DestinationString->MaximumLength, kStringTag));
    if (DestinationString->Buffer == nullptr) return STATUS_NO_MEMORY;
  } else if (bytes > DestinationString->MaximumLength) {
    return STATUS_BUFFER_OVERFLOW;
  }
  for (USHORT i = 0; i < SourceString->Length; ++i) {
    DestinationString->Buffer[i] = static_cast<unsigned char>(SourceString->Buffer[i]);
  }
  DestinationString->Length = static_cast<USHORT>(bytes);
  TerminateIfRoom<WCHAR>(DestinationString);
  return STATUS_SUCCESS;
}

NTSTATUS RtlUnicodeStringToAnsiString(PANSI_STRING DestinationString, PCUNICODE_STRING SourceString,
                                      BOOLEAN AllocateDestinationString) {
  const USHORT chars = SourceString->Length / sizeof(WCHAR);
  if (AllocateDestinationString) {
    DestinationString->MaximumLength = static_cast<USHORT>(chars + 1);
    DestinationString->Buffer =
        static_cast<PCHAR>(ExAllocatePoolWithTag(NonPagedPoolNx, DestinationString->MaximumLength, kStringTag));
    if (DestinationString->Buffer == nullptr) return STATUS_NO_MEMORY;
  } else if (chars > DestinationString->MaximumLength) {
    return STATUS_BUFFER_OVERFLOW;
  }
  for (USHORT i = 0; i < chars; ++i) DestinationString->Buffer[i] = ndksim::kernel::AnsiOf(SourceString->Buffer[i]);
  DestinationString->Length = chars;
  TerminateIfRoom<char>(DestinationString);
  return STATUS_SUCCESS;
}

VOID RtlFreeUnicodeString(PUNICODE_STRING UnicodeString) {
  if (UnicodeString->Buffer != nullptr) ExFreePoolWithTag(UnicodeString->Buffer, kStringTag);
  *UnicodeString = UNICODE_STRING{};
}

VOID RtlFreeAnsiString(PANSI_STRING AnsiString) {
  if (AnsiString->Buffer != nullptr) ExFreePoolWithTag(AnsiString->Buffer, kStringTag);
  *AnsiString = ANSI_STRING{};
}

// Leading blanks, a sign, then with Base 0 a prefix (0x, 0o, 0b) or decimal; digits up to the
// first that is not one of the base's. STATUS_INVALID_PARAMETER for a base outside 0, 2, 8, 10, 16.
NTSTATUS RtlUnicodeStringToInteger(PCUNICODE_STRING String, ULONG Base, PULONG Value) {
  if (Base != 0 && Base != 2 && Base != 8 && Base != 10 && Base != 16) return STATUS_INVALID_PARAMETER;
  const WCHAR* c = String->Buffer;
  const WCHAR* const end = c + String->Length / sizeof(WCHAR);
  while (c < end && (*c == ' ' || *c == '\t')) ++c;
  bool negative = false;
  if (c < end && (*c == '-' || *c == '+')) negative = *c++ == '-';
  if (Base == 0) {
    Base = 10;
    if (end - c >= 2 && c[0] == '0') {
      const WCHAR p = c[1];
      if (p == 'x' || p == 'X') Base = 16, c += 2;
      if (p == 'o' || p == 'O') Base = 8, c += 2;
      if (p == 'b' || p == 'B') Base = 2, c += 2;
    }
  }
  ULONG v = 0;
  for (; c < end && DigitValue(*c) < static_cast<int>(Base); ++c) v = v * Base + static_cast<ULONG>(DigitValue(*c));
  *Value = negative ? 0u - v : v;
  return STATUS_SUCCESS;
}

NTSTATUS RtlIntegerToUnicodeString(ULONG Value, ULONG Base, PUNICODE_STRING String) {
  if (Base == 0) Base = 10;
  if (Base != 2 && Base != 8 && Base != 10 && Base != 16) return STATUS_INVALID_PARAMETER;
  char digits[33];
  int n = 0;
  do {
    digits[n++] = "0123456789ABCDEF"[Value % Base];
    Value /= Base;
  } while (Value != 0);
  if (static_cast<std::size_t>(n) * sizeof(WCHAR) > String->MaximumLength) return STATUS_BUFFER_OVERFLOW;
  for (int i = 0; i < n; ++i) String->Buffer[i] = static_cast<WCHAR>(digits[n - 1 - i]);
  String->Length = static_cast<USHORT>(n * sizeof(WCHAR));
  TerminateIfRoom<WCHAR>(String);
  return STATUS_SUCCESS;
}

NTSTATUS RtlStringFromGUID(REFGUID Guid, PUNICODE_STRING GuidString) {
  const std::string text =
      fmt::format("{{{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}}}", Guid.Data1, Guid.Data2,
                  Guid.Data3, Guid.Data4[0], Guid.Data4[1], Guid.Data4[2], Guid.Data4[3], Guid.Data4[4], Guid.Data4[5],
                  Guid.Data4[6], Guid.Data4[7]);
  GuidString->MaximumLength = static_cast<USHORT>((text.size() + 1) * sizeof(WCHAR));
  GuidString->Buffer = static_cast<PWCH>(ExAllocatePoolWithTag(NonPagedPoolNx, GuidString->MaximumLength, kStringTag));
  if (GuidString->Buffer == nullptr) return STATUS_NO_MEMORY;
  for (std::size_t i = 0; i < text.size(); ++i) GuidString->Buffer[i] = static_cast<WCHAR>(text[i]);
  GuidString->Buffer[text.size()] = 0;
  GuidString->Length = static_cast<USHORT>(text.size() * sizeof(WCHAR));
  return STATUS_SUCCESS;
}

NTSTATUS RtlGUIDFromString(PCUNICODE_STRING GuidString, GUID* Guid) {
  // {8-4-4-4-12}: 38 characters, hex digits between the braces and dashes.
  constexpr std::size_t kLength = 38;
  if (GuidString == nullptr || GuidString->Length != kLength * sizeof(WCHAR)) return STATUS_INVALID_PARAMETER;
  const WCHAR* c = GuidString->Buffer;
  const auto hex = [&](std::size_t from, std::size_t digits, std::uint64_t* out) {
    std::uint64_t v = 0;
    for (std::size_t i = from; i < from + digits; ++i) {
      const int d = DigitValue(c[i]);
      if (d > 15) return false;
      v = v * 16 + static_cast<std::uint64_t>(d);
    }
    *out = v;
    return true;
  };
  if (c[0] != '{' || c[9] != '-' || c[14] != '-' || c[19] != '-' || c[24] != '-' || c[37] != '}') {
    return STATUS_INVALID_PARAMETER;
  }
  std::uint64_t d1 = 0, d2 = 0, d3 = 0, d4 = 0, d5 = 0;
  if (!hex(1, 8, &d1) || !hex(10, 4, &d2) || !hex(15, 4, &d3) || !hex(20, 4, &d4) || !hex(25, 12, &d5)) {
    return STATUS_INVALID_PARAMETER;
  }
  Guid->Data1 = static_cast<ULONG>(d1);
  Guid->Data2 = static_cast<USHORT>(d2);
  Guid->Data3 = static_cast<USHORT>(d3);
  Guid->Data4[0] = static_cast<UCHAR>(d4 >> 8);
  Guid->Data4[1] = static_cast<UCHAR>(d4);
  for (int i = 0; i < 6; ++i) Guid->Data4[2 + i] = static_cast<UCHAR>(d5 >> (8 * (5 - i)));
  return STATUS_SUCCESS;
}

// ---- the system error log ----

// An entry belongs to the system, not to the driver that allocated it: it is not pool of the
// driver's (no leak report), and the write gives it back.
PVOID IoAllocateErrorLogEntry(PVOID IoObject, UCHAR EntrySize) {
  (void)IoObject;
  if (EntrySize < sizeof(IO_ERROR_LOG_PACKET) || EntrySize > ERROR_LOG_MAXIMUM_SIZE) return nullptr;
  return std::calloc(1, EntrySize);
}

VOID IoWriteErrorLogEntry(PVOID ElEntry) {
  Impl& s = ndksim::kernel::CurrentEnvironment();
  const auto* packet = static_cast<const IO_ERROR_LOG_PACKET*>(ElEntry);
  s.debug_log.push_back(fmt::format("[{} ps] {}: error log: code {:#010x}, status {:#010x}, unique value {}",
                                    s.fabric.Now().time_since_epoch().count(), s.CurrentName(),
                                    static_cast<ULONG>(packet->ErrorCode), static_cast<ULONG>(packet->FinalStatus),
                                    packet->UniqueErrorValue));
  std::free(ElEntry);
}

VOID IoFreeErrorLogEntry(PVOID ElEntry) { std::free(ElEntry); }

}  // extern "C"
