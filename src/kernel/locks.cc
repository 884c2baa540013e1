// SPDX-License-Identifier: MIT
// The executive's allocation lists and locks that block, for C code: lookaside lists, fast and
// guarded mutexes, executive resources and push locks. Each checks what Driver Verifier checks
// (IRQL, critical regions, ownership, recursion that deadlocks) and blocks the kernel thread
// through the dispatcher, so the scheduler's seeded choices order the contenders.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <fmt/format.h>

#include "kernel_state.h"
#include "site_macros_off.h"

using ndksim::kernel::BlockKind;
using ndksim::kernel::Context;
using ndksim::kernel::CurrentEnvironment;
using ndksim::kernel::DispatcherObject;
using ndksim::kernel::MutantObject;
using ndksim::kernel::ObjectOf;
using ndksim::kernel::RwLock;
using ndksim::kernel::SemaphoreObject;
using ndksim::kernel::Site;
using ndksim::kernel::WaitType;
using Impl = ndksim::kernel::Environment::Impl;

namespace {

// ---- lookaside lists ----

bool IsPaged(POOL_TYPE type) { return (static_cast<int>(type) & 1) != 0; }

void InitializeLookaside(GENERAL_LOOKASIDE& l, POOL_TYPE type, SIZE_T size, ULONG tag, USHORT depth) {
  l = GENERAL_LOOKASIDE{};
  l.Type = type;
  l.Tag = tag;
  l.Size = static_cast<ULONG>(size);
  l.Depth = depth;
  l.MaximumDepth = depth;
}

// Checks a list before an allocation or a free: initialized, not deleted, and the IRQL its pool
// allows. False (reported) when it cannot be used.
bool UsableLookaside(Impl& s, const GENERAL_LOOKASIDE* l, const char* service, const Site& at) {
  if (s.lookaside_lists.count(l) == 0) {
    s.Fail("LOOKASIDE", fmt::format("{} on lookaside list {}, which is not initialized (or was deleted)", service,
                                    fmt::ptr(l)),
           at);
    return false;
  }
  s.RequireIrqlAtMost(IsPaged(l->Type) ? APC_LEVEL : DISPATCH_LEVEL, service, at);
  return true;
}

PVOID AllocateEntry(Impl& s, GENERAL_LOOKASIDE* l, bool extended, const char* service) {
  const Site at = s.TakeSite();
  if (!UsableLookaside(s, l, service, at)) return nullptr;
  ++l->TotalAllocates;
  ++l->AllocateMisses;  // nothing is cached: every allocation goes to the pool
  PVOID entry = nullptr;
  if (extended && l->AllocateEx != nullptr) {
    entry = l->AllocateEx(l->Type, l->Size, l->Tag, reinterpret_cast<PLOOKASIDE_LIST_EX>(l));
  } else if (!extended && l->Allocate != nullptr) {
    entry = l->Allocate(l->Type, l->Size, l->Tag);
  } else {
    entry = s.Allocate(l->Size, l->Tag, false, IsPaged(l->Type), at, BlockKind::kPool);
  }
  const ULONG flags = s.lookaside_lists[l];
  if (entry == nullptr && extended && (flags & EX_LOOKASIDE_LIST_EX_FLAGS_RAISE_ON_FAIL) != 0) {
    ExRaiseStatus(STATUS_INSUFFICIENT_RESOURCES);
  }
  return entry;
}

void FreeEntry(Impl& s, GENERAL_LOOKASIDE* l, PVOID entry, bool extended, const char* service) {
  const Site at = s.TakeSite();
  if (!UsableLookaside(s, l, service, at)) return;
  ++l->TotalFrees;
  ++l->FreeMisses;
  if (extended && l->FreeEx != nullptr) {
    l->FreeEx(entry, reinterpret_cast<PLOOKASIDE_LIST_EX>(l));
  } else if (!extended && l->Free != nullptr) {
    l->Free(entry);
  } else {
    s.Free(entry, l->Tag, at, service);
  }
}

void DeleteLookaside(Impl& s, const GENERAL_LOOKASIDE* l, const char* service) {
  const Site at = s.TakeSite();
  if (s.lookaside_lists.erase(l) == 0) {
    s.Fail("LOOKASIDE", fmt::format("{} of lookaside list {}, which is not initialized (deleted twice?)", service,
                                    fmt::ptr(l)),
           at);
  }
}

// ---- fast and guarded mutexes ----
// Count: 1 free; 0 held; -n held with n waiters, each blocked on the mutex's synchronization event,
// which the release sets to hand the mutex to one of them.

Context* Owner(const FAST_MUTEX* m) { return static_cast<Context*>(m->Owner); }

enum class MutexHold : std::uint8_t {
  kIrql,     // ExAcquireFastMutex: raised to APC_LEVEL while held
  kGuarded,  // KeAcquireGuardedMutex: in a guarded region while held
  kUnsafe,   // the Unsafe forms: the caller has disabled APCs itself
};

const char* Check(MutexHold hold) { return hold == MutexHold::kGuarded ? "GUARDED_MUTEX" : "FAST_MUTEX"; }
const char* KindName(MutexHold hold) { return hold == MutexHold::kGuarded ? "guarded mutex" : "fast mutex"; }

// The IRQL and region rules before an acquisition; false (reported) if the mutex cannot be taken.
bool MayAcquire(Impl& s, FAST_MUTEX* m, MutexHold hold, const char* service, const Site& at) {
  Context& c = s.Current();
  if (hold == MutexHold::kUnsafe) {
    if (c.irql != APC_LEVEL && c.critical_regions == 0 && c.guarded_regions == 0) {
      s.Fail(Check(hold), fmt::format("{} at IRQL {} outside a critical region: the Unsafe form needs APCs "
                                      "disabled by its caller", service, c.irql),
             at);
      return false;
    }
  } else {
    s.RequireIrqlAtMost(APC_LEVEL, service, at);
  }
  if (Owner(m) == &c) {
    s.Fail(Check(hold), fmt::format("{} of mutex {}, which this thread holds: a fast or guarded mutex is not "
                                    "recursive (a deadlock)", service, fmt::ptr(m)),
           at);
    return false;
  }
  return true;
}

void Hold(Impl& s, FAST_MUTEX* m, MutexHold hold) {
  Context& c = s.Current();
  m->OldIrql = c.irql;
  if (hold == MutexHold::kIrql && c.irql < APC_LEVEL) s.SetIrql(APC_LEVEL);
  if (hold == MutexHold::kGuarded) ++c.guarded_regions;
}

void AcquireMutex(FAST_MUTEX* m, MutexHold hold, const char* service) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.PreemptionPoint(s.config.preemption.locks, service);
  if (!MayAcquire(s, m, hold, service, at)) return;
  if (m->Count != 1 && !s.scheduler.InThread()) {
    s.Fail(Check(hold), fmt::format("{} of mutex {}, held by another context, outside a kernel thread, where it "
                                    "cannot wait", service, fmt::ptr(m)),
           at);
    return;
  }
  s.CheckLockOrder(m, KindName(hold), at);
  Hold(s, m, hold);
  if (m->Count == 1) {
    m->Count = 0;
  } else {
    m->Count = m->Count - 1;
    ++m->Contention;
    DispatcherObject* const objects[] = {&ObjectOf(&m->Event)};
    (void)s.Wait(objects, WaitType::kAny, nullptr, at, service);
  }
  m->Owner = &s.Current();
  s.WaitableAcquired(m, KindName(hold));
}

