// SPDX-License-Identifier: MIT
// The kernel environment's state behind the C services: per-context IRQL and held spin locks, the
// DPC queue, timers, system worker threads, pool, MDLs, drivers and devices, WSK registrations, and
// the verifier that checks their use. One Environment::Impl per environment; the C services find
// the one current on the calling OS thread.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ndis.h"
#include "ndksim/kernel/environment.h"
#include "wskndk.h"

#include "dispatcher.h"
#include "ndk_interposer.h"
#include "scheduler.h"

namespace ndksim::kernel {

// Where a service was called from (the headers' NDKSIM_AT macros record it).
struct Site {
  const char* file = nullptr;
  std::uint32_t line = 0;
  const char* function = nullptr;
};
std::string Describe(const Site& site);
// A WCHAR in the ANSI code page, which is ISO 8859-1 here: above 0xFF it becomes '?'.
constexpr char AnsiOf(WCHAR c) { return c <= 0xFF ? static_cast<char>(c) : '?'; }
// The first argument of a DbgPrint call (count arguments, the format's included, of wdm.h's kinds)
// that its format does not take by the Windows kernel runtime's rules, described; "" if none.
std::string FormatMismatch(const char* format, ULONG count, const UCHAR* kinds);
std::string TagName(ULONG tag);

struct Driver;

// The C headers' dispatcher objects (KEVENT, KTIMER, a thread object) begin with a
// DISPATCHER_HEADER, which is the dispatcher's DispatcherObject under its WDK name; and the type
// numbers the headers name are the dispatcher's kinds.
static_assert(sizeof(DISPATCHER_HEADER) == sizeof(DispatcherObject));
static_assert(offsetof(DISPATCHER_HEADER, Type) == offsetof(DispatcherObject, kind));
static_assert(offsetof(DISPATCHER_HEADER, SignalState) == offsetof(DispatcherObject, signal_state));
static_assert(offsetof(DISPATCHER_HEADER, WaitListHead) == offsetof(DispatcherObject, first));
static_assert(offsetof(DISPATCHER_HEADER, WaitListHead) + sizeof(void*) == offsetof(DispatcherObject, last));
static_assert(NDKSIM_NOTIFICATION_EVENT_OBJECT == static_cast<int>(DispatcherObject::Kind::kNotificationEvent));
static_assert(NDKSIM_SYNCHRONIZATION_EVENT_OBJECT == static_cast<int>(DispatcherObject::Kind::kSynchronizationEvent));
static_assert(NDKSIM_NOTIFICATION_TIMER_OBJECT == static_cast<int>(DispatcherObject::Kind::kNotificationTimer));
static_assert(NDKSIM_SYNCHRONIZATION_TIMER_OBJECT == static_cast<int>(DispatcherObject::Kind::kSynchronizationTimer));
static_assert(offsetof(KEVENT, Header) == 0 && offsetof(KTIMER, Header) == 0);

// The dispatcher object at the start of a KEVENT, KTIMER or thread object.
inline DispatcherObject& ObjectOf(void* object) { return *static_cast<DispatcherObject*>(object); }

// A kernel thread's object: what PsCreateSystemThread's handle refers to; signaled when it ends.
struct ThreadObject {
  DISPATCHER_HEADER header{};
  Scheduler::ThreadId id = Scheduler::kNone;  // kNone once the thread has ended
  std::int64_t references = 0;
  bool handle_open = false;
};
static_assert(offsetof(ThreadObject, header) == 0);

// What each execution context (a kernel thread, or the environment's own context where DPCs and
// the provider's callbacks run) carries.
struct Context {
  KIRQL irql = PASSIVE_LEVEL;
  Node* machine = nullptr;
  Driver* driver = nullptr;
  std::vector<PKSPIN_LOCK> held;  // spin locks held, in acquisition order
  // The other locks held, for lock-order verification: fast, guarded and kernel mutexes,
  // resources and push locks (once per acquisition, recursive ones as often as taken).
  std::vector<const void*> waitable_held;
  ThreadObject* object = nullptr;  // a system thread's; nullptr for other threads and the DPC context
  // KeEnterCriticalRegion / KeEnterGuardedRegion nesting (Windows' KernelApcDisable and
  // SpecialApcDisable counts); both must be back at zero when the thread or work item ends.
  std::uint32_t critical_regions = 0;
  std::uint32_t guarded_regions = 0;
  // Consecutive empty CQ polls at one simulated time (a busy poll, once it reaches kBusyPoll).
  std::uint32_t empty_polls = 0;
  TimePoint empty_poll_time{};
};

struct Driver {
  DRIVER_OBJECT object{};
  std::string name;
  Node* node = nullptr;
  NTSTATUS status = STATUS_PENDING;
  bool unload_queued = false;
  std::u16string registry_text;
  UNICODE_STRING registry_path{};
};

// What an IO_WORKITEM is (PIO_WORKITEM points to one).
struct IoWorkItemRecord {
  PDEVICE_OBJECT device = nullptr;
  Driver* driver = nullptr;
  bool queued = false;
};

// PsTerminateSystemThread unwinds the thread's stack with this.
struct PsTerminated {
  NTSTATUS status = STATUS_SUCCESS;
};

// One queued work item: an IO_WORKITEM's or an ExQueueWorkItem's.
struct Work {
  IoWorkItemRecord* io = nullptr;
  PWORK_QUEUE_ITEM ex = nullptr;
  PIO_WORKITEM_ROUTINE routine = nullptr;
  PIO_WORKITEM_ROUTINE_EX routine_ex = nullptr;
  PVOID context = nullptr;
  Driver* driver = nullptr;
  Node* machine = nullptr;
};

// What a block the environment allocated holds: pool a driver asked for (counted by tag), or an
// object a service made in pool for it.
enum class BlockKind : std::uint8_t { kPool, kMdl, kWorkItem, kDevice };
const char* Name(BlockKind kind);  // "pool", "MDL", "IO_WORKITEM", "device"

// A block lies between guard zones, as in Driver Verifier's special pool: `guard` bytes before it,
// and after it the rest of its last line (or page) and `guard` bytes more, all filled with a
// pattern the environment checks (Environment::Impl::CheckGuards).
struct PoolBlock {
  std::size_t size = 0;
  std::size_t guard = 0;   // the guard zone before the block; the allocation starts that far before
  std::size_t after = 0;   // the guard zone after it: from its end to the allocation's
  ULONG tag = 0;
  BlockKind kind = BlockKind::kPool;
  Driver* driver = nullptr;
  Site site;
  bool freed = false;
  Site freed_at;
};

struct WskRegistrationRecord {
  Driver* driver = nullptr;
  std::int64_t captures = 0;
  bool deregistered = false;
  DispatcherObject released{};  // signaled while no capture is outstanding
};

// A device a test program opened (Environment::OpenDevice): its FILE_OBJECT, and where its
// requests run.
struct DeviceOpen {
  FILE_OBJECT file{};
  PDEVICE_OBJECT device = nullptr;
  Driver* driver = nullptr;  // the device's
  Node* machine = nullptr;
  bool closed = false;
};

// An IRP the I/O manager issued, outstanding until IoCompleteRequest.
struct IrpRecord {
  IRP irp{};
  IO_STACK_LOCATION stack{};
  bool completed = false;
  DispatcherObject done{};  // a notification event, signaled at the completion
};

// A test program's request (Environment::StartDeviceIoControl and the calls that wait): its IRP's
// outcome once complete, and the I/O manager's buffers for it.
struct IoRequest {
  IoResult result;
  bool dispatched = false;  // the dispatch routine has returned
  bool finished = false;    // the IRP has completed and its output is back
  std::vector<std::byte> system;  // the system buffer
  PMDL mdl = nullptr;             // the output's MDL (the direct methods)
  std::function<void(IoRequest&, IRP&, IO_STACK_LOCATION&)> setup;
  std::function<void(IoRequest&, const IRP&)> finish;
  // The request's IRP: owned here, not by the thread that waits for it, so that one the run leaves
  // pending (its thread never resumes) goes with the environment.
  std::unique_ptr<IrpRecord> record;
};

// IoCreateSymbolicLink's link: the device name it stands for, the driver that made it, its name.
struct SymbolicLink {
  std::u16string target;  // the device name, in lower case (names compare without case)
  Driver* driver = nullptr;
  std::u16string name;    // as the driver spelled it, for reports
};

struct OpenAdapter {
  NDK_ADAPTER* adapter = nullptr;
  Node* node = nullptr;
  Driver* driver = nullptr;
};

// An executive resource's or a push lock's holders and waiters (ERESOURCE and EX_PUSH_LOCK hold
// no state of their own here). Every release pulses `changed`, and each waiter looks again.
struct RwLock {
  enum class Kind : std::uint8_t { kResource, kPushLock };
  Kind kind = Kind::kResource;
  Context* exclusive = nullptr;
  std::uint32_t exclusive_count = 0;        // the exclusive holder's acquisitions
  std::map<Context*, std::uint32_t> shared;  // shared holders and their acquisitions
  std::uint32_t exclusive_waiters = 0;
  std::uint32_t shared_waiters = 0;
  DispatcherObject changed{};               // a notification event, pulsed on every release
};

struct Environment::Impl {
  Impl(Fabric& fabric, const EnvironmentConfig& config);
  ~Impl();

