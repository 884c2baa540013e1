// SPDX-License-Identifier: MIT
// Events and waits over the kernel scheduler.
#include "dispatcher.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "common/check.h"

namespace ndksim::kernel {

namespace {

// KeWaitForMultipleObjects' limit (MAXIMUM_WAIT_OBJECTS).
constexpr std::size_t kMaxWaitObjects = 64;

const char* KindName(DispatcherObject::Kind kind) {
  switch (kind) {
    case DispatcherObject::Kind::kNotificationEvent: return "notification event";
    case DispatcherObject::Kind::kSynchronizationEvent: return "synchronization event";
    case DispatcherObject::Kind::kThread: return "thread";
    case DispatcherObject::Kind::kNotificationTimer: return "notification timer";
    case DispatcherObject::Kind::kSynchronizationTimer: return "synchronization timer";
  }
  return "object";
}

bool AutoResets(DispatcherObject::Kind kind) {
  return kind == DispatcherObject::Kind::kSynchronizationEvent || kind == DispatcherObject::Kind::kSynchronizationTimer;
}

}  // namespace

// One object's part of one wait, on the waiting thread's stack.
struct WaitBlock {
  DispatcherObject* object = nullptr;
  Dispatcher::Waiter* waiter = nullptr;
  WaitBlock* next = nullptr;
  WaitBlock* prev = nullptr;
  std::uint32_t index = 0;
  bool linked = false;
};

struct Dispatcher::Waiter {
  Scheduler::ThreadId thread = Scheduler::kNone;
  WaitType type = WaitType::kAny;
  std::span<WaitBlock> blocks;
  std::optional<TimePoint> deadline;
  WaitOutcome outcome;
};

Dispatcher::Dispatcher(Scheduler& scheduler, std::function<TimePoint()> now)
    : scheduler_(scheduler), now_(std::move(now)) {}

void Dispatcher::InitializeEvent(DispatcherObject& event, DispatcherObject::Kind kind, bool signaled) {
  event.kind = kind;
  event.signal_state = signaled ? 1 : 0;
  event.first = nullptr;
  event.last = nullptr;
}

std::int32_t Dispatcher::ResetEvent(DispatcherObject& event) {
  const std::int32_t previous = event.signal_state;
  event.signal_state = 0;
  return previous;
}

void Dispatcher::Link(WaitBlock& b) {
  DispatcherObject& o = *b.object;
  b.prev = o.last;
  b.next = nullptr;
  if (o.last != nullptr) {
    o.last->next = &b;
  } else {
    o.first = &b;
  }
  o.last = &b;
  b.linked = true;
}

void Dispatcher::Unlink(WaitBlock& b) {
  DispatcherObject& o = *b.object;
  (b.prev != nullptr ? b.prev->next : o.first) = b.next;
  (b.next != nullptr ? b.next->prev : o.last) = b.prev;
  b.next = b.prev = nullptr;
  b.linked = false;
}

bool Dispatcher::Satisfiable(const Waiter& w, std::uint32_t* index) const {
  if (w.type == WaitType::kAny) {
    for (const WaitBlock& b : w.blocks) {
      if (b.object->signal_state > 0) {
        *index = b.index;
        return true;
      }
    }
    return false;
  }
  *index = 0;
  return std::all_of(w.blocks.begin(), w.blocks.end(), [](const WaitBlock& b) { return b.object->signal_state > 0; });
}

void Dispatcher::Consume(Waiter& w, std::uint32_t index) {
  const auto take = [](DispatcherObject& o) {
    if (AutoResets(o.kind)) o.signal_state = 0;
  };
  if (w.type == WaitType::kAny) {
    take(*w.blocks[index].object);
    return;
  }
  for (WaitBlock& b : w.blocks) take(*b.object);
}

void Dispatcher::Release(Waiter& w, WaitOutcome outcome) {
  for (WaitBlock& b : w.blocks) {
    if (b.linked) Unlink(b);
  }
  if (w.deadline) timed_.erase(std::find(timed_.begin(), timed_.end(), &w));
  w.outcome = outcome;
  scheduler_.Wake(w.thread);
}

std::int32_t Dispatcher::SetEvent(DispatcherObject& event) {
  const std::int32_t previous = event.signal_state;
  event.signal_state = 1;
  if (previous != 0) return previous;  // nothing that waits on it can be satisfied now that was not before
  // The waits this event may complete, in the order they began. (Releasing one unlinks its wait
  // blocks, so they are listed first; the lists are members, reused, so a signal allocates
  // nothing once they have grown. Nothing a release does signals again.)
  std::vector<Waiter*>& candidates = candidates_;
  candidates.clear();
  for (WaitBlock* b = event.first; b != nullptr; b = b->next) candidates.push_back(b->waiter);
  if (AutoResets(event.kind)) {
    // One waiter takes the signal. Which one, among those it satisfies, Windows does not promise:
    // the scheduler's seeded choice.
    std::vector<Waiter*>& ready = ready_;
    ready.clear();
    std::uint32_t index = 0;
    for (Waiter* w : candidates) {
      if (Satisfiable(*w, &index)) ready.push_back(w);
    }
    if (ready.empty()) return previous;
    Waiter& chosen = *ready[ready.size() == 1 ? 0 : scheduler_.Choose(static_cast<std::uint32_t>(ready.size()))];
    (void)Satisfiable(chosen, &index);
    Consume(chosen, index);
    Release(chosen, WaitOutcome{false, index});
    return previous;
  }
  // A notification event stays signaled: every wait it satisfies completes (a wait for all of
  // several objects may still consume another, synchronization, object on the way).
  for (Waiter* w : candidates) {
    std::uint32_t index = 0;
    if (!Satisfiable(*w, &index)) continue;
    Consume(*w, index);
    Release(*w, WaitOutcome{false, index});
  }
  return previous;
}

WaitOutcome Dispatcher::Wait(std::span<DispatcherObject* const> objects, WaitType type,
                             std::optional<TimePoint> deadline) {
  NDKSIM_CHECK(!objects.empty() && objects.size() <= kMaxWaitObjects, "a wait on {} objects (1 to {})",
               objects.size(), kMaxWaitObjects);
  std::array<WaitBlock, kMaxWaitObjects> blocks;
  Waiter w;
  w.type = type;
  w.deadline = deadline;
  w.blocks = std::span<WaitBlock>(blocks.data(), objects.size());
  for (std::uint32_t i = 0; i < objects.size(); ++i) {
    NDKSIM_CHECK(objects[i] != nullptr, "a wait on a null object");
    blocks[i].object = objects[i];
    blocks[i].waiter = &w;
    blocks[i].index = i;
  }
  std::uint32_t index = 0;
  if (Satisfiable(w, &index)) {
    Consume(w, index);
    return WaitOutcome{false, index};
  }
  if (deadline && *deadline <= now_()) return WaitOutcome{true, 0};
  NDKSIM_CHECK(scheduler_.InThread(), "a wait that would block, outside a kernel thread");
  w.thread = scheduler_.Current();
  for (WaitBlock& b : w.blocks) Link(b);
  if (deadline) timed_.push_back(&w);
  scheduler_.Block(&Dispatcher::DescribeWait, &w);
  return w.outcome;
}

std::string Dispatcher::DescribeWait(const void* waiter) {
  const auto& w = *static_cast<const Waiter*>(waiter);
  std::string what = fmt::format("{} of {}:", w.type == WaitType::kAny ? "any" : "all", w.blocks.size());
  for (const WaitBlock& b : w.blocks) what += fmt::format(" {} {}", KindName(b.object->kind), fmt::ptr(b.object));
  if (w.deadline) what += fmt::format(", until {} ps", w.deadline->time_since_epoch().count());
  return what;
}

std::optional<TimePoint> Dispatcher::NextDeadline() const {
  std::optional<TimePoint> next;
  for (const Waiter* w : timed_) {
    if (!next || *w->deadline < *next) next = *w->deadline;
  }
  return next;
}

bool Dispatcher::ExpireDue(TimePoint now) {
  std::vector<Waiter*> due;
  for (Waiter* w : timed_) {
    if (*w->deadline <= now) due.push_back(w);
  }
  for (Waiter* w : due) Release(*w, WaitOutcome{true, 0});
  return !due.empty();
}

}  // namespace ndksim::kernel
