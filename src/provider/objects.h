// SPDX-License-Identifier: MIT
// NDK object wrappers: the handle that carries an NDK_* struct to the consumer and back, the base
// every provider object shares (lifetime, antecedent/successor edges of ref §4.4), and the adapter
// that owns the objects created through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <type_traits>

#include "ndkpi.h"

namespace ndksim::provider {

class Adapter;
class Driver;

// The NDK struct is the first member of a standard-layout handle, so the pointer the consumer
// holds is also a pointer to the handle, and the handle knows its C++ owner.
template <typename Ndk, typename Owner>
struct Handle {
  Ndk ndk;
  Owner* owner = nullptr;
};

template <typename Owner, typename Ndk>
Owner& OwnerOf(Ndk* ndk) {
  using H = Handle<Ndk, Owner>;
  static_assert(std::is_standard_layout_v<H>, "the NDK struct must be pointer-interconvertible");
  static_assert(offsetof(H, ndk) == 0);
  return *reinterpret_cast<H*>(ndk)->owner;
}

// Close slots receive the header, which is the first member of every NDK_* object struct.
template <typename Owner, typename Ndk>
Owner& OwnerOfHeader(NDK_OBJECT_HEADER* header) {
  static_assert(offsetof(Ndk, Header) == 0);
  return OwnerOf<Owner>(reinterpret_cast<Ndk*>(header));
}

// ref §2.1: negotiated version, non-zero type, NdkReserved zeroed, Dispatch set before the object
// is handed out. The provider never reads Dispatch again (the consumer may interpose).
template <typename Ndk, typename Dispatch>
void InitNdk(Ndk& ndk, NDK_VERSION version, NDK_OBJECT_TYPE type, const Dispatch* dispatch) {
  ndk = Ndk{};
  ndk.Header.Version = version;
  ndk.Header.ObjectType = type;
  ndk.Dispatch = dispatch;
}

// The QueryExtensionInterface slot of every table: no extensions are defined (ref §3.19).
NTSTATUS NdkQueryExtensionNotSupported(NDK_OBJECT_HEADER* object, GUID* id, NDK_VERSION version,
                                       NDK_EXTENSION_INTERFACE* out);

using WorkId = std::uint64_t;

// Base of every NDK object the provider creates. The adapter owns it; the consumer's close asks
// the adapter to end it. ref §4.4: while successors (objects created on or bound to this one)
// live, or while requests on it are pending, the close returns STATUS_PENDING and completes
// (from a DPC) once they are gone; otherwise the object dies inside the close call.
class Object {
 public:
  Object(Adapter& adapter, NDK_OBJECT_TYPE type);
  virtual ~Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  Adapter& GetAdapter() const { return adapter_; }
  Driver& GetDriver() const;
  NDK_OBJECT_TYPE Type() const { return type_; }
  NDK_VERSION Version() const;
  bool Closing() const { return closing_; }

  // Antecedent/successor edges (ref §4.4): the successor takes one when it starts depending on
  // this object and releases it when it stops (usually in its destructor).
  void AddSuccessor() { ++successors_; }
  void ReleaseSuccessor();

  // Close hooks, control path. OnCloseRequested runs when the consumer closes the object (or the
  // adapter closes); CancelPendingRequests completes what is still pending, with STATUS_CANCELLED.
  virtual void OnCloseRequested() {}
  virtual bool HasPendingRequests() const { return false; }
  virtual void CancelPendingRequests() {}

 private:
  friend class Adapter;

  // Requests of this object that returned STATUS_PENDING through Adapter::FinishRequest and whose
  // callback has not returned yet: the close waits for them (ref §4.4).
  std::uint32_t async_requests_ = 0;

  Adapter& adapter_;
  const NDK_OBJECT_TYPE type_;
  const std::uint64_t serial_;  // creation order: makes teardown order deterministic
  std::uint32_t successors_ = 0;
  bool closing_ = false;
  NDK_FN_CLOSE_COMPLETION close_completion_ = nullptr;
  void* close_context_ = nullptr;
  WorkId finish_work_ = 0;
};

// One NDK_ADAPTER: the negotiated version and every object created through it.
class Adapter {
 public:
  Adapter(Driver& driver, NDK_VERSION version);
  ~Adapter();
  Adapter(const Adapter&) = delete;
  Adapter& operator=(const Adapter&) = delete;