  // The loaded driver whose DRIVER_OBJECT this is, or nullptr.
  Driver* DriverOf(const DRIVER_OBJECT* object) const {
    for (const auto& d : drivers) {
      if (&d->object == object) return d.get();
    }
    return nullptr;
  }
  // The interface index of a node's RNIC on its machine.
  static std::uint32_t IfIndexOf(const Node& node) { return 10 + node.Index(); }
  // The machine a node's RNIC sits in, named by its first node (Environment::AddRnic); the node
  // itself unless it was added to another's.
  const Node* MachineOf(const Node* node) const {
    const auto it = machine_of.find(node);
    return it == machine_of.end() ? node : it->second;
  }
  std::map<const Node*, const Node*> machine_of;  // nodes added to another node's machine

  // ---- contexts ----
  Context& Current() {
    if (!scheduler.InThread()) return home;
    return ContextOf(scheduler.Current());
  }
  Context& ContextOf(Scheduler::ThreadId id) {
    if (id >= contexts.size()) contexts.resize(id + 1);
    return contexts[id];
  }
  // The running kernel thread's name, or "dpc" on the environment's own context.
  const std::string& CurrentName() const;
  Scheduler::ThreadId StartKernelThread(std::string name, Node* machine, Driver* driver, std::function<void()> body,
                                        ThreadObject* object = nullptr);