bool TryAcquireMutex(FAST_MUTEX* m, MutexHold hold, const char* service) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  if (!MayAcquire(s, m, hold, service, at) || m->Count != 1) return false;
  Hold(s, m, hold);
  m->Count = 0;
  m->Owner = &s.Current();
  s.WaitableAcquired(m, KindName(hold));  // taken without waiting: it orders nothing, later locks after it
  return true;
}

void ReleaseMutex(FAST_MUTEX* m, MutexHold hold, const char* service) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  Context& c = s.Current();
  if (Owner(m) != &c) {
    s.Fail(Check(hold), fmt::format("{} of mutex {}, which {}", service, fmt::ptr(m),
                                    m->Owner == nullptr ? "is not held (released twice?)"
                                                        : "another thread holds"),
           at);
    return;
  }
  if (hold == MutexHold::kIrql && c.irql != APC_LEVEL) {
    s.Fail(Check(hold), fmt::format("{} at IRQL {}: the mutex raised it to APC_LEVEL, and it must be back there",
                                    service, c.irql),
           at);
    return;
  }
  const auto old = static_cast<KIRQL>(m->OldIrql);
  m->Owner = nullptr;
  Impl::WaitableReleased(c, m);
  if (m->Count == 0) {
    m->Count = 1;
  } else {
    m->Count = m->Count + 1;
    s.dispatcher.SetEvent(ObjectOf(&m->Event));  // hands the mutex to one waiter
  }
  if (hold == MutexHold::kIrql) s.SetIrql(old);
  if (hold == MutexHold::kGuarded) --c.guarded_regions;
  s.PreemptionPoint(s.config.preemption.locks, service);
}

