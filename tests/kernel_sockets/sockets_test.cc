// SPDX-License-Identifier: MIT
// The NDK sockets example driver (examples/kernel_sockets), loaded on two machines of two RNICs
// each and driven through its device as a Windows program would drive it: listen, connect, accept,
// send, receive, cancel, close. Each test checks one behaviour; a verifier report (a leak at
// unload, a spin lock misused, an IRP completed twice) or a deadlock fails it by throwing.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ndksim/fabric.h"
#include "ndksim/faults.h"
#include "ndksim/kernel/environment.h"
#include "ndksim/testing.h"
// After the standard and test headers, which its macros stay out of: the tests' own kernel thread
// waits with KeDelayExecutionThread. It defines CTL_CODE, which nksioctl.h then uses.
#include "ndksim/kernel/wdm.h"
#include "ndksock.h"
#include "nksioctl.h"

namespace ndksim::kernel_sockets {
namespace {

using kernel::DeviceHandle;
using kernel::Environment;
using kernel::IoResult;
using kernel::PendingIo;

// Machine A carries RNICs a1 and a2, machine B RNICs b1 and b2; a1-b1 and a2-b2 share a subnet.
constexpr const char* kA1 = "192.0.2.1";
constexpr const char* kB1 = "192.0.2.2";
constexpr const char* kA2 = "198.51.100.1";
constexpr const char* kB2 = "198.51.100.2";
constexpr std::int32_t kDriverPending = 0x103;  // DriverStatus while DriverEntry runs
// Payload bytes of one message: a receive buffer of 1,024 bytes less the 16-byte header.
constexpr std::uint32_t kMessagePayload = 1008;
constexpr std::uint32_t kReceiveDepth = 8;  // receives a side grants as credits for data
constexpr std::uint32_t kControlReceives = 1;  // ... and keeps posted for credit messages besides

std::string Endpoint(const char* address, std::uint16_t port) {
  return std::string(address) + ":" + std::to_string(port);
}

std::array<std::uint16_t, NDKSOCK_ADDRESS_CHARS> Wide(std::string_view text) {
  std::array<std::uint16_t, NDKSOCK_ADDRESS_CHARS> wide{};
  for (std::size_t i = 0; i < text.size() && i + 1 < wide.size(); ++i) wide[i] = static_cast<unsigned char>(text[i]);
  return wide;
}

// Bytes no two streams of a test share.
std::vector<std::uint8_t> Pattern(std::size_t bytes, std::uint32_t seed) {
  std::vector<std::uint8_t> data(bytes);
  std::uint32_t x = seed * 2654435761u + 1;
  for (std::uint8_t& b : data) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(x >> 16);
  }
  return data;
}

template <typename T>
std::span<const std::byte> In(const T& value) {
  return std::as_bytes(std::span(&value, 1));
}
template <typename T>
std::span<std::byte> Out(T& value) {
  return std::as_writable_bytes(std::span(&value, 1));
}

// A request started without waiting (overlapped): it owns the buffers the driver uses meanwhile.
struct Overlapped {
  std::vector<std::byte> input;
  std::vector<std::byte> output;
  PendingIo io;
};

struct WorldConfig {
  FabricConfig fabric{};
  kernel::EnvironmentConfig environment{};
  bool images = false;  // load the driver's image (ndksock.so) per machine instead of the linked-in entry
};

// Two machines of two RNICs each, the driver loaded on both, and a program on each with the
// driver's device open.
class World {
 public:
  explicit World(const WorldConfig& config = {})
      : fabric_(config.fabric),
        a1_(fabric_.AddNode({"a-rnic1", {kA1}})),
        b1_(fabric_.AddNode({"b-rnic1", {kB1}})),
        a2_(fabric_.AddNode({"a-rnic2", {kA2}})),
        b2_(fabric_.AddNode({"b-rnic2", {kB2}})),
        env_(fabric_, config.environment),
        images_(config.images) {
    env_.AddRnic(a1_, a2_);
    env_.AddRnic(b1_, b2_);
  }

  Fabric& fabric() { return fabric_; }
  Environment& env() { return env_; }
  Node& a(int rnic) { return rnic == 1 ? a1_ : a2_; }
  Node& b(int rnic) { return rnic == 1 ? b1_ : b2_; }
  static const char* AddressOfA(int rnic) { return rnic == 1 ? kA1 : kA2; }
  static const char* AddressOfB(int rnic) { return rnic == 1 ? kB1 : kB2; }
  DeviceHandle ha() const { return ha_; }
  DeviceHandle hb() const { return hb_; }

  void Load() {
    if (images_) {
      driver_a_ = env_.LoadDriverImage(a1_, "ndksock", NDKSIM_NDKSOCK_IMAGE);
      driver_b_ = env_.LoadDriverImage(b1_, "ndksock", NDKSIM_NDKSOCK_IMAGE);
    } else {
      driver_a_ = env_.LoadDriver(a1_, "ndksock_a", &NdkSockDriverEntry);
      driver_b_ = env_.LoadDriver(b1_, "ndksock_b", &NdkSockDriverEntry);
    }
    env_.RunUntil([&] {
      return env_.DriverStatus(driver_a_) != kDriverPending && env_.DriverStatus(driver_b_) != kDriverPending;
    });
    if (env_.DriverStatus(driver_a_) != STATUS_SUCCESS || env_.DriverStatus(driver_b_) != STATUS_SUCCESS) {
      throw std::runtime_error("the driver did not load");
    }
    if (env_.OpenDevice(a1_, NDKSOCK_USER_PATH, &ha_).status != STATUS_SUCCESS ||
        env_.OpenDevice(b1_, NDKSOCK_USER_PATH, &hb_).status != STATUS_SUCCESS) {
      throw std::runtime_error("the driver's device did not open");
    }
    loaded_ = true;
  }

  // Both programs close their handles, both drivers unload, and the environment runs until they
  // are gone: what a driver leaked fails the run there.
  void Unload() {
    if (!loaded_) return;
    loaded_ = false;
    if (!a_closed_) env_.CloseDevice(ha_);
    env_.CloseDevice(hb_);
    env_.UnloadDriver(driver_a_);
    env_.UnloadDriver(driver_b_);
    env_.Run();
  }