  // ---- schedule exploration ----
  // A preemption point of the running kernel thread, if `enabled` (one of config.preemption's)
  // and it runs below DISPATCH_LEVEL; `where` names the service in the interleaving.
  void PreemptionPoint(bool enabled, const char* where) {
    if (enabled) Preempt(where);  // inline: with the points off, an NDK post pays one branch
  }
  void Preempt(const char* where);

  // ---- busy polling ----
  // A CQ poll found nothing. The running thread's kBusyPoll-th empty poll in a row at one
  // simulated time blocks it until the simulation has run one more event (time passes while a
  // thread spins, as the NIC works beside it on Windows). Below DISPATCH_LEVEL only.
  static constexpr std::uint32_t kBusyPoll = 3;
  void PolledEmpty(const char* service);
  void PolledSomething();

  // ---- waits ----
  // A wait as KeWaitForSingleObject/KeWaitForMultipleObjects make it: the IRQL rule, the objects
  // checked for use after free, `timeout` as the WDK gives it (NULL: forever). STATUS_WAIT_0 + the
  // index (any), STATUS_SUCCESS (all) or STATUS_TIMEOUT.
  NTSTATUS Wait(std::span<DispatcherObject* const> objects, WaitType type, PLARGE_INTEGER timeout, const Site& site,
                const char* service);

  // ---- the verifier ----
  Site TakeSite();
  // Fails the run where it is: by throwing VerifierError now on a kernel thread, in a DPC or in a
  // consumer's callback, so that the code after a failed NT_ASSERT never runs; elsewhere on the
  // environment's own context (its checks between callbacks) by recording it (the first one) and
  // throwing once the simulation reaches a point where it can stop.
  void Fail(const std::string& check, const std::string& what, const Site& site);
  // Fails the run at once wherever it is called (a bug check: the caller cannot go on).
  [[noreturn]] void FailFatal(const std::string& check, const std::string& what, const Site& site);
  VerifierError MakeError(const std::string& check, const std::string& what, const Site& site);
  void RequireIrqlAtMost(KIRQL max, const char* service, const Site& site);
  void RequireIrqlExactly(KIRQL irql, const char* service, const Site& site);
  void CheckLiveObject(const void* object, const char* service, const Site& site);
  void ThrowPendingFailure();
  void CheckDriverLeftNothing(Driver& driver);
  // A kernel thread or a work item ends on the current context: it must have left every critical
  // and guarded region it entered (`what` names it in the report).
  void CheckRegionsLeft(const std::string& what);

  // ---- IRQL and DPCs ----
  void SetIrql(KIRQL irql);
  void RunDpcs();  // at DISPATCH_LEVEL, on the calling context, until the queue is empty

