// SPDX-License-Identifier: MIT
// The WDK services of wdm.h, for C code: each finds the current environment, checks what Driver
// Verifier checks, and acts on the environment's state.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "kernel_state.h"
#include "wdmsec.h"
#include "site_macros_off.h"

using ndksim::kernel::Context;
using ndksim::kernel::CurrentEnvironment;
using ndksim::kernel::BlockKind;
using ndksim::kernel::DispatcherObject;
using ndksim::kernel::Driver;
using ndksim::kernel::IoWorkItemRecord;
using ndksim::kernel::ObjectOf;
using ndksim::kernel::Site;
using ndksim::kernel::ThreadObject;
using ndksim::kernel::WaitOutcome;
using ndksim::kernel::WaitType;
using ndksim::kernel::Work;
using Impl = ndksim::kernel::Environment::Impl;

namespace ndksim::kernel {
namespace {

// What the kernel runtime reads for a conversion, and the argument kinds that satisfy it (wdm.h's
// NDKSIM_ARG_KIND: 1 an int or smaller, 2 a 64-bit integer, 3 a double, 4 a char string, 5 a WCHAR
// string, 6 a UNICODE_STRING*, 7 an ANSI_STRING*, 8 any other pointer).
struct Expected {
  const char* what;
  unsigned kinds;  // bit k: kind k is accepted
};
constexpr unsigned Bit(unsigned kind) { return 1u << kind; }
constexpr unsigned kAnyPointer = Bit(4) | Bit(5) | Bit(6) | Bit(7) | Bit(8);

const char* KindName(UCHAR kind) {
  switch (kind) {
    case 1: return "an int";
    case 2: return "a 64-bit integer";
    case 3: return "a double";
    case 4: return "a char string";
    case 5: return "a WCHAR string";
    case 6: return "a UNICODE_STRING pointer";
    case 7: return "an ANSI_STRING pointer";
    default: return "a pointer";
  }
}

}  // namespace

// The first argument of a DbgPrint call whose kind its format's conversion does not take, or "":
// Windows is LLP64, so %ld and %lx take 32 bits and %I64d, %lld, %Iu, %zu 64; %s takes a char
// string, %ws and %S a WCHAR one, %Z an ANSI_STRING*, %wZ a UNICODE_STRING*. A string conversion
// also takes an untyped pointer (a PVOID holding a string), and %p a 64-bit integer (a ULONG_PTR).
std::string FormatMismatch(const char* format, ULONG count, const UCHAR* kinds) {
  ULONG next = 1;  // kinds[0] is the format's own
  const auto take = [&](const Expected& e, std::size_t at) -> std::string {
    if (next >= count) {
      return fmt::format("the conversion at offset {} reads {} that the call does not pass", at, e.what);
    }
    const UCHAR kind = kinds[next++];
    if ((e.kinds & Bit(kind)) != 0) return {};
    return fmt::format("argument {} is {}, but the conversion at offset {} reads {}", next - 1, KindName(kind), at,
                       e.what);
  };
  for (std::size_t i = 0; format[i] != '\0'; ++i) {
    if (format[i] != '%') continue;
    const std::size_t at = i++;
    if (format[i] == '%') continue;
    while (format[i] != '\0' && std::strchr("-+ #0", format[i]) != nullptr) ++i;
    const Expected star{"an int (a * width or precision)", Bit(1)};
    if (format[i] == '*') {
      if (std::string w = take(star, at); !w.empty()) return w;
      ++i;
    }
    while (std::isdigit(static_cast<unsigned char>(format[i]))) ++i;
    if (format[i] == '.') {
      ++i;
      if (format[i] == '*') {
        if (std::string w = take(star, at); !w.empty()) return w;
        ++i;
      }
      while (std::isdigit(static_cast<unsigned char>(format[i]))) ++i;
    }
    // The size prefix: 0 none, 1 short (h, hh), 2 32-bit (l, I32), 3 64-bit (ll, L, I64, I, z, j, t), 4 wide (w).
    int size = 0;
    if (std::strncmp(format + i, "I64", 3) == 0) {
      size = 3, i += 3;
    } else if (std::strncmp(format + i, "I32", 3) == 0) {
      size = 2, i += 3;
    } else if (format[i] == 'I' || format[i] == 'z' || format[i] == 'j' || format[i] == 't' || format[i] == 'L') {
      size = 3, ++i;
    } else if (format[i] == 'l' && format[i + 1] == 'l') {
      size = 3, i += 2;
    } else if (format[i] == 'l') {
      size = 2, ++i;
    } else if (format[i] == 'h') {
      size = 1, i += format[i + 1] == 'h' ? 2 : 1;
    } else if (format[i] == 'w') {
      size = 4, ++i;
    }
    const char type = format[i];
    if (type == '\0') break;
    Expected e{"", 0};
    switch (type) {
      case 'd': case 'i': case 'o': case 'u': case 'x': case 'X':
        e = size == 3 ? Expected{"a 64-bit integer", Bit(2)} : Expected{"a 32-bit integer", Bit(1)};
        break;
      case 'c': case 'C':
        e = {"a character (an int)", Bit(1)};
        break;
      case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'a': case 'A':
        e = {"a double", Bit(3)};
        break;
      case 'p':
        e = {"a pointer", kAnyPointer | Bit(2)};
        break;
      case 's':
        e = size == 2 || size == 4 ? Expected{"a WCHAR string", Bit(5) | Bit(8)} : Expected{"a char string", Bit(4) | Bit(8)};
        break;
      case 'S':
        e = {"a WCHAR string", Bit(5) | Bit(8)};
        break;
      case 'Z':
        e = size == 2 || size == 4 ? Expected{"a UNICODE_STRING pointer", Bit(6) | Bit(8)}
                                   : Expected{"an ANSI_STRING pointer", Bit(7) | Bit(8)};
        break;
      default:
        continue;  // %n and what the runtime does not know end the line there; they read nothing
    }
    if (std::string w = take(e, at); !w.empty()) return w;
  }
  return {};
}

}  // namespace ndksim::kernel

namespace {

// A spin lock's value while held: the holder's context.
ULONG_PTR Holder(Impl& s) { return reinterpret_cast<ULONG_PTR>(&s.Current()); }

// `waits`: the caller would spin for the lock (a try does not, so it orders no locks).
void Acquire(Impl& s, PKSPIN_LOCK lock, const Site& at, const char* service, bool waits = true) {
  Context& c = s.Current();
  if (waits) s.CheckLockOrder(lock, "spin lock", at);
  if (*lock != 0) {
    const bool mine = *lock == Holder(s);
    s.Fail("SPIN_LOCK",
           mine ? fmt::format("{} of spin lock {} that this context already holds (a deadlock)", service, fmt::ptr(lock))
                : fmt::format("{} of spin lock {} held by a context that cannot run (a deadlock)", service, fmt::ptr(lock)),
           at);
    return;
  }
  *lock = Holder(s);
  c.held.push_back(lock);
}

void Release(Impl& s, PKSPIN_LOCK lock, const Site& at, const char* service) {
  Context& c = s.Current();
  // Whether the lock is held comes first: a second KeReleaseSpinLock runs at the IRQL the first
  // restored, and is a double release before it is a release at the wrong IRQL.
  const auto it = std::find(c.held.begin(), c.held.end(), lock);
  if (*lock == 0 || it == c.held.end()) {
    s.Fail("SPIN_LOCK",
           fmt::format("{} of spin lock {}, which {}", service, fmt::ptr(lock),
                       *lock == 0 ? "is not held (released twice?)" : "another context holds"),
           at);
    return;
  }
  if (c.irql != DISPATCH_LEVEL) {
    s.Fail("SPIN_LOCK", fmt::format("{} at IRQL {}: a spin lock is released at DISPATCH_LEVEL", service, c.irql), at);
    return;
  }
  c.held.erase(it);
  *lock = 0;
}

// A kernel mutex (KMUTEX) is a lock to Driver Verifier's deadlock detection like any other: a wait
// that may block for one the thread does not own yet is an acquisition, ordered against every
// lock the thread holds. A wait with a zero timeout is a try, and orders nothing.
bool Unowned(Impl& s, const DispatcherObject* o) {
  return o != nullptr && o->kind == DispatcherObject::Kind::kMutant &&
         reinterpret_cast<const ndksim::kernel::MutantObject*>(o)->owner != &s.Current();
}

void OrderMutexes(Impl& s, std::span<DispatcherObject* const> objects, const LARGE_INTEGER* timeout, const Site& at) {
  if (timeout != nullptr && timeout->QuadPart == 0) return;
  for (const DispatcherObject* o : objects) {
    if (Unowned(s, o)) s.CheckLockOrder(o, "kernel mutex", at);
  }
}

// After the wait: the mutexes it acquired (all of them for a wait-all, the one its status names
// for a wait-any) are held, once more each.
void HoldMutexes(Impl& s, std::span<DispatcherObject* const> objects, WaitType type, NTSTATUS status) {
  const auto index = static_cast<std::size_t>(status >= STATUS_ABANDONED_WAIT_0 ? status - STATUS_ABANDONED_WAIT_0
                                                                               : status - STATUS_WAIT_0);
  if (index >= objects.size()) return;  // a timeout, an alert, a failure
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if ((type == WaitType::kAll || i == index) && objects[i]->kind == DispatcherObject::Kind::kMutant) {
      s.WaitableAcquired(objects[i], "kernel mutex");
    }
  }
}

