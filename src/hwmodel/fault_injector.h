// SPDX-License-Identifier: MIT
// The fault injector block: the rules of include/ndksim/faults.h and the decision each hook point
// asks for. One injector serves the whole fabric (it lives with the network). A hook first tests
// Armed(point), one load, so an unused point costs nothing more.
#pragma once

#include <cstdint>
#include <vector>

#include "ndksim/faults.h"
#include "ndksim/time.h"

namespace ndksim {
class Tracer;
}

namespace ndksim::hw {

// What a hook knows about the event it is about to let happen.
struct FaultEvent {
  std::uint32_t node = 0;          // where the hook runs
  std::uint32_t qpn = 0;           // the QP concerned (0: none)
  std::uint32_t peer = 0;          // kWire: the destination node
  PacketClass packet = PacketClass::kAny;  // kWire: the packet's class
};

class FaultInjector {
 public:
  explicit FaultInjector(std::uint64_t seed = 1) : seed_(seed) {}

  // Rules act in the order they were added: the first that acts on an event decides it, and the
  // rules after it do not see that event. Each rule draws from its own seeded stream, so adding
  // a rule never changes the choices of the others.
  void Reseed(std::uint64_t seed) { seed_ = seed; }
  std::uint32_t Add(const FaultRule& rule);  // the rule must be valid (Validate)
  bool Remove(std::uint32_t id);             // false for an unknown id
  bool Known(std::uint32_t id) const { return id < rules_.size(); }
  FaultStats Stats(std::uint32_t id) const { return rules_.at(id).stats; }
  const FaultRule& Rule(std::uint32_t id) const { return rules_.at(id).rule; }
  std::uint32_t Count() const { return static_cast<std::uint32_t>(rules_.size()); }

  bool Armed(FaultPoint point) const { return (armed_ >> static_cast<unsigned>(point)) & 1u; }
  // The rule that acts on `event` at `point`, or nullptr; counts and traces the decision.
  const FaultRule* Decide(FaultPoint point, const FaultEvent& event, TimePoint now, Tracer& tracer);

 private:
  struct Slot {
    FaultRule rule;
    FaultStats stats;
    std::uint64_t rng = 0;  // splitmix64 state
    bool active = true;
  };
  bool Matches(const Slot& s, FaultPoint point, const FaultEvent& e, TimePoint now) const;
  void Rearm();

  std::uint64_t seed_;
  std::vector<Slot> rules_;  // index = rule id
  std::uint32_t armed_ = 0;  // bit per point that has an active rule
};

}  // namespace ndksim::hw