// A lock made anew (perhaps where another lived) has no order yet.
template <typename Lock>
void ForgetOrder(Impl& s, const Lock* lock) {
  s.ForgetLocks(reinterpret_cast<std::uintptr_t>(lock), reinterpret_cast<std::uintptr_t>(lock) + sizeof(Lock));
}

void InitializeMutex(FAST_MUTEX* m) {
  ForgetOrder(CurrentEnvironment(), m);
  m->Count = 1;
  m->Owner = nullptr;
  m->Contention = 0;
  m->OldIrql = 0;
  ndksim::kernel::Dispatcher::InitializeEvent(ObjectOf(&m->Event), DispatcherObject::Kind::kSynchronizationEvent,
                                              false);
}

// ---- executive resources and push locks ----

enum class Want : std::uint8_t {
  kExclusive,
  kShared,               // ExAcquireResourceSharedLite: after exclusive waiters, unless a holder
  kSharedStarveExclusive,  // ExAcquireSharedStarveExclusive: before them
};

const char* Check(RwLock::Kind kind) { return kind == RwLock::Kind::kResource ? "RESOURCE" : "PUSH_LOCK"; }

// APCs must be off while a resource or push lock is held: a critical or guarded region, or
// APC_LEVEL. False (reported) otherwise.
bool ApcsDisabled(Impl& s, RwLock::Kind kind, const char* service, const Site& at) {
  const Context& c = s.Current();
  s.RequireIrqlAtMost(APC_LEVEL, service, at);
  if (c.critical_regions == 0 && c.guarded_regions == 0 && c.irql < APC_LEVEL) {
    s.Fail(Check(kind), fmt::format("{} outside a critical region (KeEnterCriticalRegion): a thread holding it "
                                    "could be suspended", service),
           at);
    return false;
  }
  return true;
}

// Whether `me` may take `l` now; reports (and returns false with *deadlock set) an acquisition that
// can never be granted because `me` holds the lock in a way that forbids it.
bool Grantable(Impl& s, const void* lock, const RwLock& l, Context* me, Want want, const char* service,
               const Site& at, bool* deadlock) {
  const auto shared = l.shared.find(me);
  const bool holds_shared = shared != l.shared.end();
  const bool recursive = l.kind == RwLock::Kind::kResource;
  if (want == Want::kExclusive) {
    if (l.exclusive == me && recursive) return true;
    if (l.exclusive == me || holds_shared) {
      *deadlock = true;
      s.Fail(Check(l.kind),
             fmt::format("{} of {} {}, which this thread holds {}: it would wait for itself (a deadlock)", service,
                         l.kind == RwLock::Kind::kResource ? "resource" : "push lock", fmt::ptr(lock),
                         l.exclusive == me ? "exclusively (a push lock is not recursive)" : "shared"),
             at);
      return false;
    }
    return l.exclusive == nullptr && l.shared.empty();
  }
  if (recursive && (l.exclusive == me || holds_shared)) return true;
  if (l.exclusive == me || holds_shared) {
    *deadlock = true;
    s.Fail(Check(l.kind), fmt::format("{} of push lock {}, which this thread holds: a push lock is not recursive",
                                      service, fmt::ptr(lock)),
           at);
    return false;
  }
  if (l.exclusive != nullptr) return false;
  return want == Want::kSharedStarveExclusive || l.exclusive_waiters == 0;
}

void Grant(RwLock& l, Context* me, Want want) {
  if (want == Want::kExclusive || l.exclusive == me) {
    l.exclusive = me;
    ++l.exclusive_count;  // a shared acquisition by the exclusive holder counts as exclusive
  } else {
    ++l.shared[me];
  }
}

// Every waiter looks again after a release (the lock's `changed` event is pulsed).
void Pulse(Impl& s, RwLock& l) {
  if (!ndksim::kernel::Dispatcher::HasWaiters(l.changed)) return;
  s.dispatcher.SetEvent(l.changed);
  (void)ndksim::kernel::Dispatcher::ResetEvent(l.changed);
}

// The caller has passed its preemption point: `l` stays this lock's while it is used here.
bool AcquireRw(Impl& s, const void* lock, RwLock& l, Want want, bool wait, const char* service, const Site& at) {
  Context* me = &s.Current();
  const char* const kind = l.kind == RwLock::Kind::kResource ? "resource" : "push lock";
  if (wait) s.CheckLockOrder(lock, kind, at);  // a try orders nothing
  for (;;) {
    bool deadlock = false;
    if (Grantable(s, lock, l, me, want, service, at, &deadlock)) {
      Grant(l, me, want);
      s.WaitableAcquired(lock, kind);
      return true;
    }
    if (deadlock || !wait) return false;
    if (!s.scheduler.InThread()) {
      s.Fail(Check(l.kind), fmt::format("{} of {}, held by another context, outside a kernel thread, where it "
                                        "cannot wait", service, fmt::ptr(lock)),
             at);
      return false;
    }
    std::uint32_t& waiters = want == Want::kExclusive ? l.exclusive_waiters : l.shared_waiters;
    ++waiters;
    DispatcherObject* const objects[] = {&l.changed};
    (void)s.Wait(objects, WaitType::kAny, nullptr, at, service);
    --waiters;
  }
}

