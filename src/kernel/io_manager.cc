// SPDX-License-Identifier: MIT
// The I/O manager: device names and symbolic links, the IRPs a test program's requests become
// (create, device control, cleanup, close), and what a driver does with an IRP: complete it at
// once, or pend it and complete it later, perhaps with a cancel routine meanwhile. A request runs
// on a kernel thread of the device's machine, as a Windows program's thread enters the kernel: the
// driver's dispatch routine is called on it, and a pended IRP keeps that thread waiting while the
// rest of the simulation runs on.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "kernel_state.h"
#include "site_macros_off.h"

using ndksim::kernel::CurrentEnvironment;
using ndksim::kernel::DeviceOpen;
using ndksim::kernel::DispatcherObject;
using ndksim::kernel::IrpRecord;
using ndksim::kernel::Site;
using ndksim::kernel::WaitType;
using Impl = ndksim::kernel::Environment::Impl;

namespace {

std::u16string TextOf(const UNICODE_STRING* s) {
  if (s == nullptr || s->Buffer == nullptr) return {};
  return {reinterpret_cast<const char16_t*>(s->Buffer), s->Length / sizeof(WCHAR)};
}

std::string Narrow(const std::u16string& text) {
  std::string out;
  for (const char16_t c : text) out += c < 0x80 ? static_cast<char>(c) : '?';
  return out;
}

// Object names compare without regard to case, as on Windows: a name's key is its lower case.
std::u16string Fold(std::u16string name) {
  for (char16_t& c : name) {
    if (c >= u'A' && c <= u'Z') c = static_cast<char16_t>(c - u'A' + u'a');
  }
  return name;
}

// "\DosDevices\X", "\??\X" and their global forms name the same link: its key is "\??\x".
std::u16string LinkKey(const std::u16string& name) {
  const std::u16string folded = Fold(name);
  for (const std::u16string prefix : {u"\\dosdevices\\global\\", u"\\global??\\", u"\\dosdevices\\", u"\\??\\"}) {
    if (folded.rfind(prefix, 0) == 0) return u"\\??\\" + folded.substr(prefix.size());
  }
  return folded;
}

const char* MajorName(UCHAR major) {
  switch (major) {
    case IRP_MJ_CREATE: return "IRP_MJ_CREATE";
    case IRP_MJ_CLEANUP: return "IRP_MJ_CLEANUP";
    case IRP_MJ_CLOSE: return "IRP_MJ_CLOSE";
    case IRP_MJ_READ: return "IRP_MJ_READ";
    case IRP_MJ_WRITE: return "IRP_MJ_WRITE";
    case IRP_MJ_DEVICE_CONTROL: return "IRP_MJ_DEVICE_CONTROL";
    default: return "an IRP";
  }
}

}  // namespace

