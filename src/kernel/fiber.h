// SPDX-License-Identifier: MIT
// Fibers: execution contexts with their own stacks that one OS thread switches between explicitly.
// The kernel environment runs every kernel thread (system threads, work items, the driver's entry
// and unload) as a fiber on the thread that drives the simulation, so a wait hands over to the
// next kernel thread with a context switch of a few hundred nanoseconds instead of a wake-up of
// another OS thread, and the interleaving is decided by the scheduler alone.
//
// Sanitizers follow the switches: AddressSanitizer is told about each stack change
// (__sanitizer_start/finish_switch_fiber), ThreadSanitizer sees each fiber as a thread of its own
// (__tsan_create/switch_to/destroy_fiber).
#pragma once

#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace ndksim::kernel {

// One execution context. The one a thread starts on (Fiber::ThisThread) has the thread's own
// stack; the others are made with a stack of their own and an entry function. On x86-64 a switch
// saves the callee-saved registers and the floating-point control words on the old stack and
// loads the new stack pointer (about as much as a function call; no system call); elsewhere it is
// ucontext's swapcontext, which also saves the signal mask with a system call.
class Fiber {
 public:
  using Entry = void (*)(void* argument);

  // The context the calling thread runs on now, as a fiber to switch back to.
  struct ThisThread {};
  explicit Fiber(ThisThread);
  // A new fiber that will run entry(argument) on a stack of `stack_bytes` (rounded up to pages,
  // with a guard page below it, so an overflow faults instead of corrupting memory) when first
  // switched to. `entry` must not return: its last act is SwitchTo another fiber with `finished`.
  Fiber(Entry entry, void* argument, std::size_t stack_bytes);
  ~Fiber();
  // Switches hold the fiber's address (and glibc's ucontext_t points into itself): a fiber stays
  // where it was made.
  Fiber(Fiber&&) = delete;
  Fiber& operator=(Fiber&&) = delete;
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Saves the calling context into `from` and runs `to` until some fiber switches back to `from`.
  // `from_finished`: `from` never runs again (its sanitizer state is released).
  static void Switch(Fiber& from, Fiber& to, bool from_finished = false);

 private:
#if defined(__x86_64__)
  static void Start(void* self);
#else
  static void Start(unsigned high, unsigned low);
#endif
  // The sanitizer bookkeeping on either side of a switch.
  void BeforeLeaving(Fiber& to, bool finished);
  void AfterArriving();

#if defined(__x86_64__)
  void* saved_sp_ = nullptr;  // where the context was saved when it was switched out
#else
  ucontext_t context_{};
#endif
  void* stack_ = nullptr;         // the mapping, guard page included; nullptr for a thread's own
  std::size_t mapping_bytes_ = 0;
  Entry entry_ = nullptr;
  void* argument_ = nullptr;
  // AddressSanitizer: this context's stack (learnt on the first switch away from a thread's own
  // stack) and the fake stack it keeps while switched out.
  const void* stack_bottom_ = nullptr;
  std::size_t stack_size_ = 0;
  void* fake_stack_ = nullptr;
  // ThreadSanitizer: this context's fiber handle.
  void* tsan_fiber_ = nullptr;
  bool owns_tsan_fiber_ = false;
};

}  // namespace ndksim::kernel
