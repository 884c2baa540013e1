// SPDX-License-Identifier: MIT
// ip2string.h's conversions between IPv4 and IPv6 addresses and their text, for char and 16-bit
// WCHAR text alike, with Windows's forms (strict and not), scope and port syntax and buffer-length
// rules. They need no kernel environment.
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

// The Ex forms' buffer rule: the text of `count` characters and its NUL into `text`, whose size in
// characters is *length; out, *length is what was written with the NUL, or, for a buffer too
// small (or none), the size needed, with STATUS_INVALID_PARAMETER.
template <typename Unit>
NTSTATUS CopyOut(const Unit* buffer, std::size_t count, Unit* text, PULONG length) {
  const auto needed = static_cast<ULONG>(count + 1);
  if (text == nullptr || *length < needed) {
    *length = needed;
    return STATUS_INVALID_PARAMETER;
  }
  for (ULONG i = 0; i < needed; ++i) text[i] = buffer[i];
  *length = needed;
  return STATUS_SUCCESS;
}

template <typename Unit>
Unit* Ipv4ToString(const struct in_addr* addr, Unit* s) {
  return s + Ipv4Text(*addr, 0, s);
}

template <typename Unit>
NTSTATUS Ipv4ToStringEx(const struct in_addr* address, USHORT port, Unit* text, PULONG length) {
  if (address == nullptr || length == nullptr) return STATUS_INVALID_PARAMETER;
  Unit buffer[32];
  return CopyOut(buffer, Ipv4Text(*address, port, buffer), text, length);
}

// ---- IPv6 ----

constexpr bool IsHex(std::uint32_t c) { return DigitValue(c) < 16; }

// The IPv6 address at the start of `s` (RFC 4291's text forms: eight groups of up to four hex
// digits, one "::" standing for one or more zero groups, the last 32 bits optionally dotted
// decimal); `s` is left after it. Bytes in network order.
template <typename Unit>
bool ParseIpv6(const Unit*& s, std::uint8_t (&bytes)[16]) {
  std::uint16_t groups[8] = {};
  int count = 0;
  int gap = -1;  // where "::" stands, in groups
  const Unit* p = s;
  if (Code(p[0]) == ':') {
    if (Code(p[1]) != ':') return false;
    gap = 0;
    p += 2;
  }
  // With a "::", which stands for one group at least, seven groups at most are written out: the
  // address ends before an eighth (Windows's terminator).
  const auto limit = [&] { return gap >= 0 ? 7 : 8; };
  while (count < limit() && IsHex(Code(*p))) {
    // A dotted decimal part takes the last two groups.
    const Unit* q = p;
    while (IsDecimal(Code(*q))) ++q;
    if (Code(*q) == '.') {
      std::uint32_t v4 = 0;
      if (count > limit() - 2 || !ParseIpv4(p, true, v4)) return false;
      groups[count++] = static_cast<std::uint16_t>(v4 >> 16);
      groups[count++] = static_cast<std::uint16_t>(v4 & 0xFFFF);
      break;
    }
    std::uint32_t value = 0;
    int digits = 0;
    for (; IsHex(Code(*p)); ++p) {
      if (++digits > 4) return false;
      value = value * 16 + static_cast<std::uint32_t>(DigitValue(Code(*p)));
    }
    groups[count++] = static_cast<std::uint16_t>(value);
    if (Code(p[0]) == ':' && Code(p[1]) == ':' && gap < 0 && count < 8) {
      gap = count;
      p += 2;
    } else if (Code(p[0]) == ':' && IsHex(Code(p[1])) && count < limit()) {
      ++p;
    } else {
      break;
    }
  }
  if (gap < 0 ? count != 8 : count == 8) return false;
  std::uint16_t full[8] = {};
  const int tail = gap < 0 ? 0 : count - gap;
  for (int i = 0; i < count - tail; ++i) full[i] = groups[i];
  for (int i = 0; i < tail; ++i) full[8 - tail + i] = groups[gap + i];
  for (int i = 0; i < 8; ++i) {
    bytes[2 * i] = static_cast<std::uint8_t>(full[i] >> 8);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(full[i] & 0xFF);
  }
  s = p;
  return true;
}

