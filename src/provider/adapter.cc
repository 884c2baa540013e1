// The NDK_ADAPTER: its dispatch table, NdkQueryAdapterInfo, the create calls that hang objects off
// it, and the object lifetime rules of ref §4.4 (pending close, successors, adapter close).
#include <algorithm>
#include <array>

#include "hwmodel/event_queue.h"  // NDKSIM_CHECK
#include "provider/cm_protocol.h"
#include "provider/connection.h"
#include "provider/cq.h"
#include "provider/driver.h"
#include "provider/memory.h"

namespace ndksim::provider {

// ---- Object ------------------------------------------------------------------------------------

Object::Object(Adapter& adapter, NDK_OBJECT_TYPE type)
    : adapter_(adapter), type_(type), serial_(adapter.NextSerial()) {}

Driver& Object::GetDriver() const { return adapter_.GetDriver(); }

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
  if (object.successors_ == 0 && !object.HasPendingRequests()) {
    Destroy(object);
    return STATUS_SUCCESS;
  }
  // ref §4.4: close completes only after successors are closed and pending requests completed.
  object.close_completion_ = completion;
  object.close_context_ = context;
  if (object.successors_ == 0) ScheduleFinishClose(object);
  return STATUS_PENDING;
}

void Adapter::SuccessorReleased(Object& antecedent) {
  NDKSIM_CHECK(antecedent.successors_ > 0);
  --antecedent.successors_;
  if (antecedent.successors_ == 0 && antecedent.closing_) ScheduleFinishClose(antecedent);
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
  closing_all_ = true;
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
  if (!objects_.empty()) CloseAll();
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
  info.MaxSrqDepth = 0;  // ref §2.5: 0 = no SRQ support (not implemented yet)
  info.MaxCqDepth = p.max_cq_depth;
  info.LargeRequestThreshold = p.large_request_threshold;
  info.MaxCallerData = driver.Cm().MaxCallerData();
  info.MaxCalleeData = driver.Cm().MaxCalleeData();
  // Not CQ_INTERRUPT_MODERATION, CQ_RESIZE or READ_LOCAL_INVALIDATE: not implemented yet.
  info.AdapterFlags = NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED |
                      NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED |
                      NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED |
                      NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
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

NTSTATUS CreateCq(NDK_ADAPTER* ndk, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notify,
                  PVOID notify_context, GROUP_AFFINITY* /*affinity: a hint*/,
                  NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ** out) {
  return Cq::Create(Adapter::From(ndk), depth, notify, notify_context, out);
}

NTSTATUS CreatePd(NDK_ADAPTER* ndk, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD** out) {
  return Pd::Create(Adapter::From(ndk), out);
}

NTSTATUS CreateSharedEndpoint(NDK_ADAPTER*, const PSOCKADDR, ULONG, NDK_FN_CREATE_COMPLETION,
                              PVOID, NDK_SHARED_ENDPOINT**) {
  return STATUS_NOT_SUPPORTED;
}

NTSTATUS CreateConnector(NDK_ADAPTER* ndk, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CONNECTOR** out) {
  return Connector::Create(Adapter::From(ndk), out);
}

NTSTATUS CreateListener(NDK_ADAPTER* ndk, NDK_FN_CONNECT_EVENT_CALLBACK on_connect,
                        PVOID context, NDK_FN_CREATE_COMPLETION, PVOID, NDK_LISTENER** out) {
  return Listener::Create(Adapter::From(ndk), on_connect, context, out);
}

NTSTATUS BuildLam(NDK_ADAPTER*, MDL*, SIZE_T, NDK_FN_REQUEST_COMPLETION, PVOID,
                  NDK_LOGICAL_ADDRESS_MAPPING*, ULONG*, ULONG*) {
  return STATUS_NOT_SUPPORTED;
}

VOID ReleaseLam(NDK_ADAPTER*, NDK_LOGICAL_ADDRESS_MAPPING*) {}

const NDK_ADAPTER_DISPATCH kAdapterDispatch = {
    NdkQueryExtensionNotSupported,
    QueryAdapterInfo,
    CreateCq,
    CreatePd,
    CreateSharedEndpoint,
    CreateConnector,
    CreateListener,
    BuildLam,
    ReleaseLam,
};

}  // namespace

Adapter::Adapter(Driver& driver, NDK_VERSION version) : driver_(driver), version_(version) {
  InitNdk(handle_.ndk, version, NdkObjectTypeAdapter, &kAdapterDispatch);
  handle_.owner = this;
}

}  // namespace ndksim::provider
