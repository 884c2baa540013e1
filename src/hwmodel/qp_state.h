// SPDX-License-Identifier: MIT
// The QP state machine: a QP goes from Reset to ReadyToSend when it is connected, and from either
// to Error, once, when the consumer, this NIC or the peer ends it. Entering the error state is one
// sequence whoever causes it: the requester stops, the ACK timer stops, what the QP had fetched and
// what it still holds is flushed, and, depending on the cause, the peer gets a Terminate and the
// host an abort event.
#pragma once

#include <cstdint>
#include <string_view>

#include "hwmodel/device.h"
#include "hwmodel/host_interface.h"

namespace ndksim::hw {

class Nic;
struct QpContext;
class Requester;
class Responder;
class Completer;
class WqeFetch;
class Port;

// Why a QP enters the error state: decides who else must hear of it.
//   kConsumer: the driver asked (flush, disconnect): nobody else is told.
//   kLocal: this NIC found the error: the peer gets a Terminate, the host an abort event.
//   kRemote: the peer reported or caused it: the host gets an abort event.
#define NDKSIM_QP_ERROR_CAUSES(X) X(kConsumer, "consumer") X(kLocal, "local") X(kRemote, "remote")
enum class QpErrorCause : std::uint8_t {
#define NDKSIM_X(cause, name) cause,
  NDKSIM_QP_ERROR_CAUSES(NDKSIM_X)
#undef NDKSIM_X
};
constexpr std::string_view Name(QpErrorCause c) {
  constexpr std::string_view kNames[] = {
#define NDKSIM_X(cause, name) name,
      NDKSIM_QP_ERROR_CAUSES(NDKSIM_X)
#undef NDKSIM_X
  };
  return kNames[static_cast<std::size_t>(c)];
}

class QpStateMachine {
 public:
  // The blocks a transition drives; `nic` only for its event queue to the host (PostEvent), its
  // identity and its trace.
  QpStateMachine(Nic& nic, Requester& requester, Responder& responder, Completer& completer, WqeFetch& fetch,
                 Port& port);

  // Reset -> ReadyToSend: the peer, the read limits and both PSNs; kInvalidState from any other.
  CommandStatus Connect(QpContext& qp, const QpConnect& connect);
  // -> Error, once (a QP already in error stays as it is).
  void EnterError(QpContext& qp, QpErrorCause cause);
  // The consumer's command: enters the error state, or, already there, flushes what the host has
  // published since (deferred WQEs, receives posted after the flush).
  void ConsumerError(QpContext& qp);

 private:
  Nic& nic_;
  Requester& requester_;
  Responder& responder_;
  Completer& completer_;
  WqeFetch& fetch_;
  Port& port_;
};

}  // namespace ndksim::hw