// The required POOL_FLAGS (the low 32 bits) this pool satisfies. Session pool (POOL_FLAG_SESSION)
// is not among them: the environment has no sessions. Quota is charged to the system process, which
// has no limit; every block is cache aligned already (Environment::Impl::Allocate).
constexpr POOL_FLAGS kRequiredPoolFlags = POOL_FLAG_OPTIONAL_START - 1;
constexpr POOL_FLAGS kSatisfiedPoolFlags = POOL_FLAG_USE_QUOTA | POOL_FLAG_UNINITIALIZED | POOL_FLAG_CACHE_ALIGNED |
                                           POOL_FLAG_RAISE_ON_FAILURE | POOL_FLAG_NON_PAGED |
                                           POOL_FLAG_NON_PAGED_EXECUTE | POOL_FLAG_PAGED;

// ExAllocatePool2's and ExAllocatePool3's allocation. `satisfiable`: false when an extended
// parameter asks what this pool cannot give, which fails the allocation as a required flag does.
PVOID AllocatePool(Impl& s, POOL_FLAGS flags, SIZE_T bytes, ULONG tag, const Site& at, const char* service,
                   bool satisfiable = true) {
  const POOL_FLAGS kinds = flags & (POOL_FLAG_NON_PAGED | POOL_FLAG_NON_PAGED_EXECUTE | POOL_FLAG_PAGED);
  if (kinds == 0 || (kinds & (kinds - 1)) != 0) {
    s.Fail("POOL", fmt::format("{} with flags {:#x}: exactly one of POOL_FLAG_NON_PAGED, "
                               "POOL_FLAG_NON_PAGED_EXECUTE and POOL_FLAG_PAGED is required", service, flags),
           at);
    return nullptr;
  }
  PVOID p = nullptr;
  if (satisfiable && (flags & kRequiredPoolFlags & ~kSatisfiedPoolFlags) == 0) {
    p = s.Allocate(bytes, tag, (flags & POOL_FLAG_UNINITIALIZED) == 0, kinds == POOL_FLAG_PAGED, at, BlockKind::kPool);
  }
  if (p == nullptr && (flags & POOL_FLAG_RAISE_ON_FAILURE) != 0) ExRaiseStatus(STATUS_INSUFFICIENT_RESOURCES);
  return p;
}

bool ValidPoolPriority(EX_POOL_PRIORITY priority) {
  switch (priority) {
    case LowPoolPriority:
    case LowPoolPrioritySpecialPoolOverrun:
    case LowPoolPrioritySpecialPoolUnderrun:
    case NormalPoolPriority:
    case NormalPoolPrioritySpecialPoolOverrun:
    case NormalPoolPrioritySpecialPoolUnderrun:
    case HighPoolPriority:
    case HighPoolPrioritySpecialPoolOverrun:
    case HighPoolPrioritySpecialPoolUnderrun:
      return true;
  }
  return false;
}

// What the pool makes of ExAllocatePool3's (or ExFreePool2's) extended parameters.
enum class ParameterCheck : std::uint8_t {
  kSatisfiable,
  kUnsatisfiable,  // a required one asks what the pool cannot give: the allocation fails
  kRefused,        // the call is malformed or asks for a secure pool: the run has failed
};

// An optional parameter the pool cannot satisfy is ignored, as Windows may ignore it. A required
// secure-pool parameter fails the run: secure pools are not modelled.
ParameterCheck CheckExtendedParameters(Impl& s, POOL_FLAGS flags, PCPOOL_EXTENDED_PARAMETER parameters, ULONG count,
                                       const Site& at, const char* service) {
  if (count != 0 && parameters == nullptr) {
    s.Fail("POOL", fmt::format("{} with {} extended parameter(s) and no array of them", service, count), at);
    return ParameterCheck::kRefused;
  }
  ParameterCheck result = ParameterCheck::kSatisfiable;
  for (ULONG i = 0; i < count; ++i) {
    const POOL_EXTENDED_PARAMETER& p = parameters[i];
    if (p.Optional != 0) continue;
    bool satisfied = true;
    switch (static_cast<ULONG64>(p.Type)) {
      case PoolExtendedParameterPriority:
        satisfied = ValidPoolPriority(p.Priority);
        break;
      case PoolExtendedParameterNumaNode:
        // One NUMA node, node 0. The preference binds only nonpaged pool.
        satisfied =
            (flags & POOL_FLAG_NON_PAGED) == 0 || (p.PreferredNode & MM_ANY_NODE_OK) != 0 || p.PreferredNode == 0;
        break;
      case PoolExtendedParameterSecurePool:
        s.Fail("POOL",
               fmt::format("{} with a secure-pool parameter: the kernel environment has no secure pools", service), at);
        return ParameterCheck::kRefused;
      default:
        satisfied = false;  // a required parameter the pool does not know
        break;
    }
    if (!satisfied) result = ParameterCheck::kUnsatisfiable;
  }
  return result;
}

bool PagedType(POOL_TYPE type) { return (static_cast<int>(type) & 1) != 0; }

IoWorkItemRecord* Record(PIO_WORKITEM item) { return reinterpret_cast<IoWorkItemRecord*>(item); }

// ---- device object security (wdmsec.h) ----

// A UNICODE_STRING's text as the C headers' 16-bit WCHARs, from an ASCII literal.
template <std::size_t N>
struct WideLiteral {
  WCHAR text[N];
  explicit constexpr WideLiteral(const char (&ascii)[N]) : text{} {
    for (std::size_t i = 0; i < N; ++i) text[i] = static_cast<WCHAR>(ascii[i]);
  }
};

template <std::size_t N>
constexpr UNICODE_STRING CountedString(const WideLiteral<N>& literal) {
  return UNICODE_STRING{static_cast<USHORT>((N - 1) * sizeof(WCHAR)), static_cast<USHORT>(N * sizeof(WCHAR)),
                        const_cast<PWCH>(literal.text)};
}

constexpr WideLiteral kKernelOnly("D:P");
constexpr WideLiteral kSysAll("D:P(A;;GA;;;SY)");
constexpr WideLiteral kSysAllAdmAll("D:P(A;;GA;;;SY)(A;;GA;;;BA)");
constexpr WideLiteral kSysAllAdmRx("D:P(A;;GA;;;SY)(A;;GRGX;;;BA)");
constexpr WideLiteral kSysAllAdmRwxWorldR("D:P(A;;GA;;;SY)(A;;GRGWGX;;;BA)(A;;GR;;;WD)");
constexpr WideLiteral kSysAllAdmRwxWorldRResR("D:P(A;;GA;;;SY)(A;;GRGWGX;;;BA)(A;;GR;;;WD)(A;;GR;;;RC)");
constexpr WideLiteral kSysAllAdmRwxWorldRwResR("D:P(A;;GA;;;SY)(A;;GRGWGX;;;BA)(A;;GRGW;;;WD)(A;;GR;;;RC)");
constexpr WideLiteral kSysAllAdmRwxWorldRwxResRwx(
    "D:P(A;;GA;;;SY)(A;;GRGWGX;;;BA)(A;;GRGWGX;;;WD)(A;;GRGWGX;;;RC)");

// An ACE's rights: "0x" and hex digits, or two-letter codes for generic and standard rights.
bool IsSddlRights(std::string_view rights) {
  if (rights.starts_with("0x") || rights.starts_with("0X")) {
    rights.remove_prefix(2);
    return !rights.empty() && rights.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
  }
  if (rights.empty() || rights.size() % 2 != 0) return false;
  constexpr std::array<std::string_view, 8> kCodes = {"GA", "GR", "GW", "GX", "RC", "SD", "WD", "WO"};
  for (std::size_t i = 0; i < rights.size(); i += 2) {
    if (std::find(kCodes.begin(), kCodes.end(), rights.substr(i, 2)) == kCodes.end()) return false;
  }
  return true;
}

// An ACE's trustee: a two-letter SID alias (SY, BA, WD, ...) or a SID string ("S-1-5-18").
bool IsSddlSid(std::string_view sid) {
  if (sid.size() == 2) return sid.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == std::string_view::npos;
  return sid.starts_with("S-1-") && sid.size() > 4 &&
         sid.find_first_not_of("0123456789-", 4) == std::string_view::npos;
}

