// SPDX-License-Identifier: MIT
// The kernel environment: kernel threads over a fabric, simulated time, and the state the C
// services keep (see kernel_state.h).
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/check.h"
#include "kernel_state.h"

namespace ndksim::kernel {

namespace {

thread_local Environment::Impl* current_environment = nullptr;

// Freed pool stays mapped (and poisoned) this long, so a use after free is caught, not silent.
constexpr std::size_t kQuarantineBlocks = 4096;
constexpr std::size_t kQuarantineBytes = 64u << 20;
constexpr std::size_t kPoolAlignment = 64;
constexpr unsigned char kFreedPattern = 0xDF;
constexpr unsigned char kUninitializedPattern = 0xCD;
constexpr unsigned char kGuardPattern = 0xB9;

// The first of `n` bytes at `p` that is not `pattern`, or n.
std::size_t FirstNot(const unsigned char* p, std::size_t n, unsigned char pattern) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != pattern) return i;
  }
  return n;
}

// A fault (SIGSEGV, SIGBUS) while the environment runs a kernel thread, a DPC or a consumer's
// callback fails the run like any other check: the handler throws VerifierError on the stack that
// faulted (it runs on an alternate stack of its own, so a thread that ran into its stack's guard
// page is reported too), and Run rethrows it with the thread, its IRQL and the interleaving. A
// fault anywhere else takes the signal's default action. The exception unwinds through the
// faulting frame: C code (the consumers this is for) has the unwind tables it needs on x86-64.
void OnFault(int signal, siginfo_t* info, void* /*context*/) {
  Environment::Impl* s = current_environment;
  if (s == nullptr || s->failed || !(s->scheduler.InThread() || s->consumer_code_depth > 0)) {
    ::signal(signal, SIG_DFL);  // returning repeats the fault, which now ends the process
    return;
  }
  s->FailFatal("CRASH",
               fmt::format("{} at address {} (an access to memory that is not there)",
                           signal == SIGBUS ? "SIGBUS" : "SIGSEGV", info->si_addr),
               Site{});
}

// Installs OnFault, and its stack, for the time the environment runs.
class FaultReport {
 public:
  FaultReport() : stack_(kStackBytes) {
    stack_t alternate{};
    alternate.ss_sp = stack_.data();
    alternate.ss_size = stack_.size();
    installed_ = sigaltstack(&alternate, &previous_stack_) == 0;
    struct sigaction action {};
    action.sa_sigaction = &OnFault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;  // NODEFER: the signal is not left blocked
    sigemptyset(&action.sa_mask);
    (void)sigaction(SIGSEGV, &action, &previous_segv_);
    (void)sigaction(SIGBUS, &action, &previous_bus_);
  }
  ~FaultReport() {
    (void)sigaction(SIGSEGV, &previous_segv_, nullptr);
    (void)sigaction(SIGBUS, &previous_bus_, nullptr);
    if (installed_) (void)sigaltstack(&previous_stack_, nullptr);
  }
  FaultReport(const FaultReport&) = delete;
  FaultReport& operator=(const FaultReport&) = delete;

 private:
  static constexpr std::size_t kStackBytes = 64 * 1024;
  std::vector<char> stack_;
  stack_t previous_stack_{};
  bool installed_ = false;
  struct sigaction previous_segv_ {};
  struct sigaction previous_bus_ {};
};

}  // namespace

Environment::Impl& CurrentEnvironment() {
  if (current_environment == nullptr) throw std::logic_error("a kernel service was called with no kernel environment");
  return *current_environment;
}

Environment::Impl* CurrentEnvironmentIfAny() { return current_environment; }

const char* Name(BlockKind kind) {
  switch (kind) {
    case BlockKind::kPool: return "pool";
    case BlockKind::kMdl: return "MDL";
    case BlockKind::kWorkItem: return "IO_WORKITEM";
    case BlockKind::kDevice: return "device";
  }
  return "block";
}

std::string Describe(const Site& site) {
  if (site.file == nullptr) return "an unknown site (a call through a pointer)";
  return fmt::format("{}:{} in {}", site.file, site.line, site.function != nullptr ? site.function : "?");
}

std::string TagName(ULONG tag) {
  std::string name;
  for (int i = 0; i < 4; ++i) {
    const auto c = static_cast<char>((tag >> (8 * i)) & 0xFF);
    name += (c >= 0x20 && c < 0x7F) ? c : '.';
  }
  return name;
}

// ---- construction ------------------------------------------------------------------------------

Environment::Impl::Impl(Fabric& f, const EnvironmentConfig& c)
    : fabric(f),
      config(c),
      scheduler(c.seed, c.stack_bytes, Scheduler::Options{c.schedule, c.pct_depth, c.pct_steps}),
      dispatcher(
          scheduler, [this] { return fabric.Now(); },
          [this](Scheduler::ThreadId id) -> void* { return id == Scheduler::kNone ? &home : &ContextOf(id); }) {
  if (fabric.Running()) throw std::logic_error("the kernel environment needs a fabric in stepped mode");
  scheduler.SetIdleHook([this] { return AdvanceTime(); });
  previous = current_environment;
  current_environment = this;
}

Environment::Impl::~Impl() {
  // Adapters left open close now, while the services their callbacks call still work.
  home.irql = PASSIVE_LEVEL;
  failed = true;  // what runs from here on is teardown: nothing fails the run any more
  for (const OpenAdapter& a : std::exchange(adapters, {})) a.node->CloseAdapter(a.adapter);
  dpcs.clear();
  timers.clear();
  for (auto& [start, block] : pool) Release(start, block);
  pool.clear();
  // Driver images last: nothing runs their code any more. Kernel threads' stacks and the records
  // that point into them are gone with the scheduler and the lists above.
  drivers.clear();
  CloseImages();
  current_environment = previous;
}