  // ---- time ----
  TimePoint DeadlineOf(const LARGE_INTEGER& timeout) const;
  ULONGLONG InterruptTime() const;  // 100-ns units of simulated time
  static constexpr ULONGLONG kSystemTimeEpoch = 134116992000000000ULL;  // 2026-01-01 in 100 ns since 1601

  // ---- timers ----
  bool SetTimer(PKTIMER timer, LARGE_INTEGER due, LONG period_ms, PKDPC dpc, const Site& site);
  bool CancelTimer(PKTIMER timer);
  std::optional<TimePoint> NextTimerDue() const;
  bool ExpireTimers(TimePoint now);

  // ---- work items ----
  void QueueWork(Work work);
  void WorkerMain(Scheduler::ThreadId self);

  // ---- pool ----
  void* Allocate(std::size_t bytes, ULONG tag, bool zero, bool paged, const Site& site, BlockKind kind);
  void Free(void* p, std::optional<ULONG> tag, const Site& site, const char* service);
  PoolBlock* FindBlock(const void* p, std::uintptr_t* start);
  // Reports `service` (KeInitializeEvent and its kind) initializing an object that a kernel thread
  // waits on: the wait would go on in an object that was made anew under it.
  void CheckNotWaitedOn(const void* object, std::size_t bytes, const char* service, const Site& at);
  // What was written where it must not have been: the guard zones of the block at `start`, and,
  // for a freed block, the block itself (a write after free); empty if nothing.
  std::string Corruption(std::uintptr_t start, const PoolBlock& b) const;
  // Reports the first corrupted block in quarantine (of `driver`, or of any driver).
  void CheckQuarantine(const Driver* driver, const Site& at);
  // Gives a block back to the C library (it leaves quarantine, or the environment ends).
  static void Release(std::uintptr_t start, const PoolBlock& b);

  // ---- the idle hook: simulated time ----
  bool AdvanceTime();
  // Ends the waits and timers due by now and runs the DPCs that queues; true if a wait ended or a
  // timer fired.
  bool ExpireDue();
  bool AdvanceForPollers(std::optional<TimePoint> deadline, Duration limit);

  Fabric& fabric;
  EnvironmentConfig config;
  Scheduler scheduler;
  Dispatcher dispatcher;
  Environment::Impl* previous = nullptr;  // the environment current before this one

  Context home;                          // the environment's own context
  std::deque<Context> contexts;          // by kernel thread id (a deque: references stay valid)
  Site site;

  std::vector<PKDPC> dpcs;               // queued, in queuing order
  struct ActiveTimer {
    PKTIMER timer = nullptr;
    Driver* driver = nullptr;  // the driver that set it
  };
  std::vector<ActiveTimer> timers;       // set, in the order they were set
  std::deque<Work> work;                 // queued, not yet taken
  std::vector<Scheduler::ThreadId> idle_workers;
  std::vector<Scheduler::ThreadId> pollers;  // blocked in PolledEmpty until the next event
  std::uint32_t workers = 0;

  std::map<std::uintptr_t, PoolBlock> pool;  // live and recently freed blocks, by start address
  std::deque<std::uintptr_t> quarantine;     // freed blocks, oldest first
  std::size_t quarantined_bytes = 0;
  std::map<ULONG, PoolTagUsage> tags;

  std::vector<std::unique_ptr<Driver>> drivers;
  std::vector<void*> images;  // driver images' dlopen handles, closed last (driver_image.cc)
  void CloseImages();
  std::vector<std::unique_ptr<ThreadObject>> thread_objects;
  std::map<PEX_RUNDOWN_REF, DispatcherObject> rundown_waits;
  // IO_REMOVE_LOCKs (io_queues.cc) by address: each one's outstanding acquisitions by tag, and
  // whether IoReleaseRemoveLockAndWait was called, for the checks a checked build makes.
  struct RemoveLockRecord {
    std::map<const void*, std::uint32_t> tags;
    bool waited = false;
  };
  std::map<const void*, RemoveLockRecord> remove_locks;
  std::map<const void*, RwLock> rw_locks;                      // by ERESOURCE or EX_PUSH_LOCK address
  std::map<const GENERAL_LOOKASIDE*, ULONG> lookaside_lists;  // initialized lists and their flags
  std::map<PWSK_REGISTRATION, std::unique_ptr<WskRegistrationRecord>> wsk;
  std::vector<OpenAdapter> adapters;