// The subset of SDDL IoCreateDeviceSecure takes: "D:P" followed by ACEs "(A;;<rights>;;;<SID>)".
bool IsDeviceObjectSddl(PCUNICODE_STRING sddl) {
  if (sddl == nullptr || sddl->Buffer == nullptr || sddl->Length % sizeof(WCHAR) != 0) return false;
  std::string text;
  for (USHORT i = 0; i < sddl->Length / sizeof(WCHAR); ++i) {
    if (sddl->Buffer[i] == 0 || sddl->Buffer[i] > 0x7F) return false;
    text.push_back(static_cast<char>(sddl->Buffer[i]));
  }
  std::string_view rest = text;
  if (!rest.starts_with("D:P")) return false;
  rest.remove_prefix(3);
  while (!rest.empty()) {
    if (!rest.starts_with("(A;;")) return false;
    rest.remove_prefix(4);
    const std::size_t rights_end = rest.find(';');
    if (rights_end == std::string_view::npos || !IsSddlRights(rest.substr(0, rights_end))) return false;
    rest.remove_prefix(rights_end);
    if (!rest.starts_with(";;;")) return false;
    rest.remove_prefix(3);
    const std::size_t sid_end = rest.find(')');
    if (sid_end == std::string_view::npos || !IsSddlSid(rest.substr(0, sid_end))) return false;
    rest.remove_prefix(sid_end + 1);
  }
  return true;
}

}  // namespace

extern "C" {

VOID NdksimSetSite(PCSTR File, ULONG Line, PCSTR Function) {
  Impl& s = CurrentEnvironment();
  s.site = Site{File, Line, Function};
}

// ---- IRQL ----

KIRQL KeGetCurrentIrql(VOID) { return CurrentEnvironment().Current().irql; }

VOID KeRaiseIrql(KIRQL NewIrql, PKIRQL OldIrql) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  const KIRQL now = s.Current().irql;
  if (NewIrql < now || NewIrql > HIGH_LEVEL) {
    s.Fail("IRQL", fmt::format("KeRaiseIrql to {} from {} (IRQL_NOT_GREATER_OR_EQUAL)", NewIrql, now), at);
    return;
  }
  *OldIrql = now;
  s.SetIrql(NewIrql);
}

VOID KeLowerIrql(KIRQL NewIrql) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  const KIRQL now = s.Current().irql;
  if (NewIrql > now) {
    s.Fail("IRQL", fmt::format("KeLowerIrql to {} from {} (IRQL_NOT_LESS_OR_EQUAL)", NewIrql, now), at);
    return;
  }
  if (NewIrql < DISPATCH_LEVEL && !s.Current().held.empty()) {
    s.Fail("SPIN_LOCK", fmt::format("KeLowerIrql to {} while holding {} spin lock(s)", NewIrql, s.Current().held.size()), at);
    return;
  }
  s.SetIrql(NewIrql);
}

KIRQL KeRaiseIrqlToDpcLevel(VOID) {
  Impl& s = CurrentEnvironment();
  const KIRQL now = s.Current().irql;
  if (now > DISPATCH_LEVEL) {
    s.Fail("IRQL", fmt::format("KeRaiseIrqlToDpcLevel from {} (IRQL_NOT_GREATER_OR_EQUAL)", now), s.TakeSite());
    return now;
  }
  s.SetIrql(DISPATCH_LEVEL);
  return now;
}

VOID NdksimPagedCode(VOID) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  if (s.Current().irql > APC_LEVEL) {
    s.Fail("IRQL", fmt::format("pageable code (PAGED_CODE) runs at IRQL {}", s.Current().irql), at);
  }
}

// ---- debugging ----

VOID NdksimFatalListEntryError(PVOID P1, PVOID P2, PVOID P3) {
  Impl& s = CurrentEnvironment();
  s.FailFatal("LIST", fmt::format("a corrupt list entry: {} <- {} -> {} (KERNEL_SECURITY_CHECK_FAILURE)", P1, P2, P3),
              s.TakeSite());
}

VOID NdksimAssertFailed(PCSTR Expression, PCSTR File, ULONG Line, PCSTR Function) {
  Impl& s = CurrentEnvironment();
  s.Fail("ASSERT", fmt::format("NT_ASSERT({}) failed", Expression), Site{File, Line, Function});
}

VOID KeBugCheckEx(ULONG BugCheckCode, ULONG_PTR P1, ULONG_PTR P2, ULONG_PTR P3, ULONG_PTR P4) {
  Impl& s = CurrentEnvironment();
  s.FailFatal("BUGCHECK", fmt::format("KeBugCheckEx({:#x}, {:#x}, {:#x}, {:#x}, {:#x})", BugCheckCode, P1, P2, P3, P4),
              s.TakeSite());
}

VOID KeBugCheck(ULONG BugCheckCode) { KeBugCheckEx(BugCheckCode, 0, 0, 0, 0); }

VOID ExRaiseStatus(NTSTATUS Status) {
  Impl& s = CurrentEnvironment();
  s.FailFatal("RAISE",
              fmt::format("ExRaiseStatus({:#010x}): an exception, which no __except handler takes here",
                          static_cast<ULONG>(Status)),
              s.TakeSite());
}

// ProbeForRead's and ProbeForWrite's checks; the exception they raise, if any.
static void Probe(Impl& s, const volatile void* address, SIZE_T length, ULONG alignment, const char* service) {
  if (length == 0) return;
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  const Site at = s.TakeSite();
  NTSTATUS status = STATUS_SUCCESS;
  if (alignment != 0 && start % alignment != 0) {
    status = STATUS_DATATYPE_MISALIGNMENT;
  } else if (start < 0x10000 || start + length < start) {
    status = STATUS_ACCESS_VIOLATION;
  }
  if (status == STATUS_SUCCESS) return;
  s.FailFatal("RAISE",
              fmt::format("{} of {} bytes at {} raises {:#010x}, which no __except handler takes here", service, length,
                          fmt::ptr(const_cast<const void*>(address)), static_cast<ULONG>(status)),
              at);
}

VOID ProbeForRead(const volatile VOID* Address, SIZE_T Length, ULONG Alignment) {
  Probe(CurrentEnvironment(), Address, Length, Alignment, "ProbeForRead");
}

VOID ProbeForWrite(volatile VOID* Address, SIZE_T Length, ULONG Alignment) {
  Probe(CurrentEnvironment(), Address, Length, Alignment, "ProbeForWrite");
}

VOID DbgBreakPoint(VOID) {
  Impl& s = CurrentEnvironment();
  s.Fail("BREAKPOINT", "DbgBreakPoint", s.TakeSite());
}

ULONG vDbgPrintEx(ULONG ComponentId, ULONG Level, PCCH Format, va_list arglist) {
  (void)ComponentId;
  (void)Level;
  Impl& s = CurrentEnvironment();
  constexpr std::size_t kMaxLine = 1023;
  std::string line = ndksim::kernel::FormatNarrow(Format, arglist, kMaxLine, "DbgPrint");
  while (!line.empty() && line.back() == '\n') line.pop_back();
  line = fmt::format("[{} ps] {}: {}", s.fabric.Now().time_since_epoch().count(), s.CurrentName(), line);
  if (s.config.echo_debug_print) std::fprintf(stderr, "%s\n", line.c_str());
  s.debug_log.push_back(std::move(line));
  return STATUS_SUCCESS;
}

ULONG NdksimDbgPrintChecked(PCSTR File, ULONG Line, PCSTR Function, ULONG Count, const UCHAR* Kinds, ULONG ComponentId,
                            ULONG Level, PCSTR Format, ...) {
  Impl& s = CurrentEnvironment();
  const std::string why = ndksim::kernel::FormatMismatch(Format, Count, Kinds);
  if (!why.empty()) {
    // The arguments are not read: reading one as what it is not is what the check prevents.
    s.Fail("FORMAT", fmt::format("DbgPrint format \"{}\": {}", Format, why), Site{File, Line, Function});
    return STATUS_SUCCESS;
  }
  va_list args;
  va_start(args, Format);
  const ULONG r = vDbgPrintEx(ComponentId, Level, Format, args);
  va_end(args);
  return r;
}

ULONG DbgPrint(PCSTR Format, ...) {
  va_list args;
  va_start(args, Format);
  const ULONG r = vDbgPrintEx(DPFLTR_DEFAULT_ID, DPFLTR_ERROR_LEVEL, Format, args);
  va_end(args);
  return r;
}

ULONG DbgPrintEx(ULONG ComponentId, ULONG Level, PCSTR Format, ...) {
  va_list args;
  va_start(args, Format);
  const ULONG r = vDbgPrintEx(ComponentId, Level, Format, args);
  va_end(args);
  return r;
}

// ---- strings ----

VOID RtlInitUnicodeString(PUNICODE_STRING DestinationString, PCWSTR SourceString) {
  std::size_t n = 0;
  if (SourceString != nullptr) {
    while (SourceString[n] != 0) ++n;
  }
  n = std::min<std::size_t>(n, 0x7FFE);
  DestinationString->Length = static_cast<USHORT>(n * sizeof(WCHAR));
  DestinationString->MaximumLength = static_cast<USHORT>(SourceString != nullptr ? (n + 1) * sizeof(WCHAR) : 0);
  DestinationString->Buffer = const_cast<PWCH>(SourceString);
}

