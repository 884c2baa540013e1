// SPDX-License-Identifier: MIT
// Completion queues (NDK_CQ): the CQE ring in host memory, the lock-free poll that turns CQEs
// into NDK_RESULT(_EX), arming, and delivery of notifications to the consumer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "common/block_recycler.h"
#include "hwmodel/host_interface.h"
#include "hwmodel/device.h"
#include "hwmodel/host_cpu.h"
#include "ndkpi.h"
#include "objects.h"

namespace ndksim::provider {

class Cq final : public Object {
 public:
  // ref §3.16: depth 1..MaxCqDepth and a notification callback, else STATUS_INVALID_PARAMETER.
  static NTSTATUS Create(Adapter& adapter, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notify,
                         void* notify_context, NDK_CQ** out);
  Cq(Adapter& adapter, std::uint32_t depth, std::uint32_t entry_count,
     NDK_FN_CQ_NOTIFICATION_CALLBACK notify, void* notify_context);
  ~Cq() override;

  static Cq& From(NDK_CQ* ndk) { return OwnerOf<Cq>(ndk); }
  NDK_CQ* Ndk() { return &handle_.ndk; }
  hw::CqNumber Number() const { return number_; }

  // NdkGetCqResults / NdkGetCqResultsEx: up to `capacity` results, oldest first.
  template <typename Result>
  ULONG Poll(Result* results, ULONG capacity);
  // NdkArmCq (ref §3.10): one-shot; an unknown type does nothing.
  void Arm(ULONG type);
  // Interrupt path: the NIC matched the arm of `epoch` (SUCCESS) or the CQ failed (ref §3.13).
  // Only the pending arm's first notification reaches the consumer.
  void Notify(NTSTATUS status, std::uint32_t epoch);
  // NdkResizeCq (ref §3.12): INVALID_PARAMETER for 0 or > MaxCqDepth; BUFFER_OVERFLOW (NDSPI
  // analogue) if more entries are queued than `depth`, the CQ unchanged. Inline, never pends.
  NTSTATUS Resize(ULONG depth);
  // NdkControlCqInterruptModeration (ref §3.14).
  NTSTATUS ControlModeration(ULONG interval_us, ULONG count);

  // ref §4.4: a close from inside the notification callback stays pending until it returns.
  bool HasPendingRequests() const override { return in_callback_; }

 private:
  // Entries the NIC has written that the consumer has not polled yet.
  std::uint32_t QueuedEntries() const;

  Handle<NDK_CQ, Cq> handle_;
  NDK_FN_CQ_NOTIFICATION_CALLBACK notify_;
  void* notify_context_;
  std::uint32_t depth_;               // what the consumer asked for (moderation counts above it)
  std::uint32_t entry_count_;         // a power of two; changes only by Resize
  // The CQE ring's memory, from the block recycler (common/block_recycler.h): only each entry's
  // owner byte is initialized; the NIC writes every other field before it hands an entry over.
  class CqeArray {
   public:
    CqeArray() = default;
    explicit CqeArray(std::uint32_t count) : storage_(std::size_t{count} * sizeof(hw::Cqe)) {
      for (std::uint32_t i = 0; i < count; ++i) new (&get()[i].owner) std::atomic<std::uint8_t>(0);
    }
    hw::Cqe* get() const { return std::launder(reinterpret_cast<hw::Cqe*>(storage_.get())); }
    hw::Cqe& operator[](std::size_t i) const { return get()[i]; }

   private:
    RecycledArray<std::byte> storage_;
  };
  static_assert(std::is_trivially_destructible_v<hw::Cqe>);
  CqeArray entries_;
  hw::CqNumber number_;
  bool created_ = false;
  bool in_callback_ = false;  // the notification callback is running (engine thread)
  // The consumer's pending arm: its epoch, 0 when none is pending. Arm sets it (consumer's
  // serialised calls); the notification clears it (engine), so each arm epoch gets one callback.
  std::atomic<std::uint32_t> pending_arm_{0};
  std::uint32_t last_arm_ = 0;  // epochs handed out so far (consumer side)
  // The host CPU that polling charges, beside the poll index it is used with; null when it charges
  // nothing (the functional profile), so a poll there costs one test of a line it reads anyway.
  hw::HostCpu* host_cpu_ = nullptr;
  // Next CQE to read. Owned by the consumer's polling/arming, which it serialises (ref §4.2).
  std::uint32_t poll_index_ = 0;
  // The consumer index the NIC reads (acquire) for overrun detection and arming; we publish it
  // (release) once per poll that consumed entries. Own cache line: the NIC side reads it often.
  alignas(hw::kCacheLineBytes) std::atomic<std::uint32_t> consumer_index_{0};
};

}  // namespace ndksim::provider