  // The test closed A's handle itself: Unload leaves it alone.
  void ForgetA() { a_closed_ = true; }

  IoResult Listen(DeviceHandle h, const std::string& address, std::uint32_t backlog, NDKSOCK_SOCKET* socket) {
    NDKSOCK_LISTEN_IN input{};
    const auto wide = Wide(address);
    std::memcpy(input.Address, wide.data(), sizeof(input.Address));
    input.Backlog = backlog;
    NDKSOCK_SOCKET_OUT output{};
    const IoResult r = env_.DeviceIoControl(h, IOCTL_NDKSOCK_LISTEN, In(input), Out(output));
    *socket = output.Socket;
    return r;
  }

  IoResult Connect(DeviceHandle h, const std::string& local, const std::string& remote, NDKSOCK_SOCKET_OUT* output) {
    NDKSOCK_CONNECT_IN input{};
    const auto wide_local = Wide(local);
    const auto wide_remote = Wide(remote);
    std::memcpy(input.LocalAddress, wide_local.data(), sizeof(input.LocalAddress));
    std::memcpy(input.RemoteAddress, wide_remote.data(), sizeof(input.RemoteAddress));
    *output = NDKSOCK_SOCKET_OUT{};
    return env_.DeviceIoControl(h, IOCTL_NDKSOCK_CONNECT, In(input), Out(*output));
  }

  IoResult Accept(DeviceHandle h, NDKSOCK_SOCKET listener, NDKSOCK_SOCKET_OUT* output) {
    const NDKSOCK_SOCKET_IN input{listener};
    *output = NDKSOCK_SOCKET_OUT{};
    return env_.DeviceIoControl(h, IOCTL_NDKSOCK_ACCEPT, In(input), Out(*output));
  }

  std::unique_ptr<Overlapped> StartSend(DeviceHandle h, NDKSOCK_SOCKET socket, std::span<const std::uint8_t> data) {
    auto o = std::make_unique<Overlapped>();
    o->input.resize(NDKSOCK_SEND_IN_SIZE(data.size()));
    NDKSOCK_SEND_IN header{};
    header.Socket = socket;
    header.Length = static_cast<std::uint32_t>(data.size());
    std::memcpy(o->input.data(), &header, offsetof(NDKSOCK_SEND_IN, Data));
    std::memcpy(o->input.data() + offsetof(NDKSOCK_SEND_IN, Data), data.data(), data.size());
    o->output.resize(sizeof(NDKSOCK_SEND_OUT));
    o->io = env_.StartDeviceIoControl(h, IOCTL_NDKSOCK_SEND, o->input, o->output);
    return o;
  }

  // The send's status, and in *sent what the driver reported sent.
  IoResult FinishSend(Overlapped& o, std::uint32_t* sent) {
    const IoResult r = env_.WaitIo(o.io);
    NDKSOCK_SEND_OUT output{};
    std::memcpy(&output, o.output.data(), sizeof(output));
    *sent = r.information == sizeof(output) ? output.BytesSent : 0;
    return r;
  }

  IoResult Send(DeviceHandle h, NDKSOCK_SOCKET socket, std::span<const std::uint8_t> data, std::uint32_t* sent) {
    const auto o = StartSend(h, socket, data);
    return FinishSend(*o, sent);
  }

  std::unique_ptr<Overlapped> StartReceive(DeviceHandle h, NDKSOCK_SOCKET socket, std::size_t room) {
    auto o = std::make_unique<Overlapped>();
    const NDKSOCK_SOCKET_IN input{socket};
    o->input.resize(sizeof(input));
    std::memcpy(o->input.data(), &input, sizeof(input));
    o->output.resize(room);
    o->io = env_.StartDeviceIoControl(h, IOCTL_NDKSOCK_RECEIVE, o->input, o->output);
    return o;
  }

  // The receive's status, and its bytes appended to *data.
  IoResult FinishReceive(Overlapped& o, std::vector<std::uint8_t>* data) {
    const IoResult r = env_.WaitIo(o.io);
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(o.output.data());
    data->insert(data->end(), bytes, bytes + r.information);
    return r;
  }

  IoResult Receive(DeviceHandle h, NDKSOCK_SOCKET socket, std::size_t room, std::vector<std::uint8_t>* data) {
    const auto o = StartReceive(h, socket, room);
    return FinishReceive(*o, data);
  }

  // Receives until `bytes` have arrived, the stream ends or a receive fails (its status then).
  IoResult ReceiveAll(DeviceHandle h, NDKSOCK_SOCKET socket, std::size_t bytes, std::vector<std::uint8_t>* data) {
    IoResult r{};
    while (data->size() < bytes) {
      r = Receive(h, socket, 4096, data);
      if (r.status != STATUS_SUCCESS || r.information == 0) break;
    }
    return r;
  }

  IoResult Close(DeviceHandle h, NDKSOCK_SOCKET socket) {
    const NDKSOCK_SOCKET_IN input{socket};
    return env_.DeviceIoControl(h, IOCTL_NDKSOCK_CLOSE, In(input), {});
  }

  NDKSOCK_QUERY_OUT Query(DeviceHandle h, NDKSOCK_SOCKET socket = 0) {
    const NDKSOCK_SOCKET_IN input{socket};
    NDKSOCK_QUERY_OUT output{};
    const IoResult r = env_.DeviceIoControl(h, IOCTL_NDKSOCK_QUERY, In(input), Out(output));
    if (r.status != STATUS_SUCCESS) throw std::runtime_error("IOCTL_NDKSOCK_QUERY failed");
    return output;
  }

  // Lets `d` of simulated time pass, while requests stay pending: a kernel thread of the test's
  // own sleeps that long.
  void Settle(Duration d) { env_.RunFor(d); }