// Releases one acquisition of `l` by `holder`; false (reported) if it holds none.
bool ReleaseRw(Impl& s, const void* lock, RwLock& l, Context* holder, const char* service, const Site& at) {
  if (l.exclusive == holder) {
    if (--l.exclusive_count == 0) l.exclusive = nullptr;
  } else if (const auto it = l.shared.find(holder); it != l.shared.end()) {
    if (--it->second == 0) l.shared.erase(it);
  } else {
    s.Fail(Check(l.kind), fmt::format("{} of {} {}, which {}", service,
                                      l.kind == RwLock::Kind::kResource ? "resource" : "push lock", fmt::ptr(lock),
                                      l.exclusive == nullptr && l.shared.empty() ? "is not held (released twice?)"
                                                                                 : "this thread does not hold"),
           at);
    return false;
  }
  Impl::WaitableReleased(*holder, lock);
  Pulse(s, l);
  // A free push lock nobody waits for is a zeroed one: its state goes, so the table holds only
  // locks in use (push locks have no delete, and their memory is reused). Before the preemption
  // point, after which `l` may be another thread's.
  if (l.kind == RwLock::Kind::kPushLock && l.exclusive == nullptr && l.shared.empty() && l.exclusive_waiters == 0 &&
      l.shared_waiters == 0) {
    s.rw_locks.erase(lock);
  }
  s.PreemptionPoint(s.config.preemption.locks, service);
  return true;
}

// An initialized resource's state; reports (and returns nullptr for) one never initialized.
RwLock* ResourceState(Impl& s, PERESOURCE resource, const char* service, const Site& at) {
  const auto it = s.rw_locks.find(resource);
  if (it == s.rw_locks.end() || it->second.kind != RwLock::Kind::kResource) {
    s.Fail("RESOURCE", fmt::format("{} of resource {}, which is not initialized (ExInitializeResourceLite) or was "
                                   "deleted", service, fmt::ptr(resource)),
           at);
    return nullptr;
  }
  return &it->second;
}

RwLock MakeRwLock(RwLock::Kind kind) {
  RwLock l;
  l.kind = kind;
  return l;
}

// A push lock's state, made on first use: a zeroed EX_PUSH_LOCK is a free one.
RwLock& PushLock(Impl& s, PEX_PUSH_LOCK lock) {
  RwLock& l = s.rw_locks[lock];
  l.kind = RwLock::Kind::kPushLock;
  return l;
}

BOOLEAN AcquireResource(PERESOURCE resource, Want want, BOOLEAN wait, const char* service) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.PreemptionPoint(s.config.preemption.locks, service);  // before the lock's state is looked up
  RwLock* l = ResourceState(s, resource, service, at);
  if (l == nullptr || !ApcsDisabled(s, RwLock::Kind::kResource, service, at)) return FALSE;
  return AcquireRw(s, resource, *l, want, wait != FALSE, service, at) ? TRUE : FALSE;
}

void AcquirePushLock(PEX_PUSH_LOCK lock, Want want, const char* service) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  if (!ApcsDisabled(s, RwLock::Kind::kPushLock, service, at)) return;
  s.PreemptionPoint(s.config.preemption.locks, service);  // before the lock's state is looked up
  (void)AcquireRw(s, lock, PushLock(s, lock), want, true, service, at);
}

void ReleasePushLock(PEX_PUSH_LOCK lock, bool exclusive, const char* service) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  RwLock& l = PushLock(s, lock);
  Context* me = &s.Current();
  const bool holds_exclusive = l.exclusive == me;
  const bool holds_shared = l.shared.count(me) != 0;
  if ((exclusive && holds_shared) || (!exclusive && holds_exclusive)) {
    s.Fail("PUSH_LOCK", fmt::format("{} of push lock {}, which this thread holds {}", service, fmt::ptr(lock),
                                    exclusive ? "shared" : "exclusively"),
           at);
    return;
  }
  (void)ReleaseRw(s, lock, l, me, service, at);
}

}  // namespace

// ---- lookaside lists ----

