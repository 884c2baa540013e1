// SPDX-License-Identifier: MIT
#include "qp_state.h"

#include "completer.h"
#include "contexts.h"
#include "nic.h"
#include "port.h"
#include "requester.h"
#include "responder.h"
#include "wqe_fetch.h"
#include "ndksim/trace.h"

namespace ndksim::hw {

QpStateMachine::QpStateMachine(Nic& nic, Requester& requester, Responder& responder, Completer& completer,
                               WqeFetch& fetch, Port& port)
    : nic_(nic), requester_(requester), responder_(responder), completer_(completer), fetch_(fetch), port_(port) {}

CommandStatus QpStateMachine::Connect(QpContext& qp, const QpConnect& connect) {
  if (qp.state != QpState::kReset) return CommandStatus::kInvalidState;
  qp.remote_node = connect.remote_node;
  qp.remote_qpn = connect.remote_qpn;
  qp.inbound_read_limit = connect.inbound_read_limit;
  qp.outbound_read_limit = connect.outbound_read_limit;
  const Psn send_psn{connect.send_psn & Psn::kMask};
  requester_.OnConnect(qp, send_psn);
  completer_.OnConnect(qp, send_psn);
  responder_.OnConnect(qp, Psn{connect.receive_psn & Psn::kMask});
  qp.state = QpState::kReadyToSend;
  NDKSIM_TRACE(nic_.Trace(), nic_.Events().Now(), nic_.Id(), Requester, "qp {} connected to n{} qp {}", qp.qpn.value,
               connect.remote_node, connect.remote_qpn.value);
  // WQEs may have been rung before the connection was made.
  fetch_.Kick(qp);
  return CommandStatus::kOk;
}

void QpStateMachine::EnterError(QpContext& qp, QpErrorCause cause) {
  if (qp.state == QpState::kError) return;
  const bool was_connected = qp.state == QpState::kReadyToSend;
  qp.state = QpState::kError;
  NDKSIM_TRACE(nic_.Trace(), nic_.Events().Now(), nic_.Id(), Completer, "qp {} enters error (cause {})", qp.qpn.value,
               Name(cause));
  requester_.Abort(qp);
  completer_.StopTimer(qp);
  if (cause == QpErrorCause::kLocal && was_connected) {
    // Tell the peer so its QP flushes too (the iWARP TERMINATE / IB disconnect of real stacks).
    std::uint32_t id;
    Packet& p = port_.Pool().Acquire(&id);
    p.source_node = nic_.Id();
    p.destination_node = qp.remote_node;
    p.source_qpn = qp.qpn;
    p.destination_qpn = qp.remote_qpn;
    p.opcode = PacketOpcode::kTerminate;
    p.psn = qp.requester.next_psn;
    port_.Transmit(id);
  }
  if (cause != QpErrorCause::kConsumer && was_connected) {
    EventEntry e{};
    e.type = EventType::kConnectionAbort;
    e.object = qp.qpn.value;
    nic_.PostEvent(e);
  }
  completer_.FlushFetched(qp);
  fetch_.Kick(qp);
  responder_.FlushReceives(qp);
}

void QpStateMachine::ConsumerError(QpContext& qp) {
  if (qp.state != QpState::kError) {
    EnterError(qp, QpErrorCause::kConsumer);
    return;
  }
  // Already in error: the error state completes everything posted, whenever posted. WQEs the
  // host published since (deferred, or rung by a doorbell that was lost) are read from the
  // doorbell record and flushed now, and so are receives posted since.
  fetch_.Kick(qp);
  responder_.FlushReceives(qp);
}

}  // namespace ndksim::hw
