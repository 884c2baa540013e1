// SPDX-License-Identifier: MIT
// Unit tests of the hardware-model blocks, driven by a hand-written test driver (no provider).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "hw_test_driver.h"
#include "hwmodel/pcie_link.h"
#include "hwmodel/responder.h"
#include "hwmodel/translation.h"

namespace ndksim::hw {
namespace {

using testing::RawCq;
using testing::Sge;
using testing::PcieOnlyProfile;
using testing::TwoNodeRig;

// ---- clock and event queue ----

TEST(EventQueue, RunsEventsInTimeOrder) {
  EventQueue q;
  std::vector<int> order;
  q.Schedule(TimePoint{Nanoseconds(20)}, EventPriority::kDevice, [&] { order.push_back(2); });
  q.Schedule(TimePoint{Nanoseconds(10)}, EventPriority::kDevice, [&] { order.push_back(1); });
  while (!q.Empty()) q.RunOne();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(q.Now(), TimePoint{Nanoseconds(20)});
}

TEST(EventQueue, BreaksTimeTiesByPriorityThenInsertionOrder) {
  EventQueue q;
  std::vector<int> order;
  const TimePoint t{Nanoseconds(5)};
  q.Schedule(t, EventPriority::kTimer, [&] { order.push_back(3); });
  q.Schedule(t, EventPriority::kDevice, [&] { order.push_back(1); });
  q.Schedule(t, EventPriority::kDevice, [&] { order.push_back(2); });
  q.Schedule(t, EventPriority::kHost, [&] { order.push_back(0); });
  while (!q.Empty()) q.RunOne();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(EventQueue, EventsScheduledWhileRunningKeepOrder) {
  EventQueue q;
  std::vector<int> order;
  q.Schedule(TimePoint{Nanoseconds(1)}, EventPriority::kDevice, [&] {
    order.push_back(1);
    q.ScheduleAfter(Duration::zero(), EventPriority::kDevice, [&] { order.push_back(3); });
  });
  q.Schedule(TimePoint{Nanoseconds(1)}, EventPriority::kDevice, [&] { order.push_back(2); });
  while (!q.Empty()) q.RunOne();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

// Events for "now" wait in FIFOs, later ones in the heap: an event the heap brings due must still
// run before one scheduled for that instant afterwards at the same priority, and after one of a
// lower priority value scheduled afterwards.
TEST(EventQueue, EventsBroughtDueFromTheHeapKeepTheirOrderAgainstNewOnes) {
  EventQueue q;
  std::vector<int> order;
  const TimePoint t{Nanoseconds(7)};
  q.Schedule(t, EventPriority::kDevice, [&] {
    order.push_back(1);
    q.Schedule(t, EventPriority::kDevice, [&] { order.push_back(4); });
    q.Schedule(t, EventPriority::kHost, [&] { order.push_back(2); });
  });
  q.Schedule(t, EventPriority::kDevice, [&] { order.push_back(3); });
  q.Schedule(t, EventPriority::kTimer, [&] { order.push_back(5); });
  while (!q.Empty()) q.RunOne();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(EventQueue, ACancelledEventDoesNotRunAndDoesNotMoveTheClock) {
  EventQueue q;
  bool ran = false;
  const EventId id = q.Schedule(TimePoint{Microseconds(500)}, EventPriority::kTimer, [&] { ran = true; });
  q.Schedule(TimePoint{Nanoseconds(3)}, EventPriority::kDevice, [] {});
  EXPECT_EQ(q.Pending(), 2u);
  EXPECT_TRUE(q.Cancel(id));
  EXPECT_EQ(q.Pending(), 1u);
  while (!q.Empty()) q.RunOne();
  EXPECT_FALSE(ran);
  EXPECT_EQ(q.Now(), TimePoint{Nanoseconds(3)});
}

TEST(EventQueue, CancellingTheEarliestEventMovesNextTimeToTheNextLiveOne) {
  EventQueue q;
  const EventId first = q.Schedule(TimePoint{Nanoseconds(10)}, EventPriority::kDevice, [] {});
  q.Schedule(TimePoint{Nanoseconds(20)}, EventPriority::kDevice, [] {});
  ASSERT_EQ(q.NextTime(), TimePoint{Nanoseconds(10)});
  ASSERT_TRUE(q.Cancel(first));
  EXPECT_EQ(q.NextTime(), TimePoint{Nanoseconds(20)});
}

TEST(EventQueue, CancellingEveryEventLeavesTheQueueEmpty) {
  EventQueue q;
  const EventId now = q.Schedule(TimePoint{}, EventPriority::kDevice, [] {});
  const EventId later = q.Schedule(TimePoint{Nanoseconds(1)}, EventPriority::kDevice, [] {});
  EXPECT_TRUE(q.Cancel(later));
  EXPECT_TRUE(q.Cancel(now));
  EXPECT_TRUE(q.Empty());
  q.AdvanceTo(TimePoint{Nanoseconds(5)});  // nothing live is in the way
  EXPECT_EQ(q.Now(), TimePoint{Nanoseconds(5)});
}

// An id names one scheduling: once its event ran (or was cancelled) and its slot was taken by
// another event, cancelling the old id must not touch the new event.
TEST(EventQueue, AnOldIdDoesNotCancelTheEventThatReusedItsSlot) {
  EventQueue q;
  const EventId old = q.Schedule(TimePoint{}, EventPriority::kDevice, [] {});
  q.RunOne();
  bool ran = false;
  const EventId fresh = q.Schedule(TimePoint{}, EventPriority::kDevice, [&] { ran = true; });
  ASSERT_EQ(fresh.slot, old.slot);  // the slot was reused, under a new generation
  EXPECT_FALSE(q.Cancel(old));
  EXPECT_FALSE(q.Cancel(EventId{}));
  q.RunOne();
  EXPECT_TRUE(ran);
}

TEST(EventQueue, AnEventCannotCancelItselfWhileItRuns) {
  EventQueue q;
  EventId self;
  bool cancelled = true;
  self = q.Schedule(TimePoint{}, EventPriority::kDevice, [&] { cancelled = q.Cancel(self); });
  q.RunOne();
  EXPECT_FALSE(cancelled);
  EXPECT_TRUE(q.Empty());
}

// A cancelled event stays queued until it reaches a front; the pop that brings it there drops it,
// so NextTime names a live event. Three ways to expose it: a due event runs (the FIFO), the
// clock jumps to a later event (calendar or heap), the clock is moved (AdvanceTo).
TEST(EventQueue, RunningADueEventDropsTheCancelledOneBehindIt) {
  EventQueue q;
  q.Schedule(TimePoint{}, EventPriority::kDevice, [] {});
  const EventId behind = q.Schedule(TimePoint{}, EventPriority::kDevice, [] {});
  q.Schedule(TimePoint{Nanoseconds(10)}, EventPriority::kDevice, [] {});
  ASSERT_TRUE(q.Cancel(behind));
  q.RunOne();
  EXPECT_EQ(q.NextTime(), TimePoint{Nanoseconds(10)});
}

TEST(EventQueue, JumpingToALaterEventDropsTheCancelledOneAfterIt) {
  EventQueue q;
  q.Schedule(TimePoint{Nanoseconds(10)}, EventPriority::kDevice, [] {});
  const EventId after = q.Schedule(TimePoint{Nanoseconds(20)}, EventPriority::kDevice, [] {});
  q.Schedule(TimePoint{Microseconds(900)}, EventPriority::kTimer, [] {});  // far: the heap
  ASSERT_TRUE(q.Cancel(after));
  q.RunOne();
  EXPECT_EQ(q.Now(), TimePoint{Nanoseconds(10)});
  EXPECT_EQ(q.NextTime(), TimePoint{Microseconds(900)});
}

TEST(EventQueue, MovingTheClockDropsTheCancelledEventThatBecomesTheNextOne) {
  EventQueue q;
  q.Schedule(TimePoint{Nanoseconds(10)}, EventPriority::kDevice, [] {});
  const EventId after = q.Schedule(TimePoint{Nanoseconds(20)}, EventPriority::kDevice, [] {});
  q.Schedule(TimePoint{Nanoseconds(30)}, EventPriority::kDevice, [] {});
  ASSERT_TRUE(q.Cancel(after));
  q.AdvanceTo(TimePoint{Nanoseconds(10)});
  q.RunOne();
  EXPECT_EQ(q.NextTime(), TimePoint{Nanoseconds(30)});
}

TEST(EventQueue, MovingTheClockPastALiveEventIsAnInvariantViolation) {
  EXPECT_DEATH(
      {
        EventQueue q;
        q.Schedule(TimePoint{Nanoseconds(10)}, EventPriority::kDevice, [] {});
        q.AdvanceTo(TimePoint{Nanoseconds(11)});
      },
      "invariant violated");
}

TEST(EventQueue, SchedulingInThePastIsAnInvariantViolation) {
  EXPECT_DEATH(
      {
        EventQueue q;
        q.AdvanceTo(TimePoint{Nanoseconds(10)});
        q.Schedule(TimePoint{Nanoseconds(5)}, EventPriority::kDevice, [] {});
      },
      "invariant violated");
}

// Near events wait in the calendar's buckets and far ones in the heap; a bucket that fills up
// spills into the heap. Whatever tier holds them, events run in (time, priority, scheduling) order.
TEST(EventQueue, ABucketThatFillsUpSpillsIntoTheHeapWithoutChangingTheOrder) {
  EventQueue q;
  std::vector<int> order;
  // 24 events inside one 16-ns bucket, scheduled latest first, so each one goes to the front.
  for (int i = 23; i >= 0; --i) {
    q.Schedule(TimePoint{Picoseconds(1000 + i * 100)}, EventPriority::kDevice, [&order, i] { order.push_back(i); });
  }
  while (!q.Empty()) q.RunOne();
  std::vector<int> expected(24);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
}

// A seeded random workload of near and far events, ties, events scheduled by running events and
// cancellations, against a reference ordered set of (time, priority, scheduling sequence).
TEST(EventQueue, NearFarAndCancelledEventsFollowTheReferenceOrder) {
  using Key = std::tuple<std::int64_t, int, std::uint64_t>;  // time (ps), priority, sequence
  struct Workload {
    EventQueue q;
    std::mt19937_64 rng{20261124};
    std::set<Key> reference;
    std::map<std::uint64_t, EventId> ids;  // live events by sequence
    std::uint64_t sequence = 0;
    std::vector<std::uint64_t> ran;

    void Schedule(int children) {
      // Delays: now (a third), the near future (within 5 us) or far (timers).
      const std::uint64_t kind = rng() % 3;
      const std::int64_t delay = kind == 0   ? 0
                                 : kind == 1 ? static_cast<std::int64_t>(rng() % 5'000'000)
                                             : 1'000'000 + static_cast<std::int64_t>(rng() % 600'000'000);
      const std::int64_t when = q.Now().time_since_epoch().count() + delay;
      const int priority = static_cast<int>(rng() % 4);
      const std::uint64_t seq = sequence++;
      reference.insert({when, priority, seq});
      ids[seq] = q.Schedule(TimePoint{Picoseconds(when)}, static_cast<EventPriority>(priority),
                            [this, seq, children] { Run(seq, children); });
    }
    void Run(std::uint64_t seq, int children) {
      ran.push_back(seq);
      ids.erase(seq);
      for (int c = 0; c < children; ++c) Schedule(static_cast<int>(rng() % 3));
      // Now and then, cancel a pending event.
      if (!ids.empty() && rng() % 5 == 0) {
        auto victim = ids.begin();
        std::advance(victim, static_cast<std::ptrdiff_t>(rng() % ids.size()));
        for (auto it = reference.begin(); it != reference.end(); ++it) {
          if (std::get<2>(*it) == victim->first) {
            reference.erase(it);
            break;
          }
        }
        EXPECT_TRUE(q.Cancel(victim->second));
        ids.erase(victim);
      }
    }
  };
  Workload w;
  for (int i = 0; i < 2000; ++i) w.Schedule(static_cast<int>(w.rng() % 3));
  // Each event the queue runs must be the reference's earliest, at the reference's time.
  std::size_t runs = 0;
  while (!w.q.Empty()) {
    ASSERT_FALSE(w.reference.empty());
    const Key first = *w.reference.begin();
    EXPECT_EQ(w.q.NextTime().time_since_epoch().count(), std::get<0>(first));
    w.reference.erase(w.reference.begin());
    w.q.RunOne();
    ++runs;
    ASSERT_EQ(w.ran.size(), runs);
    ASSERT_EQ(w.ran.back(), std::get<2>(first)) << "event " << runs;
    ASSERT_EQ(w.q.Now().time_since_epoch().count(), std::get<0>(first));
  }
  EXPECT_TRUE(w.reference.empty());
  EXPECT_GT(runs, 4000u);
}

// ---- time and numbers ----

TEST(Time, BitRateSerializationRoundsUpToPicoseconds) {
  EXPECT_EQ(GigabitsPerSecond(100).TimeFor(4096), Picoseconds(327'680));
  EXPECT_EQ(GigabitsPerSecond(3).TimeFor(1), Picoseconds(2667));
  EXPECT_EQ(BitRate{0}.TimeFor(1'000'000), Duration::zero());
}

// Sizes below 2 MiB divide in 64 bits, larger ones in 128: both give the rounded-up exact value.
TEST(Time, BitRateSerializationIsExactOnBothSidesOfThe64BitRange) {
  const BitRate r = GigabitsPerSecond(3);
  for (const std::uint64_t bytes : {(std::uint64_t{1} << 21) - 1, std::uint64_t{1} << 21, std::uint64_t{1} << 40}) {
    const Uint128 picobits = static_cast<Uint128>(bytes) * 8'000'000'000'000u;
    const auto expected = static_cast<std::int64_t>((picobits + 3'000'000'000 - 1) / 3'000'000'000);
    EXPECT_EQ(r.TimeFor(bytes), Picoseconds(expected)) << bytes << " B";
  }
  // A rate past the 64-bit range (8 Tb/s) takes the 128-bit way for any size.
  EXPECT_EQ(GigabitsPerSecond(8000).TimeFor(1), Picoseconds(1));
}

TEST(Time, ClockDomainConvertsCycles) {
  EXPECT_EQ(ClockDomain(500).ToDuration(Cycles{3}), Nanoseconds(6));
}

TEST(Psn, ComparesAcrossTheWrap) {
  const Psn last{Psn::kMask};
  const Psn first = last + 1;
  EXPECT_EQ(first.value, 0u);
  EXPECT_TRUE(last.Before(first));
  EXPECT_EQ(Psn::Diff(first, last), 1);
  EXPECT_EQ(Psn::Diff(last, first), -1);
}

// ---- translation and protection: one outcome per check ----

struct TranslationCase {
  const char* name;
  int key_delta;      // added to the key byte
  std::uint32_t pd;   // PD used by the access
  std::int64_t offset;
  std::uint64_t length;
  std::uint32_t required;
  TranslationOutcome expected;
};

class TranslationCheck : public ::testing::TestWithParam<TranslationCase> {};

TEST_P(TranslationCheck, AppliesChecksInOrder) {
  TwoNodeRig rig;
  std::vector<std::byte> buf(4096);
  const MemoryKey key = rig.Register(*rig.a, rig.pd_a, buf.data(), buf.size(), access::kRemoteRead);
  const TranslationCase& c = GetParam();
  const MemoryKey used = MemoryKey::Make(key.Index(), static_cast<std::uint8_t>(key.KeyByte() + c.key_delta));
  const auto base = reinterpret_cast<std::uint64_t>(buf.data());
  const TranslationResult r = rig.a->Tpt().Check(used, PdNumber{c.pd}, base + static_cast<std::uint64_t>(c.offset),
                                                 c.length, c.required);
  EXPECT_EQ(r.outcome, c.expected) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Outcomes, TranslationCheck,
    ::testing::Values(TranslationCase{"ok", 0, 1, 0, 4096, access::kRemoteRead, TranslationOutcome::kOk},
                      TranslationCase{"stale key", 1, 1, 0, 8, 0, TranslationOutcome::kKeyMismatch},
                      TranslationCase{"other pd", 0, 2, 0, 8, 0, TranslationOutcome::kPdMismatch},
                      TranslationCase{"no right", 0, 1, 0, 8, access::kRemoteWrite, TranslationOutcome::kAccessDenied},
                      TranslationCase{"before base", 0, 1, -1, 1, 0, TranslationOutcome::kOutOfBounds},
                      TranslationCase{"past end", 0, 1, 4090, 7, 0, TranslationOutcome::kOutOfBounds},
                      TranslationCase{"length overflows", 0, 1, 8, ~std::uint64_t{0}, 0, TranslationOutcome::kOutOfBounds}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n) if (ch == ' ') ch = '_';
      return n;
    });

TEST(Translation, UnknownIndexIsRefused) {
  TwoNodeRig rig;
  EXPECT_EQ(rig.a->Tpt().Check(MemoryKey::Make(999, 0), rig.pd_a, 0, 1, 0).outcome, TranslationOutcome::kBadIndex);
}

TEST(Translation, DeregisteredTokenStopsMatching) {
  TwoNodeRig rig;
  std::vector<std::byte> buf(64);
  const MemoryKey key = rig.Register(*rig.a, rig.pd_a, buf.data(), buf.size(), 0);
  ASSERT_EQ(rig.a->DeregisterMemory(key), CommandStatus::kOk);
  EXPECT_FALSE(rig.a->Tpt().Check(key, rig.pd_a, reinterpret_cast<std::uint64_t>(buf.data()), 1, 0).Ok());
}

TEST(Translation, ReRegistrationChangesTheKeyByte) {
  TwoNodeRig rig;
  std::vector<std::byte> buf(64);
  const MemoryKey first = rig.Register(*rig.a, rig.pd_a, buf.data(), buf.size(), 0);
  ASSERT_EQ(rig.a->DeregisterMemory(first), CommandStatus::kOk);
  const MemoryKey second = rig.Register(*rig.a, rig.pd_a, buf.data(), buf.size(), 0);
  EXPECT_EQ(first.Index(), second.Index());
  EXPECT_NE(first.KeyByte(), second.KeyByte());
}

// ---- responder sequence checks (pure function) ----

TEST(ResponderSequence, AcceptsExpectedFirstPacket) {
  QpContext qp;
  qp.responder.expected_psn = Psn{7};
  Packet p;
  p.opcode = PacketOpcode::kSendFirst;
  p.psn = Psn{7};
  EXPECT_EQ(CheckSequence(qp, p), ResponderCheck::kAccept);
}

TEST(ResponderSequence, OlderPsnIsDuplicate) {
  QpContext qp;
  qp.responder.expected_psn = Psn{0};
  Packet p;
  p.opcode = PacketOpcode::kSendOnly;
  p.psn = Psn{Psn::kMask};
  EXPECT_EQ(CheckSequence(qp, p), ResponderCheck::kDuplicate);
}

TEST(ResponderSequence, NewerPsnIsOutOfSequence) {
  QpContext qp;
  qp.responder.expected_psn = Psn{3};
  Packet p;
  p.opcode = PacketOpcode::kWriteOnly;
  p.psn = Psn{5};
  EXPECT_EQ(CheckSequence(qp, p), ResponderCheck::kOutOfSequence);
}

TEST(ResponderSequence, MiddleWithoutFirstIsRefused) {
  QpContext qp;
  Packet p;
  p.opcode = PacketOpcode::kSendMiddle;
  EXPECT_EQ(CheckSequence(qp, p), ResponderCheck::kBadOpcodeSequence);
}

TEST(ResponderSequence, WritePacketInsideSendIsRefused) {
  QpContext qp;
  qp.responder.in_message = true;
  qp.responder.message_kind = PacketOpcode::kSendFirst;
  Packet p;
  p.opcode = PacketOpcode::kWriteMiddle;
  EXPECT_EQ(CheckSequence(qp, p), ResponderCheck::kBadOpcodeSequence);
}

// ---- responder outcome table (one row per check) ----

TEST(ResponderOutcomes, EveryRefusalThatFailsTheQpSendsANak) {
  for (const RequestOutcome& o : kRequestOutcomes) {
    if (o.action == RequestAction::kFail || o.action == RequestAction::kFailReceive) {
      EXPECT_NE(o.nak, AckSyndrome::kAck) << o.name;
    }
  }
}

TEST(ResponderOutcomes, EveryFailedReceiveCompletesWithAnError) {
  for (const RequestOutcome& o : kRequestOutcomes) {
    if (o.action == RequestAction::kFailReceive) {
      EXPECT_NE(o.receive, CompletionSyndrome::kSuccess) << o.name;
    }
  }
}

TEST(ResponderOutcomes, ABadRemoteTokenIsAnAccessErrorNakAndAProtectionFault) {
  const RequestOutcome& o = Outcome(ResponderCheck::kRemoteAccess);
  EXPECT_EQ(o.action, RequestAction::kFail);
  EXPECT_EQ(o.nak, AckSyndrome::kRemoteAccessError);
  EXPECT_TRUE(o.protection_fault);
}

TEST(ResponderOutcomes, AnUnwritableReceiveCompletesItAndNaksWithOperationError) {
  const RequestOutcome& o = Outcome(ResponderCheck::kReceiveProtection);
  EXPECT_EQ(o.action, RequestAction::kFailReceive);
  EXPECT_EQ(o.receive, CompletionSyndrome::kLocalProtectionError);
  EXPECT_EQ(o.nak, AckSyndrome::kRemoteOperationError);
}

TEST(ResponderOutcomes, NoReceiveWqeIsAnRnrNakThatFailsNothing) {
  const RequestOutcome& o = Outcome(ResponderCheck::kReceiverNotReady);
  EXPECT_EQ(o.action, RequestAction::kNakRnr);
  EXPECT_EQ(o.nak, AckSyndrome::kRnrNak);
  EXPECT_FALSE(o.protection_fault);
}

TEST(ResponderOutcomes, ADuplicateReadThatFindsNoResourceIsDroppedNotRefused) {
  EXPECT_EQ(Outcome(ResponderCheck::kReadResourcesBusy).action, RequestAction::kDrop);
  EXPECT_EQ(Outcome(ResponderCheck::kTooManyReads).action, RequestAction::kFail);
}

TEST(ResponderOutcomes, EachCheckHasItsOwnName) {
  EXPECT_EQ(Name(ResponderCheck::kOutOfSequence), "out of sequence");
  EXPECT_EQ(Name(ResponderCheck::kWriteLength), "write length");
}

TEST(AckSyndromes, ANakFailsTheRequestWithTheMatchingRemoteStatus) {
  EXPECT_EQ(FailedBy(AckSyndrome::kRemoteAccessError), CompletionSyndrome::kRemoteAccessError);
  EXPECT_EQ(FailedBy(AckSyndrome::kRemoteOperationError), CompletionSyndrome::kRemoteOperationError);
  EXPECT_EQ(FailedBy(AckSyndrome::kRemoteInvalidRequest), CompletionSyndrome::kRemoteInvalidRequest);
}

TEST(AckSyndromes, ASyndromeNoResponderSendsFailsAsAnInvalidRequest) {
  const auto hostile = static_cast<AckSyndrome>(200);
  EXPECT_EQ(FailedBy(hostile), CompletionSyndrome::kRemoteInvalidRequest);
  EXPECT_EQ(Name(hostile), "?");
}

// ---- completion engine ----

TEST(CompletionEngine, ArmMergeFollowsTheTable) {
  EXPECT_EQ(MergeArm(CqArmKind::kErrors, CqArmKind::kSolicited), CqArmKind::kSolicited);
  EXPECT_EQ(MergeArm(CqArmKind::kSolicited, CqArmKind::kErrors), CqArmKind::kSolicited);
  EXPECT_EQ(MergeArm(CqArmKind::kSolicited, CqArmKind::kAny), CqArmKind::kAny);
  EXPECT_EQ(MergeArm(CqArmKind::kAny, CqArmKind::kErrors), CqArmKind::kAny);
  EXPECT_EQ(MergeArm(CqArmKind::kErrors, CqArmKind::kErrors), CqArmKind::kErrors);
}

// ---- data path through the blocks ----

TEST(DataPath, WriteMovesBytesAndCompletes) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(10000), dst(10000, 0);
  std::iota(src.begin(), src.end(), 0);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 10000, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), rkey.value);
  rig.Run();
  EXPECT_EQ(src, dst);
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kSuccess);
  EXPECT_EQ(cqe.opcode, WqeOpcode::kWrite);
  EXPECT_EQ(cqe.qpn, rig.qp_a->qpn.value);
  EXPECT_FALSE(rig.cq_a->Poll(&cqe));
  EXPECT_FALSE(rig.cq_b->Poll(&cqe));  // a write consumes no receive
  EXPECT_EQ(rig.a->Counters().packets_sent, 3u);  // 10000 B in 4096-B packets
}

TEST(DataPath, SendScattersIntoReceiveSges) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(5000), r1(1000, 0), r2(8000, 0);
  std::iota(src.begin(), src.end(), 1);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey k1 = rig.Register(*rig.b, rig.pd_b, r1.data(), r1.size(), access::kLocalWrite);
  const MemoryKey k2 = rig.Register(*rig.b, rig.pd_b, r2.data(), r2.size(), access::kLocalWrite);
  rig.qp_b->PostReceive({Sge(r1.data(), 1000, k1), Sge(r2.data(), 8000, k2)});
  rig.qp_a->Post(WqeOpcode::kSend, {Sge(src.data(), 2000, lkey), Sge(src.data() + 2000, 3000, lkey)});
  rig.Run();
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 1000, r1.begin()));
  EXPECT_TRUE(std::equal(src.begin() + 1000, src.end(), r2.begin()));
  Cqe cqe;
  ASSERT_TRUE(rig.cq_b->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kSuccess);
  EXPECT_EQ(cqe.byte_count, 5000u);
  EXPECT_TRUE(cqe.flags & cqe_flag::kReceive);
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.opcode, WqeOpcode::kSend);
}