VOID RtlInitAnsiString(PANSI_STRING DestinationString, PCSZ SourceString) {
  const std::size_t n = SourceString != nullptr ? std::min<std::size_t>(std::strlen(SourceString), 0xFFFE) : 0;
  DestinationString->Length = static_cast<USHORT>(n);
  DestinationString->MaximumLength = static_cast<USHORT>(SourceString != nullptr ? n + 1 : 0);
  DestinationString->Buffer = const_cast<PCHAR>(SourceString);
}

BOOLEAN RtlEqualUnicodeString(PCUNICODE_STRING String1, PCUNICODE_STRING String2, BOOLEAN CaseInSensitive) {
  if (String1->Length != String2->Length) return FALSE;
  for (USHORT i = 0; i < String1->Length / 2; ++i) {
    WCHAR a = String1->Buffer[i];
    WCHAR b = String2->Buffer[i];
    if (CaseInSensitive) {
      if (a >= 'a' && a <= 'z') a = static_cast<WCHAR>(a - 32);
      if (b >= 'a' && b <= 'z') b = static_cast<WCHAR>(b - 32);
    }
    if (a != b) return FALSE;
  }
  return TRUE;
}

// ---- events and waits ----

VOID KeInitializeEvent(PRKEVENT Event, EVENT_TYPE Type, BOOLEAN State) {
  Impl& s = CurrentEnvironment();
  s.CheckNotWaitedOn(Event, sizeof(*Event), "KeInitializeEvent", s.TakeSite());
  ndksim::kernel::Dispatcher::InitializeEvent(
      ObjectOf(Event),
      Type == SynchronizationEvent ? DispatcherObject::Kind::kSynchronizationEvent : DispatcherObject::Kind::kNotificationEvent,
      State != FALSE);
}

LONG KeSetEvent(PRKEVENT Event, KPRIORITY Increment, BOOLEAN Wait) {
  (void)Increment;
  (void)Wait;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "KeSetEvent", at);
  s.CheckLiveObject(Event, "KeSetEvent", at);
  const LONG previous = s.dispatcher.SetEvent(ObjectOf(Event));
  // After the set: a waiter it woke may run before the setter goes on.
  s.PreemptionPoint(s.config.preemption.events, "KeSetEvent");
  return previous;
}

LONG KeResetEvent(PRKEVENT Event) {
  Impl& s = CurrentEnvironment();
  s.PreemptionPoint(s.config.preemption.events, "KeResetEvent");
  return ndksim::kernel::Dispatcher::ResetEvent(ObjectOf(Event));
}

VOID KeClearEvent(PRKEVENT Event) {
  Impl& s = CurrentEnvironment();
  s.PreemptionPoint(s.config.preemption.events, "KeClearEvent");
  (void)ndksim::kernel::Dispatcher::ResetEvent(ObjectOf(Event));
}
LONG KeReadStateEvent(PRKEVENT Event) { return Event->Header.SignalState; }

NTSTATUS KeWaitForSingleObject(PVOID Object, KWAIT_REASON WaitReason, KPROCESSOR_MODE WaitMode, BOOLEAN Alertable,
                               PLARGE_INTEGER Timeout) {
  (void)WaitReason;
  (void)WaitMode;
  (void)Alertable;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.PreemptionPoint(s.config.preemption.events, "KeWaitForSingleObject");
  DispatcherObject* const objects[] = {static_cast<DispatcherObject*>(Object)};
  OrderMutexes(s, objects, Timeout, at);
  const NTSTATUS status = s.Wait(objects, WaitType::kAny, Timeout, at, "KeWaitForSingleObject");
  HoldMutexes(s, objects, WaitType::kAny, status);
  return status;
}

NTSTATUS KeWaitForMultipleObjects(ULONG Count, PVOID Object[], WAIT_TYPE WaitType, KWAIT_REASON WaitReason,
                                  KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Timeout,
                                  PKWAIT_BLOCK WaitBlockArray) {
  (void)WaitReason;
  (void)WaitMode;
  (void)Alertable;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  if (Count == 0 || Count > MAXIMUM_WAIT_OBJECTS || (Count > THREAD_WAIT_OBJECTS && WaitBlockArray == nullptr) ||
      (WaitType != WaitAll && WaitType != WaitAny)) {
    s.Fail("WAIT", fmt::format("KeWaitForMultipleObjects with {} objects, {} wait block array, wait type {} "
                               "(MAXIMUM_WAIT_OBJECTS_EXCEEDED)", Count, WaitBlockArray != nullptr ? "a" : "no",
                               static_cast<int>(WaitType)),
           at);
    return STATUS_INVALID_PARAMETER;
  }
  s.PreemptionPoint(s.config.preemption.events, "KeWaitForMultipleObjects");
  std::array<DispatcherObject*, MAXIMUM_WAIT_OBJECTS> objects{};
  for (ULONG i = 0; i < Count; ++i) objects[i] = static_cast<DispatcherObject*>(Object[i]);
  const std::span<DispatcherObject* const> waited(objects.data(), Count);
  const auto type = WaitType == WaitAll ? WaitType::kAll : WaitType::kAny;
  OrderMutexes(s, waited, Timeout, at);
  const NTSTATUS status = s.Wait(waited, type, Timeout, at, "KeWaitForMultipleObjects");
  HoldMutexes(s, waited, type, status);
  return status;
}

NTSTATUS KeDelayExecutionThread(KPROCESSOR_MODE WaitMode, BOOLEAN Alertable, PLARGE_INTEGER Interval) {
  (void)WaitMode;
  (void)Alertable;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(APC_LEVEL, "KeDelayExecutionThread", at);
  if (!s.scheduler.InThread()) {
    s.Fail("IRQL", "KeDelayExecutionThread outside a kernel thread", at);
    return STATUS_SUCCESS;
  }
  DispatcherObject never{};
  ndksim::kernel::Dispatcher::InitializeEvent(never, DispatcherObject::Kind::kNotificationEvent, false);
  DispatcherObject* const objects[] = {&never};
  const ndksim::TimePoint deadline = s.DeadlineOf(*Interval);
  if (deadline <= s.fabric.Now()) {
    s.scheduler.Yield();  // a zero delay gives the processor up
    return STATUS_SUCCESS;
  }
  (void)s.dispatcher.Wait(objects, WaitType::kAny, deadline);
  return STATUS_SUCCESS;
}

// ---- spin locks ----

VOID KeInitializeSpinLock(PKSPIN_LOCK SpinLock) {
  // A lock made anew (perhaps where another lived, on a stack) has no order yet.
  if (Impl* s = ndksim::kernel::CurrentEnvironmentIfAny(); s != nullptr) {
    s->ForgetLocks(reinterpret_cast<std::uintptr_t>(SpinLock),
                   reinterpret_cast<std::uintptr_t>(SpinLock) + sizeof(*SpinLock));
  }
  *SpinLock = 0;
}

KIRQL KeAcquireSpinLockRaiseToDpc(PKSPIN_LOCK SpinLock) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.PreemptionPoint(s.config.preemption.spin_locks, "KeAcquireSpinLock");
  const KIRQL old = s.Current().irql;
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "KeAcquireSpinLock", at);
  s.Current().irql = DISPATCH_LEVEL;
  Acquire(s, SpinLock, at, "KeAcquireSpinLock");
  return old;
}

VOID KeReleaseSpinLock(PKSPIN_LOCK SpinLock, KIRQL NewIrql) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  Release(s, SpinLock, at, "KeReleaseSpinLock");
  if (NewIrql > DISPATCH_LEVEL) {
    s.Fail("IRQL", fmt::format("KeReleaseSpinLock to IRQL {}", NewIrql), at);
    return;
  }
  s.SetIrql(NewIrql);
  s.PreemptionPoint(s.config.preemption.spin_locks, "KeReleaseSpinLock");
}

VOID KeAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(DISPATCH_LEVEL, "KeAcquireSpinLockAtDpcLevel", at);
  Acquire(s, SpinLock, at, "KeAcquireSpinLockAtDpcLevel");
}

VOID KeReleaseSpinLockFromDpcLevel(PKSPIN_LOCK SpinLock) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  Release(s, SpinLock, at, "KeReleaseSpinLockFromDpcLevel");
}

BOOLEAN KeTryToAcquireSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(DISPATCH_LEVEL, "KeTryToAcquireSpinLockAtDpcLevel", at);
  if (*SpinLock != 0) return FALSE;
  Acquire(s, SpinLock, at, "KeTryToAcquireSpinLockAtDpcLevel", /*waits=*/false);
  return TRUE;
}

BOOLEAN KeTestSpinLock(PKSPIN_LOCK SpinLock) { return *SpinLock == 0 ? TRUE : FALSE; }

