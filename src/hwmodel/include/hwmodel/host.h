// SPDX-License-Identifier: MIT
// The host side of a node as a driver sees it: interrupt delivery, timers and deferred procedure
// calls. These are OS services; the NIC uses only RaiseInterrupt, the driver only the rest.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "common/inplace_callback.h"
#include "hwmodel/host_cpu.h"
#include "ndksim/profile.h"
#include "ndksim/time.h"

namespace ndksim::hw {

class EventQueue;

// Serialises the driver's control plane with the engine that runs the NIC and the host's
// interrupts, DPCs and timers (installed by whoever runs the engine). Run(fn, context) calls
// fn(context) with nothing else of the node running: at once when the caller is the engine's own
// thread or no engine thread runs (stepped mode), otherwise on the engine's thread, between two
// events, with the caller waiting; an exception fn throws reaches the caller.
class ControlSerializer {
 public:
  virtual void Run(void (*fn)(void*), void* context) = 0;

 protected:
  ~ControlSerializer() = default;
};

// Runs `fn()` through `serializer` (nullptr: at once, on this thread) and returns its result.
template <typename Fn>
auto SerializeThrough(ControlSerializer* serializer, Fn&& fn) {
  if (serializer == nullptr) return fn();
  using R = decltype(fn());
  if constexpr (std::is_void_v<R>) {
    serializer->Run([](void* f) { (*static_cast<std::remove_reference_t<Fn>*>(f))(); }, &fn);
  } else {
    std::optional<R> result;
    auto call = [&] { result.emplace(fn()); };
    serializer->Run([](void* f) { (*static_cast<decltype(call)*>(f))(); }, &call);
    return R(std::move(*result));
  }
}

// What a timer or a DPC runs (the event queue's callback type: queuing one never allocates).
using HostCallback = InplaceCallback<48>;

class Host {
 public:
  using InterruptHandler = std::function<void(std::uint32_t vector)>;

  // `seed` and `node` fix the node's noise streams (its cores' interruptions).
  Host(EventQueue& events, const HardwareProfile& profile, std::uint64_t seed = 1, std::uint32_t node = 0);

  // Driver: installs its interrupt service routine (MSI-X vectors of this node's NIC).
  void SetInterruptHandler(InterruptHandler handler) { handler_ = std::move(handler); }
  // NIC: an MSI-X write reached the host; the handler runs now, on the engine's thread.
  void RaiseInterrupt(std::uint32_t vector) {
    if (handler_) handler_(vector);
  }
  // Driver: run `fn` after `delay` of simulated time (a kernel timer).
  void ScheduleTimer(Duration delay, HostCallback fn);
  // Driver: run `fn` at the current time, after the call that queued it has returned (a DPC).
  void QueueDpc(HostCallback fn);
  TimePoint Now() const;
  // The node's cores: the driver charges its posting and polling work to the caller's core.
  HostCpu& Cpu() { return cpu_; }
  const HostCpu& Cpu() const { return cpu_; }

  // Wiring: the engine's serialiser (none: every call runs at once, on the caller's thread).
  void SetControlSerializer(ControlSerializer* serializer) { serializer_ = serializer; }
  // Driver: runs `fn()` serialised with the engine (ControlSerializer) and returns its result.
  // Every control call of the provider (create, register, connect, close, resize, flush, arm)
  // goes through here; posting and polling do not.
  template <typename Fn>
  auto Serialize(Fn&& fn) {
    return SerializeThrough(serializer_, std::forward<Fn>(fn));
  }

 private:
  EventQueue& events_;
  HostCpu cpu_;
  ControlSerializer* serializer_ = nullptr;
  InterruptHandler handler_;
};

}  // namespace ndksim::hw
