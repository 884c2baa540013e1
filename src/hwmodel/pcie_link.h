// SPDX-License-Identifier: MIT
// The PCIe link between host and NIC: MMIO doorbell writes (host -> NIC), DMA reads (requests up,
// completions with data down) and posted DMA writes (NIC -> host). Each kind of traffic is a
// timeline of booked transfers (Timeline), so transfers queue behind each other and bandwidth
// limits emerge without ticking cycles. A DMA read is split into read requests of at most MRRS bytes, each of
// which holds one of a bounded number of read tags until its last completion has arrived. With the
// profile's noise on, each transaction's latency varies around its mean (pcie_latency_jitter);
// every kind of traffic still arrives in the order it was issued.
#pragma once

#include <cstdint>
#include <vector>

#include "event_queue.h"
#include "hwmodel/noise.h"
#include "nic.h"
#include "timeline.h"

namespace ndksim::hw {

// The writes of one QP that the NIC may hold back until something they need has arrived (a
// receive WQE read on demand). A held write is issued when it may go: in order with the QP's
// other writes, while the rest of the node's traffic goes on without it.
struct WriteOrder {
  TimePoint issued{};  // the QP's newest write leaves the NIC then
  TimePoint lands{};   // ... and is visible in host memory then
};

class PcieLink {
 public:
  static constexpr std::uint32_t kWriteTlpOverheadBytes = 24;       // memory write or read request header
  static constexpr std::uint32_t kCompletionTlpOverheadBytes = 20;  // completion-with-data header
  static constexpr std::uint64_t kHostLineBytes = 64;  // the host's memory returns a read a line at a time

  // `seed` fixes the link's noise stream.
  PcieLink(Nic& nic, EventQueue& events, std::uint64_t seed);

  // When an MMIO write of `bytes` issued now reaches the NIC. `qp` (may be null) is charged.
  // An MMIO write comes from a CPU's write-combining buffer one 64-B line at a time, each line a
  // write TLP with its own header: a WQE written through the doorbell page costs a header per line.
  TimePoint MmioWrite(std::uint32_t bytes, QpCounters* qp = nullptr);
  // Reads `bytes` of host memory; `done` runs when the last completion has arrived. The caller
  // copies the bytes out of host memory in `done`, so it sees memory as it is at that time.
  // Reads complete in the order they are issued.
  void DmaRead(std::uint64_t bytes, EventCallback done, QpCounters* qp = nullptr);
  // The same read, for a caller that only needs to know when its data has arrived (it schedules
  // its own work, or the read only moves bytes the model never looks at, like a prefetch).
  TimePoint DmaReadArrival(std::uint64_t bytes, QpCounters* qp = nullptr);
  // Writes `bytes` to host memory; `done` runs when they are visible to the host. Posted writes
  // land in issue order. The caller copies in `done`. With `order`, the write is one of a QP's:
  // it lands after the QP's earlier writes, and is held back until `not_before`.
  void DmaWrite(std::uint64_t bytes, EventCallback done, QpCounters* qp = nullptr, WriteOrder* order = nullptr,
                TimePoint not_before = {});

  // From when a read issued would neither wait for a tag nor find its data queued behind earlier
  // completions. A block that reads ahead (payload prefetch) waits for this instead of booking
  // the link far into the future, where later reads (WQE fetches) would queue behind it.
  TimePoint ReadSlotAt() const;
  // A block waits for a read slot: `resume` runs in turn when there is one.
  void AwaitReadSlot(Resume resume) { read_waiters_.Add(std::move(resume)); }

  // When every write issued so far is visible in host memory.
  TimePoint LastWriteLandsAt() const { return last_write_done_; }

  // Time booked so far (NicBusy): each direction of the link, the write engine, and the read tags
  // (summed over tags: from a request's issue until its last completion has arrived).
  Duration ToNicBusy() const { return downstream_.Booked(); }
  Duration MmioBusy() const { return mmio_busy_; }  // the part of ToNicBusy that MMIO writes took
  Duration ToHostBusy() const { return upstream_.Booked(); }
  Duration WriteEngineBusy() const { return write_engine_.Booked(); }
  Duration ReadTagBusy() const { return tag_busy_; }
  std::uint32_t ReadTags() const { return static_cast<std::uint32_t>(tag_free_.size()); }

 private:
  // Bytes on the link for `bytes` of data cut into TLPs of at most `tlp_bytes`, each with `overhead`.
  static std::uint64_t WireBytes(std::uint64_t bytes, std::uint32_t tlp_bytes, std::uint32_t overhead);

  // When the write engine issues a write ready at `ready` that takes it for `engine`.
  TimePoint IssueWrite(TimePoint now, TimePoint ready, Duration engine) {
    return engine == Duration::zero() ? ready : write_engine_.Book(now, ready, engine) - engine;
  }
  // A transaction's latency: the profile's, plus the link's jitter.
  Duration Latency(Duration mean) { return mean + noise_.Jitter(jitter_); }

  Nic& nic_;
  EventQueue& events_;
  NoiseStream noise_;
  Duration jitter_;  // pcie_latency_jitter, zero with the noise off
  Timeline downstream_;           // host -> NIC: MMIO writes and read completions
  Timeline upstream_;             // NIC -> host: read requests and posted writes
  Timeline write_engine_;         // the NIC's DMA write engine: pcie_write_tlp_interval per TLP
  // Each kind of traffic is in order among itself: the next one starts no earlier than these.
  TimePoint mmio_free_{};
  TimePoint mmio_arrives_{};  // the newest MMIO write reaches the NIC then
  TimePoint completions_free_{};  // read completions' data is on the link until then
  TimePoint last_read_done_{};    // the newest read request's last completion arrives then
  TimePoint requests_free_{};
  TimePoint writes_free_{};
  TimePoint last_write_done_{};
  // When each read tag is free again. Completions return in issue order, so the tags free up in
  // the order they were taken and a ring suffices: the next tag is always the earliest free.
  std::vector<TimePoint> tag_free_;
  Duration tag_busy_{};
  Duration mmio_busy_{};
  std::size_t next_tag_ = 0;
  WaitList read_waiters_;
};

}  // namespace ndksim::hw
