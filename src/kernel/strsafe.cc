// SPDX-License-Identifier: MIT
// The safe string functions of ntstrsafe.h: a printf of the Windows kernel's C runtime (its length
// modifiers, %Z/%wZ, "(null)", 16-bit WCHAR output), and the copy, concatenation and length
// functions, with ntstrsafe's rules for sizes, truncation and termination. They need no kernel
// environment; when one is current, a char/WCHAR conversion above APC_LEVEL fails its run.
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "kernel_state.h"
#include "ntstrsafe.h"

namespace {

constexpr std::size_t kMaxCch = NTSTRSAFE_MAX_CCH;
constexpr std::size_t kUnicodeStringMaxCch = NTSTRSAFE_UNICODE_STRING_MAX_CCH;
// The largest field width or precision taken for a floating-point value (formatted by the host,
// whole, before it is copied out).
constexpr int kMaxFloatField = 4096;

// Where formatted text goes: the first `capacity` units into `dest`; `length` counts every unit
// produced, so a result that did not fit shows as length > capacity.
template <typename Unit>
struct Sink {
  Unit* dest = nullptr;
  std::size_t capacity = 0;
  std::size_t length = 0;

  constexpr void Put(Unit unit) {
    if (length < capacity) dest[length] = unit;
    ++length;
  }
  constexpr void Repeat(Unit unit, std::size_t count) {
    while (count != 0 && length < capacity) {
      Put(unit);
      --count;
    }
    length += count;  // past the capacity only the count matters
  }
};

// A format character's code (char is signed here; WCHAR is not).
constexpr std::uint32_t Code(char c) { return static_cast<unsigned char>(c); }
constexpr std::uint32_t Code(WCHAR c) { return c; }

// Between the ANSI code page (ISO 8859-1 here) and WCHARs.
template <typename To, typename From>
constexpr To Recode(From from) {
  if constexpr (std::is_same_v<To, From>) {
    return from;
  } else if constexpr (std::is_same_v<To, WCHAR>) {
    return static_cast<WCHAR>(static_cast<unsigned char>(from));
  } else {
    return ndksim::kernel::AnsiOf(from);
  }
}

// The argument size a length modifier selects, in the Windows sense (`l` is 32-bit).
enum class ArgSize : std::uint8_t { kDefault, kChar, kShort, kLong, kLongLong, kWide, kLongDouble };

// One conversion specification: %[flags][width][.precision][size]conversion.
struct Spec {
  bool left = false;   // '-'
  bool plus = false;   // '+'
  bool space = false;  // ' '
  bool alt = false;    // '#'
  bool zero = false;   // '0'
  int width = 0;
  int precision = -1;  // none
  ArgSize size = ArgSize::kDefault;
};

// The variadic arguments of a format, by the type each conversion reads.
class VaArgs {
 public:
  explicit VaArgs(va_list args) { va_copy(args_, args); }
  ~VaArgs() { va_end(args_); }
  VaArgs(const VaArgs&) = delete;
  VaArgs& operator=(const VaArgs&) = delete;

  std::int32_t Int32() { return va_arg(args_, std::int32_t); }
  std::int64_t Int64() { return va_arg(args_, std::int64_t); }
  std::uint64_t PointerBits() { return reinterpret_cast<std::uintptr_t>(va_arg(args_, const void*)); }
  const char* NarrowString() { return va_arg(args_, const char*); }
  const WCHAR* WideString() { return va_arg(args_, const WCHAR*); }
  const ANSI_STRING* AnsiString() { return va_arg(args_, const ANSI_STRING*); }
  const UNICODE_STRING* UnicodeString() { return va_arg(args_, const UNICODE_STRING*); }
  double Double() { return va_arg(args_, double); }

