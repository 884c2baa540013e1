// SPDX-License-Identifier: MIT
// The environment's NDK layer, where NDIS's sits on Windows: between a consumer and the provider.
// Every object of an adapter opened through WSK gets a dispatch table of the layer's, whose
// entries offer a preemption point (EnvironmentConfig::preemption.ndk_calls) and check the call,
// then call the provider's entry; and every callback a consumer hands the provider passes through
// the layer, which checks NDK's callback rules (ref §4.4) on the provider's side:
//   - a call that returned STATUS_PENDING gets exactly one completion callback, any other none;
//   - an object's close completes only once its callbacks (CQ notifications, connect and
//     disconnect events, request completions) have returned, and none comes after it.
// and the consumer's: no call on an object after its close started, and NDK's argument rules
// (ref §1.4, §3): flags a call accepts, SGE counts within what the QP was created for, the
// fast-register page, offset and address rules. A breach is reported with the call site.
//
// The layer keeps its record of an object in NdkReserved.rf[3] of the object's header, which the
// provider zeroes and never touches (ref §2.1); records live as long as the environment, so a
// late callback finds its object's record and is reported rather than touching freed memory.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "ndis.h"

namespace ndksim {
class Node;
}

namespace ndksim::kernel {

struct Driver;

struct NdkObjectRecord {
  enum class State : std::uint8_t { kCreating, kLive, kClosing, kClosed, kFailed };
  NDK_OBJECT_TYPE type = NdkObjectTypeAdapter;
  const void* provider_dispatch = nullptr;
  NdkObjectRecord* adapter = nullptr;    // the adapter it was created through (itself for one)
  // Its owner: the driver that opened its adapter, on its machine. The consumer's callbacks for
  // the object run in that driver's context (nullptr: the context they are called on).
  Driver* driver = nullptr;
  Node* machine = nullptr;
  State state = State::kCreating;
  std::uint32_t callbacks_running = 0;   // the consumer's callbacks for it, on some stack now
  std::uint32_t pending_requests = 0;    // calls that returned STATUS_PENDING, callback not returned
  // The consumer's event callback (CQ or SRQ notification, connect event) and its context.
  void* event_callback = nullptr;
  void* event_context = nullptr;
  // The consumer's disconnect event callback (a connector's), either form: the thunk the provider
  // was given knows which.
  void* disconnect_callback = nullptr;
  void* disconnect_context = nullptr;
  // What the consumer asked for at its creation, for the argument rules of later calls: a QP's
  // (or SRQ's) SGE limits and inline size; a fast-register MR's page count at its
  // NdkInitializeFastRegisterMr (0: not initialized).
  std::uint32_t max_initiator_sge = 0;
  std::uint32_t max_receive_sge = 0;
  std::uint32_t inline_bytes = 0;
  std::uint32_t fast_register_pages = 0;
};

// One call the consumer gave a completion callback (create, request or close).
struct NdkCallRecord {
  NdkObjectRecord* object = nullptr;  // the object the call is on; a create's: the new object
  void* callback = nullptr;           // the consumer's, and its context
  void* context = nullptr;
  const char* service = nullptr;
  bool returned = false;              // the provider's call has returned ...
  bool pending = false;               // ... with STATUS_PENDING
  std::uint32_t completions = 0;      // callbacks so far
};

class NdkInterposer {
 public:
  NdkInterposer() = default;
  NdkInterposer(const NdkInterposer&) = delete;
  NdkInterposer& operator=(const NdkInterposer&) = delete;

  // An adapter WskOpenNdkAdapter opened for `driver` on `machine`: it and everything created
  // through it go through the layer from now on, and belong to that driver.
  void AdoptAdapter(NDK_ADAPTER* adapter, Driver* driver = nullptr, Node* machine = nullptr);
  // Its close (WskCloseNdkAdapter) has returned: it and every object of it are closed. The
  // record, taken before the close: the adapter itself is gone now.
  void AdapterClosed(NdkObjectRecord* adapter);

  // ---- for the layer's dispatch entries ----
  NdkObjectRecord& NewObject(NdkObjectRecord* adapter, NDK_OBJECT_TYPE type);
  // Puts the layer's table in a created object and records the provider's.
  void Install(NdkObjectRecord& record, NDK_OBJECT_HEADER* header);
  NdkCallRecord& NewCall(NdkObjectRecord* object, void* callback, void* context, const char* service);
  // The call's provider entry returned `status`; frees the record if nothing more can come.
  void Returned(NdkCallRecord& call, NTSTATUS status);
  // A completion callback for the call is about to run; false if it must not (reported).
  bool Completing(NdkCallRecord& call);
  void Completed(NdkCallRecord& call);

 private:
  void Free(NdkCallRecord& call);

  std::deque<NdkObjectRecord> objects_;
  std::vector<std::unique_ptr<NdkCallRecord>> calls_;
  std::vector<NdkCallRecord*> free_calls_;
};

// The record of an object that went through the layer, or nullptr.
NdkObjectRecord* RecordOf(const NDK_OBJECT_HEADER* header);
// Whether the object (or the adapter it was created through) is closed.
bool IsClosed(const NdkObjectRecord& record);
// Its type's name: "QP", "CQ", ...
const char* TypeName(NDK_OBJECT_TYPE type);

}  // namespace ndksim::kernel