VOID ExInitializeNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside, PALLOCATE_FUNCTION Allocate,
                                     PFREE_FUNCTION Free, ULONG Flags, SIZE_T Size, ULONG Tag, USHORT Depth) {
  Impl& s = CurrentEnvironment();
  InitializeLookaside(Lookaside->L, static_cast<POOL_TYPE>(NonPagedPoolNx), Size, Tag, Depth);
  Lookaside->L.Allocate = Allocate;
  Lookaside->L.Free = Free;
  s.lookaside_lists[&Lookaside->L] = Flags;
}

VOID ExInitializePagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside, PALLOCATE_FUNCTION Allocate,
                                    PFREE_FUNCTION Free, ULONG Flags, SIZE_T Size, ULONG Tag, USHORT Depth) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlAtMost(APC_LEVEL, "ExInitializePagedLookasideList", s.TakeSite());
  InitializeLookaside(Lookaside->L, PagedPool, Size, Tag, Depth);
  Lookaside->L.Allocate = Allocate;
  Lookaside->L.Free = Free;
  s.lookaside_lists[&Lookaside->L] = Flags;
}

NTSTATUS ExInitializeLookasideListEx(PLOOKASIDE_LIST_EX Lookaside, PALLOCATE_FUNCTION_EX Allocate,
                                     PFREE_FUNCTION_EX Free, POOL_TYPE PoolType, ULONG Flags, SIZE_T Size,
                                     ULONG Tag, USHORT Depth) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  if (Size < LOOKASIDE_MINIMUM_BLOCK_SIZE ||
      (Flags & ~(EX_LOOKASIDE_LIST_EX_FLAGS_RAISE_ON_FAIL | EX_LOOKASIDE_LIST_EX_FLAGS_FAIL_NO_RAISE)) != 0 ||
      ((Flags & EX_LOOKASIDE_LIST_EX_FLAGS_RAISE_ON_FAIL) != 0 &&
       (Flags & EX_LOOKASIDE_LIST_EX_FLAGS_FAIL_NO_RAISE) != 0)) {
    return STATUS_INVALID_PARAMETER;
  }
  s.RequireIrqlAtMost(IsPaged(PoolType) ? APC_LEVEL : DISPATCH_LEVEL, "ExInitializeLookasideListEx", at);
  InitializeLookaside(Lookaside->L, PoolType, Size, Tag, Depth);
  Lookaside->L.AllocateEx = Allocate;
  Lookaside->L.FreeEx = Free;
  s.lookaside_lists[&Lookaside->L] = Flags;
  return STATUS_SUCCESS;
}

PVOID ExAllocateFromNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside) {
  return AllocateEntry(CurrentEnvironment(), &Lookaside->L, false, "ExAllocateFromNPagedLookasideList");
}
PVOID ExAllocateFromPagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside) {
  return AllocateEntry(CurrentEnvironment(), &Lookaside->L, false, "ExAllocateFromPagedLookasideList");
}
PVOID ExAllocateFromLookasideListEx(PLOOKASIDE_LIST_EX Lookaside) {
  return AllocateEntry(CurrentEnvironment(), &Lookaside->L, true, "ExAllocateFromLookasideListEx");
}
VOID ExFreeToNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside, PVOID Entry) {
  FreeEntry(CurrentEnvironment(), &Lookaside->L, Entry, false, "ExFreeToNPagedLookasideList");
}
VOID ExFreeToPagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside, PVOID Entry) {
  FreeEntry(CurrentEnvironment(), &Lookaside->L, Entry, false, "ExFreeToPagedLookasideList");
}
VOID ExFreeToLookasideListEx(PLOOKASIDE_LIST_EX Lookaside, PVOID Entry) {
  FreeEntry(CurrentEnvironment(), &Lookaside->L, Entry, true, "ExFreeToLookasideListEx");
}
VOID ExDeleteNPagedLookasideList(PNPAGED_LOOKASIDE_LIST Lookaside) {
  DeleteLookaside(CurrentEnvironment(), &Lookaside->L, "ExDeleteNPagedLookasideList");
}
VOID ExDeletePagedLookasideList(PPAGED_LOOKASIDE_LIST Lookaside) {
  DeleteLookaside(CurrentEnvironment(), &Lookaside->L, "ExDeletePagedLookasideList");
}
VOID ExDeleteLookasideListEx(PLOOKASIDE_LIST_EX Lookaside) {
  DeleteLookaside(CurrentEnvironment(), &Lookaside->L, "ExDeleteLookasideListEx");
}
VOID ExFlushLookasideListEx(PLOOKASIDE_LIST_EX Lookaside) { (void)Lookaside; }  // nothing is cached

// ---- mutexes and semaphores (dispatcher objects) ----