 private:
  va_list args_;
};

// Formats `format` into a sink of the same character type. Run returns false at a conversion it
// does not support (or a format that ends inside one); `converted` says whether an argument's
// characters went through the code page.
template <typename Unit, typename Args>
class Formatter {
 public:
  constexpr Formatter(Sink<Unit>& out, Args& args) : out_(out), args_(args) {}

  constexpr bool Run(const Unit* format) {
    const Unit* f = format;
    while (*f != 0) {
      if (Code(*f) != '%') {
        out_.Put(*f++);
        continue;
      }
      ++f;
      Spec spec;
      if (!ParseSpec(f, spec)) return false;
      const std::uint32_t conversion = Code(*f);
      if (conversion == 0) return false;
      ++f;
      if (!Convert(spec, conversion)) return false;
    }
    return true;
  }

  bool converted = false;

 private:
  // Reads flags, width, precision and size; leaves `f` on the conversion character.
  constexpr bool ParseSpec(const Unit*& f, Spec& spec) {
    for (bool flag = true; flag;) {
      switch (Code(*f)) {
        case '-': spec.left = true; ++f; break;
        case '+': spec.plus = true; ++f; break;
        case ' ': spec.space = true; ++f; break;
        case '#': spec.alt = true; ++f; break;
        case '0': spec.zero = true; ++f; break;
        default: flag = false; break;
      }
    }
    if (Code(*f) == '*') {
      ++f;
      const std::int64_t width = args_.Int32();
      if (width < 0) spec.left = true;  // a negative width is '-' and its magnitude
      spec.width = static_cast<int>(std::min<std::int64_t>(width < 0 ? -width : width, INT32_MAX));
    } else if (!ParseNumber(f, spec.width)) {
      return false;
    }
    if (Code(*f) == '.') {
      ++f;
      spec.precision = 0;
      if (Code(*f) == '*') {
        ++f;
        const std::int32_t precision = args_.Int32();
        spec.precision = precision < 0 ? -1 : precision;  // a negative precision is none
      } else if (!ParseNumber(f, spec.precision)) {
        return false;
      }
    }
    switch (Code(*f)) {
      case 'h':
        ++f;
        spec.size = ArgSize::kShort;
        if (Code(*f) == 'h') {
          ++f;
          spec.size = ArgSize::kChar;
        }
        break;
      case 'l':
        ++f;
        spec.size = ArgSize::kLong;
        if (Code(*f) == 'l') {
          ++f;
          spec.size = ArgSize::kLongLong;
        }
        break;
      case 'I':
        ++f;
        spec.size = ArgSize::kLongLong;  // I alone: pointer-sized
        if (Code(f[0]) == '3' && Code(f[1]) == '2') {
          f += 2;
          spec.size = ArgSize::kLong;
        } else if (Code(f[0]) == '6' && Code(f[1]) == '4') {
          f += 2;
        }
        break;
      case 'z':
      case 'j':
      case 't':
        ++f;
        spec.size = ArgSize::kLongLong;
        break;
      case 'w':
        ++f;
        spec.size = ArgSize::kWide;
        break;
      case 'L':
        ++f;
        spec.size = ArgSize::kLongDouble;
        break;
      default:
        break;
    }
    return true;
  }

  // Decimal digits into `value` (unchanged without any); false above INT32_MAX.
  static constexpr bool ParseNumber(const Unit*& f, int& value) {
    std::int64_t n = 0;
    bool any = false;
    while (Code(*f) >= '0' && Code(*f) <= '9') {
      n = n * 10 + (Code(*f) - '0');
      if (n > INT32_MAX) return false;
      any = true;
      ++f;
    }
    if (any) value = static_cast<int>(n);
    return true;
  }

