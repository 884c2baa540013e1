// SPDX-License-Identifier: MIT
// The environment's NDK layer: dispatch tables of its own in front of the provider's, callbacks
// routed through it, and the checks both make possible (ndk_interposer.h).
#include "ndk_interposer.h"

#include <dlfcn.h>

#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "common/check.h"
#include "kernel_state.h"

namespace ndksim::kernel {
namespace {

using Impl = Environment::Impl;

// The slot of the header's reserved block that holds the layer's record.
constexpr int kRecordSlot = 3;

// Every NDK object is its header and then its dispatch table.
struct AnyObject {
  NDK_OBJECT_HEADER Header;
  const void* Dispatch;
};
static_assert(offsetof(AnyObject, Dispatch) == offsetof(NDK_QP, Dispatch));
static_assert(offsetof(AnyObject, Dispatch) == offsetof(NDK_ADAPTER, Dispatch));

template <typename Ndk>
constexpr NDK_OBJECT_TYPE kTypeOf = NdkObjectTypeMax;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_CQ> = NdkObjectTypeCq;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_PD> = NdkObjectTypePd;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_MR> = NdkObjectTypeMr;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_MW> = NdkObjectTypeMw;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_SRQ> = NdkObjectTypeSrq;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_QP> = NdkObjectTypeQp;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_CONNECTOR> = NdkObjectTypeConnector;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_LISTENER> = NdkObjectTypeListener;
template <> constexpr NDK_OBJECT_TYPE kTypeOf<NDK_SHARED_ENDPOINT> = NdkObjectTypeSharedEndpoint;

// A check of the layer failed. Thunks run inside the provider's frames, so the failure is only
// recorded here; it is thrown where the consumer's call returns, or when the callback's DPC ends.
void Violation(Impl& s, const char* check, const std::string& what, const Site& at = Site{}) {
  if (s.failed || s.pending_failure) return;
  s.pending_failure = s.MakeError(check, what, at);
}

// Where a consumer's NDK call came from: the calling code's object and offset, as
// `addr2line -e <object> <offset>` takes them, and the nearest exported function before it. NDK
// calls go through dispatch tables, and consumers name functions of their own after the entries
// (Microsoft's RdmaSample has an NdkSend of three arguments), so no header macro can record the
// site by the entry's name; the return address is the site.
std::string CalledFrom(const void* return_address) {
  Dl_info info{};
  if (dladdr(return_address, &info) == 0 || info.dli_fname == nullptr) {
    return fmt::format(", called from {}", return_address);
  }
  const auto address = reinterpret_cast<std::uintptr_t>(return_address);
  const auto offset = address - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  if (info.dli_sname != nullptr && info.dli_saddr != nullptr) {
    return fmt::format(", called from {}+{:#x} (in or after {})", info.dli_fname, offset, info.dli_sname);
  }
  return fmt::format(", called from {}+{:#x}", info.dli_fname, offset);
}

// After a provider entry returns to a kernel thread: a violation found meanwhile fails it there.
void AfterCall(Impl& s) {
  if (s.pending_failure && s.scheduler.InThread()) s.ThrowPendingFailure();
}

const char* StateName(NdkObjectRecord::State state) {
  switch (state) {
    case NdkObjectRecord::State::kCreating: return "being created";
    case NdkObjectRecord::State::kLive: return "live";
    case NdkObjectRecord::State::kClosing: return "closing";
    case NdkObjectRecord::State::kClosed: return "closed";
    case NdkObjectRecord::State::kFailed: return "not created";
  }
  return "?";
}

// ---- the thunks: the provider calls these instead of the consumer's callbacks --------------------

// A consumer callback runs in the context of the driver that owns its object, on that driver's
// machine, as it does on Windows whatever processor the provider calls back on: pool it allocates
// is charged to that driver, and the work items it queues (and the adapters they open) belong to
// that machine. The context it was called on is restored when it returns (or a failure in it
// unwinds it).
class InOwnersContext {
 public:
  InOwnersContext(Impl& s, const NdkObjectRecord& object)
      : running_(s), context_(s.Current()), driver_(context_.driver), machine_(context_.machine) {
    if (object.driver != nullptr) context_.driver = object.driver;
    if (object.machine != nullptr) context_.machine = object.machine;
  }
  ~InOwnersContext() {
    context_.driver = driver_;
    context_.machine = machine_;
  }
  InOwnersContext(const InOwnersContext&) = delete;
  InOwnersContext& operator=(const InOwnersContext&) = delete;

