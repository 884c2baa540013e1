// SPDX-License-Identifier: MIT
// ip2string.h's conversions between IPv4 addresses and their text, for char and 16-bit WCHAR text
// alike, with Windows's forms (strict and not), port syntax and buffer-length rules. They need no
// kernel environment.
#include <cstdint>

#include "ip2string.h"

namespace {

constexpr std::uint32_t Code(char c) { return static_cast<unsigned char>(c); }
constexpr std::uint32_t Code(WCHAR c) { return c; }

constexpr bool IsDecimal(std::uint32_t c) { return c >= '0' && c <= '9'; }

constexpr int DigitValue(std::uint32_t c) {
  if (IsDecimal(c)) return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return 99;
}

// One part of an IPv4 address at `s`: decimal, or, unless strict, octal (a leading 0) or hexadecimal
// (0x). False without a digit or above 32 bits; `s` is left after the digits read.
template <typename Unit>
constexpr bool ParsePart(const Unit*& s, bool strict, std::uint64_t& value) {
  unsigned base = 10;
  if (Code(s[0]) == '0' && (Code(s[1]) == 'x' || Code(s[1]) == 'X')) {
    if (strict) return false;
    base = 16;
    s += 2;
  } else if (Code(s[0]) == '0' && IsDecimal(Code(s[1]))) {
    if (strict) return false;  // a leading zero is octal, which strict dotted decimal excludes
    base = 8;
    ++s;
  }
  value = 0;
  bool any = false;
  for (int d = DigitValue(Code(*s)); d < static_cast<int>(base); d = DigitValue(Code(*s))) {
    value = value * base + static_cast<unsigned>(d);
    if (value > UINT32_MAX) return false;
    any = true;
    ++s;
  }
  return any;
}

// The address at the start of `s`; `s` is left after it (at the failing character on failure).
// Result in host order.
template <typename Unit>
constexpr bool ParseIpv4(const Unit*& s, bool strict, std::uint32_t& address) {
  std::uint64_t parts[4] = {};
  int count = 0;
  for (;;) {
    if (!ParsePart(s, strict, parts[count])) return false;
    ++count;
    if (count == 4 || Code(*s) != '.') break;
    ++s;
  }
  if (strict && count != 4) return false;
  // Every part but the last is a byte; the last fills the bytes left.
  for (int i = 0; i + 1 < count; ++i) {
    if (parts[i] > 0xFF) return false;
  }
  const int last_bits = 8 * (4 - (count - 1));
  if (last_bits < 32 && parts[count - 1] >> last_bits != 0) return false;
  std::uint32_t value = 0;
  for (int i = 0; i + 1 < count; ++i) value |= static_cast<std::uint32_t>(parts[i]) << (24 - 8 * i);
  address = value | static_cast<std::uint32_t>(parts[count - 1]);
  return true;
}

constexpr std::uint32_t ToNetwork32(std::uint32_t v) { return __builtin_bswap32(v); }
constexpr USHORT ToNetwork16(USHORT v) { return static_cast<USHORT>(__builtin_bswap16(v)); }

template <typename Unit>
NTSTATUS StringToIpv4(const Unit* s, bool strict, const Unit** terminator, struct in_addr* addr) {
  if (s == nullptr || terminator == nullptr || addr == nullptr) return STATUS_INVALID_PARAMETER;
  std::uint32_t address = 0;
  const bool ok = ParseIpv4(s, strict, address);
  *terminator = s;
  if (!ok) return STATUS_INVALID_PARAMETER;
  addr->s_addr = ToNetwork32(address);
  return STATUS_SUCCESS;
}

template <typename Unit>
NTSTATUS StringToIpv4Ex(const Unit* s, bool strict, struct in_addr* addr, PUSHORT port) {
  if (s == nullptr || addr == nullptr || port == nullptr) return STATUS_INVALID_PARAMETER;
  std::uint32_t address = 0;
  if (!ParseIpv4(s, strict, address)) return STATUS_INVALID_PARAMETER;
  std::uint32_t number = 0;
  if (Code(*s) == ':') {
    ++s;
    if (!IsDecimal(Code(*s))) return STATUS_INVALID_PARAMETER;
    while (IsDecimal(Code(*s))) {
      number = number * 10 + (Code(*s++) - '0');
      if (number > 0xFFFF) return STATUS_INVALID_PARAMETER;
    }
  }
  if (Code(*s) != 0) return STATUS_INVALID_PARAMETER;
  addr->s_addr = ToNetwork32(address);
  *port = ToNetwork16(static_cast<USHORT>(number));
  return STATUS_SUCCESS;
}

// "a.b.c.d", and ":port" for a port other than 0, into `text` (22 characters with the NUL at most).
// Returns the characters before the NUL.
template <typename Unit>
std::size_t Ipv4Text(const struct in_addr& address, USHORT port, Unit* text) {
  std::size_t n = 0;
  auto put_decimal = [&](unsigned value) {
    char digits[5] = {};
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (count != 0) text[n++] = static_cast<Unit>(digits[--count]);
  };
  const auto* bytes = reinterpret_cast<const unsigned char*>(&address.s_addr);
  for (int i = 0; i < 4; ++i) {
    if (i != 0) text[n++] = static_cast<Unit>('.');
    put_decimal(bytes[i]);
  }
  if (port != 0) {
    text[n++] = static_cast<Unit>(':');
    put_decimal(ToNetwork16(port));
  }
  text[n] = 0;
  return n;
}

template <typename Unit>
Unit* Ipv4ToString(const struct in_addr* addr, Unit* s) {
  return s + Ipv4Text(*addr, 0, s);
}

template <typename Unit>
NTSTATUS Ipv4ToStringEx(const struct in_addr* address, USHORT port, Unit* text, PULONG length) {
  if (address == nullptr || length == nullptr) return STATUS_INVALID_PARAMETER;
  Unit buffer[32];
  const auto needed = static_cast<ULONG>(Ipv4Text(*address, port, buffer) + 1);
  if (text == nullptr || *length < needed) {
    *length = needed;
    return STATUS_INVALID_PARAMETER;
  }
  for (ULONG i = 0; i < needed; ++i) text[i] = buffer[i];
  *length = needed;
  return STATUS_SUCCESS;
}

}  // namespace