  constexpr bool Convert(const Spec& spec, std::uint32_t conversion) {
    switch (conversion) {
      case '%':
        out_.Put(static_cast<Unit>('%'));
        return true;
      case 'd':
      case 'i': {
        const std::int64_t value = SignedArg(spec.size);
        const std::uint64_t magnitude =
            value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
        PutInteger(spec, magnitude, value < 0, /*is_signed=*/true, 10, false);
        return true;
      }
      case 'u': PutInteger(spec, UnsignedArg(spec.size), false, false, 10, false); return true;
      case 'o': PutInteger(spec, UnsignedArg(spec.size), false, false, 8, false); return true;
      case 'x': PutInteger(spec, UnsignedArg(spec.size), false, false, 16, false); return true;
      case 'X': PutInteger(spec, UnsignedArg(spec.size), false, false, 16, true); return true;
      case 'p': {
        // As the Windows runtime prints a pointer on x64: 16 upper-case hex digits.
        Spec digits;
        digits.left = spec.left;
        digits.width = spec.width;
        digits.precision = 16;
        PutInteger(digits, args_.PointerBits(), false, false, 16, true);
        return true;
      }
      case 'c':
      case 'C':
        PutCharacter(spec, WideArgument(spec, conversion == 'C'));
        return true;
      case 's':
      case 'S':
        PutString(spec, WideArgument(spec, conversion == 'S'));
        return true;
      case 'Z':
        PutCountedString(spec, spec.size == ArgSize::kWide || spec.size == ArgSize::kLong);
        return true;
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G':
      case 'a':
      case 'A':
        return PutFloat(spec, static_cast<char>(conversion));
      default:
        return false;  // %n, and what the Windows runtime does not know either
    }
  }

  constexpr std::int64_t SignedArg(ArgSize size) {
    switch (size) {
      case ArgSize::kChar: return static_cast<signed char>(args_.Int32());
      case ArgSize::kShort: return static_cast<std::int16_t>(args_.Int32());
      case ArgSize::kLongLong: return args_.Int64();
      default: return args_.Int32();
    }
  }

  constexpr std::uint64_t UnsignedArg(ArgSize size) {
    switch (size) {
      case ArgSize::kChar: return static_cast<unsigned char>(args_.Int32());
      case ArgSize::kShort: return static_cast<std::uint16_t>(args_.Int32());
      case ArgSize::kLongLong: return static_cast<std::uint64_t>(args_.Int64());
      default: return static_cast<std::uint32_t>(args_.Int32());
    }
  }

  // Whether %c/%s (`swapped`: %C/%S) reads a WCHAR argument. By default the conversion reads the
  // output's own character type and the capital letter the other one; `h` forces char, `l` and
  // `w` force WCHAR.
  constexpr bool WideArgument(const Spec& spec, bool swapped) const {
    if (spec.size == ArgSize::kShort) return false;
    if (spec.size == ArgSize::kLong || spec.size == ArgSize::kWide) return true;
    const bool wide_output = std::is_same_v<Unit, WCHAR>;
    return swapped ? !wide_output : wide_output;
  }

  constexpr void Pad(std::size_t body, const Spec& spec, bool before) {
    const auto width = static_cast<std::size_t>(spec.width);
    if (width > body && spec.left != before) out_.Repeat(static_cast<Unit>(' '), width - body);
  }