// A decimal number of at most `max` at `s`; `s` is left after it.
template <typename Unit>
bool ParseDecimal(const Unit*& s, std::uint64_t max, std::uint64_t& value) {
  if (!IsDecimal(Code(*s))) return false;
  value = 0;
  while (IsDecimal(Code(*s))) {
    value = value * 10 + (Code(*s++) - '0');
    if (value > max) return false;
  }
  return true;
}

template <typename Unit>
NTSTATUS StringToIpv6(const Unit* s, const Unit** terminator, struct in6_addr* addr) {
  if (s == nullptr || terminator == nullptr || addr == nullptr) return STATUS_INVALID_PARAMETER;
  std::uint8_t bytes[16];
  const Unit* p = s;
  const bool ok = ParseIpv6(p, bytes);
  *terminator = p;
  if (!ok) return STATUS_INVALID_PARAMETER;
  for (int i = 0; i < 16; ++i) addr->s6_addr[i] = bytes[i];
  return STATUS_SUCCESS;
}

// "addr", "addr%scope", "[addr]", "[addr%scope]", and either bracketed form with ":port".
template <typename Unit>
NTSTATUS StringToIpv6Ex(const Unit* s, struct in6_addr* addr, PULONG scope, PUSHORT port) {
  if (s == nullptr || addr == nullptr || scope == nullptr || port == nullptr) return STATUS_INVALID_PARAMETER;
  const bool bracketed = Code(*s) == '[';
  if (bracketed) ++s;
  std::uint8_t bytes[16];
  if (!ParseIpv6(s, bytes)) return STATUS_INVALID_PARAMETER;
  std::uint64_t scope_id = 0;
  if (Code(*s) == '%') {
    ++s;
    if (!ParseDecimal(s, 0xFFFFFFFFu, scope_id)) return STATUS_INVALID_PARAMETER;
  }
  std::uint64_t number = 0;
  if (bracketed) {
    if (Code(*s) != ']') return STATUS_INVALID_PARAMETER;
    ++s;
    if (Code(*s) == ':') {
      ++s;
      if (!ParseDecimal(s, 0xFFFF, number)) return STATUS_INVALID_PARAMETER;
    }
  }
  if (Code(*s) != 0) return STATUS_INVALID_PARAMETER;
  for (int i = 0; i < 16; ++i) addr->s6_addr[i] = bytes[i];
  *scope = static_cast<ULONG>(scope_id);
  *port = ToNetwork16(static_cast<USHORT>(number));
  return STATUS_SUCCESS;
}

// Whether Windows prints the address's last 32 bits in dotted decimal: an ISATAP interface id
// (0:5efe or 200:5efe before them), or, behind 64 zero bits, an IPv4-compatible (0:0), IPv4-mapped
// (0:ffff) or SIIT (ffff:0) address whose seventh group is not 0.
bool DottedTail(const std::uint16_t (&g)[8]) {
  if (g[5] == 0x5EFE && (g[4] == 0 || g[4] == 0x0200)) return true;
  if (g[0] != 0 || g[1] != 0 || g[2] != 0 || g[3] != 0 || g[6] == 0) return false;
  return (g[4] == 0 && g[5] == 0) || (g[4] == 0 && g[5] == 0xFFFF) || (g[4] == 0xFFFF && g[5] == 0);
}

