// SPDX-License-Identifier: MIT
// The engine's loop, driven by the caller (stepped) or by its own thread (threaded).
#include "sim/engine.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <string>

#include "common/cpu_relax.h"
#include "hwmodel/event_queue.h"
#include "hwmodel/nic.h"

namespace ndksim::sim {

namespace {

// How long a parked engine waits before it looks again at the inboxes it stopped watching.
constexpr std::chrono::microseconds kRecheckAfter{200};

}  // namespace

Engine::Engine(hw::EventQueue& events) : events_(events) {}

Engine::~Engine() {
  if (Running()) Stop(StopMode::kNow);
}

void Engine::AddNic(hw::Nic& nic) {
  RequireStepped("Fabric::AddNode");
  NDKSIM_CHECK(nic.Id() == nics_.size(), "node {} added as the fabric's node {}", nic.Id(), nics_.size());
  nics_.push_back(&nic);
  watching_.reserve(nics_.size());
  stopped_.reserve(nics_.size());
  nic.Inbox().SetReadyHook(&Engine::OnInboxReady, this);
}

void Engine::OnInboxReady(void* context, hw::DoorbellInbox& inbox) {
  auto* engine = static_cast<Engine*>(context);
  // relaxed: only a first guess for the CAS, which carries the ordering.
  hw::DoorbellInbox* head = engine->ready_.load(std::memory_order_relaxed);
  do {
    inbox.next_ready = head;
    // seq_cst: publishes next_ready to the engine's exchange in DrainDoorbells, and orders this
    // push before the look at parked_ in Wake (against the engine's store of parked_ and its
    // look at ready_ in HasWork: one of the two sees the other).
  } while (!engine->ready_.compare_exchange_weak(head, &inbox, std::memory_order_seq_cst, std::memory_order_relaxed));
  engine->Wake();
}

void Engine::DrainInboxes(bool stop_when_empty) {
  // Inboxes unwatched since the engine last idled are looked at once more (see Idle).
  if (!stopped_.empty()) RecheckStopped();
  // relaxed: a cheap look first; most events find no newly ready inbox.
  if (ready_.load(std::memory_order_relaxed) != nullptr) {
    // acquire: pairs with the CAS in OnInboxReady; makes each inbox's next_ready visible.
    for (hw::DoorbellInbox* i = ready_.exchange(nullptr, std::memory_order_acquire); i != nullptr;
         i = i->next_ready) {
      watching_.push_back(i);
    }
    SortWatchingByNode();
  }
  if (watching_.empty()) return;
  stats_.inbox_visits += watching_.size();
  std::size_t kept = 0;
  for (hw::DoorbellInbox* inbox : watching_) {
    if (nics_[inbox->Node()]->DrainDoorbells() != 0) {
      ++stats_.doorbell_drains;
      watching_[kept++] = inbox;  // a burst of posts tends to go on: looked at again next time
    } else if (!stop_when_empty || inbox->StopWatching()) {
      watching_[kept++] = inbox;
    }
  }
  // Stepped: the one thread that writes doorbells is this one, so an inbox that stopped being
  // watched has nothing waiting that its next write will not report.
  watching_.resize(kept);
}

bool Engine::StopWatching() {
  std::size_t kept = 0;
  for (hw::DoorbellInbox* inbox : watching_) {
    if (inbox->StopWatching()) {
      watching_[kept++] = inbox;
    } else {
      stopped_.push_back(inbox);
    }
  }
  watching_.resize(kept);
  return kept == 0;
}

void Engine::RecheckStopped() {
  bool added = false;
  for (hw::DoorbellInbox* inbox : stopped_) {
    if (inbox->Recheck()) {
      watching_.push_back(inbox);
      added = true;
    }
  }
  stopped_.clear();
  if (added) SortWatchingByNode();
}

void Engine::SortWatchingByNode() {
  std::sort(watching_.begin(), watching_.end(),
            [](const hw::DoorbellInbox* a, const hw::DoorbellInbox* b) { return a->Node() < b->Node(); });
}

void Engine::RequireStepped(const char* call) const {
  if (Running()) {
    throw ConfigurationError(std::string(call) +
                             ": the engine runs on its own thread (Fabric::Start); call Fabric::Stop first");
  }
}

// ---- stepped ---------------------------------------------------------------------------------

bool Engine::StopWatchingStepped() {
  // One thread: nothing races the inboxes, so nothing is left to look at again later.
  const bool idle = StopWatching();
  RecheckStopped();
  return idle && watching_.empty();
}

std::uint64_t Engine::RunUntilIdle() {
  RequireStepped("Fabric::RunUntilIdle");
  std::uint64_t n = 0;
  for (;;) {
    DrainDoorbells(/*stop_when_empty=*/true);
    if (events_.Empty() && StopWatchingStepped() && events_.Empty()) return n;
    if (events_.Empty()) continue;
    events_.RunOne();
    ++n;
  }
}

std::uint64_t Engine::RunFor(Duration d) {
  RequireStepped("Fabric::RunFor");
  const TimePoint end = events_.Now() + d;
  std::uint64_t n = 0;
  for (;;) {
    DrainDoorbells(/*stop_when_empty=*/true);
    if (events_.Empty() || events_.NextTime() > end) break;
    events_.RunOne();
    ++n;
  }
  events_.AdvanceTo(end);
  StopWatchingStepped();
  return n;
}

RunResult Engine::RunUntil(const std::function<bool()>& done, Duration limit) {
  RequireStepped("Fabric::RunUntil");
  const TimePoint end = events_.Now() + limit;
  // Whatever way the run ends, the inboxes are left unwatched: the next doorbell reports itself.
  // The predicate is asked once more when the run ends otherwise (the last event may have made it
  // hold); once it held it is not asked again (it may have consumed what it looked for).
  auto stop = [&](RunStop otherwise) {
    StopWatchingStepped();
    return RunResult{done() ? RunStop::kDone : otherwise};
  };
  for (;;) {
    if (done()) {
      StopWatchingStepped();
      return RunResult{RunStop::kDone};
    }
    DrainDoorbells(/*stop_when_empty=*/true);
    if (events_.Empty()) return stop(RunStop::kIdle);
    if (events_.NextTime() > end) {
      events_.AdvanceTo(end);
      return stop(RunStop::kTimeLimit);
    }
    events_.RunOne();
  }
}

// ---- threaded --------------------------------------------------------------------------------

void Engine::Start(const EngineThreadConfig& config) {
  RequireStepped("Fabric::Start");
  if (!(config.pace >= 0) || !std::isfinite(config.pace)) {
    throw ConfigurationError("EngineThreadConfig::pace must be 0 (as fast as possible) or a positive ratio");
  }
  if (config.spin.count() < 0) throw ConfigurationError("EngineThreadConfig::spin must not be negative");
  if (config.cpu < -1 || config.cpu >= CPU_SETSIZE) {
    throw ConfigurationError("EngineThreadConfig::cpu must be -1 (any) or a CPU number below " +
                             std::to_string(CPU_SETSIZE) + ", got " + std::to_string(config.cpu));
  }
  // The thread pins itself first and says whether it could; only then is the engine set up and
  // told to run, so a CPU the process may not use leaves everything as it was.
  std::promise<int> pinned;
  std::future<int> pin_result = pinned.get_future();
  std::promise<void> go;
  thread_ = std::thread([this, cpu = config.cpu, pinned = std::move(pinned), run = go.get_future()]() mutable {
    int error = 0;
    if (cpu != -1) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      error = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    pinned.set_value(error);
    if (error != 0) return;
    run.wait();
    engine_thread_.store(std::this_thread::get_id(), std::memory_order_release);
    Loop();
  });
  if (const int error = pin_result.get(); error != 0) {
    thread_.join();
    throw ConfigurationError("EngineThreadConfig::cpu: CPU " + std::to_string(config.cpu) +
                             " is not one this process may run on (pthread_setaffinity_np: error " +
                             std::to_string(error) + ")");
  }
  config_ = config;
  stats_ = EngineThreadStats{};
  stop_.store(0, std::memory_order_relaxed);
  wall_origin_ = std::chrono::steady_clock::now();
  simulated_origin_ = events_.Now();
  // release: pairs with the acquire loads in Running; a thread that sees the engine running
  // sends its control calls to the mailbox.
  running_.store(true, std::memory_order_release);
  go.set_value();  // the promise's release orders the set-up above before the thread's Loop
}

void Engine::Stop(StopMode mode) {
  if (!Running()) return;
  NDKSIM_CHECK(std::this_thread::get_id() != engine_thread_.load(std::memory_order_acquire),
               "Fabric::Stop called from the engine's own thread (a consumer callback)");
  // seq_cst: the engine's HasWork sees it, or this Wake finds the engine parked.
  stop_.store(1 + static_cast<int>(mode), std::memory_order_seq_cst);
  Wake();
  thread_.join();
  engine_thread_.store(std::thread::id{}, std::memory_order_release);
  running_.store(false, std::memory_order_release);
  // Commands that came after the thread's last look run here, on the caller's thread.
  RunCommands();
}

EngineThreadStats Engine::ThreadStats() const { return stats_; }

bool Engine::InputWaiting() const {
  // seq_cst: see Idle.
  if (ready_.load(std::memory_order_seq_cst) != nullptr || mailbox_pending_.load(std::memory_order_seq_cst)) {
    return true;
  }
  for (const hw::DoorbellInbox* inbox : watching_) {
    if (inbox->Pending()) return true;
  }
  return false;
}

bool Engine::HasWork() const {
  // seq_cst: against the seq_cst pushes and stores of OnInboxReady, Run and Stop (see Idle).
  return InputWaiting() || stop_.load(std::memory_order_seq_cst) != 0;
}

void Engine::Wake() {
  // seq_cst: see Idle.
  if (!parked_.load(std::memory_order_seq_cst)) return;
  const std::lock_guard lock(park_mutex_);
  wake_ = true;
  park_cv_.notify_one();
}

void Engine::Idle(bool spin, const std::chrono::steady_clock::time_point* deadline) {
  using Clock = std::chrono::steady_clock;
  RecheckStopped();
  if (spin && config_.spin.count() > 0) {
    const Clock::time_point until = Clock::now() + config_.spin;
    for (std::uint32_t i = 0;; ++i) {
      if (HasWork()) return;
      if ((i & 63) == 63) {
        const Clock::time_point now = Clock::now();
        if (now >= until || (deadline != nullptr && now >= *deadline)) break;
      }
      CpuRelax();
    }
  }
  // Before parking, the engine stops watching its inboxes, so that the next doorbell into each
  // reports itself (and wakes it). If one had doorbells after all, there is work: no parking.
  if (!StopWatching()) return;
  // Dekker's pattern: the engine stores parked_ then looks for work; a producer publishes its
  // work then looks at parked_. With every access seq_cst, at least one of them sees the other:
  // the engine finds the work, or the producer finds the engine parked and wakes it.
  parked_.store(true, std::memory_order_seq_cst);
  if (!HasWork()) {
    std::unique_lock lock(park_mutex_);
    ++stats_.parks;
    // A doorbell written as the engine stopped watching may have missed both the flag and the
    // engine's last look (Write has no fence): the first park after stopping is short, and the
    // engine looks at those inboxes again when it ends.
    using Clock = std::chrono::steady_clock;
    const Clock::time_point recheck = Clock::now() + kRecheckAfter;
    const Clock::time_point* until = deadline;
    if (!stopped_.empty() && (until == nullptr || recheck < *until)) until = &recheck;
    if (until == nullptr) {
      park_cv_.wait(lock, [this] { return wake_; });
    } else {
      park_cv_.wait_until(lock, *until, [this] { return wake_; });
    }
    wake_ = false;
  }
  parked_.store(false, std::memory_order_seq_cst);
  RecheckStopped();
}

TimePoint Engine::PacedNow() const {
  const auto wall = std::chrono::steady_clock::now() - wall_origin_;
  const double simulated_ps =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count()) * 1000.0 / config_.pace;
  return simulated_origin_ + Picoseconds(static_cast<std::int64_t>(simulated_ps));
}

