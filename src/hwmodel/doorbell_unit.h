// SPDX-License-Identifier: MIT
// The doorbell unit: per-QP send-queue doorbell registers and the CQ arm register. A doorbell
// names a producer index, so one doorbell may cover many WQEs (deferred batching).
#pragma once

#include "event_queue.h"
#include "hwmodel/host_interface.h"
#include "nic.h"

namespace ndksim::hw {

struct QpContext;

class DoorbellUnit {
 public:
  DoorbellUnit(Nic& nic, EventQueue& events) : nic_(nic), events_(events) {}

  // An MMIO write left the CPU now; it reaches the register after the PCIe latency.
  void OnMmioWrite(const Doorbell& doorbell);
  // A QP was created: its doorbell register starts at the send queue's producer index.
  void OnCreate(QpContext& qp);

 private:
  void OnArrival(const Doorbell& doorbell);
  // Prefetches (host cache only) the first lines of up to kReadAheadWqes WQEs before `index`.
  static void ReadAheadWqes(const QpContext& qp, std::uint32_t index);
  static constexpr std::uint32_t kReadAheadWqes = 4;

  Nic& nic_;
  EventQueue& events_;
};

}  // namespace ndksim::hw