// The in-stack queued forms: the handle keeps the lock and the IRQL to go back to. `raise`: the
// caller may be below DISPATCH_LEVEL and is raised to it (otherwise it must be at it already).
static void AcquireQueued(PKSPIN_LOCK lock, PKLOCK_QUEUE_HANDLE handle, bool raise, const char* service) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  if (raise) {
    s.PreemptionPoint(s.config.preemption.spin_locks, service);
    s.RequireIrqlAtMost(DISPATCH_LEVEL, service, at);
  } else {
    s.RequireIrqlExactly(DISPATCH_LEVEL, service, at);
  }
  handle->OldIrql = raise ? s.Current().irql : static_cast<KIRQL>(DISPATCH_LEVEL);
  handle->LockQueue.Lock = lock;
  handle->LockQueue.Next = nullptr;
  s.Current().irql = DISPATCH_LEVEL;
  Acquire(s, lock, at, service);
}

// `lower`: back to the IRQL the handle saved (otherwise the caller stays at DISPATCH_LEVEL).
static void ReleaseQueued(PKLOCK_QUEUE_HANDLE handle, bool lower, const char* service) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  PKSPIN_LOCK lock = handle->LockQueue.Lock;
  if (lock == nullptr) {
    s.Fail("SPIN_LOCK", fmt::format("{} of a handle that holds no lock (released twice?)", service), at);
    return;
  }
  Release(s, lock, at, service);
  handle->LockQueue.Lock = nullptr;
  if (lower) {
    s.SetIrql(handle->OldIrql);
    s.PreemptionPoint(s.config.preemption.spin_locks, service);
  }
}

VOID KeAcquireInStackQueuedSpinLock(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle) {
  AcquireQueued(SpinLock, LockHandle, /*raise=*/true, "KeAcquireInStackQueuedSpinLock");
}

VOID KeReleaseInStackQueuedSpinLock(PKLOCK_QUEUE_HANDLE LockHandle) {
  ReleaseQueued(LockHandle, /*lower=*/true, "KeReleaseInStackQueuedSpinLock");
}

VOID KeAcquireInStackQueuedSpinLockAtDpcLevel(PKSPIN_LOCK SpinLock, PKLOCK_QUEUE_HANDLE LockHandle) {
  AcquireQueued(SpinLock, LockHandle, /*raise=*/false, "KeAcquireInStackQueuedSpinLockAtDpcLevel");
}

VOID KeReleaseInStackQueuedSpinLockFromDpcLevel(PKLOCK_QUEUE_HANDLE LockHandle) {
  ReleaseQueued(LockHandle, /*lower=*/false, "KeReleaseInStackQueuedSpinLockFromDpcLevel");
}

// ---- DPCs and timers ----

VOID KeInitializeDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext) {
  std::memset(Dpc, 0, sizeof(*Dpc));
  Dpc->Type = 0x13;
  Dpc->Importance = MediumImportance;
  Dpc->DeferredRoutine = DeferredRoutine;
  Dpc->DeferredContext = DeferredContext;
  // The driver the DPC's routine belongs to, for the verifier's accounting.
  Dpc->ProcessorHistory = reinterpret_cast<KAFFINITY>(CurrentEnvironment().Current().driver);
}

VOID KeInitializeThreadedDpc(PRKDPC Dpc, PKDEFERRED_ROUTINE DeferredRoutine, PVOID DeferredContext) {
  KeInitializeDpc(Dpc, DeferredRoutine, DeferredContext);
}

VOID KeSetImportanceDpc(PRKDPC Dpc, KDPC_IMPORTANCE Importance) { Dpc->Importance = static_cast<UCHAR>(Importance); }

BOOLEAN KeInsertQueueDpc(PRKDPC Dpc, PVOID SystemArgument1, PVOID SystemArgument2) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.CheckLiveObject(Dpc, "KeInsertQueueDpc", at);
  if (Dpc->DpcData != nullptr) return FALSE;
  Dpc->SystemArgument1 = SystemArgument1;
  Dpc->SystemArgument2 = SystemArgument2;
  Dpc->DpcData = Dpc;
  s.dpcs.push_back(Dpc);
  // Below DISPATCH_LEVEL the DPC interrupts the caller at once, as on its own processor.
  if (s.Current().irql < DISPATCH_LEVEL) s.RunDpcs();
  return TRUE;
}

BOOLEAN KeRemoveQueueDpc(PRKDPC Dpc) {
  Impl& s = CurrentEnvironment();
  const auto it = std::find(s.dpcs.begin(), s.dpcs.end(), Dpc);
  if (it == s.dpcs.end()) return FALSE;
  s.dpcs.erase(it);
  Dpc->DpcData = nullptr;
  return TRUE;
}

VOID KeFlushQueuedDpcs(VOID) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "KeFlushQueuedDpcs", s.TakeSite());
  s.RunDpcs();
}

VOID KeInitializeTimerEx(PKTIMER Timer, TIMER_TYPE Type) {
  Impl& s = CurrentEnvironment();
  s.CheckNotWaitedOn(Timer, sizeof(*Timer), "KeInitializeTimer", s.TakeSite());
  std::memset(Timer, 0, sizeof(*Timer));
  ndksim::kernel::Dispatcher::InitializeEvent(
      ObjectOf(Timer),
      Type == SynchronizationTimer ? DispatcherObject::Kind::kSynchronizationTimer : DispatcherObject::Kind::kNotificationTimer,
      false);
}

VOID KeInitializeTimer(PKTIMER Timer) { KeInitializeTimerEx(Timer, NotificationTimer); }

BOOLEAN KeSetTimerEx(PKTIMER Timer, LARGE_INTEGER DueTime, LONG Period, PKDPC Dpc) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "KeSetTimer", at);
  s.CheckLiveObject(Timer, "KeSetTimer", at);
  return s.SetTimer(Timer, DueTime, Period, Dpc, at) ? TRUE : FALSE;
}

BOOLEAN KeSetTimer(PKTIMER Timer, LARGE_INTEGER DueTime, PKDPC Dpc) { return KeSetTimerEx(Timer, DueTime, 0, Dpc); }

BOOLEAN KeCancelTimer(PKTIMER Timer) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "KeCancelTimer", s.TakeSite());
  return s.CancelTimer(Timer) ? TRUE : FALSE;
}

BOOLEAN KeReadStateTimer(PKTIMER Timer) { return Timer->Header.SignalState != 0 ? TRUE : FALSE; }

// ---- time ----

ULONGLONG KeQueryInterruptTime(VOID) { return CurrentEnvironment().InterruptTime(); }

ULONGLONG KeQueryInterruptTimePrecise(PULONG64 QpcTimeStamp) {
  const ULONGLONG t = CurrentEnvironment().InterruptTime();
  if (QpcTimeStamp != nullptr) *QpcTimeStamp = t;
  return t;
}

VOID KeQuerySystemTime(PLARGE_INTEGER CurrentTime) {
  CurrentTime->QuadPart = static_cast<LONG64>(Impl::kSystemTimeEpoch + CurrentEnvironment().InterruptTime());
}

VOID KeQuerySystemTimePrecise(PLARGE_INTEGER CurrentTime) { KeQuerySystemTime(CurrentTime); }

LARGE_INTEGER KeQueryPerformanceCounter(PLARGE_INTEGER PerformanceFrequency) {
  if (PerformanceFrequency != nullptr) PerformanceFrequency->QuadPart = 10'000'000;
  LARGE_INTEGER now;
  now.QuadPart = static_cast<LONG64>(CurrentEnvironment().InterruptTime());
  return now;
}

// The 15.625-ms clock tick, in 100 ns.
constexpr ULONG kTimeIncrement = 156'250;

ULONG KeQueryTimeIncrement(VOID) { return kTimeIncrement; }

VOID KeQueryTickCount(PLARGE_INTEGER CurrentCount) {
  CurrentCount->QuadPart = static_cast<LONG64>(CurrentEnvironment().InterruptTime() / kTimeIncrement);
}

// Busy-waits on a real processor; simulated time does not move while a kernel thread runs.
VOID KeStallExecutionProcessor(ULONG MicroSeconds) { (void)MicroSeconds; }

// ---- threads ----

static ThreadObject* ThreadFromHandle(Impl& s, HANDLE handle) {
  for (const auto& t : s.thread_objects) {
    if (static_cast<HANDLE>(t.get()) == handle && t->handle_open) return t.get();
  }
  return nullptr;
}

static POBJECT_TYPE thread_type_value = reinterpret_cast<POBJECT_TYPE>(&thread_type_value);
POBJECT_TYPE* PsThreadType = &thread_type_value;