void Environment::Impl::Preempt(const char* where) {
  if (!scheduler.InThread()) return;
  const Context& c = Current();
  // On one processor nothing preempts a thread at DISPATCH_LEVEL or holding a spin lock.
  if (c.irql >= DISPATCH_LEVEL || !c.held.empty()) return;
  scheduler.PreemptionPoint(where);
}

void Environment::Impl::PolledEmpty(const char* service) {
  if (!scheduler.InThread()) return;
  Context& c = Current();
  if (c.irql >= DISPATCH_LEVEL || !c.held.empty()) return;
  if (c.empty_polls == 0 || c.empty_poll_time != fabric.Now()) {
    c.empty_polls = 0;
    c.empty_poll_time = fabric.Now();
  }
  if (++c.empty_polls < kBusyPoll) return;
  c.empty_polls = 0;
  pollers.push_back(scheduler.Current());
  scheduler.Block([](const void* what) { return fmt::format("a CQ to poll ({} keeps finding nothing, and nothing in "
                                                            "the simulation is left to happen)",
                                                            static_cast<const char*>(what)); },
                  service);
}

void Environment::Impl::PolledSomething() {
  if (scheduler.InThread()) Current().empty_polls = 0;
}

const std::string& Environment::Impl::CurrentName() const {
  static const std::string dpc = "dpc";
  return scheduler.InThread() ? scheduler.NameOf(scheduler.Current()) : dpc;
}

Scheduler::ThreadId Environment::Impl::StartKernelThread(std::string name, Node* machine, Driver* driver,
                                                         std::function<void()> body, ThreadObject* object) {
  const Scheduler::ThreadId id = scheduler.Create(std::move(name), [this, body = std::move(body)] {
    try {
      body();
    } catch (const PsTerminated&) {
      // PsTerminateSystemThread: the thread ends here.
    }
    Context& c = Current();
    if (c.irql != PASSIVE_LEVEL || !c.held.empty()) {
      Fail("IRQL", fmt::format("kernel thread '{}' ended at IRQL {} holding {} spin lock(s)", CurrentName(), c.irql,
                               c.held.size()),
           Site{});
    }
    CheckRegionsLeft(fmt::format("kernel thread '{}'", CurrentName()));
    if (c.object != nullptr) {
      dispatcher.SetEvent(ObjectOf(c.object));
      c.object->id = Scheduler::kNone;
    }
  });
  Context& c = ContextOf(id);
  c.machine = machine;
  c.driver = driver;
  c.object = object;
  if (object != nullptr) object->id = id;
  return id;
}

// ---- the verifier --------------------------------------------------------------------------------

Site Environment::Impl::TakeSite() { return std::exchange(site, Site{}); }

VerifierError Environment::Impl::MakeError(const std::string& check, const std::string& what, const Site& at) {
  // Checks the environment makes by itself (at a thread's end, at unload) have no call site.
  const std::string where = at.file != nullptr ? ", at " + Describe(at) : std::string();
  return VerifierError(check, fmt::format("driver verifier ({}): {}{}, on {} at IRQL {} (seed {})", check, what, where,
                                          scheduler.InThread() ? "kernel thread '" + CurrentName() + "'" : "the DPC context",
                                          Current().irql, config.seed));
}

void Environment::Impl::Fail(const std::string& check, const std::string& what, const Site& at) {
  if (failed) return;
  if (scheduler.InThread() || consumer_code_depth > 0) FailFatal(check, what, at);
  if (!pending_failure) pending_failure = MakeError(check, what, at);
}

void Environment::Impl::FailFatal(const std::string& check, const std::string& what, const Site& at) {
  VerifierError error = MakeError(check, what, at);
  failed = true;
  throw error;
}

void Environment::Impl::ThrowPendingFailure() {
  if (!pending_failure) return;
  failed = true;
  VerifierError error = std::move(*pending_failure);
  pending_failure.reset();
  throw error;
}

void Environment::Impl::RequireIrqlAtMost(KIRQL max, const char* service, const Site& at) {
  const KIRQL irql = Current().irql;
  if (irql > max) Fail("IRQL", fmt::format("{} called at IRQL {}; it requires IRQL <= {}", service, irql, max), at);
}

void Environment::Impl::RequireIrqlExactly(KIRQL irql, const char* service, const Site& at) {
  const KIRQL now = Current().irql;
  if (now != irql) Fail("IRQL", fmt::format("{} called at IRQL {}; it requires IRQL {}", service, now, irql), at);
}

void Environment::Impl::CheckRegionsLeft(const std::string& what) {
  Context& c = Current();
  if (c.critical_regions == 0 && c.guarded_regions == 0) return;
  const std::string inside = fmt::format("{} critical and {} guarded region(s)", c.critical_regions, c.guarded_regions);
  // A worker thread goes on to other items: it leaves the regions behind whatever the report.
  c.critical_regions = 0;
  c.guarded_regions = 0;
  Fail("CRITICAL_REGION", fmt::format("{} ended inside {} (KERNEL_APC_PENDING_DURING_EXIT)", what, inside), Site{});
}

void Environment::Impl::CheckLiveObject(const void* object, const char* service, const Site& at) {
  std::uintptr_t start = 0;
  const PoolBlock* b = FindBlock(object, &start);
  if (b != nullptr && b->freed) {
    Fail("USE_AFTER_FREE", fmt::format("{} on an object in pool (tag '{}') freed at {}", service, TagName(b->tag),
                                       Describe(b->freed_at)),
         at);
  }
}