  // Digits of `magnitude` with the sign or prefix, precision (minimum digits), width and padding.
  constexpr void PutInteger(const Spec& spec, std::uint64_t magnitude, bool negative, bool is_signed, unsigned base,
                            bool upper) {
    char digits[24] = {};  // reversed; 22 octal digits at most
    std::size_t count = 0;
    for (std::uint64_t v = magnitude; v != 0; v /= base) {
      const auto d = static_cast<unsigned>(v % base);
      digits[count++] = static_cast<char>(d < 10 ? '0' + d : (upper ? 'A' : 'a') + (d - 10));
    }
    if (count == 0 && spec.precision != 0) digits[count++] = '0';  // zero prints, unless the precision is 0
    std::size_t zeros = spec.precision > 0 && static_cast<std::size_t>(spec.precision) > count
                            ? static_cast<std::size_t>(spec.precision) - count
                            : 0;
    // '#' with 'o' makes the first digit a 0.
    if (spec.alt && base == 8 && zeros == 0 && (count == 0 || digits[count - 1] != '0')) zeros = 1;
    char prefix[2] = {};
    std::size_t prefix_length = 0;
    if (is_signed && negative) {
      prefix[prefix_length++] = '-';
    } else if (is_signed && spec.plus) {
      prefix[prefix_length++] = '+';
    } else if (is_signed && spec.space) {
      prefix[prefix_length++] = ' ';
    } else if (spec.alt && base == 16 && magnitude != 0) {
      prefix[prefix_length++] = '0';
      prefix[prefix_length++] = upper ? 'X' : 'x';
    }
    std::size_t body = prefix_length + zeros + count;
    // '0' pads with zeros after the sign, unless '-' or a precision says otherwise.
    if (spec.zero && !spec.left && spec.precision < 0 && static_cast<std::size_t>(spec.width) > body) {
      zeros += static_cast<std::size_t>(spec.width) - body;
      body = static_cast<std::size_t>(spec.width);
    }
    Pad(body, spec, true);
    for (std::size_t i = 0; i < prefix_length; ++i) out_.Put(static_cast<Unit>(prefix[i]));
    out_.Repeat(static_cast<Unit>('0'), zeros);
    while (count != 0) out_.Put(static_cast<Unit>(digits[--count]));
    Pad(body, spec, false);
  }

  // `count` characters of `text` (or up to its NUL when count is SIZE_MAX), cut at the precision.
  template <typename Source>
  constexpr void PutText(const Spec& spec, const Source* text, std::size_t count) {
    const std::size_t limit = spec.precision >= 0 ? static_cast<std::size_t>(spec.precision) : SIZE_MAX;
    std::size_t n = 0;
    if (count == SIZE_MAX) {
      while (n < limit && text[n] != 0) ++n;
    } else {
      n = std::min(count, limit);
    }
    if (!std::is_same_v<Source, Unit> && n != 0) converted = true;
    Pad(n, spec, true);
    for (std::size_t i = 0; i < n; ++i) out_.Put(Recode<Unit>(text[i]));
    Pad(n, spec, false);
  }

  constexpr void PutNull(const Spec& spec) {
    constexpr char kNull[] = "(null)";
    const std::size_t limit = spec.precision >= 0 ? static_cast<std::size_t>(spec.precision) : SIZE_MAX;
    const std::size_t n = std::min(sizeof(kNull) - 1, limit);
    Pad(n, spec, true);
    for (std::size_t i = 0; i < n; ++i) out_.Put(static_cast<Unit>(kNull[i]));
    Pad(n, spec, false);
  }

  constexpr void PutCharacter(const Spec& spec, bool wide) {
    const std::int32_t value = args_.Int32();
    if (wide) {
      const auto c = static_cast<WCHAR>(value);
      PutText(spec, &c, 1);
    } else {
      const auto c = static_cast<char>(value);
      PutText(spec, &c, 1);
    }
  }

  constexpr void PutString(const Spec& spec, bool wide) {
    if (wide) {
      const WCHAR* s = args_.WideString();
      if (s == nullptr) return PutNull(spec);
      PutText(spec, s, SIZE_MAX);
    } else {
      const char* s = args_.NarrowString();
      if (s == nullptr) return PutNull(spec);
      PutText(spec, s, SIZE_MAX);
    }
  }

  // %Z (ANSI_STRING) and %wZ (UNICODE_STRING): Length bytes of Buffer, which need no NUL.
  constexpr void PutCountedString(const Spec& spec, bool wide) {
    if (wide) {
      const UNICODE_STRING* s = args_.UnicodeString();
      if (s == nullptr || s->Buffer == nullptr) return PutNull(spec);
      PutText(spec, s->Buffer, s->Length / sizeof(WCHAR));
    } else {
      const ANSI_STRING* s = args_.AnsiString();
      if (s == nullptr || s->Buffer == nullptr) return PutNull(spec);
      PutText(spec, s->Buffer, s->Length);
    }
  }

