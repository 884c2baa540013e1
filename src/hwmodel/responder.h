// SPDX-License-Identifier: MIT
// The responder: checks incoming request packets in the transport's order (QP state, PSN, opcode
// sequence, then per operation: receive WQE, length, token, rights, range) and places their data,
// answers reads within the inbound read limit (IRD), and acknowledges.
#pragma once

#include <cstdint>
#include <string_view>

#include "event_queue.h"
#include "nic.h"
#include "packet.h"

namespace ndksim::hw {

struct QpContext;
struct ReceivePrefetch;
struct InboundRead;

// What the responder does with a request packet its checks set aside.
enum class RequestAction : std::uint8_t {
  kAccept,         // carry it out
  kDrop,           // silently
  kReacknowledge,  // acknowledge the newest PSN taken again, so a requester that lost the ACK moves on
  kNakSequence,    // NAK with the expected PSN; discard until it comes back
  kNakRnr,         // receiver not ready: NAK without consuming the PSN; the requester retries later
  kFail,           // NAK, then the QP enters the error state
  kFailReceive,    // complete the current receive WQE with an error, then fail as kFail
};

// The responder's checks, in the order it applies them to a request packet (the transport's
// order: QP, PSN, opcode sequence, then per operation the receive WQE, length, token, rights,
// range, and the inbound read limit), each with its outcome: what the responder does, the NAK it
// sends, the status of the receive completion it writes (kFailReceive), and whether the refusal
// counts as a protection fault. One list: the enum, its names and the outcome table below come
// from it. `Check` is the name tests and traces use.
//        Check                Action          NAK syndrome            Receive completion       Fault  Name
#define NDKSIM_RESPONDER_CHECKS(X)                                                                                     \
  X(kAccept,             kAccept,        kAck,                   kSuccess,              false, "accepted")            \
  X(kDropNoQp,           kDrop,          kAck,                   kSuccess,              false, "no such QP")          \
  X(kRefusedEarlier,     kDrop,          kAck,                   kSuccess,              false, "refused earlier")     \
  X(kDuplicate,          kReacknowledge, kAck,                   kSuccess,              false, "duplicate")           \
  X(kOutOfSequence,      kNakSequence,   kPsnSequenceError,      kSuccess,              false, "out of sequence")     \
  X(kSilentDiscard,      kDrop,          kAck,                   kSuccess,              false, "discarded after NAK") \
  X(kBadOpcodeSequence,  kFail,          kRemoteInvalidRequest,  kSuccess,              false, "bad opcode sequence") \
  X(kReceiverNotReady,   kNakRnr,        kRnrNak,                kSuccess,              false, "receiver not ready")  \
  X(kReceiveOverflow,    kFailReceive,   kRemoteInvalidRequest,  kReceiveOverflow,      false, "receive overflow")    \
  X(kReceiveProtection,  kFailReceive,   kRemoteOperationError,  kLocalProtectionError, true,  "receive not writable") \
  X(kBadInvalidateKey,   kFailReceive,   kRemoteAccessError,     kLocalProtectionError, true,  "bad invalidate key")  \
  X(kRemoteAccess,       kFail,          kRemoteAccessError,     kSuccess,              true,  "remote access")       \
  X(kWriteLength,        kFail,          kRemoteInvalidRequest,  kSuccess,              false, "write length")        \
  X(kTooManyReads,       kFail,          kRemoteInvalidRequest,  kSuccess,              false, "inbound read limit")  \
  X(kReadResourcesBusy,  kDrop,          kAck,                   kSuccess,              false, "read resources busy")

enum class ResponderCheck : std::uint8_t {
#define NDKSIM_CHECK_ENUMERATOR(check, action, nak, receive, fault, name) check,
  NDKSIM_RESPONDER_CHECKS(NDKSIM_CHECK_ENUMERATOR)
#undef NDKSIM_CHECK_ENUMERATOR
};

struct RequestOutcome {
  RequestAction action;
  AckSyndrome nak;
  CompletionSyndrome receive;
  bool protection_fault;
  std::string_view name;
};

inline constexpr RequestOutcome kRequestOutcomes[] = {
#define NDKSIM_CHECK_OUTCOME(check, action, nak, receive, fault, name) \
  {RequestAction::action, AckSyndrome::nak, CompletionSyndrome::receive, fault, name},
    NDKSIM_RESPONDER_CHECKS(NDKSIM_CHECK_OUTCOME)
#undef NDKSIM_CHECK_OUTCOME
};

constexpr const RequestOutcome& Outcome(ResponderCheck check) { return kRequestOutcomes[static_cast<std::size_t>(check)]; }
constexpr std::string_view Name(ResponderCheck check) { return Outcome(check).name; }

// The checks that need only the packet and the responder's state, in order: PSN, then opcode
// sequence. Pure functions.
ResponderCheck CheckPsn(const QpContext& qp, const Packet& p);
ResponderCheck CheckOpcodeSequence(const QpContext& qp, const Packet& p);
// Both, as the responder applies them.
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
  // Per-operation checks, in the order OnSend, OnWrite and OnReadRequest apply them. Some take
  // what they check (TakeReceiveWqe the receive WQE, ScheduleInvalidate the invalidation).
  ResponderCheck TakeReceiveWqe(QpContext& qp);
  ResponderCheck CheckReceiveLength(const QpContext& qp, std::uint32_t length) const;
  ResponderCheck CheckReceiveAccess(const QpContext& qp, std::uint32_t length);
  ResponderCheck ScheduleInvalidate(QpContext& qp, std::uint32_t key);
  ResponderCheck CheckRemoteAccess(const QpContext& qp, std::uint32_t key, std::uint64_t address, std::uint32_t length,
                                   std::uint32_t required, bool inject);
  ResponderCheck CheckWriteLength(const QpContext& qp, std::uint32_t length, bool last) const;
  ResponderCheck CheckReadLimit(const QpContext& qp, bool duplicate) const;
  // Carries out the outcome of `check` (kRequestOutcomes) for the request at `psn`, releasing
  // packet `packet_id` (kNoPacket: none, or the caller releases it) at the point the outcome says.
  static constexpr std::uint32_t kNoPacket = UINT32_MAX;
  void Refuse(QpContext& qp, Psn psn, ResponderCheck check, std::uint32_t packet_id = kNoPacket);

  void OnSend(QpContext& qp, std::uint32_t packet_id);
  void OnWrite(QpContext& qp, std::uint32_t packet_id);
  // `duplicate`: a request for PSNs already seen (a resent read), executed again without moving
  // the expected PSN, after the responses still queued from its PSN on are dropped
  // (DropReadsFrom).
  void OnReadRequest(QpContext& qp, std::uint32_t packet_id, bool duplicate);
  // A duplicate read request asks again from `psn` (IBTA's duplicate RDMA READ handling): every
  // queued read whose responses reach `psn` or beyond goes, with its IRD resource, and so do
  // their responses not yet sent. The requester resends everything after `psn` in order, so
  // the reads that come back replace them, and no response is sent twice from one request.
  void DropReadsFrom(QpContext& qp, Psn psn);
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
  // Gives the QP's next queued read to its processing unit, unless the unit is still setting up
  // one of the QP's reads.
  void SetUpNextRead(QpContext& qp);
  // The processing unit has set up a read of `qpn` (unless a drop moved `generation` on): its
  // responses may start, and the next read is given to the unit.
  void OnReadSetUp(Qpn qpn, std::uint32_t generation);
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