static_assert(sizeof(KMUTANT) == sizeof(MutantObject) && offsetof(KMUTANT, OwnerThread) == offsetof(MutantObject, owner));
static_assert(sizeof(KSEMAPHORE) == sizeof(SemaphoreObject) && offsetof(KSEMAPHORE, Limit) == offsetof(SemaphoreObject, limit));

VOID KeInitializeMutex(PRKMUTEX Mutex, ULONG Level) {
  (void)Level;
  Impl& s = CurrentEnvironment();
  s.CheckNotWaitedOn(Mutex, sizeof(*Mutex), "KeInitializeMutex", s.TakeSite());
  ForgetOrder(s, Mutex);
  ndksim::kernel::Dispatcher::InitializeMutant(*reinterpret_cast<MutantObject*>(Mutex));
}

LONG KeReleaseMutex(PRKMUTEX Mutex, BOOLEAN Wait) {
  (void)Wait;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "KeReleaseMutex", at);
  s.CheckLiveObject(Mutex, "KeReleaseMutex", at);
  auto& mutant = *reinterpret_cast<MutantObject*>(Mutex);
  if (mutant.owner != &s.Current()) {
    s.Fail("MUTEX", fmt::format("KeReleaseMutex of mutex {}, which {}", fmt::ptr(Mutex),
                                mutant.owner == nullptr ? "is not held (released twice?)" : "another thread owns"),
           at);
    return mutant.header.signal_state;
  }
  const LONG previous = s.dispatcher.ReleaseMutant(mutant);
  Impl::WaitableReleased(s.Current(), Mutex);
  s.PreemptionPoint(s.config.preemption.locks, "KeReleaseMutex");
  return previous;
}

LONG KeReadStateMutex(PRKMUTEX Mutex) { return Mutex->Header.SignalState; }

VOID KeInitializeSemaphore(PRKSEMAPHORE Semaphore, LONG Count, LONG Limit) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.CheckNotWaitedOn(Semaphore, sizeof(*Semaphore), "KeInitializeSemaphore", at);
  if (Count < 0 || Limit <= 0 || Count > Limit) {
    s.Fail("SEMAPHORE", fmt::format("KeInitializeSemaphore with count {} and limit {} (0 <= count <= limit, and a "
                                    "limit above 0)", Count, Limit),
           at);
    return;
  }
  ndksim::kernel::Dispatcher::InitializeSemaphore(*reinterpret_cast<SemaphoreObject*>(Semaphore), Count, Limit);
}

LONG KeReleaseSemaphore(PRKSEMAPHORE Semaphore, KPRIORITY Increment, LONG Adjustment, BOOLEAN Wait) {
  (void)Increment;
  (void)Wait;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "KeReleaseSemaphore", at);
  s.CheckLiveObject(Semaphore, "KeReleaseSemaphore", at);
  auto& semaphore = *reinterpret_cast<SemaphoreObject*>(Semaphore);
  if (Adjustment <= 0 || semaphore.header.signal_state > semaphore.limit - Adjustment) {
    // Windows raises STATUS_SEMAPHORE_LIMIT_EXCEEDED: the count is left as it was.
    s.Fail("SEMAPHORE", fmt::format("KeReleaseSemaphore of semaphore {} by {} at count {}: above its limit of {} "
                                    "(STATUS_SEMAPHORE_LIMIT_EXCEEDED)", fmt::ptr(Semaphore), Adjustment,
                                    semaphore.header.signal_state, semaphore.limit),
           at);
    return semaphore.header.signal_state;
  }
  const LONG previous = s.dispatcher.ReleaseSemaphore(semaphore, Adjustment);
  s.PreemptionPoint(s.config.preemption.locks, "KeReleaseSemaphore");
  return previous;
}

LONG KeReadStateSemaphore(PRKSEMAPHORE Semaphore) { return Semaphore->Header.SignalState; }

// ---- fast and guarded mutexes ----

