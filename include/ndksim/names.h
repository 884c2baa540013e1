// SPDX-License-Identifier: MIT
/// @file
/// Names for NDK values (NTSTATUS, operation types, flag words, results) and for fault rules, so
/// that test failures, traces and logs read "STATUS_IO_TIMEOUT, Write" instead of numbers.
///
/// One convention throughout:
///   - `XName(v)` returns the name of a known value as a string_view into static storage, or an
///     EMPTY string_view when `v` has no name (so `if (name.empty())` tells unknown values apart).
///   - `XString(v)` always returns something printable: the name, or a stable hex fallback for an
///     unknown value (e.g. "NTSTATUS 0xC0001234"). Use these in messages.
///   - Flag words have only `XFlagsString(flags)`: the names of the set flags joined by '|', in
///     the order of ndkpi.h, then any bits without a name as one hex number ("0x8000"); "0" when
///     no bit is set. A flag whose value spans several bits (NDK_OP_FLAG_ALLOW_REMOTE_WRITE = 0x30
///     includes NDK_OP_FLAG_ALLOW_LOCAL_WRITE = 0x10) is named only when all its bits are set, and
///     then its sub-flag is not named again.
/// Not a hot path: these allocate.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

#include "ndkpi.h"
#include "ndksim/faults.h"

namespace ndksim {

/// NTSTATUS / NDIS_STATUS: every STATUS_* of ndkpi.h ("STATUS_CANCELLED") and the NDIS_STATUS_*
/// values that are not aliases of one ("NDIS_STATUS_BAD_VERSION"); empty for others.
std::string_view StatusName(NTSTATUS s);
/// StatusName, or "NTSTATUS 0xC0001234" for a value without a name.
std::string StatusString(NTSTATUS s);

/// An NDK_OPERATION_TYPE without its prefix: "Receive", "ReceiveAndInvalidate", "Send",
/// "FastRegister", "Bind", "Invalidate", "Read", "Write"; empty for others.
std::string_view OperationTypeName(NDK_OPERATION_TYPE t);
/// OperationTypeName, or "NDK_OPERATION_TYPE 0x1234".
std::string OperationTypeString(NDK_OPERATION_TYPE t);

/// NdkArmCq's Type: "NDK_CQ_NOTIFY_ERRORS", "NDK_CQ_NOTIFY_ANY", "NDK_CQ_NOTIFY_SOLICITED";
/// empty for others.
std::string_view CqNotifyTypeName(ULONG type);
/// CqNotifyTypeName, or "NDK_CQ_NOTIFY 0x7".
std::string CqNotifyTypeString(ULONG type);

/// Work-request Flags (NDK_OP_FLAG_*), e.g. "NDK_OP_FLAG_INLINE|NDK_OP_FLAG_DEFER".
std::string OpFlagsString(ULONG flags);
/// NdkRegisterMr Flags (NDK_MR_FLAG_*). NDK_MR_FLAG_ALLOW_LOCAL_READ is 0 and so prints as "0".
std::string MrFlagsString(ULONG flags);
/// NDK_ADAPTER_INFO.AdapterFlags (NDK_ADAPTER_FLAG_*).
std::string AdapterFlagsString(ULONG flags);

/// A completion, every field:
///   "STATUS_IO_TIMEOUT, BytesTransferred=0, QPContext=0x.., RequestContext=0x.."
std::string ResultString(const NDK_RESULT& r);
///   "STATUS_IO_TIMEOUT, Write, BytesTransferred=0, QPContext=0x.., RequestContext=0x..,
///    ProviderErrorCode=0x0, TypeSpecificCompletionOutput=0x0"
std::string ResultString(const NDK_RESULT_EX& r);

/// @name Fault-rule names

/// Fault-rule enumerators: "wire", "drop", "request" (lower case, '-' between words). Every
/// enumerator has a name (a switch without default: -Wswitch flags a new one); a value outside
/// the enum gives "?", as faults.h's Name() does (FaultPointName and FaultActionName are Name()).
///@{
std::string_view FaultPointName(FaultPoint p);
std::string_view FaultActionName(FaultAction a);
std::string_view PacketClassName(PacketClass c);
///@}

/// A rule in one line: its hook point (rule.Point()), action and count always, other fields only
/// when they differ from their defaults: "FaultRule{wire: drop, node 0, request packets, count 1}",
/// "FaultRule{wire: delay 2 us, link to node 1, from 10 us, until 20 us, skip 3, every time,
/// probability 0.5}". Times print in the largest unit that divides them exactly.
std::string ToString(const FaultRule& rule);
/// Streams ToString(rule); found by ADL, so GoogleTest prints rules with it.
std::ostream& operator<<(std::ostream& os, const FaultRule& rule);

}  // namespace ndksim
