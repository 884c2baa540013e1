// SPDX-License-Identifier: MIT
// Cancel-safe IRP queues (IoCsq*) and remove locks (Io*RemoveLock*), the two facilities a driver
// uses to hold IRPs safely and to know when none is in flight any more.
//
// A cancel-safe queue is the driver's list and lock with the cancel logic kept here: a queued IRP's
// cancel routine is the queue's, and whoever exchanges it for NULL owns the IRP. The removal
// routines skip an IRP whose cancel routine is already gone (IoCancelIrp has it, and is waiting for
// the driver's lock to take it out), so an IRP is completed exactly once whichever side comes first.
// Cancellation goes through io_manager.cc's IoCancelIrp and the cancel spin lock, as any other
// cancel routine does.
//
// A remove lock counts acquisitions; IoReleaseRemoveLockAndWait refuses new ones and blocks its
// thread on the lock's event (a dispatcher wait, so the scheduler orders it with everything else)
// until the count drains. The environment checks it as a checked build does, by tag.
#include <fmt/format.h>

#include "kernel_state.h"
#include "site_macros_off.h"

using ndksim::kernel::CurrentEnvironment;
using ndksim::kernel::DispatcherObject;
using ndksim::kernel::ObjectOf;
using ndksim::kernel::Site;
using ndksim::kernel::WaitType;
using Impl = ndksim::kernel::Environment::Impl;

namespace {

// ---- cancel-safe queues ----

PDRIVER_CANCEL SetCancelRoutine(PIRP irp, PDRIVER_CANCEL routine) {
  return reinterpret_cast<PDRIVER_CANCEL>(InterlockedExchangePointer(
      reinterpret_cast<PVOID volatile*>(&irp->CancelRoutine), reinterpret_cast<PVOID>(routine)));
}

// One callback type to another, through the generic function pointer type (which
// -Wcast-function-type allows): CsqInsertIrp holds either insert callback, as in the WDK.
template <typename To, typename From>
To CastCallback(From f) {
  return reinterpret_cast<To>(reinterpret_cast<void (*)()>(f));
}

// What Tail.Overlay.DriverContext[3] holds while the IRP is queued: the context it was inserted
// with, or else the queue.
PVOID& OwnerSlot(PIRP irp) { return irp->Tail.Overlay.DriverContext[3]; }

// Drops the IRP's association with the queue once it has left it.
void Detach(PIRP irp) {
  auto* context = static_cast<PIO_CSQ_IRP_CONTEXT>(OwnerSlot(irp));
  if (context != nullptr && context->Type == IO_TYPE_CSQ_IRP_CONTEXT) context->Irp = nullptr;
  OwnerSlot(irp) = nullptr;
}

NTSTATUS InitializeCsq(PIO_CSQ csq, ULONG type, PIO_CSQ_INSERT_IRP insert, PIO_CSQ_REMOVE_IRP remove,
                       PIO_CSQ_PEEK_NEXT_IRP peek, PIO_CSQ_ACQUIRE_LOCK acquire, PIO_CSQ_RELEASE_LOCK release,
                       PIO_CSQ_COMPLETE_CANCELED_IRP complete) {
  csq->Type = type;
  csq->CsqInsertIrp = insert;
  csq->CsqRemoveIrp = remove;
  csq->CsqPeekNextIrp = peek;
  csq->CsqAcquireLock = acquire;
  csq->CsqReleaseLock = release;
  csq->CsqCompleteCanceledIrp = complete;
  csq->ReservePointer = nullptr;
  return STATUS_SUCCESS;
}

// A queue the IoCsqInitialize routines made; reported (false) otherwise.
bool Initialized(Impl& s, const IO_CSQ* csq, const char* service, const Site& at) {
  if (csq != nullptr && (csq->Type == IO_TYPE_CSQ || csq->Type == IO_TYPE_CSQ_EX)) return true;
  s.Fail("IRP", fmt::format("{} on cancel-safe queue {}, which IoCsqInitialize(Ex) did not initialize", service,
                            fmt::ptr(csq)),
         at);
  return false;
}

}  // namespace