TEST(DataPath, ReadPullsRemoteBytes) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> remote(9000), local(9000, 0);
  std::iota(remote.begin(), remote.end(), 7);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, local.data(), local.size(), access::kLocalWrite);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, remote.data(), remote.size(), access::kRemoteRead);
  rig.qp_a->Post(WqeOpcode::kRead, {Sge(local.data(), 9000, lkey)}, reinterpret_cast<std::uint64_t>(remote.data()),
                 rkey.value);
  rig.Run();
  EXPECT_EQ(local, remote);
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kSuccess);
  EXPECT_EQ(cqe.opcode, WqeOpcode::kRead);
}

TEST(DataPath, InlineWritePayloadComesWithTheWqe) {
  TwoNodeRig rig;
  std::uint64_t dst = 0;
  const std::uint64_t value = 0x1122334455667788;
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, &dst, sizeof dst, access::kRemoteWrite | access::kLocalWrite);
  rig.qp_a->PostInline(WqeOpcode::kWrite, &value, sizeof value, reinterpret_cast<std::uint64_t>(&dst), rkey.value);
  rig.Run();
  EXPECT_EQ(dst, value);
  // Only the WQE fetch was read over PCIe; no payload DMA.
  EXPECT_EQ(rig.a->Counters().dma_reads, 1u);
}