void Engine::Loop() {
  const bool paced = config_.pace > 0;
  for (;;) {
    if (paced) {
      // Simulated time follows the wall clock: doorbells and commands that arrived while the
      // engine waited happen at the simulated time the wall clock has reached.
      const TimePoint now = PacedNow();
      const TimePoint target = events_.Empty() ? now : std::min(now, events_.NextTime());
      if (target > events_.Now()) events_.AdvanceTo(target);
    }
    if (mailbox_pending_.load(std::memory_order_acquire)) RunCommands();
    // acquire: pairs with Stop's store; the mode travels with the flag.
    const int stop = stop_.load(std::memory_order_acquire);
    if (stop == 1 + static_cast<int>(StopMode::kNow)) break;
    DrainDoorbells();
    if (!events_.Empty()) {
      if (paced && events_.NextTime() > events_.Now()) {
        // Wait for the wall clock to reach the next event, unless something arrives first.
        const auto wait = std::chrono::nanoseconds(static_cast<std::int64_t>(
            static_cast<double>((events_.NextTime() - simulated_origin_).count()) / 1000.0 * config_.pace));
        const std::chrono::steady_clock::time_point deadline = wall_origin_ + wait;
        if (std::chrono::steady_clock::now() < deadline) {
          Idle(/*spin=*/true, &deadline);
          continue;
        }
      }
      events_.RunOne();
      // A busy engine still looks, now and then, at the inboxes it stopped watching (Idle).
      if ((++stats_.events & 1023) == 0) RecheckStopped();
      continue;
    }
    if (stop == 1 + static_cast<int>(StopMode::kDrain)) {
      // Drained: nothing scheduled, and no doorbell or command came since the loop looked.
      if (StopWatching() && events_.Empty() && !InputWaiting()) break;
      continue;
    }
    Idle(/*spin=*/true, nullptr);
  }
}

