// SPDX-License-Identifier: MIT
// Fuzzes programs of NDK calls on a small two-node fabric (random profile, table sizes, async mode
// and fault rules) and checks the provider's promises as the program runs: exactly one completion
// per successful post, on the right CQ with the right contexts and type, none for an inline
// failure or a successful SILENT_SUCCESS request; a CQ notification only after an arm; PENDING if
// and only if one callback; guard bytes around every buffer untouched; a bounded event count.
#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "ndkpi.h"
#include "ndksim/fabric.h"
#include "ndksim/faults.h"
#include "ndksim/profile.h"

namespace ndksim::fuzz {
namespace {

constexpr std::size_t kGuardBytes = 64;
constexpr std::byte kGuard{0xA5};
constexpr std::size_t kMaxSteps = 96;
constexpr std::uint64_t kMaxEvents = 20'000'000;  // per run call: more means a livelock
constexpr USHORT kPort = 5000;

// ---- callback records -----------------------------------------------------------------------

// One maybe-asynchronous call (create, request or close): STATUS_PENDING iff one callback.
struct AsyncCall {
  NTSTATUS returned = STATUS_SUCCESS;
  NTSTATUS status = STATUS_PENDING;  // what the callback reported
  int calls = 0;
  NDK_OBJECT_HEADER* object = nullptr;
  static void Request(PVOID ctx, NTSTATUS status) {
    auto* c = static_cast<AsyncCall*>(ctx);
    ++c->calls;
    c->status = status;
  }
  static void Create(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER* object) {
    auto* c = static_cast<AsyncCall*>(ctx);
    ++c->calls;
    if (status == STATUS_SUCCESS) c->object = object;
  }
  static void Close(PVOID ctx) { ++static_cast<AsyncCall*>(ctx)->calls; }
};

struct CqState {
  NDK_CQ* cq = nullptr;
  ULONG depth = 0;
  ULONG committed = 0;  // queue entries of QPs that complete on it: never more than depth
  bool armed = false;
  bool closed = false;  // its close completed: no callback may follow
  bool dead = false;    // reported an overrun or fatal error
  AsyncCall close;      // its close, if requested
  static void Closed(PVOID ctx) {
    auto* cq = static_cast<CqState*>(ctx);
    ++cq->close.calls;
    cq->closed = true;
  }
};

void OnCqNotify(PVOID ctx, NTSTATUS status) {
  auto* cq = static_cast<CqState*>(ctx);
  // ref §4.2: a notification only after an arm, at most one per arm, never after close.
  NDKSIM_FUZZ_CHECK(cq->armed);
  NDKSIM_FUZZ_CHECK(!cq->closed);
  cq->armed = false;
  if (status != STATUS_SUCCESS) cq->dead = true;
}

// Whether `n` bytes at `p` (n <= PAGE_SIZE) all hold the guard pattern.
bool IsGuard(const std::byte* p, std::size_t n) {
  static const std::vector<std::byte> kPattern(PAGE_SIZE, kGuard);
  return std::memcmp(p, kPattern.data(), n) == 0;
}

// A host buffer with guard bytes on both sides, registered as an MR.
struct Buffer {
  std::unique_ptr<std::byte[]> storage;
  std::size_t size = 0;
  NDK_MR* mr = nullptr;
  MDL mdl{};
  bool registered = false;
  bool closing = false;
  std::byte* Data() const { return storage.get() + kGuardBytes; }
  bool GuardsIntact() const { return IsGuard(storage.get(), kGuardBytes) && IsGuard(Data() + size, kGuardBytes); }
};

struct Window {
  NDK_MW* mw = nullptr;
  bool closing = false;
};

struct FrRegion {
  NDK_MR* mr = nullptr;
  std::size_t first_page = 0;  // of the side's page pool
  bool closing = false;
};

struct QpState {
  NDK_QP* qp = nullptr;
  CqState* receive_cq = nullptr;
  CqState* initiator_cq = nullptr;
  ULONG receive_depth = 0;
  ULONG initiator_depth = 0;
  bool closing = false;
};

struct Side {
  Node* node = nullptr;
  NDK_ADAPTER* adapter = nullptr;
  NDK_PD* pd = nullptr;
  std::deque<CqState> cqs;
  std::deque<Buffer> buffers;
  std::deque<Window> windows;
  std::deque<FrRegion> fr_regions;
  std::byte* pool = nullptr;   // a guard page, the pages fast registers map, a guard page
  std::byte* pages = nullptr;  // pool + one page
  std::size_t page_count = 0;
  ULONG max_caller_data = 0;
};

struct Connection {
  QpState a;
  QpState b;
  NDK_CONNECTOR* connector_a = nullptr;
  NDK_CONNECTOR* connector_b = nullptr;
  bool closed = false;
};

// What a successful post promises.
struct Expected {
  CqState* cq = nullptr;
  void* qp_context = nullptr;
  NDK_OPERATION_TYPE type = NdkOperationTypeSend;
  bool silent = false;    // SILENT_SUCCESS: a CQE only on failure
  bool optional = false;  // its QP is closing: it may or may not complete
  QpState* qp = nullptr;
};

class Program {
 public:
  explicit Program(FuzzInput& in) : in_(in) {}