VOID ExInitializeFastMutex(PFAST_MUTEX FastMutex) { InitializeMutex(FastMutex); }
VOID ExAcquireFastMutex(PFAST_MUTEX FastMutex) { AcquireMutex(FastMutex, MutexHold::kIrql, "ExAcquireFastMutex"); }
VOID ExReleaseFastMutex(PFAST_MUTEX FastMutex) { ReleaseMutex(FastMutex, MutexHold::kIrql, "ExReleaseFastMutex"); }
BOOLEAN ExTryToAcquireFastMutex(PFAST_MUTEX FastMutex) {
  return TryAcquireMutex(FastMutex, MutexHold::kIrql, "ExTryToAcquireFastMutex") ? TRUE : FALSE;
}
VOID ExAcquireFastMutexUnsafe(PFAST_MUTEX FastMutex) {
  AcquireMutex(FastMutex, MutexHold::kUnsafe, "ExAcquireFastMutexUnsafe");
}
VOID ExReleaseFastMutexUnsafe(PFAST_MUTEX FastMutex) {
  ReleaseMutex(FastMutex, MutexHold::kUnsafe, "ExReleaseFastMutexUnsafe");
}
VOID KeInitializeGuardedMutex(PKGUARDED_MUTEX Mutex) { InitializeMutex(Mutex); }
VOID KeAcquireGuardedMutex(PKGUARDED_MUTEX Mutex) { AcquireMutex(Mutex, MutexHold::kGuarded, "KeAcquireGuardedMutex"); }
VOID KeReleaseGuardedMutex(PKGUARDED_MUTEX Mutex) { ReleaseMutex(Mutex, MutexHold::kGuarded, "KeReleaseGuardedMutex"); }
BOOLEAN KeTryToAcquireGuardedMutex(PKGUARDED_MUTEX Mutex) {
  return TryAcquireMutex(Mutex, MutexHold::kGuarded, "KeTryToAcquireGuardedMutex") ? TRUE : FALSE;
}
VOID KeAcquireGuardedMutexUnsafe(PKGUARDED_MUTEX Mutex) {
  AcquireMutex(Mutex, MutexHold::kUnsafe, "KeAcquireGuardedMutexUnsafe");
}
VOID KeReleaseGuardedMutexUnsafe(PKGUARDED_MUTEX Mutex) {
  ReleaseMutex(Mutex, MutexHold::kUnsafe, "KeReleaseGuardedMutexUnsafe");
}

// ---- executive resources ----

NTSTATUS ExInitializeResourceLite(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  if (const auto it = s.rw_locks.find(Resource);
      it != s.rw_locks.end() && (it->second.exclusive != nullptr || !it->second.shared.empty())) {
    s.Fail("RESOURCE", fmt::format("ExInitializeResourceLite of resource {}, which is initialized and held",
                                   fmt::ptr(Resource)),
           at);
    return STATUS_INVALID_PARAMETER;
  }
  *Resource = ERESOURCE{};
  s.rw_locks[Resource] = MakeRwLock(RwLock::Kind::kResource);
  ForgetOrder(s, Resource);
  return STATUS_SUCCESS;
}

NTSTATUS ExReinitializeResourceLite(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  RwLock* l = ResourceState(s, Resource, "ExReinitializeResourceLite", s.TakeSite());
  if (l == nullptr) return STATUS_INVALID_PARAMETER;
  *l = MakeRwLock(RwLock::Kind::kResource);
  ForgetOrder(s, Resource);
  return STATUS_SUCCESS;
}

NTSTATUS ExDeleteResourceLite(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  RwLock* l = ResourceState(s, Resource, "ExDeleteResourceLite", at);
  if (l == nullptr) return STATUS_INVALID_PARAMETER;
  if (l->exclusive != nullptr || !l->shared.empty()) {
    s.Fail("RESOURCE", fmt::format("ExDeleteResourceLite of resource {}, which is still held", fmt::ptr(Resource)), at);
    return STATUS_INVALID_PARAMETER;
  }
  s.rw_locks.erase(Resource);
  return STATUS_SUCCESS;
}

BOOLEAN ExAcquireResourceExclusiveLite(PERESOURCE Resource, BOOLEAN Wait) {
  return AcquireResource(Resource, Want::kExclusive, Wait, "ExAcquireResourceExclusiveLite");
}
BOOLEAN ExTryToAcquireResourceExclusiveLite(PERESOURCE Resource) {
  return AcquireResource(Resource, Want::kExclusive, FALSE, "ExTryToAcquireResourceExclusiveLite");
}
BOOLEAN ExAcquireResourceSharedLite(PERESOURCE Resource, BOOLEAN Wait) {
  return AcquireResource(Resource, Want::kShared, Wait, "ExAcquireResourceSharedLite");
}
BOOLEAN ExAcquireSharedStarveExclusive(PERESOURCE Resource, BOOLEAN Wait) {
  return AcquireResource(Resource, Want::kSharedStarveExclusive, Wait, "ExAcquireSharedStarveExclusive");
}
BOOLEAN ExAcquireSharedWaitForExclusive(PERESOURCE Resource, BOOLEAN Wait) {
  return AcquireResource(Resource, Want::kShared, Wait, "ExAcquireSharedWaitForExclusive");
}

VOID ExReleaseResourceLite(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  RwLock* l = ResourceState(s, Resource, "ExReleaseResourceLite", at);
  if (l != nullptr) (void)ReleaseRw(s, Resource, *l, &s.Current(), "ExReleaseResourceLite", at);
}