  struct Pair {
    NDKSOCK_SOCKET listener = 0;
    NDKSOCK_SOCKET client = 0;  // on A
    NDKSOCK_SOCKET server = 0;  // on B, accepted
    std::string client_peer;    // what each side reported as its peer
    std::string server_peer;
  };

  // A listener on B's address of the RNIC, a connection to it from A's, and B's accepted end.
  Pair ConnectOver(int rnic, std::uint16_t port) {
    Pair p;
    NDKSOCK_SOCKET_OUT out{};
    if (Listen(hb_, Endpoint(AddressOfB(rnic), port), 2, &p.listener).status != STATUS_SUCCESS) {
      throw std::runtime_error("listen failed");
    }
    if (Connect(ha_, AddressOfA(rnic), Endpoint(AddressOfB(rnic), port), &out).status != STATUS_SUCCESS) {
      throw std::runtime_error("connect failed");
    }
    p.client = out.Socket;
    p.client_peer = out.PeerAddress;
    if (Accept(hb_, p.listener, &out).status != STATUS_SUCCESS) throw std::runtime_error("accept failed");
    p.server = out.Socket;
    p.server_peer = out.PeerAddress;
    return p;
  }

 private:
  Fabric fabric_;
  Node& a1_;
  Node& b1_;
  Node& a2_;
  Node& b2_;
  Environment env_;
  bool images_;
  _DRIVER_OBJECT* driver_a_ = nullptr;
  _DRIVER_OBJECT* driver_b_ = nullptr;
  DeviceHandle ha_{};
  DeviceHandle hb_{};
  bool loaded_ = false;
  bool a_closed_ = false;
};

void ExpectNoPoolLeft(const Environment& env) {
  const auto pool = env.PoolUsage();
  for (const auto& [tag, usage] : pool) {
    EXPECT_EQ(usage.allocations, 0u) << "pool tag " << tag;
    EXPECT_EQ(usage.bytes, 0u) << "pool tag " << tag;
  }
  // The check saw the driver's pool: sockets, message rings and their address mappings, adapters.
  for (const char* tag : {"Sock", "Skbf", "Sklm", "Skad"}) {
    ASSERT_TRUE(pool.contains(tag)) << tag;
    EXPECT_GT(pool.at(tag).total_allocations, 0u) << tag;
  }
}

// The whole life of two connections, one per RNIC, run at once: connect, both ends send, both
// read every byte, the client closes, the server reads the end of the stream and closes, and
// both drivers unload. Returns what arrived, checked by the caller.
struct ExchangeResult {
  std::array<std::vector<std::uint8_t>, 2> at_b;  // per RNIC: what B's server received
  std::array<std::vector<std::uint8_t>, 2> at_a;  // per RNIC: what A's client received
  std::array<std::uint32_t, 2> sent_by_a{};
  std::array<std::uint32_t, 2> sent_by_b{};
  std::array<std::int32_t, 2> end_of_stream{-1, -1};
  std::array<std::uint64_t, 2> eof_bytes{1, 1};
};

constexpr std::size_t kToB = 5000;  // five messages
constexpr std::size_t kToA = 2500;

std::vector<std::uint8_t> ToB(int rnic) { return Pattern(kToB, 10 + static_cast<std::uint32_t>(rnic)); }
std::vector<std::uint8_t> ToA(int rnic) { return Pattern(kToA, 20 + static_cast<std::uint32_t>(rnic)); }

ExchangeResult RunExchange(World& w) {
  ExchangeResult x;
  w.Load();
  std::array<World::Pair, 2> pairs = {w.ConnectOver(1, 5001), w.ConnectOver(2, 5002)};
  std::array<std::vector<std::uint8_t>, 2> to_b = {ToB(1), ToB(2)};
  std::array<std::vector<std::uint8_t>, 2> to_a = {ToA(1), ToA(2)};
  std::array<std::unique_ptr<Overlapped>, 2> first_at_b;
  std::array<std::unique_ptr<Overlapped>, 2> send_a;
  std::array<std::unique_ptr<Overlapped>, 2> send_b;
  for (int i = 0; i < 2; ++i) {
    first_at_b[i] = w.StartReceive(w.hb(), pairs[i].server, 4096);  // pending before anything is sent
    send_a[i] = w.StartSend(w.ha(), pairs[i].client, to_b[i]);
    send_b[i] = w.StartSend(w.hb(), pairs[i].server, to_a[i]);
  }
  for (int i = 0; i < 2; ++i) {
    (void)w.FinishReceive(*first_at_b[i], &x.at_b[i]);
    (void)w.ReceiveAll(w.hb(), pairs[i].server, kToB, &x.at_b[i]);
    (void)w.ReceiveAll(w.ha(), pairs[i].client, kToA, &x.at_a[i]);
    (void)w.FinishSend(*send_a[i], &x.sent_by_a[i]);
    (void)w.FinishSend(*send_b[i], &x.sent_by_b[i]);
  }
  for (int i = 0; i < 2; ++i) {
    (void)w.Close(w.ha(), pairs[i].client);
    std::vector<std::uint8_t> tail;
    const IoResult end = w.Receive(w.hb(), pairs[i].server, 4096, &tail);
    x.end_of_stream[i] = end.status;
    x.eof_bytes[i] = end.information;
    (void)w.Close(w.hb(), pairs[i].server);
    (void)w.Close(w.hb(), pairs[i].listener);
  }
  w.Unload();
  return x;
}

void ExpectExchangeWhole(const ExchangeResult& x) {
  for (int i = 0; i < 2; ++i) {
    const int rnic = i + 1;
    EXPECT_TRUE(x.at_b[i] == ToB(rnic)) << "RNIC " << rnic << ": B received " << x.at_b[i].size() << " bytes";
    EXPECT_TRUE(x.at_a[i] == ToA(rnic)) << "RNIC " << rnic << ": A received " << x.at_a[i].size() << " bytes";
    EXPECT_EQ(x.sent_by_a[i], kToB) << "RNIC " << rnic;
    EXPECT_EQ(x.sent_by_b[i], kToA) << "RNIC " << rnic;
    EXPECT_STATUS_EQ(STATUS_SUCCESS, x.end_of_stream[i]) << "RNIC " << rnic;
    EXPECT_EQ(x.eof_bytes[i], 0u) << "RNIC " << rnic << ": the end of the stream reads as 0 bytes";
  }
}

// ---- loading, connecting, one adapter per socket ---------------------------------------------

TEST(KernelSockets, TheDriverLoadsOnBothMachinesAndUnloadsWithoutLeaks) {
  World w;
  w.Load();
  const NDKSOCK_QUERY_OUT q = w.Query(w.ha());
  EXPECT_EQ(q.Device.SocketsOpen, 0u);
  EXPECT_EQ(q.Device.AdaptersOpen, 0u);
  w.Unload();
  for (const auto& [tag, usage] : w.env().PoolUsage()) EXPECT_EQ(usage.allocations, 0u) << tag;
}

TEST(KernelSockets, EachConnectionRunsOverTheRnicItsAddressesBelongTo) {
  World w;
  w.Load();
  const World::Pair p1 = w.ConnectOver(1, 5001);
  const World::Pair p2 = w.ConnectOver(2, 5002);
  EXPECT_EQ(w.Query(w.ha(), p1.client).Socket.InterfaceIndex, w.env().IfIndexOf(w.a(1)));
  EXPECT_EQ(w.Query(w.ha(), p2.client).Socket.InterfaceIndex, w.env().IfIndexOf(w.a(2)));
  EXPECT_EQ(w.Query(w.hb(), p1.server).Socket.InterfaceIndex, w.env().IfIndexOf(w.b(1)));
  EXPECT_EQ(w.Query(w.hb(), p2.server).Socket.InterfaceIndex, w.env().IfIndexOf(w.b(2)));
  EXPECT_EQ(p1.client_peer, "192.0.2.2:5001");
  EXPECT_EQ(p2.client_peer, "198.51.100.2:5002");
  EXPECT_EQ(p2.server_peer.rfind("198.51.100.1:", 0), 0u) << p2.server_peer;
  EXPECT_EQ(w.Query(w.hb(), p2.server).Socket.PeerAddress, p2.server_peer);
  EXPECT_EQ(std::string(w.Query(w.ha(), p2.client).Socket.LocalAddress), p2.server_peer);
  w.Unload();
}

// A: two connecting sockets; B: two listeners and the two connections they accepted.
TEST(KernelSockets, EverySocketOpensAnAdapterOfItsOwn) {
  World w;
  w.Load();
  (void)w.ConnectOver(1, 5001);
  (void)w.ConnectOver(2, 5002);
  const NDKSOCK_DEVICE_STATS a = w.Query(w.ha()).Device;
  const NDKSOCK_DEVICE_STATS b = w.Query(w.hb()).Device;
  EXPECT_EQ(a.SocketsOpen, 2u);
  EXPECT_EQ(a.AdaptersOpen, 2u);
  EXPECT_EQ(b.SocketsOpen, 4u);
  EXPECT_EQ(b.AdaptersOpen, 4u);
  EXPECT_EQ(b.ConnectionsAccepted, 2u);
  w.Unload();
}

// The hellos exchanged as private data give each side the other's receives as its first credits.
TEST(KernelSockets, ConnectingGrantsEachSideThePeersReceivesAsCredits) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  const NDKSOCK_SOCKET_INFO client = w.Query(w.ha(), p.client).Socket;
  const NDKSOCK_SOCKET_INFO server = w.Query(w.hb(), p.server).Socket;
  for (const NDKSOCK_SOCKET_INFO& s : {client, server}) {
    EXPECT_EQ(s.State, static_cast<std::uint32_t>(NDKSOCK_STATE_CONNECTED));
    EXPECT_EQ(s.SendCredits, kReceiveDepth);
    EXPECT_EQ(s.PeerReceiveDepth, kReceiveDepth);
    EXPECT_EQ(s.PostedReceives, kReceiveDepth + kControlReceives);
  }
  w.Unload();
}

