// SPDX-License-Identifier: MIT
// The kernel environment: hosts Windows kernel-mode NDK consumers, written in C against the stand-in
// WDK headers beside this one (wdm.h, ndis.h, wsk.h, wskndk.h, netioapi.h), on a fabric.
//
// Kernel threads (drivers' entry and unload routines, system threads, work items) run one at a time
// on the thread that calls Run, as fibers, in an order drawn from the seed; DPCs, timer DPCs and the
// provider's callbacks run at DISPATCH_LEVEL between them. Simulated time is the fabric's clock and
// moves only when every kernel thread is blocked: the fabric then runs until something wakes one
// (a completion's callback setting an event, a timer, a wait's deadline). The same seed and the same
// calls give the same interleaving, bit for bit; a failing seed prints it. docs/kernel.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ndksim/fabric.h"
#include "ndksim/time.h"

struct _DRIVER_OBJECT;
struct _UNICODE_STRING;

namespace ndksim::kernel {

class Scheduler;
class Dispatcher;

// Run found every kernel thread blocked with nothing left that could wake one. The message names
// each waiter and what it waits for, the seed, and the interleaving that led there.
class DeadlockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A check Driver Verifier makes failed (a wait at DISPATCH_LEVEL, a spin lock released twice, pool
// leaked at unload, ...), or the consumer asserted, bug-checked or corrupted a list. The message
// names the check, the site (file:line in function) and the kernel thread, and the seed.
class VerifierError : public std::runtime_error {
 public:
  VerifierError(std::string check, const std::string& message)
      : std::runtime_error(message), check_(std::move(check)) {}
  // The check's short name: "IRQL", "SPIN_LOCK", "POOL", "LEAK", "USE_AFTER_FREE", "ASSERT", ...
  const std::string& Check() const { return check_; }

 private:
  std::string check_;
};

// How the scheduler picks the next kernel thread (docs/kernel.md, "Exploring schedules").
enum class ScheduleStrategy : std::uint8_t {
  // A uniformly random pick among the runnable threads each time the running one blocks, yields
  // or ends, and at each enabled preemption point (the running thread included).
  kRandom,
  // PCT (probabilistic concurrency testing): each thread gets a random priority when it starts
  // and the highest runnable one runs; at pct_depth - 1 change points, drawn among the first
  // pct_steps preemption points, the running thread's priority drops below every other. A bug
  // that needs d ordering constraints is found by one seed with probability at least
  // 1 / (n * k^(d-1)) for n threads and k steps.
  kPct,
};

// Where a kernel thread running below DISPATCH_LEVEL may lose the processor, besides the waits
// that block it (on one processor, a thread at DISPATCH_LEVEL is never preempted).
struct PreemptionPoints {
  bool spin_locks = false;  // before KeAcquire*SpinLock from below DISPATCH_LEVEL, after the release
                            // that lowers the IRQL back
  bool events = false;      // KeSetEvent (after it), KeResetEvent, KeClearEvent, and before a wait
  bool ndk_calls = false;   // before every call through an NDK object's dispatch table
  bool locks = false;       // before acquiring a fast or guarded mutex, a resource or a push lock,
                            // and after releasing one
  static constexpr PreemptionPoints All() { return {true, true, true, true}; }
};

struct EnvironmentConfig {
  std::uint64_t seed = 1;                  // every choice of the scheduler derives from it
  std::size_t stack_bytes = 256 * 1024;    // each kernel thread's stack (plus a guard page)
  std::uint32_t max_worker_threads = 16;   // system worker threads for work items
  bool echo_debug_print = false;           // DbgPrint also to stderr, as it is logged
  ScheduleStrategy schedule = ScheduleStrategy::kRandom;
  PreemptionPoints preemption{};           // none: threads switch only where they block or end
  std::uint32_t pct_depth = 3;             // PCT's d (kPct): d - 1 priority change points
  std::uint32_t pct_steps = 1000;          // PCT's k (kPct): the change points fall among these steps
};

// Pool in use under one tag.
struct PoolTagUsage {
  std::uint64_t allocations = 0;  // outstanding
  std::uint64_t bytes = 0;        // outstanding
  std::uint64_t total_allocations = 0;
  bool operator==(const PoolTagUsage&) const = default;
};

// A device a test program has open, as a Windows program's handle from CreateFile.
struct DeviceHandle {
  std::uint32_t id = 0;  // 0: none
};

// A request a test program started without waiting for it (overlapped I/O).
struct PendingIo {
  std::uint32_t id = 0;
};

// What a request to a device came back with: its IO_STATUS_BLOCK.
struct IoResult {
  std::int32_t status = 0;
  std::uint64_t information = 0;
};

class Environment {
 public:
  // PDRIVER_INITIALIZE: NTSTATUS DriverEntry(PDRIVER_OBJECT, PUNICODE_STRING).
  using DriverEntry = std::int32_t (*)(_DRIVER_OBJECT* driver, _UNICODE_STRING* registry_path);

  // The fabric must be in stepped mode and outlive the environment.
  Environment(Fabric& fabric, EnvironmentConfig config = {});
  // Closes the NDK adapters consumers left open (their callbacks run), then ends every kernel
  // thread still blocked without running it further.
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  // Loads a driver on a node's machine: its DriverEntry runs as a kernel thread at PASSIVE_LEVEL
  // the next time the environment runs. `name` names the driver in reports ("name!DriverEntry").
  _DRIVER_OBJECT* LoadDriver(Node& node, std::string name, DriverEntry entry);
  // Loads a driver built as a shared object (ndksim_add_driver_image in CMake; docs/kernel.md,
  // "Driver images") on a node's machine, and runs its DriverEntry as LoadDriver does. Each call
  // loads a copy of its own, so a driver loaded on two machines has a set of globals on each, as
  // on Windows, where LoadDriver's drivers share the program's one set. The image binds to the
  // program's kernel services. Throws std::runtime_error naming the image if it cannot be read or
  // loaded, or has no DriverEntry.
  _DRIVER_OBJECT* LoadDriverImage(Node& node, std::string name, const std::string& image);
  // DriverEntry's status, once it has returned (STATUS_PENDING (0x103) until then).
  std::int32_t DriverStatus(const _DRIVER_OBJECT* driver) const;
  // Queues the driver's DriverUnload as a kernel thread. When it returns, the verifier checks that
  // the driver left nothing behind: pool (by tag), MDLs, work items, devices, system threads,
  // timers, queued DPCs, WSK registrations and NDK adapters. Throws VerifierError from Run if it
  // did not. Throws std::logic_error if the driver has no DriverUnload or did not load.
  void UnloadDriver(_DRIVER_OBJECT* driver);
  // A kernel thread of the test's own, on a node's machine (or none: no netio or WSK), at
  // PASSIVE_LEVEL the next time the environment runs.
  void StartThread(std::string name, std::function<void()> body, Node* node = nullptr);

  // Runs kernel threads until every one has ended (system worker threads waiting for work do not
  // count). Throws DeadlockError if they are all blocked with nothing that could wake one, and
  // VerifierError when a check fails, each ending with the last 64 picks of the interleaving;
  // exceptions a thread's body throws are rethrown here.
  void Run();
  // Runs until `done()` holds (checked each time the scheduler picks), or as Run.
  void RunUntil(const std::function<bool()>& done);
  // Runs for `d` of simulated time: kernel threads, DPCs, timers and the fabric run on, and time
  // passes even while every thread waits (a program's requests pending in a driver are no
  // deadlock here, as they are for Run). Throws as Run for a failed check.
  void RunFor(Duration d);
  // Starts `entry` as a kernel thread and runs until every thread has ended.
  void Run(std::string name, std::function<void()> entry);

  // ---- a test program's requests to drivers' devices (CreateFile, ReadFile, WriteFile, DeviceIoControl,
  // CloseHandle) ----
  // Each request becomes an IRP, as a Windows program's does: it runs on a kernel thread of the
  // device's machine at PASSIVE_LEVEL, where the driver's dispatch routine is called. A request the
  // driver pends waits until the driver completes it, while the rest of the simulation runs on.
  // Each call returns once its IRP has completed (or throws what the run throws), with the IRP's
  // IO_STATUS_BLOCK. A major function the driver did not set gets STATUS_INVALID_DEVICE_REQUEST.
  //
  // Opens the device `path` names on `node`'s machine: CreateFile's "\\.\Name" (through a
  // symbolic link the driver created), "\??\Name", or the device's name, "\Device\Name".
  // IRP_MJ_CREATE; STATUS_OBJECT_NAME_NOT_FOUND when nothing has that name there.
  IoResult OpenDevice(Node& node, std::string_view path, DeviceHandle* handle);
  // IRP_MJ_DEVICE_CONTROL with the control code's transfer method: METHOD_BUFFERED copies `input`
  // into one system buffer and the completed Information bytes back out to `output`; the direct
  // methods pass the input in the system buffer and `output` through an MDL; METHOD_NEITHER
  // passes both buffers as they are.
  IoResult DeviceIoControl(DeviceHandle handle, std::uint32_t code, std::span<const std::byte> input,
                           std::span<std::byte> output);
  // The same request, overlapped: it returns once the driver's dispatch routine has returned, with
  // the IRP complete or pending. Both buffers must stay valid until the request has completed.
  PendingIo StartDeviceIoControl(DeviceHandle handle, std::uint32_t code, std::span<const std::byte> input,
                                 std::span<std::byte> output);
  // IRP_MJ_READ and IRP_MJ_WRITE (ReadFile, WriteFile) of `buffer.size()` bytes at `offset`
  // (Parameters.Read/Write.ByteOffset), by the device's I/O method: with DO_BUFFERED_IO through a
  // system buffer (a read's completed Information bytes copied back unless the status is an
  // error), with DO_DIRECT_IO through an MDL of `buffer`, otherwise `buffer` itself (UserBuffer).
  IoResult ReadFile(DeviceHandle handle, std::span<std::byte> buffer, std::uint64_t offset = 0);
  IoResult WriteFile(DeviceHandle handle, std::span<const std::byte> buffer, std::uint64_t offset = 0);
  // The same requests, overlapped (the buffer must stay valid until the request has completed).
  PendingIo StartReadFile(DeviceHandle handle, std::span<std::byte> buffer, std::uint64_t offset = 0);
  PendingIo StartWriteFile(DeviceHandle handle, std::span<const std::byte> buffer, std::uint64_t offset = 0);
  // Whether a started request has completed (GetOverlappedResult without waiting).
  bool IoCompleted(PendingIo io) const;
  // Runs until a started request completes; its status block. Each is waited for once.
  IoResult WaitIo(PendingIo io);
  // CancelIoEx: IoCancelIrp, on a thread of the program, of every IRP of the handle still
  // outstanding. Each completes when its driver completes it (a cancel routine, if it set one).
  void CancelIo(DeviceHandle handle);
  // The handle closes: IRP_MJ_CLEANUP, then IRP_MJ_CLOSE (either skipped when the driver has none).
  IoResult CloseDevice(DeviceHandle handle);

  // The interface index of the node's RNIC (what WskOpenNdkAdapter takes) on its machine.
  std::uint32_t IfIndexOf(const Node& node) const;
  // Puts `rnic`'s RNIC into `machine`'s machine, beside the RNICs it has: that machine then has an
  // interface (index, LUID, alias, addresses) and an NDK adapter for each. By default each node is
  // a machine with one RNIC. Kernel threads, drivers and work items of either node run on the one
  // machine. Call it before anything runs on `rnic`; a node that is already in another machine
  // with more than one RNIC cannot move (std::logic_error).
  void AddRnic(Node& machine, Node& rnic);
  // Pool in use, by tag (the tag's four characters, as Windows prints them: 'Ndk1' -> "Ndk1").
  std::map<std::string, PoolTagUsage> PoolUsage() const;
  // Every DbgPrint/DbgPrintEx line so far: "[time ps] thread: text".
  const std::vector<std::string>& DebugLog() const;
  // The scheduler's picks so far, one kernel thread name per pick, comma-separated; a pick that
  // preempted the thread before it says where: "b (preempting a at NdkSend)".
  std::string Interleaving() const;
  // Preemption points reached so far: what pct_steps should cover for PCT to reach the whole run.
  std::uint64_t PreemptionSteps() const;
  std::uint64_t Seed() const;
  TimePoint Now() const;
  Fabric& GetFabric();

  // ---- for the simulator's own tests ----
  Scheduler& Threads();
  Dispatcher& Objects();

  struct Impl;

 private:
  std::string InterleavingTail() const;

  std::unique_ptr<Impl> impl_;
};

}  // namespace ndksim::kernel
