// SPDX-License-Identifier: MIT
/// @file
/// The simulated RNIC's architectural limits: what its WQE, context and wire formats can express.
/// A hardware profile may set a field up to these bounds and no further; HardwareProfile validation
/// and the hardware model both read them from here, so a limit is written once.
#pragma once

#include <cstdint>

/// The simulated RNIC's architectural limits: the bounds a HardwareProfile is validated against.
namespace ndksim::limits {

/// @name WQE segments

/// A WQE is at most 64 segments of 16 bytes (1 KiB). A send-queue WQE spends one on its control
/// segment and one on its remote address, leaving 62 for data segments (SGEs). Receive WQEs use the
/// same slot format, so both kinds carry at most 62 SGEs.
///@{
inline constexpr std::uint32_t kWqeSegments = 64;
inline constexpr std::uint32_t kMaxSge = kWqeSegments - 2;
///@}
/// Inline payload a WQE may carry (its data segments hold the bytes).
inline constexpr std::uint32_t kMaxInlineBytes = 1024;
/// Send WQEs a QP may hold on the NIC at once (fetched and not yet retired).
inline constexpr std::uint32_t kDescriptorSlots = 64;
/// Inbound reads (IRD) a QP's responder can queue.
inline constexpr std::uint32_t kMaxInboundReads = 128;
/// Retry counters are 3-bit fields of the QP context.
inline constexpr std::uint32_t kMaxRetryCount = 7;
/// CQ entries a CQ may have (a 24-bit index with its phase bit).
inline constexpr std::uint32_t kMaxCqDepth = 1u << 24;
/// @name Object numbers

/// QP numbers are 24 bits and carry a generation; the table holds fewer than 2^23 entries. CQ and
/// SRQ numbers follow the same layout.
///@{
inline constexpr std::uint32_t kMaxQps = (1u << 23) - 1;
inline constexpr std::uint32_t kMaxCqs = (1u << 23) - 1;
///@}
/// Memory tokens carry a 24-bit index and a key byte.
inline constexpr std::uint32_t kMaxMrs = (1u << 24) - 1;
/// Private data a connection-management message carries.
inline constexpr std::uint32_t kMaxPrivateData = 512;
/// A fast-register MR has at least this many pages (an NDK requirement of every provider).
inline constexpr std::uint32_t kMinFastRegisterPages = 16;

}  // namespace ndksim::limits