namespace ndksim::kernel {

NTSTATUS Environment::Impl::NameDevice(PDEVICE_OBJECT device, const UNICODE_STRING* name) {
  const std::u16string text = Fold(TextOf(name));
  if (text.empty()) return STATUS_SUCCESS;
  const auto key = std::make_pair(MachineOf(Current().machine), text);
  if (device_names.contains(key)) return STATUS_OBJECT_NAME_COLLISION;
  device_names[key] = device;
  return STATUS_SUCCESS;
}

bool Environment::Impl::DeviceNameTaken(const UNICODE_STRING* name) {
  const std::u16string text = TextOf(name);
  return !text.empty() && FindDevice(Current().machine, text) != nullptr;
}

void Environment::Impl::ForgetDevice(PDEVICE_OBJECT device) {
  std::erase_if(device_names, [&](const auto& entry) { return entry.second == device; });
}

PDEVICE_OBJECT Environment::Impl::FindDevice(const Node* machine, const std::u16string& path) {
  std::u16string name = Fold(path);
  if (name.rfind(u"\\\\.\\", 0) == 0) name = u"\\??\\" + name.substr(4);  // CreateFile's "\\.\X"
  if (const auto link = symbolic_links.find({MachineOf(machine), LinkKey(name)}); link != symbolic_links.end()) {
    name = link->second.target;
  }
  const auto it = device_names.find({MachineOf(machine), name});
  return it == device_names.end() ? nullptr : it->second;
}

void Environment::Impl::CheckLinksLeft(Driver& d, std::vector<std::string>* left) {
  for (const auto& [key, link] : symbolic_links) {
    if (link.driver == &d) left->push_back(fmt::format("symbolic link '{}'", Narrow(link.name)));
  }
}

// ---- requests of a test program ----

namespace {

// Starts an IRP for `major` to the open's device on a kernel thread of its machine (the thread a
// program's request enters the kernel on) and runs the simulation until the driver's dispatch
// routine has returned. The request then waits there for the IRP's completion; `request.finish`
// takes the output once it has completed. Returns the request's number.
std::uint32_t Start(Environment& env, Impl& s, DeviceOpen& open, UCHAR major, std::unique_ptr<IoRequest> owned) {
  const std::uint32_t id = s.next_io_request++;
  IoRequest& request = *owned;
  s.io_requests[id] = std::move(owned);
  DeviceOpen* const from = &open;
  s.StartKernelThread(fmt::format("user!{}", MajorName(major)), open.machine, open.driver, [&s, &request, from, major] {
    DeviceOpen& open = *from;
    request.record = std::make_unique<IrpRecord>();
    IrpRecord* const record = request.record.get();
    IRP& irp = record->irp;
    IO_STACK_LOCATION& stack = record->stack;
    irp.Type = IO_TYPE_IRP;
    irp.Size = sizeof(IRP);
    irp.StackCount = 1;
    irp.CurrentLocation = 1;
    irp.RequestorMode = UserMode;
    irp.Tail.Overlay.CurrentStackLocation = &stack;
    irp.Tail.Overlay.OriginalFileObject = &open.file;
    stack.MajorFunction = major;
    stack.DeviceObject = open.device;
    stack.FileObject = &open.file;
    Dispatcher::InitializeEvent(record->done, DispatcherObject::Kind::kNotificationEvent, false);
    if (request.setup) request.setup(request, irp, stack);
    s.outstanding_irps[&irp] = record;
    PDRIVER_DISPATCH dispatch = open.device->DriverObject->MajorFunction[major];
    NTSTATUS status;
    if (dispatch == nullptr) {
      // What the I/O manager does for a function the driver did not set.
      irp.IoStatus.Status = STATUS_INVALID_DEVICE_REQUEST;
      irp.IoStatus.Information = 0;
      s.CompleteIrp(irp, Site{});
      status = STATUS_INVALID_DEVICE_REQUEST;
    } else {
      status = dispatch(open.device, &irp);
    }
    request.dispatched = true;
    const char* name = MajorName(major);
    if (s.Current().irql != PASSIVE_LEVEL) {
      s.Fail("IRQL", fmt::format("the dispatch routine of {} returned at IRQL {}", name, s.Current().irql), Site{});
    }
    if (status == STATUS_PENDING) {
      if ((stack.Control & SL_PENDING_RETURNED) == 0) {
        s.Fail("IRP", fmt::format("the dispatch routine of {} returned STATUS_PENDING without IoMarkIrpPending", name),
               Site{});
      }
      DispatcherObject* const objects[] = {&record->done};
      (void)s.Wait(objects, WaitType::kAny, nullptr, Site{}, "the completion of a pending IRP");
    } else if ((stack.Control & SL_PENDING_RETURNED) != 0) {
      // Driver Verifier's rule: once marked pending, the dispatch routine owes STATUS_PENDING, even
      // for an IRP that has completed meanwhile (the I/O manager then finishes it asynchronously).
      s.Fail("IRP", fmt::format("the dispatch routine of {} returned {:#010x} after IoMarkIrpPending; it must return "
                                "STATUS_PENDING",
                                name, static_cast<ULONG>(status)),
             Site{});
    } else if (!record->completed) {
      s.Fail("IRP", fmt::format("the dispatch routine of {} returned {:#010x} without completing the IRP or pending it",
                                name, static_cast<ULONG>(status)),
             Site{});
    } else if (status != irp.IoStatus.Status) {
      s.Fail("IRP", fmt::format("the dispatch routine of {} returned {:#010x} but completed the IRP with {:#010x}", name,
                                static_cast<ULONG>(status), static_cast<ULONG>(irp.IoStatus.Status)),
             Site{});
    }
    request.result = IoResult{irp.IoStatus.Status, irp.IoStatus.Information};
    if (request.finish) request.finish(request, irp);
    request.finished = true;
  });
  env.RunUntil([&request] { return request.dispatched; });
  return id;
}

IoRequest& RequestOf(Impl& s, PendingIo io) {
  const auto it = s.io_requests.find(io.id);
  if (it == s.io_requests.end()) throw std::logic_error("a PendingIo that is not outstanding (waited for already?)");
  return *it->second;
}

// Describes the program's `buffer` by an MDL of the request's (the direct I/O methods); freed when
// the request finishes. No MDL for an empty buffer.
PMDL DescribeByMdl(IoRequest& r, std::span<std::byte> buffer) {
  if (!buffer.empty()) {
    r.mdl = IoAllocateMdl(buffer.data(), static_cast<ULONG>(buffer.size()), FALSE, FALSE, nullptr);
    if (r.mdl != nullptr) MmBuildMdlForNonPagedPool(r.mdl);
  }
  return r.mdl;
}

// A buffered request's output as the I/O manager copies it back: the Information bytes the driver
// left in the system buffer, unless the status is an error (a warning such as
// STATUS_BUFFER_OVERFLOW returns the part that fits, as on Windows). More than `output` holds is
// reported; `what` names the request and `whose` its buffer in the report.
void CopyBackBuffered(Impl& s, const IoRequest& r, const IRP& irp, std::span<std::byte> output, const char* what,
                      const char* whose) {
  if (NT_ERROR(irp.IoStatus.Status)) return;
  if (irp.IoStatus.Information > output.size()) {
    s.Fail("IRP", fmt::format("{} completed with Information {}, more than {} {} bytes", what,
                              irp.IoStatus.Information, whose, output.size()),
           Site{});
    return;
  }
  std::copy_n(r.system.begin(), irp.IoStatus.Information, output.begin());
}

DeviceOpen& OpenOf(Impl& s, DeviceHandle handle) {
  if (handle.id == 0 || handle.id > s.device_opens.size() || s.device_opens[handle.id - 1]->closed) {
    throw std::logic_error("a DeviceHandle that is not open");
  }
  return *s.device_opens[handle.id - 1];
}

}  // namespace

IoResult Environment::OpenDevice(Node& node, std::string_view path, DeviceHandle* handle) {
  Impl& s = *impl_;
  *handle = DeviceHandle{};
  const std::u16string name(path.begin(), path.end());
  PDEVICE_OBJECT device = s.FindDevice(&node, name);
  if (device == nullptr) return IoResult{static_cast<std::int32_t>(STATUS_OBJECT_NAME_NOT_FOUND), 0};
  auto open = std::make_unique<DeviceOpen>();
  open->device = device;
  open->machine = &node;
  open->driver = s.DriverOf(device->DriverObject);
  open->file.Type = IO_TYPE_FILE;
  open->file.Size = sizeof(FILE_OBJECT);
  open->file.DeviceObject = device;
  DeviceOpen& opened = *open;
  s.device_opens.push_back(std::move(open));
  const IoResult result = WaitIo(PendingIo{Start(*this, s, opened, IRP_MJ_CREATE, std::make_unique<IoRequest>())});
  if (NT_SUCCESS(result.status)) {
    handle->id = static_cast<std::uint32_t>(s.device_opens.size());
  } else {
    opened.closed = true;  // the open failed: there is no handle
  }
  return result;
}

PendingIo Environment::StartDeviceIoControl(DeviceHandle handle, std::uint32_t code, std::span<const std::byte> input,
                                            std::span<std::byte> output) {
  Impl& s = *impl_;
  DeviceOpen& open = OpenOf(s, handle);
  const ULONG method = METHOD_FROM_CTL_CODE(code);
  auto request = std::make_unique<IoRequest>();
  // METHOD_BUFFERED: one system buffer for the input, then the output; the direct methods: the
  // input there, the output described by an MDL; METHOD_NEITHER: the program's own buffers.
  request->system.resize(method == METHOD_BUFFERED ? std::max(input.size(), output.size()) : input.size());
  std::copy(input.begin(), input.end(), request->system.begin());
  request->setup = [method, code, input, output](IoRequest& r, IRP& irp, IO_STACK_LOCATION& stack) {
    stack.Parameters.DeviceIoControl.OutputBufferLength = static_cast<ULONG>(output.size());
    stack.Parameters.DeviceIoControl.InputBufferLength = static_cast<ULONG>(input.size());
    stack.Parameters.DeviceIoControl.IoControlCode = code;
    if (method == METHOD_NEITHER) {
      stack.Parameters.DeviceIoControl.Type3InputBuffer = const_cast<std::byte*>(input.data());
      irp.UserBuffer = output.data();
      return;
    }
    irp.AssociatedIrp.SystemBuffer = r.system.empty() ? nullptr : r.system.data();
    if (method != METHOD_BUFFERED) irp.MdlAddress = DescribeByMdl(r, output);
  };
  request->finish = [&s, method, output](IoRequest& r, const IRP& irp) {
    if (method == METHOD_BUFFERED) {
      CopyBackBuffered(s, r, irp, output, "a METHOD_BUFFERED request", "its output buffer's");
    }
    if (r.mdl != nullptr) IoFreeMdl(r.mdl);
  };
  return PendingIo{Start(*this, s, open, IRP_MJ_DEVICE_CONTROL, std::move(request))};
}

namespace {

// IRP_MJ_READ or IRP_MJ_WRITE of `buffer` at `offset`, by the device's I/O method.
PendingIo StartTransfer(Environment& env, Impl& s, DeviceOpen& open, UCHAR major, std::span<std::byte> buffer,
                        std::uint64_t offset) {
  auto request = std::make_unique<IoRequest>();
  const ULONG flags = open.device->Flags;
  const bool buffered = (flags & DO_BUFFERED_IO) != 0;
  const bool direct = !buffered && (flags & DO_DIRECT_IO) != 0;
  if (buffered) {
    request->system.resize(buffer.size());
    if (major == IRP_MJ_WRITE) std::copy(buffer.begin(), buffer.end(), request->system.begin());
  }
  request->setup = [major, buffer, offset, buffered, direct](IoRequest& r, IRP& irp, IO_STACK_LOCATION& stack) {
    if (major == IRP_MJ_READ) {
      stack.Parameters.Read.Length = static_cast<ULONG>(buffer.size());
      stack.Parameters.Read.ByteOffset.QuadPart = static_cast<LONGLONG>(offset);
    } else {
      stack.Parameters.Write.Length = static_cast<ULONG>(buffer.size());
      stack.Parameters.Write.ByteOffset.QuadPart = static_cast<LONGLONG>(offset);
    }
    if (buffered) {
      irp.AssociatedIrp.SystemBuffer = r.system.empty() ? nullptr : r.system.data();
    } else if (direct) {
      irp.MdlAddress = DescribeByMdl(r, buffer);
    } else {
      irp.UserBuffer = buffer.data();
    }
  };
  request->finish = [&s, major, buffer, buffered](IoRequest& r, const IRP& irp) {
    if (buffered && major == IRP_MJ_READ) CopyBackBuffered(s, r, irp, buffer, "a buffered read", "its buffer's");
    if (r.mdl != nullptr) IoFreeMdl(r.mdl);
  };
  return PendingIo{Start(env, s, open, major, std::move(request))};
}

}  // namespace

PendingIo Environment::StartReadFile(DeviceHandle handle, std::span<std::byte> buffer, std::uint64_t offset) {
  return StartTransfer(*this, *impl_, OpenOf(*impl_, handle), IRP_MJ_READ, buffer, offset);
}

PendingIo Environment::StartWriteFile(DeviceHandle handle, std::span<const std::byte> buffer, std::uint64_t offset) {
  // The driver reads a write's buffer only; the span is writable for the one transfer routine.
  const std::span<std::byte> bytes(const_cast<std::byte*>(buffer.data()), buffer.size());
  return StartTransfer(*this, *impl_, OpenOf(*impl_, handle), IRP_MJ_WRITE, bytes, offset);
}

IoResult Environment::ReadFile(DeviceHandle handle, std::span<std::byte> buffer, std::uint64_t offset) {
  return WaitIo(StartReadFile(handle, buffer, offset));
}

IoResult Environment::WriteFile(DeviceHandle handle, std::span<const std::byte> buffer, std::uint64_t offset) {
  return WaitIo(StartWriteFile(handle, buffer, offset));
}

IoResult Environment::DeviceIoControl(DeviceHandle handle, std::uint32_t code, std::span<const std::byte> input,
                                      std::span<std::byte> output) {
  return WaitIo(StartDeviceIoControl(handle, code, input, output));
}

bool Environment::IoCompleted(PendingIo io) const { return RequestOf(*impl_, io).finished; }

IoResult Environment::WaitIo(PendingIo io) {
  Impl& s = *impl_;
  IoRequest& request = RequestOf(s, io);
  RunUntil([&request] { return request.finished; });
  const IoResult result = request.result;
  s.io_requests.erase(io.id);
  return result;
}

void Environment::CancelIo(DeviceHandle handle) {
  Impl& s = *impl_;
  DeviceOpen& open = OpenOf(s, handle);
  // CancelIoEx: the handle's outstanding IRPs, each cancelled on a thread of the program.
  std::vector<IRP*> irps;
  for (const auto& [irp, record] : s.outstanding_irps) {
    if (record->stack.FileObject == &open.file) irps.push_back(const_cast<IRP*>(irp));
  }
  if (irps.empty()) return;
  bool done = false;
  s.StartKernelThread("user!CancelIoEx", open.machine, open.driver, [&s, &done, irps] {
    for (IRP* irp : irps) {
      if (s.outstanding_irps.contains(irp)) (void)IoCancelIrp(irp);  // one a cancel routine completed is gone
    }
    done = true;
  });
  RunUntil([&done] { return done; });
}

IoResult Environment::CloseDevice(DeviceHandle handle) {
  Impl& s = *impl_;
  DeviceOpen& open = OpenOf(s, handle);
  // The last handle closes: cleanup, then close. A driver without either handler has nothing to
  // do there, and the handle closes all the same.
  const auto send = [&](UCHAR major) {
    if (open.device->DriverObject->MajorFunction[major] == nullptr) return IoResult{};
    return WaitIo(PendingIo{Start(*this, s, open, major, std::make_unique<IoRequest>())});
  };
  const IoResult cleaned = send(IRP_MJ_CLEANUP);
  const IoResult closed = send(IRP_MJ_CLOSE);
  open.closed = true;
  return NT_SUCCESS(cleaned.status) ? closed : cleaned;
}

}  // namespace ndksim::kernel