extern "C" {

NTSTATUS RtlIpv4StringToAddressA(PCSTR S, BOOLEAN Strict, PCSTR* Terminator, struct in_addr* Addr) {
  return StringToIpv4(S, Strict != FALSE, Terminator, Addr);
}

NTSTATUS RtlIpv4StringToAddressW(PCWSTR S, BOOLEAN Strict, PCWSTR* Terminator, struct in_addr* Addr) {
  return StringToIpv4(S, Strict != FALSE, Terminator, Addr);
}

NTSTATUS RtlIpv4StringToAddressExA(PCSTR AddressString, BOOLEAN Strict, struct in_addr* Address, PUSHORT Port) {
  return StringToIpv4Ex(AddressString, Strict != FALSE, Address, Port);
}

NTSTATUS RtlIpv4StringToAddressExW(PCWSTR AddressString, BOOLEAN Strict, struct in_addr* Address, PUSHORT Port) {
  return StringToIpv4Ex(AddressString, Strict != FALSE, Address, Port);
}

PSTR RtlIpv4AddressToStringA(const struct in_addr* Addr, PSTR S) { return Ipv4ToString(Addr, S); }

PWSTR RtlIpv4AddressToStringW(const struct in_addr* Addr, PWSTR S) { return Ipv4ToString(Addr, S); }

NTSTATUS RtlIpv4AddressToStringExA(const struct in_addr* Address, USHORT Port, PSTR AddressString,
                                   PULONG AddressStringLength) {
  return Ipv4ToStringEx(Address, Port, AddressString, AddressStringLength);
}

NTSTATUS RtlIpv4AddressToStringExW(const struct in_addr* Address, USHORT Port, PWSTR AddressString,
                                   PULONG AddressStringLength) {
  return Ipv4ToStringEx(Address, Port, AddressString, AddressStringLength);
}

}  // extern "C"