  void Run() {
    if (!SetUp()) return;
    for (std::size_t step = 0; step < kMaxSteps && !in_.Empty(); ++step) Step();
    Finish();
  }

 private:
  // ---- set-up ---------------------------------------------------------------------------------

  bool SetUp() {
    FabricConfig config;
    static constexpr HardwareProfile kPresets[] = {profiles::kConnectX100GbeRoce, profiles::kIWarp,
                                                   profiles::kFunctional};
    config.profile = kPresets[in_.Pick(3)];
    config.profile.max_qps = in_.InRange<std::uint32_t>(2, 6);
    config.profile.max_cqs = in_.InRange<std::uint32_t>(2, 6);
    config.profile.max_mrs = in_.InRange<std::uint32_t>(4, 24);
    config.profile.frmr_page_count = 16;
    config.async_completion = static_cast<AsyncCompletion>(in_.Pick(4));
    config.seed = in_.Integral<std::uint16_t>();
    // Odd seeds run with caches that miss all the time (no input byte of its own, so inputs found
    // before decode to the same program).
    if (config.seed % 2 == 1) config.profile = fuzz::WithTinyCaches(config.profile);
    fabric_ = std::make_unique<Fabric>(config);
    // NDKSIM_FUZZ_TRACE=1 prints the model's trace, to study an input that broke an invariant.
    if (std::getenv("NDKSIM_FUZZ_TRACE") != nullptr) {
      fabric_->Trace().EnableAll();
      fabric_->Trace().SetSink([](std::string_view line) { std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data()); });
    }
    a_.node = &fabric_->AddNode({"a", {"192.0.2.1"}});
    b_.node = &fabric_->AddNode({"b", {"192.0.2.2"}});
    for (Side* side : {&a_, &b_}) {
      if (side->node->OpenAdapter({2, 1}, &side->adapter) != STATUS_SUCCESS) return false;
      NDK_PD* pd = nullptr;
      if (!Created(side->adapter->Dispatch->NdkCreatePd(side->adapter, AsyncCall::Create, &NewCall(), &pd), &pd)) {
        return false;
      }
      side->pd = pd;
      NDK_ADAPTER_INFO info{};
      ULONG size = sizeof info;
      NDKSIM_FUZZ_CHECK(side->adapter->Dispatch->NdkQueryAdapterInfo(side->adapter, &info, &size) == STATUS_SUCCESS);
      side->max_caller_data = info.MaxCallerData;
      side->page_count = 8;
      pages_.emplace_back(static_cast<std::byte*>(std::aligned_alloc(PAGE_SIZE, (side->page_count + 2) * PAGE_SIZE)));
      side->pool = pages_.back().get();
      std::memset(side->pool, static_cast<int>(kGuard), (side->page_count + 2) * PAGE_SIZE);
      side->pages = side->pool + PAGE_SIZE;
    }
    if (b_.adapter->Dispatch->NdkCreateListener(b_.adapter, OnConnectEvent, this, nullptr, nullptr, &listener_) !=
        STATUS_SUCCESS) {
      return false;
    }
    SOCKADDR_IN addr = Address("192.0.2.2", kPort);
    AsyncCall& listen = NewCall();
    listen.returned = listener_->Dispatch->NdkListen(listener_, reinterpret_cast<PSOCKADDR>(&addr), sizeof addr,
                                                     AsyncCall::Request, &listen);
    RunUntil([&] { return listen.returned != STATUS_PENDING || listen.calls > 0; });
    return true;
  }

  static SOCKADDR_IN Address(const char* ip, USHORT port) {
    SOCKADDR_IN a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
  }

  static void OnConnectEvent(PVOID ctx, NDK_CONNECTOR* connector) {
    static_cast<Program*>(ctx)->incoming_.push_back(connector);
  }

  AsyncCall& NewCall() { return calls_.emplace_back(); }

  // Folds an inline return or a pending create into `*out`; true if an object came out.
  template <typename Object>
  bool Created(NTSTATUS s, Object** out) {
    AsyncCall& call = calls_.back();
    call.returned = s;
    if (s == STATUS_PENDING) {
      RunUntil([&] { return call.calls > 0; });
      NDKSIM_FUZZ_CHECK(call.calls == 1);
      *out = reinterpret_cast<Object*>(call.object);
      return *out != nullptr;
    }
    return s == STATUS_SUCCESS && *out != nullptr;
  }

  // Folds a maybe-pending request's return: its final status.
  NTSTATUS Requested(NTSTATUS s) {
    AsyncCall& call = calls_.back();
    call.returned = s;
    if (s != STATUS_PENDING) return s;
    RunUntil([&] { return call.calls > 0; });
    return call.status;
  }

  // ---- running ----------------------------------------------------------------------------------

  template <typename Done>
  void RunUntil(Done done) {
    fabric_->RunUntil([&] { return done(); }, Milliseconds(50));
  }

  void RunFor(Duration d) {
    const std::uint64_t events = fabric_->RunFor(d);
    NDKSIM_FUZZ_CHECK(events < kMaxEvents);
  }

  // ---- the steps ----------------------------------------------------------------------------------

