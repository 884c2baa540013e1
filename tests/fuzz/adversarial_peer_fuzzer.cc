// SPDX-License-Identifier: MIT
// libFuzzer harness: node b attacks node a's memory with current, stale and random tokens and
// addresses; every outcome is checked against an exact model of what a's registrations, fast-register
// regions and memory windows grant, and a's whole arena (guard bytes included) against a shadow copy.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "ndkpi.h"
#include "ndksim/fabric.h"
#include "ndksim/harness.h"
#include "ndksim/profile.h"

namespace ndksim::fuzz {
namespace {

// memcpy with an empty range allowed: an empty vector's data() may be null, which memcpy forbids.
void CopyBytes(void* to, const void* from, std::size_t n) {
  if (n != 0) std::memcpy(to, from, n);
}

constexpr std::size_t kPageBytes = PAGE_SIZE;
constexpr std::size_t kArenaPages = 16;
constexpr std::size_t kArenaBytes = kArenaPages * kPageBytes;
// One guard page on each side: no registration reaches it, so any byte changed there is a stray.
constexpr std::size_t kGuardBytes = kPageBytes;
constexpr std::size_t kAllocationBytes = kGuardBytes + kArenaBytes + kGuardBytes;

constexpr int kMaxSteps = 48;
constexpr int kMaxReconnects = 8;
// A step is settled once the fabric is idle and the CQs are empty; polling may release MR -> MW
// edges whose close then runs as a DPC, hence a few rounds. More than this means it never settles.
constexpr int kMaxSettleRounds = 16;
constexpr std::size_t kMaxRegions = 4;
constexpr std::size_t kMaxFastRegisterMrs = 3;
constexpr std::size_t kMaxWindows = 3;
constexpr std::size_t kMaxRecords = 64;
constexpr ULONG kMaxFrPages = 3;
constexpr std::uint64_t kMaxAccessBytes = 2 * kPageBytes;
constexpr std::uint64_t kMaxSendBytes = 64;  // also the QPs' inline size and a's receive buffer
// Gap between the two SGEs of a split request: the peer's own bytes there must stay untouched.
constexpr std::size_t kSgeGap = 16;
constexpr std::size_t kPeerBufferBytes = kMaxAccessBytes + kSgeGap;
// Fast-register base addresses that are nobody's host address: only the page list maps them.
constexpr std::uint64_t kSyntheticVa = 0x0000100000000000ull;
constexpr std::byte kSinkSentinel{0xc3};
constexpr std::byte kReceiveSentinel{0xee};

// ---- the program's vocabulary ----------------------------------------------------------------------

enum class StepKind : std::uint8_t {
  kRegister,
  kDeregister,
  kCloseRegion,
  kCreateFr,
  kReinitializeFr,
  kFastRegister,
  kInvalidateFr,
  kCloseFr,
  kCreateMw,
  kBind,
  kInvalidateMw,
  kCloseMw,
  kWrite,
  kRead,
  kSendAndInvalidate,
};
constexpr std::array<const char*, 15> kStepNames = {
    "register",      "deregister",    "close-region", "create-fr", "reinitialize-fr",
    "fast-register", "invalidate-fr", "close-fr",     "create-mw", "bind",
    "invalidate-mw", "close-mw",      "write",        "read",      "send-and-invalidate",
};
// One input byte picks a step; peer requests come up more often than any one grant change.
constexpr std::array<StepKind, 20> kStepTable = {
    StepKind::kRegister,      StepKind::kDeregister,   StepKind::kCloseRegion,       StepKind::kCreateFr,
    StepKind::kReinitializeFr, StepKind::kFastRegister, StepKind::kInvalidateFr,     StepKind::kCloseFr,
    StepKind::kCreateMw,      StepKind::kBind,         StepKind::kInvalidateMw,      StepKind::kCloseMw,
    StepKind::kWrite,         StepKind::kRead,         StepKind::kSendAndInvalidate, StepKind::kWrite,
    StepKind::kRead,          StepKind::kWrite,        StepKind::kSendAndInvalidate, StepKind::kRead,
};

struct FlagChoice {
  ULONG flags;
  bool valid;  // whether the provider must accept it
};
// NdkRegisterMr rights, with two values the provider must refuse: REMOTE_WRITE's 0x4 bit without
// LOCAL_WRITE, and a bit that is no NDK_MR_FLAG.
constexpr std::array<FlagChoice, 9> kRegionFlags = {{
    {NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE, true},
    {NDK_MR_FLAG_ALLOW_REMOTE_READ, true},
    {NDK_MR_FLAG_ALLOW_REMOTE_WRITE, true},
    {NDK_MR_FLAG_ALLOW_LOCAL_WRITE, true},
    {0, true},
    {NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_RDMA_READ_SINK, true},
    {NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_RDMA_READ_SINK, true},
    {NDK_MR_FLAG_ALLOW_REMOTE_WRITE & ~NDK_MR_FLAG_ALLOW_LOCAL_WRITE, false},
    {0x10, false},
}};
// NdkFastRegister rights. 0x20 alone is half of REMOTE_WRITE: it grants nothing remote, yet needs an
// MR initialised with remote access.
constexpr std::array<ULONG, 9> kFrFlags = {
    NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
    NDK_OP_FLAG_ALLOW_REMOTE_READ,
    NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
    NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_READ,
    0,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE & ~NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
    NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_RDMA_READ_SINK,
    NDK_OP_FLAG_ALLOW_REMOTE_READ | (NDK_OP_FLAG_ALLOW_REMOTE_WRITE & ~NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
};
// NdkBind rights; LOCAL_WRITE alone is no bind flag and must be refused.
constexpr std::array<ULONG, 6> kBindFlags = {
    NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE,
    NDK_OP_FLAG_ALLOW_REMOTE_READ,
    0,
    NDK_OP_FLAG_ALLOW_REMOTE_WRITE & ~NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
    NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
};

// ---- the model ---------------------------------------------------------------------------------------

struct Rights {
  bool read = false;
  bool write = false;
};

// ref §1.5 / §1.4: REMOTE_WRITE carries the LOCAL_WRITE bit, so it is a two-bit test.
Rights RegionRights(ULONG mr_flags) {
  return {(mr_flags & NDK_MR_FLAG_ALLOW_REMOTE_READ) != 0,
          (mr_flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == NDK_MR_FLAG_ALLOW_REMOTE_WRITE};
}
Rights OpRights(ULONG op_flags) {
  return {(op_flags & NDK_OP_FLAG_ALLOW_REMOTE_READ) != 0,
          (op_flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE};
}

// A victim MR of NdkCreateMr(FALSE) + NdkRegisterMr. Its VA is the host address of its first byte.
struct Region {
  NDK_MR* mr = nullptr;  // null once we have closed it
  MDL mdl{};
  bool registered = false;
  // NdkCloseMr pended because a window's MR -> MW edge holds the MR: it lives on, still registered,
  // until the edge goes and the close callback runs.
  bool closing = false;
  bool destroyed = false;
  UINT32 token = 0;
  std::size_t offset = 0;  // of its first byte in the allocation
  std::size_t length = 0;
  Rights rights;
  bool Open() const { return mr != nullptr; }
};

// A victim MR of NdkCreateMr(TRUE) + NdkInitializeFastRegisterMr, fast-registered onto arena pages.
struct FrMr {
  NDK_MR* mr = nullptr;
  UINT32 token = 0;
  ULONG capacity = 0;
  bool remote_access = false;
  bool valid = false;  // fast-registered, and not invalidated since
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::uint64_t fbo = 0;
  std::vector<std::size_t> pages;  // allocation offset of each page of the list
  Rights rights;
};

struct Window {
  NDK_MW* mw = nullptr;
  UINT32 token = 0;
  bool bound = false;
  Region* parent = nullptr;  // while bound
  // The region of the last bind that executed: its MR stays open while this window is (the
  // provider's MR -> MW edge outlives an invalidation; only a rebind elsewhere or a close drops it).
  Region* edge = nullptr;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  std::size_t offset = 0;  // of its first byte in the allocation
  Rights rights;
};

// What one currently valid token grants; exactly one of region, fr, window is set.
struct Grant {
  UINT32 token = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  Rights rights;
  Region* region = nullptr;
  FrMr* fr = nullptr;
  Window* window = nullptr;
};

// A token a's side ever handed out (current or stale), with the range it named, for the peer to reuse.
struct Record {
  UINT32 token = 0;
  std::uint64_t base = 0;
  std::uint64_t length = 0;
};

struct Piece {
  std::size_t offset;  // in the allocation
  std::size_t length;
};

// Overflow-safe: [address, address + length) inside [base, base + grant_length).
bool Inside(const Grant& g, std::uint64_t address, std::uint64_t length) {
  if (address < g.base) return false;
  const std::uint64_t offset = address - g.base;
  return offset <= g.length && length <= g.length - offset;
}

// NDK_FN_CLOSE_COMPLETION of a region whose close pended: the MR is gone, and deregistered with it.
void OnRegionClosed(PVOID context) { static_cast<Region*>(context)->destroyed = true; }

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

// The last peer request, for the report when an invariant breaks.
struct LastRequest {
  const char* what = "none";
  UINT32 token = 0;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  bool granted = false;
};

// An invariant of this harness: on failure, say which step broke it before aborting.
#define NDKSIM_PEER_CHECK(cond)  \
  do {                           \
    if (!(cond)) {               \
      DescribeStep();            \
      NDKSIM_FUZZ_CHECK(cond);   \
    }                            \
  } while (0)

class AdversarialPeer {
 public:
  AdversarialPeer(FuzzInput& in, const QpPairConfig& config);
  ~AdversarialPeer();
  AdversarialPeer(const AdversarialPeer&) = delete;
  AdversarialPeer& operator=(const AdversarialPeer&) = delete;

  void Run();

 private:
  struct Connection {
    NDK_QP* a = nullptr;
    NDK_QP* b = nullptr;
  };

  // ---- memory and the model ----
  std::byte* At(std::size_t offset) const { return allocation_.get() + offset; }
  std::uint64_t Va(std::size_t offset) const { return reinterpret_cast<std::uint64_t>(At(offset)); }
  std::vector<Grant> CurrentGrants() const;
  std::optional<Grant> FindGrant(UINT32 token) const;
  std::vector<Piece> Pieces(const Grant& g, std::uint64_t address, std::uint64_t length) const;
  void ApplyWrite(const Grant& g, std::uint64_t address, const std::vector<std::byte>& data);
  std::vector<std::byte> ReadShadow(const Grant& g, std::uint64_t address, std::uint64_t length) const;
  void CheckArena() const;
  std::vector<Region*> OpenRegions() const;
  std::size_t WindowsBoundIn(const Region* region) const;
  bool HasEdge(const Region* region) const;
  void SweepClosedRegions();
  void AddRecord(UINT32 token, std::uint64_t base, std::uint64_t length);

  // ---- running work requests ----
  void* NewContext() { return reinterpret_cast<void*>(++last_context_); }
  std::size_t PollAll();
  void Settle();
  const NDK_RESULT_EX* ResultOf(void* context) const;
  NTSTATUS Outcome(NTSTATUS posted, void* context);
  bool Reconnect();
  void RunStep(StepKind kind);

  // ---- victim grant changes (side a) ----
  void RegisterRegion();
  Region* NewRegion();
  void DeregisterRegion();
  void CloseRegion();
  void CreateFr();
  void ReinitializeFr();
  void FastRegister();
  std::uint64_t ChooseFrBase(ULONG page_count, std::uint64_t fbo, std::size_t first_page);
  void InvalidateFr();
  void CloseFr();
  void CreateMw();
  void Bind();
  void InvalidateMw();
  void CloseMw();

  // ---- peer requests (side b) ----
  struct Target {
    UINT32 token;
    Record near;  // the range the address is chosen around
  };
  Target ChooseTarget();
  const Record& AnyRecord() { return records_[in_.Pick(records_.size())]; }
  std::uint64_t ChooseLength(std::uint64_t max);
  std::uint64_t ChooseAddress(const Record& near, std::uint64_t length);
  std::vector<std::byte> PeerData(std::uint64_t length);
  std::vector<NDK_SGE> PeerSges(const RegisteredBuffer& buffer, std::uint64_t length, std::uint8_t options) const;
  static std::size_t SplitPoint(std::uint64_t length, std::uint8_t options);
  void PeerWrite();
  void PeerRead();
  void PeerSendAndInvalidate();
  void EnsureReceive();
  void Invalidated(const Grant& g);

  void Cleanup();
  void DescribeStep() const;

  FuzzInput& in_;
  std::string_view profile_name_;
  bool rotate_keys_ = false;
  // Declared before the pair, so they outlive it: a pending close's callback names a Region.
  std::unique_ptr<std::byte, FreeDeleter> allocation_;
  std::vector<std::byte> shadow_;
  std::vector<std::unique_ptr<Region>> regions_;  // never erased: callbacks hold their addresses
  std::vector<std::unique_ptr<FrMr>> frs_;
  std::vector<std::unique_ptr<Window>> windows_;
  std::vector<Record> records_;
  std::vector<NDK_RESULT_EX> results_;  // of the current step
  QpPair pair_;
  // Destroyed before the pair (reverse order of declaration).
  std::unique_ptr<RegisteredBuffer> source_;   // b: what the peer writes and sends
  std::unique_ptr<RegisteredBuffer> sink_;     // b: where the peer's reads land
  std::unique_ptr<RegisteredBuffer> receive_;  // a: the receive a send-and-invalidate consumes
  Connection conn_;
  int reconnects_ = 0;
  bool broken_ = false;  // an error completion: both QPs of the connection are in error
  bool receive_posted_ = false;
  void* receive_context_ = nullptr;
  std::uintptr_t last_context_ = 0;
  int step_ = 0;
  StepKind kind_ = StepKind::kRegister;
  LastRequest last_;
};

AdversarialPeer::AdversarialPeer(FuzzInput& in, const QpPairConfig& config)
    : in_(in),
      profile_name_(config.fabric.profile.name),
      rotate_keys_(config.fabric.profile.rotate_fast_register_keys),
      allocation_(static_cast<std::byte*>(std::aligned_alloc(kPageBytes, kAllocationBytes))),
      shadow_(kAllocationBytes),
      pair_(config) {
  // A pattern that differs between neighbouring bytes and pages, so a misplaced copy shows.
  for (std::size_t i = 0; i < kAllocationBytes; ++i) {
    shadow_[i] = static_cast<std::byte>((i * 0x9d + (i >> 12) * 0x3b + 0x5a) & 0xff);
  }
  std::memcpy(allocation_.get(), shadow_.data(), kAllocationBytes);
  QpEnd& b = pair_.b();
  source_ = b.Register(kPeerBufferBytes, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  // iWARP needs the read-sink right on read destinations (ref §1.7).
  sink_ = b.Register(kPeerBufferBytes, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK);
  receive_ = pair_.a().Register(kMaxSendBytes, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
  conn_ = {pair_.a().qp, pair_.b().qp};
  // Tokens of a's that grant nothing remote are fair game for the peer too.
  UINT32 privileged = 0;
  pair_.a().pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pair_.a().pd, &privileged);
  AddRecord(privileged, 0, 0);
  AddRecord(receive_->RemoteToken(), receive_->Address(), kMaxSendBytes);
}

// Run() closed the victim's objects; anything left (an exception cut the program short) the pair's
// adapter close takes care of, after the peer's buffers go.
AdversarialPeer::~AdversarialPeer() {
  receive_.reset();
  sink_.reset();
  source_.reset();
}

void AdversarialPeer::Run() {
  for (step_ = 0; step_ < kMaxSteps && !in_.Empty(); ++step_) {
    results_.clear();
    kind_ = kStepTable[in_.Pick(kStepTable.size())];
    RunStep(kind_);
    Settle();
    SweepClosedRegions();
    CheckArena();
    if (broken_ && !Reconnect()) break;
  }
  Cleanup();
}

void AdversarialPeer::RunStep(StepKind kind) {
  switch (kind) {
    case StepKind::kRegister: return RegisterRegion();
    case StepKind::kDeregister: return DeregisterRegion();
    case StepKind::kCloseRegion: return CloseRegion();
    case StepKind::kCreateFr: return CreateFr();
    case StepKind::kReinitializeFr: return ReinitializeFr();
    case StepKind::kFastRegister: return FastRegister();
    case StepKind::kInvalidateFr: return InvalidateFr();
    case StepKind::kCloseFr: return CloseFr();
    case StepKind::kCreateMw: return CreateMw();
    case StepKind::kBind: return Bind();
    case StepKind::kInvalidateMw: return InvalidateMw();
    case StepKind::kCloseMw: return CloseMw();
    case StepKind::kWrite: return PeerWrite();
    case StepKind::kRead: return PeerRead();
    case StepKind::kSendAndInvalidate: return PeerSendAndInvalidate();
  }
}

// ---- the model ---------------------------------------------------------------------------------------

std::vector<Grant> AdversarialPeer::CurrentGrants() const {
  std::vector<Grant> grants;
  for (const auto& r : regions_) {
    if (r->registered && !r->destroyed) {
      grants.push_back({r->token, Va(r->offset), r->length, r->rights, r.get(), nullptr, nullptr});
    }
  }
  for (const auto& fr : frs_) {
    if (fr->valid) grants.push_back({fr->token, fr->base, fr->length, fr->rights, nullptr, fr.get(), nullptr});
  }
  for (const auto& w : windows_) {
    if (w->bound) grants.push_back({w->token, w->base, w->length, w->rights, nullptr, nullptr, w.get()});
  }
  // Two live protection entries never share a token (the index part differs).
  for (std::size_t i = 0; i < grants.size(); ++i) {
    for (std::size_t j = i + 1; j < grants.size(); ++j) NDKSIM_PEER_CHECK(grants[i].token != grants[j].token);
  }
  return grants;
}

std::optional<Grant> AdversarialPeer::FindGrant(UINT32 token) const {
  for (const Grant& g : CurrentGrants()) {
    if (g.token == token) return g;
  }
  return std::nullopt;
}

std::vector<Piece> AdversarialPeer::Pieces(const Grant& g, std::uint64_t address, std::uint64_t length) const {
  std::vector<Piece> pieces;
  if (g.fr == nullptr) {
    // Regions and windows are host-contiguous from their first byte.
    const std::size_t first = g.region != nullptr ? g.region->offset : g.window->offset;
    pieces.push_back({first + static_cast<std::size_t>(address - g.base), static_cast<std::size_t>(length)});
  } else {
    // A fast-register region maps through its page list, page by page, FBO bytes into page 0.
    for (std::uint64_t done = 0; done < length;) {
      const std::uint64_t list_offset = address + done - g.base + g.fr->fbo;
      const std::uint64_t within = list_offset % kPageBytes;
      const std::uint64_t n = std::min<std::uint64_t>(kPageBytes - within, length - done);
      NDKSIM_PEER_CHECK(list_offset / kPageBytes < g.fr->pages.size());
      pieces.push_back({g.fr->pages[list_offset / kPageBytes] + static_cast<std::size_t>(within),
                        static_cast<std::size_t>(n)});
      done += n;
    }
  }
  // Every grant lies inside the arena, so a model that maps into a guard page is itself wrong.
  for (const Piece& p : pieces) {
    NDKSIM_PEER_CHECK(p.offset >= kGuardBytes && p.offset + p.length <= kGuardBytes + kArenaBytes);
  }
  return pieces;
}

void AdversarialPeer::ApplyWrite(const Grant& g, std::uint64_t address, const std::vector<std::byte>& data) {
  std::size_t at = 0;
  // In address order, as the NIC places them: pages listed twice end with the later bytes.
  for (const Piece& p : Pieces(g, address, data.size())) {
    CopyBytes(shadow_.data() + p.offset, data.data() + at, p.length);
    at += p.length;
  }
}

std::vector<std::byte> AdversarialPeer::ReadShadow(const Grant& g, std::uint64_t address, std::uint64_t length) const {
  std::vector<std::byte> out;
  for (const Piece& p : Pieces(g, address, length)) {
    out.insert(out.end(), shadow_.begin() + static_cast<std::ptrdiff_t>(p.offset),
               shadow_.begin() + static_cast<std::ptrdiff_t>(p.offset + p.length));
  }
  return out;
}

void AdversarialPeer::CheckArena() const {
  const auto [is, model] = std::mismatch(At(0), At(kAllocationBytes), shadow_.begin());
  if (is != At(kAllocationBytes)) {
    const auto offset = static_cast<std::size_t>(is - At(0));
    std::fprintf(stderr, "adversarial_peer: victim byte at allocation offset %zu (%s) is %#x, the model says %#x\n",
                 offset, offset < kGuardBytes || offset >= kGuardBytes + kArenaBytes ? "guard" : "arena",
                 static_cast<unsigned>(*is), static_cast<unsigned>(*model));
  }
  NDKSIM_PEER_CHECK(is == At(kAllocationBytes));
}

std::vector<Region*> AdversarialPeer::OpenRegions() const {
  std::vector<Region*> open;
  for (const auto& r : regions_) {
    if (r->Open()) open.push_back(r.get());
  }
  return open;
}

std::size_t AdversarialPeer::WindowsBoundIn(const Region* region) const {
  return static_cast<std::size_t>(
      std::count_if(windows_.begin(), windows_.end(), [&](const auto& w) { return w->bound && w->parent == region; }));
}

bool AdversarialPeer::HasEdge(const Region* region) const {
  return std::any_of(windows_.begin(), windows_.end(), [&](const auto& w) { return w->edge == region; });
}

// A pending close completes exactly when the last MR -> MW edge on the region goes; until then the
// region stays registered and keeps granting.
void AdversarialPeer::SweepClosedRegions() {
  for (const auto& r : regions_) {
    if (!r->closing) continue;
    if (r->destroyed) {
      NDKSIM_PEER_CHECK(!HasEdge(r.get()));
      NDKSIM_PEER_CHECK(WindowsBoundIn(r.get()) == 0);
      r->closing = false;
      r->registered = false;
    } else {
      NDKSIM_PEER_CHECK(HasEdge(r.get()));
    }
  }
}

void AdversarialPeer::AddRecord(UINT32 token, std::uint64_t base, std::uint64_t length) {
  if (records_.size() < kMaxRecords) records_.push_back({token, base, length});
}

// ---- running work requests ---------------------------------------------------------------------------

std::size_t AdversarialPeer::PollAll() {
  const std::size_t before = results_.size();
  for (const QpEnd* end : {&pair_.a(), &pair_.b()}) {
    for (NDK_CQ* cq : {end->receive_cq, end->initiator_cq}) {
      while (QpEnd::Poll(cq, results_) > 0) {
      }
    }
  }
  for (std::size_t i = before; i < results_.size(); ++i) {
    if (results_[i].Status != STATUS_SUCCESS) broken_ = true;
  }
  return results_.size() - before;
}

// Runs until nothing is left: the model only has to know the grants between steps.
void AdversarialPeer::Settle() {
  for (int round = 0;; ++round) {
    NDKSIM_PEER_CHECK(round < kMaxSettleRounds);
    const std::uint64_t events = pair_.fabric().RunUntilIdle();
    const std::size_t polled = PollAll();
    if (events == 0 && polled == 0) return;
  }
}

const NDK_RESULT_EX* AdversarialPeer::ResultOf(void* context) const {
  const NDK_RESULT_EX* found = nullptr;
  for (const NDK_RESULT_EX& r : results_) {
    if (r.RequestContext != context) continue;
    NDKSIM_PEER_CHECK(found == nullptr);  // one completion per request
    found = &r;
  }
  return found;
}

// The final status of a posted request: its completion's, or the posting call's if that refused it
// (then no completion may ever come).
NTSTATUS AdversarialPeer::Outcome(NTSTATUS posted, void* context) {
  Settle();
  const NDK_RESULT_EX* r = ResultOf(context);
  if (posted != STATUS_SUCCESS) {
    NDKSIM_PEER_CHECK(r == nullptr);
    return posted;
  }
  NDKSIM_PEER_CHECK(r != nullptr);
  return r->Status;
}

// A refused request leaves both QPs in error: go on over a fresh connection of the same PDs and CQs.
bool AdversarialPeer::Reconnect() {
  if (reconnects_ == kMaxReconnects) return false;
  ++reconnects_;
  const QpPair::ExtraQps qps = pair_.AddConnectedQps();
  conn_ = {qps.a, qps.b};
  receive_posted_ = false;  // the old QP's receive was flushed with it
  Settle();
  broken_ = false;
  return true;
}

// ---- victim grant changes ------------------------------------------------------------------------------

Region* AdversarialPeer::NewRegion() {
  NDK_PD* pd = pair_.a().pd;
  auto region = std::make_unique<Region>();
  NDKSIM_PEER_CHECK(pd->Dispatch->NdkCreateMr(pd, FALSE, nullptr, nullptr, &region->mr) == STATUS_SUCCESS);
  regions_.push_back(std::move(region));
  return regions_.back().get();
}

void AdversarialPeer::RegisterRegion() {
  const bool reuse = in_.Bool();
  std::vector<Region*> idle;
  for (Region* r : OpenRegions()) {
    if (!r->registered) idle.push_back(r);
  }
  Region* region = nullptr;
  if (reuse && !idle.empty()) {
    region = idle[in_.Pick(idle.size())];
  } else if (OpenRegions().size() < kMaxRegions) {
    region = NewRegion();
  } else {
    return;
  }
  const auto offset = in_.InRange<std::size_t>(0, kArenaBytes - 1);
  const std::size_t length = in_.Bool() ? kArenaBytes - offset : in_.InRange<std::size_t>(1, kArenaBytes - offset);
  const FlagChoice flags = kRegionFlags[in_.Pick(kRegionFlags.size())];
  std::byte* start = At(kGuardBytes + offset);
  MmInitializeMdl(&region->mdl, start, length);
  const NTSTATUS s =
      region->mr->Dispatch->NdkRegisterMr(region->mr, &region->mdl, length, flags.flags, nullptr, nullptr);
  NDKSIM_PEER_CHECK((s == STATUS_SUCCESS) == flags.valid);
  if (s != STATUS_SUCCESS) return;
  region->registered = true;
  region->token = region->mr->Dispatch->NdkGetRemoteTokenFromMr(region->mr);
  region->offset = kGuardBytes + offset;
  region->length = length;
  region->rights = RegionRights(flags.flags);
  AddRecord(region->token, Va(region->offset), length);
}

void AdversarialPeer::DeregisterRegion() {
  const std::vector<Region*> open = OpenRegions();
  if (open.empty()) return;
  Region* region = open[in_.Pick(open.size())];
  // Refused while unregistered, and while a window is bound inside (ref §3.6, NDSPI analogue).
  const bool expected = region->registered && WindowsBoundIn(region) == 0;
  const NTSTATUS s = region->mr->Dispatch->NdkDeregisterMr(region->mr, nullptr, nullptr);
  NDKSIM_PEER_CHECK((s == STATUS_SUCCESS) == expected);
  if (s == STATUS_SUCCESS) region->registered = false;
}

void AdversarialPeer::CloseRegion() {
  const std::vector<Region*> open = OpenRegions();
  if (open.empty()) return;
  Region* region = open[in_.Pick(open.size())];
  // ref §4.4: a close waits for successors; a window's MR -> MW edge is one.
  const bool held = HasEdge(region);
  const NTSTATUS s = region->mr->Dispatch->NdkCloseMr(&region->mr->Header, OnRegionClosed, region);
  NDKSIM_PEER_CHECK(s == (held ? STATUS_PENDING : STATUS_SUCCESS));
  region->mr = nullptr;
  if (s == STATUS_SUCCESS) {
    region->destroyed = true;
    region->registered = false;
  } else {
    region->closing = true;
  }
}

void AdversarialPeer::CreateFr() {
  if (frs_.size() >= kMaxFastRegisterMrs) return;
  const auto capacity = in_.InRange<ULONG>(1, kMaxFrPages);
  const bool remote = in_.Bool();
  NDK_PD* pd = pair_.a().pd;
  auto fr = std::make_unique<FrMr>();
  NDKSIM_PEER_CHECK(pd->Dispatch->NdkCreateMr(pd, TRUE, nullptr, nullptr, &fr->mr) == STATUS_SUCCESS);
  const NTSTATUS s =
      fr->mr->Dispatch->NdkInitializeFastRegisterMr(fr->mr, capacity, remote ? TRUE : FALSE, nullptr, nullptr);
  NDKSIM_PEER_CHECK(s == STATUS_SUCCESS);
  fr->capacity = capacity;
  fr->remote_access = remote;
  fr->token = fr->mr->Dispatch->NdkGetRemoteTokenFromMr(fr->mr);
  AddRecord(fr->token, 0, 0);
  frs_.push_back(std::move(fr));
}

void AdversarialPeer::ReinitializeFr() {
  if (frs_.empty()) return;
  FrMr* fr = frs_[in_.Pick(frs_.size())].get();
  const auto capacity = in_.InRange<ULONG>(1, kMaxFrPages);
  const bool remote = in_.Bool();
  // ref §3.15: may be called again; a new protection entry replaces the old, whose token dies.
  const NTSTATUS s =
      fr->mr->Dispatch->NdkInitializeFastRegisterMr(fr->mr, capacity, remote ? TRUE : FALSE, nullptr, nullptr);
  NDKSIM_PEER_CHECK(s == STATUS_SUCCESS);
  fr->valid = false;
  fr->capacity = capacity;
  fr->remote_access = remote;
  fr->token = fr->mr->Dispatch->NdkGetRemoteTokenFromMr(fr->mr);
  AddRecord(fr->token, 0, 0);
}

void AdversarialPeer::FastRegister() {
  if (frs_.empty()) return;
  FrMr* fr = frs_[in_.Pick(frs_.size())].get();
  // One page more than the capacity now and then: the provider must refuse it.
  const auto page_count = in_.InRange<ULONG>(1, fr->capacity + 1);
  std::array<NDK_LOGICAL_ADDRESS, kMaxFrPages + 1> list{};
  std::vector<std::size_t> pages;
  for (ULONG i = 0; i < page_count; ++i) {
    pages.push_back(kGuardBytes + in_.InRange<std::size_t>(0, kArenaPages - 1) * kPageBytes);
    list[i].QuadPart = static_cast<LONG64>(Va(pages.back()));
  }
  const std::uint64_t fbo = in_.Bool() ? 0 : in_.InRange<std::uint64_t>(0, kPageBytes - 1);
  const std::uint64_t span = std::uint64_t{page_count} * kPageBytes;
  const std::uint64_t length = in_.Bool() ? span - fbo : in_.InRange<std::uint64_t>(1, span - fbo);
  const std::uint64_t base = ChooseFrBase(page_count, fbo, pages.front());
  const ULONG flags = kFrFlags[in_.Pick(kFrFlags.size())];
  void* context = NewContext();
  const NTSTATUS posted = conn_.a->Dispatch->NdkFastRegister(conn_.a, context, fr->mr, page_count, list.data(),
                                                             static_cast<ULONG>(fbo), length,
                                                             reinterpret_cast<PVOID>(base), flags);
  const NTSTATUS s = Outcome(posted, context);
  // The provider validates everything the NIC checks: an accepted fast register executes.
  NDKSIM_PEER_CHECK(posted != STATUS_SUCCESS || s == STATUS_SUCCESS);
  if (s != STATUS_SUCCESS) return;
  const UINT32 token = fr->mr->Dispatch->NdkGetRemoteTokenFromMr(fr->mr);
  // With rotating keys each registration has a new token, so an old one is stale; by default the
  // token read after initialisation stays the MR's token.
  NDKSIM_PEER_CHECK(rotate_keys_ ? token != fr->token : token == fr->token);
  fr->token = token;
  fr->valid = true;
  fr->base = base;
  fr->length = length;
  fr->fbo = fbo;
  fr->pages = pages;
  fr->rights = OpRights(flags);
  AddRecord(token, base, length);
}

// The VA a fast register names; it must be FBO bytes into a page (ref §3.7).
std::uint64_t AdversarialPeer::ChooseFrBase(ULONG page_count, std::uint64_t fbo, std::size_t first_page) {
  switch (in_.Pick(4)) {
    case 0:
      return Va(first_page) + fbo;  // the host address of the first byte
    case 1:
      return kSyntheticVa + in_.InRange<std::uint64_t>(0, 255) * kPageBytes + fbo;
    case 2:
      // Ends a page below 2^64: address arithmetic near the top must not wrap into a grant.
      return std::uint64_t{0} - (std::uint64_t{page_count} + 1) * kPageBytes + fbo;
    default:
      return fbo;  // VA page 0
  }
}

void AdversarialPeer::InvalidateFr() {
  if (frs_.empty()) return;
  FrMr* fr = frs_[in_.Pick(frs_.size())].get();
  // ref §3.8: invalidating a region that is not fast-registered fails (and breaks the connection).
  const bool expected = fr->valid;
  void* context = NewContext();
  const NTSTATUS posted = conn_.a->Dispatch->NdkInvalidate(conn_.a, context, &fr->mr->Header, 0);
  const NTSTATUS s = Outcome(posted, context);
  NDKSIM_PEER_CHECK((s == STATUS_SUCCESS) == expected);
  if (s == STATUS_SUCCESS) fr->valid = false;
}

void AdversarialPeer::CloseFr() {
  if (frs_.empty()) return;
  const std::size_t index = in_.Pick(frs_.size());
  NDK_MR* mr = frs_[index]->mr;
  NDKSIM_PEER_CHECK(mr->Dispatch->NdkCloseMr(&mr->Header, nullptr, nullptr) == STATUS_SUCCESS);
  frs_.erase(frs_.begin() + static_cast<std::ptrdiff_t>(index));
}

void AdversarialPeer::CreateMw() {
  if (windows_.size() >= kMaxWindows) return;
  NDK_PD* pd = pair_.a().pd;
  auto w = std::make_unique<Window>();
  NDKSIM_PEER_CHECK(pd->Dispatch->NdkCreateMw(pd, nullptr, nullptr, &w->mw) == STATUS_SUCCESS);
  w->token = w->mw->Dispatch->NdkGetRemoteTokenFromMw(w->mw);
  AddRecord(w->token, 0, 0);
  windows_.push_back(std::move(w));
}

void AdversarialPeer::Bind() {
  const std::vector<Region*> open = OpenRegions();
  if (windows_.empty() || open.empty()) return;
  Window* w = windows_[in_.Pick(windows_.size())].get();
  Region* region = open[in_.Pick(open.size())];
  // Inside the region's last registration, or up to 16 bytes past its end (the provider refuses).
  const std::uint64_t offset = in_.InRange<std::uint64_t>(0, region->length);
  const std::uint64_t length =
      in_.Bool() ? region->length - offset : in_.InRange<std::uint64_t>(0, region->length - offset + 16);
  const ULONG flags = kBindFlags[in_.Pick(kBindFlags.size())];
  const std::uint64_t va = Va(region->offset) + offset;
  void* context = NewContext();
  const NTSTATUS posted =
      conn_.a->Dispatch->NdkBind(conn_.a, context, region->mr, w->mw, reinterpret_cast<PVOID>(va), length, flags);
  const NTSTATUS s = Outcome(posted, context);
  NDKSIM_PEER_CHECK(posted != STATUS_SUCCESS || s == STATUS_SUCCESS);
  if (s != STATUS_SUCCESS) return;
  const UINT32 token = w->mw->Dispatch->NdkGetRemoteTokenFromMw(w->mw);
  NDKSIM_PEER_CHECK(token != w->token);  // ref §3.6: a bind hands out a new token
  w->token = token;
  w->bound = true;
  w->parent = region;
  w->edge = region;  // a rebind elsewhere drops the edge on the old region
  w->base = va;
  w->length = length;
  w->offset = region->offset + static_cast<std::size_t>(offset);
  w->rights = OpRights(flags);
  AddRecord(token, va, length);
}

void AdversarialPeer::InvalidateMw() {
  if (windows_.empty()) return;
  Window* w = windows_[in_.Pick(windows_.size())].get();
  const bool expected = w->bound;  // ref §3.8: an unbound window cannot be invalidated
  void* context = NewContext();
  const NTSTATUS posted = conn_.a->Dispatch->NdkInvalidate(conn_.a, context, &w->mw->Header, 0);
  const NTSTATUS s = Outcome(posted, context);
  NDKSIM_PEER_CHECK((s == STATUS_SUCCESS) == expected);
  if (s != STATUS_SUCCESS) return;
  w->bound = false;
  w->parent = nullptr;
}

void AdversarialPeer::CloseMw() {
  if (windows_.empty()) return;
  const std::size_t index = in_.Pick(windows_.size());
  NDK_MW* mw = windows_[index]->mw;
  NDKSIM_PEER_CHECK(mw->Dispatch->NdkCloseMw(&mw->Header, nullptr, nullptr) == STATUS_SUCCESS);
  // Its edge goes with it: a region whose close pended on it closes during the settle.
  windows_.erase(windows_.begin() + static_cast<std::ptrdiff_t>(index));
}

// ---- peer requests ----------------------------------------------------------------------------------------

AdversarialPeer::Target AdversarialPeer::ChooseTarget() {
  switch (in_.Pick(4)) {
    case 0: {
      const Record r = AnyRecord();
      return {r.token, r};
    }
    case 1: {
      // A near miss: one bit of a known token flipped (another index, or another key byte).
      const Record r = AnyRecord();
      const auto bit = in_.InRange<unsigned>(0, 31);
      return {r.token ^ (1u << bit), r};
    }
    case 2: {
      const auto token = in_.Integral<UINT32>();
      return {token, AnyRecord()};
    }
    default: {
      const std::vector<Grant> grants = CurrentGrants();
      if (grants.empty()) {
        const auto token = in_.Integral<UINT32>();
        return {token, AnyRecord()};
      }
      const Grant& g = grants[in_.Pick(grants.size())];
      return {g.token, Record{g.token, g.base, g.length}};
    }
  }
}

std::uint64_t AdversarialPeer::ChooseLength(std::uint64_t max) {
  switch (in_.Pick(4)) {
    case 0: return 0;
    case 1: return in_.InRange<std::uint64_t>(1, std::min<std::uint64_t>(16, max));
    case 2: return in_.InRange<std::uint64_t>(1, std::min<std::uint64_t>(512, max));
    default: return in_.InRange<std::uint64_t>(1, max);
  }
}

// Inside, at the edges of, or just outside the range `near` names, or anywhere at all (wrapping
// arithmetic is deliberate: the checks must be overflow-safe).
std::uint64_t AdversarialPeer::ChooseAddress(const Record& near, std::uint64_t length) {
  switch (in_.Pick(8)) {
    case 0: return in_.Integral<std::uint64_t>();
    case 1: return near.base + in_.InRange<std::uint64_t>(0, near.length);
    case 2: return near.base;
    case 3: return near.base + near.length - length;
    case 4: return near.base + near.length - length + 1;
    case 5: return near.base - in_.InRange<std::uint64_t>(1, 64);
    case 6: return near.base + near.length + in_.InRange<std::uint64_t>(0, 64);
    default: return UINT64_MAX - in_.InRange<std::uint64_t>(0, kMaxAccessBytes);
  }
}

// Bytes derived from two input bytes (whole pages of input would be wasted on payload).
std::vector<std::byte> AdversarialPeer::PeerData(std::uint64_t length) {
  const std::uint32_t seed = in_.Integral<std::uint16_t>();
  std::uint32_t state = 0x9e3779b9u ^ (seed << 8) ^ static_cast<std::uint32_t>(step_);
  if (state == 0) state = 1;
  std::vector<std::byte> data(static_cast<std::size_t>(length));
  for (std::byte& b : data) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    b = static_cast<std::byte>(state >> 24);
  }
  return data;
}

std::size_t AdversarialPeer::SplitPoint(std::uint64_t length, std::uint8_t options) {
  return 1 + static_cast<std::size_t>((options >> 3) % (length - 1));
}

// The peer's SGEs over `buffer` for a message of `length` bytes. Options: bit 1 splits it in two
// with a gap of kSgeGap bytes between; bit 2 names no SGE at all for an empty message.
std::vector<NDK_SGE> AdversarialPeer::PeerSges(const RegisteredBuffer& buffer, std::uint64_t length,
                                               std::uint8_t options) const {
  if (length == 0) {
    if (options & 4) return {};
    return {buffer.Sge(0, 0)};
  }
  if ((options & 2) && length >= 2) {
    const std::size_t k = SplitPoint(length, options);
    return {buffer.Sge(0, static_cast<ULONG>(k)), buffer.Sge(k + kSgeGap, static_cast<ULONG>(length - k))};
  }
  return {buffer.Sge(0, static_cast<ULONG>(length))};
}

// Granted exactly when a currently valid token grants the right over the whole range. A zero-length
// request is always granted: the responder consults no translation for it (responder.cc), as in IB.
bool Granted(const std::optional<Grant>& g, std::uint64_t address, std::uint64_t length, bool write) {
  if (length == 0) return true;
  return g.has_value() && (write ? g->rights.write : g->rights.read) && Inside(*g, address, length);
}

void AdversarialPeer::PeerWrite() {
  const Target target = ChooseTarget();
  const std::uint64_t length = ChooseLength(kMaxAccessBytes);
  const std::uint64_t address = ChooseAddress(target.near, length);
  const std::vector<std::byte> data = PeerData(length);
  const auto options = in_.Integral<std::uint8_t>();
  const std::optional<Grant> grant = FindGrant(target.token);
  const bool granted = Granted(grant, address, length, /*write=*/true);
  last_ = {"write", target.token, address, length, granted};

  const std::vector<NDK_SGE> sges = PeerSges(*source_, length, options);
  std::size_t at = 0;
  for (const NDK_SGE& sge : sges) {
    CopyBytes(sge.VirtualAddress, data.data() + at, sge.Length);
    at += sge.Length;
  }
  const ULONG flags = (options & 1) && length <= kMaxSendBytes ? NDK_OP_FLAG_INLINE : 0;
  void* context = NewContext();
  const NTSTATUS posted = conn_.b->Dispatch->NdkWrite(conn_.b, context, sges.data(), static_cast<ULONG>(sges.size()),
                                                      address, target.token, flags);
  NDKSIM_PEER_CHECK(posted == STATUS_SUCCESS);  // b's side of it is always well formed
  const NTSTATUS s = Outcome(posted, context);
  NDKSIM_PEER_CHECK((s == STATUS_SUCCESS) == granted);
  if (granted && length > 0) ApplyWrite(*grant, address, data);
  // Run() compares the whole arena, guards included, with the shadow after every step.
}

void AdversarialPeer::PeerRead() {
  const Target target = ChooseTarget();
  const std::uint64_t length = ChooseLength(kMaxAccessBytes);
  const std::uint64_t address = ChooseAddress(target.near, length);
  const auto options = in_.Integral<std::uint8_t>();
  const std::optional<Grant> grant = FindGrant(target.token);
  const bool granted = Granted(grant, address, length, /*write=*/false);
  last_ = {"read", target.token, address, length, granted};

  std::memset(sink_->Data(), static_cast<int>(kSinkSentinel), kPeerBufferBytes);
  const std::vector<NDK_SGE> sges = PeerSges(*sink_, length, options);
  void* context = NewContext();
  const NTSTATUS posted = conn_.b->Dispatch->NdkRead(conn_.b, context, sges.data(), static_cast<ULONG>(sges.size()),
                                                     address, target.token, 0);
  NDKSIM_PEER_CHECK(posted == STATUS_SUCCESS);
  const NTSTATUS s = Outcome(posted, context);
  NDKSIM_PEER_CHECK((s == STATUS_SUCCESS) == granted);

  // What b's sink must hold: the shadow's bytes where the SGEs are, the sentinel everywhere else
  // (all of it when refused: no response carries data then).
  std::vector<std::byte> expected(kPeerBufferBytes, kSinkSentinel);
  if (granted && length > 0) {
    const std::vector<std::byte> bytes = ReadShadow(*grant, address, length);
    std::size_t at = 0;
    for (const NDK_SGE& sge : sges) {
      const auto offset = static_cast<std::size_t>(static_cast<std::byte*>(sge.VirtualAddress) - sink_->Data());
      CopyBytes(expected.data() + offset, bytes.data() + at, sge.Length);
      at += sge.Length;
    }
  }
  NDKSIM_PEER_CHECK(std::memcmp(sink_->Data(), expected.data(), kPeerBufferBytes) == 0);
}

void AdversarialPeer::EnsureReceive() {
  if (receive_posted_) return;
  receive_context_ = NewContext();
  const NDK_SGE sge = receive_->Sge(0, static_cast<ULONG>(kMaxSendBytes));
  NDKSIM_PEER_CHECK(conn_.a->Dispatch->NdkReceive(conn_.a, receive_context_, &sge, 1) == STATUS_SUCCESS);
  receive_posted_ = true;
}

void AdversarialPeer::Invalidated(const Grant& g) {
  if (g.fr != nullptr) g.fr->valid = false;
  if (g.window != nullptr) {
    g.window->bound = false;
    g.window->parent = nullptr;
  }
}

// ref §3.2: the named token is invalidated at a before the receive completes, if it is a fast-register
// region or a window of a's PD that is currently valid; anything else (a region of NdkRegisterMr, a
// stale or unknown token, one already invalid) fails the receive and aborts the connection.
void AdversarialPeer::PeerSendAndInvalidate() {
  const Target target = ChooseTarget();
  const std::uint64_t length = ChooseLength(kMaxSendBytes);
  const std::vector<std::byte> data = PeerData(length);
  const std::optional<Grant> grant = FindGrant(target.token);
  const bool granted = grant.has_value() && (grant->fr != nullptr || grant->window != nullptr);
  last_ = {"send-and-invalidate", target.token, 0, length, granted};

  std::memset(receive_->Data(), static_cast<int>(kReceiveSentinel), kMaxSendBytes);
  EnsureReceive();
  CopyBytes(source_->Data(), data.data(), data.size());
  const std::vector<NDK_SGE> sges = PeerSges(*source_, length, 0);
  void* context = NewContext();
  const NTSTATUS posted = conn_.b->Dispatch->NdkSendAndInvalidate(conn_.b, context, sges.data(),
                                                                  static_cast<ULONG>(sges.size()), 0, target.token);
  NDKSIM_PEER_CHECK(posted == STATUS_SUCCESS);
  const NTSTATUS s = Outcome(posted, context);
  NDKSIM_PEER_CHECK((s == STATUS_SUCCESS) == granted);

  const NDK_RESULT_EX* received = ResultOf(receive_context_);
  NDKSIM_PEER_CHECK(received != nullptr);
  receive_posted_ = false;
  if (!granted) {
    NDKSIM_PEER_CHECK(received->Status != STATUS_SUCCESS);
    return;
  }
  NDKSIM_PEER_CHECK(received->Status == STATUS_SUCCESS);
  NDKSIM_PEER_CHECK(received->Type == NdkOperationTypeReceiveAndInvalidate);
  NDKSIM_PEER_CHECK(static_cast<UINT32>(received->TypeSpecificCompletionOutput) == target.token);
  NDKSIM_PEER_CHECK(received->BytesTransferred == length);
  NDKSIM_PEER_CHECK(data.empty() || std::memcmp(receive_->Data(), data.data(), data.size()) == 0);
  Invalidated(*grant);
}

// ---- the end ----------------------------------------------------------------------------------------------

// Closes every victim object, windows first so that no MR -> MW edge holds a region, and checks that
// every close that pended has completed.
void AdversarialPeer::Cleanup() {
  results_.clear();
  for (const auto& w : windows_) {
    NDKSIM_PEER_CHECK(w->mw->Dispatch->NdkCloseMw(&w->mw->Header, nullptr, nullptr) == STATUS_SUCCESS);
  }
  windows_.clear();
  for (const auto& fr : frs_) {
    NDKSIM_PEER_CHECK(fr->mr->Dispatch->NdkCloseMr(&fr->mr->Header, nullptr, nullptr) == STATUS_SUCCESS);
  }
  frs_.clear();
  for (const auto& r : regions_) {
    if (!r->Open()) continue;
    NDKSIM_PEER_CHECK(r->mr->Dispatch->NdkCloseMr(&r->mr->Header, OnRegionClosed, r.get()) == STATUS_SUCCESS);
    r->mr = nullptr;
    r->destroyed = true;
    r->registered = false;
  }
  Settle();
  SweepClosedRegions();
  for (const auto& r : regions_) NDKSIM_PEER_CHECK(r->destroyed);
  CheckArena();
}

void AdversarialPeer::DescribeStep() const {
  std::fprintf(stderr,
               "adversarial_peer: profile %.*s, step %d (%s), %d reconnect(s); last peer request: %s token %#x "
               "address %#llx length %llu, model says %s\n",
               static_cast<int>(profile_name_.size()), profile_name_.data(), step_,
               kStepNames[static_cast<std::size_t>(kind_)], reconnects_, last_.what, last_.token,
               static_cast<unsigned long long>(last_.address), static_cast<unsigned long long>(last_.length),
               last_.granted ? "granted" : "refused");
}

#undef NDKSIM_PEER_CHECK

QpPairConfig ConfigFrom(FuzzInput& in) {
  QpPairConfig config;
  switch (in.Pick(3)) {
    case 0: config.fabric.profile = profiles::kConnectX100GbeRoce; break;
    case 1: config.fabric.profile = profiles::kIWarp; break;
    default: config.fabric.profile = profiles::kFunctional; break;
  }
  config.fabric.seed = 1 + std::uint64_t{in.Integral<std::uint8_t>()};
  // Both token behaviours of fast registers: stable (the default) and rotating keys.
  config.fabric.profile.rotate_fast_register_keys = config.fabric.seed % 2 == 0;
  // Every other pair of seeds runs with caches that miss all the time (no input byte of its own).
  if ((config.fabric.seed / 2) % 2 == 1) config.fabric.profile = fuzz::WithTinyCaches(config.fabric.profile);
  config.fabric.async_completion = AsyncCompletion::kInline;
  // Small queues: a step has at most two requests in flight.
  config.cq_depth = 256;
  config.receive_queue_depth = 4;
  config.initiator_queue_depth = 16;
  config.max_receive_sge = 2;
  config.max_initiator_sge = 2;
  config.inline_data_size = static_cast<ULONG>(kMaxSendBytes);
  return config;
}

void RunProgram(const std::uint8_t* data, std::size_t size) {
  FuzzInput in(data, size);
  const QpPairConfig config = ConfigFrom(in);
  AdversarialPeer peer(in, config);
  peer.Run();
}

}  // namespace
}  // namespace ndksim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ndksim::fuzz::RunProgram(data, size);
  return 0;
}
