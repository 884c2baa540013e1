// SPDX-License-Identifier: MIT
// The completion engine: writes CQEs into host CQ rings with the owner bit, detects overrun,
// evaluates arm requests (ERRORS / SOLICITED / ANY, merged) and raises notifications; flushes
// receive queues of QPs in error.
#pragma once

#include <cstdint>

#include "event_queue.h"
#include "hwmodel/host_interface.h"
#include "nic.h"

namespace ndksim::hw {

struct QpContext;
struct CqContext;

// What a block asks the completion engine to write; the engine adds the owner bit.
struct WriteOrder;

struct CompletionRecord {
  std::uint32_t qpn = 0;
  std::uint32_t wqe_counter = 0;
  std::uint32_t byte_count = 0;
  std::uint32_t invalidated_key = 0;
  WqeOpcode opcode = WqeOpcode::kSend;
  CompletionSyndrome syndrome = CompletionSyndrome::kSuccess;
  std::uint8_t flags = 0;  // cqe_flag::
  std::uint32_t srqn = 0;  // with cqe_flag::kSrq: the SRQ the receive WQE came from
};

// Merge of a pending arm with a new one (ref §4.2 table): ANY wins, then SOLICITED, then ERRORS.
constexpr CqArmKind MergeArm(CqArmKind pending, CqArmKind next) { return pending > next ? pending : next; }

class CompletionEngine {
 public:
  CompletionEngine(Nic& nic, EventQueue& events) : nic_(nic), events_(events) {}

  // Writes a CQE to `cq` by DMA; lands after every write issued before it.
  void Post(CqNumber cq, const CompletionRecord& record, WriteOrder* order = nullptr);
  // A catastrophic NIC error: every CQ dies with a fatal error, reported through its arm.
  void FailAll();
  // Arm doorbell: notify on the next completion of `kind` at or after `consumer_index`.
  // `epoch`: the consumer's arm (Doorbell::arm_epoch); an arm of an epoch already satisfied is
  // ignored, so arms merged before a callback never give a second one.
  void Arm(CqNumber cq, CqArmKind kind, std::uint32_t consumer_index, std::uint32_t epoch = 0);
  // Interrupt moderation of `cq` (ref §3.14); the latest setting wins at once.
  void SetModeration(CqContext& cq, const CqModeration& moderation);

 private:
  void Land(CqNumber cq, const CompletionRecord& record);
  // The CQ takes no more CQEs; the error (cq_error::) is reported through the pending or the next
  // arm.
  void Kill(CqContext& cq, std::uint32_t status);
  // An arm is satisfied by `completions` unread CQEs: notify now or hold back (moderation).
  void Satisfy(CqContext& cq, std::uint32_t completions);
  void OnModerationTimer(CqNumber cq, std::uint64_t generation);
  void Notify(CqContext& cq);
  void ReportError(CqContext& cq);

  Nic& nic_;
  EventQueue& events_;
};

}  // namespace ndksim::hw
