// SPDX-License-Identifier: MIT
// The completer: consumes acknowledgements and read responses, places read data, retires WQEs in
// posting order into CQEs, drives retransmission (ACK timeout, RNR retry) and turns transport
// errors into error completions followed by a flush of the QP.
#pragma once

#include <cstdint>

#include "event_queue.h"
#include "hwmodel/host_interface.h"
#include "nic.h"
#include "packet.h"

namespace ndksim::hw {

struct QpContext;

class Completer {
 public:
  Completer(Nic& nic, EventQueue& events) : nic_(nic), events_(events) {}

  // An ACK, NAK or read response arrived (takes ownership of the packet).
  void OnPacket(std::uint32_t packet_id);
  // Completes WQE `counter` with `syndrome`, then moves the QP to the error state (which flushes
  // every other WQE). The peer is told when the error was found locally.
  void CompleteWithError(QpContext& qp, std::uint32_t counter, CompletionSyndrome syndrome);
  // WQE `counter` failed a check when the requester came to execute it. Requests before it
  // complete with their own status first: if any is still in flight, `counter` keeps its error
  // and retires in its turn, and only then does the QP enter the error state; otherwise as
  // CompleteWithError.
  void FailInOrder(QpContext& qp, std::uint32_t counter, CompletionSyndrome syndrome);
  // A local operation (bind, fast register, invalidate) of WQE `counter` finished successfully:
  // it retires in posting order behind earlier WQEs still awaiting acknowledgement.
  void CompleteLocal(QpContext& qp, std::uint32_t counter);
  // Completes every fetched, unfinished WQE of a QP in error as flushed.
  void FlushFetched(QpContext& qp);
  // Starts the ACK timer if WQEs await acknowledgement and it is not running.
  void ArmTimer(QpContext& qp);
  // Messages from the NIC's command processing: the QP was connected (its first PSN is
  // `send_psn`), or entered the error state (the ACK timer stops).
  void OnConnect(QpContext& qp, Psn send_psn);
  void StopTimer(QpContext& qp);

 private:
  void OnAcknowledge(QpContext& qp, const Packet& p);
  void OnReadResponse(QpContext& qp, std::uint32_t packet_id);
  // A response after `expected`, the next one read `counter` lacks, arrived: resends the read
  // from `expected` at once (implied NAK), once per gap.
  void OnReadGap(QpContext& qp, std::uint32_t counter, Psn expected);
  // Everything up to `psn` is acknowledged: completes the sends and writes it covers.
  void AcknowledgeUpTo(QpContext& qp, Psn psn);
  // The peer has taken everything up to `psn`; if that is new, the retry counts and the ACK
  // timer start again.
  void NoteProgress(QpContext& qp, Psn psn);
  // Something new arrived: the retry budgets and the ACK timer start again.
  void MadeProgress(QpContext& qp);
  // Where go-back-N resumes for the oldest unacknowledged WQE `counter`.
  Psn ResendPoint(const QpContext& qp, std::uint32_t counter) const;
  void Retire(QpContext& qp);
  void RestartTimer(QpContext& qp);
  // Stops the ACK timer (and an RNR delay): their events are cancelled, and any still running
  // finds itself stale by the generation.
  void CancelTimer(QpContext& qp);
  // Nothing awaits an acknowledgement: the timer stops and its event is cancelled.
  void DisarmTimer(QpContext& qp);
  void ScheduleTimer(QpContext& qp);
  void OnTimeout(Qpn qpn, std::uint64_t generation);
  void OnRnrDelayOver(Qpn qpn, std::uint64_t generation, std::uint32_t counter, Psn psn);
  // WQE whose PSN range holds `psn`, or false.
  bool FindByPsn(QpContext& qp, Psn psn, std::uint32_t* counter);
  bool OldestAwaiting(QpContext& qp, std::uint32_t* counter);
  // The oldest read still waiting for responses (the only one a response may be for), or false.
  bool OldestIncompleteRead(QpContext& qp, std::uint32_t* counter);

  Nic& nic_;
  EventQueue& events_;
};

}  // namespace ndksim::hw