TEST(DataPath, OneDoorbellCoversADeferredBatch) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(64), dst(64);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  for (int i = 0; i < 8; ++i) {
    rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()),
                   rkey.value, wqe_flag::kSignaled, /*defer=*/i != 7);
  }
  rig.Run();
  EXPECT_EQ(rig.a->Counters().doorbells, 1u);
  EXPECT_EQ(rig.a->Counters().wqes_fetched, 8u);
  int completions = 0;
  Cqe cqe;
  while (rig.cq_a->Poll(&cqe)) {
    EXPECT_EQ(cqe.wqe_counter, static_cast<std::uint32_t>(completions));
    ++completions;
  }
  EXPECT_EQ(completions, 8);
}

TEST(DataPath, UnsignaledSuccessWritesNoCqe) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(8), dst(8);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), rkey.value,
                 /*flags=*/0);
  rig.Run();
  Cqe cqe;
  EXPECT_FALSE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(rig.a->Counters().cqes_written, 0u);
}

TEST(DataPath, RemoteAccessErrorFailsRequestAndFlushesBothSides) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(64), dst(64), rbuf(64);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  // Registered for remote read only: a write must be refused.
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteRead);
  const MemoryKey bkey = rig.Register(*rig.b, rig.pd_b, rbuf.data(), rbuf.size(), access::kLocalWrite);
  rig.qp_b->PostReceive({Sge(rbuf.data(), 64, bkey)});
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), rkey.value);
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), rkey.value);
  rig.Run();
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kRemoteAccessError);
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kFlushed);
  ASSERT_TRUE(rig.cq_b->Poll(&cqe));  // the peer's posted receive
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kFlushed);
  EXPECT_EQ(rig.a->QueryQpState(rig.qp_a->qpn), QpState::kError);
  EXPECT_EQ(rig.b->QueryQpState(rig.qp_b->qpn), QpState::kError);
  EXPECT_EQ(rig.b->Counters().protection_faults, 1u);
}

