// SPDX-License-Identifier: MIT
// The NDK_ADAPTER: its dispatch table, NdkQueryAdapterInfo, the create calls that hang objects off
// it, and the object lifetime rules of ref §4.4 (pending close, successors, adapter close).
#include <algorithm>
#include <array>
#include <cstddef>

#include "common/check.h"
#include "ndksim/names.h"
#include "cm_protocol.h"
#include "connection.h"
#include "control.h"
#include "cq.h"
#include "driver.h"
#include "memory.h"
#include "qp.h"

namespace ndksim::provider {

// ---- Object ------------------------------------------------------------------------------------

Object::Object(Adapter& adapter, NDK_OBJECT_TYPE type)
    : adapter_(adapter), type_(type), serial_(adapter.NextSerial()) {}

NDK_VERSION Object::Version() const { return adapter_.Version(); }

void Object::ReleaseSuccessor() { adapter_.SuccessorReleased(*this); }

NTSTATUS NdkQueryExtensionNotSupported(NDK_OBJECT_HEADER*, GUID*, NDK_VERSION,
                                       NDK_EXTENSION_INTERFACE*) {
  return STATUS_NOT_SUPPORTED;
}

// ---- Adapter lifetime --------------------------------------------------------------------------

NTSTATUS Adapter::Close(Object& object, NDK_FN_CLOSE_COMPLETION completion, void* context) {
  // A second close of an object already closing (e.g. from inside a callback that the first
  // close caused) has nothing left to do; report it done rather than promise a second callback.
  if (object.closing_) return STATUS_SUCCESS;
  object.closing_ = true;
  object.OnCloseRequested();
  object.close_completion_ = completion;
  object.close_context_ = context;
  if (ReadyToFinish(object) && !object.HasPendingRequests()) {
    // Nothing to wait for: the close may still pend if the setting says so (ref §3.0), but only
    // when there is a callback to complete it.
    switch (completion == nullptr ? Driver::Completion::kInline : driver_.ChooseCompletion()) {
      case Driver::Completion::kInline:
        Destroy(object);
        return STATUS_SUCCESS;
      case Driver::Completion::kInCall:
        FinishClose(object);
        return STATUS_PENDING;
      case Driver::Completion::kDpc:
        ScheduleFinishClose(object);
        return STATUS_PENDING;
    }
  }
  // ref §4.4: close completes only after successors are closed and pending requests completed
  // (their callbacks returned). Connector requests are cancelled by FinishClose.
  if (ReadyToFinish(object)) ScheduleFinishClose(object);
  return STATUS_PENDING;
}

void Adapter::SuccessorReleased(Object& antecedent) {
  NDKSIM_CHECK(antecedent.successors_ > 0);
  --antecedent.successors_;
  if (ReadyToFinish(antecedent) && antecedent.closing_) ScheduleFinishClose(antecedent);
}

// ---- maybe-asynchronous completion (ref §3.0, §4.5) --------------------------------------------

namespace {
bool MayPend(NTSTATUS status) {
  return status == STATUS_SUCCESS || status == STATUS_INSUFFICIENT_RESOURCES;
}
}  // namespace

bool Adapter::PendCreate(NTSTATUS status, NDK_OBJECT_HEADER* object,
                         NDK_FN_CREATE_COMPLETION completion, void* context) {
  // During adapter close everything completes inline: nothing may outlive CloseAll.
  if (closing_all_ || completion == nullptr || !MayPend(status)) return false;
  const Driver::Completion how = driver_.ChooseCompletion();
  if (how == Driver::Completion::kInline) return false;
  driver_.Trace("create completes asynchronously {}", StatusString(status));
  if (how == Driver::Completion::kInCall) {
    completion(context, status, object);
  } else {
    QueueCompletion([completion, context, status, object] { completion(context, status, object); });
  }
  return true;
}

NTSTATUS Adapter::FinishRequest(Object& object, NTSTATUS status,
                                NDK_FN_REQUEST_COMPLETION completion, void* context,
                                bool failure_may_pend) {
  if (closing_all_ || completion == nullptr || (!MayPend(status) && !failure_may_pend)) {
    return status;
  }
  const Driver::Completion how = driver_.ChooseCompletion();
  if (how == Driver::Completion::kInline) return status;
  driver_.Trace("request completes asynchronously {}", StatusString(status));
  // Held until the callback returns: a close requested meanwhile (even from inside the callback,
  // ref §4.4) pends until then.
  ++object.async_requests_;
  auto report = [this, &object, completion, context, status] {
    completion(context, status);
    RequestReported(object);
  };
  if (how == Driver::Completion::kInCall) {
    report();
  } else {
    QueueCompletion(std::move(report));
  }
  return STATUS_PENDING;
}

NTSTATUS Adapter::FinishAdapterRequest(NTSTATUS status, NDK_FN_REQUEST_COMPLETION completion,
                                       void* context) {
  if (closing_all_ || completion == nullptr || !MayPend(status)) return status;
  const Driver::Completion how = driver_.ChooseCompletion();
  if (how == Driver::Completion::kInline) return status;
  if (how == Driver::Completion::kInCall) {
    completion(context, status);
  } else {
    QueueCompletion([completion, context, status] { completion(context, status); });
  }
  return STATUS_PENDING;
}

void Adapter::RequestReported(Object& object) {
  NDKSIM_CHECK(object.async_requests_ > 0);
  --object.async_requests_;
  if (object.closing_ && ReadyToFinish(object)) ScheduleFinishClose(object);
}

void Adapter::QueueCompletion(std::function<void()> report) {
  const std::uint64_t key = next_completion_++;
  const WorkId work = driver_.QueueDpc([this, key] { RunCompletion(key); });
  completions_.emplace(key, QueuedCompletion{work, std::move(report)});
}

void Adapter::RunCompletion(std::uint64_t key) {
  const auto it = completions_.find(key);
  if (it == completions_.end()) return;
  QueuedCompletion queued = std::move(it->second);
  completions_.erase(it);
  driver_.Cancel(queued.work);  // no-op when this is the DPC itself
  queued.report();
}

// Adapter close: completions still queued are delivered first, in order (ref §4.4: when the
// close returns, every callback has returned). A callback may queue more; they run too.
void Adapter::RunQueuedCompletions() {
  while (!completions_.empty()) RunCompletion(completions_.begin()->first);
}

void Adapter::ScheduleFinishClose(Object& object) {
  // During adapter close the loop in CloseAll finishes every object itself, synchronously.
  if (closing_all_ || object.finish_work_ != 0) return;
  // A DPC, not a direct call: the release that got us here is inside some consumer call, and the
  // close completion must not run inside it.
  object.finish_work_ = driver_.QueueDpc([this, &object] {
    object.finish_work_ = 0;
    FinishClose(object);
  });
}

void Adapter::FinishClose(Object& object) {
  object.CancelPendingRequests();
  const NDK_FN_CLOSE_COMPLETION completion = object.close_completion_;
  void* const context = object.close_context_;
  Destroy(object);
  // Last: the consumer may free what the context points at (ref §4.4, §4.5).
  if (completion != nullptr) completion(context);
}

void Adapter::Destroy(Object& object) {
  if (object.finish_work_ != 0) driver_.Cancel(object.finish_work_);
  objects_.erase(object.serial_);  // the destructor releases NIC resources and antecedents
}

void Adapter::CloseAll() {
  RunQueuedCompletions();
  closing_all_ = true;
  // A connector of another adapter object of this node may hold one of our QPs (the edge crosses
  // adapter objects): that connection ends first, so every QP here can close.
  for (auto& [serial, object] : objects_) {
    if (object->Type() != NdkObjectTypeQp) continue;
    Connector* holder = static_cast<Qp&>(*object).BoundConnector();
    if (holder != nullptr && &holder->GetAdapter() != this) holder->LoseQp();
  }
  // Successors before antecedents (ref §4.4 edges): connectors hold QPs and listeners, QPs hold
  // PDs and CQs, MRs hold PDs.
  static constexpr std::array kOrder = {NdkObjectTypeConnector, NdkObjectTypeListener,
                                        NdkObjectTypeSharedEndpoint, NdkObjectTypeQp,
                                        NdkObjectTypeSrq, NdkObjectTypeMw, NdkObjectTypeMr,
                                        NdkObjectTypePd, NdkObjectTypeCq};
  for (NDK_OBJECT_TYPE type : kOrder) {
    // Walk by serial with upper_bound: a callback run by FinishClose may end other objects.
    for (auto it = objects_.begin(); it != objects_.end();) {
      const std::uint64_t serial = it->first;
      Object& object = *it->second;
      if (object.Type() == type) {
        if (!object.closing_) {
          object.closing_ = true;
          object.OnCloseRequested();
        }
        NDKSIM_CHECK(object.successors_ == 0);
        FinishClose(object);
      }
      it = objects_.upper_bound(serial);
    }
  }
  NDKSIM_CHECK(objects_.empty());
  closing_all_ = false;
}

Adapter::~Adapter() {
  if (!objects_.empty() || !completions_.empty()) CloseAll();
}

// ---- adapter dispatch --------------------------------------------------------------------------

namespace {

ULONG RdmaTechnology(Transport t) {
  switch (t) {
    case Transport::kRoCEv2: return NdkRoCEv2;
    case Transport::kIWarp: return NdkiWarp;
    case Transport::kInfiniBand: return NdkInfiniBand;
  }
  return NdkUndefined;
}

NDK_ADAPTER_INFO MakeAdapterInfo(const Adapter& adapter) {
  Driver& driver = adapter.GetDriver();
  const HardwareProfile& p = driver.Profile();
  NDK_ADAPTER_INFO info{};
  info.Version = adapter.Version();
  info.VendorId = p.vendor_id;
  info.DeviceId = p.device_id;
  info.MaxRegistrationSize = p.max_registration_bytes;
  info.MaxWindowSize = p.max_window_bytes;
  info.FRMRPageCount = p.frmr_page_count;
  info.MaxInitiatorRequestSge = p.max_initiator_sge;
  info.MaxReceiveRequestSge = p.max_receive_sge;
  info.MaxReadRequestSge = p.max_read_sge;
  info.MaxTransferLength = p.max_transfer_bytes;
  info.MaxInlineDataSize = p.max_inline_bytes;
  info.MaxInboundReadLimit = p.max_inbound_read_limit;
  info.MaxOutboundReadLimit = p.max_outbound_read_limit;
  info.MaxReceiveQueueDepth = p.max_receive_queue_depth;
  info.MaxInitiatorQueueDepth = p.max_initiator_queue_depth;
  info.MaxSrqDepth = p.max_srq_depth;  // ref §2.5: non-zero, SRQs are supported
  info.MaxCqDepth = p.max_cq_depth;
  info.LargeRequestThreshold = p.large_request_threshold;
  info.MaxCallerData = driver.Cm().MaxCallerData();
  info.MaxCalleeData = driver.Cm().MaxCalleeData();
  // Not READ_LOCAL_INVALIDATE: not implemented yet.
  info.AdapterFlags = NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED |
                      NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED |
                      NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED |
                      NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
  // ref §3.14: the flag says NdkControlCqInterruptModeration works; a profile capability.
  if (p.cq_interrupt_moderation) info.AdapterFlags |= NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED;
  // ref §1.7: read-sink rights and read-local-invalidate are transport/profile capabilities.
  if (!p.read_sink_required) info.AdapterFlags |= NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED;
  if (p.read_local_invalidate) info.AdapterFlags |= NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED;
  info.RdmaTechnology = static_cast<NDK_RDMA_TECHNOLOGY>(RdmaTechnology(p.transport));
  return info;
}

// ref §3.17: BUFFER_TOO_SMALL with the required size when the buffer is missing or short.
NTSTATUS QueryAdapterInfo(NDK_ADAPTER* ndk, NDK_ADAPTER_INFO* info, ULONG* buffer_size) {
  if (buffer_size == nullptr) return STATUS_INVALID_PARAMETER;
  if (info == nullptr || *buffer_size < sizeof(NDK_ADAPTER_INFO)) {
    *buffer_size = sizeof(NDK_ADAPTER_INFO);
    return STATUS_BUFFER_TOO_SMALL;
  }
  *info = MakeAdapterInfo(Adapter::From(ndk));
  *buffer_size = sizeof(NDK_ADAPTER_INFO);
  return STATUS_SUCCESS;
}

// Every create may pend (ref §3.0); CreateMaybeAsync decides and delivers.
NTSTATUS CreateCq(NDK_ADAPTER* ndk, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notify,
                  PVOID notify_context, GROUP_AFFINITY* /*affinity: a hint*/,
                  NDK_FN_CREATE_COMPLETION completion, PVOID context, NDK_CQ** out) {
  Adapter& adapter = Adapter::From(ndk);
  return CreateMaybeAsync(adapter, completion, context, out, [&](NDK_CQ** o) {
    return Cq::Create(adapter, depth, notify, notify_context, o);
  });
}

NTSTATUS CreatePd(NDK_ADAPTER* ndk, NDK_FN_CREATE_COMPLETION completion, PVOID context,
                  NDK_PD** out) {
  Adapter& adapter = Adapter::From(ndk);
  return CreateMaybeAsync(adapter, completion, context, out,
                          [&](NDK_PD** o) { return Pd::Create(adapter, o); });
}

NTSTATUS CreateSharedEndpoint(NDK_ADAPTER* ndk, const PSOCKADDR address, ULONG length,
                              NDK_FN_CREATE_COMPLETION completion, PVOID context,
                              NDK_SHARED_ENDPOINT** out) {
  Adapter& adapter = Adapter::From(ndk);
  return CreateMaybeAsync(adapter, completion, context, out, [&](NDK_SHARED_ENDPOINT** o) {
    return SharedEndpoint::Create(adapter, address, length, o);
  });
}

NTSTATUS CreateConnector(NDK_ADAPTER* ndk, NDK_FN_CREATE_COMPLETION completion, PVOID context,
                         NDK_CONNECTOR** out) {
  Adapter& adapter = Adapter::From(ndk);
  return CreateMaybeAsync(adapter, completion, context, out,
                          [&](NDK_CONNECTOR** o) { return Connector::Create(adapter, o); });
}

NTSTATUS CreateListener(NDK_ADAPTER* ndk, NDK_FN_CONNECT_EVENT_CALLBACK on_connect,
                        PVOID connect_context, NDK_FN_CREATE_COMPLETION completion,
                        PVOID context, NDK_LISTENER** out) {
  Adapter& adapter = Adapter::From(ndk);
  return CreateMaybeAsync(adapter, completion, context, out, [&](NDK_LISTENER** o) {
    return Listener::Create(adapter, on_connect, connect_context, o);
  });
}

// ref §3.15: the first byte's virtual address, if [va, va + length) is virtually contiguous across
// the MDL pieces it reaches into; 0 otherwise.
std::uintptr_t ContiguousSpan(const MDL* mdl, SIZE_T length) {
  const auto start = reinterpret_cast<std::uintptr_t>(MmGetMdlVirtualAddress(mdl));
  std::uintptr_t expected = start;
  SIZE_T covered = 0;
  for (const MDL* piece = mdl; piece != nullptr && covered < length; piece = piece->Next) {
    if (reinterpret_cast<std::uintptr_t>(MmGetMdlVirtualAddress(piece)) != expected) return 0;
    covered += MmGetMdlByteCount(piece);
    expected += MmGetMdlByteCount(piece);
  }
  return covered >= length ? start : 0;
}

// ref §2.3, §3.15: PAGE_SIZE logical pages and the FBO. In one process a page's logical address
// is its virtual address, which the privileged token and NdkFastRegister then use. Success may
// pend per the async setting (ref §3.0).
NTSTATUS BuildLam(NDK_ADAPTER* ndk, MDL* mdl, SIZE_T length, NDK_FN_REQUEST_COMPLETION completion,
                  PVOID context, NDK_LOGICAL_ADDRESS_MAPPING* lam, ULONG* lam_size, ULONG* fbo) {
  if (mdl == nullptr || length == 0 || lam_size == nullptr || fbo == nullptr) return STATUS_INVALID_PARAMETER;
  const std::uintptr_t va = ContiguousSpan(mdl, length);
  if (va == 0) return STATUS_INVALID_PARAMETER;  // not virtually contiguous (or past the chain)
  const ULONG pages = ADDRESS_AND_SIZE_TO_SPAN_PAGES(va, length);
  const std::size_t required =
      offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + std::size_t{pages} * sizeof(NDK_LOGICAL_ADDRESS);
  if (lam == nullptr || *lam_size < required) {
    *lam_size = static_cast<ULONG>(required);
    return STATUS_BUFFER_TOO_SMALL;
  }
  lam->AdapterContext = nullptr;
  lam->AdapterPageCount = pages;
  const std::uintptr_t first_page = va & ~std::uintptr_t{PAGE_SIZE - 1};
  for (ULONG i = 0; i < pages; ++i) {
    lam->AdapterPageArray[i].QuadPart = static_cast<LONG64>(first_page + std::uintptr_t{i} * PAGE_SIZE);
  }
  *lam_size = static_cast<ULONG>(required);
  *fbo = BYTE_OFFSET(va);
  return Adapter::From(ndk).FinishAdapterRequest(STATUS_SUCCESS, completion, context);
}

// ref §3.15: nothing is pinned or mapped in one process, so releasing only forgets the pages.
VOID ReleaseLam(NDK_ADAPTER*, NDK_LOGICAL_ADDRESS_MAPPING* lam) {
  if (lam != nullptr) lam->AdapterPageCount = 0;
}

const NDK_ADAPTER_DISPATCH kAdapterDispatch = {
    NdkQueryExtensionNotSupported,
    Control<Adapter, NDK_ADAPTER, QueryAdapterInfo>::Call,
    Control<Adapter, NDK_ADAPTER, CreateCq>::Call,
    Control<Adapter, NDK_ADAPTER, CreatePd>::Call,
    Control<Adapter, NDK_ADAPTER, CreateSharedEndpoint>::Call,
    Control<Adapter, NDK_ADAPTER, CreateConnector>::Call,
    Control<Adapter, NDK_ADAPTER, CreateListener>::Call,
    Control<Adapter, NDK_ADAPTER, BuildLam>::Call,
    Control<Adapter, NDK_ADAPTER, ReleaseLam>::Call,
};

}  // namespace

Adapter::Adapter(Driver& driver, NDK_VERSION version) : driver_(driver), version_(version) {
  InitNdk(handle_.ndk, version, NdkObjectTypeAdapter, &kAdapterDispatch);
  handle_.owner = this;
}

}  // namespace ndksim::provider