// ---- the services ----

extern "C" {

VOID IoCompleteRequest(PIRP Irp, CCHAR PriorityBoost) {
  (void)PriorityBoost;
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoCompleteRequest", at);
  s.CompleteIrp(*Irp, at);
}

BOOLEAN IoCancelIrp(PIRP Irp) {
  Impl& s = CurrentEnvironment();
  s.RequireIrqlAtMost(DISPATCH_LEVEL, "IoCancelIrp", s.TakeSite());
  KIRQL irql;
  IoAcquireCancelSpinLock(&irql);
  Irp->Cancel = TRUE;
  auto* routine = reinterpret_cast<PDRIVER_CANCEL>(
      InterlockedExchangePointer(reinterpret_cast<PVOID volatile*>(&Irp->CancelRoutine), nullptr));
  if (routine == nullptr) {
    IoReleaseCancelSpinLock(irql);
    return FALSE;
  }
  // The routine releases the cancel spin lock (IoReleaseCancelSpinLock(Irp->CancelIrql)).
  Irp->CancelIrql = irql;
  routine(IoGetCurrentIrpStackLocation(Irp)->DeviceObject, Irp);
  return TRUE;
}

VOID IoAcquireCancelSpinLock(PKIRQL Irql) {
  Impl& s = CurrentEnvironment();
  *Irql = KeAcquireSpinLockRaiseToDpc(&s.cancel_lock);
}

VOID IoReleaseCancelSpinLock(KIRQL Irql) {
  Impl& s = CurrentEnvironment();
  KeReleaseSpinLock(&s.cancel_lock, Irql);
}

NTSTATUS IoCreateSymbolicLink(PUNICODE_STRING SymbolicLinkName, PUNICODE_STRING DeviceName) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "IoCreateSymbolicLink", at);
  const std::u16string name = TextOf(SymbolicLinkName);
  const std::u16string target = Fold(TextOf(DeviceName));
  if (name.empty() || target.empty()) return STATUS_INVALID_PARAMETER;
  const auto key = std::make_pair(s.MachineOf(s.Current().machine), LinkKey(name));
  if (s.symbolic_links.contains(key)) return STATUS_OBJECT_NAME_COLLISION;
  s.symbolic_links[key] = ndksim::kernel::SymbolicLink{target, s.Current().driver, name};
  return STATUS_SUCCESS;
}