NTSTATUS Environment::Impl::Wait(std::span<DispatcherObject* const> objects, WaitType type, PLARGE_INTEGER timeout,
                                 const Site& at, const char* service) {
  const KIRQL irql = Current().irql;
  const bool zero = timeout != nullptr && timeout->QuadPart == 0;
  if (irql > DISPATCH_LEVEL || (irql == DISPATCH_LEVEL && !zero)) {
    Fail("IRQL", fmt::format("{} at IRQL {} {}", service, irql, zero ? "" : "with a timeout that is not zero"), at);
    return STATUS_TIMEOUT;
  }
  for (DispatcherObject* o : objects) CheckLiveObject(o, service, at);
  std::optional<TimePoint> deadline;
  if (timeout != nullptr) deadline = zero ? fabric.Now() : DeadlineOf(*timeout);
  if (!scheduler.InThread() && !(deadline && *deadline <= fabric.Now())) {
    Fail("IRQL", fmt::format("{} that would block, outside a kernel thread", service), at);
    return STATUS_TIMEOUT;
  }
  const WaitOutcome outcome = dispatcher.Wait(objects, type, deadline);
  if (outcome.timed_out) return STATUS_TIMEOUT;
  return type == WaitType::kAny ? static_cast<NTSTATUS>(STATUS_WAIT_0 + outcome.index) : STATUS_SUCCESS;
}

void Environment::Impl::CheckDriverLeftNothing(Driver& d) {
  CheckQuarantine(&d, Site{});  // what the driver wrote into pool it had freed
  std::vector<std::string> left;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> by_tag;
  std::vector<std::string> pool_sites;
  for (const auto& [start, b] : pool) {
    if (b.freed || b.driver != &d) continue;
    if (b.kind == BlockKind::kPool) {
      auto& [count, bytes] = by_tag[TagName(b.tag)];
      ++count;
      bytes += b.size;
      if (pool_sites.size() < 8) pool_sites.push_back(Describe(b.site));
    } else {
      left.push_back(fmt::format("an {} allocated at {}", Name(b.kind), Describe(b.site)));
    }
  }
  for (const auto& [tag, usage] : by_tag) {
    left.push_back(fmt::format("pool tag '{}': {} allocation(s), {} bytes", tag, usage.first, usage.second));
  }
  if (!pool_sites.empty()) left.push_back(fmt::format("(pool allocated at {})", fmt::join(pool_sites, "; ")));
  for (const Work& w : work) {
    if (w.driver == &d) left.push_back("a queued work item");
  }
  CheckLinksLeft(d, &left);
  for (Scheduler::ThreadId id = 0; id < contexts.size(); ++id) {
    const Context& c = contexts[id];
    if (c.driver == &d && c.object != nullptr && c.object->id != Scheduler::kNone) {
      left.push_back(fmt::format("system thread '{}' still running", scheduler.NameOf(id)));
    }
  }
  for (const ActiveTimer& t : timers) {
    if (t.driver == &d) left.push_back("a timer still set");
  }
  for (PKDPC p : dpcs) {
    if (reinterpret_cast<Driver*>(p->ProcessorHistory) == &d) left.push_back("a DPC still queued");
  }
  for (PDEVICE_OBJECT dev = d.object.DeviceObject; dev != nullptr; dev = dev->NextDevice) {
    left.push_back("a device not deleted (IoDeleteDevice)");
  }
  for (const auto& [reg, r] : wsk) {
    if (r->driver == &d && !r->deregistered) left.push_back("a WSK registration not deregistered (WskDeregister)");
  }
  for (const OpenAdapter& a : adapters) {
    if (a.driver == &d) left.push_back("an NDK adapter not closed (WskCloseNdkAdapter)");
  }
  if (left.empty()) return;
  Fail("LEAK", fmt::format("driver '{}' unloaded leaving {}", d.name, fmt::join(left, ", ")), Site{});
}

// ---- IRQL and DPCs ---------------------------------------------------------------------------------

void Environment::Impl::SetIrql(KIRQL irql) {
  Context& c = Current();
  const KIRQL before = c.irql;
  c.irql = irql;
  // Lowering below DISPATCH_LEVEL delivers the DPCs queued meanwhile, as the processor would.
  if (before >= DISPATCH_LEVEL && irql < DISPATCH_LEVEL && !dpcs.empty()) {
    RunDpcs();
  }
}

void Environment::Impl::RunDpcs() {
  Context& c = Current();
  const KIRQL saved = c.irql;
  Driver* const saved_driver = c.driver;
  Node* const saved_machine = c.machine;
  c.irql = DISPATCH_LEVEL;
  while (!dpcs.empty()) {
    // Which of several queued DPCs runs first is open on a multiprocessor: a seeded choice.
    const std::size_t pick = dpcs.size() == 1 ? 0 : scheduler.Choose(static_cast<std::uint32_t>(dpcs.size()));
    PKDPC dpc = dpcs[pick];
    dpcs.erase(dpcs.begin() + static_cast<std::ptrdiff_t>(pick));
    dpc->DpcData = nullptr;
    // A DPC runs for the driver that initialized it, on that driver's machine.
    c.driver = reinterpret_cast<Driver*>(dpc->ProcessorHistory);
    c.machine = c.driver != nullptr && c.driver->node != nullptr ? c.driver->node : saved_machine;
    {
      const InConsumerCode running(*this);
      dpc->DeferredRoutine(dpc, dpc->DeferredContext, dpc->SystemArgument1, dpc->SystemArgument2);
    }
    if (c.irql != DISPATCH_LEVEL || !c.held.empty()) {
      Fail("IRQL", fmt::format("a DPC returned at IRQL {} holding {} spin lock(s)", c.irql, c.held.size()), Site{});
      c.irql = DISPATCH_LEVEL;
    }
  }
  c.irql = saved;
  c.driver = saved_driver;
  c.machine = saved_machine;
}

