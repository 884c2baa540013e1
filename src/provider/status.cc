// SPDX-License-Identifier: MIT
// Tables mapping hardware outcomes to NTSTATUS; each has one entry per enumerator, checked by size.
#include "status.h"

namespace ndksim::provider {
namespace {

using hw::CompletionSyndrome;

// Indexed by CompletionSyndrome, in the enum's order (ref §4.7 status matrix).
constexpr std::array<NTSTATUS, kSyndromeCount> kCompletionStatus = {
    STATUS_SUCCESS,                 // Success
    STATUS_DATA_OVERRUN,            // LocalLengthError: SGEs describe more than may move
    STATUS_ACCESS_VIOLATION,        // LocalProtectionError
    STATUS_INTERNAL_ERROR,          // LocalQpOperationError
    STATUS_CANCELLED,               // Flushed (ref §3.9)
    STATUS_BUFFER_OVERFLOW,         // ReceiveOverflow: incoming send larger than the buffer
    STATUS_ACCESS_VIOLATION,        // RemoteAccessError: replaced per profile below
    STATUS_REMOTE_RESOURCES,        // RemoteInvalidRequest: the request failed at the remote QP
    STATUS_REMOTE_RESOURCES,        // RemoteOperationError
    STATUS_IO_TIMEOUT,              // TransportRetryExceeded
    STATUS_IO_TIMEOUT,              // RnrRetryExceeded: NDK has no RNR status (ref §4.7)
    STATUS_INVALID_DEVICE_REQUEST,  // InvalidRequest: malformed WR
    STATUS_INTERNAL_ERROR,          // Fatal
};
static_assert(kCompletionStatus.size() == static_cast<std::size_t>(CompletionSyndrome::kFatal) + 1);
static_assert(kCompletionStatus[static_cast<std::size_t>(CompletionSyndrome::kFlushed)] == STATUS_CANCELLED);
static_assert(kCompletionStatus[static_cast<std::size_t>(CompletionSyndrome::kInvalidRequest)] ==
              STATUS_INVALID_DEVICE_REQUEST);

// Indexed by hw::CommandStatus.
constexpr std::array<NTSTATUS, 6> kCommandStatus = {
    STATUS_SUCCESS,                 // kOk
    STATUS_INSUFFICIENT_RESOURCES,  // kNoResources: a NIC table is full
    STATUS_INVALID_PARAMETER,       // kInvalidArgument
    STATUS_INVALID_DEVICE_STATE,    // kInvalidState
    STATUS_INVALID_PARAMETER,       // kNotFound: the consumer named an object the NIC lacks
    STATUS_DEVICE_BUSY,             // kBusy: still referenced (NDSPI: deregister with bound MW)
};
static_assert(kCommandStatus.size() == static_cast<std::size_t>(hw::CommandStatus::kBusy) + 1);

}  // namespace

CompletionStatusTable::CompletionStatusTable(RemoteAccessErrorStatus remote_access_policy)
    : statuses_(kCompletionStatus) {
  // ref §4.7: NDSPI tests expect ACCESS_VIOLATION, the NdkRead page REMOTE_RESOURCES.
  statuses_[static_cast<std::size_t>(CompletionSyndrome::kRemoteAccessError)] =
      remote_access_policy == RemoteAccessErrorStatus::kRemoteResources ? STATUS_REMOTE_RESOURCES
                                                                         : STATUS_ACCESS_VIOLATION;
}

NTSTATUS CommandToNtStatus(hw::CommandStatus s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kCommandStatus.size() ? kCommandStatus[i] : STATUS_INTERNAL_ERROR;
}

NTSTATUS CqErrorToNtStatus(std::uint32_t event_status) {
  // ref §3.13: an overrun is BUFFER_OVERFLOW, a fatal CQ or hardware error INTERNAL_ERROR.
  return event_status == hw::cq_error::kOverrun ? STATUS_BUFFER_OVERFLOW : STATUS_INTERNAL_ERROR;
}

}  // namespace ndksim::provider
