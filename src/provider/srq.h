// SPDX-License-Identifier: MIT
// Shared receive queues (NDK_SRQ, ref §3.16): the receive ring in host memory that every QP
// created with NdkCreateQpWithSrq draws from, its posting path, and the limit notification.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "hwmodel/host_interface.h"
#include "hwmodel/ring.h"
#include "ndkpi.h"
#include "objects.h"

namespace ndksim::provider {

class Pd;

class Srq final : public Object {
 public:
  // ref §3.16: depth 1..MaxSrqDepth and MaxReceiveRequestSge <= the adapter's, else
  // STATUS_INVALID_PARAMETER.
  static NTSTATUS Create(Pd& pd, ULONG depth, ULONG max_sge, ULONG threshold,
                         NDK_FN_SRQ_NOTIFICATION_CALLBACK notify, void* notify_context, NDK_SRQ** out);
  Srq(Pd& pd, std::uint32_t depth, std::uint32_t max_sge, NDK_FN_SRQ_NOTIFICATION_CALLBACK notify,
      void* notify_context);
  ~Srq() override;

  static Srq& From(NDK_SRQ* ndk) { return OwnerOf<Srq>(ndk); }
  NDK_SRQ* Ndk() { return &handle_.ndk; }
  hw::SrqNumber Number() const { return number_; }
  Pd& GetPd() const { return pd_; }

  // NdkModifySrq (ref §3.16): depth 0 keeps the depth, above MaxSrqDepth is INVALID_PARAMETER;
  // threshold > 0 (re)arms the one-shot notification, 0 keeps threshold and arming. Growing
  // beyond the ring moves the queue to a larger ring; this must not run concurrently with
  // NdkSrqReceive or with a poll of a CQ that holds this SRQ's completions (engine thread).
  NTSTATUS Modify(ULONG depth, ULONG threshold);
  // NdkSrqReceive: hot path, no locks or allocation; one poster at a time (ref §4.1).
  NTSTATUS PostReceive(void* context, const NDK_SGE* sgl, ULONG sge_count);
  // Poller thread: the RequestContext of SRQ WQE `wqe_counter`, freeing its slot. SRQ WQEs
  // complete out of order across QPs, so each slot is freed on its own.
  void* Retire(std::uint32_t wqe_counter);
  // Interrupt path: queued receives fell below the armed threshold.
  void Notify(NTSTATUS status);

  // ref §4.4: a close from inside the notification callback stays pending until it returns.
  bool HasPendingRequests() const override { return in_callback_; }

 private:
  // Moves the queue to a ring of `slots` WQEs (a power of two, larger than now).
  NTSTATUS Grow(std::uint32_t slots);

  Handle<NDK_SRQ, Srq> handle_;
  Pd& pd_;
  NDK_FN_SRQ_NOTIFICATION_CALLBACK notify_;
  void* notify_context_;
  hw::SrqNumber number_;
  bool created_ = false;
  bool in_callback_ = false;
  std::uint32_t max_transfer_ = 0;

  // Poster's line.
  alignas(hw::kCacheLineBytes) std::unique_ptr<hw::SpscRing<hw::WqeBlock>> ring_;
  std::unique_ptr<void*[]> contexts_;               // RequestContext by slot
  std::unique_ptr<std::atomic<bool>[]> busy_;       // slot holds a WQE whose CQE is not polled
  std::uint32_t stride_ = 1;                         // blocks per WQE, a power of two
  std::uint32_t slot_mask_ = 0;
  std::uint32_t max_sge_ = 0;
  std::uint32_t posted_ = 0;
  // relaxed: NdkModifySrq may change it while a poster runs; a post sees the old or new depth.
  std::atomic<std::uint32_t> depth_{0};
  // Poller's line: WQEs whose CQE has been polled.
  alignas(hw::kCacheLineBytes) std::atomic<std::uint32_t> completed_{0};
};

}  // namespace ndksim::provider
