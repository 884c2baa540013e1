// SPDX-License-Identifier: MIT
/// @file
/// Fault injection: deterministic, seeded rules that make the simulated hardware misbehave at a
/// named hook point, so that a test can drive a consumer's error handling. A rule says where (the
/// hook point), which events (node, QP, packet kind), when (a simulated-time window, how many
/// matching events to let through first, how many to act on, with what probability) and what
/// (drop, corrupt, delay, lose, force RNR, overrun, invalidate). Every decision is counted per rule
/// and traced under TraceBlock::kFaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ndksim/time.h"

/// The NDK queue pair a rule may name (FaultRule::OnQp), declared as ndkpi.h declares it: this header
/// needs nothing else of NDK, and code that builds fault rules need not include the interface.
typedef struct _NDK_QP NDK_QP;  // NOLINT(modernize-use-using): the C declaration ndkpi.h repeats

namespace ndksim {

class Node;

/// @enum FaultPoint
/// The hook points, each one place in one hardware block: enumerator, name.
#define NDKSIM_FAULT_POINTS(X)                                                                          \
  X(kWire, "wire")                   /**< port: a packet leaves a node for the wire (requests, ACK/NAKs, \
                                          read responses) */                                           \
  X(kDoorbell, "doorbell")           /**< doorbell unit: a send-queue doorbell MMIO write reaches the NIC */ \
  X(kReceiveWqe, "receive-wqe")      /**< responder: the first packet of an incoming send looks for a   \
                                          receive WQE */                                               \
  X(kRemoteAccess, "remote-access")  /**< responder: the token of an incoming write or read request is \
                                          checked */                                                   \
  X(kCqeWrite, "cqe-write")          /**< completion engine: a CQE is about to be written to its CQ */  \
  X(kPayloadRead, "payload-read")    /**< requester: a packet's payload DMA read from host memory       \
                                          completes */                                                 \
  X(kAdapter, "adapter")             /**< the whole NIC, at the simulated time FaultRule::from (a      \
                                          one-off event) */

enum class FaultPoint : std::uint8_t {
#define NDKSIM_X(point, name) point,
  NDKSIM_FAULT_POINTS(NDKSIM_X)
#undef NDKSIM_X
};

/// @enum FaultAction
/// What a rule does, each action with the one hook point where it acts: enumerator, hook point,
/// name.
///  - kDrop (kWire): the packet is lost on the wire; the transport recovers by retransmission.
///  - kCorrupt (kWire): a bit of the packet flips on the wire; the receiver's ICRC check catches it
///    and discards the packet (counted in NicCounters::icrc_errors), so corrupted data is never
///    placed.
///  - kDelay (kWire): the packet arrives FaultRule::delay later than it would have; later packets may
///    overtake it (the responder then sees a sequence gap and NAKs).
///  - kLose (kDoorbell): the MMIO write is lost before the doorbell register: its WQEs wait in the
///    host ring until a later doorbell of the QP covers them (a doorbell names the newest index).
///  - kForceRnr (kReceiveWqe): the responder acts as if no receive were posted: receiver-not-ready
///    NAK, and the requester retries after the profile's rnr_delay (IO_TIMEOUT after
///    rnr_retry_count retries).
///  - kInvalidateToken (kRemoteAccess): the token is invalidated just before the check (as a racing
///    invalidate or deregistration would): the access fails, the initiator's request completes
///    with the profile's remote access error, and the token stays invalid.
///  - kOverrun (kCqeWrite): the CQ behaves as if full: overrun, the CQ and every QP on it become
///    unusable and the next arm reports STATUS_BUFFER_OVERFLOW, as the NDK CQ notification rules
///    specify.
///  - kFailDma (kPayloadRead): the read returns an uncorrectable error (a PCIe completer abort or
///    poisoned data): the request completes with STATUS_INTERNAL_ERROR, the QP enters the error
///    state and the peer's QP is told (its outstanding requests are flushed).
///  - kFailAdapter (kAdapter): a catastrophic NIC error: every CQ dies (the next arm, or the one
///    pending, reports STATUS_INTERNAL_ERROR), every SRQ's callback gets STATUS_INTERNAL_ERROR (the
///    SRQ and its QPs are dead), every connection is aborted (disconnect events), and the NIC
///    neither sends, receives nor takes work again (only CQ arms, which report the error). Peers
///    find out through their own retry timeouts. Needs FaultMatch::node.
#define NDKSIM_FAULT_ACTIONS(X)                         \
  X(kDrop, kWire, "drop")                               \
  X(kCorrupt, kWire, "corrupt")                         \
  X(kDelay, kWire, "delay")                             \
  X(kLose, kDoorbell, "lose")                           \
  X(kForceRnr, kReceiveWqe, "force-rnr")                \
  X(kInvalidateToken, kRemoteAccess, "invalidate-token") \
  X(kOverrun, kCqeWrite, "overrun")                     \
  X(kFailDma, kPayloadRead, "fail-dma")                 \
  X(kFailAdapter, kAdapter, "fail-adapter")

enum class FaultAction : std::uint8_t {
#define NDKSIM_X(action, point, name) action,
  NDKSIM_FAULT_ACTIONS(NDKSIM_X)
#undef NDKSIM_X
};

namespace detail {
inline constexpr std::string_view kFaultPointNames[] = {
#define NDKSIM_X(point, name) name,
    NDKSIM_FAULT_POINTS(NDKSIM_X)
#undef NDKSIM_X
};
struct FaultActionEntry {
  FaultPoint point;
  std::string_view name;
};
inline constexpr FaultActionEntry kFaultActions[] = {
#define NDKSIM_X(action, point, name) {FaultPoint::point, name},
    NDKSIM_FAULT_ACTIONS(NDKSIM_X)
#undef NDKSIM_X
};
/// The name of enumerator `e` in `names`, or "?" for a value outside the list.
template <typename Enum, std::size_t N>
constexpr std::string_view NameIn(const std::string_view (&names)[N], Enum e) {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : "?";
}
}  // namespace detail

/// @name Names

/// Names as the rules print them ("?" for a value outside the enum).
///@{
constexpr std::string_view Name(FaultPoint p) { return detail::NameIn(detail::kFaultPointNames, p); }
constexpr std::string_view Name(FaultAction a) {
  const auto i = static_cast<std::size_t>(a);
  return i < std::size(detail::kFaultActions) ? detail::kFaultActions[i].name : "?";
}
///@}
/// The one hook point where `a` acts.
constexpr FaultPoint PointOf(FaultAction a) {
  const auto i = static_cast<std::size_t>(a);
  return i < std::size(detail::kFaultActions) ? detail::kFaultActions[i].point : FaultPoint::kWire;
}
/// How many actions there are (a rule with a larger value is invalid).
inline constexpr std::size_t kFaultActionCount = std::size(detail::kFaultActions);

/// @enum PacketClass
/// Which packets a kWire rule matches.
#define NDKSIM_PACKET_CLASSES(X)                                            \
  X(kAny, "any")                     /**< every packet */                   \
  X(kRequest, "request")             /**< send, write and read-request packets, and the Terminate */ \
  X(kAcknowledge, "acknowledge")     /**< ACKs and NAKs */                  \
  X(kReadResponse, "read-response")  /**< read response packets */
enum class PacketClass : std::uint8_t {
#define NDKSIM_X(packets, name) packets,
  NDKSIM_PACKET_CLASSES(NDKSIM_X)
#undef NDKSIM_X
};
namespace detail {
inline constexpr std::string_view kPacketClassNames[] = {
#define NDKSIM_X(packets, name) name,
    NDKSIM_PACKET_CLASSES(NDKSIM_X)
#undef NDKSIM_X
};
}  // namespace detail
/// The name of `c` as rules print it ("?" for a value outside the enum).
constexpr std::string_view Name(PacketClass c) { return detail::NameIn(detail::kPacketClassNames, c); }
/// How many packet classes there are.
inline constexpr std::size_t kPacketClassCount = std::size(detail::kPacketClassNames);

/// Which events a rule applies to; an empty field matches anything.
struct FaultMatch {
  /// The node where the hook runs (its index in Fabric::AddNode order): the sender for kWire.
  std::optional<std::uint32_t> node;
  /// kWire only: a packet to or from this node (a link to that node).
  std::optional<std::uint32_t> link_of;
  /// The QP, by number on `node` (Node::QpNumber); for kWire the sending QP, for kCqeWrite the QP
  /// whose completion it is. Not for kAdapter.
  std::optional<std::uint32_t> qpn;
  PacketClass packet = PacketClass::kAny;  ///< kWire only
};

/// FaultRule::count of a rule that acts on every matching event (Always).
inline constexpr std::uint64_t kEveryTime = std::numeric_limits<std::uint64_t>::max();

/// A fault rule, added with Fabric::AddFault: what it does, to which events, and when. Made by the
/// functions at the end of this header, one per action, and narrowed or widened by its builders.
struct FaultRule {
  /// What happens; it also names the one hook point where the rule acts (PointOf).
  FaultAction action = FaultAction::kDrop;
  FaultPoint Point() const { return PointOf(action); }  ///< the hook point where the rule acts