NTSTATUS PsCreateSystemThread(PHANDLE ThreadHandle, ULONG DesiredAccess, POBJECT_ATTRIBUTES ObjectAttributes,
                              HANDLE ProcessHandle, PCLIENT_ID ClientId, PKSTART_ROUTINE StartRoutine,
                              PVOID StartContext) {
  (void)DesiredAccess;
  (void)ObjectAttributes;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "PsCreateSystemThread", at);
  if (ThreadHandle == nullptr || StartRoutine == nullptr ||
      (ProcessHandle != nullptr && ProcessHandle != NtCurrentProcess())) {
    return STATUS_INVALID_PARAMETER;
  }
  auto object = std::make_unique<ThreadObject>();
  ThreadObject* t = object.get();
  ndksim::kernel::Dispatcher::InitializeEvent(ObjectOf(&t->header), DispatcherObject::Kind::kThread, false);
  t->handle_open = true;
  t->references = 1;
  const Context& creator = s.Current();
  s.thread_objects.push_back(std::move(object));
  const std::string owner = creator.driver != nullptr ? creator.driver->name : std::string("system");
  const auto id = s.StartKernelThread(fmt::format("{}!thread {}", owner, s.thread_objects.size()), creator.machine,
                                      creator.driver, [StartRoutine, StartContext] { StartRoutine(StartContext); }, t);
  *ThreadHandle = static_cast<HANDLE>(t);
  if (ClientId != nullptr) {
    ClientId->UniqueProcess = reinterpret_cast<HANDLE>(static_cast<ULONG_PTR>(4));
    ClientId->UniqueThread = reinterpret_cast<HANDLE>(static_cast<ULONG_PTR>(id + 8) * 4);
  }
  return STATUS_SUCCESS;
}

NTSTATUS PsTerminateSystemThread(NTSTATUS ExitStatus) {
  Impl& s = CurrentEnvironment();
  if (!s.scheduler.InThread()) s.FailFatal("THREAD", "PsTerminateSystemThread outside a system thread", s.TakeSite());
  throw ndksim::kernel::PsTerminated{ExitStatus};
}

PKTHREAD KeGetCurrentThread(VOID) {
  Impl& s = CurrentEnvironment();
  if (!s.scheduler.InThread()) return nullptr;
  Context& c = s.Current();
  return reinterpret_cast<PKTHREAD>(&c);
}

PETHREAD PsGetCurrentThread(VOID) { return reinterpret_cast<PETHREAD>(KeGetCurrentThread()); }

HANDLE PsGetCurrentThreadId(VOID) {
  Impl& s = CurrentEnvironment();
  if (!s.scheduler.InThread()) return nullptr;
  return reinterpret_cast<HANDLE>(static_cast<ULONG_PTR>(s.scheduler.Current() + 8) * 4);
}

BOOLEAN PsIsSystemThread(PETHREAD Thread) { return Thread != nullptr ? TRUE : FALSE; }

// ---- processors ----
// Kernel threads, DPCs and callbacks run one at a time, so each machine has one processor:
// processor 0 of group 0, in NUMA node 0.

ULONG KeGetCurrentProcessorNumber(VOID) { return 0; }

ULONG KeGetCurrentProcessorNumberEx(PPROCESSOR_NUMBER ProcNumber) {
  if (ProcNumber != nullptr) {
    ProcNumber->Group = 0;
    ProcNumber->Number = 0;
    ProcNumber->Reserved = 0;
  }
  return 0;
}

ULONG KeQueryActiveProcessorCount(PKAFFINITY ActiveProcessors) {
  if (ActiveProcessors != nullptr) *ActiveProcessors = 1;
  return 1;
}

ULONG KeQueryActiveProcessorCountEx(USHORT GroupNumber) {
  return GroupNumber == 0 || GroupNumber == ALL_PROCESSOR_GROUPS ? 1 : 0;
}

USHORT KeQueryActiveGroupCount(VOID) { return 1; }
USHORT KeGetCurrentNodeNumber(VOID) { return 0; }
USHORT KeQueryHighestNodeNumber(VOID) { return 0; }

VOID KeQueryNodeActiveAffinity(USHORT NodeNumber, PGROUP_AFFINITY Affinity, PUSHORT Count) {
  const bool exists = NodeNumber == 0;
  if (Affinity != nullptr) {
    std::memset(Affinity, 0, sizeof(*Affinity));
    Affinity->Mask = exists ? 1 : 0;
  }
  if (Count != nullptr) *Count = exists ? 1 : 0;
}

// ---- critical and guarded regions ----
// APCs are not delivered in the environment; the regions' nesting is kept per kernel thread and
// checked, and Environment::Impl::CheckRegionsLeft checks it at the thread's or work item's end.

static void EnterRegion(std::uint32_t Context::*count, const char* service) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlAtMost(APC_LEVEL, service, s.TakeSite());
  ++(s.Current().*count);
}

static void LeaveRegion(std::uint32_t Context::*count, const char* service, const char* enter) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(APC_LEVEL, service, at);
  std::uint32_t& n = s.Current().*count;
  if (n == 0) {
    s.Fail("CRITICAL_REGION", fmt::format("{} without a matching {}", service, enter), at);
    return;
  }
  --n;
}

VOID KeEnterCriticalRegion(VOID) { EnterRegion(&Context::critical_regions, "KeEnterCriticalRegion"); }
VOID KeLeaveCriticalRegion(VOID) {
  LeaveRegion(&Context::critical_regions, "KeLeaveCriticalRegion", "KeEnterCriticalRegion");
}
VOID KeEnterGuardedRegion(VOID) { EnterRegion(&Context::guarded_regions, "KeEnterGuardedRegion"); }
VOID KeLeaveGuardedRegion(VOID) {
  LeaveRegion(&Context::guarded_regions, "KeLeaveGuardedRegion", "KeEnterGuardedRegion");
}

BOOLEAN KeAreApcsDisabled(VOID) {
  const Context& c = CurrentEnvironment().Current();
  return c.critical_regions != 0 || c.guarded_regions != 0 ? TRUE : FALSE;
}

BOOLEAN KeAreAllApcsDisabled(VOID) {
  const Context& c = CurrentEnvironment().Current();
  return c.guarded_regions != 0 || c.irql >= APC_LEVEL ? TRUE : FALSE;
}

KPRIORITY KeSetPriorityThread(PKTHREAD Thread, KPRIORITY Priority) {
  (void)Thread;
  (void)Priority;
  return 8;
}

NTSTATUS ZwClose(HANDLE Handle) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "ZwClose", s.TakeSite());
  ThreadObject* t = ThreadFromHandle(s, Handle);
  if (t == nullptr) return STATUS_INVALID_HANDLE;
  t->handle_open = false;
  --t->references;
  return STATUS_SUCCESS;
}

NTSTATUS ObReferenceObjectByHandle(HANDLE Handle, ACCESS_MASK DesiredAccess, POBJECT_TYPE ObjectType,
                                   KPROCESSOR_MODE AccessMode, PVOID* Object, PVOID HandleInformation) {
  (void)DesiredAccess;
  (void)AccessMode;
  (void)HandleInformation;
  Impl& s = CurrentEnvironment();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "ObReferenceObjectByHandle", s.TakeSite());
  ThreadObject* t = ThreadFromHandle(s, Handle);
  if (t == nullptr) return STATUS_INVALID_HANDLE;
  if (ObjectType != nullptr && ObjectType != *PsThreadType) return STATUS_OBJECT_TYPE_MISMATCH;
  ++t->references;
  *Object = t;
  return STATUS_SUCCESS;
}

LONG_PTR ObfReferenceObject(PVOID Object) {
  auto* t = static_cast<ThreadObject*>(Object);
  return ++t->references;
}

LONG_PTR ObfDereferenceObject(PVOID Object) {
  Impl& s = CurrentEnvironment();
  auto* t = static_cast<ThreadObject*>(Object);
  if (t->references <= 0) {
    s.Fail("OBJECT", "ObDereferenceObject of an object with no references left", s.TakeSite());
    return 0;
  }
  return --t->references;
}

// ---- pool ----

PVOID ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag) {
  Impl& s = CurrentEnvironment();
  return AllocatePool(s, Flags, NumberOfBytes, Tag, s.TakeSite(), "ExAllocatePool2");
}

PVOID ExAllocatePool3(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag, PCPOOL_EXTENDED_PARAMETER ExtendedParameters,
                      ULONG ExtendedParametersCount) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  const ParameterCheck parameters =
      CheckExtendedParameters(s, Flags, ExtendedParameters, ExtendedParametersCount, at, "ExAllocatePool3");
  if (parameters == ParameterCheck::kRefused) return nullptr;
  return AllocatePool(s, Flags, NumberOfBytes, Tag, at, "ExAllocatePool3",
                      parameters == ParameterCheck::kSatisfiable);
}

PVOID ExAllocatePoolWithTag(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag) {
  Impl& s = CurrentEnvironment();
  return s.Allocate(NumberOfBytes, Tag, false, PagedType(PoolType), s.TakeSite(), BlockKind::kPool);
}

// The pool is never short, so every priority succeeds; a special-pool priority gets the normal pool
// (special pool is not modelled), as on a system where Driver Verifier's special pool is off.
PVOID ExAllocatePoolWithTagPriority(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag, EX_POOL_PRIORITY Priority) {
  (void)Priority;
  Impl& s = CurrentEnvironment();
  return s.Allocate(NumberOfBytes, Tag, false, PagedType(PoolType), s.TakeSite(), BlockKind::kPool);
}