 private:
  InConsumerCode running_;  // a failure in the callback stops the run there
  Context& context_;  // a deque element (Impl::contexts) or Impl::home: it stays where it is
  Driver* driver_;
  Node* machine_;
};

void CreateThunk(PVOID context, NTSTATUS status, NDK_OBJECT_HEADER* header) {
  Impl& s = CurrentEnvironment();
  auto& call = *static_cast<NdkCallRecord*>(context);
  // A record that is free already (its call completed) has nothing to read: Completing says so.
  if (!s.ndk.Completing(call)) return;
  NdkObjectRecord& object = *call.object;
  const auto callback = reinterpret_cast<NDK_FN_CREATE_COMPLETION>(call.callback);
  void* const consumer_context = call.context;
  if (NT_SUCCESS(status) && header != nullptr) {
    s.ndk.Install(object, header);
  } else {
    object.state = NdkObjectRecord::State::kFailed;
  }
  {
    const InOwnersContext owner(s, object);
    callback(consumer_context, status, header);
  }
  s.ndk.Completed(call);
}

void RequestThunk(PVOID context, NTSTATUS status) {
  Impl& s = CurrentEnvironment();
  auto& call = *static_cast<NdkCallRecord*>(context);
  // A record that is free already (its call completed) has nothing to read: Completing says so.
  if (!s.ndk.Completing(call)) return;
  NdkObjectRecord& object = *call.object;
  const auto callback = reinterpret_cast<NDK_FN_REQUEST_COMPLETION>(call.callback);
  void* const consumer_context = call.context;
  if (IsClosed(object)) {
    Violation(s, "NDK_CALLBACK", fmt::format("{} completed on a {} whose close had completed", call.service,
                                             TypeName(object.type)));
  }
  ++object.callbacks_running;
  {
    const InOwnersContext owner(s, object);
    callback(consumer_context, status);
  }
  --object.callbacks_running;
  --object.pending_requests;
  s.ndk.Completed(call);
}

// Checks that an object's close may complete now, and marks it closed.
void CloseCompletes(Impl& s, NdkObjectRecord& object, const std::string& how) {
  if (object.callbacks_running != 0) {
    Violation(s, "NDK_CALLBACK", fmt::format("the close of a {} completed ({}) while {} of its callbacks still ran",
                                             TypeName(object.type), how, object.callbacks_running));
  } else if (object.pending_requests != 0) {
    Violation(s, "NDK_CALLBACK", fmt::format("the close of a {} completed ({}) before the completion of {} "
                                             "pending request(s) on it", TypeName(object.type), how,
                                             object.pending_requests));
  }
  object.state = NdkObjectRecord::State::kClosed;
}

void CloseThunk(PVOID context) {
  Impl& s = CurrentEnvironment();
  auto& call = *static_cast<NdkCallRecord*>(context);
  // A record that is free already (its call completed) has nothing to read: Completing says so.
  if (!s.ndk.Completing(call)) return;
  NdkObjectRecord& object = *call.object;
  const auto callback = reinterpret_cast<NDK_FN_CLOSE_COMPLETION>(call.callback);
  void* const consumer_context = call.context;
  CloseCompletes(s, object, "by its callback");
  {
    const InOwnersContext owner(s, object);
    callback(consumer_context);
  }
  s.ndk.Completed(call);
}

// An event callback of `object` runs: none may after its close completed.
bool EventAllowed(Impl& s, const NdkObjectRecord& object, const char* event) {
  if (!IsClosed(object)) return true;
  Violation(s, "NDK_CALLBACK", fmt::format("a {} callback of a {} after its close completed", event,
                                           TypeName(object.type)));
  return false;
}

void NotificationThunk(PVOID context, NTSTATUS status) {
  Impl& s = CurrentEnvironment();
  auto& object = *static_cast<NdkObjectRecord*>(context);
  if (!EventAllowed(s, object, "notification")) return;
  ++object.callbacks_running;
  {
    const InOwnersContext owner(s, object);
    reinterpret_cast<NDK_FN_CQ_NOTIFICATION_CALLBACK>(object.event_callback)(object.event_context, status);
  }
  --object.callbacks_running;
}

void ConnectEventThunk(PVOID context, NDK_CONNECTOR* connector) {
  Impl& s = CurrentEnvironment();
  auto& listener = *static_cast<NdkObjectRecord*>(context);
  if (!EventAllowed(s, listener, "connect event")) return;
  // The incoming connection's connector is an object of the listener's adapter like any other.
  NdkObjectRecord& incoming = s.ndk.NewObject(listener.adapter, NdkObjectTypeConnector);
  s.ndk.Install(incoming, &connector->Header);
  ++listener.callbacks_running;
  {
    const InOwnersContext owner(s, listener);
    reinterpret_cast<NDK_FN_CONNECT_EVENT_CALLBACK>(listener.event_callback)(listener.event_context, connector);
  }
  --listener.callbacks_running;
}

void DisconnectThunk(PVOID context) {
  Impl& s = CurrentEnvironment();
  auto& connector = *static_cast<NdkObjectRecord*>(context);
  if (!EventAllowed(s, connector, "disconnect event")) return;
  ++connector.callbacks_running;
  {
    const InOwnersContext owner(s, connector);
    reinterpret_cast<NDK_FN_DISCONNECT_EVENT_CALLBACK>(connector.disconnect_callback)(connector.disconnect_context);
  }
  --connector.callbacks_running;
}

void DisconnectExThunk(PVOID context, ULONG reason) {
  Impl& s = CurrentEnvironment();
  auto& connector = *static_cast<NdkObjectRecord*>(context);
  if (!EventAllowed(s, connector, "disconnect event")) return;
  ++connector.callbacks_running;
  {
    const InOwnersContext owner(s, connector);
    reinterpret_cast<NDK_FN_DISCONNECT_EVENT_CALLBACK_EX>(connector.disconnect_callback)(connector.disconnect_context,
                                                                                        reason);
  }
  --connector.callbacks_running;
}

// ---- the layer's dispatch entries --------------------------------------------------------------

// What a provider entry's parameters say about it.
template <typename... A>
struct Shape {
  using First = std::tuple_element_t<0, std::tuple<A...>>;
  using Last = std::tuple_element_t<sizeof...(A) - 1, std::tuple<A...>>;
  static constexpr bool kCreates = (std::is_same_v<A, NDK_FN_CREATE_COMPLETION> || ...);
  static constexpr bool kCloses = std::is_same_v<First, NDK_OBJECT_HEADER*> &&
                                  (std::is_same_v<A, NDK_FN_CLOSE_COMPLETION> || ...);
  static constexpr bool kHasCallbacks =
      kCreates || (std::is_same_v<A, NDK_FN_CLOSE_COMPLETION> || ...) ||
      (std::is_same_v<A, NDK_FN_REQUEST_COMPLETION> || ...) ||
      (std::is_same_v<A, NDK_FN_CONNECT_EVENT_CALLBACK> || ...) ||
      (std::is_same_v<A, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX> || ...);
};

// One call's callbacks, routed through the layer.
struct Routing {
  NdkObjectRecord* created = nullptr;
  NdkCallRecord* call = nullptr;
};

template <typename Sh, std::size_t I, typename Tuple>
void Route(Impl& s, NdkObjectRecord& object, const char* service, Routing& r, Tuple& args) {
  using T = std::tuple_element_t<I, Tuple>;
  if constexpr (I + 1 < std::tuple_size_v<Tuple>) {
    auto& callback = std::get<I>(args);
    auto& context = std::get<I + 1>(args);
    if constexpr (std::is_same_v<T, NDK_FN_CREATE_COMPLETION>) {
      r.call = &s.ndk.NewCall(r.created, reinterpret_cast<void*>(callback), context, service);
      callback = &CreateThunk;
      context = r.call;
    } else if constexpr (std::is_same_v<T, NDK_FN_REQUEST_COMPLETION> && Sh::kCreates) {
      // A create's (PVOID, NTSTATUS) callback is its CQ's or SRQ's notification.
      r.created->event_callback = reinterpret_cast<void*>(callback);
      r.created->event_context = context;
      callback = &NotificationThunk;
      context = r.created;
    } else if constexpr (std::is_same_v<T, NDK_FN_REQUEST_COMPLETION>) {
      if (callback == nullptr) return;  // optional where the interface allows it
      r.call = &s.ndk.NewCall(&object, reinterpret_cast<void*>(callback), context, service);
      ++object.pending_requests;
      callback = &RequestThunk;
      context = r.call;
    } else if constexpr (std::is_same_v<T, NDK_FN_CONNECT_EVENT_CALLBACK>) {
      r.created->event_callback = reinterpret_cast<void*>(callback);
      r.created->event_context = context;
      callback = &ConnectEventThunk;
      context = r.created;
    } else if constexpr (std::is_same_v<T, NDK_FN_CLOSE_COMPLETION> && Sh::kCloses) {
      if (callback == nullptr) return;
      r.call = &s.ndk.NewCall(&object, reinterpret_cast<void*>(callback), context, service);
      callback = &CloseThunk;
      context = r.call;
    } else if constexpr (std::is_same_v<T, NDK_FN_DISCONNECT_EVENT_CALLBACK>) {
      if (callback == nullptr) return;
      object.disconnect_callback = reinterpret_cast<void*>(callback);
      object.disconnect_context = context;
      callback = &DisconnectThunk;
      context = &object;
    } else if constexpr (std::is_same_v<T, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX>) {
      if (callback == nullptr) return;
      object.disconnect_callback = reinterpret_cast<void*>(callback);
      object.disconnect_context = context;
      callback = &DisconnectExThunk;
      context = &object;
    }
  }
}

template <typename Sh, typename Tuple, std::size_t... I>
void RouteAll(Impl& s, NdkObjectRecord& object, const char* service, Routing& r, Tuple& args,
              std::index_sequence<I...>) {
  (Route<Sh, I>(s, object, service, r, args), ...);
}

// ---- NDK's argument rules (ref §1.4, §3.1-§3.8) -------------------------------------------------
// The consumer's side of each call, checked before the provider sees it. The provider still gets
// the call and returns its status; the breach is reported as well, with the call site, as a
// verifier names the rule a driver broke rather than leaving a bare STATUS_INVALID_PARAMETER.

template <auto A, auto B>
constexpr bool kIs = false;
template <auto A>
constexpr bool kIs<A, A> = true;

constexpr ULONG kCommonFlags = NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_DEFER;
constexpr ULONG kSendFlags = kCommonFlags | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE;
constexpr ULONG kWriteFlags = kCommonFlags | NDK_OP_FLAG_INLINE;  // INLINE on a write: ref §6 item 3
constexpr ULONG kReadFlags = kCommonFlags | NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
constexpr ULONG kBindFlags = kCommonFlags | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
constexpr ULONG kFastRegisterFlags = kCommonFlags | NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_LOCAL_WRITE |
                                     NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_RDMA_READ_SINK;
constexpr std::uint64_t kPage = PAGE_SIZE;

std::string FlagsBreach(ULONG flags, ULONG accepted) {
  if ((flags & ~accepted) == 0) return {};
  return fmt::format("Flags {:#x} has bits {:#x} that this call does not accept (ref §1.4)", flags, flags & ~accepted);
}

// A scatter/gather list of `count` entries against the limit its queue was created with (0: no
// limit the layer knows). `inline_flag`: the data is copied at the post, so the count may exceed
// the limit and the total must fit the QP's inline size instead.
std::string SglBreach(const NDK_SGE* sgl, ULONG count, std::uint32_t limit, const char* limit_name,
                      bool inline_flag = false, std::uint32_t inline_bytes = 0) {
  if (sgl == nullptr && count > 0) return fmt::format("pSgl is NULL with nSge {}", count);
  if (inline_flag) {
    std::uint64_t total = 0;
    for (ULONG i = 0; i < count; ++i) total += sgl[i].Length;
    if (total > inline_bytes) {
      return fmt::format("an INLINE request of {} bytes exceeds the QP's InlineDataSize of {} (ref §1.4)", total,
                         inline_bytes);
    }
    return {};
  }
  if (limit != 0 && count > limit) {
    return fmt::format("nSge {} exceeds the {} of {} the queue was created with (ref §3.5, §3.16)", count, limit_name,
                       limit);
  }
  return {};
}

std::string FastRegisterBreach(NDK_MR* mr, ULONG page_count, const NDK_LOGICAL_ADDRESS* pages, ULONG fbo,
                               SIZE_T length, PVOID base, ULONG flags) {
  if (std::string b = FlagsBreach(flags, kFastRegisterFlags); !b.empty()) return b;
  if (mr == nullptr) return "pMr is NULL";
  const NdkObjectRecord* record = RecordOf(&mr->Header);
  if (record != nullptr && record->fast_register_pages == 0) {
    return "the MR was not initialized by NdkInitializeFastRegisterMr (ref §3.7, §3.15)";
  }
  if (pages == nullptr || page_count == 0) return fmt::format("AdapterPageCount {} with AdapterPageArray {}", page_count, fmt::ptr(pages));
  if (record != nullptr && page_count > record->fast_register_pages) {
    return fmt::format("AdapterPageCount {} exceeds the {} pages NdkInitializeFastRegisterMr gave the MR (ref §3.7)",
                       page_count, record->fast_register_pages);
  }
  for (ULONG i = 0; i < page_count; ++i) {
    const auto page = static_cast<std::uint64_t>(pages[i].QuadPart);
    if (page == 0 || page % kPage != 0) {
      return fmt::format("AdapterPageArray[{}] is {:#x}, not a PAGE_SIZE-aligned logical address (ref §3.7)", i, page);
    }
  }
  if (fbo >= kPage) {
    return fmt::format("FBO {} is not below PAGE_SIZE ({}): it is the first byte's offset in the first page (ref §3.7)",
                       fbo, kPage);
  }
  if (length > page_count * kPage - fbo) {
    return fmt::format("Length {} exceeds AdapterPageCount * PAGE_SIZE - FBO = {} (ref §3.7)", length,
                       page_count * kPage - fbo);
  }
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  if (address % kPage != fbo) {
    return fmt::format("BaseVirtualAddress {:#x} is not FBO + n * PAGE_SIZE: its offset in a page is {}, FBO is {} "
                       "(ref §3.7)", address, address % kPage, fbo);
  }
  return {};
}

// The rule the call `Slot` with these arguments breaks, or "" (also for the calls without rules
// here). `object` is the record of the object the call is on.
template <auto Slot, typename... A>
std::string ArgumentBreach(const NdkObjectRecord& object, const A&... a) {
  const auto args = std::tie(a...);
  if constexpr (kIs<Slot, &NDK_QP_DISPATCH::NdkSend> || kIs<Slot, &NDK_QP_DISPATCH::NdkSendAndInvalidate>) {
    const ULONG flags = std::get<4>(args);  // SendAndInvalidate: the token follows it
    if (std::string b = FlagsBreach(flags, kSendFlags); !b.empty()) return b;
    return SglBreach(std::get<2>(args), std::get<3>(args), object.max_initiator_sge, "MaxInitiatorRequestSge",
                     (flags & NDK_OP_FLAG_INLINE) != 0, object.inline_bytes);
  } else if constexpr (kIs<Slot, &NDK_QP_DISPATCH::NdkWrite>) {
    const ULONG flags = std::get<6>(args);
    if (std::string b = FlagsBreach(flags, kWriteFlags); !b.empty()) return b;
    return SglBreach(std::get<2>(args), std::get<3>(args), object.max_initiator_sge, "MaxInitiatorRequestSge",
                     (flags & NDK_OP_FLAG_INLINE) != 0, object.inline_bytes);
  } else if constexpr (kIs<Slot, &NDK_QP_DISPATCH::NdkRead>) {
    // A read's limit is the adapter's MaxReadRequestSge, which the provider checks.
    if (std::string b = FlagsBreach(std::get<6>(args), kReadFlags); !b.empty()) return b;
    return SglBreach(std::get<2>(args), std::get<3>(args), 0, "");
  } else if constexpr (kIs<Slot, &NDK_QP_DISPATCH::NdkReceive> || kIs<Slot, &NDK_SRQ_DISPATCH::NdkSrqReceive>) {
    return SglBreach(std::get<2>(args), std::get<3>(args), object.max_receive_sge, "MaxReceiveRequestSge");
  } else if constexpr (kIs<Slot, &NDK_QP_DISPATCH::NdkBind>) {
    const ULONG flags = std::get<6>(args);
    if (std::string b = FlagsBreach(flags, kBindFlags); !b.empty()) return b;
    if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_LOCAL_WRITE) {
      return "Flags has ALLOW_LOCAL_WRITE without ALLOW_REMOTE_WRITE: local write is a fast-register right (ref §1.4)";
    }
    if (std::get<2>(args) == nullptr || std::get<3>(args) == nullptr) return "pMr or pMw is NULL";
    return {};
  } else if constexpr (kIs<Slot, &NDK_QP_DISPATCH::NdkInvalidate>) {
    if (std::string b = FlagsBreach(std::get<3>(args), kCommonFlags); !b.empty()) return b;
    return std::get<2>(args) == nullptr ? "pNdkMrOrMw is NULL" : "";
  } else if constexpr (kIs<Slot, &NDK_QP_DISPATCH::NdkFastRegister>) {
    return FastRegisterBreach(std::get<2>(args), std::get<3>(args), std::get<4>(args), std::get<5>(args),
                              std::get<6>(args), std::get<7>(args), std::get<8>(args));
  } else if constexpr (kIs<Slot, &NDK_MR_DISPATCH::NdkInitializeFastRegisterMr>) {
    return std::get<1>(args) == 0 ? "AdapterPageCount is 0" : "";
  } else {
    return {};
  }
}

// What a create or an initialization tells the layer for the argument rules of later calls.
template <auto Slot, typename... A>
void NoteLimits(NdkObjectRecord* created, NdkObjectRecord& object, const A&... a) {
  const auto args = std::tie(a...);
  if constexpr (kIs<Slot, &NDK_PD_DISPATCH::NdkCreateQp>) {
    created->max_receive_sge = std::get<6>(args);
    created->max_initiator_sge = std::get<7>(args);
    created->inline_bytes = std::get<8>(args);
  } else if constexpr (kIs<Slot, &NDK_PD_DISPATCH::NdkCreateQpWithSrq>) {
    created->max_initiator_sge = std::get<6>(args);
    created->inline_bytes = std::get<7>(args);
  } else if constexpr (kIs<Slot, &NDK_PD_DISPATCH::NdkCreateSrq>) {
    created->max_receive_sge = std::get<2>(args);
  } else if constexpr (kIs<Slot, &NDK_MR_DISPATCH::NdkInitializeFastRegisterMr>) {
    object.fast_register_pages = std::get<1>(args);
  }
}

template <auto Slot>
struct Entry;

template <typename Table, typename R, typename... A, R (*Table::*Slot)(A...)>
struct Entry<Slot> {
  using Sh = Shape<A...>;
  static inline const char* name = "an NDK call";
  // NdkGetCqResults and NdkGetCqResultsEx: the calls a busy poller repeats.
  static constexpr bool kPolls = std::is_same_v<R (*)(A...), NDK_FN_GET_CQ_RESULTS> ||
                                  std::is_same_v<R (*)(A...), NDK_FN_GET_CQ_RESULTS_EX>;

