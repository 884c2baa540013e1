// SPDX-License-Identifier: MIT
// NDK_LISTENER and NDK_SHARED_ENDPOINT (ref §3.18, §4.6): their dispatch tables and the local
// endpoints they bind; a listener turns each CM request into an incoming connector.
#include "connection.h"

#include "control.h"
#include "driver.h"

namespace ndksim::provider {

// ==== Listener ====================================================================================

namespace {

NTSTATUS CloseListener(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion,
                       PVOID context) {
  Listener& listener = OwnerOfHeader<Listener, NDK_LISTENER>(header);
  listener.GetDriver().Trace("close listener");
  return listener.GetAdapter().Close(listener, completion, context);
}

NTSTATUS Listen(NDK_LISTENER* ndk, const PSOCKADDR address, ULONG length,
                NDK_FN_REQUEST_COMPLETION completion, PVOID context) {
  Listener& listener = Listener::From(ndk);
  const NTSTATUS status = listener.Listen(address, length);
  // Errors are inline (nothing changed); a successful listen may pend (ref §3.0).
  if (status != STATUS_SUCCESS) return status;
  return listener.GetAdapter().FinishRequest(listener, status, completion, context);
}

NTSTATUS GetListenerLocalAddress(NDK_LISTENER* ndk, PSOCKADDR address, ULONG* length) {
  return Listener::From(ndk).GetLocalAddress(address, length);
}

VOID ControlConnectEvents(NDK_LISTENER* ndk, BOOLEAN pause) {
  Listener& listener = Listener::From(ndk);
  listener.GetDriver().Trace("listener connect events {}", pause ? "paused" : "resumed");
  listener.ControlConnectEvents(pause != FALSE);
}

const NDK_LISTENER_DISPATCH kListenerDispatch = {
    Control<Listener, NDK_LISTENER, CloseListener>::Call,
    NdkQueryExtensionNotSupported,
    Control<Listener, NDK_LISTENER, Listen>::Call,
    Control<Listener, NDK_LISTENER, GetListenerLocalAddress>::Call,
    Control<Listener, NDK_LISTENER, ControlConnectEvents>::Call,
};

}  // namespace

NTSTATUS Listener::Create(Adapter& adapter, NDK_FN_CONNECT_EVENT_CALLBACK on_connect,
                          void* context, NDK_LISTENER** out) {
  if (out == nullptr || on_connect == nullptr) return STATUS_INVALID_PARAMETER;
  Listener& listener = adapter.Adopt(std::make_unique<Listener>(adapter, on_connect, context));
  adapter.GetDriver().Trace("create listener");
  *out = listener.Ndk();
  return STATUS_SUCCESS;
}

Listener::Listener(Adapter& adapter, NDK_FN_CONNECT_EVENT_CALLBACK on_connect, void* context)
    : Object(adapter, NdkObjectTypeListener), on_connect_(on_connect), context_(context) {
  InitNdk(handle_.ndk, adapter.Version(), NdkObjectTypeListener, &kListenerDispatch);
  handle_.owner = this;
}

// ref §4.6: the endpoint stays bound until the listener and every connector it accepted are gone;
// the destructor runs only then (they are its successors).
Listener::~Listener() {
  if (listening_) GetDriver().Cm().Unbind(this);
}

NTSTATUS Listener::Listen(const SOCKADDR* address, ULONG length) {
  Driver& driver = GetDriver();
  if (listening_) return STATUS_INVALID_DEVICE_STATE;  // one Listen per listener
  SocketAddress local;
  if (const NTSTATUS s = FromSockaddr(address, length, &local); s != STATUS_SUCCESS) return s;
  // ref §3.18: an address of this adapter, or the wildcard.
  if (!IsWildcard(local.address) && !driver.Nic().OwnsAddress(local.address)) {
    return STATUS_INVALID_ADDRESS;
  }
  if (const NTSTATUS s = driver.Cm().Bind(&local, this, this); s != STATUS_SUCCESS) return s;
  local_ = local;
  listening_ = true;
  driver.Trace("listen on port {} (family {})", local_.port, local_.address.family);
  return STATUS_SUCCESS;
}

NTSTATUS Listener::GetLocalAddress(SOCKADDR* address, ULONG* length) const {
  if (!listening_) return STATUS_INVALID_DEVICE_STATE;
  return CopyOutAddress(local_, address, length);
}

void Listener::OnRequest(const CmMessage& request) {
  Connector& connector = Connector::CreateIncoming(*this, request);
  GetDriver().Trace("connect event: conn {} from node {}", connector.Id(), request.source_node);
  // Last: the consumer may close the connector (or this listener) inside the callback.
  on_connect_(context_, connector.Ndk());
}

// ==== SharedEndpoint ==============================================================================

namespace {

NTSTATUS CloseSharedEndpoint(NDK_OBJECT_HEADER* header, NDK_FN_CLOSE_COMPLETION completion,
                             PVOID context) {
  SharedEndpoint& endpoint = OwnerOfHeader<SharedEndpoint, NDK_SHARED_ENDPOINT>(header);
  endpoint.GetDriver().Trace("close shared endpoint");
  return endpoint.GetAdapter().Close(endpoint, completion, context);
}

NTSTATUS GetSharedEndpointLocalAddress(NDK_SHARED_ENDPOINT* ndk, PSOCKADDR address, ULONG* length) {
  return SharedEndpoint::From(ndk).GetLocalAddress(address, length);
}

const NDK_SHARED_ENDPOINT_DISPATCH kSharedEndpointDispatch = {
    Control<SharedEndpoint, NDK_SHARED_ENDPOINT, CloseSharedEndpoint>::Call,
    NdkQueryExtensionNotSupported,
    Control<SharedEndpoint, NDK_SHARED_ENDPOINT, GetSharedEndpointLocalAddress>::Call,
};

}  // namespace

NTSTATUS SharedEndpoint::Create(Adapter& adapter, const SOCKADDR* address, ULONG length,
                                NDK_SHARED_ENDPOINT** out) {
  Driver& driver = adapter.GetDriver();
  if (out == nullptr) return STATUS_INVALID_PARAMETER;
  SocketAddress local;
  if (const NTSTATUS s = FromSockaddr(address, length, &local); s != STATUS_SUCCESS) return s;
  // ref §3.18: an address of this adapter, or the wildcard.
  if (!IsWildcard(local.address) && !driver.Nic().OwnsAddress(local.address)) {
    return STATUS_INVALID_ADDRESS;
  }
  auto endpoint = std::make_unique<SharedEndpoint>(adapter);
  // SHARING_VIOLATION or TOO_MANY_ADDRESSES leave nothing behind: the object is not adopted.
  if (const NTSTATUS s = driver.Cm().Bind(&local, endpoint.get(), nullptr); s != STATUS_SUCCESS) {
    return s;
  }
  endpoint->local_ = local;
  endpoint->bound_ = true;
  SharedEndpoint& ref = adapter.Adopt(std::move(endpoint));
  driver.Trace("create shared endpoint port {} (family {})", local.port, local.address.family);
  *out = ref.Ndk();
  return STATUS_SUCCESS;
}

SharedEndpoint::SharedEndpoint(Adapter& adapter) : Object(adapter, NdkObjectTypeSharedEndpoint) {
  InitNdk(handle_.ndk, adapter.Version(), NdkObjectTypeSharedEndpoint, &kSharedEndpointDispatch);
  handle_.owner = this;
}

// ref §4.6: runs only once the endpoint and every connector using it are closed.
SharedEndpoint::~SharedEndpoint() {
  if (bound_) GetDriver().Cm().Unbind(this);
}

NTSTATUS SharedEndpoint::GetLocalAddress(SOCKADDR* address, ULONG* length) const {
  return CopyOutAddress(local_, address, length);
}

}  // namespace ndksim::provider
