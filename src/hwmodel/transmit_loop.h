// SPDX-License-Identifier: MIT
// The transmit loop the requester and the responder share: each stages one QP's packets in a ring
// of its own and sends them from it in order, through the port they share. The loop is the
// block's own code (it runs on the block's state); only its shape is common.
#pragma once

#include <cstdint>
#include <optional>

#include "event_queue.h"
#include "port.h"

namespace ndksim::hw {

// What a transmit loop finds at the head of a block's staged packets.
enum class StagedHead : std::uint8_t { kNotReady, kDiscard, kReady };

// While there is a head (`head()`): a head not ready yet stops the loop; a discarded one is
// dropped (`discard()`) without waiting for the transmitter; a ready one waits for the transmitter,
// then `transmit()` takes it off and sends it (false: stop, the QP has failed). When the
// transmitter is busy, the block's resume (`make_resume()`) is registered once: `awaiting`, the
// block's flag, remembers that it is, and the block clears it when the resume runs. Returns whether
// a packet left or was dropped.
template <typename HeadFn, typename DiscardFn, typename TransmitFn, typename MakeResumeFn>
bool TransmitInOrder(Port& port, TimePoint now, bool& awaiting, HeadFn head, DiscardFn discard, TransmitFn transmit,
                     MakeResumeFn make_resume) {
  bool progress = false;
  for (;;) {
    const std::optional<StagedHead> h = head();
    if (!h || *h == StagedHead::kNotReady) return progress;
    if (*h == StagedHead::kDiscard) {
      discard();
      progress = true;
      continue;
    }
    // The port takes the next packet when it has finished the current one.
    if (port.TransmitFreeAt() > now) {
      if (!awaiting) {
        awaiting = true;
        port.AwaitTransmitter(make_resume());
      }
      return progress;
    }
    if (!transmit()) return true;
    progress = true;
  }
}

}  // namespace ndksim::hw