  static R Call(A... args) {
    Impl& s = CurrentEnvironment();
    const void* const from = __builtin_return_address(0);  // in the consumer: the call site
    s.PreemptionPoint(s.config.preemption.ndk_calls, name);
    auto* header = reinterpret_cast<NDK_OBJECT_HEADER*>(std::get<0>(std::tie(args...)));
    NdkObjectRecord* found = RecordOf(header);
    NDKSIM_CHECK(found != nullptr, "{} on an NDK object the kernel environment does not know (its "
                 "NdkReserved.rf[{}] was overwritten?)", name, kRecordSlot);
    NdkObjectRecord& object = *found;
    if (object.state != NdkObjectRecord::State::kLive || IsClosed(object)) {
      Violation(s, "NDK_CLOSED",
                fmt::format("{} on a {} that is {} (no call may follow the start of its close){}", name,
                            TypeName(object.type), IsClosed(object) ? "closed" : StateName(object.state),
                            CalledFrom(from)));
      // The provider is not called: the object may be gone. On a callback's stack the failure
      // is thrown once the callback returns.
      if (s.scheduler.InThread()) s.ThrowPendingFailure();
      if constexpr (std::is_same_v<R, NTSTATUS>) {
        return STATUS_INVALID_DEVICE_STATE;
      } else if constexpr (!std::is_void_v<R>) {
        return R{};
      } else {
        return;
      }
    }
    const auto& provider = *static_cast<const Table*>(object.provider_dispatch);
    if constexpr (kPolls) {
      const ULONG found = (provider.*Slot)(args...);
      AfterCall(s);
      if (found == 0) {
        s.PolledEmpty(name);
      } else {
        s.PolledSomething();
      }
      return found;
    } else if constexpr (!Sh::kHasCallbacks) {
      if constexpr (std::is_void_v<R>) {
        (provider.*Slot)(args...);
        AfterCall(s);
      } else {
        const std::string breach = ArgumentBreach<Slot>(object, args...);
        R result = (provider.*Slot)(args...);
        if constexpr (std::is_same_v<R, NTSTATUS>) Report(s, breach, result, from);
        AfterCall(s);
        return result;
      }
    } else {
      static_assert(std::is_same_v<R, NTSTATUS>, "every NDK call with a callback returns an NTSTATUS");
      std::tuple<A...> routed(args...);
      Routing r;
      if constexpr (Sh::kCreates) {
        using Made = std::remove_pointer_t<std::remove_pointer_t<typename Sh::Last>>;
        r.created = &s.ndk.NewObject(object.adapter, kTypeOf<Made>);
      }
      if constexpr (Sh::kCloses) object.state = NdkObjectRecord::State::kClosing;
      const std::string breach = ArgumentBreach<Slot>(object, args...);
      NoteLimits<Slot>(r.created, object, args...);
      RouteAll<Sh>(s, object, name, r, routed, std::index_sequence_for<A...>{});
      const NTSTATUS status = std::apply(provider.*Slot, routed);
      Report(s, breach, status, from);
      if constexpr (Sh::kCreates) {
        // Created inline: the object is in the out-parameter (ref §4.1: never when pending).
        if (status != STATUS_PENDING && r.created->state == NdkObjectRecord::State::kCreating) {
          // A failed create may have had no out-parameter at all (the reason it failed).
          auto* const out = std::get<sizeof...(A) - 1>(routed);
          auto* const made = NT_SUCCESS(status) && out != nullptr ? *out : nullptr;
          if (made != nullptr) {
            s.ndk.Install(*r.created, &made->Header);
          } else {
            r.created->state = NdkObjectRecord::State::kFailed;
          }
        }
      }
      if constexpr (Sh::kCloses) {
        if (status != STATUS_PENDING && object.state == NdkObjectRecord::State::kClosing) {
          CloseCompletes(s, object, "its close returned " + fmt::format("{:#x}", static_cast<std::uint32_t>(status)));
        }
      }
      if (r.call != nullptr) {
        if (status != STATUS_PENDING && r.call->completions == 0 && !Sh::kCreates && !Sh::kCloses) {
          --object.pending_requests;  // completed inline: nothing is pending on the object
        }
        s.ndk.Returned(*r.call, status);
      }
      AfterCall(s);
      return status;
    }
  }

