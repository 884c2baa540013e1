// SPDX-License-Identifier: MIT
// Conformance: asynchronous completion (ref §3.0, §4.5) and object lifetime (ref §4.4): the
// PENDING path of every create delivers the object only through the callback, requests and
// closes pend with exactly one callback, antecedent closes wait for successors, nothing is called
// back after a close completes, closing from inside a callback is safe, adapter close blocks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cm_fixture.h"
#include "ndksim/harness.h"

namespace ndksim::conformance {
namespace {

constexpr USHORT kPort = 4000;

// An out-parameter value no provider would write: proves "pp is not written" (ref §4.5).
template <typename T>
T* Untouched() {
  return reinterpret_cast<T*>(std::uintptr_t{0x5a5a5a50});
}

// ---- every create, on the PENDING path ----------------------------------------------------------

// One create slot, called with a completion callback. Returns the call's status; writes the
// out-parameter (or not) into *out.
using CreateCall = NTSTATUS (*)(Side& side, Create* create, void** out);

struct CreateCase {
  const char* name;
  CreateCall call;
  NDK_OBJECT_TYPE type;
};

NTSTATUS CallCreateCq(Side& s, Create* c, void** out) {
  return s.D()->NdkCreateCq(s.adapter, 16, IgnoreCq, nullptr, nullptr, Create::Done, c,
                            reinterpret_cast<NDK_CQ**>(out));
}
NTSTATUS CallCreatePd(Side& s, Create* c, void** out) {
  return s.D()->NdkCreatePd(s.adapter, Create::Done, c, reinterpret_cast<NDK_PD**>(out));
}
NTSTATUS CallCreateConnector(Side& s, Create* c, void** out) {
  return s.D()->NdkCreateConnector(s.adapter, Create::Done, c, reinterpret_cast<NDK_CONNECTOR**>(out));
}
void IgnoreConnect(PVOID, NDK_CONNECTOR*) {}
NTSTATUS CallCreateListener(Side& s, Create* c, void** out) {
  return s.D()->NdkCreateListener(s.adapter, IgnoreConnect, nullptr, Create::Done, c,
                                  reinterpret_cast<NDK_LISTENER**>(out));
}
NTSTATUS CallCreateSharedEndpoint(Side& s, Create* c, void** out) {
  Address at = MakeAddress(s.v4, 0);
  return s.D()->NdkCreateSharedEndpoint(s.adapter, at.Sa(), at.length, Create::Done, c,
                                        reinterpret_cast<NDK_SHARED_ENDPOINT**>(out));
}
NTSTATUS CallCreateMr(Side& s, Create* c, void** out) {
  return s.pd->Dispatch->NdkCreateMr(s.pd, FALSE, Create::Done, c, reinterpret_cast<NDK_MR**>(out));
}
NTSTATUS CallCreateMw(Side& s, Create* c, void** out) {
  return s.pd->Dispatch->NdkCreateMw(s.pd, Create::Done, c, reinterpret_cast<NDK_MW**>(out));
}
NTSTATUS CallCreateSrq(Side& s, Create* c, void** out) {
  return s.pd->Dispatch->NdkCreateSrq(s.pd, 8, 1, 0, nullptr, nullptr, nullptr, Create::Done, c,
                                      reinterpret_cast<NDK_SRQ**>(out));
}
NTSTATUS CallCreateQp(Side& s, Create* c, void** out) {
  return s.pd->Dispatch->NdkCreateQp(s.pd, s.cq, s.cq, nullptr, 8, 8, 1, 1, 0, Create::Done, c,
                                     reinterpret_cast<NDK_QP**>(out));
}

const CreateCase kCreates[] = {
    {"Cq", CallCreateCq, NdkObjectTypeCq},
    {"Pd", CallCreatePd, NdkObjectTypePd},
    {"Connector", CallCreateConnector, NdkObjectTypeConnector},
    {"Listener", CallCreateListener, NdkObjectTypeListener},
    {"SharedEndpoint", CallCreateSharedEndpoint, NdkObjectTypeSharedEndpoint},
    {"Mr", CallCreateMr, NdkObjectTypeMr},
    {"Mw", CallCreateMw, NdkObjectTypeMw},
    {"Srq", CallCreateSrq, NdkObjectTypeSrq},
    {"Qp", CallCreateQp, NdkObjectTypeQp},
};

class PendingCreate : public TwoNodes, public ::testing::WithParamInterface<CreateCase> {
 protected:
  PendingCreate() : TwoNodes(FunctionalFabric(AsyncCompletion::kPending)) {}
};

TEST_P(PendingCreate, DeliversTheObjectOnlyThroughTheCallback) {
  Create create;
  void* out = Untouched<void>();
  ASSERT_EQ(GetParam().call(a_, &create, &out), STATUS_PENDING);
  EXPECT_EQ(out, Untouched<void>());  // ref §4.5: pp is not written
  EXPECT_EQ(create.calls, 0);         // from a DPC, after the call returned
  fabric_.RunUntilIdle();
  ASSERT_EQ(create.calls, 1);
  EXPECT_EQ(create.status, STATUS_SUCCESS);
  ASSERT_NE(create.object, nullptr);
  EXPECT_EQ(create.object->ObjectType, GetParam().type);
  EXPECT_EQ(create.object->Version.Major, 2);
  EXPECT_EQ(create.object->Version.Minor, 1);
  EXPECT_EQ(out, Untouched<void>());
}

INSTANTIATE_TEST_SUITE_P(EveryCreate, PendingCreate, ::testing::ValuesIn(kCreates),
                         [](const auto& info) { return std::string(info.param.name); });

class PendingInCallCreate : public TwoNodes, public ::testing::WithParamInterface<CreateCase> {
 protected:
  PendingInCallCreate() : TwoNodes(FunctionalFabric(AsyncCompletion::kPendingInCall)) {}
};

TEST_P(PendingInCallCreate, MayCallBackBeforeReturningPendingAndStillNotWritePp) {
  Create create;
  void* out = Untouched<void>();
  ASSERT_EQ(GetParam().call(a_, &create, &out), STATUS_PENDING);
  EXPECT_EQ(out, Untouched<void>());
  EXPECT_EQ(create.calls, 1);
  EXPECT_EQ(create.status, STATUS_SUCCESS);
  ASSERT_NE(create.object, nullptr);
  EXPECT_EQ(create.object->ObjectType, GetParam().type);
  fabric_.RunUntilIdle();
  EXPECT_EQ(create.calls, 1);
}

INSTANTIATE_TEST_SUITE_P(EveryCreate, PendingInCallCreate, ::testing::ValuesIn(kCreates),
                         [](const auto& info) { return std::string(info.param.name); });

class InlineCreate : public TwoNodes, public ::testing::WithParamInterface<CreateCase> {};

TEST_P(InlineCreate, WritesPpAndNeverCallsBack) {
  Create create;
  void* out = nullptr;
  ASSERT_EQ(GetParam().call(a_, &create, &out), STATUS_SUCCESS);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(static_cast<NDK_OBJECT_HEADER*>(out)->ObjectType, GetParam().type);
  fabric_.RunUntilIdle();
  EXPECT_EQ(create.calls, 0);
}

INSTANTIATE_TEST_SUITE_P(EveryCreate, InlineCreate, ::testing::ValuesIn(kCreates),
                         [](const auto& info) { return std::string(info.param.name); });

class MixedCompletion : public TwoNodes {
 protected:
  MixedCompletion() : TwoNodes(FunctionalFabric(AsyncCompletion::kMixed)) {}
};

TEST_F(MixedCompletion, EachCallIsEitherInlineWithoutCallbackOrPendingWithExactlyOne) {
  constexpr int kCalls = 32;
  std::vector<Create> creates(kCalls);
  std::vector<NDK_PD*> outs(kCalls, Untouched<NDK_PD>());
  std::vector<NTSTATUS> returned(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    returned[i] = a_.D()->NdkCreatePd(a_.adapter, Create::Done, &creates[i], &outs[i]);
  }
  fabric_.RunUntilIdle();
  int pending = 0;
  for (int i = 0; i < kCalls; ++i) {
    if (returned[i] == STATUS_PENDING) {
      ++pending;
      EXPECT_EQ(outs[i], Untouched<NDK_PD>());
      EXPECT_EQ(creates[i].calls, 1);
      EXPECT_EQ(creates[i].status, STATUS_SUCCESS);
    } else {
      EXPECT_EQ(returned[i], STATUS_SUCCESS);
      EXPECT_NE(outs[i], Untouched<NDK_PD>());
      EXPECT_EQ(creates[i].calls, 0);
    }
  }
  // The seeded mix exercises both paths.
  EXPECT_GT(pending, 0);
  EXPECT_LT(pending, kCalls);
}

class PendingMode : public TwoNodes {
 protected:
  PendingMode() : TwoNodes(FunctionalFabric(AsyncCompletion::kPending)) {}
};

TEST_F(PendingMode, AFailedCreateFailsInlineWithoutCallback) {
  Create create;
  NDK_CQ* cq = Untouched<NDK_CQ>();
  EXPECT_EQ(a_.D()->NdkCreateCq(a_.adapter, 0xffffffffu, IgnoreCq, nullptr, nullptr, Create::Done,
                                &create, &cq),
            STATUS_INVALID_PARAMETER);
  fabric_.RunUntilIdle();
  EXPECT_EQ(create.calls, 0);
  EXPECT_EQ(cq, Untouched<NDK_CQ>());
}

TEST_F(PendingMode, CallsWithoutACallbackCompleteInline) {
  NDK_PD* pd = nullptr;
  EXPECT_EQ(a_.D()->NdkCreatePd(a_.adapter, nullptr, nullptr, &pd), STATUS_SUCCESS);
  EXPECT_EQ(pd->Dispatch->NdkClosePd(&pd->Header, nullptr, nullptr), STATUS_SUCCESS);
}

// ---- requests and closes on the PENDING path ---------------------------------------------------

TEST_F(PendingMode, ListenPendsAndCompletesExactlyOnce) {
  NDK_LISTENER* listener = NewListener(b_);
  Address at = MakeAddress(b_.v4, kPort);
  Request& listen = Req();
  ASSERT_EQ(listen.Returned(listener->Dispatch->NdkListen(listener, at.Sa(), at.length,
                                                          Request::Done, &listen)),
            STATUS_PENDING);
  EXPECT_EQ(listen.calls, 0);
  fabric_.RunUntilIdle();
  EXPECT_EQ(listen.calls, 1);
  EXPECT_EQ(listen.status, STATUS_SUCCESS);
}

TEST_F(PendingMode, RegisterAndDeregisterMrPendAndCompleteExactlyOnce) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateMr(a_.pd, FALSE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  std::vector<std::byte> storage(4096);
  MDL mdl{};
  MmInitializeMdl(&mdl, storage.data(), storage.size());
  Request& reg = Req();
  ASSERT_EQ(reg.Returned(mr->Dispatch->NdkRegisterMr(mr, &mdl, storage.size(),
                                                     NDK_MR_FLAG_ALLOW_LOCAL_WRITE, Request::Done,
                                                     &reg)),
            STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(reg.calls, 1);
  EXPECT_EQ(reg.status, STATUS_SUCCESS);
  Request& dereg = Req();
  ASSERT_EQ(dereg.Returned(mr->Dispatch->NdkDeregisterMr(mr, Request::Done, &dereg)), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(dereg.calls, 1);
  EXPECT_EQ(dereg.status, STATUS_SUCCESS);
}

TEST_F(PendingMode, ResizeCqPendsAndCompletesExactlyOnce) {
  Request& resize = Req();
  ASSERT_EQ(resize.Returned(a_.cq->Dispatch->NdkResizeCq(a_.cq, 32, Request::Done, &resize)),
            STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(resize.calls, 1);
  EXPECT_EQ(resize.status, STATUS_SUCCESS);
}

TEST_F(PendingMode, InitializeFastRegisterMrPendsAndCompletesExactlyOnce) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateMr(a_.pd, TRUE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  Request& init = Req();
  ASSERT_EQ(init.Returned(mr->Dispatch->NdkInitializeFastRegisterMr(mr, 4, FALSE, Request::Done,
                                                                    &init)),
            STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(init.calls, 1);
  EXPECT_EQ(init.status, STATUS_SUCCESS);
}

TEST_F(PendingMode, ModifySrqPendsAndCompletesExactlyOnce) {
  NDK_SRQ* srq = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateSrq(a_.pd, 8, 1, 0, nullptr, nullptr, nullptr, nullptr,
                                          nullptr, &srq),
            STATUS_SUCCESS);
  Request& modify = Req();
  ASSERT_EQ(modify.Returned(srq->Dispatch->NdkModifySrq(srq, 0, 2, Request::Done, &modify)),
            STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(modify.calls, 1);
  EXPECT_EQ(modify.status, STATUS_SUCCESS);
}

TEST_F(PendingMode, BuildLamPendsAndCompletesExactlyOnce) {
  std::vector<std::byte> storage(3 * 4096);
  MDL mdl{};
  MmInitializeMdl(&mdl, storage.data(), storage.size());
  std::vector<std::byte> lam_storage(256);
  auto* lam = reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(lam_storage.data());
  ULONG lam_size = static_cast<ULONG>(lam_storage.size());
  ULONG fbo = 0;
  Request& build = Req();
  ASSERT_EQ(build.Returned(a_.D()->NdkBuildLAM(a_.adapter, &mdl, storage.size(), Request::Done,
                                               &build, lam, &lam_size, &fbo)),
            STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(build.calls, 1);
  EXPECT_EQ(build.status, STATUS_SUCCESS);
  a_.D()->NdkReleaseLAM(a_.adapter, lam);
}

TEST_F(PendingMode, ABadRequestFailsInlineWithoutCallback) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateMr(a_.pd, FALSE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  Request& reg = Req();
  EXPECT_EQ(mr->Dispatch->NdkRegisterMr(mr, nullptr, 64, 0, Request::Done, &reg),
            STATUS_INVALID_PARAMETER);
  fabric_.RunUntilIdle();
  EXPECT_EQ(reg.calls, 0);
}

TEST_F(PendingMode, CompleteConnectPendsAndTheAcceptStillFollowsIt) {
  ListenOnB(kPort);
  NDK_CONNECTOR* active = a_.NewConnector();
  Request& connect = Req();
  Request& accept = Req();
  ASSERT_EQ(Connect(active, a_.NewQp(), &connect, kPort), STATUS_PENDING);
  ASSERT_EQ(Accept(RunUntilIncoming(), b_.NewQp(), &accept), STATUS_PENDING);
  fabric_.RunUntil([&] { return connect.calls > 0; });
  Request& complete = Req();
  ASSERT_EQ(complete.Returned(active->Dispatch->NdkCompleteConnect(active, nullptr, nullptr,
                                                                  Request::Done, &complete)),
            STATUS_PENDING);
  fabric_.RunUntil([&] { return complete.calls > 0 && accept.calls > 0; });
  EXPECT_EQ(complete.status, STATUS_SUCCESS);
  EXPECT_EQ(complete.calls, 1);
  EXPECT_EQ(accept.status, STATUS_SUCCESS);
}

TEST_F(PendingMode, CloseWithACallbackPendsAndCompletesExactlyOnce) {
  NDK_CQ* cq = nullptr;
  ASSERT_EQ(a_.D()->NdkCreateCq(a_.adapter, 16, IgnoreCq, nullptr, nullptr, nullptr, nullptr, &cq),
            STATUS_SUCCESS);
  Closed closed;
  ASSERT_EQ(cq->Dispatch->NdkCloseCq(&cq->Header, Closed::Done, &closed), STATUS_PENDING);
  EXPECT_EQ(closed.calls, 0);
  fabric_.RunUntilIdle();
  EXPECT_EQ(closed.calls, 1);
}

// ref §4.4: the close of an object with a request still pending waits for its callback.
TEST_F(PendingMode, CloseWaitsForAPendingRequestsCallback) {
  NDK_LISTENER* listener = NewListener(b_);
  Address at = MakeAddress(b_.v4, kPort);
  std::vector<std::string> log;
  struct Ctx {
    std::vector<std::string>* log;
  } ctx{&log};
  auto on_listen = [](PVOID c, NTSTATUS) { static_cast<Ctx*>(c)->log->push_back("listen"); };
  auto on_close = [](PVOID c) { static_cast<Ctx*>(c)->log->push_back("close"); };
  ASSERT_EQ(listener->Dispatch->NdkListen(listener, at.Sa(), at.length, on_listen, &ctx),
            STATUS_PENDING);
  ASSERT_EQ(listener->Dispatch->NdkCloseListener(&listener->Header, on_close, &ctx), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(log, (std::vector<std::string>{"listen", "close"}));
}

// ---- antecedent -> successor edges (ref §4.4) --------------------------------------------------

class Lifetime : public TwoNodes {
 protected:
  // Closes `antecedent` (expects PENDING), checks it stays pending, runs `close_successor`, and
  // checks the close completes exactly once afterwards.
  template <typename CloseAntecedent, typename CloseSuccessor>
  void ExpectCloseWaitsForSuccessor(CloseAntecedent close_antecedent, CloseSuccessor close_successor) {
    Closed closed;
    ASSERT_EQ(close_antecedent(&closed), STATUS_PENDING);
    fabric_.RunFor(Microseconds(100));  // short of the CM step timeout
    EXPECT_EQ(closed.calls, 0);
    close_successor();
    fabric_.RunUntilIdle();
    EXPECT_EQ(closed.calls, 1);
  }
  NTSTATUS ClosePd(Closed* c) { return a_.pd->Dispatch->NdkClosePd(&a_.pd->Header, Closed::Done, c); }
  static void CloseObject(NDK_OBJECT_HEADER* h, NDK_FN_CLOSE_COMPLETION fn) {
    // Every dispatch table starts with its close slot (ref §2.8).
    auto* object = reinterpret_cast<NDK_QP*>(h);
    const auto close = reinterpret_cast<const NDK_FN_CLOSE_OBJECT*>(object->Dispatch);
    (*close)(h, fn, nullptr);
  }
};

TEST_F(Lifetime, PdCloseWaitsForItsMr) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateMr(a_.pd, FALSE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  ExpectCloseWaitsForSuccessor([&](Closed* c) { return ClosePd(c); },
                               [&] { CloseObject(&mr->Header, nullptr); });
}

TEST_F(Lifetime, PdCloseWaitsForItsMw) {
  NDK_MW* mw = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateMw(a_.pd, nullptr, nullptr, &mw), STATUS_SUCCESS);
  ExpectCloseWaitsForSuccessor([&](Closed* c) { return ClosePd(c); },
                               [&] { CloseObject(&mw->Header, nullptr); });
}

TEST_F(Lifetime, PdCloseWaitsForItsSrq) {
  NDK_SRQ* srq = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateSrq(a_.pd, 8, 1, 0, nullptr, nullptr, nullptr, nullptr,
                                          nullptr, &srq),
            STATUS_SUCCESS);
  ExpectCloseWaitsForSuccessor([&](Closed* c) { return ClosePd(c); },
                               [&] { CloseObject(&srq->Header, nullptr); });
}

TEST_F(Lifetime, PdCloseWaitsForItsQp) {
  NDK_QP* qp = a_.NewQp();
  ExpectCloseWaitsForSuccessor([&](Closed* c) { return ClosePd(c); },
                               [&] { CloseObject(&qp->Header, nullptr); });
}

TEST_F(Lifetime, CqCloseWaitsForAQpUsingIt) {
  NDK_QP* qp = a_.NewQp();
  ExpectCloseWaitsForSuccessor(
      [&](Closed* c) { return a_.cq->Dispatch->NdkCloseCq(&a_.cq->Header, Closed::Done, c); },
      [&] { CloseObject(&qp->Header, nullptr); });
}

TEST_F(Lifetime, SrqCloseWaitsForAQpUsingIt) {
  NDK_SRQ* srq = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateSrq(a_.pd, 8, 1, 0, nullptr, nullptr, nullptr, nullptr,
                                          nullptr, &srq),
            STATUS_SUCCESS);
  NDK_QP* qp = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateQpWithSrq(a_.pd, a_.cq, a_.cq, srq, nullptr, 8, 1, 0, nullptr,
                                                nullptr, &qp),
            STATUS_SUCCESS);
  ExpectCloseWaitsForSuccessor(
      [&](Closed* c) { return srq->Dispatch->NdkCloseSrq(&srq->Header, Closed::Done, c); },
      [&] { CloseObject(&qp->Header, nullptr); });
}

TEST_F(Lifetime, QpCloseWaitsForTheConnectorUsingIt) {
  ListenOnB(kPort);
  NDK_QP* qp = a_.NewQp();
  NDK_CONNECTOR* c = a_.NewConnector();
  Request& connect = Req();
  ASSERT_EQ(Connect(c, qp, &connect, kPort), STATUS_PENDING);
  ExpectCloseWaitsForSuccessor(
      [&](Closed* cl) { return qp->Dispatch->NdkCloseQp(&qp->Header, Closed::Done, cl); },
      [&] { CloseObject(&c->Header, nullptr); });
}

TEST_F(Lifetime, ListenerCloseWaitsForItsIncomingConnector) {
  NDK_LISTENER* listener = ListenOnB(kPort);
  Request& connect = Req();
  ASSERT_EQ(Connect(a_.NewConnector(), a_.NewQp(), &connect, kPort), STATUS_PENDING);
  NDK_CONNECTOR* incoming = RunUntilIncoming();
  ASSERT_NE(incoming, nullptr);
  ExpectCloseWaitsForSuccessor(
      [&](Closed* c) { return listener->Dispatch->NdkCloseListener(&listener->Header, Closed::Done, c); },
      [&] { CloseObject(&incoming->Header, nullptr); });
}

TEST_F(Lifetime, SharedEndpointCloseWaitsForItsConnector) {
  ListenOnB(kPort);
  Address at = MakeAddress(a_.v4, 0);
  NDK_SHARED_ENDPOINT* ep = nullptr;
  ASSERT_EQ(a_.D()->NdkCreateSharedEndpoint(a_.adapter, at.Sa(), at.length, nullptr, nullptr, &ep),
            STATUS_SUCCESS);
  NDK_CONNECTOR* c = a_.NewConnector();
  Address dst = MakeAddress(b_.v4, kPort);
  Request& connect = Req();
  ASSERT_EQ(c->Dispatch->NdkConnectWithSharedEndpoint(c, a_.NewQp(), ep, dst.Sa(), dst.length, 4, 4,
                                                      nullptr, 0, Request::Done, &connect),
            STATUS_PENDING);
  ExpectCloseWaitsForSuccessor(
      [&](Closed* cl) { return ep->Dispatch->NdkCloseSharedEndpoint(&ep->Header, Closed::Done, cl); },
      [&] { CloseObject(&c->Header, nullptr); });
}

// ---- close ordering ----------------------------------------------------------------------------

struct Order {
  std::vector<std::string> log;
  int pd_closed_when_mr_callback_ran = -1;
  int pd_calls = 0;
};

TEST_F(PendingMode, AntecedentCloseDoesNotCompleteWhileASuccessorsCloseCallbackRuns) {
  NDK_MR* mr = nullptr;
  ASSERT_EQ(a_.pd->Dispatch->NdkCreateMr(a_.pd, FALSE, nullptr, nullptr, &mr), STATUS_SUCCESS);
  static Order order;
  order = Order{};
  auto on_pd = [](PVOID) { ++order.pd_calls; };
  auto on_mr = [](PVOID) {
    order.pd_closed_when_mr_callback_ran = order.pd_calls;
    order.log.push_back("mr");
  };
  ASSERT_EQ(a_.pd->Dispatch->NdkClosePd(&a_.pd->Header, on_pd, nullptr), STATUS_PENDING);
  ASSERT_EQ(mr->Dispatch->NdkCloseMr(&mr->Header, on_mr, nullptr), STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(order.pd_closed_when_mr_callback_ran, 0);
  EXPECT_EQ(order.pd_calls, 1);
}

// ref §4.4: close cancels pending work first; after the close completion nothing is called back.
TEST_F(Lifetime, NoCallbackAfterCloseCompletes) {
  ListenOnB(kPort);  // never answers: the connect stays pending
  NDK_CONNECTOR* c = a_.NewConnector();
  static std::vector<std::string> events;
  events.clear();
  auto on_connect = [](PVOID, NTSTATUS s) {
    events.push_back(s == STATUS_CANCELLED ? "connect cancelled" : "connect other");
  };
  auto on_close = [](PVOID) { events.push_back("closed"); };
  Address src = MakeAddress(a_.v4, 0);
  Address dst = MakeAddress(b_.v4, kPort);
  ASSERT_EQ(c->Dispatch->NdkConnect(c, a_.NewQp(), src.Sa(), src.length, dst.Sa(), dst.length, 4, 4,
                                    nullptr, 0, on_connect, nullptr),
            STATUS_PENDING);
  ASSERT_EQ(c->Dispatch->NdkCloseConnector(&c->Header, on_close, nullptr), STATUS_PENDING);
  fabric_.RunUntilIdle();  // also runs past every CM timeout
  EXPECT_EQ(events, (std::vector<std::string>{"connect cancelled", "closed"}));
}

// ---- closing from inside a completion callback (ref §4.4 example) ------------------------------

class InCall : public TwoNodes {
 protected:
  InCall() : TwoNodes(FunctionalFabric(AsyncCompletion::kPendingInCall)) {}
};

struct CloseInCallback {
  NDK_CONNECTOR* connector = nullptr;
  NTSTATUS status = STATUS_PENDING;
  NTSTATUS close_returned = STATUS_PENDING;
  Closed closed;
  int calls = 0;
  static void OnConnect(PVOID ctx, NTSTATUS status) {
    auto* self = static_cast<CloseInCallback*>(ctx);
    ++self->calls;
    self->status = status;
    NDK_CONNECTOR* c = self->connector;
    self->close_returned = c->Dispatch->NdkCloseConnector(&c->Header, Closed::Done, &self->closed);
  }
};

// NdkConnect fails, the provider completes it from inside NdkConnect, the consumer closes the
// connector in the callback: the provider must not touch the connector afterwards (run under ASan).
TEST_F(InCall, ConnectorClosedInsideTheConnectCallbackIsNotTouchedAgain) {
  NDK_LISTENER* local = NewListener(a_);
  ASSERT_EQ(local->Dispatch->NdkListen(local, MakeAddress(a_.v4, 5000).Sa(), sizeof(SOCKADDR_IN),
                                       nullptr, nullptr),
            STATUS_SUCCESS);
  CloseInCallback ctx;
  ctx.connector = a_.NewConnector();
  Address src = MakeAddress(a_.v4, 5000);  // taken by the listener: SHARING_VIOLATION
  Address dst = MakeAddress(b_.v4, kPort);
  NDK_CONNECTOR* c = ctx.connector;
  EXPECT_EQ(c->Dispatch->NdkConnect(c, a_.NewQp(), src.Sa(), src.length, dst.Sa(), dst.length, 4, 4,
                                    nullptr, 0, CloseInCallback::OnConnect, &ctx),
            STATUS_PENDING);
  EXPECT_EQ(ctx.calls, 1);
  EXPECT_EQ(ctx.status, STATUS_SHARING_VIOLATION);
  EXPECT_EQ(ctx.close_returned, STATUS_PENDING);  // the callback is still running
  fabric_.RunUntilIdle();
  EXPECT_EQ(ctx.closed.calls, 1);
  EXPECT_EQ(ctx.calls, 1);
}

TEST_F(Lifetime, ConnectorClosedInsideAnAsynchronousConnectFailureIsSafe) {
  CloseInCallback ctx;
  ctx.connector = a_.NewConnector();
  Address src = MakeAddress(a_.v4, 0);
  Address dst = MakeAddress(b_.v4, kPort);  // nobody listens: CONNECTION_REFUSED from the network
  NDK_CONNECTOR* c = ctx.connector;
  ASSERT_EQ(c->Dispatch->NdkConnect(c, a_.NewQp(), src.Sa(), src.length, dst.Sa(), dst.length, 4, 4,
                                    nullptr, 0, CloseInCallback::OnConnect, &ctx),
            STATUS_PENDING);
  fabric_.RunUntilIdle();
  EXPECT_EQ(ctx.calls, 1);
  EXPECT_EQ(ctx.status, STATUS_CONNECTION_REFUSED);
  EXPECT_TRUE(ctx.close_returned == STATUS_SUCCESS || ctx.closed.calls == 1);
}

// ---- adapter close (ref §4.4, §2.6) ------------------------------------------------------------

TEST(AdapterClose, DeliversEveryQueuedCallbackAndEndsEveryDescendantBeforeReturning) {
  Fabric fabric(FunctionalFabric(AsyncCompletion::kPending));
  Node& a = fabric.AddNode({"a", {"192.0.2.1"}});
  fabric.AddNode({"b", {"192.0.2.2"}});
  NDK_ADAPTER* adapter = nullptr;
  ASSERT_EQ(a.OpenAdapter({1, 0}, &adapter), STATUS_SUCCESS);
  const NDK_ADAPTER_DISPATCH* d = adapter->Dispatch;
  NDK_CQ* cq = nullptr;
  NDK_PD* pd = nullptr;
  ASSERT_EQ(d->NdkCreateCq(adapter, 16, IgnoreCq, nullptr, nullptr, nullptr, nullptr, &cq), STATUS_SUCCESS);
  ASSERT_EQ(d->NdkCreatePd(adapter, nullptr, nullptr, &pd), STATUS_SUCCESS);
  NDK_QP* qp = nullptr;
  ASSERT_EQ(pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 8, 8, 1, 1, 0, nullptr, nullptr, &qp),
            STATUS_SUCCESS);
  Create pending_create;  // a create whose callback has not run yet
  NDK_MR* mr = Untouched<NDK_MR>();
  ASSERT_EQ(pd->Dispatch->NdkCreateMr(pd, FALSE, Create::Done, &pending_create, &mr), STATUS_PENDING);
  Closed pd_closed;  // a close pending on a successor (the QP)
  ASSERT_EQ(pd->Dispatch->NdkClosePd(&pd->Header, Closed::Done, &pd_closed), STATUS_PENDING);
  NDK_CONNECTOR* connector = nullptr;
  ASSERT_EQ(d->NdkCreateConnector(adapter, nullptr, nullptr, &connector), STATUS_SUCCESS);
  Request connect;  // a request still pending
  Address src = MakeAddress("192.0.2.1", 0);
  Address dst = MakeAddress("192.0.2.2", kPort);
  ASSERT_EQ(connector->Dispatch->NdkConnect(connector, qp, src.Sa(), src.length, dst.Sa(), dst.length,
                                            4, 4, nullptr, 0, Request::Done, &connect),
            STATUS_PENDING);
  a.CloseAdapter(adapter);
  EXPECT_EQ(pending_create.calls, 1);
  EXPECT_EQ(pd_closed.calls, 1);
  EXPECT_EQ(connect.calls, 1);
  EXPECT_EQ(connect.status, STATUS_CANCELLED);
  fabric.RunUntilIdle();  // nothing more arrives after the adapter is gone
  EXPECT_EQ(pending_create.calls, 1);
  EXPECT_EQ(pd_closed.calls, 1);
  EXPECT_EQ(connect.calls, 1);
}

}  // namespace
}  // namespace ndksim::conformance