  // The host formats the value with the same flags, width and precision.
  bool PutFloat(const Spec& spec, char conversion) {
    const double value = args_.Double();
    if (spec.width > kMaxFloatField || spec.precision > kMaxFloatField) return false;
    std::string format = "%";
    if (spec.left) format += '-';
    if (spec.plus) format += '+';
    if (spec.space) format += ' ';
    if (spec.alt) format += '#';
    if (spec.zero) format += '0';
    if (spec.width > 0) format += std::to_string(spec.width);
    if (spec.precision >= 0) format += '.' + std::to_string(spec.precision);
    format += conversion;
    const int n = std::snprintf(nullptr, 0, format.c_str(), value);
    if (n < 0) return false;
    std::vector<char> text(static_cast<std::size_t>(n) + 1);
    std::snprintf(text.data(), text.size(), format.c_str(), value);
    for (int i = 0; i < n; ++i) out_.Put(static_cast<Unit>(text[static_cast<std::size_t>(i)]));
    return true;
  }

  Sink<Unit>& out_;
  Args& args_;
};

// A char/WCHAR conversion reads the code-page tables, which are pageable on Windows: above
// APC_LEVEL it faults there (when the page is out), and the environment's verifier reports it
// every time. Without a current environment there is no IRQL to check.
void CheckConversionIrql(const char* service) {
  ndksim::kernel::Environment::Impl* s = ndksim::kernel::CurrentEnvironmentIfAny();
  if (s == nullptr) return;
  const KIRQL irql = s->Current().irql;
  if (irql <= APC_LEVEL) return;
  s->Fail("IRQL",
          fmt::format("{} converted between char and WCHAR characters at IRQL {}: the code-page tables are pageable "
                      "(IRQL <= APC_LEVEL)",
                      service, irql),
          ndksim::kernel::Site{});
}

// The Cb/Cch printf: cch characters at dest, the result NUL-terminated.
template <typename Unit>
NTSTATUS VPrintf(Unit* dest, std::size_t cch, const Unit* format, va_list args, const char* service) {
  if (dest == nullptr || cch == 0) return STATUS_INVALID_PARAMETER;
  if (cch > kMaxCch || format == nullptr) {
    dest[0] = 0;
    return STATUS_INVALID_PARAMETER;
  }
  Sink<Unit> out{dest, cch - 1};
  VaArgs arguments(args);
  Formatter<Unit, VaArgs> formatter(out, arguments);
  if (!formatter.Run(format)) {
    dest[0] = 0;
    return STATUS_INVALID_PARAMETER;
  }
  if (formatter.converted) CheckConversionIrql(service);
  dest[std::min(out.length, out.capacity)] = 0;
  return out.length > out.capacity ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS;
}

template <typename Unit>
constexpr NTSTATUS Copy(Unit* dest, std::size_t cch, const Unit* src) {
  if (dest == nullptr || cch == 0) return STATUS_INVALID_PARAMETER;
  if (cch > kMaxCch || src == nullptr) {
    dest[0] = 0;
    return STATUS_INVALID_PARAMETER;
  }
  std::size_t n = 0;
  while (n < cch - 1 && src[n] != 0) {
    dest[n] = src[n];
    ++n;
  }
  dest[n] = 0;
  return src[n] != 0 ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS;
}

// Characters before the NUL, which must lie within cch_max.
template <typename Unit>
constexpr NTSTATUS Length(const Unit* text, std::size_t cch_max, std::size_t* length) {
  NTSTATUS status = STATUS_INVALID_PARAMETER;
  std::size_t n = 0;
  if (text != nullptr && cch_max <= kMaxCch) {
    while (n < cch_max && text[n] != 0) ++n;
    if (n < cch_max) status = STATUS_SUCCESS;
  }
  if (length != nullptr) *length = NT_SUCCESS(status) ? n : 0;
  return status;
}

// Appends src to the string in dest; the buffer is left alone unless its string is terminated.
template <typename Unit>
constexpr NTSTATUS Cat(Unit* dest, std::size_t cch, const Unit* src) {
  if (dest == nullptr || cch == 0 || cch > kMaxCch || src == nullptr) return STATUS_INVALID_PARAMETER;
  std::size_t used = 0;
  if (!NT_SUCCESS(Length(dest, cch, &used))) return STATUS_INVALID_PARAMETER;
  return Copy(dest + used, cch - used, src);
}

NTSTATUS UnicodeStringVPrintf(PUNICODE_STRING string, const WCHAR* format, va_list args, const char* service) {
  if (string == nullptr || format == nullptr || string->Length % sizeof(WCHAR) != 0 ||
      string->MaximumLength % sizeof(WCHAR) != 0 || string->Length > string->MaximumLength ||
      string->MaximumLength > kUnicodeStringMaxCch * sizeof(WCHAR) ||
      (string->Buffer == nullptr && string->MaximumLength != 0)) {
    return STATUS_INVALID_PARAMETER;
  }
  Sink<WCHAR> out{string->Buffer, string->MaximumLength / sizeof(WCHAR)};
  VaArgs arguments(args);
  Formatter<WCHAR, VaArgs> formatter(out, arguments);
  if (!formatter.Run(format)) {
    string->Length = 0;
    return STATUS_INVALID_PARAMETER;
  }
  if (formatter.converted) CheckConversionIrql(service);
  string->Length = static_cast<USHORT>(std::min(out.length, out.capacity) * sizeof(WCHAR));
  return out.length > out.capacity ? STATUS_BUFFER_OVERFLOW : STATUS_SUCCESS;
}

}  // namespace