TEST(DataPath, LocalProtectionErrorTerminatesThePeer) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(64), rbuf(64);
  const MemoryKey bkey = rig.Register(*rig.b, rig.pd_b, rbuf.data(), rbuf.size(), access::kLocalWrite);
  rig.qp_b->PostReceive({Sge(rbuf.data(), 64, bkey)});
  rig.qp_a->Post(WqeOpcode::kSend, {Sge(src.data(), 8, MemoryKey{0x12345})});
  rig.Run();
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kLocalProtectionError);
  ASSERT_TRUE(rig.cq_b->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kFlushed);
  EXPECT_GE(rig.interrupts_b, 1);  // connection-abort event
}

// A rig on the default profile with a remotely readable and writable buffer on b, for requests
// from a that fail a local check behind earlier ones still in flight.
struct InOrderErrorRig {
  TwoNodeRig rig{profiles::kConnectX100GbeRoce};
  std::vector<std::uint8_t> dst = std::vector<std::uint8_t>(64);
  std::vector<std::uint8_t> sink = std::vector<std::uint8_t>(64);
  MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(),
                                access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead);
  // A signaled 8-B read into a sink whose local token does not exist: a local protection error.
  void PostReadWithBadSink() {
    rig.qp_a->Post(WqeOpcode::kRead, {Sge(sink.data(), 8, MemoryKey{0x12345})}, reinterpret_cast<std::uint64_t>(dst.data()),
                   rkey.value);
  }
  void ExpectCqe(std::uint32_t wqe, CompletionSyndrome syndrome) {
    Cqe cqe;
    ASSERT_TRUE(rig.cq_a->Poll(&cqe));
    EXPECT_EQ(cqe.wqe_counter, wqe);
    EXPECT_EQ(cqe.syndrome, syndrome);
  }
};

