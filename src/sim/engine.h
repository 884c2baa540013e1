// SPDX-License-Identifier: MIT
// The engine: the one event loop that runs a fabric, and its two drivers. Stepped, the caller's
// thread runs it inside RunUntilIdle/RunFor/RunUntil. Threaded, a thread of its own runs the same
// loop (Start/Stop) while application threads post, poll and make control calls; those reach it
// through the doorbell inboxes and the control mailbox (hw::ControlSerializer).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "hwmodel/device.h"
#include "hwmodel/host.h"
#include "ndksim/fabric.h"
#include "ndksim/time.h"

namespace ndksim::hw {
class EventQueue;
class Nic;
}  // namespace ndksim::hw

namespace ndksim::sim {

class Engine final : public hw::ControlSerializer {
 public:
  explicit Engine(hw::EventQueue& events);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Wiring: the NIC of node `nic.Id()` (ids are dense, in order) sends its inbox's first doorbell
  // here. Call with the engine stopped.
  void AddNic(hw::Nic& nic);

  // ---- stepped driver (the caller's thread; ConfigurationError while the thread runs) ----
  std::uint64_t RunUntilIdle();
  std::uint64_t RunFor(Duration d);
  RunResult RunUntil(const std::function<bool()>& done, Duration limit);

  // ---- threaded driver ----
  void Start(const EngineThreadConfig& config);
  void Stop(StopMode mode);
  bool Running() const { return running_.load(std::memory_order_acquire); }
  EngineThreadStats ThreadStats() const;

  // hw::ControlSerializer: the control mailbox.
  void Run(void (*fn)(void*), void* context) override;
  // Runs `fn()` serialised with the engine (Run) and returns its result.
  template <typename Fn>
  auto Serialize(Fn&& fn) {
    return hw::SerializeThrough(this, std::forward<Fn>(fn));
  }

 private:
  struct Command {
    void (*fn)(void*);
    void* context;
    bool done = false;
    std::exception_ptr error;
  };

  static void OnInboxReady(void* context, hw::DoorbellInbox& inbox);
  // Delivers the doorbells written so far into the inboxes the engine watches (and those that
  // asked to be watched), node by node in node order: the nodes without traffic are not touched.
  // `stop_when_empty` (stepped runs): an inbox found empty stops being watched at once, so that a
  // run's events look only at inboxes that have just had doorbells; its next doorbell reports
  // itself (the hook) before the next event runs.
  void DrainDoorbells(bool stop_when_empty = false) {
    // relaxed: a cheap look first (most events find nothing to do); DrainInboxes orders the rest.
    if (stopped_.empty() && ready_.load(std::memory_order_relaxed) == nullptr) {
      if (watching_.empty()) return;
      // Threaded runs keep a quiet inbox watched: it is looked into here, inline, and the out-of-line
      // drain runs only when one has something waiting.
      if (!stop_when_empty && NoneWaiting()) return;
    }
    DrainInboxes(stop_when_empty);
  }
  // True when no watched inbox has a doorbell waiting (each look counts as a visit); false leaves
  // the looking to DrainInboxes.
  bool NoneWaiting() {
    for (const hw::DoorbellInbox* inbox : watching_) {
      if (inbox->Pending()) return false;
    }
    stats_.inbox_visits += watching_.size();
    return true;
  }
  void DrainInboxes(bool stop_when_empty);
  // Stops watching every inbox that has no doorbell waiting; true if none had one. Inboxes it
  // stopped watching are looked at again by RecheckStopped.
  bool StopWatching();
  void RecheckStopped();
  void SortWatchingByNode();  // node order: as if every node were looked at
  // Stepped runs end with every inbox unwatched; true if nothing is left to do.
  bool StopWatchingStepped();
  void RequireStepped(const char* call) const;

  // The thread's loop and its parts.
  void Loop();
  bool InputWaiting() const;  // a doorbell or a command is waiting
  bool HasWork() const;       // ... or a stop request
  void RunCommands();         // the mailbox, in the order the commands came
  void Wake();                // any thread: unparks the engine if it is parked
  // Parks until woken, or until `deadline` if it is set; first spins for the configured time
  // when `spin` is true.
  void Idle(bool spin, const std::chrono::steady_clock::time_point* deadline);
  // Paced mode: the simulated time the wall clock has reached.
  TimePoint PacedNow() const;

  hw::EventQueue& events_;
  std::vector<hw::Nic*> nics_;

  // Inboxes that asked to be watched, pushed by the writing thread (a lock-free stack: many pushers,
  // and the engine takes the whole stack at once, so no pop races a push of the same entry).
  std::atomic<hw::DoorbellInbox*> ready_{nullptr};
  std::vector<hw::DoorbellInbox*> watching_;  // engine side, in node order
  std::vector<hw::DoorbellInbox*> stopped_;   // engine side: unwatched since the last park

  // The thread.
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<std::thread::id> engine_thread_{};
  std::atomic<int> stop_{0};  // 0, or 1 + StopMode
  EngineThreadConfig config_;
  std::chrono::steady_clock::time_point wall_origin_;
  TimePoint simulated_origin_{};

  // The control mailbox.
  std::mutex mailbox_mutex_;
  std::condition_variable mailbox_done_;
  std::vector<Command*> mailbox_;
  std::vector<Command*> running_commands_;  // engine side, reused
  std::atomic<bool> mailbox_pending_{false};

  // Parking.
  std::mutex park_mutex_;
  std::condition_variable park_cv_;
  std::atomic<bool> parked_{false};
  bool wake_ = false;  // guarded by park_mutex_

  // Statistics of the thread (engine side; read after Stop or through the mailbox).
  EngineThreadStats stats_;
};

}  // namespace ndksim::sim
