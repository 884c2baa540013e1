// SPDX-License-Identifier: MIT
// Block tests of the completion engine's interrupt moderation and of the CQ-resize and SRQ
// commands, driven through the raw hardware interface (no provider).
#include <gtest/gtest.h>

#include <vector>

#include "hw_test_driver.h"

namespace ndksim::hw {
namespace {

using testing::Sge;
using testing::TwoNodeRig;

int CountNotifications(SpscRing<EventEntry>& ring) {
  int n = 0;
  EventEntry e;
  while (ring.TryPop(e)) n += e.type == EventType::kCqNotify;
  return n;
}

struct WriteRig {
  TwoNodeRig rig;
  std::vector<std::uint8_t> src = std::vector<std::uint8_t>(8);
  std::vector<std::uint8_t> dst = std::vector<std::uint8_t>(8);
  MemoryKey lkey;
  MemoryKey rkey;
  WriteRig() {
    lkey = rig.Register(*rig.a, rig.pd_a, src.data(), src.size(), 0);
    rkey = rig.Register(*rig.b, rig.pd_b, dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite);
  }
  void Write() {
    rig.qp_a->Post(WqeOpcode::kWrite, {Sge(src.data(), 8, lkey)}, reinterpret_cast<std::uint64_t>(dst.data()),
                   rkey.value);
    rig.Run();
  }
  void ArmAny() {
    rig.a->Inbox().Write({Doorbell::Kind::kCqArm, CqArmKind::kAny, rig.cq_a->number.value,
                                      rig.cq_a->consumer.load()});
  }
};

// Regression: an event that found the driver's event ring full stopped the simulator (an
// invariant check). It now waits on the NIC, with the events behind it, until the driver says it
// has made room; none is lost, duplicated or reordered, and each still raises its interrupt.
TEST(EventQueueFull, EventsWaitForRoomAndArriveInOrder) {
  WriteRig w;
  SpscRing<EventEntry> tiny(2);
  w.rig.a->SetEventQueue(&tiny, 0);
  for (std::uint32_t epoch = 1; epoch <= 5; ++epoch) {
    w.rig.a->Inbox().Write({Doorbell::Kind::kCqArm, CqArmKind::kAny, w.rig.cq_a->number.value,
                            w.rig.cq_a->consumer.load(), 0, epoch});
    w.Write();
  }
  EXPECT_EQ(w.rig.interrupts_a, 2);  // the ring holds two; three wait
  std::vector<std::uint32_t> epochs;
  auto drain = [&] {
    EventEntry e;
    while (tiny.TryPop(e)) {
      EXPECT_EQ(e.type, EventType::kCqNotify);
      epochs.push_back(e.arm_epoch);
    }
    w.rig.a->EventQueueConsumed();
  };
  drain();
  EXPECT_EQ(w.rig.interrupts_a, 4);
  drain();
  drain();
  EXPECT_EQ(w.rig.interrupts_a, 5);
  EXPECT_EQ(epochs, (std::vector<std::uint32_t>{1, 2, 3, 4, 5}));
  drain();  // nothing left: no interrupt for nothing
  EXPECT_EQ(w.rig.interrupts_a, 5);
}

TEST(CompletionEngineModeration, CountHoldsTheNotificationUntilEnoughCompletionsLanded) {
  WriteRig w;
  ASSERT_EQ(w.rig.a->ModerateCq(w.rig.cq_a->number, CqModeration{CqModeration::kUnlimited, 3}), CommandStatus::kOk);
  w.ArmAny();
  w.Write();
  w.Write();
  EXPECT_EQ(CountNotifications(w.rig.events_a), 0);
  w.Write();
  EXPECT_EQ(CountNotifications(w.rig.events_a), 1);
}

TEST(CompletionEngineModeration, IntervalFiresAtTheIntervalAfterTheSatisfyingCompletion) {
  WriteRig w;
  ASSERT_EQ(w.rig.a->ModerateCq(w.rig.cq_a->number, CqModeration{20, CqModeration::kUnlimited}), CommandStatus::kOk);
  std::vector<TimePoint> interrupts;
  w.rig.host_a.SetInterruptHandler([&](std::uint32_t) { interrupts.push_back(w.rig.events.Now()); });
  w.ArmAny();
  const TimePoint start = w.rig.events.Now();
  w.Write();  // functional profile: everything but the moderation timer takes zero time
  EXPECT_EQ(CountNotifications(w.rig.events_a), 1);
  ASSERT_EQ(interrupts.size(), 1u);
  EXPECT_EQ(interrupts[0] - start, Microseconds(20));
}

TEST(CompletionEngineModeration, IsRefusedWithoutTheProfileCapability) {
  HardwareProfile p = profiles::kFunctional;
  p.cq_interrupt_moderation = false;
  TwoNodeRig rig(p);
  EXPECT_EQ(rig.a->ModerateCq(rig.cq_a->number, CqModeration{10, 4}), CommandStatus::kInvalidState);
}

TEST(CqResizeCommand, RefusesAQueuedCountThatDoesNotMatchTheNic) {
  WriteRig w;
  w.Write();  // one CQE written, unread
  std::vector<Cqe> bigger(8);
  std::atomic<std::uint32_t>& consumer = w.rig.cq_a->consumer;
  const CompletionQueueMemory m{bigger.data(), 8, &consumer};
  EXPECT_EQ(w.rig.a->ResizeCq(w.rig.cq_a->number, m, 0), CommandStatus::kInvalidState);
  EXPECT_EQ(w.rig.a->ResizeCq(w.rig.cq_a->number, CompletionQueueMemory{bigger.data(), 6, &consumer}, 1),
            CommandStatus::kInvalidArgument);
}

TEST(SrqCommands, ArmingBelowTheQueuedCountRaisesTheLimitEventOnce) {
  TwoNodeRig rig;
  SpscRing<WqeBlock> ring(16);
  SrqNumber srq;
  ASSERT_EQ(rig.a->CreateSrq(SrqCreate{rig.pd_a, WorkQueue{&ring, 1}, 0}, &srq), CommandStatus::kOk);
  ASSERT_EQ(rig.a->ArmSrqLimit(srq, 1), CommandStatus::kOk);  // 0 queued: below 1 at once
  rig.Run();
  int limit_events = 0;
  EventEntry e;
  while (rig.events_a.TryPop(e)) limit_events += e.type == EventType::kSrqLimit;
  EXPECT_EQ(limit_events, 1);
  EXPECT_EQ(rig.a->ArmSrqLimit(srq, 0), CommandStatus::kInvalidArgument);
  EXPECT_EQ(rig.a->DestroySrq(srq), CommandStatus::kOk);
  EXPECT_EQ(rig.a->DestroySrq(srq), CommandStatus::kNotFound);
}

TEST(SrqCommands, AnSrqInUseByAQpCannotBeDestroyed) {
  TwoNodeRig rig;
  SpscRing<WqeBlock> ring(16);
  SpscRing<WqeBlock> sq(16);
  SrqNumber srq;
  ASSERT_EQ(rig.a->CreateSrq(SrqCreate{rig.pd_a, WorkQueue{&ring, 1}, 0}, &srq), CommandStatus::kOk);
  QpCreate c;
  c.pd = rig.pd_a;
  c.send_cq = rig.cq_a->number;
  c.receive_cq = rig.cq_a->number;
  c.send_queue = WorkQueue{&sq, 1};
  c.srq = srq;
  Qpn qpn;
  ASSERT_EQ(rig.a->CreateQp(c, &qpn), CommandStatus::kOk);
  EXPECT_EQ(rig.a->DestroySrq(srq), CommandStatus::kBusy);
  c.pd = PdNumber{rig.pd_a.value + 100};
  Qpn other;
  EXPECT_EQ(rig.a->CreateQp(c, &other), CommandStatus::kInvalidArgument);  // SRQ of another PD
  ASSERT_EQ(rig.a->DestroyQp(qpn), CommandStatus::kOk);
  EXPECT_EQ(rig.a->DestroySrq(srq), CommandStatus::kOk);
}

}  // namespace
}  // namespace ndksim::hw