// Regression: a request that failed a local check when the requester came to execute it put the
// QP in error at once, so an earlier request still waiting for its acknowledgement was flushed
// (STATUS_CANCELLED) and completed before it with the later one's error behind it. Requests
// complete in posting order with their own status: the earlier write succeeds, then the read
// reports its error, then the QP fails.
TEST(InOrderErrors, AnEarlierRequestInFlightCompletesWithItsOwnStatusBeforeALaterLocalError) {
  InOrderErrorRig f;
  std::vector<std::uint8_t> src(64);
  const MemoryKey lkey = f.rig.Register(*f.rig.a, f.rig.pd_a, src.data(), src.size(), access::kLocalWrite);
  src[7] = 42;
  f.rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(f.dst.data()),
                   f.rkey.value, wqe_flag::kSignaled, /*defer=*/true);
  f.PostReadWithBadSink();
  f.rig.Run();
  f.ExpectCqe(0, CompletionSyndrome::kSuccess);
  f.ExpectCqe(1, CompletionSyndrome::kLocalProtectionError);
  EXPECT_EQ(f.dst[7], 42);
  EXPECT_EQ(f.rig.a->QueryQpState(f.rig.qp_a->qpn), QpState::kError);
}

// The same with the earlier request unsignaled (a zero-length read with silent success): it
// writes no CQE, and the only one is the later request's error.
TEST(InOrderErrors, AnEarlierSilentRequestInFlightIsNotCancelledByALaterLocalError) {
  InOrderErrorRig f;
  f.rig.qp_a->Post(WqeOpcode::kRead, {}, reinterpret_cast<std::uint64_t>(f.dst.data()), f.rkey.value, /*flags=*/0,
                   /*defer=*/true);
  f.PostReadWithBadSink();
  f.PostReadWithBadSink();
  f.rig.Run();
  f.ExpectCqe(1, CompletionSyndrome::kLocalProtectionError);
  f.ExpectCqe(2, CompletionSyndrome::kFlushed);
  Cqe cqe;
  EXPECT_FALSE(f.rig.cq_a->Poll(&cqe));
}