extern "C" {

// The cancel routine of every queued IRP. IoCancelIrp calls it holding the cancel spin lock, which
// it releases before taking the driver's lock (the order every cancel-safe queue keeps).
static VOID CsqCancelRoutine(PDEVICE_OBJECT DeviceObject, PIRP Irp) {
  (void)DeviceObject;
  IoReleaseCancelSpinLock(Irp->CancelIrql);
  Impl& s = CurrentEnvironment();
  PVOID owner = OwnerSlot(Irp);
  PIO_CSQ csq = nullptr;
  if (owner != nullptr && static_cast<PIO_CSQ_IRP_CONTEXT>(owner)->Type == IO_TYPE_CSQ_IRP_CONTEXT) {
    csq = static_cast<PIO_CSQ_IRP_CONTEXT>(owner)->Csq;
  } else if (owner != nullptr) {
    csq = static_cast<PIO_CSQ>(owner);
  }
  if (csq == nullptr || (csq->Type != IO_TYPE_CSQ && csq->Type != IO_TYPE_CSQ_EX)) {
    s.Fail("IRP", fmt::format("IRP {} was cancelled in a cancel-safe queue, but its Tail.Overlay.DriverContext[3] no "
                              "longer names the queue (it is the queue's while the IRP is queued)",
                              fmt::ptr(Irp)),
           Site{});
    return;
  }
  KIRQL irql;
  csq->CsqAcquireLock(csq, &irql);
  csq->CsqRemoveIrp(csq, Irp);
  Detach(Irp);
  csq->CsqReleaseLock(csq, irql);
  csq->CsqCompleteCanceledIrp(csq, Irp);
}

NTSTATUS IoCsqInitialize(PIO_CSQ Csq, PIO_CSQ_INSERT_IRP CsqInsertIrp, PIO_CSQ_REMOVE_IRP CsqRemoveIrp,
                         PIO_CSQ_PEEK_NEXT_IRP CsqPeekNextIrp, PIO_CSQ_ACQUIRE_LOCK CsqAcquireLock,
                         PIO_CSQ_RELEASE_LOCK CsqReleaseLock, PIO_CSQ_COMPLETE_CANCELED_IRP CsqCompleteCanceledIrp) {
  return InitializeCsq(Csq, IO_TYPE_CSQ, CsqInsertIrp, CsqRemoveIrp, CsqPeekNextIrp, CsqAcquireLock, CsqReleaseLock,
                       CsqCompleteCanceledIrp);
}

NTSTATUS IoCsqInitializeEx(PIO_CSQ Csq, PIO_CSQ_INSERT_IRP_EX CsqInsertIrp, PIO_CSQ_REMOVE_IRP CsqRemoveIrp,
                           PIO_CSQ_PEEK_NEXT_IRP CsqPeekNextIrp, PIO_CSQ_ACQUIRE_LOCK CsqAcquireLock,
                           PIO_CSQ_RELEASE_LOCK CsqReleaseLock, PIO_CSQ_COMPLETE_CANCELED_IRP CsqCompleteCanceledIrp) {
  // The WDK keeps the Ex callback in CsqInsertIrp too; Type tells which it is.
  return InitializeCsq(Csq, IO_TYPE_CSQ_EX, CastCallback<PIO_CSQ_INSERT_IRP>(CsqInsertIrp), CsqRemoveIrp,
                       CsqPeekNextIrp, CsqAcquireLock, CsqReleaseLock, CsqCompleteCanceledIrp);
}

NTSTATUS IoCsqInsertIrpEx(PIO_CSQ Csq, PIRP Irp, PIO_CSQ_IRP_CONTEXT Context, PVOID InsertContext) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoCsqInsertIrp", at);
  if (!Initialized(s, Csq, "IoCsqInsertIrp", at)) return STATUS_INVALID_PARAMETER;
  KIRQL irql;
  Csq->CsqAcquireLock(Csq, &irql);
  NTSTATUS status = STATUS_SUCCESS;
  if (Csq->Type == IO_TYPE_CSQ_EX) {
    status = CastCallback<PIO_CSQ_INSERT_IRP_EX>(Csq->CsqInsertIrp)(Csq, Irp, InsertContext);
  } else {
    Csq->CsqInsertIrp(Csq, Irp);
  }
  if (!NT_SUCCESS(status)) {
    // Refused: the IRP stays the caller's, untouched.
    Csq->CsqReleaseLock(Csq, irql);
    return status;
  }
  // The association and the pending mark come before the cancel routine, so a canceller that takes
  // the routine finds them (it waits for the driver's lock, held here, before it looks).
  if (Context != nullptr) {
    Context->Type = IO_TYPE_CSQ_IRP_CONTEXT;
    Context->Irp = Irp;
    Context->Csq = Csq;
    OwnerSlot(Irp) = Context;
  } else {
    OwnerSlot(Irp) = Csq;
  }
  IoMarkIrpPending(Irp);
  (void)SetCancelRoutine(Irp, CsqCancelRoutine);
  // Cancelled before the routine was set (IoCancelIrp found none to call): if the routine is still
  // there to take back, nobody else will cancel it, so it is cancelled here.
  if (Irp->Cancel && SetCancelRoutine(Irp, nullptr) != nullptr) {
    Csq->CsqRemoveIrp(Csq, Irp);
    Detach(Irp);
    Csq->CsqReleaseLock(Csq, irql);
    Csq->CsqCompleteCanceledIrp(Csq, Irp);
    return status;
  }
  Csq->CsqReleaseLock(Csq, irql);
  return status;
}

