/* SPDX-License-Identifier: MIT */
/* ntstrsafe.h - ndksim's stand-in for the WDK's kernel-mode safe string functions: formatting,
 * copying, concatenating and measuring strings within a buffer's size, by bytes (Cb) or characters
 * (Cch), in ANSI (A) or 16-bit WCHAR (W) characters, and formatting into a UNICODE_STRING.
 *
 * Every function returns STATUS_SUCCESS when the whole result fit; STATUS_BUFFER_OVERFLOW when it
 * did not, with the destination holding as much as fits, NUL-terminated (a UNICODE_STRING is never
 * terminated); STATUS_INVALID_PARAMETER for a size of zero or above the maximum, or a NULL pointer
 * (a printf or copy then leaves an empty string in a destination of non-zero size; a
 * concatenation leaves the destination unchanged).
 *
 * Formats follow the Windows kernel's C runtime, not the host's: `l` is 32-bit (ULONG prints with
 * %lu), `ll`, `I64`, `I`, `z`, `j` and `t` are 64-bit, `h` and `hh` narrow the argument; %p prints
 * 16 upper-case hex digits; a NULL string prints "(null)". In the A functions %s is a char string
 * and %S, %ls, %ws a WCHAR string; in the W functions %s, %ls, %ws are WCHAR strings and %S, %hs
 * char strings (%c and %C likewise). %Z prints an ANSI_STRING and %wZ a UNICODE_STRING. The ANSI
 * code page is ISO 8859-1: a WCHAR above 0xFF prints as '?'. Such a conversion between char and
 * WCHAR uses pageable tables on Windows, so it fails the run (IRQL) above APC_LEVEL when a kernel
 * environment is running. %n, and any conversion not listed here, makes the call return
 * STATUS_INVALID_PARAMETER with an empty destination. Floating-point conversions are formatted by
 * the host (the same digits for finite values).
 *
 * The functions are compiled into the library (NTSTRSAFE_LIB changes nothing);
 * NTSTRSAFE_NO_CB_FUNCTIONS, NTSTRSAFE_NO_CCH_FUNCTIONS and NTSTRSAFE_NO_UNICODE_STRING_FUNCTIONS
 * hide their groups as in the WDK. The Ex forms (flags, remaining counts) are not provided. */
#ifndef NDKSIM_KERNEL_NTSTRSAFE_H_
#define NDKSIM_KERNEL_NTSTRSAFE_H_
#include "wdm.h"

#if defined(NTSTRSAFE_NO_CB_FUNCTIONS) && defined(NTSTRSAFE_NO_CCH_FUNCTIONS)
#error "ntstrsafe.h: NTSTRSAFE_NO_CB_FUNCTIONS and NTSTRSAFE_NO_CCH_FUNCTIONS cannot both be defined"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef char *NTSTRSAFE_PSTR;
typedef const char *NTSTRSAFE_PCSTR;
typedef WCHAR *NTSTRSAFE_PWSTR;
typedef const WCHAR *NTSTRSAFE_PCWSTR;
typedef const WCHAR *NTSTRSAFE_PCUWSTR;

/* The largest buffer, in characters, the functions take (INT_MAX). */
#define NTSTRSAFE_MAX_CCH 2147483647
#define NTSTRSAFE_MAX_LENGTH (NTSTRSAFE_MAX_CCH - 1)
/* The largest UNICODE_STRING, in characters. The library checks this value; a smaller one defined
 * by the consumer, as the WDK allows, is not supported. */
#ifndef NTSTRSAFE_UNICODE_STRING_MAX_CCH
#define NTSTRSAFE_UNICODE_STRING_MAX_CCH 0x7ffe
#endif
static_assert(NTSTRSAFE_UNICODE_STRING_MAX_CCH == 0x7ffe,
              "ntstrsafe.h: the kernel environment supports only the WDK's NTSTRSAFE_UNICODE_STRING_MAX_CCH");

#ifndef NTSTRSAFE_NO_CB_FUNCTIONS
/* cbDest, cbMax: bytes (a W buffer holds cbDest / 2 characters). */
NTSTATUS RtlStringCbPrintfA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszFormat, ...);
NTSTATUS RtlStringCbPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszFormat, ...);
NTSTATUS RtlStringCbVPrintfA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszFormat, va_list argList);
NTSTATUS RtlStringCbVPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszFormat, va_list argList);
NTSTATUS RtlStringCbCopyA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszSrc);
NTSTATUS RtlStringCbCopyW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszSrc);
/* pszDest must hold a NUL-terminated string within cbDest (otherwise STATUS_INVALID_PARAMETER,
 * the buffer unchanged). */
NTSTATUS RtlStringCbCatA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszSrc);
NTSTATUS RtlStringCbCatW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszSrc);
/* The length in bytes without the NUL; STATUS_INVALID_PARAMETER (and 0) when psz has no NUL within
 * cbMax bytes. pcbLength may be NULL. */
NTSTATUS RtlStringCbLengthA(NTSTRSAFE_PCSTR psz, size_t cbMax, size_t *pcbLength);
NTSTATUS RtlStringCbLengthW(NTSTRSAFE_PCWSTR psz, size_t cbMax, size_t *pcbLength);
#endif

#ifndef NTSTRSAFE_NO_CCH_FUNCTIONS
/* cchDest, cchMax: characters. */
NTSTATUS RtlStringCchPrintfA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszFormat, ...);
NTSTATUS RtlStringCchPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszFormat, ...);
NTSTATUS RtlStringCchVPrintfA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszFormat, va_list argList);
NTSTATUS RtlStringCchVPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszFormat, va_list argList);
NTSTATUS RtlStringCchCopyA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc);
NTSTATUS RtlStringCchCopyW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc);
NTSTATUS RtlStringCchCatA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc);
NTSTATUS RtlStringCchCatW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc);
NTSTATUS RtlStringCchLengthA(NTSTRSAFE_PCSTR psz, size_t cchMax, size_t *pcchLength);
NTSTATUS RtlStringCchLengthW(NTSTRSAFE_PCWSTR psz, size_t cchMax, size_t *pcchLength);
#endif

#ifndef NTSTRSAFE_NO_UNICODE_STRING_FUNCTIONS
/* Formats into DestinationString->Buffer, up to MaximumLength bytes, and sets Length; no NUL is
 * added. STATUS_INVALID_PARAMETER for an odd Length or MaximumLength, Length > MaximumLength, a
 * MaximumLength above NTSTRSAFE_UNICODE_STRING_MAX_CCH characters, or a NULL Buffer with a length. */
NTSTATUS RtlUnicodeStringPrintf(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszFormat, ...);
NTSTATUS RtlUnicodeStringVPrintf(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszFormat, va_list argList);
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* NDKSIM_KERNEL_NTSTRSAFE_H_ */