TEST(KernelSockets, AConnectToAPortNobodyListensOnIsRefusedAndLeavesNothingOpen) {
  World w;
  w.Load();
  NDKSOCK_SOCKET_OUT out{};
  const IoResult r = w.Connect(w.ha(), kA1, Endpoint(kB1, 6000), &out);
  EXPECT_STATUS_EQ(STATUS_CONNECTION_REFUSED, r.status);
  EXPECT_EQ(out.Socket, 0u);
  const NDKSOCK_DEVICE_STATS a = w.Query(w.ha()).Device;
  EXPECT_EQ(a.SocketsOpen, 0u);
  EXPECT_EQ(a.AdaptersOpen, 0u);
  EXPECT_EQ(a.SocketsCreated, 1u);
  w.Unload();
}

TEST(KernelSockets, AListenOnAnAddressOfNoInterfaceIsRefused) {
  World w;
  w.Load();
  NDKSOCK_SOCKET listener = 0;
  EXPECT_STATUS_EQ(STATUS_INVALID_ADDRESS, w.Listen(w.hb(), "203.0.113.9:5001", 1, &listener).status);
  EXPECT_STATUS_EQ(STATUS_INVALID_PARAMETER, w.Listen(w.hb(), "192.0.2.2", 1, &listener).status);  // no port
  w.Unload();
}

// ---- data ------------------------------------------------------------------------------------

TEST(KernelSockets, BytesCrossBothWaysOnBothRnics) {
  World w;
  const ExchangeResult x = RunExchange(w);
  ExpectExchangeWhole(x);
}

// The same driver built as an image (ndksim_add_driver_image) and loaded on each machine, as two
// Windows machines each load their own: its sources keep their DriverEntry name, and each machine
// has its own copy of the driver's globals.
TEST(KernelSockets, BytesCrossBothWaysWithTheDriverLoadedAsAnImagePerMachine) {
  World w(WorldConfig{.images = true});
  const ExchangeResult x = RunExchange(w);
  ExpectExchangeWhole(x);
}

