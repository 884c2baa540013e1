// SPDX-License-Identifier: MIT
/// @file
/// How the simulated provider completes calls that may complete asynchronously (FabricConfig).
#pragma once

#include <cstdint>

namespace ndksim {

/// How the provider completes a call that may complete asynchronously: every create, request
/// (listen, connect failure, complete-connect, register/deregister MR, resize CQ, ...) and close
/// that the consumer gave a completion callback. In every mode NDK's rule holds: a call that returns
/// STATUS_PENDING gets exactly one completion callback later, any other return gets none. Calls
/// without a callback always complete inline. Connect, accept and disconnect pend by nature in
/// every mode.
enum class AsyncCompletion : std::uint8_t {
  kInline,        ///< complete inline whenever the call allows it (the default)
  kPending,       ///< return STATUS_PENDING and call back from a DPC, after the call returned
  kPendingInCall, ///< call back from inside the call, then return STATUS_PENDING; the consumer may
                  ///< close the object in that callback, so the provider must not touch it again
  kMixed,         ///< per call, a seeded choice between kInline and kPending
};

}  // namespace ndksim