  // A breach of an argument rule, reported once the provider has given its status.
  static void Report(Impl& s, const std::string& breach, NTSTATUS status, const void* from) {
    if (breach.empty()) return;
    Violation(s, "NDK_ARGUMENT",
              fmt::format("{}: {}; the provider returned {:#010x}{}", name, breach, static_cast<std::uint32_t>(status),
                          CalledFrom(from)));
  }
};

template <auto Slot>
auto Named(const char* name) {
  Entry<Slot>::name = name;
  return &Entry<Slot>::Call;
}
#define NDKSIM_ENTRY(table, slot) Named<&table::slot>(#slot)

const NDK_ADAPTER_DISPATCH kAdapter = {
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkQueryAdapterInfo),
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkCreateCq),
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkCreatePd),
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkCreateSharedEndpoint),
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkCreateConnector),
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkCreateListener),
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkBuildLAM),
    NDKSIM_ENTRY(NDK_ADAPTER_DISPATCH, NdkReleaseLAM),
};
const NDK_CQ_DISPATCH kCq = {
    NDKSIM_ENTRY(NDK_CQ_DISPATCH, NdkCloseCq),
    NDKSIM_ENTRY(NDK_CQ_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_CQ_DISPATCH, NdkResizeCq),
    NDKSIM_ENTRY(NDK_CQ_DISPATCH, NdkArmCq),
    NDKSIM_ENTRY(NDK_CQ_DISPATCH, NdkGetCqResults),
    NDKSIM_ENTRY(NDK_CQ_DISPATCH, NdkControlCqInterruptModeration),
    NDKSIM_ENTRY(NDK_CQ_DISPATCH, NdkGetCqResultsEx),
};
const NDK_MR_DISPATCH kMr = {
    NDKSIM_ENTRY(NDK_MR_DISPATCH, NdkCloseMr),
    NDKSIM_ENTRY(NDK_MR_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_MR_DISPATCH, NdkRegisterMr),
    NDKSIM_ENTRY(NDK_MR_DISPATCH, NdkDeregisterMr),
    NDKSIM_ENTRY(NDK_MR_DISPATCH, NdkInitializeFastRegisterMr),
    NDKSIM_ENTRY(NDK_MR_DISPATCH, NdkGetRemoteTokenFromMr),
    NDKSIM_ENTRY(NDK_MR_DISPATCH, NdkGetLocalTokenFromMr),
};
const NDK_MW_DISPATCH kMw = {
    NDKSIM_ENTRY(NDK_MW_DISPATCH, NdkCloseMw),
    NDKSIM_ENTRY(NDK_MW_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_MW_DISPATCH, NdkGetRemoteTokenFromMw),
};
const NDK_SRQ_DISPATCH kSrq = {
    NDKSIM_ENTRY(NDK_SRQ_DISPATCH, NdkCloseSrq),
    NDKSIM_ENTRY(NDK_SRQ_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_SRQ_DISPATCH, NdkModifySrq),
    NDKSIM_ENTRY(NDK_SRQ_DISPATCH, NdkSrqReceive),
};
const NDK_QP_DISPATCH kQp = {
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkCloseQp),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkFlush),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkSend),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkReceive),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkBind),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkFastRegister),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkInvalidate),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkRead),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkWrite),
    NDKSIM_ENTRY(NDK_QP_DISPATCH, NdkSendAndInvalidate),
};
const NDK_PD_DISPATCH kPd = {
    NDKSIM_ENTRY(NDK_PD_DISPATCH, NdkClosePd),
    NDKSIM_ENTRY(NDK_PD_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_PD_DISPATCH, NdkCreateMr),
    NDKSIM_ENTRY(NDK_PD_DISPATCH, NdkCreateMw),
    NDKSIM_ENTRY(NDK_PD_DISPATCH, NdkCreateSrq),
    NDKSIM_ENTRY(NDK_PD_DISPATCH, NdkCreateQp),
    NDKSIM_ENTRY(NDK_PD_DISPATCH, NdkCreateQpWithSrq),
    NDKSIM_ENTRY(NDK_PD_DISPATCH, NdkGetPrivilegedMemoryRegionToken),
};
const NDK_SHARED_ENDPOINT_DISPATCH kSharedEndpoint = {
    NDKSIM_ENTRY(NDK_SHARED_ENDPOINT_DISPATCH, NdkCloseSharedEndpoint),
    NDKSIM_ENTRY(NDK_SHARED_ENDPOINT_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_SHARED_ENDPOINT_DISPATCH, NdkGetLocalAddress),
};
const NDK_CONNECTOR_DISPATCH kConnector = {
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkCloseConnector),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkConnect),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkConnectWithSharedEndpoint),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkCompleteConnect),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkAccept),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkReject),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkGetConnectionData),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkGetLocalAddress),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkGetPeerAddress),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkDisconnect),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx),
    NDKSIM_ENTRY(NDK_CONNECTOR_DISPATCH, NdkAcceptEx),
};
const NDK_LISTENER_DISPATCH kListener = {
    NDKSIM_ENTRY(NDK_LISTENER_DISPATCH, NdkCloseListener),
    NDKSIM_ENTRY(NDK_LISTENER_DISPATCH, NdkQueryExtension),
    NDKSIM_ENTRY(NDK_LISTENER_DISPATCH, NdkListen),
    NDKSIM_ENTRY(NDK_LISTENER_DISPATCH, NdkGetLocalAddress),
    NDKSIM_ENTRY(NDK_LISTENER_DISPATCH, NdkControlConnectEvents),
};
#undef NDKSIM_ENTRY

