// SPDX-License-Identifier: MIT
// WQE fetch: DMA-reads send-queue WQEs from the host ring into the QP's on-NIC descriptors, as
// many as one doorbell covers and free descriptors allow, in one burst.
#pragma once

#include <cstdint>

#include "event_queue.h"
#include "nic.h"

namespace ndksim::hw {

struct QpContext;

class WqeFetch {
 public:
  static constexpr std::uint32_t kMaxBurstWqes = 16;

  WqeFetch(Nic& nic, EventQueue& events) : nic_(nic), events_(events) {}

  // There may be WQEs to fetch for `qp` (a doorbell arrived or descriptors were freed).
  void Kick(QpContext& qp);
  // A QP was created: fetch starts at the send queue's producer index.
  void OnCreate(QpContext& qp);
  // A doorbell for producer index `index` carried its WQE. Takes it without a DMA read if it is
  // the next WQE to fetch and a descriptor is free; false otherwise (then it is fetched).
  bool TakeFromDoorbell(QpContext& qp, std::uint32_t index);

 private:
  void OnFetched(QpContext& qp, std::uint32_t first_block, std::uint32_t count);
  // Parses `count` WQEs from the host ring into descriptors.
  void Accept(QpContext& qp, std::uint32_t first_block, std::uint32_t count);

  Nic& nic_;
  EventQueue& events_;
};

}  // namespace ndksim::hw