namespace ndksim::kernel {

std::string FormatNarrow(const char* format, va_list args, std::size_t capacity, const char* service) {
  std::string text(capacity, '\0');
  Sink<char> out{text.data(), capacity};
  VaArgs arguments(args);
  Formatter<char, VaArgs> formatter(out, arguments);
  (void)formatter.Run(format);  // false: the text so far, as the runtime stops there
  if (formatter.converted) CheckConversionIrql(service);
  text.resize(std::min(out.length, capacity));
  return text;
}

}  // namespace ndksim::kernel

extern "C" {

// ---- printf ----

NTSTATUS RtlStringCchVPrintfA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszFormat, va_list argList) {
  return VPrintf(pszDest, cchDest, pszFormat, argList, "RtlStringCchVPrintfA");
}

NTSTATUS RtlStringCchVPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszFormat, va_list argList) {
  return VPrintf(pszDest, cchDest, pszFormat, argList, "RtlStringCchVPrintfW");
}

NTSTATUS RtlStringCbVPrintfA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszFormat, va_list argList) {
  return VPrintf(pszDest, cbDest, pszFormat, argList, "RtlStringCbVPrintfA");
}

NTSTATUS RtlStringCbVPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszFormat, va_list argList) {
  return VPrintf(pszDest, cbDest / sizeof(WCHAR), pszFormat, argList, "RtlStringCbVPrintfW");
}

NTSTATUS RtlStringCchPrintfA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszFormat, ...) {
  va_list args;
  va_start(args, pszFormat);
  const NTSTATUS status = VPrintf(pszDest, cchDest, pszFormat, args, "RtlStringCchPrintfA");
  va_end(args);
  return status;
}

NTSTATUS RtlStringCchPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszFormat, ...) {
  va_list args;
  va_start(args, pszFormat);
  const NTSTATUS status = VPrintf(pszDest, cchDest, pszFormat, args, "RtlStringCchPrintfW");
  va_end(args);
  return status;
}