TEST(DataPath, ReceiverNotReadyIsRetriedUntilAReceiveArrives) {
  TwoNodeRig rig(profiles::kConnectX100GbeRoce);
  std::vector<std::uint8_t> src(32, 9), rbuf(32, 0);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey bkey = rig.Register(*rig.b, rig.pd_b, rbuf.data(), rbuf.size(), access::kLocalWrite);
  rig.qp_a->Post(WqeOpcode::kSend, {Sge(src.data(), 32, lkey)});
  // Run 15 us: the send meets no receive and is NAKed at least once.
  rig.a->DrainDoorbells();
  while (!rig.events.Empty() && rig.events.NextTime() < TimePoint{Microseconds(15)}) rig.events.RunOne();
  EXPECT_GE(rig.b->Counters().rnr_naks_sent, 1u);
  rig.qp_b->PostReceive({Sge(rbuf.data(), 32, bkey)});
  rig.Run();
  EXPECT_EQ(rbuf, src);
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kSuccess);
}

TEST(DataPath, ReceiverNotReadyForeverExhaustsRnrRetries) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(32);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  rig.qp_a->Post(WqeOpcode::kSend, {Sge(src.data(), 32, lkey)});
  rig.Run();
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kRnrRetryExceeded);
  EXPECT_EQ(rig.b->Counters().rnr_naks_sent, profiles::kFunctional.rnr_retry_count + 1);
}

TEST(DataPath, ReceiveTooSmallOverflows) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(100), rbuf(50);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey bkey = rig.Register(*rig.b, rig.pd_b, rbuf.data(), rbuf.size(), access::kLocalWrite);
  rig.qp_b->PostReceive({Sge(rbuf.data(), 50, bkey)});
  rig.qp_a->Post(WqeOpcode::kSend, {Sge(src.data(), 100, lkey)});
  rig.Run();
  Cqe cqe;
  ASSERT_TRUE(rig.cq_b->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kReceiveOverflow);
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kRemoteInvalidRequest);
}

// A rig whose A side completes on a CQ of four entries, and 8-B signaled writes from A to B.
struct FourEntryCqRig {
  TwoNodeRig rig{profiles::kFunctional, /*cq_entries=*/4};
  std::vector<std::uint8_t> src = std::vector<std::uint8_t>(8);
  std::vector<std::uint8_t> dst = std::vector<std::uint8_t>(8);
  MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);

  void Write(int count) {
    for (int i = 0; i < count; ++i) {
      rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()),
                     rkey.value);
    }
  }
};

TEST(DataPath, CqOverrunKillsTheCqAndRaisesAnError) {
  FourEntryCqRig f;
  TwoNodeRig& rig = f.rig;
  rig.a->Inbox().Write({Doorbell::Kind::kCqArm, CqArmKind::kErrors, rig.cq_a->number.value, 0});
  f.Write(5);
  rig.Run();
  EventEntry e;
  ASSERT_TRUE(rig.events_a.TryPop(e));
  EXPECT_EQ(e.type, EventType::kCqError);
  EXPECT_EQ(e.status, 0u);
  EXPECT_EQ(rig.a->Counters().cqes_written, 4u);
  EXPECT_EQ(rig.a->QueryQpState(rig.qp_a->qpn), QpState::kError);
}

// Regression: an overrun of a CQ nobody had armed was silent: no counter and no message, only
// QPs failing. It is counted and said once on stderr.
TEST(DataPath, AnUnarmedCqOverrunIsCountedAndSaidOnce) {
  FourEntryCqRig f;
  TwoNodeRig& rig = f.rig;
  ::testing::internal::CaptureStderr();
  f.Write(6);
  rig.Run();
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rig.a->Counters().cq_overruns, 1u);
  EXPECT_THAT(said, ::testing::HasSubstr("overran: 4 CQEs written, 0 polled, 4 entries"));
  EXPECT_EQ(said.find("overran"), said.rfind("overran"));  // once
}

// The NIC reads the host's consumer index again only when the value it last read leaves no room
// for the next CQE: a CQ the host has emptied takes another lap of CQEs without an overrun.
TEST(DataPath, ACqTheHostEmptiedTakesAnotherLapWithoutOverrun) {
  FourEntryCqRig f;
  TwoNodeRig& rig = f.rig;
  for (int lap = 0; lap < 2; ++lap) {
    f.Write(4);
    rig.Run();
    for (int i = 0; i < 4; ++i) {
      Cqe cqe;
      ASSERT_TRUE(rig.cq_a->Poll(&cqe)) << "lap " << lap << " cqe " << i;
      EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kSuccess);
    }
  }
  EXPECT_EQ(rig.a->Counters().cqes_written, 8u);
  EXPECT_EQ(rig.a->QueryQpState(rig.qp_a->qpn), QpState::kReadyToSend);
}

// When it does read the consumer index again, the new value decides: of three more CQEs into a
// full CQ whose host has read two, two land and the third overruns it.
TEST(DataPath, AnOverrunIsJudgedByTheConsumerIndexReadAgain) {
  FourEntryCqRig f;
  TwoNodeRig& rig = f.rig;
  f.Write(4);
  rig.Run();
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  f.Write(3);
  rig.Run();
  EXPECT_EQ(rig.a->Counters().cqes_written, 6u);
  EXPECT_EQ(rig.a->QueryQpState(rig.qp_a->qpn), QpState::kError);
}

TEST(DataPath, ArmAnyNotifiesOnceForTheNextCompletion) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(8), dst(8);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  rig.a->Inbox().Write({Doorbell::Kind::kCqArm, CqArmKind::kAny, rig.cq_a->number.value, 0});
  for (int i = 0; i < 3; ++i) {
    rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), rkey.value);
  }
  rig.Run();
  EXPECT_EQ(rig.interrupts_a, 1);
  EventEntry e;
  ASSERT_TRUE(rig.events_a.TryPop(e));
  EXPECT_EQ(e.type, EventType::kCqNotify);
  EXPECT_FALSE(rig.events_a.TryPop(e));
}

TEST(DataPath, ArmWithUnreadEntriesFiresImmediately) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(8), dst(8);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), rkey.value);
  rig.Run();
  ASSERT_EQ(rig.interrupts_a, 0);
  rig.a->Inbox().Write({Doorbell::Kind::kCqArm, CqArmKind::kAny, rig.cq_a->number.value, 0});
  rig.Run();
  EXPECT_EQ(rig.interrupts_a, 1);
}

