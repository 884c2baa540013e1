// SPDX-License-Identifier: MIT
// Events and waits over the kernel scheduler.
#include "dispatcher.h"

#include <algorithm>
#include <array>
#include <cstdint>

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
    case DispatcherObject::Kind::kMutant: return "mutex";
    case DispatcherObject::Kind::kSemaphore: return "semaphore";
    case DispatcherObject::Kind::kThread: return "thread";
    case DispatcherObject::Kind::kNotificationTimer: return "notification timer";
    case DispatcherObject::Kind::kSynchronizationTimer: return "synchronization timer";
  }
  return "object";
}

bool AutoResets(DispatcherObject::Kind kind) {
  return kind == DispatcherObject::Kind::kSynchronizationEvent || kind == DispatcherObject::Kind::kSynchronizationTimer;
}

// Objects a satisfied wait takes something from, so that a signal satisfies its waiters one at a
// time: a synchronization event or timer, a mutex, a semaphore.
bool TakenByAWait(DispatcherObject::Kind kind) {
  return AutoResets(kind) || kind == DispatcherObject::Kind::kMutant || kind == DispatcherObject::Kind::kSemaphore;
}

MutantObject& AsMutant(DispatcherObject& o) { return *reinterpret_cast<MutantObject*>(&o); }
const MutantObject& AsMutant(const DispatcherObject& o) { return *reinterpret_cast<const MutantObject*>(&o); }

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

Dispatcher::Dispatcher(Scheduler& scheduler, std::function<TimePoint()> now,
                       std::function<void*(Scheduler::ThreadId)> owner_of)
    : scheduler_(scheduler), now_(std::move(now)), owner_of_(std::move(owner_of)) {
  if (!owner_of_) {
    owner_of_ = [](Scheduler::ThreadId id) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id) + 1); };
  }
}

void Dispatcher::InitializeMutant(MutantObject& mutant) {
  InitializeEvent(mutant.header, DispatcherObject::Kind::kMutant, true);
  mutant.owner = nullptr;
  mutant.abandoned = 0;
}

void Dispatcher::InitializeSemaphore(SemaphoreObject& semaphore, std::int32_t count, std::int32_t limit) {
  InitializeEvent(semaphore.header, DispatcherObject::Kind::kSemaphore, false);
  semaphore.header.signal_state = count;
  semaphore.limit = limit;
}

std::int32_t Dispatcher::ReleaseMutant(MutantObject& mutant) {
  const std::int32_t previous = mutant.header.signal_state;
  if (++mutant.header.signal_state == 1) {
    mutant.owner = nullptr;
    ReleaseWaiters(mutant.header);
  }
  return previous;
}

std::int32_t Dispatcher::ReleaseSemaphore(SemaphoreObject& semaphore, std::int32_t adjustment) {
  const std::int32_t previous = semaphore.header.signal_state;
  semaphore.header.signal_state += adjustment;
  if (previous == 0) ReleaseWaiters(semaphore.header);
  return previous;
}

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

bool Dispatcher::Signaled(const DispatcherObject& object, Scheduler::ThreadId thread) const {
  if (object.kind == DispatcherObject::Kind::kMutant && object.signal_state <= 0) {
    return AsMutant(object).owner == owner_of_(thread);  // its owner acquires it again
  }
  return object.signal_state > 0;
}

bool Dispatcher::Satisfiable(const Waiter& w, std::uint32_t* index) const {
  if (w.type == WaitType::kAny) {
    for (const WaitBlock& b : w.blocks) {
      if (Signaled(*b.object, w.thread)) {
        *index = b.index;
        return true;
      }
    }
    return false;
  }
  *index = 0;
  return std::all_of(w.blocks.begin(), w.blocks.end(),
                     [&](const WaitBlock& b) { return Signaled(*b.object, w.thread); });
}

void Dispatcher::Consume(Waiter& w, std::uint32_t index) {
  const auto take = [&](DispatcherObject& o) {
    if (AutoResets(o.kind)) o.signal_state = 0;
    if (o.kind == DispatcherObject::Kind::kSemaphore) --o.signal_state;
    if (o.kind == DispatcherObject::Kind::kMutant) {
      --o.signal_state;
      AsMutant(o).owner = owner_of_(w.thread);
    }
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
  blocked_.erase(std::find(blocked_.begin(), blocked_.end(), &w));
  w.outcome = outcome;
  scheduler_.Wake(w.thread);
}

std::int32_t Dispatcher::SetEvent(DispatcherObject& event) {
  const std::int32_t previous = event.signal_state;
  event.signal_state = 1;
  if (previous != 0) return previous;  // nothing that waits on it can be satisfied now that was not before
  ReleaseWaiters(event);
  return previous;
}

void Dispatcher::ReleaseWaiters(DispatcherObject& object) {
  // The waits this object may complete, in the order they began. (Releasing one unlinks its wait
  // blocks, so they are listed first; the lists are members, reused, so a signal allocates
  // nothing once they have grown. Nothing a release does signals again.)
  std::vector<Waiter*>& candidates = candidates_;
  candidates.clear();
  for (WaitBlock* b = object.first; b != nullptr; b = b->next) candidates.push_back(b->waiter);
  if (!TakenByAWait(object.kind)) {
    // A notification object stays signaled: every wait it satisfies completes (a wait for all of
    // several objects may still consume another, synchronization, object on the way).
    for (Waiter* w : candidates) {
      std::uint32_t index = 0;
      if (!Satisfiable(*w, &index)) continue;
      Consume(*w, index);
      Release(*w, WaitOutcome{false, index});
    }
    return;
  }
  // One waiter takes the signal (a semaphore's count: one waiter a unit). Which one, among those
  // it satisfies, Windows does not promise: the scheduler's seeded choice.
  std::vector<Waiter*>& ready = ready_;
  while (object.signal_state > 0) {
    ready.clear();
    std::uint32_t index = 0;
    for (Waiter* w : candidates) {
      if (w != nullptr && Satisfiable(*w, &index)) ready.push_back(w);
    }
    if (ready.empty()) return;
    Waiter* chosen = ready[ready.size() == 1 ? 0 : scheduler_.Choose(static_cast<std::uint32_t>(ready.size()))];
    (void)Satisfiable(*chosen, &index);
    Consume(*chosen, index);
    Release(*chosen, WaitOutcome{false, index});
    std::replace(candidates.begin(), candidates.end(), chosen, static_cast<Waiter*>(nullptr));
  }
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
  w.thread = scheduler_.InThread() ? scheduler_.Current() : Scheduler::kNone;
  std::uint32_t index = 0;
  if (Satisfiable(w, &index)) {
    Consume(w, index);
    return WaitOutcome{false, index};
  }
  if (deadline && *deadline <= now_()) return WaitOutcome{true, 0};
  NDKSIM_CHECK(scheduler_.InThread(), "a wait that would block, outside a kernel thread");
  for (WaitBlock& b : w.blocks) Link(b);
  blocked_.push_back(&w);
  if (deadline) timed_.push_back(&w);
  scheduler_.Block(&Dispatcher::DescribeWait, &w);
  return w.outcome;
}

std::optional<Scheduler::ThreadId> Dispatcher::WaiterIn(const void* begin, const void* end) const {
  const auto first = reinterpret_cast<std::uintptr_t>(begin);
  const auto past = reinterpret_cast<std::uintptr_t>(end);
  for (const Waiter* w : blocked_) {
    for (const WaitBlock& b : w->blocks) {
      const auto at = reinterpret_cast<std::uintptr_t>(b.object);
      if (at >= first && at < past) return w->thread;
    }
  }
  return std::nullopt;
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