NTSTATUS RtlStringCbPrintfA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszFormat, ...) {
  va_list args;
  va_start(args, pszFormat);
  const NTSTATUS status = VPrintf(pszDest, cbDest, pszFormat, args, "RtlStringCbPrintfA");
  va_end(args);
  return status;
}

NTSTATUS RtlStringCbPrintfW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszFormat, ...) {
  va_list args;
  va_start(args, pszFormat);
  const NTSTATUS status = VPrintf(pszDest, cbDest / sizeof(WCHAR), pszFormat, args, "RtlStringCbPrintfW");
  va_end(args);
  return status;
}

NTSTATUS RtlUnicodeStringVPrintf(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszFormat, va_list argList) {
  return UnicodeStringVPrintf(DestinationString, pszFormat, argList, "RtlUnicodeStringVPrintf");
}

NTSTATUS RtlUnicodeStringPrintf(PUNICODE_STRING DestinationString, NTSTRSAFE_PCWSTR pszFormat, ...) {
  va_list args;
  va_start(args, pszFormat);
  const NTSTATUS status = UnicodeStringVPrintf(DestinationString, pszFormat, args, "RtlUnicodeStringPrintf");
  va_end(args);
  return status;
}

// ---- copy, concatenate, measure ----

NTSTATUS RtlStringCchCopyA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc) {
  return Copy(pszDest, cchDest, pszSrc);
}
NTSTATUS RtlStringCchCopyW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc) {
  return Copy(pszDest, cchDest, pszSrc);
}
NTSTATUS RtlStringCbCopyA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszSrc) {
  return Copy(pszDest, cbDest, pszSrc);
}
NTSTATUS RtlStringCbCopyW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszSrc) {
  return Copy(pszDest, cbDest / sizeof(WCHAR), pszSrc);
}

NTSTATUS RtlStringCchCatA(NTSTRSAFE_PSTR pszDest, size_t cchDest, NTSTRSAFE_PCSTR pszSrc) {
  return Cat(pszDest, cchDest, pszSrc);
}
NTSTATUS RtlStringCchCatW(NTSTRSAFE_PWSTR pszDest, size_t cchDest, NTSTRSAFE_PCWSTR pszSrc) {
  return Cat(pszDest, cchDest, pszSrc);
}
NTSTATUS RtlStringCbCatA(NTSTRSAFE_PSTR pszDest, size_t cbDest, NTSTRSAFE_PCSTR pszSrc) {
  return Cat(pszDest, cbDest, pszSrc);
}
NTSTATUS RtlStringCbCatW(NTSTRSAFE_PWSTR pszDest, size_t cbDest, NTSTRSAFE_PCWSTR pszSrc) {
  return Cat(pszDest, cbDest / sizeof(WCHAR), pszSrc);
}

NTSTATUS RtlStringCchLengthA(NTSTRSAFE_PCSTR psz, size_t cchMax, size_t* pcchLength) {
  return Length(psz, cchMax, pcchLength);
}
NTSTATUS RtlStringCchLengthW(NTSTRSAFE_PCWSTR psz, size_t cchMax, size_t* pcchLength) {
  return Length(psz, cchMax, pcchLength);
}
NTSTATUS RtlStringCbLengthA(NTSTRSAFE_PCSTR psz, size_t cbMax, size_t* pcbLength) {
  return Length(psz, cbMax, pcbLength);
}
NTSTATUS RtlStringCbLengthW(NTSTRSAFE_PCWSTR psz, size_t cbMax, size_t* pcbLength) {
  size_t characters = 0;
  // The limit is NTSTRSAFE_MAX_CCH characters' bytes; an odd last byte holds no character.
  const NTSTATUS status =
      cbMax <= kMaxCch * sizeof(WCHAR) ? Length(psz, cbMax / sizeof(WCHAR), &characters) : STATUS_INVALID_PARAMETER;
  if (pcbLength != nullptr) *pcbLength = characters * sizeof(WCHAR);
  return status;
}

}  // extern "C"