  static Adapter& From(NDK_ADAPTER* ndk) { return OwnerOf<Adapter>(ndk); }
  NDK_ADAPTER* Ndk() { return &handle_.ndk; }
  Driver& GetDriver() const { return driver_; }
  NDK_VERSION Version() const { return version_; }

  // Takes ownership of a fully created object.
  template <typename T>
  T& Adopt(std::unique_ptr<T> object) {
    T& ref = *object;
    objects_.emplace(ref.serial_, std::move(object));
    return ref;
  }

  // The consumer's close of `object` (ref §3.0: SUCCESS inline, or PENDING and one callback).
  NTSTATUS Close(Object& object, NDK_FN_CLOSE_COMPLETION completion, void* context);

  // ---- the one path for calls that may complete asynchronously (ref §3.0, §4.5) ----
  // A create that has run: `status` and, on success, the object's header. Returns true when the
  // outcome goes to `completion` (the caller then returns STATUS_PENDING and must not write the
  // pp out-parameter); false when the caller completes inline. Only SUCCESS and
  // INSUFFICIENT_RESOURCES may pend; without a callback nothing pends.
  bool PendCreate(NTSTATUS status, NDK_OBJECT_HEADER* object, NDK_FN_CREATE_COMPLETION completion,
                  void* context);
  // A request on `object` that has done its work: returns `status` (inline) or STATUS_PENDING
  // after arranging exactly one call of `completion`. SUCCESS and INSUFFICIENT_RESOURCES may
  // pend; other failures too when `failure_may_pend` (e.g. Connect, ref §3.18 "all may occur
  // inline or asynchronously"). The object's close waits until the callback has returned.
  // With AsyncCompletion::kPendingInCall the callback runs before this returns: the caller must
  // return STATUS_PENDING at once and touch nothing the consumer may have closed.
  NTSTATUS FinishRequest(Object& object, NTSTATUS status, NDK_FN_REQUEST_COMPLETION completion,
                         void* context, bool failure_may_pend = false);
  // The same for a request on the adapter itself (NdkBuildLam); adapter close delivers it first.
  NTSTATUS FinishAdapterRequest(NTSTATUS status, NDK_FN_REQUEST_COMPLETION completion,
                                void* context);
  // Adapter close (blocking, ref §4.4): ends every object, successors before antecedents, and
  // completes pending requests and pending closes before returning.
  void CloseAll();

 private:
  friend class Object;

  std::uint64_t NextSerial() { return next_serial_++; }
  static bool ReadyToFinish(const Object& o) { return o.successors_ == 0 && o.async_requests_ == 0; }
  void RequestReported(Object& object);
  // Runs `report` from a DPC; adapter close runs whatever is still queued before it ends objects.
  void QueueCompletion(std::function<void()> report);
  void RunCompletion(std::uint64_t key);
  void RunQueuedCompletions();
  void SuccessorReleased(Object& antecedent);
  void ScheduleFinishClose(Object& object);
  void FinishClose(Object& object);
  void Destroy(Object& object);

  Driver& driver_;
  const NDK_VERSION version_;
  Handle<NDK_ADAPTER, Adapter> handle_;
  std::uint64_t next_serial_ = 1;
  bool closing_all_ = false;
  std::map<std::uint64_t, std::unique_ptr<Object>> objects_;  // by serial
  struct QueuedCompletion {
    WorkId work = 0;
    std::function<void()> report;
  };
  std::map<std::uint64_t, QueuedCompletion> completions_;  // by queue order
  std::uint64_t next_completion_ = 1;
};

// Inline: every post and poll asks for it.
inline Driver& Object::GetDriver() const { return adapter_.GetDriver(); }

// The create slots' wrapper (ref §3.0, §4.5): runs `create` (which writes the new object to the
// pointer it is given, and returns an NTSTATUS), then completes inline through `out` or pends and
// delivers the object only to `completion`, never writing `out`.
template <typename NdkT, typename CreateFn>
NTSTATUS CreateMaybeAsync(Adapter& adapter, NDK_FN_CREATE_COMPLETION completion, void* context,
                          NdkT** out, CreateFn&& create) {
  if (out == nullptr) return STATUS_INVALID_PARAMETER;
  NdkT* object = nullptr;
  const NTSTATUS status = create(&object);
  NDK_OBJECT_HEADER* header = object != nullptr ? &object->Header : nullptr;
  if (adapter.PendCreate(status, header, completion, context)) return STATUS_PENDING;
  if (status == STATUS_SUCCESS) *out = object;
  return status;
}

}  // namespace ndksim::provider