// The second connection's traffic went through the machines' second RNICs, not the first.
TEST(KernelSockets, TheSecondConnectionsBytesTravelOnTheSecondRnics) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(2, 5002);
  const std::uint64_t a1_before = w.a(1).Counters().bytes_sent;
  const std::vector<std::uint8_t> data = Pattern(3000, 7);
  std::uint32_t sent = 0;
  std::vector<std::uint8_t> got;
  auto receive = w.StartReceive(w.hb(), p.server, 4096);
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Send(w.ha(), p.client, data, &sent).status);
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.FinishReceive(*receive, &got).status);
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.ReceiveAll(w.hb(), p.server, data.size(), &got).status);
  EXPECT_TRUE(got == data);
  EXPECT_GE(w.a(2).Counters().bytes_sent, data.size());
  EXPECT_GE(w.b(2).Counters().bytes_received, data.size());
  EXPECT_EQ(w.a(1).Counters().bytes_sent, a1_before);
  w.Unload();
}

TEST(KernelSockets, APendingReceiveCompletesWhenDataArrives) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  auto receive = w.StartReceive(w.hb(), p.server, 64);
  w.Settle(Milliseconds(1));
  EXPECT_FALSE(w.env().IoCompleted(receive->io));
  const std::vector<std::uint8_t> hello = {'h', 'e', 'l', 'l', 'o'};
  std::uint32_t sent = 0;
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Send(w.ha(), p.client, hello, &sent).status);
  std::vector<std::uint8_t> got;
  const IoResult r = w.FinishReceive(*receive, &got);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, r.status);
  EXPECT_EQ(r.information, hello.size());
  EXPECT_TRUE(got == hello);
  w.Unload();
}

// A receive smaller than a message takes its first bytes; the next takes the rest.
TEST(KernelSockets, AShortReceiveLeavesTheRestOfTheMessageForTheNext) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  const std::vector<std::uint8_t> data = Pattern(100, 3);
  std::uint32_t sent = 0;
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Send(w.ha(), p.client, data, &sent).status);
  std::vector<std::uint8_t> got;
  EXPECT_EQ(w.Receive(w.hb(), p.server, 30, &got).information, 30u);
  EXPECT_EQ(w.Receive(w.hb(), p.server, 4096, &got).information, 70u);
  EXPECT_TRUE(got == data);
  w.Unload();
}

TEST(KernelSockets, CancelIoCompletesAPendingReceiveWithStatusCancelled) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  auto receive = w.StartReceive(w.hb(), p.server, 64);
  EXPECT_FALSE(w.env().IoCompleted(receive->io));
  w.env().CancelIo(w.hb());
  std::vector<std::uint8_t> got;
  const IoResult r = w.FinishReceive(*receive, &got);
  EXPECT_STATUS_EQ(STATUS_CANCELLED, r.status);
  EXPECT_EQ(r.information, 0u);
  EXPECT_EQ(w.Query(w.hb()).Device.RequestsCancelled, 1u);
  w.Unload();
}

// The cancelled receive took nothing: the bytes sent after it go to the next receive whole.
TEST(KernelSockets, AfterACancelledReceiveTheConnectionStillDeliversEveryByte) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  auto receive = w.StartReceive(w.hb(), p.server, 64);
  w.env().CancelIo(w.hb());
  std::vector<std::uint8_t> ignored;
  ASSERT_STATUS_EQ(STATUS_CANCELLED, w.FinishReceive(*receive, &ignored).status);
  const std::vector<std::uint8_t> data = Pattern(1500, 4);
  std::uint32_t sent = 0;
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Send(w.ha(), p.client, data, &sent).status);
  std::vector<std::uint8_t> got;
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.ReceiveAll(w.hb(), p.server, data.size(), &got).status);
  EXPECT_TRUE(got == data);
  w.Unload();
}

TEST(KernelSockets, ClosingASocketCompletesItsPendingReceiveWithStatusCancelled) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  auto receive = w.StartReceive(w.hb(), p.server, 64);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.Close(w.hb(), p.server).status);
  std::vector<std::uint8_t> got;
  EXPECT_STATUS_EQ(STATUS_CANCELLED, w.FinishReceive(*receive, &got).status);
  w.Unload();
}

// The peer's disconnect ends the stream only after every byte sent before it has been read.
TEST(KernelSockets, APeerThatClosesEndsTheStreamAfterItsLastBytes) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  const std::vector<std::uint8_t> data = Pattern(2000, 5);
  std::uint32_t sent = 0;
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Send(w.hb(), p.server, data, &sent).status);
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Close(w.hb(), p.server).status);
  std::vector<std::uint8_t> got;
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.ReceiveAll(w.ha(), p.client, data.size(), &got).status);
  EXPECT_TRUE(got == data);
  const IoResult end = w.Receive(w.ha(), p.client, 64, &got);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, end.status);
  EXPECT_EQ(end.information, 0u);
  EXPECT_EQ(w.Query(w.ha(), p.client).Socket.State, static_cast<std::uint32_t>(NDKSOCK_STATE_DISCONNECTED));
  w.Unload();
}

// The program's last handle closes with a receive still pending: the cleanup closes its sockets,
// the receive completes cancelled, and the driver unloads without leaking.
TEST(KernelSockets, ClosingTheHandleCancelsItsPendingRequestsAndClosesItsSockets) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  auto receive = w.StartReceive(w.ha(), p.client, 64);
  w.env().CloseDevice(w.ha());
  std::vector<std::uint8_t> got;
  EXPECT_STATUS_EQ(STATUS_CANCELLED, w.FinishReceive(*receive, &got).status);
  // B's end saw the disconnect: its stream ends.
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.Receive(w.hb(), p.server, 64, &got).status);
  EXPECT_TRUE(got.empty());
  w.ForgetA();
  w.Unload();
  ExpectNoPoolLeft(w.env());
}

// A program that unloads with connections open: every handle's cleanup closes its sockets.
TEST(KernelSockets, OpenConnectionsAreClosedWhenTheProgramsGoAndNothingLeaks) {
  World w;
  w.Load();
  (void)w.ConnectOver(1, 5001);
  (void)w.ConnectOver(2, 5002);
  w.Unload();
  ExpectNoPoolLeft(w.env());
}

