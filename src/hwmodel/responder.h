// SPDX-License-Identifier: MIT
// The responder: checks incoming request packets in the transport's order (QP state, PSN, opcode
// sequence, then per operation: receive WQE, length, token, rights, range) and places their data,
// answers reads within the inbound read limit (IRD), and acknowledges.
#pragma once

#include <cstdint>

#include "event_queue.h"
#include "nic.h"
#include "packet.h"

namespace ndksim::hw {

struct QpContext;
struct ReceivePrefetch;
struct InboundRead;

// Outcome of the responder's checks on one packet, in the order they are applied.
enum class ResponderCheck : std::uint8_t {
  kAccept,
  kDropNoQp,           // no such QP or not ready to receive: silently dropped
  kDuplicate,          // PSN already seen: re-acknowledged (a read request: executed again)
  kOutOfSequence,      // PSN ahead of the expected one: NAK (sequence error)
  kSilentDiscard,      // after a NAK, until the requester resends the expected PSN
  kBadOpcodeSequence,  // Middle/Last without First, or First inside a message: NAK invalid
};

// Pure check of PSN and opcode sequence for `p` against the responder part of `qp`.
ResponderCheck CheckSequence(const QpContext& qp, const Packet& p);

// Which request of which node a packet belongs to, for the request log.
struct RequestRef {
  NodeId node = 0;
  std::uint32_t qpn = 0;
  std::uint32_t wqe = 0;
};

class Responder {
 public:
  Responder(Nic& nic, EventQueue& events) : nic_(nic), events_(events) {}

  // A request packet arrived (takes ownership of the packet).
  void OnPacket(std::uint32_t packet_id);
  // Message from the NIC's command processing: the QP was connected; the first PSN it expects
  // is `receive_psn`.
  void OnConnect(QpContext& qp, Psn receive_psn);
  // Completes every receive WQE the host has published on a QP in error as flushed.
  void FlushReceives(QpContext& qp);

 private:
  void OnSend(QpContext& qp, std::uint32_t packet_id);
  void OnWrite(QpContext& qp, std::uint32_t packet_id);
  // `duplicate`: a request for PSNs already seen (a resent read), executed again without moving
  // the expected PSN.
  void OnReadRequest(QpContext& qp, std::uint32_t packet_id, bool duplicate);
  bool StartReceive(QpContext& qp);
  // Takes the next receive WQE of the QP's SRQ (ref §3.16); false if the SRQ is empty.
  bool StartSrqReceive(QpContext& qp);
  void SendAck(QpContext& qp, Psn psn, AckSyndrome syndrome);
  // Acknowledges `psn` once every placement issued so far has landed in host memory, so that a
  // completed request at the initiator means the data is in the target's memory. `request`, at
  // the end of a message, is marked "last byte placed" in the request log.
  void AckWhenPlaced(QpContext& qp, Psn psn, const RequestRef* request);
  // Refuses the request at `psn`: NAK, then the QP enters the error state. A responder answers in
  // PSN order, so while responses to earlier reads are still to be sent the NAK waits behind them
  // (and the QP takes no more requests); FailNow does not wait.
  void Fail(QpContext& qp, Psn psn, AckSyndrome syndrome);
  void FailNow(QpContext& qp, Psn psn, AckSyndrome syndrome);
  // Completes the current receive with `receive`, then fails as above with `nak`.
  void FailReceive(QpContext& qp, Psn psn, CompletionSyndrome receive, AckSyndrome nak);
  // After the processing unit: queues the read's responses behind those of earlier reads.
  void StartReadResponse(Qpn qpn, const InboundRead& read);
  // Reads response data while the response buffer and the PCIe link have room, and sends the
  // responses whose data is in, in order, when the port is free; until neither can go on.
  void PumpResponses(QpContext& qp);
  bool ReadResponseData(QpContext& qp);
  bool SendResponses(QpContext& qp);
  void OnResponseData(Qpn qpn, std::uint32_t slot);
  // Resumes registered with the port and the PCIe link: the transmitter, or a read slot, that
  // `qpn`'s read responses waited for is free.
  void OnTransmitterFree(Qpn qpn);
  void OnReadSlotFree(Qpn qpn);
  // Builds response `index` of `read` from host memory and transmits it; false if its token
  // went away meanwhile (the QP is then in error).
  bool SendReadResponse(QpContext& qp, const InboundRead& read, std::uint32_t index, std::uint32_t length);
  // When receive WQE `counter` of queue `q` is on the NIC: now if it was read ahead, else when the
  // read in flight or an on-demand read lands. Tops the prefetch up.
  TimePoint ReceiveWqeReady(ReceivePrefetch& pf, const WorkQueue& q, std::uint32_t counter, QpCounters* account);

  Nic& nic_;
  EventQueue& events_;
};

}  // namespace ndksim::hw