// The simulated time of a completion is the sum of the modelled stages.
TEST(Timing, InlineWriteCompletionTimeIsTheSumOfItsStages) {
  const HardwareProfile p = profiles::WithoutNoise(profiles::kConnectX100GbeRoce);
  TwoNodeRig rig(p);
  std::uint64_t dst = 0;
  const std::uint64_t value = 42;
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, &dst, sizeof dst, access::kRemoteWrite | access::kLocalWrite);
  rig.qp_a->PostInline(WqeOpcode::kWrite, &value, sizeof value, reinterpret_cast<std::uint64_t>(&dst), rkey.value);
  Cqe cqe;
  TimePoint completed{};
  for (;;) {
    rig.a->DrainDoorbells();
    if (rig.events.Empty()) break;
    rig.events.RunOne();
    if (completed == TimePoint{} && rig.cq_a->Poll(&cqe)) completed = rig.events.Now();
  }
  ASSERT_NE(completed, TimePoint{});
  const Duration pcie_request = p.pcie_bandwidth.TimeFor(PcieLink::kWriteTlpOverheadBytes);
  const auto units = [&](Cycles c) { return p.nic_clock.ToDuration(c); };
  // across the wire: serialization, MAC/PHY on both sides, cable, receive pipeline
  const auto wire = [&](std::uint32_t bytes) {
    return p.link_rate.TimeFor(bytes + p.packet_overhead_bytes) + p.port_transmit_latency + p.propagation_delay +
           p.port_receive_latency + units(p.packet_processing);
  };
  // doorbell MMIO: 8 B + one write TLP header, then the MMIO latency; the processing unit takes it
  const Duration doorbell =
      p.pcie_bandwidth.TimeFor(8 + PcieLink::kWriteTlpOverheadBytes) + p.pcie_mmio_write_latency + units(p.doorbell_processing);
  // WQE fetch: a read request, the read latency, then the one 64-B block the WQE uses + a completion header
  const Duration fetch = pcie_request + p.pcie_dma_read_latency + p.pcie_bandwidth.TimeFor(64 + PcieLink::kCompletionTlpOverheadBytes);
  const Duration process = units(p.wqe_processing);
  const Duration request = wire(8 + 16);  // WriteOnly carries a 16-B RETH
  // the responder acknowledges once the 8 B placement has landed in its host memory
  const Duration place = p.pcie_bandwidth.TimeFor(8 + PcieLink::kWriteTlpOverheadBytes) + p.pcie_dma_write_latency;
  const Duration ack = p.ack_turnaround + wire(4);  // the ACK carries a 4-B AETH
  const Duration cqe_write = p.pcie_bandwidth.TimeFor(sizeof(Cqe) + PcieLink::kWriteTlpOverheadBytes) + p.pcie_dma_write_latency;
  EXPECT_EQ(completed.time_since_epoch(), doorbell + fetch + process + request + place + ack + cqe_write);
  EXPECT_EQ(dst, value);
}

}  // namespace
}  // namespace ndksim::hw

namespace ndksim::hw {
namespace {

using testing::Sge;
using testing::PcieOnlyProfile;
using testing::TwoNodeRig;

// ---- PCIe link in isolation ----


TEST(PcieLink, DmaReadTakesLatencyPlusSerializationWithTlpHeaders) {
  TwoNodeRig rig(PcieOnlyProfile());
  TimePoint done{};
  rig.a->Pcie().DmaRead(512, [&] { done = rig.events.Now(); });
  rig.Run();
  // One 512-B read request (MRRS): its 24-B header goes up (3 ns), the latency passes, and the
  // data returns as 2 completions of 256 B, each with a 20 B header: 552 B at 8 B/ns = 69 ns.
  EXPECT_EQ(done, TimePoint{Nanoseconds(3 + 500 + 69)});
}

TEST(PcieLink, PostedWritesLandInIssueOrder) {
  TwoNodeRig rig(PcieOnlyProfile());
  std::vector<int> order;
  rig.a->Pcie().DmaWrite(4096, [&] { order.push_back(1); });
  rig.a->Pcie().DmaWrite(8, [&] { order.push_back(2); });
  rig.Run();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(PcieLink, BackToBackWritesShareTheBandwidth) {
  TwoNodeRig rig(PcieOnlyProfile());
  TimePoint second{};
  rig.a->Pcie().DmaWrite(232, [] {});  // 232 + 24 = 256 B = 32 ns on the link
  rig.a->Pcie().DmaWrite(232, [&] { second = rig.events.Now(); });
  rig.Run();
  EXPECT_EQ(second, TimePoint{Nanoseconds(32 + 32 + 200)});
}

// The write engine's TLP rate binds small writes: two 8-B writes, each 4 ns of link time (32 B at
// 8 B/ns), issue 100 ns apart; the first goes at once.
TEST(PcieLink, SmallWritesAreBoundByTheWriteEnginesTlpRate) {
  HardwareProfile p = PcieOnlyProfile();
  p.pcie_write_tlp_interval = Nanoseconds(100);
  TwoNodeRig rig(p);
  TimePoint first{};
  TimePoint second{};
  rig.a->Pcie().DmaWrite(8, [&] { first = rig.events.Now(); });
  rig.a->Pcie().DmaWrite(8, [&] { second = rig.events.Now(); });
  rig.Run();
  EXPECT_EQ(first, TimePoint{Nanoseconds(4 + 200)});
  EXPECT_EQ(second, TimePoint{Nanoseconds(100 + 4 + 200)});
}

// A write of several TLPs holds the engine one interval per TLP: after 1,024 B at MPS 256 (4 TLPs)
// the next write issues 400 ns later.
TEST(PcieLink, AWriteOfSeveralTlpsHoldsTheEngineOncePerTlp) {
  HardwareProfile p = PcieOnlyProfile();
  p.pcie_write_tlp_interval = Nanoseconds(100);
  TwoNodeRig rig(p);
  TimePoint next{};
  rig.a->Pcie().DmaWrite(1024, [] {});
  rig.a->Pcie().DmaWrite(8, [&] { next = rig.events.Now(); });
  rig.Run();
  EXPECT_EQ(next, TimePoint{Nanoseconds(400 + 4 + 200)});
}

TEST(PcieLink, CountsTransfersAndBytes) {
  TwoNodeRig rig(PcieOnlyProfile());
  rig.a->Pcie().DmaRead(100, [] {});
  rig.a->Pcie().DmaWrite(300, [] {});
  rig.Run();
  EXPECT_EQ(rig.a->Counters().dma_reads, 1u);
  EXPECT_EQ(rig.a->Counters().dma_read_bytes, 100u);
  EXPECT_EQ(rig.a->Counters().dma_writes, 1u);
  EXPECT_EQ(rig.a->Counters().dma_write_bytes, 300u);
}

// ---- port and wire ----

// The receive pipeline takes in one packet per receive_packet_interval: of two writes that arrive
// together (the functional profile's zero latencies), the second lands a microsecond later.
TEST(ReceivePipeline, TakesInOnePacketPerInterval) {
  HardwareProfile p = profiles::kFunctional;
  p.receive_packet_interval = Cycles{1000};  // 1 us at 1 GHz
  TwoNodeRig rig(p);
  std::uint64_t dst[2] = {0, 0};
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst, sizeof dst, access::kRemoteWrite | access::kLocalWrite);
  const std::uint64_t one = 1;
  const std::uint64_t two = 2;
  rig.qp_a->PostInline(WqeOpcode::kWrite, &one, sizeof one, reinterpret_cast<std::uint64_t>(&dst[0]), rkey.value);
  rig.qp_a->PostInline(WqeOpcode::kWrite, &two, sizeof two, reinterpret_cast<std::uint64_t>(&dst[1]), rkey.value);
  rig.a->DrainDoorbells();
  while (!rig.events.Empty() && rig.events.NextTime() < TimePoint{Nanoseconds(500)}) rig.events.RunOne();
  EXPECT_EQ(dst[0], 1u);
  EXPECT_EQ(dst[1], 0u);
  rig.Run();
  EXPECT_EQ(dst[1], 2u);
}

TEST(Port, PacketArrivesAfterSerializationAndPropagation) {
  HardwareProfile p = profiles::kFunctional;
  p.link_rate = GigabitsPerSecond(8);  // 1 byte per ns
  p.packet_overhead_bytes = 50;
  p.propagation_delay = Nanoseconds(7);
  TwoNodeRig rig(p);
  std::uint32_t id;
  Packet& pkt = rig.network.Pool().Acquire(&id);
  pkt.source_node = 0;
  pkt.destination_node = 1;
  pkt.opcode = PacketOpcode::kAcknowledge;
  pkt.destination_qpn = Qpn{0xffff};  // no such QP: the completer drops it
  pkt.payload.resize(100);
  rig.a->GetPort().Transmit(id);
  rig.Run();
  // 100 B payload + 50 B overhead + the 4-B AETH of an acknowledgement, at 1 B/ns, then the cable.
  EXPECT_EQ(rig.events.Now(), TimePoint{Nanoseconds(154 + 7)});
  EXPECT_EQ(rig.b->Counters().packets_received, 1u);
  EXPECT_EQ(rig.network.Pool().Allocated(), 1u);
}

TEST(Port, TransmitterSerializesPacketsBackToBack) {
  HardwareProfile p = profiles::kFunctional;
  p.link_rate = GigabitsPerSecond(8);
  p.packet_overhead_bytes = 0;
  TwoNodeRig rig(p);
  for (int i = 0; i < 3; ++i) {
    std::uint32_t id;
    Packet& pkt = rig.network.Pool().Acquire(&id);
    pkt.destination_node = 1;
    pkt.opcode = PacketOpcode::kAcknowledge;
    pkt.destination_qpn = Qpn{0xffff};
    pkt.payload.resize(10);
    rig.a->GetPort().Transmit(id);
  }
  // 3 x (10 B + 4 B AETH) at 1 B/ns
  EXPECT_EQ(rig.a->GetPort().TransmitFreeAt(), TimePoint{Nanoseconds(42)});
  rig.Run();
  EXPECT_EQ(rig.events.Now(), TimePoint{Nanoseconds(42)});
}

// ---- completion engine ----

TEST(CompletionEngine, OwnerBitTogglesOnEveryPassOfTheRing) {
  TwoNodeRig rig(profiles::kFunctional, /*cq_entries=*/2);
  std::vector<std::uint8_t> src(8), dst(8);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  std::vector<std::uint32_t> seen;
  for (int i = 0; i < 5; ++i) {
    rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), rkey.value);
    rig.Run();
    Cqe cqe;
    ASSERT_TRUE(rig.cq_a->Poll(&cqe));
    seen.push_back(cqe.wqe_counter);
    EXPECT_EQ(rig.cq_a->entries[static_cast<std::uint32_t>(i) & 1].owner.load(), OwnerParity(static_cast<std::uint32_t>(i), 2));
  }
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
}