const void* TableFor(NDK_OBJECT_TYPE type) {
  switch (type) {
    case NdkObjectTypeAdapter: return &kAdapter;
    case NdkObjectTypeQp: return &kQp;
    case NdkObjectTypeCq: return &kCq;
    case NdkObjectTypeMr: return &kMr;
    case NdkObjectTypeMw: return &kMw;
    case NdkObjectTypePd: return &kPd;
    case NdkObjectTypeSharedEndpoint: return &kSharedEndpoint;
    case NdkObjectTypeConnector: return &kConnector;
    case NdkObjectTypeListener: return &kListener;
    case NdkObjectTypeSrq: return &kSrq;
    case NdkObjectTypeUndefined:
    case NdkObjectTypeMax: break;
  }
  return nullptr;
}

}  // namespace

const char* TypeName(NDK_OBJECT_TYPE type) {
  switch (type) {
    case NdkObjectTypeAdapter: return "adapter";
    case NdkObjectTypeQp: return "QP";
    case NdkObjectTypeCq: return "CQ";
    case NdkObjectTypeMr: return "MR";
    case NdkObjectTypeMw: return "MW";
    case NdkObjectTypePd: return "PD";
    case NdkObjectTypeSharedEndpoint: return "shared endpoint";
    case NdkObjectTypeConnector: return "connector";
    case NdkObjectTypeListener: return "listener";
    case NdkObjectTypeSrq: return "SRQ";
    case NdkObjectTypeUndefined:
    case NdkObjectTypeMax: break;
  }
  return "NDK object";
}