// The address's text as Windows writes it: lower-case hex without leading zeros, the longest run
// of two or more zero groups (the first of equal runs) as "::", the last 32 bits dotted where
// DottedTail says; "%scope" when `scope` is not 0; bracketed with ":port" when `port` (network
// order) is not 0. Into `text` (65 characters with the NUL at most); returns the characters
// before the NUL.
template <typename Unit>
std::size_t Ipv6Text(const struct in6_addr& address, ULONG scope, USHORT port, Unit* text) {
  std::size_t n = 0;
  const auto put = [&](char c) { text[n++] = static_cast<Unit>(c); };
  const auto put_decimal = [&](std::uint64_t value) {
    char digits[20] = {};
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (count != 0) put(digits[--count]);
  };
  std::uint16_t groups[8];
  for (int i = 0; i < 8; ++i) {
    groups[i] = static_cast<std::uint16_t>(address.s6_addr[2 * i] << 8 | address.s6_addr[2 * i + 1]);
  }
  const bool dotted = DottedTail(groups);
  const int hex_groups = dotted ? 6 : 8;
  int best = -1;
  int best_length = 1;
  for (int i = 0; i < hex_groups;) {
    if (groups[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < hex_groups && groups[j] == 0) ++j;
    if (j - i > best_length) {
      best = i;
      best_length = j - i;
    }
    i = j;
  }
  if (port != 0) put('[');
  for (int i = 0; i < hex_groups; ++i) {
    if (i == best) {
      put(':');
      if (i == 0) put(':');
      i += best_length - 1;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      const unsigned digit = (groups[i] >> shift) & 0xF;
      if (digit != 0 || started || shift == 0) {
        put(kHex[digit]);
        started = true;
      }
    }
    if (i + 1 < hex_groups || dotted) put(':');
  }
  if (dotted) {
    for (int i = 12; i < 16; ++i) {
      if (i != 12) put('.');
      put_decimal(address.s6_addr[i]);
    }
  }
  if (scope != 0) {
    put('%');
    put_decimal(scope);
  }
  if (port != 0) {
    put(']');
    put(':');
    put_decimal(ToNetwork16(port));
  }
  text[n] = 0;
  return n;
}

template <typename Unit>
Unit* Ipv6ToString(const struct in6_addr* addr, Unit* s) {
  return s + Ipv6Text(*addr, 0, 0, s);
}

template <typename Unit>
NTSTATUS Ipv6ToStringEx(const struct in6_addr* address, ULONG scope, USHORT port, Unit* text, PULONG length) {
  if (address == nullptr || length == nullptr) return STATUS_INVALID_PARAMETER;
  Unit buffer[80];
  return CopyOut(buffer, Ipv6Text(*address, scope, port, buffer), text, length);
}

}  // namespace

extern "C" {

NTSTATUS RtlIpv6StringToAddressA(PCSTR S, PCSTR* Terminator, struct in6_addr* Addr) {
  return StringToIpv6(S, Terminator, Addr);
}

NTSTATUS RtlIpv6StringToAddressW(PCWSTR S, PCWSTR* Terminator, struct in6_addr* Addr) {
  return StringToIpv6(S, Terminator, Addr);
}

NTSTATUS RtlIpv6StringToAddressExA(PCSTR AddressString, struct in6_addr* Address, PULONG ScopeId, PUSHORT Port) {
  return StringToIpv6Ex(AddressString, Address, ScopeId, Port);
}

NTSTATUS RtlIpv6StringToAddressExW(PCWSTR AddressString, struct in6_addr* Address, PULONG ScopeId, PUSHORT Port) {
  return StringToIpv6Ex(AddressString, Address, ScopeId, Port);
}

PSTR RtlIpv6AddressToStringA(const struct in6_addr* Addr, PSTR S) { return Ipv6ToString(Addr, S); }

PWSTR RtlIpv6AddressToStringW(const struct in6_addr* Addr, PWSTR S) { return Ipv6ToString(Addr, S); }

NTSTATUS RtlIpv6AddressToStringExA(const struct in6_addr* Address, ULONG ScopeId, USHORT Port, PSTR AddressString,
                                   PULONG AddressStringLength) {
  return Ipv6ToStringEx(Address, ScopeId, Port, AddressString, AddressStringLength);
}

NTSTATUS RtlIpv6AddressToStringExW(const struct in6_addr* Address, ULONG ScopeId, USHORT Port, PWSTR AddressString,
                                   PULONG AddressStringLength) {
  return Ipv6ToStringEx(Address, ScopeId, Port, AddressString, AddressStringLength);
}

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