NTSTATUS IoDeleteSymbolicLink(PUNICODE_STRING SymbolicLinkName) {
  Impl& s = CurrentEnvironment();
  const Site at = s.TakeSite();
  s.RequireIrqlExactly(PASSIVE_LEVEL, "IoDeleteSymbolicLink", at);
  const auto key = std::make_pair(s.MachineOf(s.Current().machine), LinkKey(TextOf(SymbolicLinkName)));
  return s.symbolic_links.erase(key) != 0 ? STATUS_SUCCESS : STATUS_OBJECT_NAME_NOT_FOUND;
}

}  // extern "C"

namespace ndksim::kernel {

void Environment::Impl::CompleteIrp(IRP& irp, const Site& at) {
  const auto it = outstanding_irps.find(&irp);
  if (it == outstanding_irps.end()) {
    Fail("IRP", fmt::format("IoCompleteRequest of IRP {}, which is not outstanding: completed twice? "
                            "(MULTIPLE_IRP_COMPLETE_REQUESTS)",
                            fmt::ptr(&irp)),
         at);
    return;
  }
  if (irp.CancelRoutine != nullptr) {
    Fail("IRP", fmt::format("IoCompleteRequest of IRP {} with its cancel routine still set (CANCEL_STATE_IN_COMPLETED_IRP)",
                            fmt::ptr(&irp)),
         at);
    return;
  }
  if (irp.IoStatus.Status == STATUS_PENDING) {
    Fail("IRP", fmt::format("IoCompleteRequest of IRP {} with IoStatus.Status STATUS_PENDING", fmt::ptr(&irp)), at);
    return;
  }
  IrpRecord& record = *it->second;
  outstanding_irps.erase(it);
  record.completed = true;
  irp.PendingReturned = (record.stack.Control & SL_PENDING_RETURNED) != 0 ? TRUE : FALSE;
  (void)dispatcher.SetEvent(record.done);
}

}  // namespace ndksim::kernel