TEST(KernelSockets, APendingAcceptIsCancelledByCancelIo) {
  World w;
  w.Load();
  NDKSOCK_SOCKET listener = 0;
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Listen(w.hb(), Endpoint(kB1, 5001), 1, &listener).status);
  NDKSOCK_SOCKET_OUT out{};
  const NDKSOCK_SOCKET_IN input{listener};
  const PendingIo accept = w.env().StartDeviceIoControl(w.hb(), IOCTL_NDKSOCK_ACCEPT, In(input), Out(out));
  EXPECT_FALSE(w.env().IoCompleted(accept));
  w.env().CancelIo(w.hb());
  EXPECT_STATUS_EQ(STATUS_CANCELLED, w.env().WaitIo(accept).status);
  w.Unload();
}

// A listener keeps at most its backlog of connections nobody has taken: one more is refused.
TEST(KernelSockets, AConnectionBeyondTheBacklogIsRefused) {
  World w;
  w.Load();
  NDKSOCK_SOCKET listener = 0;
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Listen(w.hb(), Endpoint(kB1, 5001), 1, &listener).status);
  NDKSOCK_SOCKET_OUT first{};
  NDKSOCK_SOCKET_OUT second{};
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.Connect(w.ha(), kA1, Endpoint(kB1, 5001), &first).status);
  EXPECT_STATUS_EQ(STATUS_CONNECTION_REFUSED, w.Connect(w.ha(), kA1, Endpoint(kB1, 5001), &second).status);
  const NDKSOCK_DEVICE_STATS b = w.Query(w.hb()).Device;
  EXPECT_EQ(b.ConnectionsAccepted, 1u);
  EXPECT_EQ(b.ConnectionsRejected, 1u);
  w.Unload();
}

// Closing the listener leaves the connection it accepted working. Its connector lives on the
// listener's adapter, which stays open until the connection closes too.
TEST(KernelSockets, AnAcceptedConnectionOutlivesItsListener) {
  World w;
  w.Load();
  const World::Pair p = w.ConnectOver(1, 5001);
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Close(w.hb(), p.listener).status);
  EXPECT_EQ(w.Query(w.hb()).Device.SocketsOpen, 1u);
  EXPECT_EQ(w.Query(w.hb()).Device.AdaptersOpen, 2u);
  const std::vector<std::uint8_t> data = Pattern(1500, 6);
  std::uint32_t sent = 0;
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Send(w.hb(), p.server, data, &sent).status);
  std::vector<std::uint8_t> got;
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.ReceiveAll(w.ha(), p.client, data.size(), &got).status);
  EXPECT_TRUE(got == data);
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w.Close(w.hb(), p.server).status);
  EXPECT_EQ(w.Query(w.hb()).Device.AdaptersOpen, 0u);
  w.Unload();
}

// ---- flow control ----------------------------------------------------------------------------

class KernelSocketsFlowControl : public ::testing::Test {
 protected:
  void SetUp() override {
    w_.Load();
    p_ = w_.ConnectOver(1, 5001);
    // Four times what B's receives hold, sent while B's program reads nothing.
    send_ = w_.StartSend(w_.ha(), p_.client, data_);
    w_.Settle(Milliseconds(1));
  }
  void TearDown() override { w_.Unload(); }

  std::vector<std::uint8_t> ReadEverything() {
    std::vector<std::uint8_t> got;
    (void)w_.ReceiveAll(w_.hb(), p_.server, data_.size(), &got);
    return got;
  }

  // Declared before the world, so that the buffers outlive it.
  std::unique_ptr<Overlapped> send_;
  World w_;
  World::Pair p_;
  const std::vector<std::uint8_t> data_ = Pattern(4 * kReceiveDepth * kMessagePayload, 9);
};

TEST_F(KernelSocketsFlowControl, ASendBeyondThePeersReceivesWaitsForItsProgram) {
  EXPECT_FALSE(w_.env().IoCompleted(send_->io));
  const NDKSOCK_SOCKET_INFO client = w_.Query(w_.ha(), p_.client).Socket;
  const NDKSOCK_SOCKET_INFO server = w_.Query(w_.hb(), p_.server).Socket;
  EXPECT_EQ(client.SendCredits, 0u);
  EXPECT_EQ(client.CreditStalls, 1u);
  EXPECT_EQ(server.BufferedBytes, kReceiveDepth * kMessagePayload);  // every data receive holds a message
  EXPECT_EQ(server.PostedReceives, kControlReceives);               // the one for credit messages is free
}

TEST_F(KernelSocketsFlowControl, ReadingReleasesTheSendAndEveryByteArrivesInOrder) {
  EXPECT_TRUE(ReadEverything() == data_);
  std::uint32_t sent = 0;
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w_.FinishSend(*send_, &sent).status);
  EXPECT_EQ(sent, data_.size());
}

// Credits kept every send within the receives the peer had posted: no receiver-not-ready NAK.
TEST_F(KernelSocketsFlowControl, NoSendEverMeetsAReceiverNotReadyNak) {
  (void)ReadEverything();
  std::uint32_t sent = 0;
  (void)w_.FinishSend(*send_, &sent);
  EXPECT_EQ(w_.b(1).Counters().rnr_naks_sent, 0u);
  EXPECT_EQ(w_.a(1).Counters().rnr_naks_sent, 0u);
  EXPECT_GE(w_.Query(w_.ha(), p_.client).Socket.CreditStalls, 1u);
  EXPECT_EQ(w_.Query(w_.ha(), p_.client).Socket.MessagesSent, 4 * kReceiveDepth);
}