void Engine::Run(void (*fn)(void*), void* context) {
  if (!Running() || std::this_thread::get_id() == engine_thread_.load(std::memory_order_acquire)) {
    fn(context);
    return;
  }
  Command command{fn, context, false, nullptr};
  {
    const std::lock_guard lock(mailbox_mutex_);
    mailbox_.push_back(&command);
    // seq_cst: see Idle.
    mailbox_pending_.store(true, std::memory_order_seq_cst);
  }
  Wake();
  {
    std::unique_lock lock(mailbox_mutex_);
    mailbox_done_.wait(lock, [&command] { return command.done; });
  }
  if (command.error) std::rethrow_exception(command.error);
}

void Engine::RunCommands() {
  {
    const std::lock_guard lock(mailbox_mutex_);
    running_commands_.swap(mailbox_);
    mailbox_pending_.store(false, std::memory_order_seq_cst);
  }
  if (running_commands_.empty()) return;
  for (Command* c : running_commands_) {
    try {
      c->fn(c->context);
    } catch (...) {
      c->error = std::current_exception();
    }
    ++stats_.commands;
  }
  {
    const std::lock_guard lock(mailbox_mutex_);
    for (Command* c : running_commands_) c->done = true;
  }
  mailbox_done_.notify_all();
  running_commands_.clear();
}

}  // namespace ndksim::sim
