// SPDX-License-Identifier: MIT
// The one place where hardware outcomes become NTSTATUS (DESIGN.md "Errors: four kinds"): the
// completion syndrome of a CQE, the status of a NIC command and the status of a CQ error event.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "hwmodel/host_interface.h"
#include "hwmodel/device.h"
#include "ndkpi.h"
#include "ndksim/profile.h"

namespace ndksim::provider {

inline constexpr std::size_t kSyndromeCount = hw::kCompletionSyndromeNames.size();

// NTSTATUS of each completion syndrome with the profile's transport policy folded in (only
// RemoteAccessError depends on it, ref §4.7). Built once per driver; the poll path indexes it.
class CompletionStatusTable {
 public:
  explicit CompletionStatusTable(RemoteAccessErrorStatus remote_access_policy);

  NTSTATUS operator()(hw::CompletionSyndrome s) const {
    const auto i = static_cast<std::size_t>(s);
    // A syndrome outside the enum can only come from a corrupt CQE: report a device failure.
    return i < kSyndromeCount ? statuses_[i] : STATUS_INTERNAL_ERROR;
  }

 private:
  std::array<NTSTATUS, kSyndromeCount> statuses_;
};

// Status of a synchronous NIC command as the NDK call that issued it reports it.
NTSTATUS CommandToNtStatus(hw::CommandStatus s);

// Status handed to the CQ notification callback for a kCqError event (ref §3.13).
NTSTATUS CqErrorToNtStatus(std::uint32_t event_status);

}  // namespace ndksim::provider