PVOID ExAllocatePoolZero(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag) {
  Impl& s = CurrentEnvironment();
  return s.Allocate(NumberOfBytes, Tag, true, PagedType(PoolType), s.TakeSite(), BlockKind::kPool);
}

PVOID ExAllocatePoolUninitialized(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag) {
  Impl& s = CurrentEnvironment();
  return s.Allocate(NumberOfBytes, Tag, false, PagedType(PoolType), s.TakeSite(), BlockKind::kPool);
}

VOID ExFreePoolWithTag(PVOID P, ULONG Tag) {
  Impl& s = CurrentEnvironment();
  s.Free(P, Tag, s.TakeSite(), "ExFreePoolWithTag");
}

VOID ExFreePool(PVOID P) {
  Impl& s = CurrentEnvironment();
  s.Free(P, std::nullopt, s.TakeSite(), "ExFreePool");
}

VOID ExFreePool2(PVOID P, ULONG Tag, PCPOOL_EXTENDED_PARAMETER ExtendedParameters, ULONG ExtendedParametersCount) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  // Freeing takes only secure-pool parameters; any other is ignored, as nothing in it applies.
  if (CheckExtendedParameters(s, 0, ExtendedParameters, ExtendedParametersCount, at, "ExFreePool2") ==
      ParameterCheck::kRefused) {
    return;
  }
  s.Free(P, Tag, at, "ExFreePool2");
}

// ---- rundown protection ----
// Count: references times two; the low bit is set once a wait for rundown has begun.

VOID ExInitializeRundownProtection(PEX_RUNDOWN_REF RunRef) { RunRef->Count = 0; }
VOID ExReInitializeRundownProtection(PEX_RUNDOWN_REF RunRef) { RunRef->Count = 0; }

BOOLEAN ExAcquireRundownProtectionEx(PEX_RUNDOWN_REF RunRef, ULONG Count) {
  if ((RunRef->Count & 1) != 0) return FALSE;
  RunRef->Count = RunRef->Count + static_cast<ULONG_PTR>(Count) * 2;
  return TRUE;
}

BOOLEAN ExAcquireRundownProtection(PEX_RUNDOWN_REF RunRef) { return ExAcquireRundownProtectionEx(RunRef, 1); }

VOID ExReleaseRundownProtectionEx(PEX_RUNDOWN_REF RunRef, ULONG Count) {
  Impl& s = CurrentEnvironment();
  if (RunRef->Count / 2 < Count) {
    s.Fail("RUNDOWN", "ExReleaseRundownProtection without a matching acquire", s.TakeSite());
    return;
  }
  RunRef->Count = RunRef->Count - static_cast<ULONG_PTR>(Count) * 2;
  if (RunRef->Count == 1) {
    const auto it = s.rundown_waits.find(RunRef);
    if (it != s.rundown_waits.end()) s.dispatcher.SetEvent(it->second);
  }
}

VOID ExReleaseRundownProtection(PEX_RUNDOWN_REF RunRef) { ExReleaseRundownProtectionEx(RunRef, 1); }

VOID ExWaitForRundownProtectionRelease(PEX_RUNDOWN_REF RunRef) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(APC_LEVEL, "ExWaitForRundownProtectionRelease", at);
  RunRef->Count = RunRef->Count | 1;
  if (RunRef->Count == 1) return;
  DispatcherObject& done = s.rundown_waits[RunRef];
  ndksim::kernel::Dispatcher::InitializeEvent(done, DispatcherObject::Kind::kNotificationEvent, false);
  DispatcherObject* const objects[] = {&done};
  (void)s.Wait(objects, WaitType::kAny, nullptr, at, "ExWaitForRundownProtectionRelease");
  s.rundown_waits.erase(RunRef);
}

VOID ExRundownCompleted(PEX_RUNDOWN_REF RunRef) { RunRef->Count = 1; }

// ---- devices and work items ----

// IoCreateDevice's and IoCreateDeviceSecure's device: unnamed (the environment has no object
// namespace, so DeviceName and Exclusive change nothing), in nonpaged pool charged to the driver.
static NTSTATUS CreateDevice(Impl& s, PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                             DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, PDEVICE_OBJECT* DeviceObject,
                             const Site& at) {
  if (DriverObject == nullptr || DeviceObject == nullptr) return STATUS_INVALID_PARAMETER;
  if (s.DeviceNameTaken(DeviceName)) return STATUS_OBJECT_NAME_COLLISION;
  auto* device = static_cast<PDEVICE_OBJECT>(
      s.Allocate(sizeof(DEVICE_OBJECT) + DeviceExtensionSize, 0, true, false, at, BlockKind::kDevice));
  if (device == nullptr) return STATUS_INSUFFICIENT_RESOURCES;
  device->Type = IO_TYPE_DEVICE;
  device->Size = static_cast<USHORT>(sizeof(DEVICE_OBJECT) + DeviceExtensionSize);
  device->DriverObject = DriverObject;
  device->DeviceType = DeviceType;
  device->Characteristics = DeviceCharacteristics;
  device->Flags = DO_DEVICE_INITIALIZING;
  device->StackSize = 1;
  device->DeviceExtension = DeviceExtensionSize != 0 ? static_cast<void*>(device + 1) : nullptr;
  device->NextDevice = DriverObject->DeviceObject;
  DriverObject->DeviceObject = device;
  (void)s.NameDevice(device, DeviceName);  // the name is free: checked above
  *DeviceObject = device;
  return STATUS_SUCCESS;
}

NTSTATUS IoCreateDevice(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                        DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                        PDEVICE_OBJECT* DeviceObject) {
  (void)Exclusive;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "IoCreateDevice", at);
  return CreateDevice(s, DriverObject, DeviceExtensionSize, DeviceName, DeviceType, DeviceCharacteristics,
                      DeviceObject, at);
}

// ---- device object security (wdmsec.h) ----

const UNICODE_STRING SDDL_DEVOBJ_KERNEL_ONLY = CountedString(kKernelOnly);
const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL = CountedString(kSysAll);
const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_ALL = CountedString(kSysAllAdmAll);
const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RX = CountedString(kSysAllAdmRx);
const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_R = CountedString(kSysAllAdmRwxWorldR);
const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_R_RES_R = CountedString(kSysAllAdmRwxWorldRResR);
const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_RW_RES_R = CountedString(kSysAllAdmRwxWorldRwResR);
const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_RWX_RES_RWX = CountedString(kSysAllAdmRwxWorldRwxResRwx);

NTSTATUS IoCreateDeviceSecure(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                              DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                              PCUNICODE_STRING DefaultSDDLString, LPCGUID DeviceClassGuid,
                              PDEVICE_OBJECT* DeviceObject) {
  (void)Exclusive;
  (void)DeviceClassGuid;  // it selects a class's registry override of the SDDL; there is no registry
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "IoCreateDeviceSecure", at);
  if (!IsDeviceObjectSddl(DefaultSDDLString)) return STATUS_INVALID_PARAMETER;
  return CreateDevice(s, DriverObject, DeviceExtensionSize, DeviceName, DeviceType, DeviceCharacteristics,
                      DeviceObject, at);
}

VOID IoDeleteDevice(PDEVICE_OBJECT DeviceObject) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "IoDeleteDevice", at);
  PDEVICE_OBJECT* link = &DeviceObject->DriverObject->DeviceObject;
  while (*link != nullptr && *link != DeviceObject) link = &(*link)->NextDevice;
  if (*link == nullptr) {
    s.Fail("DEVICE", "IoDeleteDevice of a device that is not its driver's (deleted twice?)", at);
    return;
  }
  *link = DeviceObject->NextDevice;
  s.ForgetDevice(DeviceObject);
  s.Free(DeviceObject, std::nullopt, at, "IoDeleteDevice");
}

// The driver an IoAllocateWorkItem object belongs to: the WDK takes "the caller's driver object or
// one of the caller's device objects" through the same PDEVICE_OBJECT, and both objects begin with
// their Type. For a driver object the environment did not load (one a test made), the caller's.
static bool OwnerOfIoObject(Impl& s, PDEVICE_OBJECT object, Driver** owner) {
  PDRIVER_OBJECT driver_object = nullptr;
  switch (object->Type) {
    case IO_TYPE_DEVICE: driver_object = object->DriverObject; break;
    case IO_TYPE_DRIVER: driver_object = reinterpret_cast<PDRIVER_OBJECT>(object); break;
    default: return false;
  }
  Driver* loaded = s.DriverOf(driver_object);
  *owner = loaded != nullptr ? loaded : s.Current().driver;
  return true;
}

