/* SPDX-License-Identifier: MIT */
/* ip2string.h - ndksim's stand-in for the WDK header of the same name: the Rtl conversions between
 * IPv4 and IPv6 addresses and their text, in char (A) and 16-bit WCHAR (W) forms. They need no
 * kernel environment and check no IRQL.
 *
 * IN_ADDR and IN6_ADDR are the host's struct in_addr and struct in6_addr (the sin_addr and
 * sin6_addr of SOCKADDR_IN and SOCKADDR_IN6): 4 and 16 bytes in network order, Windows's layouts,
 * reached as s_addr and s6_addr. Windows's union members (S_un.S_un_b, u.Word, ...) are not there.
 *
 * Addresses are in network byte order, and so are ports. */
#ifndef NDKSIM_KERNEL_IP2STRING_H_
#define NDKSIM_KERNEL_IP2STRING_H_
#include "wdm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct in_addr IN_ADDR, *PIN_ADDR, *LPIN_ADDR;
typedef struct in6_addr IN6_ADDR, *PIN6_ADDR, *LPIN6_ADDR;

/* Text to address. Strict: four dotted decimal parts of 0 to 255, without leading zeros; otherwise
 * one to four parts ("a", "a.b", "a.b.c", "a.b.c.d", the last part filling the remaining bytes),
 * each in decimal, octal (a leading 0) or hexadecimal (0x). The plain forms convert the address
 * at the start of the string and point *Terminator at the character after it; the Ex forms take the
 * whole string, an address and an optional ":port" (decimal; *Port 0 without one).
 * STATUS_SUCCESS, or STATUS_INVALID_PARAMETER. */
NTSYSAPI NTSTATUS NTAPI RtlIpv4StringToAddressA(PCSTR S, BOOLEAN Strict, PCSTR *Terminator, struct in_addr *Addr);
NTSYSAPI NTSTATUS NTAPI RtlIpv4StringToAddressW(PCWSTR S, BOOLEAN Strict, PCWSTR *Terminator, struct in_addr *Addr);
NTSYSAPI NTSTATUS NTAPI RtlIpv4StringToAddressExA(PCSTR AddressString, BOOLEAN Strict, struct in_addr *Address,
                                                  PUSHORT Port);
NTSYSAPI NTSTATUS NTAPI RtlIpv4StringToAddressExW(PCWSTR AddressString, BOOLEAN Strict, struct in_addr *Address,
                                                  PUSHORT Port);

/* Address to dotted decimal text. The plain forms write into S (16 characters suffice) and return
 * the address of its terminating NUL. The Ex forms add ":port" when Port is not 0; in,
 * *AddressStringLength is the buffer's size in characters, out, the characters written with the
 * NUL, or, if the buffer is too small, the size needed (and STATUS_INVALID_PARAMETER). */
NTSYSAPI PSTR NTAPI RtlIpv4AddressToStringA(const struct in_addr *Addr, PSTR S);
NTSYSAPI PWSTR NTAPI RtlIpv4AddressToStringW(const struct in_addr *Addr, PWSTR S);
NTSYSAPI NTSTATUS NTAPI RtlIpv4AddressToStringExA(const struct in_addr *Address, USHORT Port, PSTR AddressString,
                                                  PULONG AddressStringLength);
NTSYSAPI NTSTATUS NTAPI RtlIpv4AddressToStringExW(const struct in_addr *Address, USHORT Port, PWSTR AddressString,
                                                  PULONG AddressStringLength);

/* IPv6 text to address: eight groups of up to four hex digits, one "::" for one or more zero
 * groups, the last 32 bits optionally dotted decimal ("::ffff:192.0.2.1"). The plain forms
 * convert the address at the start of the string and point *Terminator at the character after
 * it; the Ex forms take the whole string: "addr", "addr%scope", "[addr]", "[addr%scope]", or a
 * bracketed form with ":port" (*ScopeId in host order, 0 without; *Port in network order, 0
 * without). STATUS_SUCCESS, or STATUS_INVALID_PARAMETER. */
NTSYSAPI NTSTATUS NTAPI RtlIpv6StringToAddressA(PCSTR S, PCSTR *Terminator, struct in6_addr *Addr);
NTSYSAPI NTSTATUS NTAPI RtlIpv6StringToAddressW(PCWSTR S, PCWSTR *Terminator, struct in6_addr *Addr);
NTSYSAPI NTSTATUS NTAPI RtlIpv6StringToAddressExA(PCSTR AddressString, struct in6_addr *Address, PULONG ScopeId,
                                                  PUSHORT Port);
NTSYSAPI NTSTATUS NTAPI RtlIpv6StringToAddressExW(PCWSTR AddressString, struct in6_addr *Address, PULONG ScopeId,
                                                  PUSHORT Port);

/* IPv6 address to text: lower-case hex without leading zeros, the longest run of two or more zero
 * groups (the first of equal runs) as "::", an IPv4-mapped address's last 32 bits dotted. The
 * plain forms write into S (46 characters suffice) and return the address of its NUL; the Ex
 * forms add "%scope" for a ScopeId other than 0 and, for a Port other than 0, bracket the address
 * and add ":port", with the IPv4 forms' length rules (65 characters suffice). */
NTSYSAPI PSTR NTAPI RtlIpv6AddressToStringA(const struct in6_addr *Addr, PSTR S);
NTSYSAPI PWSTR NTAPI RtlIpv6AddressToStringW(const struct in6_addr *Addr, PWSTR S);
NTSYSAPI NTSTATUS NTAPI RtlIpv6AddressToStringExA(const struct in6_addr *Address, ULONG ScopeId, USHORT Port,
                                                  PSTR AddressString, PULONG AddressStringLength);
NTSYSAPI NTSTATUS NTAPI RtlIpv6AddressToStringExW(const struct in6_addr *Address, ULONG ScopeId, USHORT Port,
                                                  PWSTR AddressString, PULONG AddressStringLength);

#ifdef UNICODE
#define RtlIpv6StringToAddress RtlIpv6StringToAddressW
#define RtlIpv6StringToAddressEx RtlIpv6StringToAddressExW
#define RtlIpv6AddressToString RtlIpv6AddressToStringW
#define RtlIpv6AddressToStringEx RtlIpv6AddressToStringExW
#else
#define RtlIpv6StringToAddress RtlIpv6StringToAddressA
#define RtlIpv6StringToAddressEx RtlIpv6StringToAddressExA
#define RtlIpv6AddressToString RtlIpv6AddressToStringA
#define RtlIpv6AddressToStringEx RtlIpv6AddressToStringExA
#endif

#ifdef UNICODE
#define RtlIpv4StringToAddress RtlIpv4StringToAddressW
#define RtlIpv4StringToAddressEx RtlIpv4StringToAddressExW
#define RtlIpv4AddressToString RtlIpv4AddressToStringW
#define RtlIpv4AddressToStringEx RtlIpv4AddressToStringExW
#else
#define RtlIpv4StringToAddress RtlIpv4StringToAddressA
#define RtlIpv4StringToAddressEx RtlIpv4StringToAddressExA
#define RtlIpv4AddressToString RtlIpv4AddressToStringA
#define RtlIpv4AddressToStringEx RtlIpv4AddressToStringExA
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* NDKSIM_KERNEL_IP2STRING_H_ */