VOID ExReleaseResourceForThreadLite(PERESOURCE Resource, ERESOURCE_THREAD ResourceThreadId) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  RwLock* l = ResourceState(s, Resource, "ExReleaseResourceForThreadLite", at);
  if (l != nullptr) {
    (void)ReleaseRw(s, Resource, *l, reinterpret_cast<Context*>(ResourceThreadId), "ExReleaseResourceForThreadLite",
                    at);
  }
}

VOID ExConvertExclusiveToSharedLite(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  RwLock* l = ResourceState(s, Resource, "ExConvertExclusiveToSharedLite", at);
  if (l == nullptr) return;
  Context* me = &s.Current();
  if (l->exclusive != me) {
    s.Fail("RESOURCE", fmt::format("ExConvertExclusiveToSharedLite of resource {}, which this thread does not hold "
                                   "exclusively", fmt::ptr(Resource)),
           at);
    return;
  }
  l->shared[me] = l->exclusive_count;
  l->exclusive = nullptr;
  l->exclusive_count = 0;
  Pulse(s, *l);
}

BOOLEAN ExIsResourceAcquiredExclusiveLite(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const RwLock* l = ResourceState(s, Resource, "ExIsResourceAcquiredExclusiveLite", s.TakeSite());
  return l != nullptr && l->exclusive == &s.Current() ? TRUE : FALSE;
}

ULONG ExIsResourceAcquiredSharedLite(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const RwLock* l = ResourceState(s, Resource, "ExIsResourceAcquiredSharedLite", s.TakeSite());
  if (l == nullptr) return 0;
  Context* me = &s.Current();
  if (l->exclusive == me) return l->exclusive_count;
  const auto it = l->shared.find(me);
  return it != l->shared.end() ? it->second : 0;
}

ULONG ExGetExclusiveWaiterCount(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const RwLock* l = ResourceState(s, Resource, "ExGetExclusiveWaiterCount", s.TakeSite());
  return l != nullptr ? l->exclusive_waiters : 0;
}

ULONG ExGetSharedWaiterCount(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const RwLock* l = ResourceState(s, Resource, "ExGetSharedWaiterCount", s.TakeSite());
  return l != nullptr ? l->shared_waiters : 0;
}

ERESOURCE_THREAD ExGetCurrentResourceThread(VOID) {
  return reinterpret_cast<ERESOURCE_THREAD>(&CurrentEnvironment().Current());
}

PVOID ExEnterCriticalRegionAndAcquireResourceExclusive(PERESOURCE Resource) {
  KeEnterCriticalRegion();
  (void)AcquireResource(Resource, Want::kExclusive, TRUE, "ExEnterCriticalRegionAndAcquireResourceExclusive");
  return Resource;
}

PVOID ExEnterCriticalRegionAndAcquireResourceShared(PERESOURCE Resource) {
  KeEnterCriticalRegion();
  (void)AcquireResource(Resource, Want::kShared, TRUE, "ExEnterCriticalRegionAndAcquireResourceShared");
  return Resource;
}

VOID ExReleaseResourceAndLeaveCriticalRegion(PERESOURCE Resource) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  RwLock* l = ResourceState(s, Resource, "ExReleaseResourceAndLeaveCriticalRegion", at);
  if (l != nullptr) (void)ReleaseRw(s, Resource, *l, &s.Current(), "ExReleaseResourceAndLeaveCriticalRegion", at);
  KeLeaveCriticalRegion();
}

// ---- push locks ----

VOID ExInitializePushLock(PEX_PUSH_LOCK PushLock) {
  Impl& s = CurrentEnvironment();
  PushLock->Value = 0;
  s.rw_locks[PushLock] = MakeRwLock(RwLock::Kind::kPushLock);
  ForgetOrder(s, PushLock);
}
VOID ExAcquirePushLockExclusiveEx(PEX_PUSH_LOCK PushLock, ULONG Flags) {
  (void)Flags;
  AcquirePushLock(PushLock, Want::kExclusive, "ExAcquirePushLockExclusiveEx");
}
VOID ExAcquirePushLockSharedEx(PEX_PUSH_LOCK PushLock, ULONG Flags) {
  (void)Flags;
  AcquirePushLock(PushLock, Want::kShared, "ExAcquirePushLockSharedEx");
}
VOID ExReleasePushLockExclusiveEx(PEX_PUSH_LOCK PushLock, ULONG Flags) {
  (void)Flags;
  ReleasePushLock(PushLock, true, "ExReleasePushLockExclusiveEx");
}
VOID ExReleasePushLockSharedEx(PEX_PUSH_LOCK PushLock, ULONG Flags) {
  (void)Flags;
  ReleasePushLock(PushLock, false, "ExReleasePushLockSharedEx");
}
