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

// "\DosDevices\X", "\??\X" and their global forms name the same link: "\??\X".
std::u16string LinkKey(const std::u16string& name) {
  for (const std::u16string prefix : {u"\\DosDevices\\Global\\", u"\\GLOBAL??\\", u"\\DosDevices\\", u"\\??\\"}) {
    if (name.rfind(prefix, 0) == 0) return u"\\??\\" + name.substr(prefix.size());
  }
  return name;
}

const char* MajorName(UCHAR major) {
  switch (major) {
    case IRP_MJ_CREATE: return "IRP_MJ_CREATE";
    case IRP_MJ_CLEANUP: return "IRP_MJ_CLEANUP";
    case IRP_MJ_CLOSE: return "IRP_MJ_CLOSE";
    case IRP_MJ_DEVICE_CONTROL: return "IRP_MJ_DEVICE_CONTROL";
    default: return "an IRP";
  }
}

}  // namespace

namespace ndksim::kernel {

NTSTATUS Environment::Impl::NameDevice(PDEVICE_OBJECT device, const UNICODE_STRING* name) {
  const std::u16string text = TextOf(name);
  if (text.empty()) return STATUS_SUCCESS;
  const auto key = std::make_pair(MachineOf(Current().machine), text);
  if (device_names.contains(key)) return STATUS_OBJECT_NAME_COLLISION;
  device_names[key] = device;
  return STATUS_SUCCESS;
}

void Environment::Impl::ForgetDevice(PDEVICE_OBJECT device) {
  std::erase_if(device_names, [&](const auto& entry) { return entry.second == device; });
}

PDEVICE_OBJECT Environment::Impl::FindDevice(const Node* machine, const std::u16string& path) {
  std::u16string name = path;
  if (name.rfind(u"\\\\.\\", 0) == 0) name = u"\\??\\" + name.substr(4);  // CreateFile's "\\.\X"
  if (const auto link = symbolic_links.find({MachineOf(machine), LinkKey(name)}); link != symbolic_links.end()) {
    name = link->second.target;
  }
  const auto it = device_names.find({MachineOf(machine), name});
  return it == device_names.end() ? nullptr : it->second;
}

void Environment::Impl::CheckLinksLeft(Driver& d, std::vector<std::string>* left) {
  for (const auto& [key, link] : symbolic_links) {
    if (link.driver == &d) left->push_back(fmt::format("symbolic link '{}'", Narrow(key.second)));
  }
}

// ---- requests of a test program ----

namespace {

// Issues an IRP for `major` to the open's device on a kernel thread of its machine, runs the
// simulation until the IRP has completed, and returns its status block. `setup` fills the IRP and
// its stack location; `finish` takes the output once it has completed.
IoResult Issue(Environment& env, Impl& s, DeviceOpen& open, UCHAR major,
               const std::function<void(IRP&, IO_STACK_LOCATION&)>& setup, const std::function<void(const IRP&)>& finish) {
  IoResult result;
  bool finished = false;
  s.StartKernelThread(fmt::format("user!{}", MajorName(major)), open.machine, open.driver, [&] {
    auto record = std::make_unique<IrpRecord>();
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
    setup(irp, stack);
    s.outstanding_irps[&irp] = record.get();
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
    } else if (!record->completed) {
      s.Fail("IRP", fmt::format("the dispatch routine of {} returned {:#010x} without completing the IRP or pending it",
                                name, static_cast<ULONG>(status)),
             Site{});
    } else if (status != irp.IoStatus.Status) {
      s.Fail("IRP", fmt::format("the dispatch routine of {} returned {:#010x} but completed the IRP with {:#010x}", name,
                                static_cast<ULONG>(status), static_cast<ULONG>(irp.IoStatus.Status)),
             Site{});
    }
    result = IoResult{irp.IoStatus.Status, irp.IoStatus.Information};
    finish(irp);
    finished = true;
  });
  env.RunUntil([&] { return finished; });
  return result;
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
  for (const auto& d : s.drivers) {
    if (&d->object == device->DriverObject) open->driver = d.get();
  }
  open->file.Type = IO_TYPE_FILE;
  open->file.Size = sizeof(FILE_OBJECT);
  open->file.DeviceObject = device;
  const IoResult result = Issue(*this, s, *open, IRP_MJ_CREATE, [](IRP&, IO_STACK_LOCATION&) {}, [](const IRP&) {});
  if (NT_SUCCESS(result.status)) {
    s.device_opens.push_back(std::move(open));
    handle->id = static_cast<std::uint32_t>(s.device_opens.size());
  }
  return result;
}

IoResult Environment::DeviceIoControl(DeviceHandle handle, std::uint32_t code, std::span<const std::byte> input,
                                      std::span<std::byte> output) {
  Impl& s = *impl_;
  DeviceOpen& open = OpenOf(s, handle);
  const ULONG method = METHOD_FROM_CTL_CODE(code);
  // METHOD_BUFFERED: one system buffer for the input, then the output; the direct methods: the
  // input there, the output described by an MDL; METHOD_NEITHER: the program's own buffers.
  std::vector<std::byte> system(method == METHOD_BUFFERED ? std::max(input.size(), output.size()) : input.size());
  std::copy(input.begin(), input.end(), system.begin());
  PMDL mdl = nullptr;
  const auto setup = [&](IRP& irp, IO_STACK_LOCATION& stack) {
    stack.Parameters.DeviceIoControl.OutputBufferLength = static_cast<ULONG>(output.size());
    stack.Parameters.DeviceIoControl.InputBufferLength = static_cast<ULONG>(input.size());
    stack.Parameters.DeviceIoControl.IoControlCode = code;
    if (method == METHOD_NEITHER) {
      stack.Parameters.DeviceIoControl.Type3InputBuffer = const_cast<std::byte*>(input.data());
      irp.UserBuffer = output.data();
      return;
    }
    irp.AssociatedIrp.SystemBuffer = system.empty() ? nullptr : system.data();
    if (method != METHOD_BUFFERED && !output.empty()) {
      mdl = IoAllocateMdl(output.data(), static_cast<ULONG>(output.size()), FALSE, FALSE, nullptr);
      if (mdl != nullptr) MmBuildMdlForNonPagedPool(mdl);
      irp.MdlAddress = mdl;
    }
  };
  const auto finish = [&](const IRP& irp) {
    if (method == METHOD_BUFFERED && NT_SUCCESS(irp.IoStatus.Status)) {
      if (irp.IoStatus.Information > output.size()) {
        s.Fail("IRP", fmt::format("a METHOD_BUFFERED request completed with Information {}, more than its output "
                                  "buffer's {} bytes",
                                  irp.IoStatus.Information, output.size()),
               Site{});
        return;
      }
      std::copy_n(system.begin(), irp.IoStatus.Information, output.begin());
    }
    if (mdl != nullptr) IoFreeMdl(mdl);
  };
  return Issue(*this, s, open, IRP_MJ_DEVICE_CONTROL, setup, finish);
}

IoResult Environment::CloseDevice(DeviceHandle handle) {
  Impl& s = *impl_;
  DeviceOpen& open = OpenOf(s, handle);
  const auto none = [](IRP&, IO_STACK_LOCATION&) {};
  const auto nothing = [](const IRP&) {};
  // The last handle closes: cleanup, then close. A driver without either handler has nothing to
  // do there, and the handle closes all the same.
  const bool cleanup = open.device->DriverObject->MajorFunction[IRP_MJ_CLEANUP] != nullptr;
  const IoResult cleaned = cleanup ? Issue(*this, s, open, IRP_MJ_CLEANUP, none, nothing) : IoResult{};
  const bool close = open.device->DriverObject->MajorFunction[IRP_MJ_CLOSE] != nullptr;
  const IoResult closed = close ? Issue(*this, s, open, IRP_MJ_CLOSE, none, nothing) : IoResult{};
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
  const std::u16string link = LinkKey(TextOf(SymbolicLinkName));
  const std::u16string target = TextOf(DeviceName);
  if (link.empty() || target.empty()) return STATUS_INVALID_PARAMETER;
  const auto key = std::make_pair(s.MachineOf(s.Current().machine), link);
  if (s.symbolic_links.contains(key)) return STATUS_OBJECT_NAME_COLLISION;
  s.symbolic_links[key] = ndksim::kernel::SymbolicLink{target, s.Current().driver};
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