  void Step() {
    switch (in_.Pick(19)) {
      case 0: RunFor(Nanoseconds(static_cast<std::int64_t>(in_.InRange<std::uint32_t>(0, 200'000)))); break;
      case 1: CreateCq(PickSide()); break;
      case 2: CloseCq(PickSide()); break;
      case 3: Connect(); break;
      case 4: CloseConnection(); break;
      case 5: RegisterBuffer(PickSide()); break;
      case 6: DropBuffer(PickSide()); break;
      case 7: PostReceive(); break;
      case 8: PostInitiator(in_.Bool() ? NdkOperationTypeSend : NdkOperationTypeReceiveAndInvalidate); break;
      case 9: PostInitiator(NdkOperationTypeWrite); break;
      case 10: PostInitiator(NdkOperationTypeRead); break;
      case 11: Flush(); break;
      case 12: Arm(PickSide()); break;
      case 13: PollAll(); break;
      case 14: AddFault(); break;
      case 15: FastRegister(); break;
      case 16: Invalidate(); break;
      case 17: Bind(); break;
      case 18: Disconnect(); break;
    }
    CheckGuards();
  }

  Side& PickSide() { return in_.Bool() ? b_ : a_; }

  CqState* PickCq(Side& side) {
    std::vector<CqState*> live;
    for (CqState& c : side.cqs) {
      if (!c.closed && c.cq != nullptr) live.push_back(&c);
    }
    return live.empty() ? nullptr : live[in_.Pick(live.size())];
  }

  void CreateCq(Side& side) {
    const ULONG depth = in_.InRange<ULONG>(1, 64);
    NDK_CQ* cq = nullptr;
    CqState& state = side.cqs.emplace_back();
    state.depth = depth;
    NewCall();
    if (!Created(side.adapter->Dispatch->NdkCreateCq(side.adapter, depth, OnCqNotify, &state, nullptr, AsyncCall::Create,
                                                     &calls_.back(), &cq),
                 &cq)) {
      state.closed = true;
      return;
    }
    state.cq = cq;
  }

  void CloseCq(Side& side) {
    CqState* cq = PickCq(side);
    if (cq == nullptr) return;
    NDK_CQ* closing = cq->cq;
    cq->cq = nullptr;  // not polled any more: what its QPs still complete may be lost
    for (auto& [ctx, e] : expected_) {
      if (e.cq == cq) e.optional = true;
    }
    // Until the close completes, callbacks may still run (ref §4.4); OnCqNotify checks that none
    // comes after. A pending close completes once the CQ's QPs are gone.
    cq->close.returned = closing->Dispatch->NdkCloseCq(&closing->Header, CqState::Closed, cq);
    if (cq->close.returned == STATUS_SUCCESS) cq->closed = true;
  }

  bool NewQp(Side& side, QpState* out) {
    CqState* rcq = PickCq(side);
    CqState* icq = in_.Bool() ? rcq : PickCq(side);
    if (rcq == nullptr || icq == nullptr) return false;
    const ULONG receive_depth = in_.InRange<ULONG>(1, 8);
    const ULONG initiator_depth = in_.InRange<ULONG>(1, 8);
    // The consumer sizes its CQs for the queues on them (ref §3.13: an overrun kills the CQ).
    if (rcq->committed + receive_depth > rcq->depth) return false;
    if (icq->committed + initiator_depth + (icq == rcq ? receive_depth : 0) > icq->depth) return false;
    NDK_QP* qp = nullptr;
    NewCall();
    if (!Created(side.pd->Dispatch->NdkCreateQp(side.pd, rcq->cq, icq->cq, out, receive_depth, initiator_depth, 2, 2,
                                                in_.InRange<ULONG>(0, 64), AsyncCall::Create, &calls_.back(), &qp),
                 &qp)) {
      return false;
    }
    rcq->committed += receive_depth;
    icq->committed += initiator_depth;
    out->qp = qp;
    out->receive_cq = rcq;
    out->initiator_cq = icq;
    out->receive_depth = receive_depth;
    out->initiator_depth = initiator_depth;
    return true;
  }

  void Connect() {
    if (connections_.size() >= 6) return;
    Connection& c = connections_.emplace_back();
    if (!NewQp(a_, &c.a) || !NewQp(b_, &c.b)) {
      CloseQps(c);
      return;
    }
    incoming_.clear();
    NDK_CONNECTOR* ca = nullptr;
    NewCall();
    if (!Created(a_.adapter->Dispatch->NdkCreateConnector(a_.adapter, AsyncCall::Create, &calls_.back(), &ca), &ca)) {
      CloseQps(c);
      return;
    }
    c.connector_a = ca;
    SOCKADDR_IN src = Address("192.0.2.1", 0);
    SOCKADDR_IN dst = Address("192.0.2.2", kPort);
    std::byte pdata[64] = {};
    const ULONG plen = static_cast<ULONG>(in_.Bytes(pdata, std::min<std::size_t>(in_.Pick(8), a_.max_caller_data)));
    AsyncCall& connect = NewCall();
    connect.returned = ca->Dispatch->NdkConnect(ca, c.a.qp, reinterpret_cast<PSOCKADDR>(&src), sizeof src,
                                                reinterpret_cast<PSOCKADDR>(&dst), sizeof dst, 4, 4,
                                                plen == 0 ? nullptr : pdata, plen, AsyncCall::Request, &connect);
    RunUntil([&] { return !incoming_.empty() || connect.calls > 0 || connect.returned != STATUS_PENDING; });
    if (incoming_.empty()) {
      CloseConnectionNow(c);
      return;
    }
    c.connector_b = incoming_.back();
    AsyncCall& accept = NewCall();
    accept.returned = c.connector_b->Dispatch->NdkAccept(c.connector_b, c.b.qp, 4, 4, nullptr, 0, OnDisconnect, nullptr,
                                                         AsyncCall::Request, &accept);
    RunUntil([&] { return connect.calls > 0 || connect.returned != STATUS_PENDING; });
    AsyncCall& complete = NewCall();
    complete.returned = ca->Dispatch->NdkCompleteConnect(ca, OnDisconnect, nullptr, AsyncCall::Request, &complete);
    RunUntil([&] {
      return (complete.calls > 0 || complete.returned != STATUS_PENDING) &&
             (accept.calls > 0 || accept.returned != STATUS_PENDING);
    });
  }

  // A closed QP's share of its CQs stays committed: what it completed may still sit there.
  static void OnDisconnect(PVOID) {}

  void CloseQps(Connection& c) {
    for (QpState* q : {&c.a, &c.b}) {
      if (q->qp == nullptr || q->closing) continue;
      q->closing = true;
      ForgetExpectations(q);
      AsyncCall& call = NewCall();
      call.returned = q->qp->Dispatch->NdkCloseQp(&q->qp->Header, AsyncCall::Close, &call);
    }
    c.closed = true;
  }

  void CloseConnectionNow(Connection& c) {
    for (NDK_CONNECTOR* conn : {c.connector_a, c.connector_b}) {
      if (conn == nullptr) continue;
      AsyncCall& call = NewCall();
      call.returned = conn->Dispatch->NdkCloseConnector(&conn->Header, AsyncCall::Close, &call);
    }
    c.connector_a = c.connector_b = nullptr;
    CloseQps(c);
  }

  Connection* PickConnection() {
    std::vector<Connection*> live;
    for (Connection& c : connections_) {
      if (!c.closed) live.push_back(&c);
    }
    return live.empty() ? nullptr : live[in_.Pick(live.size())];
  }

  void CloseConnection() {
    Connection* c = PickConnection();
    if (c == nullptr) return;
    if (in_.Bool()) {
      CloseConnectionNow(*c);
      return;
    }
    // QPs first: their closes wait for the connectors (ref §4.4 QP -> connector).
    CloseQps(*c);
    for (NDK_CONNECTOR* conn : {c->connector_a, c->connector_b}) {
      if (conn == nullptr) continue;
      AsyncCall& call = NewCall();
      call.returned = conn->Dispatch->NdkCloseConnector(&conn->Header, AsyncCall::Close, &call);
    }
    c->connector_a = c->connector_b = nullptr;
  }

  void Disconnect() {
    Connection* c = PickConnection();
    if (c == nullptr) return;
    NDK_CONNECTOR* conn = in_.Bool() ? c->connector_a : c->connector_b;
    if (conn == nullptr) return;
    AsyncCall& call = NewCall();
    call.returned = conn->Dispatch->NdkDisconnect(conn, AsyncCall::Request, &call);
  }

  // Its pending completions may still come until the close completes, but need not.
  void ForgetExpectations(QpState* q) {
    for (auto& [ctx, e] : expected_) {
      if (e.qp == q) e.optional = true;
    }
  }

  // ---- memory ---------------------------------------------------------------------------------------

  void RegisterBuffer(Side& side) {
    if (side.buffers.size() >= 12) return;
    Buffer& buf = side.buffers.emplace_back();
    buf.size = in_.InRange<std::size_t>(1, 4096);
    buf.storage = std::make_unique<std::byte[]>(buf.size + 2 * kGuardBytes);
    std::memset(buf.storage.get(), static_cast<int>(kGuard), buf.size + 2 * kGuardBytes);
    std::memset(buf.Data(), 0, buf.size);
    NDK_MR* mr = nullptr;
    NewCall();
    if (!Created(side.pd->Dispatch->NdkCreateMr(side.pd, FALSE, AsyncCall::Create, &calls_.back(), &mr), &mr)) {
      buf.closing = true;
      return;
    }
    buf.mr = mr;
    MmInitializeMdl(&buf.mdl, buf.Data(), buf.size);
    static constexpr ULONG kFlags[] = {
        NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
        NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ,
        NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_RDMA_READ_SINK,
        NDK_MR_FLAG_ALLOW_REMOTE_READ,
        NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK,
    };
    const ULONG flags = kFlags[in_.Pick(std::size(kFlags))];
    NewCall();
    const NTSTATUS s = mr->Dispatch->NdkRegisterMr(mr, &buf.mdl, buf.size, flags, AsyncCall::Request, &calls_.back());
    buf.registered = Requested(s) == STATUS_SUCCESS;
  }

  Buffer* PickBuffer(Side& side) {
    std::vector<Buffer*> live;
    for (Buffer& b : side.buffers) {
      if (!b.closing && b.mr != nullptr) live.push_back(&b);
    }
    return live.empty() ? nullptr : live[in_.Pick(live.size())];
  }

  void DropBuffer(Side& side) {
    Buffer* buf = PickBuffer(side);
    if (buf == nullptr) return;
    if (in_.Bool() && buf->registered) {
      NewCall();
      if (Requested(buf->mr->Dispatch->NdkDeregisterMr(buf->mr, AsyncCall::Request, &calls_.back())) == STATUS_SUCCESS) {
        buf->registered = false;
      }
      return;
    }
    // The bytes stay allocated until the program ends: a consumer frees them only when the close
    // has completed, which may be later (windows bound inside keep it open).
    buf->closing = true;
    AsyncCall& call = NewCall();
    call.returned = buf->mr->Dispatch->NdkCloseMr(&buf->mr->Header, AsyncCall::Close, &call);
  }

  // An SGE over one of `side`'s buffers (or, now and then, a bad one).
  NDK_SGE PickSge(Side& side) {
    NDK_SGE sge{};
    Buffer* buf = PickBuffer(side);
    if (buf == nullptr || in_.Chance(16)) {
      sge.VirtualAddress = reinterpret_cast<void*>(in_.Integral<std::uint64_t>());
      sge.Length = in_.InRange<ULONG>(0, 64);
      sge.MemoryRegionToken = in_.Integral<std::uint32_t>();
      if (buf != nullptr) sge.MemoryRegionToken = buf->mr->Dispatch->NdkGetLocalTokenFromMr(buf->mr);
      return sge;
    }
    const std::size_t offset = in_.Pick(buf->size);
    sge.VirtualAddress = buf->Data() + offset;
    sge.Length = static_cast<ULONG>(in_.InRange<std::size_t>(0, buf->size - offset));
    sge.MemoryRegionToken = buf->mr->Dispatch->NdkGetLocalTokenFromMr(buf->mr);
    return sge;
  }

  static bool InsideABuffer(const Side& side, const NDK_SGE& sge) {
    const auto* va = static_cast<const std::byte*>(sge.VirtualAddress);
    for (const Buffer& b : side.buffers) {
      if (va >= b.Data() && va <= b.Data() + b.size && sge.Length <= static_cast<std::size_t>(b.Data() + b.size - va)) {
        return true;
      }
    }
    return false;
  }

  // A remote target on `side`: a buffer's token and address (or a window's, a fast-register
  // region's, or garbage).
  void PickRemote(Side& side, std::uint64_t* address, UINT32* token) {
    Buffer* buf = PickBuffer(side);
    if (buf == nullptr || in_.Chance(16)) {
      *address = in_.Integral<std::uint64_t>();
      *token = in_.Integral<std::uint32_t>();
      return;
    }
    *address = reinterpret_cast<std::uint64_t>(buf->Data()) + in_.Pick(buf->size);
    *token = buf->mr->Dispatch->NdkGetRemoteTokenFromMr(buf->mr);
  }

  // ---- posting ------------------------------------------------------------------------------------

  struct Poster {
    Side* side;
    Side* peer;
    QpState* qp;
    void* qp_context;
  };

  bool PickPoster(Poster* p) {
    Connection* c = PickConnection();
    if (c == nullptr) return false;
    const bool on_a = in_.Bool();
    QpState* q = on_a ? &c->a : &c->b;
    if (q->qp == nullptr || q->closing) return false;
    *p = {on_a ? &a_ : &b_, on_a ? &b_ : &a_, q, q};
    return true;
  }

  void* NewContext() { return reinterpret_cast<void*>(++next_context_); }

  void Expect(void* ctx, CqState* cq, void* qp_context, NDK_OPERATION_TYPE type, bool silent, QpState* qp) {
    expected_[ctx] = Expected{cq, qp_context, type, silent, false, qp};
  }

  ULONG InitiatorFlags(bool allow_inline) {
    ULONG flags = 0;
    if (in_.Chance(48)) flags |= NDK_OP_FLAG_SILENT_SUCCESS;
    if (in_.Chance(32)) flags |= NDK_OP_FLAG_READ_FENCE;
    if (in_.Chance(64)) flags |= NDK_OP_FLAG_DEFER;
    if (allow_inline && in_.Chance(48)) flags |= NDK_OP_FLAG_INLINE;
    if (in_.Chance(8)) flags |= 1u << in_.Pick(32);  // now and then a flag the call does not take
    return flags;
  }

  void PostReceive() {
    Poster p;
    if (!PickPoster(&p)) return;
    NDK_SGE sgl[2];
    const ULONG n = static_cast<ULONG>(in_.Pick(3));
    for (ULONG i = 0; i < n; ++i) sgl[i] = PickSge(*p.side);
    void* ctx = NewContext();
    const NTSTATUS s = p.qp->qp->Dispatch->NdkReceive(p.qp->qp, ctx, sgl, n);
    if (s == STATUS_SUCCESS) Expect(ctx, p.qp->receive_cq, p.qp_context, NdkOperationTypeReceive, false, p.qp);
  }

  void PostInitiator(NDK_OPERATION_TYPE op) {
    Poster p;
    if (!PickPoster(&p)) return;
    NDK_SGE sgl[3];
    const ULONG n = static_cast<ULONG>(in_.Pick(4));
    for (ULONG i = 0; i < n; ++i) sgl[i] = PickSge(*p.side);
    std::uint64_t address = 0;
    UINT32 token = 0;
    PickRemote(*p.peer, &address, &token);
    const ULONG flags = InitiatorFlags(op != NdkOperationTypeRead);
    // ref §2.2: an INLINE post's bytes are copied from the consumer's VAs, which must be there.
    if ((flags & NDK_OP_FLAG_INLINE) != 0) {
      for (ULONG i = 0; i < n; ++i) {
        if (!InsideABuffer(*p.side, sgl[i])) sgl[i].Length = 0;
      }
    }
    void* ctx = NewContext();
    NDK_QP* qp = p.qp->qp;
    NTSTATUS s = STATUS_SUCCESS;
    NDK_OPERATION_TYPE type = op;
    switch (op) {
      case NdkOperationTypeSend: s = qp->Dispatch->NdkSend(qp, ctx, sgl, n, flags); break;
      case NdkOperationTypeReceiveAndInvalidate:
        s = qp->Dispatch->NdkSendAndInvalidate(qp, ctx, sgl, n, flags, token);
        type = NdkOperationTypeSend;  // ref §3.2: the sender sees a Send
        break;
      case NdkOperationTypeWrite: s = qp->Dispatch->NdkWrite(qp, ctx, sgl, n, address, token, flags); break;
      case NdkOperationTypeRead: s = qp->Dispatch->NdkRead(qp, ctx, sgl, n, address, token, flags); break;
      default: return;
    }
    if (s == STATUS_SUCCESS) {
      Expect(ctx, p.qp->initiator_cq, p.qp_context, type, (flags & NDK_OP_FLAG_SILENT_SUCCESS) != 0, p.qp);
    }
  }

  void Flush() {
    Poster p;
    if (!PickPoster(&p)) return;
    p.qp->qp->Dispatch->NdkFlush(p.qp->qp);
  }

  FrRegion* NewOrPickFr(Side& side) {
    if (!side.fr_regions.empty() && in_.Bool()) {
      FrRegion& fr = side.fr_regions[in_.Pick(side.fr_regions.size())];
      return fr.closing ? nullptr : &fr;
    }
    if (side.fr_regions.size() >= 4) return nullptr;
    NDK_MR* mr = nullptr;
    NewCall();
    if (!Created(side.pd->Dispatch->NdkCreateMr(side.pd, TRUE, AsyncCall::Create, &calls_.back(), &mr), &mr)) {
      return nullptr;
    }
    FrRegion& fr = side.fr_regions.emplace_back();
    fr.mr = mr;
    NewCall();
    (void)Requested(mr->Dispatch->NdkInitializeFastRegisterMr(mr, in_.InRange<ULONG>(1, 4), in_.Bool() ? TRUE : FALSE,
                                                              AsyncCall::Request, &calls_.back()));
    return &fr;
  }

  void FastRegister() {
    Poster p;
    if (!PickPoster(&p)) return;
    FrRegion* fr = NewOrPickFr(*p.side);
    if (fr == nullptr) return;
    if (in_.Chance(24) && !fr->closing) {  // reinitialise while its fast registers may be queued
      NewCall();
      (void)Requested(fr->mr->Dispatch->NdkInitializeFastRegisterMr(fr->mr, in_.InRange<ULONG>(1, 4), TRUE,
                                                                    AsyncCall::Request, &calls_.back()));
    }
    const std::size_t count = in_.InRange<std::size_t>(1, 4);
    NDK_LOGICAL_ADDRESS list[4];
    for (std::size_t i = 0; i < count; ++i) {
      list[i].QuadPart = static_cast<decltype(list[i].QuadPart)>(
          reinterpret_cast<std::uintptr_t>(p.side->pages + PAGE_SIZE * in_.Pick(p.side->page_count)));
    }
    const ULONG fbo = in_.Chance(32) ? in_.InRange<ULONG>(0, PAGE_SIZE - 1) : 0;
    const SIZE_T length = in_.InRange<SIZE_T>(1, count * PAGE_SIZE);
    const std::uint64_t base = 0x100000ull * in_.InRange<std::uint64_t>(1, 64) + fbo;
    ULONG flags = InitiatorFlags(false) & ~NDK_OP_FLAG_INLINE;
    static constexpr ULONG kRights[] = {0, NDK_OP_FLAG_ALLOW_LOCAL_WRITE, NDK_OP_FLAG_ALLOW_REMOTE_READ,
                                        NDK_OP_FLAG_ALLOW_REMOTE_WRITE, NDK_OP_FLAG_RDMA_READ_SINK};
    flags |= kRights[in_.Pick(std::size(kRights))];
    void* ctx = NewContext();
    NDK_QP* qp = p.qp->qp;
    const NTSTATUS s = qp->Dispatch->NdkFastRegister(qp, ctx, fr->mr, static_cast<ULONG>(count), list, fbo, length,
                                                     reinterpret_cast<PVOID>(base), flags);
    if (s == STATUS_SUCCESS) {
      Expect(ctx, p.qp->initiator_cq, p.qp_context, NdkOperationTypeFastRegister,
             (flags & NDK_OP_FLAG_SILENT_SUCCESS) != 0, p.qp);
    }
    if (in_.Chance(24)) {  // close it while the fast register may be queued
      fr->closing = true;
      AsyncCall& call = NewCall();
      call.returned = fr->mr->Dispatch->NdkCloseMr(&fr->mr->Header, AsyncCall::Close, &call);
    }
  }

  Window* NewOrPickWindow(Side& side) {
    if (!side.windows.empty() && in_.Bool()) {
      Window& w = side.windows[in_.Pick(side.windows.size())];
      return w.closing ? nullptr : &w;
    }
    if (side.windows.size() >= 4) return nullptr;
    NDK_MW* mw = nullptr;
    NewCall();
    if (!Created(side.pd->Dispatch->NdkCreateMw(side.pd, AsyncCall::Create, &calls_.back(), &mw), &mw)) return nullptr;
    Window& w = side.windows.emplace_back();
    w.mw = mw;
    return &w;
  }

  void Bind() {
    Poster p;
    if (!PickPoster(&p)) return;
    Window* w = NewOrPickWindow(*p.side);
    Buffer* buf = PickBuffer(*p.side);
    if (w == nullptr || buf == nullptr) return;
    const std::size_t offset = in_.Pick(buf->size);
    const SIZE_T length = in_.InRange<SIZE_T>(0, buf->size - offset);
    ULONG flags = InitiatorFlags(false) & ~NDK_OP_FLAG_INLINE;
    static constexpr ULONG kRights[] = {NDK_OP_FLAG_ALLOW_REMOTE_READ, NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
                                        NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE};
    flags |= kRights[in_.Pick(std::size(kRights))];
    void* ctx = NewContext();
    NDK_QP* qp = p.qp->qp;
    const NTSTATUS s = qp->Dispatch->NdkBind(qp, ctx, buf->mr, w->mw, buf->Data() + offset, length, flags);
    if (s == STATUS_SUCCESS) {
      Expect(ctx, p.qp->initiator_cq, p.qp_context, NdkOperationTypeBind, (flags & NDK_OP_FLAG_SILENT_SUCCESS) != 0,
             p.qp);
    }
    if (in_.Chance(24)) {  // close the window while the bind may be queued
      w->closing = true;
      AsyncCall& call = NewCall();
      call.returned = w->mw->Dispatch->NdkCloseMw(&w->mw->Header, AsyncCall::Close, &call);
    }
  }

  void Invalidate() {
    Poster p;
    if (!PickPoster(&p)) return;
    NDK_OBJECT_HEADER* target = nullptr;
    if (in_.Bool()) {
      FrRegion* fr = p.side->fr_regions.empty() ? nullptr : &p.side->fr_regions[in_.Pick(p.side->fr_regions.size())];
      if (fr != nullptr && !fr->closing) target = &fr->mr->Header;
    } else {
      Window* w = p.side->windows.empty() ? nullptr : &p.side->windows[in_.Pick(p.side->windows.size())];
      if (w != nullptr && !w->closing) target = &w->mw->Header;
    }
    if (target == nullptr) return;
    const ULONG flags = InitiatorFlags(false) & ~NDK_OP_FLAG_INLINE;
    void* ctx = NewContext();
    NDK_QP* qp = p.qp->qp;
    if (qp->Dispatch->NdkInvalidate(qp, ctx, target, flags) == STATUS_SUCCESS) {
      Expect(ctx, p.qp->initiator_cq, p.qp_context, NdkOperationTypeInvalidate,
             (flags & NDK_OP_FLAG_SILENT_SUCCESS) != 0, p.qp);
    }
  }

  // ---- completions ----------------------------------------------------------------------------------

  void Arm(Side& side) {
    CqState* cq = PickCq(side);
    if (cq == nullptr) return;
    static constexpr ULONG kTypes[] = {NDK_CQ_NOTIFY_ERRORS, NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_SOLICITED};
    cq->armed = true;
    cq->cq->Dispatch->NdkArmCq(cq->cq, kTypes[in_.Pick(3)]);
  }

  static bool SameType(NDK_OPERATION_TYPE expected, NDK_OPERATION_TYPE got) {
    if (expected == NdkOperationTypeReceive) {
      return got == NdkOperationTypeReceive || got == NdkOperationTypeReceiveAndInvalidate;
    }
    return expected == got;
  }

  void Poll(CqState& cq) {
    NDK_RESULT_EX results[8];
    for (;;) {
      const ULONG n = cq.cq->Dispatch->NdkGetCqResultsEx(cq.cq, results, 8);
      for (ULONG i = 0; i < n; ++i) Check(cq, results[i]);
      if (n < 8) return;
    }
  }

  void Check(CqState& cq, const NDK_RESULT_EX& r) {
    const auto it = expected_.find(r.RequestContext);
    // Exactly once: a context never posted, already completed, or of an inline failure is a bug.
    NDKSIM_FUZZ_CHECK(it != expected_.end());
    const Expected& e = it->second;
    NDKSIM_FUZZ_CHECK(e.cq == &cq);
    NDKSIM_FUZZ_CHECK(e.qp_context == r.QPContext);
    NDKSIM_FUZZ_CHECK(SameType(e.type, r.Type));
    NDKSIM_FUZZ_CHECK(!(e.silent && r.Status == STATUS_SUCCESS));  // SILENT_SUCCESS: no CQE on success
    NDKSIM_FUZZ_CHECK(r.Status != STATUS_PENDING);
    NDKSIM_FUZZ_CHECK(r.Status != STATUS_SUCCESS || r.ProviderErrorCode == 0);  // ref §2.4
    expected_.erase(it);
  }

  void PollAll() {
    for (Side* side : {&a_, &b_}) {
      for (CqState& cq : side->cqs) {
        if (cq.cq != nullptr) Poll(cq);
      }
    }
  }

  // ---- faults -----------------------------------------------------------------------------------------

  void AddFault() {
    if (faults_ >= 4) return;
    static constexpr FaultAction kActions[] = {FaultAction::kDrop, FaultAction::kCorrupt, FaultAction::kDelay,
                                               FaultAction::kLose, FaultAction::kForceRnr, FaultAction::kInvalidateToken,
                                               FaultAction::kOverrun, FaultAction::kFailDma, FaultAction::kFailAdapter};
    FaultRule rule;
    rule.action = kActions[in_.Pick(std::size(kActions))];
    rule.match.node = static_cast<std::uint32_t>(in_.Pick(2));
    if (rule.action == FaultAction::kDrop || rule.action == FaultAction::kCorrupt || rule.action == FaultAction::kDelay) {
      rule.match.packet = static_cast<PacketClass>(in_.Pick(4));
    }
    rule.from = fabric_->Now();
    rule.skip = in_.Pick(4);
    rule.count = in_.InRange<std::uint64_t>(1, 3);
    rule.probability = in_.Bool() ? 1.0 : 0.25;
    if (rule.action == FaultAction::kDelay) rule.delay = Microseconds(in_.InRange<std::int64_t>(1, 20));
    if (!Validate(rule).empty()) return;
    const std::uint32_t id = fabric_->AddFault(rule);
    ++faults_;
    // Overruns and a failed adapter end completions by design (ref §3.13): that node's losses
    // are expected.
    if (rule.action == FaultAction::kOverrun || rule.action == FaultAction::kFailAdapter) {
      lossy_rules_.push_back({id, *rule.match.node});
    }
  }

  bool LossyNode(const Side& side) {
    const std::uint32_t node = &side == &a_ ? 0 : 1;
    for (const auto& [id, n] : lossy_rules_) {
      if (n == node && fabric_->FaultStatsOf(id).fired > 0) return true;
    }
    return false;
  }

  // ---- the end --------------------------------------------------------------------------------------

  void CheckGuards() const {
    for (const Side* side : {&a_, &b_}) {
      for (const Buffer& b : side->buffers) {
        if (b.storage != nullptr) NDKSIM_FUZZ_CHECK(b.GuardsIntact());
      }
      if (side->pool == nullptr) continue;
      NDKSIM_FUZZ_CHECK(IsGuard(side->pool, PAGE_SIZE));
      NDKSIM_FUZZ_CHECK(IsGuard(side->pool + (side->page_count + 1) * PAGE_SIZE, PAGE_SIZE));
    }
  }

  void Finish() {
    // Flush every live QP: everything posted must complete (ref §3.9, §4.7).
    for (Connection& c : connections_) {
      for (QpState* q : {&c.a, &c.b}) {
        if (q->qp != nullptr && !q->closing) q->qp->Dispatch->NdkFlush(q->qp);
      }
    }
    for (int round = 0; round < 4; ++round) {
      const std::uint64_t events = fabric_->RunUntilIdle();
      NDKSIM_FUZZ_CHECK(events < kMaxEvents);
      PollAll();
    }
    for (const auto& [ctx, e] : expected_) {
      if (e.silent || e.optional || e.cq->dead || e.cq->cq == nullptr) continue;
      const Side& side = IsOnA(e.cq) ? a_ : b_;
      if (LossyNode(side)) continue;
      NDKSIM_FUZZ_CHECK(false && "a successful post never completed");
    }
    CheckGuards();
    for (Side* side : {&a_, &b_}) {
      side->node->CloseAdapter(side->adapter);
      for (CqState& cq : side->cqs) cq.closed = true;
    }
    fabric_->RunUntilIdle();
    // ref §3.0: STATUS_PENDING if and only if exactly one callback (the adapter close completed
    // everything still pending).
    for (const AsyncCall& call : calls_) {
      NDKSIM_FUZZ_CHECK(call.calls == (call.returned == STATUS_PENDING ? 1 : 0));
    }
    for (const Side* side : {&a_, &b_}) {
      for (const CqState& cq : side->cqs) {
        NDKSIM_FUZZ_CHECK(cq.close.calls == (cq.close.returned == STATUS_PENDING ? 1 : 0));
      }
    }
    fabric_.reset();
  }

  bool IsOnA(const CqState* cq) const {
    for (const CqState& c : a_.cqs) {
      if (&c == cq) return true;
    }
    return false;
  }

  FuzzInput& in_;
  std::unique_ptr<Fabric> fabric_;
  Side a_;
  Side b_;
  NDK_LISTENER* listener_ = nullptr;
  std::vector<NDK_CONNECTOR*> incoming_;
  std::deque<Connection> connections_;
  std::deque<AsyncCall> calls_;
  std::map<void*, Expected> expected_;
  std::uintptr_t next_context_ = 0x1000;
  std::size_t faults_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> lossy_rules_;
  struct FreeDeleter {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<std::byte, FreeDeleter>> pages_;
};

}  // namespace
}  // namespace ndksim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ndksim::fuzz::FuzzInput in(data, size);
  ndksim::fuzz::Program program(in);
  program.Run();
  return 0;
}