TEST(CompletionEngine, SolicitedArmIgnoresPlainCompletionsButTakesErrors) {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src(8), dst(8);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  rig.a->Inbox().Write({Doorbell::Kind::kCqArm, CqArmKind::kSolicited, rig.cq_a->number.value, 0});
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), rkey.value);
  rig.Run();
  EXPECT_EQ(rig.interrupts_a, 0);
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()), 0);
  rig.Run();
  // The error also aborts the connection; exactly one of the events is the CQ notification.
  int notifications = 0;
  EventEntry e;
  while (rig.events_a.TryPop(e)) notifications += e.type == EventType::kCqNotify;
  EXPECT_EQ(notifications, 1);
}

// ---- requester ----

TEST(Requester, ReadFenceStallsUntilEarlierReadsFinish) {
  TwoNodeRig rig(profiles::kConnectX100GbeRoce);
  std::vector<std::uint8_t> local(64), remote(64);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, local.data(), local.size(), access::kLocalWrite);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, remote.data(), remote.size(), access::kRemoteRead | access::kRemoteWrite);
  rig.qp_a->Post(WqeOpcode::kRead, {Sge(local.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(remote.data()), rkey.value,
                 wqe_flag::kSignaled, /*defer=*/true);
  rig.qp_a->Post(WqeOpcode::kWrite, {Sge(local.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(remote.data()) + 8,
                 rkey.value, wqe_flag::kSignaled | wqe_flag::kReadFence);
  rig.Run();
  EXPECT_EQ(rig.a->Counters().fence_stalls, 1u);
  Cqe cqe;
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.opcode, WqeOpcode::kRead);
  ASSERT_TRUE(rig.cq_a->Poll(&cqe));
  EXPECT_EQ(cqe.opcode, WqeOpcode::kWrite);
  EXPECT_EQ(cqe.syndrome, CompletionSyndrome::kSuccess);
}

TEST(Requester, OutboundReadLimitBoundsReadsInFlight) {
  TwoNodeRig rig(profiles::kConnectX100GbeRoce);
  // Reconnect is not possible, so lower the limit through a fresh rig of QPs with ORD 1.
  QpContext* qp = rig.a->FindQp(rig.qp_a->qpn);
  ASSERT_NE(qp, nullptr);
  qp->outbound_read_limit = 1;
  std::vector<std::uint8_t> local(64), remote(64);
  const MemoryKey lkey = rig.Register(*rig.a, rig.pd_a, local.data(), local.size(), access::kLocalWrite);
  const MemoryKey rkey = rig.Register(*rig.b, rig.pd_b, remote.data(), remote.size(), access::kRemoteRead);
  for (int i = 0; i < 3; ++i) {
    rig.qp_a->Post(WqeOpcode::kRead, {Sge(local.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(remote.data()), rkey.value,
                   wqe_flag::kSignaled, /*defer=*/i != 2);
  }
  std::uint32_t max_outstanding = 0;
  rig.a->DrainDoorbells();
  while (!rig.events.Empty()) {
    rig.events.RunOne();
    max_outstanding = std::max(max_outstanding, qp->requester.outstanding_reads);
  }
  EXPECT_EQ(max_outstanding, 1u);
  int completions = 0;
  Cqe cqe;
  while (rig.cq_a->Poll(&cqe)) ++completions;
  EXPECT_EQ(completions, 3);
}

}  // namespace
}  // namespace ndksim::hw