// The reader's side returns credits in messages of their own when it has no data to carry them.
TEST_F(KernelSocketsFlowControl, AReaderWithNothingToSendReturnsCreditsInMessagesOfTheirOwn) {
  (void)ReadEverything();
  std::uint32_t sent = 0;
  (void)w_.FinishSend(*send_, &sent);
  w_.Settle(Milliseconds(1));  // the last credit message reaches the sender
  const NDKSOCK_SOCKET_INFO server = w_.Query(w_.hb(), p_.server).Socket;
  const NDKSOCK_SOCKET_INFO client = w_.Query(w_.ha(), p_.client).Socket;
  EXPECT_GE(server.CreditMessagesSent, 1u);
  EXPECT_EQ(client.CreditMessagesReceived, server.CreditMessagesSent);
  EXPECT_EQ(server.MessagesSent, 0u);
}

// ---- every completion mode, seeds, exploration -------------------------------------------------

using ModeAndSeed = std::tuple<AsyncCompletion, std::uint64_t>;

class KernelSocketsModes : public ::testing::TestWithParam<ModeAndSeed> {};

TEST_P(KernelSocketsModes, TheExchangeDeliversEveryByteAndLeavesNoPool) {
  WorldConfig config;
  config.fabric.async_completion = std::get<0>(GetParam());
  config.fabric.seed = std::get<1>(GetParam());
  config.environment.seed = std::get<1>(GetParam()) * 7 + 3;
  World w(config);
  const ExchangeResult x = RunExchange(w);
  ExpectExchangeWhole(x);
  ExpectNoPoolLeft(w.env());
}

std::string ModeName(const ::testing::TestParamInfo<ModeAndSeed>& info) {
  static constexpr const char* kNames[] = {"Inline", "Pending", "PendingInCall", "Mixed"};
  return std::string(kNames[static_cast<int>(std::get<0>(info.param))]) + "Seed" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(KernelSockets, KernelSocketsModes,
                         ::testing::Combine(::testing::Values(AsyncCompletion::kInline, AsyncCompletion::kPending,
                                                              AsyncCompletion::kPendingInCall,
                                                              AsyncCompletion::kMixed),
                                            ::testing::Values(std::uint64_t{1}, std::uint64_t{2})),
                         ModeName);

// Each seed draws another interleaving of the drivers' threads, work items and callbacks, and
// another choice of inline or pending completion for each NDK call.
TEST(KernelSockets, TheExchangeHoldsOverSixteenMoreSeeds) {
  for (std::uint64_t seed = 3; seed < 19; ++seed) {
    WorldConfig config;
    config.fabric.async_completion = AsyncCompletion::kMixed;
    config.fabric.seed = seed;
    config.environment.seed = seed;
    World w(config);
    const ExchangeResult x = RunExchange(w);
    ExpectExchangeWhole(x);
    ExpectNoPoolLeft(w.env());
    if (HasFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
  }
}

// PCT with every preemption point (spin locks, events, NDK calls, mutexes): threads lose the
// processor between their own steps, at change points spread over the whole run.
TEST(KernelSockets, TheExchangeHoldsUnderPctExploration) {
  // How many preemption points one run reaches, so the change points cover all of it.
  std::uint64_t steps = 0;
  {
    WorldConfig config;
    config.environment.preemption = kernel::PreemptionPoints::All();
    World w(config);
    (void)RunExchange(w);
    steps = w.env().PreemptionSteps();
  }
  ASSERT_GT(steps, 100u);
  RecordProperty("preemption_steps", std::to_string(steps));
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    WorldConfig config;
    config.fabric.async_completion = seed % 2 == 0 ? AsyncCompletion::kMixed : AsyncCompletion::kPending;
    config.fabric.seed = seed;
    config.environment = kernel::EnvironmentConfig{.seed = seed,
                                                   .schedule = kernel::ScheduleStrategy::kPct,
                                                   .preemption = kernel::PreemptionPoints::All(),
                                                   .pct_depth = 3,
                                                   .pct_steps = static_cast<std::uint32_t>(steps)};
    World w(config);
    const ExchangeResult x = RunExchange(w);
    ExpectExchangeWhole(x);
    ExpectNoPoolLeft(w.env());
    if (HasFailure()) {
      ADD_FAILURE() << "PCT seed " << seed << ", " << steps << " steps";
      return;
    }
  }
}

TEST(KernelSockets, TheSameSeedsGiveTheSameRun) {
  WorldConfig config;
  config.fabric.async_completion = AsyncCompletion::kMixed;
  config.fabric.seed = 5;
  config.environment.seed = 5;
  World first(config);
  (void)RunExchange(first);
  World second(config);
  (void)RunExchange(second);
  EXPECT_EQ(first.env().Now(), second.env().Now());
  EXPECT_EQ(first.env().Interleaving(), second.env().Interleaving());
}

// ---- faults ------------------------------------------------------------------------------------

// The link of A's first RNIC goes down for good once both connections are up: a send on the first
// connection exhausts its retries, and the second RNIC's connection is untouched.
class KernelSocketsLinkDown : public ::testing::Test {
 protected:
  void SetUp() override {
    w_.Load();
    p1_ = w_.ConnectOver(1, 5001);
    p2_ = w_.ConnectOver(2, 5002);
    const TimePoint now = w_.fabric().Now();
    w_.fabric().AddFault(LinkDown(w_.a(1), now, now + Milliseconds(60000)));
    receive_ = w_.StartReceive(w_.ha(), p1_.client, 64);
    std::uint32_t sent = 0;
    send_ = w_.Send(w_.ha(), p1_.client, data_, &sent);
  }
  void TearDown() override { w_.Unload(); }

  // Declared before the world, so that the buffers outlive it.
  std::unique_ptr<Overlapped> receive_;
  World w_;
  World::Pair p1_;
  World::Pair p2_;
  const std::vector<std::uint8_t> data_ = Pattern(3000, 11);
  IoResult send_{};
};

TEST_F(KernelSocketsLinkDown, TheSendFailsWithTheTransportsTimeout) {
  EXPECT_STATUS_EQ(STATUS_IO_TIMEOUT, send_.status);
  EXPECT_EQ(send_.information, 0u);
  EXPECT_GT(w_.a(1).Counters().retransmissions, 0u);
}

TEST_F(KernelSocketsLinkDown, APendingReceiveOnTheFailedConnectionCompletesWithTheFailure) {
  std::vector<std::uint8_t> got;
  EXPECT_STATUS_EQ(STATUS_IO_TIMEOUT, w_.FinishReceive(*receive_, &got).status);
  EXPECT_TRUE(got.empty());
}

TEST_F(KernelSocketsLinkDown, TheDriverReportsTheConnectionFailed) {
  const NDKSOCK_QUERY_OUT q = w_.Query(w_.ha(), p1_.client);
  EXPECT_EQ(q.Socket.State, static_cast<std::uint32_t>(NDKSOCK_STATE_FAILED));
  EXPECT_STATUS_EQ(STATUS_IO_TIMEOUT, q.Socket.Status);
  EXPECT_EQ(q.Device.ConnectionsFailed, 1u);
  std::uint32_t sent = 0;
  EXPECT_STATUS_EQ(STATUS_IO_TIMEOUT, w_.Send(w_.ha(), p1_.client, data_, &sent).status);  // and stays failed
}

TEST_F(KernelSocketsLinkDown, TheOtherRnicsConnectionStillCarriesData) {
  std::uint32_t sent = 0;
  ASSERT_STATUS_EQ(STATUS_SUCCESS, w_.Send(w_.ha(), p2_.client, data_, &sent).status);
  std::vector<std::uint8_t> got;
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w_.ReceiveAll(w_.hb(), p2_.server, data_.size(), &got).status);
  EXPECT_TRUE(got == data_);
}

