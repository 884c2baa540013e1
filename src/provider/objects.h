// NDK object wrappers: the handle that carries an NDK_* struct to the consumer and back, the base
// every provider object shares (lifetime, antecedent/successor edges of ref §4.4), and the adapter
// that owns the objects created through it.
#pragma once

#include <cstddef>
#include <cstdint>
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
  // Adapter close (blocking, ref §4.4): ends every object, successors before antecedents, and
  // completes pending requests and pending closes before returning.
  void CloseAll();

 private:
  friend class Object;

  std::uint64_t NextSerial() { return next_serial_++; }
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
};

}  // namespace ndksim::provider