// ---- time ------------------------------------------------------------------------------------------

ULONGLONG Environment::Impl::InterruptTime() const {
  return static_cast<ULONGLONG>(fabric.Now().time_since_epoch().count() / 100'000);
}

TimePoint Environment::Impl::DeadlineOf(const LARGE_INTEGER& timeout) const {
  const TimePoint now = fabric.Now();
  if (timeout.QuadPart < 0) {
    // Relative, in 100-ns units.
    const auto units = static_cast<std::uint64_t>(-(timeout.QuadPart + 1)) + 1;
    return now + Duration(static_cast<std::int64_t>(std::min<std::uint64_t>(units, INT64_MAX / 100'000) * 100'000));
  }
  const auto absolute = static_cast<ULONGLONG>(timeout.QuadPart);
  if (absolute <= kSystemTimeEpoch) return TimePoint{};
  const ULONGLONG since = std::min<ULONGLONG>(absolute - kSystemTimeEpoch, INT64_MAX / 100'000);
  return TimePoint{} + Duration(static_cast<std::int64_t>(since * 100'000));
}

// ---- timers ----------------------------------------------------------------------------------------

bool Environment::Impl::SetTimer(PKTIMER timer, LARGE_INTEGER due, LONG period_ms, PKDPC dpc, const Site& at) {
  if (period_ms < 0) Fail("TIMER", fmt::format("KeSetTimerEx with a negative period ({} ms)", period_ms), at);
  const bool was_set = CancelTimer(timer);
  timer->Header.SignalState = 0;
  const TimePoint when = std::max(DeadlineOf(due), fabric.Now());
  timer->DueTime.QuadPart = static_cast<ULONGLONG>(when.time_since_epoch().count());
  timer->Period = period_ms;
  timer->Dpc = dpc;
  if (dpc != nullptr && dpc->ProcessorHistory == 0) dpc->ProcessorHistory = reinterpret_cast<KAFFINITY>(Current().driver);
  timers.push_back(ActiveTimer{timer, Current().driver});
  return was_set;
}

bool Environment::Impl::CancelTimer(PKTIMER timer) {
  const auto it = std::find_if(timers.begin(), timers.end(), [timer](const ActiveTimer& t) { return t.timer == timer; });
  if (it == timers.end()) return false;
  timers.erase(it);
  return true;
}

std::optional<TimePoint> Environment::Impl::NextTimerDue() const {
  std::optional<TimePoint> next;
  for (const ActiveTimer& a : timers) {
    const PKTIMER t = a.timer;
    const TimePoint due = TimePoint{} + Duration(static_cast<std::int64_t>(t->DueTime.QuadPart));
    if (!next || due < *next) next = due;
  }
  return next;
}

bool Environment::Impl::ExpireTimers(TimePoint now) {
  bool any = false;
  // In due order (ties: in the order they were set), so the same seed gives the same run.
  for (;;) {
    auto earliest = timers.end();
    for (auto it = timers.begin(); it != timers.end(); ++it) {
      const ULONGLONG due = it->timer->DueTime.QuadPart;
      if (due <= static_cast<ULONGLONG>(now.time_since_epoch().count()) &&
          (earliest == timers.end() || due < earliest->timer->DueTime.QuadPart)) {
        earliest = it;
      }
    }
    if (earliest == timers.end()) return any;
    any = true;
    const ActiveTimer fired = *earliest;
    const PKTIMER first = fired.timer;
    timers.erase(earliest);
    if (first->Period > 0) {
      first->DueTime.QuadPart += static_cast<ULONGLONG>(first->Period) * 1'000'000'000ULL;
      timers.push_back(fired);
    }
    dispatcher.SetEvent(ObjectOf(first));
    if (first->Dpc != nullptr && first->Dpc->DpcData == nullptr) {
      const ULONGLONG system_time = kSystemTimeEpoch + InterruptTime();
      first->Dpc->SystemArgument1 = reinterpret_cast<PVOID>(static_cast<ULONG_PTR>(system_time & 0xFFFFFFFFu));
      first->Dpc->SystemArgument2 = reinterpret_cast<PVOID>(static_cast<ULONG_PTR>(system_time >> 32));
      first->Dpc->DpcData = first->Dpc;
      dpcs.push_back(first->Dpc);
    }
  }
}

// ---- work items --------------------------------------------------------------------------------

void Environment::Impl::QueueWork(Work w) {
  work.push_back(w);
  if (!idle_workers.empty()) {
    const std::size_t pick =
        idle_workers.size() == 1 ? 0 : scheduler.Choose(static_cast<std::uint32_t>(idle_workers.size()));
    const Scheduler::ThreadId worker = idle_workers[pick];
    idle_workers.erase(idle_workers.begin() + static_cast<std::ptrdiff_t>(pick));
    scheduler.SetDaemon(worker, false);
    scheduler.Wake(worker);
    return;
  }
  if (workers >= config.max_worker_threads) return;  // a busy worker takes it when it is free
  ++workers;
  StartKernelThread(fmt::format("worker {}", workers), nullptr, nullptr, [this] { WorkerMain(scheduler.Current()); });
}

void Environment::Impl::WorkerMain(Scheduler::ThreadId self_id) {
  Context& c = ContextOf(self_id);
  for (;;) {
    while (work.empty()) {
      idle_workers.push_back(self_id);
      scheduler.SetDaemon(self_id, true);
      scheduler.Block("a work item (system worker thread)");
    }
    scheduler.SetDaemon(self_id, false);
    const Work w = work.front();
    work.pop_front();
    c.driver = w.driver;
    c.machine = w.machine;
    if (w.io != nullptr) {
      // The item may be queued again (or freed) from its own routine.
      w.io->queued = false;
      PDEVICE_OBJECT device = w.io->device;
      if (w.routine != nullptr) {
        w.routine(device, w.context);
      } else {
        w.routine_ex(device, w.context, reinterpret_cast<PIO_WORKITEM>(w.io));
      }
    } else {
      w.ex->WorkerRoutine(w.ex->Parameter);
    }
    if (c.irql != PASSIVE_LEVEL || !c.held.empty()) {
      Fail("IRQL", fmt::format("a work item returned at IRQL {} holding {} spin lock(s)", c.irql, c.held.size()), Site{});
    }
    CheckRegionsLeft("a work item");
    c.driver = nullptr;
    c.machine = nullptr;
  }
}

// ---- pool ---------------------------------------------------------------------------------------

PoolBlock* Environment::Impl::FindBlock(const void* p, std::uintptr_t* start) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto it = pool.upper_bound(address);
  if (it == pool.begin()) return nullptr;
  --it;
  if (address >= it->first + std::max<std::size_t>(it->second.size, 1)) return nullptr;
  *start = it->first;
  return &it->second;
}

void* Environment::Impl::Allocate(std::size_t bytes, ULONG tag, bool zero, bool paged, const Site& at, BlockKind kind) {
  RequireIrqlAtMost(paged ? APC_LEVEL : DISPATCH_LEVEL, paged ? "allocating paged pool" : "allocating nonpaged pool", at);
  if (tag == 0 && kind == BlockKind::kPool) Fail("POOL", "pool allocated with tag 0 (BAD_POOL_CALLER)", at);
  if (bytes > (std::size_t{1} << 40)) return nullptr;
  // As on Windows, an allocation of a page or more starts on a page. A guard zone of one alignment
  // unit lies on each side (PoolBlock).
  const std::size_t alignment = bytes >= PAGE_SIZE ? PAGE_SIZE : kPoolAlignment;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  auto* base = static_cast<unsigned char*>(std::aligned_alloc(alignment, rounded + 2 * alignment));
  if (base == nullptr) return nullptr;
  unsigned char* p = base + alignment;
  std::memset(base, kGuardPattern, rounded + 2 * alignment);
  std::memset(p, zero ? 0 : kUninitializedPattern, bytes);
  PoolBlock b;
  b.size = bytes;
  b.guard = alignment;
  b.after = rounded - bytes + alignment;
  b.tag = tag;
  b.driver = Current().driver;
  b.site = at;
  b.kind = kind;
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  // The address may be a quarantined block's that was released to the system meanwhile.
  pool[address] = b;
  if (kind == BlockKind::kPool) {
    PoolTagUsage& u = tags[tag];
    ++u.allocations;
    u.bytes += bytes;
    ++u.total_allocations;
  }
  return p;
}

void Environment::Impl::Free(void* p, std::optional<ULONG> tag, const Site& at, const char* service) {
  RequireIrqlAtMost(DISPATCH_LEVEL, service, at);
  if (p == nullptr) {
    Fail("POOL", fmt::format("{}(NULL) (BAD_POOL_CALLER)", service), at);
    return;
  }
  std::uintptr_t start = 0;
  PoolBlock* b = FindBlock(p, &start);
  if (b == nullptr || start != reinterpret_cast<std::uintptr_t>(p)) {
    Fail("POOL", fmt::format("{} of {}, which pool did not return (BAD_POOL_CALLER)", service, p), at);
    return;
  }
  if (b->freed) {
    Fail("POOL", fmt::format("{} of {} a second time: first freed at {} (BAD_POOL_CALLER)", service, p,
                             Describe(b->freed_at)),
         at);
    return;
  }
  if (tag && *tag != b->tag) {
    Fail("POOL", fmt::format("{} with tag '{}' of an allocation tagged '{}' (BAD_POOL_CALLER)", service,
                             TagName(*tag), TagName(b->tag)),
         at);
    return;
  }
  if (const auto waiter = dispatcher.WaiterIn(p, static_cast<const char*>(p) + b->size)) {
    Fail("USE_AFTER_FREE",
         fmt::format("{} of a {}-byte block allocated at {} while kernel thread '{}' waits on an object in it "
                     "(its wait would go on in freed memory)",
                     service, b->size, Describe(b->site), scheduler.NameOf(*waiter)),
         at);
    return;
  }
  if (const std::string corruption = Corruption(start, *b); !corruption.empty()) {
    Fail("POOL", fmt::format("{} of a {}-byte block allocated at {}: {} (SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION)",
                             service, b->size, Describe(b->site), corruption),
         at);
    return;
  }
  const std::uintptr_t end = start + b->size;
  const auto inside = [&](const void* q) {
    const auto a = reinterpret_cast<std::uintptr_t>(q);
    return a >= start && a < end;
  };
  for (const ActiveTimer& t : timers) {
    if (inside(t.timer)) Fail("POOL", "pool freed with a timer in it still set (TIMER_OR_DPC_INVALID)", at);
  }
  for (PKDPC d : dpcs) {
    if (inside(d)) Fail("POOL", "pool freed with a DPC in it still queued (TIMER_OR_DPC_INVALID)", at);
  }
  if (b->kind == BlockKind::kPool) {
    PoolTagUsage& u = tags[b->tag];
    --u.allocations;
    u.bytes -= b->size;
  }
  b->freed = true;
  b->freed_at = at;
  ForgetLocks(start, start + b->size);
  std::memset(p, kFreedPattern, b->size);
  quarantine.push_back(start);
  quarantined_bytes += b->size;
  while (quarantine.size() > kQuarantineBlocks || quarantined_bytes > kQuarantineBytes) {
    const std::uintptr_t oldest = quarantine.front();
    quarantine.pop_front();
    const auto it = pool.find(oldest);
    const PoolBlock leaving = it->second;
    quarantined_bytes -= leaving.size;
    pool.erase(it);
    const std::string corruption = Corruption(oldest, leaving);
    Release(oldest, leaving);
    if (!corruption.empty()) {
      Fail("POOL", fmt::format("a {}-byte block allocated at {} and freed at {}: {}", leaving.size,
                               Describe(leaving.site), Describe(leaving.freed_at), corruption),
           at);
    }
  }
}

void Environment::Impl::CheckLockOrder(const void* lock, const char* kind, const Site& at) {
  const Context& c = Current();
  lock_kinds[lock] = kind;
  const auto kind_of = [this](const void* l) {
    const auto it = lock_kinds.find(l);
    return it != lock_kinds.end() ? it->second : "lock";
  };
  // Reports (true) an inversion of `lock` with `h`, held by the context.
  const auto inverts = [&](const void* h) {
    if (h == lock) return false;
    // Does `lock` reach `h` along the known order? Then `h` was taken before while a chain of
    // locks back to `lock` was held: the edge into `h` says where.
    std::vector<const void*> stack{lock};
    std::vector<const void*> seen;
    const void* before = nullptr;  // the lock held when `h` was taken
    const Site* where = nullptr;
    while (!stack.empty() && where == nullptr) {
      const void* from = stack.back();
      stack.pop_back();
      if (std::find(seen.begin(), seen.end(), from) != seen.end()) continue;
      seen.push_back(from);
      const auto it = lock_order.find(from);
      if (it == lock_order.end()) continue;
      for (const auto& [to, site] : it->second) {
        if (to == h) {
          before = from;
          where = &site;
          break;
        }
        stack.push_back(to);
      }
    }
    if (where != nullptr) {
      Fail("LOCK_ORDER",
           fmt::format("{} {} acquired while holding {} {}, the reverse of an order taken before: {} was acquired "
                       "while holding {} {}{}, at {}. Two contexts taking them in the two orders deadlock",
                       kind, fmt::ptr(lock), kind_of(h), fmt::ptr(h), fmt::ptr(h), kind_of(before), fmt::ptr(before),
                       before == lock ? "" : fmt::format(" (which was taken after {})", fmt::ptr(lock)), Describe(*where)),
           at);
      return true;
    }
    return false;
  };
  // Every lock the context holds, of any kind.
  for (const void* h : c.held) {
    if (inverts(h)) return;
  }
  for (const void* h : c.waitable_held) {
    if (inverts(h)) return;
  }
  for (const void* h : c.held) {
    if (h != lock) lock_order[h].try_emplace(lock, at);
  }
  for (const void* h : c.waitable_held) {
    if (h != lock) lock_order[h].try_emplace(lock, at);
  }
}

void Environment::Impl::WaitableReleased(Context& holder, const void* lock) {
  auto& held = holder.waitable_held;
  const auto it = std::find(held.rbegin(), held.rend(), lock);
  if (it != held.rend()) held.erase(std::next(it).base());
}

void Environment::Impl::ForgetLocks(std::uintptr_t begin, std::uintptr_t end) {
  if (lock_order.empty() && lock_kinds.empty()) return;
  const auto key = [](std::uintptr_t a) { return reinterpret_cast<const void*>(a); };
  lock_order.erase(lock_order.lower_bound(key(begin)), lock_order.lower_bound(key(end)));
  lock_kinds.erase(lock_kinds.lower_bound(key(begin)), lock_kinds.lower_bound(key(end)));
  for (auto& [from, edges] : lock_order) edges.erase(edges.lower_bound(key(begin)), edges.lower_bound(key(end)));
}

void Environment::Impl::CheckNotWaitedOn(const void* object, std::size_t bytes, const char* service, const Site& at) {
  if (const auto waiter = dispatcher.WaiterIn(object, static_cast<const char*>(object) + bytes)) {
    Fail("REINITIALIZED",
         fmt::format("{} of {}, which kernel thread '{}' waits on (its wait would go on in an object made anew "
                     "under it)",
                     service, object, scheduler.NameOf(*waiter)),
         at);
  }
}

std::string Environment::Impl::Corruption(std::uintptr_t start, const PoolBlock& b) const {
  const auto* p = reinterpret_cast<const unsigned char*>(start);
  if (const std::size_t i = FirstNot(p - b.guard, b.guard, kGuardPattern); i != b.guard) {
    return fmt::format("written {} byte(s) before its start (an underrun)", b.guard - i);
  }
  if (const std::size_t i = FirstNot(p + b.size, b.after, kGuardPattern); i != b.after) {
    return fmt::format("written {} byte(s) past its end (an overrun)", i + 1);
  }
  if (b.freed) {
    if (const std::size_t i = FirstNot(p, b.size, kFreedPattern); i != b.size) {
      return fmt::format("byte {} written after the free (a use after free)", i);
    }
  }
  return {};
}

void Environment::Impl::CheckQuarantine(const Driver* driver, const Site& at) {
  for (const std::uintptr_t start : quarantine) {
    const PoolBlock& b = pool.at(start);
    if (driver != nullptr && b.driver != driver) continue;
    if (const std::string corruption = Corruption(start, b); !corruption.empty()) {
      Fail("POOL", fmt::format("a {}-byte block allocated at {} and freed at {}: {}", b.size, Describe(b.site),
                               Describe(b.freed_at), corruption),
           at);
      return;
    }
  }
}

void Environment::Impl::Release(std::uintptr_t start, const PoolBlock& b) {
  std::free(reinterpret_cast<void*>(start - b.guard));
}

// ---- the idle hook: simulated time -------------------------------------------------------------

bool Environment::Impl::AdvanceTime() {
  home.irql = DISPATCH_LEVEL;
  struct Restore {
    Context& c;
    ~Restore() { c.irql = PASSIVE_LEVEL; }
  } restore{home};
  const auto progress = [this] {
    ThrowPendingFailure();
    return scheduler.HasRunnable();
  };
  // The waits and timers due by now end, and the DPCs that queues run.
  const auto expire_due = [&] {
    const bool woke = ExpireDue();
    return progress() || woke;  // progress() first: it throws a failure the DPCs recorded
  };
  RunDpcs();
  if (progress()) return true;
  std::optional<TimePoint> deadline = dispatcher.NextDeadline();
  if (const std::optional<TimePoint> t = NextTimerDue(); t && (!deadline || *t < *deadline)) deadline = t;
  if (deadline && *deadline <= fabric.Now()) return expire_due();
  // Run the simulation until a callback wakes a kernel thread or queues a DPC, up to the earliest
  // deadline (with none, in steps of a simulated second, for as long as the simulation has work).
  const Duration limit = deadline ? *deadline - fabric.Now() : Milliseconds(1000);
  if (!pollers.empty()) return AdvanceForPollers(deadline, limit) || progress();
  const RunResult r = fabric.RunUntil([this] { return scheduler.HasRunnable() || !dpcs.empty() || pending_failure; }, limit);
  RunDpcs();
  if (progress() || r.stop == RunStop::kDone) return true;
  if (!deadline) return r.stop == RunStop::kTimeLimit;  // idle with nothing to wait for: a deadlock
  if (fabric.Now() < *deadline) fabric.RunFor(*deadline - fabric.Now());
  return expire_due();
}

// A busy poller waits for one event, whatever it is, and polls again after it: the events due
// now, or else the next one (up to the deadline).
bool Environment::Impl::AdvanceForPollers(std::optional<TimePoint> deadline, Duration limit) {
  const TimePoint before = fabric.Now();
  const std::uint64_t due_now = fabric.RunFor(Duration{0});
  if (due_now == 0) {
    // Nothing is due now, so an event that runs moves the clock: the first question is asked
    // before any event, every later one after one (or when the run ends).
    bool asked = false;
    (void)fabric.RunUntil([&asked] { return std::exchange(asked, true); }, limit);
  }
  RunDpcs();
  ThrowPendingFailure();
  if (due_now == 0 && fabric.Now() == before) {
    if (!deadline) return false;  // nothing is left to happen: the pollers stay blocked
    fabric.RunFor(*deadline - fabric.Now());
  }
  for (const Scheduler::ThreadId id : std::exchange(pollers, {})) scheduler.Wake(id);
  if (deadline && *deadline <= fabric.Now()) (void)ExpireDue();
  return true;
}

bool Environment::Impl::ExpireDue() {
  bool woke = dispatcher.ExpireDue(fabric.Now());
  woke = ExpireTimers(fabric.Now()) || woke;
  RunDpcs();
  return woke;
}

// ---- Environment ----------------------------------------------------------------------------------

Environment::Environment(Fabric& fabric, EnvironmentConfig config)
    : impl_(std::make_unique<Impl>(fabric, config)) {}

Environment::~Environment() = default;

_DRIVER_OBJECT* Environment::LoadDriver(Node& node, std::string name, DriverEntry entry) {
  if (entry == nullptr) throw std::logic_error("LoadDriver: no DriverEntry");
  auto d = std::make_unique<Driver>();
  Driver* driver = d.get();
  driver->name = name;
  driver->node = &node;
  driver->object.Type = IO_TYPE_DRIVER;
  driver->object.Size = sizeof(DRIVER_OBJECT);
  driver->object.DriverInit = reinterpret_cast<PDRIVER_INITIALIZE>(entry);
  const std::string path = "\\Registry\\Machine\\System\\CurrentControlSet\\Services\\" + name;
  driver->registry_text.assign(path.begin(), path.end());
  driver->registry_path.Buffer = reinterpret_cast<PWCH>(driver->registry_text.data());
  driver->registry_path.Length = static_cast<USHORT>(driver->registry_text.size() * 2);
  driver->registry_path.MaximumLength = driver->registry_path.Length;
  impl_->drivers.push_back(std::move(d));
  Impl& s = *impl_;
  s.StartKernelThread(name + "!DriverEntry", &node, driver, [&s, driver, entry] {
    driver->status = entry(&driver->object, reinterpret_cast<_UNICODE_STRING*>(&driver->registry_path));
    // A driver whose entry failed is not loaded: it must have released everything already.
    if (!NT_SUCCESS(driver->status)) s.CheckDriverLeftNothing(*driver);
  });
  return &driver->object;
}

std::int32_t Environment::DriverStatus(const _DRIVER_OBJECT* driver) const {
  if (const Driver* d = impl_->DriverOf(driver); d != nullptr) return d->status;
  throw std::logic_error("DriverStatus: not a driver of this environment");
}

void Environment::UnloadDriver(_DRIVER_OBJECT* object) {
  Driver* driver = impl_->DriverOf(object);
  if (driver == nullptr) throw std::logic_error("UnloadDriver: not a driver of this environment");
  if (!NT_SUCCESS(driver->status) || driver->status == STATUS_PENDING) {
    throw std::logic_error(fmt::format("UnloadDriver: driver '{}' is not loaded", driver->name));
  }
  if (driver->object.DriverUnload == nullptr || driver->unload_queued) {
    throw std::logic_error(fmt::format("UnloadDriver: driver '{}' has no DriverUnload or is unloading", driver->name));
  }
  driver->unload_queued = true;
  Impl& s = *impl_;
  s.StartKernelThread(driver->name + "!DriverUnload", driver->node, driver, [&s, driver] {
    driver->object.DriverUnload(&driver->object);
    s.CheckDriverLeftNothing(*driver);
  });
}

void Environment::StartThread(std::string name, std::function<void()> body, Node* node) {
  impl_->StartKernelThread(std::move(name), node, nullptr, std::move(body));
}

void Environment::Run() { RunUntil([] { return false; }); }

void Environment::RunUntil(const std::function<bool()>& done) {
  if (impl_->failed) throw std::logic_error("the kernel environment already failed a check");
  try {
    const FaultReport faults;
    impl_->scheduler.RunUntil(done);
    impl_->CheckQuarantine(nullptr, Site{});  // a write after free that no later check saw
    impl_->ThrowPendingFailure();
  } catch (const DeadlockError& e) {
    throw DeadlockError(std::string(e.what()) + InterleavingTail());
  } catch (const VerifierError& e) {
    throw VerifierError(e.Check(), std::string(e.what()) + InterleavingTail());
  }
}

// What a failure report ends with: the last picks that led there.
std::string Environment::InterleavingTail() const {
  constexpr std::size_t kShown = 64;
  const std::string all = Interleaving();
  const std::size_t picks = impl_->scheduler.Picks().size();
  if (picks <= kShown) return "\n  interleaving: " + all;
  // Each pick's text ends at a ", " that follows a name, or a ")" of a preemption note.
  std::size_t start = all.size();
  for (std::size_t n = 0; n < kShown && start != std::string::npos; ++n) {
    start = start == 0 ? std::string::npos : all.rfind(", ", start - 1);
  }
  const std::string tail = start == std::string::npos ? all : all.substr(start + 2);
  return fmt::format("\n  interleaving, the last {} of {} picks (Environment::Interleaving() has them all): {}", kShown,
                     picks, tail);
}

void Environment::RunFor(Duration d) {
  // A kernel thread of the environment's own sleeps for `d`; the run ends when it wakes. While it
  // sleeps there is always something that will happen (its timer), so no wait is a deadlock.
  bool woke = false;
  const LONGLONG ticks = std::max<LONGLONG>(1, static_cast<LONGLONG>(d.count() / 100'000));  // 100-ns units
  StartThread("environment!RunFor", [&woke, ticks] {
    LARGE_INTEGER interval;
    interval.QuadPart = -ticks;
    (void)KeDelayExecutionThread(KernelMode, FALSE, &interval);
    woke = true;
  });
  RunUntil([&woke] { return woke; });
}

void Environment::Run(std::string name, std::function<void()> entry) {
  StartThread(std::move(name), std::move(entry));
  Run();
}

std::uint32_t Environment::IfIndexOf(const Node& node) const { return Impl::IfIndexOf(node); }

void Environment::AddRnic(Node& machine, Node& rnic) {
  const Node* target = impl_->MachineOf(&machine);
  if (impl_->MachineOf(&rnic) == target) return;
  for (const auto& [member, of] : impl_->machine_of) {
    if (of == &rnic) throw std::logic_error("Environment::AddRnic: the node is the first of a machine with several RNICs");
  }
  if (impl_->machine_of.contains(&rnic)) {
    throw std::logic_error("Environment::AddRnic: the node is already in another machine");
  }
  impl_->machine_of[&rnic] = target;
}

std::map<std::string, PoolTagUsage> Environment::PoolUsage() const {
  std::map<std::string, PoolTagUsage> usage;
  for (const auto& [tag, u] : impl_->tags) usage[TagName(tag)] = u;
  return usage;
}

const std::vector<std::string>& Environment::DebugLog() const { return impl_->debug_log; }

std::string Environment::Interleaving() const {
  std::string text;
  const Scheduler& s = impl_->scheduler;
  const std::vector<Scheduler::ThreadId>& picks = s.Picks();
  auto preemption = s.Preemptions().begin();
  for (std::size_t i = 0; i < picks.size(); ++i) {
    if (!text.empty()) text += ", ";
    text += s.NameOf(picks[i]);
    if (preemption != s.Preemptions().end() && preemption->pick == i) {
      if (i > 0) text += fmt::format(" (preempting {} at {})", s.NameOf(picks[i - 1]), preemption->where);
      ++preemption;
    }
  }
  return text;
}

std::uint64_t Environment::PreemptionSteps() const { return impl_->scheduler.Steps(); }

std::uint64_t Environment::Seed() const { return impl_->config.seed; }
TimePoint Environment::Now() const { return impl_->fabric.Now(); }
Fabric& Environment::GetFabric() { return impl_->fabric; }
Scheduler& Environment::Threads() { return impl_->scheduler; }
Dispatcher& Environment::Objects() { return impl_->dispatcher; }

}  // namespace ndksim::kernel
