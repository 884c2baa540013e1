// SPDX-License-Identifier: MIT
// Driver images: a driver built as a shared object, loaded once per machine. On Windows each
// machine runs its own copy of a driver, with its own globals; a driver linked into the test
// program has one set of globals for every machine it is loaded on. An image loaded from a copy of
// its file of its own is a separate instance of the code's data, as the dynamic loader keeps one
// instance per file it opened.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernel_state.h"
#include "ip2string.h"
#include "ntstrsafe.h"
#include "site_macros_off.h"

namespace ndksim::kernel {
namespace {

// The kernel's export table: one service of every file that defines services, referenced from
// here so that a program that loads driver images links them all. An image binds to the program's
// services, so the program must have every service an image may call, not only those the program
// itself calls (and export them: ndksim::kernel links programs with -rdynamic).
[[maybe_unused]] const void* const kExports[] = {
    reinterpret_cast<const void*>(&KeAcquireSpinLockRaiseToDpc),  // services.cc
    reinterpret_cast<const void*>(&ExAcquireFastMutex),           // locks.cc
    reinterpret_cast<const void*>(&IoCompleteRequest),            // io_manager.cc
    reinterpret_cast<const void*>(&IoCsqInitialize),              // io_queues.cc
    reinterpret_cast<const void*>(&InitializeSListHead),          // runtime.cc
    reinterpret_cast<const void*>(&WskRegister),                  // wsk.cc
    reinterpret_cast<const void*>(&RtlIpv4StringToAddressA),      // ip2string.cc
    reinterpret_cast<const void*>(&RtlStringCbCopyA),             // strsafe.cc
};

// Writes a private copy of `image` and opens it; the copy's name is gone once it is open.
void* OpenCopy(const std::string& image) {
  std::ifstream in(image, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("LoadDriverImage: cannot read the image '{}'", image));
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const char* dir = std::getenv("TMPDIR");
  std::string path = fmt::format("{}/ndksim-driver-XXXXXX", dir != nullptr && *dir != '\0' ? dir : "/tmp");
  const int fd = mkstemp(path.data());
  if (fd < 0) throw std::runtime_error(fmt::format("LoadDriverImage: cannot make a copy of '{}': {}", image, std::strerror(errno)));
  const bool written = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  close(fd);
  void* handle = written ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  const std::string why = written ? (handle == nullptr ? std::string(dlerror()) : std::string()) : "a short write";
  unlink(path.c_str());
  if (handle == nullptr) throw std::runtime_error(fmt::format("LoadDriverImage: cannot load '{}': {}", image, why));
  return handle;
}

}  // namespace

_DRIVER_OBJECT* Environment::LoadDriverImage(Node& node, std::string name, const std::string& image) {
  void* handle = OpenCopy(image);
  impl_->images.push_back(handle);
  void* entry = dlsym(handle, "DriverEntry");
  if (entry == nullptr) throw std::runtime_error(fmt::format("LoadDriverImage: '{}' has no DriverEntry", image));
  return LoadDriver(node, std::move(name), reinterpret_cast<DriverEntry>(entry));
}

void Environment::Impl::CloseImages() {
  for (void* handle : images) dlclose(handle);
  images.clear();
}

}  // namespace ndksim::kernel
