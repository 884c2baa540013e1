// The requester: turns fetched WQEs into packets. Segments by MTU, numbers packets with PSNs,
// honours the read fence and the outbound read limit (ORD), and rewinds for retransmission.
#pragma once

#include <cstdint>

#include "hwmodel/event_queue.h"
#include "hwmodel/nic.h"
#include "hwmodel/packet.h"
#include "hwmodel/translation.h"

namespace ndksim::hw {

struct QpContext;
struct WqeDescriptor;

class Requester {
 public:
  Requester(Nic& nic, EventQueue& events) : nic_(nic), events_(events) {}

  // `qp` may have a WQE ready to execute.
  void Schedule(QpContext& qp);
  // Message from the completer: outstanding reads of `qp` dropped (fence / ORD may clear).
  void OnReadRetired(QpContext& qp);
  // Message from the completer: resend everything from WQE `counter` on (go-back-N).
  void Rewind(QpContext& qp, std::uint32_t counter);
  // Stops everything in flight for `qp` (it entered the error state).
  void Abort(QpContext& qp);

 private:
  void Step(Qpn qpn, std::uint64_t generation);
  // Returns false when the WQE failed and was completed with an error.
  bool CheckLocalSges(QpContext& qp, WqeDescriptor& d, std::uint32_t required);
  void ExecuteSendOrWrite(QpContext& qp, WqeDescriptor& d);
  void ExecuteRead(QpContext& qp, WqeDescriptor& d);
  // Bind, FastRegister, LocalInvalidate: applied to the protection table in posting order.
  void ExecuteMemoryOperation(QpContext& qp, WqeDescriptor& d);
  MemoryOpOutcome ApplyMemoryOperation(const QpContext& qp, const WqeDescriptor& d);
  void EmitMessage(QpContext& qp, std::uint32_t counter);
  void Finish(QpContext& qp, WqeDescriptor& d);
  void MarkFirstByte(const QpContext& qp, const WqeDescriptor& d, TimePoint on_wire);
  std::uint32_t PacketsFor(std::uint64_t bytes) const;

  Nic& nic_;
  EventQueue& events_;
  TimePoint processing_free_{};  // the WQE processing unit is a server with a busy-until time
};

// Copies `length` bytes starting at message offset `offset` out of the SGEs of `d` (host memory
// through translation) or out of its inline data. False if a translation fails.
bool GatherPayload(Nic& nic, const QpContext& qp, const WqeDescriptor& d, std::uint64_t offset,
                   std::uint32_t length, std::byte* out);

}  // namespace ndksim::hw