  /// @name Builders
  /// Builders, chained on a rule from the functions below, e.g.
  ///   fabric.AddFault(ndksim::DropPackets(ndksim::PacketClass::kRequest).At(a_node).Times(2));
  ///@{
  FaultRule& At(const Node& node);                 ///< the node where the hook runs (wire: the sender)
  FaultRule& OnQp(const Node& node, NDK_QP* qp);   ///< one QP of that node; ConfigurationError if not its
  FaultRule& OnLinkOf(const Node& node);           ///< wire: packets to or from that node
  FaultRule& Of(PacketClass packets);              ///< wire: which packets
  FaultRule& Times(std::uint64_t n);               ///< act on n events, then stop
  FaultRule& Always();                             ///< act on every matching event
  FaultRule& After(std::uint64_t events);          ///< let that many matching events through first
  FaultRule& WithProbability(double p);            ///< each matching event, a seeded draw
  FaultRule& Between(TimePoint from, TimePoint until);  ///< simulated-time window [from, until)
  ///@}

  FaultMatch match;  ///< which events the rule applies to

  /// @name When

  /// When: only events at simulated times in [from, until) are considered; of those, the first
  /// `skip` are let through, then each acts with `probability` (a seeded draw) until the rule has
  /// acted `count` times (kEveryTime: no limit).
  ///@{
  TimePoint from{};
  TimePoint until = TimePoint::max();
  std::uint64_t skip = 0;
  std::uint64_t count = 1;
  double probability = 1.0;
  ///@}
  Duration delay{};  ///< kDelay: how much later the packet arrives
};

/// Problems with `rule`, one message each; empty when the rule can be added.
std::vector<std::string> Validate(const FaultRule& rule);

/// A rule's decisions so far.
struct FaultStats {
  std::uint64_t considered = 0;  ///< events that matched the rule's point, fields and window while
                                 ///< it could still act (before `count` was reached)
  std::uint64_t fired = 0;       ///< of those, the ones it acted on
};

/// @name Link down

/// A link down for [from, until): every packet to or from `node` is lost on the wire.
///@{
FaultRule LinkDown(std::uint32_t node, TimePoint from, TimePoint until);
FaultRule LinkDown(const Node& node, TimePoint from, TimePoint until);
///@}

/// @name One rule per action

/// One rule per action, with the action's hook point; each acts once, anywhere, unless a builder
/// above narrows or widens it. Parameters an action needs are arguments here.
///@{
FaultRule DropPackets(PacketClass packets = PacketClass::kAny);
FaultRule CorruptPackets(PacketClass packets = PacketClass::kAny);
FaultRule DelayPackets(Duration delay, PacketClass packets = PacketClass::kAny);
FaultRule LoseDoorbells();
FaultRule ForceRnr();
FaultRule InvalidateTokenInFlight();
FaultRule OverrunCq();
FaultRule FailDmaRead();
FaultRule FailAdapter(const Node& node, TimePoint at);
///@}

}  // namespace ndksim
