// SPDX-License-Identifier: MIT
// The requester: turns fetched WQEs into packets. A QP's WQEs pass in order through its processing
// unit (fence and ORD checks, local translation, PSN assignment) and then the segmenter, which
// cuts messages into MTU packets, reads each packet's payload by DMA as it goes (so the first
// packet leaves before the whole message is read), and stages packets in the QP's transmit buffer.
// Staged packets go on the wire in PSN order as their payload arrives. Retransmission rewinds both
// stages.
#pragma once

#include <cstdint>

#include "event_queue.h"
#include "nic.h"
#include "packet.h"
#include "translation.h"

namespace ndksim::hw {

struct QpContext;
struct WqeDescriptor;

class Requester {
 public:
  Requester(Nic& nic, EventQueue& events) : nic_(nic), events_(events) {}

  // `qp` may have a WQE ready for its processing unit.
  void Schedule(QpContext& qp);
  // Message from the NIC's command processing: the QP was connected; its first PSN is `send_psn`.
  void OnConnect(QpContext& qp, Psn send_psn);
  // Messages from the completer. A read retired: outstanding reads of `qp` dropped (fence / ORD
  // may clear). A read failed: one read fewer is outstanding (the QP is entering the error state).
  // WQEs retired: the completer's head moved, and the pipeline must not stay behind it. Flushed:
  // the QP is in error; every WQE in the requester's stages completes as flushed, and nothing is
  // left to execute or segment.
  void OnReadRetired(QpContext& qp);
  void OnReadFailed(QpContext& qp);
  void OnRetired(QpContext& qp);
  void OnFlushed(QpContext& qp);
  // Message from the completer: resend everything from PSN `from`, which lies in WQE `counter`
  // (go-back-N at packet granularity: the packets before `from` were acknowledged).
  void Rewind(QpContext& qp, std::uint32_t counter, Psn from);
  // Stops everything in flight for `qp` (it entered the error state or is destroyed) and releases
  // its staged packets.
  void Abort(QpContext& qp);

 private:
  // Processing-unit stage of WQE next_exec.
  void Step(Qpn qpn, std::uint64_t generation);
  // The read fence or the outbound read limit holds WQE `d` back.
  // WQE `counter` failed a check at execution: the requester stops at it, and the completer
  // reports the error in posting order (Completer::FailInOrder).
  void FailAtExecution(QpContext& qp, std::uint32_t counter, CompletionSyndrome syndrome);
  bool Stalled(const QpContext& qp, const WqeDescriptor& d) const;
  // Returns false when the WQE failed and was completed with an error.
  bool CheckLocalSges(QpContext& qp, WqeDescriptor& d, std::uint32_t required);
  // Bind, FastRegister, LocalInvalidate: applied to the protection table in posting order, once
  // every packet before them has left.
  bool ExecuteMemoryOperation(QpContext& qp, std::uint32_t counter);
  MemoryOpOutcome ApplyMemoryOperation(QpContext& qp, const WqeDescriptor& d);
  // Runs the segmenter and the transmitter of `qp` until neither can make progress.
  void Pump(QpContext& qp);
  bool Segment(QpContext& qp);
  bool Drain(QpContext& qp);
  // Builds packet `index` of WQE `counter` and stages it; issues its payload read if it has one.
  void StagePacket(QpContext& qp, std::uint32_t counter, std::uint32_t index, std::uint32_t bytes);
  // The payload's DMA read, issued once its keys and pages are on chip (Translation::FetchSges).
  void ReadPayload(QpContext& qp, std::uint32_t slot, std::uint32_t bytes);
  void OnPayloadRead(Qpn qpn, std::uint64_t generation, std::uint32_t slot);
  // Resumes registered with the port and the PCIe link: the transmitter, or a read slot, that
  // `qpn` waited for is free.
  void OnTransmitterFree(Qpn qpn);
  void OnReadSlotFree(Qpn qpn);
  void ReleaseStaged(QpContext& qp);
  std::uint32_t PacketsFor(std::uint64_t bytes) const;
  std::uint32_t PacketBytes(const WqeDescriptor& d, std::uint32_t index) const;

  Nic& nic_;
  EventQueue& events_;
};

// Copies `length` bytes starting at message offset `offset` out of the SGEs of `d` (host memory
// through translation) or out of its inline data. False if a translation fails.
bool GatherPayload(Nic& nic, const QpContext& qp, const WqeDescriptor& d, std::uint64_t offset,
                   std::uint32_t length, std::byte* out);

}  // namespace ndksim::hw