TEST_F(KernelSocketsLinkDown, EverySocketClosesAndBothDriversUnloadWithoutLeaks) {
  std::vector<std::uint8_t> ignored;
  (void)w_.FinishReceive(*receive_, &ignored);
  for (const World::Pair* p : {&p1_, &p2_}) {
    EXPECT_STATUS_EQ(STATUS_SUCCESS, w_.Close(w_.ha(), p->client).status);
    EXPECT_STATUS_EQ(STATUS_SUCCESS, w_.Close(w_.hb(), p->server).status);
    EXPECT_STATUS_EQ(STATUS_SUCCESS, w_.Close(w_.hb(), p->listener).status);
  }
  EXPECT_EQ(w_.Query(w_.ha()).Device.AdaptersOpen, 0u);
  EXPECT_EQ(w_.Query(w_.hb()).Device.AdaptersOpen, 0u);
  w_.Unload();
  ExpectNoPoolLeft(w_.env());
}

// A's first RNIC fails outright: its CQs die, and the driver learns it from the CQ notification
// (STATUS_INTERNAL_ERROR), with requests still posted that no completion will ever end.
class KernelSocketsAdapterFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    w_.Load();
    p1_ = w_.ConnectOver(1, 5001);
    p2_ = w_.ConnectOver(2, 5002);
    receive_ = w_.StartReceive(w_.ha(), p1_.client, 64);
    w_.fabric().AddFault(FailAdapter(w_.a(1), w_.fabric().Now()));
    std::vector<std::uint8_t> got;
    received_ = w_.FinishReceive(*receive_, &got);
  }
  void TearDown() override { w_.Unload(); }

  std::unique_ptr<Overlapped> receive_;
  World w_;
  World::Pair p1_;
  World::Pair p2_;
  IoResult received_{};
};

TEST_F(KernelSocketsAdapterFailure, APendingReceiveCompletesWithTheAdaptersError) {
  EXPECT_STATUS_EQ(STATUS_INTERNAL_ERROR, received_.status);
  const NDKSOCK_SOCKET_INFO s = w_.Query(w_.ha(), p1_.client).Socket;
  EXPECT_EQ(s.State, static_cast<std::uint32_t>(NDKSOCK_STATE_FAILED));
  EXPECT_STATUS_EQ(STATUS_INTERNAL_ERROR, s.Status);
}

TEST_F(KernelSocketsAdapterFailure, EverySocketClosesAndBothDriversUnloadWithoutLeaks) {
  for (const World::Pair* p : {&p1_, &p2_}) {
    EXPECT_STATUS_EQ(STATUS_SUCCESS, w_.Close(w_.ha(), p->client).status);
    EXPECT_STATUS_EQ(STATUS_SUCCESS, w_.Close(w_.hb(), p->server).status);
    EXPECT_STATUS_EQ(STATUS_SUCCESS, w_.Close(w_.hb(), p->listener).status);
  }
  w_.Unload();
  ExpectNoPoolLeft(w_.env());
}

// Five per cent of every packet on every link is lost: the transport resends, and the stream
// arrives whole, in both directions.
TEST(KernelSocketsFaults, DroppedPacketsAreResentAndEveryByteArrives) {
  WorldConfig config;
  config.fabric.async_completion = AsyncCompletion::kMixed;
  World w(config);
  w.Load();
  const World::Pair p = w.ConnectOver(2, 5002);
  w.fabric().AddFault(DropPackets(PacketClass::kAny).Always().WithProbability(0.05));
  const std::vector<std::uint8_t> to_b = Pattern(20000, 12);
  const std::vector<std::uint8_t> to_a = Pattern(12000, 13);
  auto send_a = w.StartSend(w.ha(), p.client, to_b);
  auto send_b = w.StartSend(w.hb(), p.server, to_a);
  std::vector<std::uint8_t> at_b;
  std::vector<std::uint8_t> at_a;
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.ReceiveAll(w.hb(), p.server, to_b.size(), &at_b).status);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.ReceiveAll(w.ha(), p.client, to_a.size(), &at_a).status);
  std::uint32_t sent = 0;
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.FinishSend(*send_a, &sent).status);
  EXPECT_STATUS_EQ(STATUS_SUCCESS, w.FinishSend(*send_b, &sent).status);
  EXPECT_TRUE(at_b == to_b);
  EXPECT_TRUE(at_a == to_a);
  EXPECT_GT(w.a(2).Counters().retransmissions + w.b(2).Counters().retransmissions, 0u);
  w.Unload();
  ExpectNoPoolLeft(w.env());
}

}  // namespace
}  // namespace ndksim::kernel_sockets
