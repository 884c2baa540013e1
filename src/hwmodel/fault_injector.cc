// SPDX-License-Identifier: MIT
// Fault rules: validation, matching, seeded decisions, counting and tracing.
#include "fault_injector.h"

#include "hwmodel/noise.h"
#include "ndksim/trace.h"

namespace ndksim {

std::vector<std::string> Validate(const FaultRule& rule) {
  std::vector<std::string> errors;
  if (static_cast<std::size_t>(rule.action) >= kFaultActionCount) {
    errors.emplace_back("action: not a fault action");
    return errors;
  }
  const FaultPoint point = rule.Point();
  if (point == FaultPoint::kAdapter && !rule.match.node) errors.emplace_back("match.node: fail-adapter needs a node");
  if (point == FaultPoint::kAdapter && rule.match.qpn) errors.emplace_back("match.qpn: not for fail-adapter");
  if (point != FaultPoint::kWire && (rule.match.link_of || rule.match.packet != PacketClass::kAny)) {
    errors.emplace_back("match: link_of and packet apply to wire actions (drop, corrupt, delay) only");
  }
  if (static_cast<std::size_t>(rule.match.packet) >= kPacketClassCount) errors.emplace_back("match.packet: not a packet class");
  if (!(rule.probability > 0.0 && rule.probability <= 1.0)) errors.emplace_back("probability: must be in (0, 1]");
  if (rule.count == 0) errors.emplace_back("count: must be at least 1 (kEveryTime: no limit)");
  if (rule.until <= rule.from) errors.emplace_back("until: must be after from");
  if (rule.action == FaultAction::kDelay && rule.delay <= Duration::zero()) {
    errors.emplace_back("delay: must be positive for kDelay");
  }
  if (rule.action != FaultAction::kDelay && rule.delay != Duration::zero()) {
    errors.emplace_back("delay: only kDelay takes a delay");
  }
  return errors;
}

FaultRule LinkDown(std::uint32_t node, TimePoint from, TimePoint until) {
  FaultRule r;
  r.action = FaultAction::kDrop;
  r.match.link_of = node;
  r.from = from;
  r.until = until;
  r.count = kEveryTime;
  return r;
}

FaultRule& FaultRule::Of(PacketClass packets) {
  match.packet = packets;
  return *this;
}
FaultRule& FaultRule::Times(std::uint64_t n) {
  count = n;
  return *this;
}
FaultRule& FaultRule::Always() {
  count = kEveryTime;
  return *this;
}
FaultRule& FaultRule::After(std::uint64_t events) {
  skip = events;
  return *this;
}
FaultRule& FaultRule::WithProbability(double p) {
  probability = p;
  return *this;
}
FaultRule& FaultRule::Between(TimePoint start, TimePoint end) {
  from = start;
  until = end;
  return *this;
}

namespace {
FaultRule RuleFor(FaultAction action) {
  FaultRule r;
  r.action = action;
  return r;
}
}  // namespace

FaultRule DropPackets(PacketClass packets) { return RuleFor(FaultAction::kDrop).Of(packets); }
FaultRule CorruptPackets(PacketClass packets) { return RuleFor(FaultAction::kCorrupt).Of(packets); }
FaultRule DelayPackets(Duration delay, PacketClass packets) {
  FaultRule r = RuleFor(FaultAction::kDelay).Of(packets);
  r.delay = delay;
  return r;
}
FaultRule LoseDoorbells() { return RuleFor(FaultAction::kLose); }
FaultRule ForceRnr() { return RuleFor(FaultAction::kForceRnr); }
FaultRule InvalidateTokenInFlight() { return RuleFor(FaultAction::kInvalidateToken); }
FaultRule OverrunCq() { return RuleFor(FaultAction::kOverrun); }
FaultRule FailDmaRead() { return RuleFor(FaultAction::kFailDma); }

}  // namespace ndksim

namespace ndksim::hw {

std::uint32_t FaultInjector::Add(const FaultRule& rule) {
  const auto id = static_cast<std::uint32_t>(rules_.size());
  Slot s;
  s.rule = rule;
  // Each rule its own stream: the fabric seed and the rule's id.
  s.rng = seed_ ^ (0x51ed270b27fd4a4full * (std::uint64_t{id} + 1));
  rules_.push_back(s);
  Rearm();
  return id;
}

bool FaultInjector::Remove(std::uint32_t id) {
  if (id >= rules_.size()) return false;
  rules_[id].active = false;
  Rearm();
  return true;
}

void FaultInjector::Rearm() {
  armed_ = 0;
  for (const Slot& s : rules_) {
    if (s.active) armed_ |= 1u << static_cast<unsigned>(s.rule.Point());
  }
}

bool FaultInjector::Matches(const Slot& s, FaultPoint point, const FaultEvent& e, TimePoint now) const {
  const FaultRule& r = s.rule;
  if (!s.active || r.Point() != point || now < r.from || now >= r.until) return false;
  if (s.stats.fired >= r.count) return false;
  const FaultMatch& m = r.match;
  if (m.node && *m.node != e.node) return false;
  if (m.link_of && *m.link_of != e.node && *m.link_of != e.peer) return false;
  if (m.qpn && *m.qpn != e.qpn) return false;
  if (m.packet != PacketClass::kAny && m.packet != e.packet) return false;
  return true;
}

const FaultRule* FaultInjector::Decide(FaultPoint point, const FaultEvent& event, TimePoint now, Tracer& tracer) {
  for (std::size_t id = 0; id < rules_.size(); ++id) {
    Slot& s = rules_[id];
    if (!Matches(s, point, event, now)) continue;
    const std::uint64_t seen = s.stats.considered++;
    if (seen < s.rule.skip) continue;
    if (s.rule.probability < 1.0) {
      const double draw = hw::UnitInterval(hw::SplitMix64Next(s.rng));
      if (draw >= s.rule.probability) continue;
    }
    ++s.stats.fired;
    NDKSIM_TRACE(tracer, now, event.node, Faults, "rule {} {} at {} qp {}", id, Name(s.rule.action), Name(point),
                 event.qpn);
    return &s.rule;
  }
  return nullptr;
}

}  // namespace ndksim::hw
