// SPDX-License-Identifier: MIT
// Names for NDK values and fault rules (names.h): the tables built from ndkpi.h's defines and the
// formatting of results and rules.
#include "ndksim/names.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <ostream>

#include <fmt/format.h>

namespace ndksim {
namespace {

// A named value of ndkpi.h; NDKSIM_NAMED(X) spells each name once, so table and define agree.
struct Named {
  std::uint32_t value;
  std::string_view name;
};
#define NDKSIM_NAMED(define) \
  Named { static_cast<std::uint32_t>(define), #define }

// Every STATUS_* of ndkpi.h, in its order, and the NDIS_STATUS_* values of their own
// (NDIS_STATUS_SUCCESS and NDIS_STATUS_RESOURCES are STATUS_SUCCESS and
// STATUS_INSUFFICIENT_RESOURCES, and print as those).
constexpr std::array kStatuses = {
    NDKSIM_NAMED(STATUS_SUCCESS),
    NDKSIM_NAMED(STATUS_TIMEOUT),
    NDKSIM_NAMED(STATUS_PENDING),
    NDKSIM_NAMED(STATUS_BUFFER_OVERFLOW),
    NDKSIM_NAMED(STATUS_DEVICE_BUSY),
    NDKSIM_NAMED(STATUS_NO_MORE_ENTRIES),
    NDKSIM_NAMED(STATUS_UNSUCCESSFUL),
    NDKSIM_NAMED(STATUS_ACCESS_VIOLATION),
    NDKSIM_NAMED(STATUS_INVALID_PARAMETER),
    NDKSIM_NAMED(STATUS_INVALID_DEVICE_REQUEST),
    NDKSIM_NAMED(STATUS_END_OF_FILE),
    NDKSIM_NAMED(STATUS_NO_MEMORY),
    NDKSIM_NAMED(STATUS_BUFFER_TOO_SMALL),
    NDKSIM_NAMED(STATUS_INVALID_PARAMETER_MIX),
    NDKSIM_NAMED(STATUS_DATA_OVERRUN),
    NDKSIM_NAMED(STATUS_DATA_ERROR),
    NDKSIM_NAMED(STATUS_SHARING_VIOLATION),
    NDKSIM_NAMED(STATUS_DELETE_PENDING),  // not ndkpi.h's: IoAcquireRemoveLock's, in the kernel environment
    NDKSIM_NAMED(STATUS_INSUFFICIENT_RESOURCES),
    NDKSIM_NAMED(STATUS_DEVICE_NOT_READY),
    NDKSIM_NAMED(STATUS_IO_TIMEOUT),
    NDKSIM_NAMED(STATUS_NOT_SUPPORTED),
    NDKSIM_NAMED(STATUS_INTERNAL_ERROR),
    NDKSIM_NAMED(STATUS_CANCELLED),
    NDKSIM_NAMED(STATUS_LOCAL_DISCONNECT),
    NDKSIM_NAMED(STATUS_REMOTE_DISCONNECT),
    NDKSIM_NAMED(STATUS_REMOTE_RESOURCES),
    NDKSIM_NAMED(STATUS_LINK_FAILED),
    NDKSIM_NAMED(STATUS_LINK_TIMEOUT),
    NDKSIM_NAMED(STATUS_INVALID_ADDRESS),
    NDKSIM_NAMED(STATUS_INVALID_DEVICE_STATE),
    NDKSIM_NAMED(STATUS_INVALID_BUFFER_SIZE),
    NDKSIM_NAMED(STATUS_INVALID_ADDRESS_COMPONENT),
    NDKSIM_NAMED(STATUS_INVALID_ADDRESS_WILDCARD),
    NDKSIM_NAMED(STATUS_TOO_MANY_ADDRESSES),
    NDKSIM_NAMED(STATUS_ADDRESS_ALREADY_EXISTS),
    NDKSIM_NAMED(STATUS_CONNECTION_DISCONNECTED),
    NDKSIM_NAMED(STATUS_CONNECTION_RESET),
    NDKSIM_NAMED(STATUS_CONNECTION_REFUSED),
    NDKSIM_NAMED(STATUS_GRACEFUL_DISCONNECT),
    NDKSIM_NAMED(STATUS_ADDRESS_ALREADY_ASSOCIATED),
    NDKSIM_NAMED(STATUS_ADDRESS_NOT_ASSOCIATED),
    NDKSIM_NAMED(STATUS_CONNECTION_INVALID),
    NDKSIM_NAMED(STATUS_CONNECTION_ACTIVE),
    NDKSIM_NAMED(STATUS_NETWORK_UNREACHABLE),
    NDKSIM_NAMED(STATUS_HOST_UNREACHABLE),
    NDKSIM_NAMED(STATUS_PROTOCOL_UNREACHABLE),
    NDKSIM_NAMED(STATUS_PORT_UNREACHABLE),
    NDKSIM_NAMED(STATUS_REQUEST_ABORTED),
    NDKSIM_NAMED(STATUS_CONNECTION_ABORTED),
    NDKSIM_NAMED(STATUS_DEVICE_REMOVED),
    NDKSIM_NAMED(STATUS_IMPLEMENTATION_LIMIT),
    NDKSIM_NAMED(STATUS_NO_SUCH_DEVICE),
    NDKSIM_NAMED(STATUS_MORE_PROCESSING_REQUIRED),
    NDKSIM_NAMED(STATUS_OBJECT_PATH_INVALID),
    NDKSIM_NAMED(STATUS_MEDIA_WRITE_PROTECTED),
    NDKSIM_NAMED(STATUS_REQUEST_NOT_ACCEPTED),
    NDKSIM_NAMED(STATUS_INVALID_PARAMETER_1),
    NDKSIM_NAMED(STATUS_INVALID_PARAMETER_2),
    NDKSIM_NAMED(STATUS_INVALID_PARAMETER_3),
    NDKSIM_NAMED(STATUS_INVALID_CONNECTION),
    NDKSIM_NAMED(STATUS_IO_DEVICE_ERROR),
    NDKSIM_NAMED(STATUS_TRANSACTION_ABORTED),
    NDKSIM_NAMED(NDIS_STATUS_BAD_VERSION),
    NDKSIM_NAMED(NDIS_STATUS_ADAPTER_NOT_READY),
};

// Flag tables, in ndkpi.h's order except that a flag spanning several bits comes before the
// flags whose bits it includes (it is matched first and consumes them).
constexpr std::array kOpFlags = {
    NDKSIM_NAMED(NDK_OP_FLAG_SILENT_SUCCESS),
    NDKSIM_NAMED(NDK_OP_FLAG_READ_FENCE),
    NDKSIM_NAMED(NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT),
    NDKSIM_NAMED(NDK_OP_FLAG_ALLOW_REMOTE_READ),
    NDKSIM_NAMED(NDK_OP_FLAG_ALLOW_REMOTE_WRITE),  // 0x30: before ALLOW_LOCAL_WRITE (0x10)
    NDKSIM_NAMED(NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
    NDKSIM_NAMED(NDK_OP_FLAG_INLINE),
    NDKSIM_NAMED(NDK_OP_FLAG_RDMA_READ_SINK),
    NDKSIM_NAMED(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE),
    NDKSIM_NAMED(NDK_OP_FLAG_DEFER),
};

// NDK_MR_FLAG_ALLOW_LOCAL_READ is 0 (always granted) and has no bit to show.
constexpr std::array kMrFlags = {
    NDKSIM_NAMED(NDK_MR_FLAG_ALLOW_REMOTE_WRITE),  // 0x5: before ALLOW_LOCAL_WRITE (0x1)
    NDKSIM_NAMED(NDK_MR_FLAG_ALLOW_LOCAL_WRITE),
    NDKSIM_NAMED(NDK_MR_FLAG_ALLOW_REMOTE_READ),
    NDKSIM_NAMED(NDK_MR_FLAG_RDMA_READ_SINK),
};

constexpr std::array kAdapterFlags = {
    NDKSIM_NAMED(NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED),
    NDKSIM_NAMED(NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED),
    NDKSIM_NAMED(NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED),
    NDKSIM_NAMED(NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED),
    NDKSIM_NAMED(NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED),
    NDKSIM_NAMED(NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED),
    NDKSIM_NAMED(NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED),
};

constexpr std::array kCqNotifyTypes = {
    NDKSIM_NAMED(NDK_CQ_NOTIFY_ERRORS),
    NDKSIM_NAMED(NDK_CQ_NOTIFY_ANY),
    NDKSIM_NAMED(NDK_CQ_NOTIFY_SOLICITED),
};

#undef NDKSIM_NAMED

// A value table is a lookup: no value may appear twice.
template <std::size_t N>
constexpr bool DistinctValues(const std::array<Named, N>& table) {
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t j = i + 1; j < N; ++j) {
      if (table[i].value == table[j].value) return false;
    }
  }
  return true;
}
static_assert(DistinctValues(kStatuses), "two names for one NTSTATUS value");
static_assert(DistinctValues(kCqNotifyTypes), "two names for one NDK_CQ_NOTIFY value");

// A flag table needs every flag non-zero, and a flag listed after another must not include all of
// its bits (it would be consumed by the first and never named).
template <std::size_t N>
constexpr bool UsableFlags(const std::array<Named, N>& table) {
  for (std::size_t i = 0; i < N; ++i) {
    if (table[i].value == 0) return false;
    for (std::size_t j = i + 1; j < N; ++j) {
      if ((table[j].value & table[i].value) == table[i].value) return false;
    }
  }
  return true;
}
static_assert(UsableFlags(kOpFlags));
static_assert(UsableFlags(kMrFlags));
static_assert(UsableFlags(kAdapterFlags));

template <std::size_t N>
std::string_view Find(const std::array<Named, N>& table, std::uint32_t value) {
  const auto it = std::find_if(table.begin(), table.end(), [value](const Named& n) { return n.value == value; });
  return it == table.end() ? std::string_view{} : it->name;
}

template <std::size_t N>
std::string FlagsString(const std::array<Named, N>& table, ULONG flags) {
  if (flags == 0) return "0";
  std::string out;
  ULONG rest = flags;
  for (const Named& f : table) {
    if ((rest & f.value) != f.value) continue;
    if (!out.empty()) out += '|';
    out += f.name;
    rest &= ~f.value;
  }
  if (rest != 0) {
    if (!out.empty()) out += '|';
    out += fmt::format("{:#x}", rest);
  }
  return out;
}

// The largest unit that divides `ps` exactly: "2 us", "1500 ns", "0 ps".
std::string TimeString(std::int64_t ps) {
  struct Unit {
    std::int64_t picoseconds;
    std::string_view name;
  };
  constexpr std::array<Unit, 4> kUnits = {{
      {1'000'000'000'000, "s"},
      {1'000'000'000, "ms"},
      {1'000'000, "us"},
      {1'000, "ns"},
  }};
  for (const Unit& u : kUnits) {
    if (ps != 0 && ps % u.picoseconds == 0) return fmt::format("{} {}", ps / u.picoseconds, u.name);
  }
  return fmt::format("{} ps", ps);
}

}  // namespace

std::string_view StatusName(NTSTATUS s) { return Find(kStatuses, static_cast<std::uint32_t>(s)); }

std::string StatusString(NTSTATUS s) {
  const std::string_view name = StatusName(s);
  return name.empty() ? fmt::format("NTSTATUS 0x{:08X}", static_cast<std::uint32_t>(s)) : std::string(name);
}

std::string_view OperationTypeName(NDK_OPERATION_TYPE t) {
  switch (t) {
    case NdkOperationTypeReceive: return "Receive";
    case NdkOperationTypeReceiveAndInvalidate: return "ReceiveAndInvalidate";
    case NdkOperationTypeSend: return "Send";
    case NdkOperationTypeFastRegister: return "FastRegister";
    case NdkOperationTypeBind: return "Bind";
    case NdkOperationTypeInvalidate: return "Invalidate";
    case NdkOperationTypeRead: return "Read";
    case NdkOperationTypeWrite: return "Write";
  }
  return {};
}

std::string OperationTypeString(NDK_OPERATION_TYPE t) {
  const std::string_view name = OperationTypeName(t);
  return name.empty() ? fmt::format("NDK_OPERATION_TYPE {:#x}", static_cast<std::uint32_t>(t)) : std::string(name);
}

std::string_view CqNotifyTypeName(ULONG type) { return Find(kCqNotifyTypes, type); }

std::string CqNotifyTypeString(ULONG type) {
  const std::string_view name = CqNotifyTypeName(type);
  return name.empty() ? fmt::format("NDK_CQ_NOTIFY {:#x}", type) : std::string(name);
}

std::string OpFlagsString(ULONG flags) { return FlagsString(kOpFlags, flags); }
std::string MrFlagsString(ULONG flags) { return FlagsString(kMrFlags, flags); }
std::string AdapterFlagsString(ULONG flags) { return FlagsString(kAdapterFlags, flags); }

std::string ResultString(const NDK_RESULT& r) {
  return fmt::format("{}, BytesTransferred={}, QPContext={}, RequestContext={}", StatusString(r.Status),
                     r.BytesTransferred, fmt::ptr(r.QPContext), fmt::ptr(r.RequestContext));
}

std::string ResultString(const NDK_RESULT_EX& r) {
  return fmt::format(
      "{}, {}, BytesTransferred={}, QPContext={}, RequestContext={}, ProviderErrorCode={:#x}, "
      "TypeSpecificCompletionOutput={:#x}",
      StatusString(r.Status), OperationTypeString(r.Type), r.BytesTransferred, fmt::ptr(r.QPContext),
      fmt::ptr(r.RequestContext), r.ProviderErrorCode, r.TypeSpecificCompletionOutput);
}

std::string_view FaultPointName(FaultPoint p) { return Name(p); }
std::string_view FaultActionName(FaultAction a) { return Name(a); }

std::string_view PacketClassName(PacketClass c) { return Name(c); }

std::string ToString(const FaultRule& rule) {
  std::string out = fmt::format("FaultRule{{{}: {}", FaultPointName(rule.Point()), FaultActionName(rule.action));
  if (rule.action == FaultAction::kDelay) {
    out += ' ' + TimeString(rule.delay.count());
  } else if (rule.delay != Duration::zero()) {
    out += ", delay " + TimeString(rule.delay.count());
  }
  const FaultMatch& m = rule.match;
  if (m.node) out += fmt::format(", node {}", *m.node);
  if (m.link_of) out += fmt::format(", link to node {}", *m.link_of);
  if (m.qpn) out += fmt::format(", qp {}", *m.qpn);
  if (m.packet != PacketClass::kAny) {
    out += fmt::format(", {} packets", PacketClassName(m.packet));
  }
  if (rule.from != TimePoint{}) out += ", from " + TimeString(rule.from.time_since_epoch().count());
  if (rule.until != TimePoint::max()) out += ", until " + TimeString(rule.until.time_since_epoch().count());
  if (rule.skip != 0) out += fmt::format(", skip {}", rule.skip);
  out += rule.count == kEveryTime ? std::string(", every time") : fmt::format(", count {}", rule.count);
  if (rule.probability != 1.0) out += fmt::format(", probability {}", rule.probability);
  out += '}';
  return out;
}

std::ostream& operator<<(std::ostream& os, const FaultRule& rule) { return os << ToString(rule); }

}  // namespace ndksim