  // ---- lock order (Driver Verifier's deadlock detection), for every kind of lock ----
  // An edge from a lock to one acquired, waiting for it, while the first was held, with where
  // (the first such acquisition). Acquiring a lock that reaches a lock the context holds, along
  // the edges, is an inversion: two contexts taking them in the two orders can deadlock.
  std::map<const void*, std::map<const void*, Site>> lock_order;
  std::map<const void*, const char*> lock_kinds;  // "spin lock", "fast mutex", ... by address
  // Reports `lock` (a `kind`) acquired at `at` by the current context, waiting for it, if that
  // inverts a known order with a lock the context holds (any kind), and records the order
  // otherwise.
  void CheckLockOrder(const void* lock, const char* kind, const Site& at);
  // The current context has taken (or given back) one acquisition of a lock other than a spin
  // lock; `holder`: the context that held it, for a release on behalf of another thread.
  void WaitableAcquired(const void* lock, const char* kind) {
    lock_kinds[lock] = kind;
    Current().waitable_held.push_back(lock);
  }
  static void WaitableReleased(Context& holder, const void* lock);
  // A lock's memory was freed or initialized again: what was known of the locks in [begin, end)
  // is forgotten (a new lock may take their place).
  void ForgetLocks(std::uintptr_t begin, std::uintptr_t end);

  // ---- the I/O manager (io_manager.cc) ----
  // Names are per machine (the machine's first node, MachineOf).
  using MachineName = std::pair<const Node*, std::u16string>;
  std::map<MachineName, PDEVICE_OBJECT> device_names;
  std::map<MachineName, SymbolicLink> symbolic_links;  // by "\??\X"
  std::vector<std::unique_ptr<DeviceOpen>> device_opens;  // DeviceHandle::id - 1
  std::map<const IRP*, IrpRecord*> outstanding_irps;
  std::map<std::uint32_t, std::unique_ptr<IoRequest>> io_requests;  // by PendingIo::id
  std::uint32_t next_io_request = 1;
  KSPIN_LOCK cancel_lock = 0;
  // IoCreateDevice's name for `device` on the calling driver's machine (STATUS_OBJECT_NAME_COLLISION
  // if taken); IoDeleteDevice's forgetting it.
  NTSTATUS NameDevice(PDEVICE_OBJECT device, const UNICODE_STRING* name);
  // Whether `name` (none: no) names a device on the calling driver's machine already.
  bool DeviceNameTaken(const UNICODE_STRING* name);
  void ForgetDevice(PDEVICE_OBJECT device);
  // The device `path` names on `machine`: a device name, a symbolic link, or CreateFile's "\\.\X".
  PDEVICE_OBJECT FindDevice(const Node* machine, const std::u16string& path);
  // What the driver left at unload: its symbolic links.
  void CheckLinksLeft(Driver& d, std::vector<std::string>* left);
  // IoCompleteRequest's checks and the completion itself.
  void CompleteIrp(IRP& irp, const Site& at);
  NdkInterposer ndk;                     // the NDK layer in front of every adapter's objects

  std::vector<std::string> debug_log;
  bool failed = false;
  std::optional<VerifierError> pending_failure;
  // DPC routines and consumer callbacks on the stack now (a failure there stops the run at once).
  std::uint32_t consumer_code_depth = 0;
};

// Counts a DPC routine or a consumer callback as running while it is in scope.
class InConsumerCode {
 public:
  explicit InConsumerCode(Environment::Impl& s) : s_(s) { ++s_.consumer_code_depth; }
  ~InConsumerCode() { --s_.consumer_code_depth; }
  InConsumerCode(const InConsumerCode&) = delete;
  InConsumerCode& operator=(const InConsumerCode&) = delete;

 private:
  Environment::Impl& s_;
};

// DbgPrint's text (strsafe.cc): `format` as the Windows kernel's runtime formats it (ntstrsafe.h's
// printf), cut to `capacity` characters; it ends before a conversion that runtime does not know.
// `service` names the caller for the char/WCHAR conversion's IRQL check.
std::string FormatNarrow(const char* format, va_list args, std::size_t capacity, const char* service);

// The environment current on this OS thread (the one whose services C code reaches); throws
// std::logic_error if none is.
Environment::Impl& CurrentEnvironment();
// The same, or nullptr when none is (services that also work without an environment, such as the
// safe string functions, check what they can only when one is).
Environment::Impl* CurrentEnvironmentIfAny();

}  // namespace ndksim::kernel