VOID IoCsqInsertIrp(PIO_CSQ Csq, PIRP Irp, PIO_CSQ_IRP_CONTEXT Context) {
  (void)IoCsqInsertIrpEx(Csq, Irp, Context, nullptr);  // the site stays recorded for it
}

PIRP IoCsqRemoveNextIrp(PIO_CSQ Csq, PVOID PeekContext) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoCsqRemoveNextIrp", at);
  if (!Initialized(s, Csq, "IoCsqRemoveNextIrp", at)) return nullptr;
  KIRQL irql;
  Csq->CsqAcquireLock(Csq, &irql);
  PIRP irp = Csq->CsqPeekNextIrp(Csq, nullptr, PeekContext);
  // An IRP without its cancel routine is being cancelled: its canceller waits for this lock to take
  // it out, so it is passed over, and the search goes on after it.
  while (irp != nullptr && SetCancelRoutine(irp, nullptr) == nullptr) irp = Csq->CsqPeekNextIrp(Csq, irp, PeekContext);
  if (irp != nullptr) {
    Csq->CsqRemoveIrp(Csq, irp);
    Detach(irp);
  }
  Csq->CsqReleaseLock(Csq, irql);
  return irp;
}

PIRP IoCsqRemoveIrp(PIO_CSQ Csq, PIO_CSQ_IRP_CONTEXT Context) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoCsqRemoveIrp", at);
  if (!Initialized(s, Csq, "IoCsqRemoveIrp", at)) return nullptr;
  KIRQL irql;
  Csq->CsqAcquireLock(Csq, &irql);
  PIRP irp = Context->Irp;
  // Being cancelled: the canceller takes it out and clears the context.
  if (irp != nullptr && SetCancelRoutine(irp, nullptr) == nullptr) irp = nullptr;
  if (irp != nullptr) {
    Csq->CsqRemoveIrp(Csq, irp);
    Detach(irp);
  }
  Csq->CsqReleaseLock(Csq, irql);
  return irp;
}

}  // extern "C"

// ---- remove locks ----

namespace {

using RemoveLockRecord = Impl::RemoveLockRecord;

// The lock's record, or nullptr (reported) for one IoInitializeRemoveLock never made.
RemoveLockRecord* RecordOf(Impl& s, PIO_REMOVE_LOCK lock, const char* service, const Site& at) {
  s.CheckLiveObject(lock, service, at);
  const auto it = s.remove_locks.find(lock);
  if (it != s.remove_locks.end()) return &it->second;
  s.Fail("REMOVE_LOCK", fmt::format("{} of remove lock {}, which IoInitializeRemoveLock did not initialize", service,
                                    fmt::ptr(lock)),
         at);
  return nullptr;
}

// Gives back one acquisition under `tag`, and wakes IoReleaseRemoveLockAndWait when it was the
// last; false (reported) if the tag holds none.
bool Release(Impl& s, PIO_REMOVE_LOCK lock, RemoveLockRecord& record, PVOID tag, const char* service,
             const Site& at) {
  const auto held = record.tags.find(tag);
  if (held == record.tags.end() || held->second == 0) {
    s.Fail("REMOVE_LOCK",
           fmt::format("{} of remove lock {} with tag {}, {}", service, fmt::ptr(lock), tag,
                       held == record.tags.end() ? "which was never acquired on it"
                                                 : "which is released more often than it was acquired"),
           at);
    return false;
  }
  --held->second;
  lock->Common.IoCount = lock->Common.IoCount - 1;
  if (lock->Common.IoCount == 0) (void)s.dispatcher.SetEvent(ObjectOf(&lock->Common.RemoveEvent));
  return true;
}

}  // namespace