PIO_WORKITEM IoAllocateWorkItem(PDEVICE_OBJECT DeviceObject) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoAllocateWorkItem", at);
  if (DeviceObject == nullptr) {
    s.Fail("WORK_ITEM", "IoAllocateWorkItem without a driver or device object", at);
    return nullptr;
  }
  Driver* owner = nullptr;
  if (!OwnerOfIoObject(s, DeviceObject, &owner)) {
    s.Fail("WORK_ITEM",
           fmt::format("IoAllocateWorkItem of an object of Type {} (neither a driver object, {}, nor a device "
                       "object, {})",
                       DeviceObject->Type, IO_TYPE_DRIVER, IO_TYPE_DEVICE),
           at);
    return nullptr;
  }
  void* memory = s.Allocate(sizeof(IoWorkItemRecord), 0, true, false, at, BlockKind::kWorkItem);
  if (memory == nullptr) return nullptr;
  auto* item = new (memory) IoWorkItemRecord{};
  item->device = DeviceObject;
  item->driver = owner;
  return reinterpret_cast<PIO_WORKITEM>(item);
}

VOID IoFreeWorkItem(PIO_WORKITEM IoWorkItem) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.CheckLiveObject(IoWorkItem, "IoFreeWorkItem", at);
  if (Record(IoWorkItem)->queued) {
    s.Fail("WORK_ITEM", "IoFreeWorkItem of a work item that is still queued", at);
    return;
  }
  s.Free(IoWorkItem, std::nullopt, at, "IoFreeWorkItem");
}

static void QueueIoWorkItem(Impl& s, PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE routine,
                            PIO_WORKITEM_ROUTINE_EX routine_ex, PVOID Context, const Site& at) {
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoQueueWorkItem", at);
  s.CheckLiveObject(IoWorkItem, "IoQueueWorkItem", at);
  IoWorkItemRecord* item = Record(IoWorkItem);
  if (item->queued) {
    s.Fail("WORK_ITEM", "IoQueueWorkItem of a work item already queued (WORKER_INVALID)", at);
    return;
  }
  item->queued = true;
  Work w;
  w.io = item;
  w.routine = routine;
  w.routine_ex = routine_ex;
  w.context = Context;
  w.driver = item->driver;
  // The work item runs on its driver's machine, wherever it was queued from.
  w.machine = item->driver != nullptr && item->driver->node != nullptr ? item->driver->node : s.Current().machine;
  s.QueueWork(w);
}

VOID IoQueueWorkItem(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                     PVOID Context) {
  (void)QueueType;
  Impl& s = CurrentEnvironment();
  QueueIoWorkItem(s, IoWorkItem, WorkerRoutine, nullptr, Context, s.TakeSite());
}

VOID IoQueueWorkItemEx(PIO_WORKITEM IoWorkItem, PIO_WORKITEM_ROUTINE_EX WorkerRoutine, WORK_QUEUE_TYPE QueueType,
                       PVOID Context) {
  (void)QueueType;
  Impl& s = CurrentEnvironment();
  QueueIoWorkItem(s, IoWorkItem, nullptr, WorkerRoutine, Context, s.TakeSite());
}

VOID ExQueueWorkItem(PWORK_QUEUE_ITEM WorkItem, WORK_QUEUE_TYPE QueueType) {
  (void)QueueType;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "ExQueueWorkItem", at);
  if (WorkItem->List.Flink != nullptr) {
    s.Fail("WORK_ITEM", "ExQueueWorkItem of a work item already queued (WORKER_INVALID)", at);
    return;
  }
  WorkItem->List.Flink = &WorkItem->List;
  Work w;
  w.ex = WorkItem;
  w.driver = s.Current().driver;
  w.machine = s.Current().machine;
  s.QueueWork(w);
}

// ---- MDLs ----

PMDL IoAllocateMdl(PVOID VirtualAddress, ULONG Length, BOOLEAN SecondaryBuffer, BOOLEAN ChargeQuota, PIRP Irp) {
  (void)ChargeQuota;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoAllocateMdl", at);
  if (Irp != nullptr) {
    s.Fail("MDL", "IoAllocateMdl with an IRP: the environment does not chain MDLs to an IRP", at);
    return nullptr;
  }
  (void)SecondaryBuffer;
  // One MDL describes at most 4 GiB minus a page (MmSizeOfMdl's limit).
  if (Length == 0 || Length > 0xFFFFFFFFu - PAGE_SIZE) return nullptr;
  const SIZE_T bytes = MmSizeOfMdl(VirtualAddress, Length);
  auto* mdl = static_cast<PMDL>(s.Allocate(bytes, 0, true, false, at, BlockKind::kMdl));
  if (mdl == nullptr) return nullptr;
  MmInitializeMdl(mdl, VirtualAddress, Length);
  mdl->Size = static_cast<CSHORT>(std::min<SIZE_T>(bytes, 0x7FFF));
  mdl->MappedSystemVa = nullptr;
  mdl->MdlFlags = MDL_ALLOCATED_FIXED_SIZE;
  return mdl;
}

VOID IoFreeMdl(PMDL Mdl) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.CheckLiveObject(Mdl, "IoFreeMdl", at);
  s.Free(Mdl, std::nullopt, at, "IoFreeMdl");
}

static void FillPfns(PMDL mdl) {
  PPFN_NUMBER pfns = MmGetMdlPfnArray(mdl);
  const ULONG pages = ADDRESS_AND_SIZE_TO_SPAN_PAGES(MmGetMdlVirtualAddress(mdl), mdl->ByteCount);
  const auto base = reinterpret_cast<ULONG_PTR>(mdl->StartVa) >> PAGE_SHIFT;
  for (ULONG i = 0; i < pages; ++i) pfns[i] = base + i;  // in one process, the virtual page number
}

VOID MmBuildMdlForNonPagedPool(PMDL MemoryDescriptorList) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "MmBuildMdlForNonPagedPool", s.TakeSite());
  FillPfns(MemoryDescriptorList);
  MemoryDescriptorList->MdlFlags |= MDL_SOURCE_IS_NONPAGED_POOL;
  MemoryDescriptorList->MappedSystemVa = MmGetMdlVirtualAddress(MemoryDescriptorList);
}

VOID MmProbeAndLockPages(PMDL MemoryDescriptorList, KPROCESSOR_MODE AccessMode, LOCK_OPERATION Operation) {
  (void)AccessMode;
  Impl& s = CurrentEnvironment();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "MmProbeAndLockPages", s.TakeSite());
  FillPfns(MemoryDescriptorList);
  MemoryDescriptorList->MdlFlags |= MDL_PAGES_LOCKED;
  if (Operation != IoReadAccess) MemoryDescriptorList->MdlFlags |= MDL_WRITE_OPERATION;
}

VOID MmUnlockPages(PMDL MemoryDescriptorList) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  if ((MemoryDescriptorList->MdlFlags & MDL_PAGES_LOCKED) == 0) {
    s.Fail("MDL", "MmUnlockPages of an MDL whose pages are not locked", at);
    return;
  }
  MemoryDescriptorList->MdlFlags &= static_cast<CSHORT>(~(MDL_PAGES_LOCKED | MDL_MAPPED_TO_SYSTEM_VA));
}

PVOID MmGetSystemAddressForMdlSafe(PMDL Mdl, ULONG Priority) {
  (void)Priority;
  if ((Mdl->MdlFlags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL)) == 0) {
    Mdl->MappedSystemVa = MmGetMdlVirtualAddress(Mdl);
    Mdl->MdlFlags |= MDL_MAPPED_TO_SYSTEM_VA;
  }
  return Mdl->MappedSystemVa;
}

VOID IoBuildPartialMdl(PMDL SourceMdl, PMDL TargetMdl, PVOID VirtualAddress, ULONG Length) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  const auto source = reinterpret_cast<ULONG_PTR>(MmGetMdlVirtualAddress(SourceMdl));
  const auto start = reinterpret_cast<ULONG_PTR>(VirtualAddress);
  if (Length == 0) Length = static_cast<ULONG>(source + SourceMdl->ByteCount - start);
  if (start < source || start + Length > source + SourceMdl->ByteCount) {
    s.Fail("MDL", "IoBuildPartialMdl of a range outside the source MDL", at);
    return;
  }
  TargetMdl->StartVa = PAGE_ALIGN(VirtualAddress);
  TargetMdl->ByteOffset = BYTE_OFFSET(VirtualAddress);
  TargetMdl->ByteCount = Length;
  TargetMdl->MappedSystemVa = VirtualAddress;
  TargetMdl->MdlFlags = static_cast<CSHORT>((TargetMdl->MdlFlags & MDL_ALLOCATED_FIXED_SIZE) | MDL_PARTIAL |
                                            (SourceMdl->MdlFlags & MDL_SOURCE_IS_NONPAGED_POOL));
  FillPfns(TargetMdl);
}

PHYSICAL_ADDRESS MmGetPhysicalAddress(PVOID BaseAddress) {
  PHYSICAL_ADDRESS a;
  a.QuadPart = static_cast<LONG64>(reinterpret_cast<ULONG_PTR>(BaseAddress));
  return a;
}

}  // extern "C"