NdkObjectRecord* RecordOf(const NDK_OBJECT_HEADER* header) {
  return header == nullptr ? nullptr : static_cast<NdkObjectRecord*>(header->NdkReserved.rf[kRecordSlot]);
}

bool IsClosed(const NdkObjectRecord& record) {
  return record.state == NdkObjectRecord::State::kClosed ||
         (record.adapter != nullptr && record.adapter->state == NdkObjectRecord::State::kClosed);
}

void NdkInterposer::AdoptAdapter(NDK_ADAPTER* adapter, Driver* driver, Node* machine) {
  NdkObjectRecord& record = NewObject(nullptr, NdkObjectTypeAdapter);
  record.adapter = &record;
  record.driver = driver;
  record.machine = machine;
  Install(record, &adapter->Header);
}

void NdkInterposer::AdapterClosed(NdkObjectRecord* adapter) {
  if (adapter != nullptr) adapter->state = NdkObjectRecord::State::kClosed;
}

NdkObjectRecord& NdkInterposer::NewObject(NdkObjectRecord* adapter, NDK_OBJECT_TYPE type) {
  NdkObjectRecord& record = objects_.emplace_back();
  record.adapter = adapter;
  record.type = type;
  if (adapter != nullptr) {
    record.driver = adapter->driver;
    record.machine = adapter->machine;
  }
  return record;
}