extern "C" {

VOID IoInitializeRemoveLockEx(PIO_REMOVE_LOCK Lock, ULONG AllocateTag, ULONG MaxLockedMinutes, ULONG HighWatermark,
                              ULONG RemlockSize) {
  (void)AllocateTag;
  (void)MaxLockedMinutes;
  (void)HighWatermark;
  (void)RemlockSize;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "IoInitializeRemoveLock", at);
  s.CheckNotWaitedOn(Lock, sizeof(*Lock), "IoInitializeRemoveLock", at);
  Lock->Common.Removed = FALSE;
  Lock->Common.IoCount = 1;  // the lock's own count, which IoReleaseRemoveLockAndWait gives up
  ndksim::kernel::Dispatcher::InitializeEvent(ObjectOf(&Lock->Common.RemoveEvent),
                                              DispatcherObject::Kind::kNotificationEvent, false);
  s.remove_locks[Lock] = RemoveLockRecord{};
}

NTSTATUS IoAcquireRemoveLockEx(PIO_REMOVE_LOCK RemoveLock, PVOID Tag, PCSTR File, ULONG Line, ULONG RemlockSize) {
  (void)File;  // the recorded site says the same
  (void)Line;
  (void)RemlockSize;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoAcquireRemoveLock", at);
  RemoveLockRecord* record = RecordOf(s, RemoveLock, "IoAcquireRemoveLock", at);
  if (record == nullptr) return STATUS_INVALID_PARAMETER;
  if (RemoveLock->Common.Removed) return STATUS_DELETE_PENDING;
  RemoveLock->Common.IoCount = RemoveLock->Common.IoCount + 1;
  ++record->tags[Tag];
  return STATUS_SUCCESS;
}

VOID IoReleaseRemoveLockEx(PIO_REMOVE_LOCK RemoveLock, PVOID Tag, ULONG RemlockSize) {
  (void)RemlockSize;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoReleaseRemoveLock", at);
  RemoveLockRecord* record = RecordOf(s, RemoveLock, "IoReleaseRemoveLock", at);
  if (record != nullptr) (void)Release(s, RemoveLock, *record, Tag, "IoReleaseRemoveLock", at);
}

VOID IoReleaseRemoveLockAndWaitEx(PIO_REMOVE_LOCK RemoveLock, PVOID Tag, ULONG RemlockSize) {
  (void)RemlockSize;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "IoReleaseRemoveLockAndWait", at);
  RemoveLockRecord* record = RecordOf(s, RemoveLock, "IoReleaseRemoveLockAndWait", at);
  if (record == nullptr) return;
  if (record->waited) {
    s.Fail("REMOVE_LOCK", fmt::format("IoReleaseRemoveLockAndWait of remove lock {} a second time", fmt::ptr(RemoveLock)),
           at);
    return;
  }
  // The caller's own acquisition goes first: the lock is removed only by one who holds it.
  if (!Release(s, RemoveLock, *record, Tag, "IoReleaseRemoveLockAndWait", at)) return;
  record->waited = true;
  RemoveLock->Common.Removed = TRUE;
  // The lock's own count; what remains are the acquisitions still outstanding.
  RemoveLock->Common.IoCount = RemoveLock->Common.IoCount - 1;
  if (RemoveLock->Common.IoCount == 0) return;
  DispatcherObject* const objects[] = {&ObjectOf(&RemoveLock->Common.RemoveEvent)};
  (void)s.Wait(objects, WaitType::kAny, nullptr, at, "IoReleaseRemoveLockAndWait");
}

}  // extern "C"
