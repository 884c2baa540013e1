// SPDX-License-Identifier: MIT
// Fibers over ucontext, with guard-paged stacks and the sanitizers' fiber annotations.
#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

#include "common/check.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NDKSIM_FIBER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define NDKSIM_FIBER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define NDKSIM_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define NDKSIM_FIBER_TSAN 1
#endif

#ifdef NDKSIM_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef NDKSIM_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#if defined(__x86_64__)
// ndksim_fiber_switch(save, load): pushes the callee-saved registers and the SSE and x87 control
// words, stores the stack pointer at *save, takes `load` as the stack pointer and pops the same
// from it. A new fiber's stack is laid out as if it had been switched out at the start of
// ndksim_fiber_trampoline, with the fiber in r12 and its start function in r13.
asm(R"(
  .pushsection .text
  .p2align 4
  .globl ndksim_fiber_switch
  .hidden ndksim_fiber_switch
  .type ndksim_fiber_switch,@function
ndksim_fiber_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size ndksim_fiber_switch,.-ndksim_fiber_switch

  .p2align 4
  .globl ndksim_fiber_trampoline
  .hidden ndksim_fiber_trampoline
  .type ndksim_fiber_trampoline,@function
ndksim_fiber_trampoline:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
  .size ndksim_fiber_trampoline,.-ndksim_fiber_trampoline
  .popsection
)");

extern "C" void ndksim_fiber_switch(void** save, void* load);
extern "C" void ndksim_fiber_trampoline();
#endif

namespace ndksim::kernel {

namespace {

// The fiber that made the switch now arriving (this thread's), so that the arriving side can
// learn the stack of a thread's own context, which only AddressSanitizer knows.
thread_local Fiber* g_switching_from = nullptr;

std::size_t PageBytes() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

Fiber::Fiber(ThisThread) {
#ifdef NDKSIM_FIBER_TSAN
  tsan_fiber_ = __tsan_get_current_fiber();
#endif
}

Fiber::Fiber(Entry entry, void* argument, std::size_t stack_bytes) : entry_(entry), argument_(argument) {
  const std::size_t page = PageBytes();
  const std::size_t usable = (stack_bytes + page - 1) / page * page;
  mapping_bytes_ = usable + page;
  void* mapping = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  stack_ = mapping;
  // The stack grows down: the lowest page is the guard.
  NDKSIM_CHECK(mprotect(mapping, page, PROT_NONE) == 0, "cannot protect a fiber stack's guard page");
  std::byte* const base = static_cast<std::byte*>(mapping) + page;
  stack_bottom_ = base;
  stack_size_ = usable;
#if defined(__x86_64__)
  // The frame ndksim_fiber_switch pops, at a 16-byte aligned address, so that the trampoline is
  // entered with the stack aligned as a call expects: control words, r15, r14, r13 (the start
  // function), r12 (this fiber), rbx, rbp, and the trampoline as the return address.
  auto top = reinterpret_cast<std::uintptr_t>(base + usable) & ~std::uintptr_t{15};
  auto* frame = reinterpret_cast<std::uint64_t*>(top - 80);
  constexpr std::uint64_t kDefaultMxcsr = 0x1F80;   // all exceptions masked, round to nearest
  constexpr std::uint64_t kDefaultX87Cw = 0x037F;   // the same for x87, extended precision
  frame[0] = kDefaultMxcsr | (kDefaultX87Cw << 32);
  frame[1] = 0;                                          // r15
  frame[2] = 0;                                          // r14
  frame[3] = reinterpret_cast<std::uint64_t>(&Fiber::Start);  // r13
  frame[4] = reinterpret_cast<std::uint64_t>(this);      // r12
  frame[5] = 0;                                          // rbx
  frame[6] = 0;                                          // rbp
  frame[7] = reinterpret_cast<std::uint64_t>(&ndksim_fiber_trampoline);
  saved_sp_ = frame;
#else
  NDKSIM_CHECK(getcontext(&context_) == 0, "getcontext failed");
  context_.uc_stack.ss_sp = base;
  context_.uc_stack.ss_size = usable;
  context_.uc_link = nullptr;
  // makecontext passes int arguments: the fiber's address in two halves.
  const auto self = reinterpret_cast<std::uintptr_t>(this);
  makecontext(&context_, reinterpret_cast<void (*)()>(&Fiber::Start), 2, static_cast<unsigned>(self >> 32),
              static_cast<unsigned>(self & 0xFFFFFFFFu));
#endif
#ifdef NDKSIM_FIBER_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
  owns_tsan_fiber_ = true;
#endif
}

Fiber::~Fiber() {
#ifdef NDKSIM_FIBER_TSAN
  if (owns_tsan_fiber_) __tsan_destroy_fiber(tsan_fiber_);
#endif
  if (stack_ == nullptr) return;
#ifdef NDKSIM_FIBER_ASAN
  // The frames still on the stack (a fiber never returns from its last switch, and an abandoned
  // one from its wait) leave their redzones poisoned; a later mapping at the same address must
  // not inherit them.
  __asan_unpoison_memory_region(stack_bottom_, stack_size_);
#endif
  munmap(stack_, mapping_bytes_);
}

#if defined(__x86_64__)
void Fiber::Start(void* self_pointer) {
  auto* self = static_cast<Fiber*>(self_pointer);
#else
void Fiber::Start(unsigned high, unsigned low) {
  auto* self = reinterpret_cast<Fiber*>((static_cast<std::uintptr_t>(high) << 32) | low);
#endif
  self->AfterArriving();
  self->entry_(self->argument_);
  NDKSIM_CHECK(false, "a fiber's entry returned; it must switch away for good instead");
}

void Fiber::BeforeLeaving([[maybe_unused]] Fiber& to, [[maybe_unused]] bool finished) {
#ifdef NDKSIM_FIBER_ASAN
  // A finished fiber's fake stack is released (nullptr); otherwise it is kept for its return.
  __sanitizer_start_switch_fiber(finished ? nullptr : &fake_stack_, to.stack_bottom_, to.stack_size_);
#endif
#ifdef NDKSIM_FIBER_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber_, 0);
#endif
}

void Fiber::AfterArriving() {
#ifdef NDKSIM_FIBER_ASAN
  const void* from_bottom = nullptr;
  std::size_t from_size = 0;
  __sanitizer_finish_switch_fiber(fake_stack_, &from_bottom, &from_size);
  Fiber* from = g_switching_from;
  if (from != nullptr && from->stack_ == nullptr) {
    // A thread's own context: its stack is known only now.
    from->stack_bottom_ = from_bottom;
    from->stack_size_ = from_size;
  }
#endif
}

void Fiber::Switch(Fiber& from, Fiber& to, bool from_finished) {
  NDKSIM_CHECK(&from != &to, "a fiber switched to itself");
  from.BeforeLeaving(to, from_finished);
  g_switching_from = &from;
#if defined(__x86_64__)
  ndksim_fiber_switch(&from.saved_sp_, to.saved_sp_);
#else
  NDKSIM_CHECK(swapcontext(&from.context_, &to.context_) == 0, "swapcontext failed");
#endif
  // Back in `from`, switched to by some fiber.
  from.AfterArriving();
}

}  // namespace ndksim::kernel