void NdkInterposer::Install(NdkObjectRecord& record, NDK_OBJECT_HEADER* header) {
  auto* object = reinterpret_cast<AnyObject*>(header);
  record.type = header->ObjectType;
  record.provider_dispatch = object->Dispatch;
  record.state = NdkObjectRecord::State::kLive;
  header->NdkReserved.rf[kRecordSlot] = &record;
  object->Dispatch = TableFor(header->ObjectType);
  NDKSIM_CHECK(object->Dispatch != nullptr, "an NDK object of type {}", static_cast<int>(header->ObjectType));
}

NdkCallRecord& NdkInterposer::NewCall(NdkObjectRecord* object, void* callback, void* context, const char* service) {
  NdkCallRecord* call = nullptr;
  if (free_calls_.empty()) {
    call = calls_.emplace_back(std::make_unique<NdkCallRecord>()).get();
  } else {
    call = free_calls_.back();
    free_calls_.pop_back();
  }
  *call = NdkCallRecord{object, callback, context, service};
  return *call;
}

void NdkInterposer::Returned(NdkCallRecord& call, NTSTATUS status) {
  call.returned = true;
  call.pending = status == STATUS_PENDING;
  if (!call.pending && call.completions != 0) {
    Violation(CurrentEnvironment(), "NDK_CALLBACK",
              fmt::format("{} called its completion callback and returned {:#x}, not STATUS_PENDING", call.service,
                          static_cast<std::uint32_t>(status)));
  }
  if (!call.pending || call.completions != 0) Free(call);
}

bool NdkInterposer::Completing(NdkCallRecord& call) {
  // A freed record (service == nullptr): its call had completed already.
  if (call.service == nullptr || call.completions != 0 || (call.returned && !call.pending)) {
    Violation(CurrentEnvironment(), "NDK_CALLBACK",
              fmt::format("a second completion callback for {}, or one for a call that did not return STATUS_PENDING",
                          call.service != nullptr ? call.service : "a call that had completed"));
    return false;
  }
  ++call.completions;
  return true;
}

void NdkInterposer::Completed(NdkCallRecord& call) {
  if (call.returned) Free(call);
}

void NdkInterposer::Free(NdkCallRecord& call) {
  call = NdkCallRecord{};
  free_calls_.push_back(&call);
}

}  // namespace ndksim::kernel
