// SPDX-License-Identifier: MIT
// The WDK services of wdm.h, for C code: each finds the current environment, checks what Driver
// Verifier checks, and acts on the environment's state.
#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "kernel_state.h"
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

namespace {

// A spin lock's value while held: the holder's context.
ULONG_PTR Holder(Impl& s) { return reinterpret_cast<ULONG_PTR>(&s.Current()); }

void Acquire(Impl& s, PKSPIN_LOCK lock, const Site& at, const char* service) {
  Context& c = s.Current();
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
  if (c.irql != DISPATCH_LEVEL) {
    s.Fail("SPIN_LOCK", fmt::format("{} at IRQL {}: a spin lock is released at DISPATCH_LEVEL", service, c.irql), at);
    return;
  }
  const auto it = std::find(c.held.begin(), c.held.end(), lock);
  if (*lock == 0 || it == c.held.end()) {
    s.Fail("SPIN_LOCK",
           fmt::format("{} of spin lock {}, which {}", service, fmt::ptr(lock),
                       *lock == 0 ? "is not held (released twice?)" : "another context holds"),
           at);
    return;
  }
  c.held.erase(it);
  *lock = 0;
}

PVOID AllocatePool(Impl& s, POOL_FLAGS flags, SIZE_T bytes, ULONG tag, const Site& at) {
  const POOL_FLAGS kinds = flags & (POOL_FLAG_NON_PAGED | POOL_FLAG_NON_PAGED_EXECUTE | POOL_FLAG_PAGED);
  if (kinds == 0 || (kinds & (kinds - 1)) != 0) {
    s.Fail("POOL", fmt::format("ExAllocatePool2 with flags {:#x}: exactly one of POOL_FLAG_NON_PAGED, "
                               "POOL_FLAG_NON_PAGED_EXECUTE and POOL_FLAG_PAGED is required", flags),
           at);
    return nullptr;
  }
  PVOID p = s.Allocate(bytes, tag, (flags & POOL_FLAG_UNINITIALIZED) == 0, kinds == POOL_FLAG_PAGED, at, BlockKind::kPool);
  if (p == nullptr && (flags & POOL_FLAG_RAISE_ON_FAILURE) != 0) ExRaiseStatus(STATUS_INSUFFICIENT_RESOURCES);
  return p;
}

bool PagedType(POOL_TYPE type) { return (static_cast<int>(type) & 1) != 0; }

IoWorkItemRecord* Record(PIO_WORKITEM item) { return reinterpret_cast<IoWorkItemRecord*>(item); }

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
              fmt::format("ExRaiseStatus({:#010x}): structured exceptions are not supported", static_cast<ULONG>(Status)),
              s.TakeSite());
}

VOID DbgBreakPoint(VOID) {
  Impl& s = CurrentEnvironment();
  s.Fail("BREAKPOINT", "DbgBreakPoint", s.TakeSite());
}

ULONG vDbgPrintEx(ULONG ComponentId, ULONG Level, PCCH Format, va_list arglist) {
  (void)ComponentId;
  (void)Level;
  Impl& s = CurrentEnvironment();
  std::array<char, 1024> text{};
  std::vsnprintf(text.data(), text.size(), Format, arglist);
  std::string line(text.data());
  while (!line.empty() && line.back() == '\n') line.pop_back();
  line = fmt::format("[{} ps] {}: {}", s.fabric.Now().time_since_epoch().count(), s.CurrentName(), line);
  if (s.config.echo_debug_print) std::fprintf(stderr, "%s\n", line.c_str());
  s.debug_log.push_back(std::move(line));
  return STATUS_SUCCESS;
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
  return s.Wait(objects, WaitType::kAny, Timeout, at, "KeWaitForSingleObject");
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
  return s.Wait(std::span<DispatcherObject* const>(objects.data(), Count),
                WaitType == WaitAll ? WaitType::kAll : WaitType::kAny, Timeout, at, "KeWaitForMultipleObjects");
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

VOID KeInitializeSpinLock(PKSPIN_LOCK SpinLock) { *SpinLock = 0; }

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
  Acquire(s, SpinLock, at, "KeTryToAcquireSpinLockAtDpcLevel");
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

ULONG KeQueryTimeIncrement(VOID) { return 156'250; }  // the 15.625-ms clock tick, in 100 ns

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
ULONG KeGetCurrentProcessorNumber(VOID) { return 0; }

ULONG KeQueryActiveProcessorCount(PKAFFINITY ActiveProcessors) {
  if (ActiveProcessors != nullptr) *ActiveProcessors = 1;
  return 1;
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
  return AllocatePool(s, Flags, NumberOfBytes, Tag, s.TakeSite());
}

PVOID ExAllocatePoolWithTag(POOL_TYPE PoolType, SIZE_T NumberOfBytes, ULONG Tag) {
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

NTSTATUS IoCreateDevice(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                        DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                        PDEVICE_OBJECT* DeviceObject) {
  (void)DeviceName;
  (void)Exclusive;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "IoCreateDevice", at);
  if (DriverObject == nullptr || DeviceObject == nullptr) return STATUS_INVALID_PARAMETER;
  auto* device = static_cast<PDEVICE_OBJECT>(
      s.Allocate(sizeof(DEVICE_OBJECT) + DeviceExtensionSize, 0, true, false, at, BlockKind::kDevice));
  if (device == nullptr) return STATUS_INSUFFICIENT_RESOURCES;
  device->Type = 3;
  device->Size = static_cast<USHORT>(sizeof(DEVICE_OBJECT) + DeviceExtensionSize);
  device->DriverObject = DriverObject;
  device->DeviceType = DeviceType;
  device->Characteristics = DeviceCharacteristics;
  device->Flags = DO_DEVICE_INITIALIZING;
  device->StackSize = 1;
  device->DeviceExtension = DeviceExtensionSize != 0 ? static_cast<void*>(device + 1) : nullptr;
  device->NextDevice = DriverObject->DeviceObject;
  DriverObject->DeviceObject = device;
  *DeviceObject = device;
  return STATUS_SUCCESS;
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
  s.Free(DeviceObject, std::nullopt, at, "IoDeleteDevice");
}

PIO_WORKITEM IoAllocateWorkItem(PDEVICE_OBJECT DeviceObject) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoAllocateWorkItem", at);
  if (DeviceObject == nullptr) {
    s.Fail("WORK_ITEM", "IoAllocateWorkItem without a device object", at);
    return nullptr;
  }
  void* memory = s.Allocate(sizeof(IoWorkItemRecord), 0, true, false, at, BlockKind::kWorkItem);
  if (memory == nullptr) return nullptr;
  auto* item = new (memory) IoWorkItemRecord{};
  item->device = DeviceObject;
  item->driver = s.Current().driver;
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
  w.driver = item->device->DriverObject != nullptr ? item->driver : nullptr;
  w.machine = s.Current().machine;
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
    s.Fail("MDL", "IoAllocateMdl with an IRP: the kernel environment has no IRPs", at);
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
