// SPDX-License-Identifier: MIT
// The kernel environment's I/O manager, driven as a Windows test program drives a driver: open its
// device by name, send it IOCTLs, close it (tests/kernel/consumer_io.c is the driver).
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <string>

#include "kernel/consumer_io.h"
#include "kernel/run_check.h"
#include "ndksim/fabric.h"
#include "ndksim/kernel/environment.h"

namespace ndksim::kernel {
namespace {

constexpr std::int32_t kSuccess = 0;
constexpr std::int32_t kCancelled = static_cast<std::int32_t>(0xC0000120u);
constexpr std::int32_t kInvalidDeviceRequest = static_cast<std::int32_t>(0xC0000010u);
constexpr std::int32_t kNameNotFound = static_cast<std::int32_t>(0xC0000034u);
constexpr std::int32_t kBufferOverflow = static_cast<std::int32_t>(0x80000005u);  // a warning
constexpr std::string_view kLink = "\\\\.\\NdksimIoTest";

class KernelIo : public ::testing::Test {
 protected:
  KernelIo() { node_ = &fabric_.AddNode({"machine", {"192.0.2.1"}}); }

  void Load(Environment::DriverEntry entry = &IoTestDriverEntry) {
    driver_ = env_.LoadDriver(*node_, "iotest", entry);
    env_.Run();
    ASSERT_EQ(env_.DriverStatus(driver_), kSuccess);
  }

  DeviceHandle Open() {
    DeviceHandle handle;
    EXPECT_EQ(env_.OpenDevice(*node_, kLink, &handle).status, kSuccess);
    return handle;
  }

  // Sends `code` with `input`; the result, the output in output_.
  IoResult Control(std::uint32_t code, std::string_view input = {}) {
    const DeviceHandle handle = Open();
    const IoResult r = env_.DeviceIoControl(handle, code, std::as_bytes(std::span(input)), std::as_writable_bytes(std::span(output_)));
    return r;
  }

  // The check a buggy IOCTL fails the run with; the report in report_.
  std::string CheckOf(std::uint32_t code) {
    const DeviceHandle handle = Open();
    try {
      (void)env_.DeviceIoControl(handle, code, {}, std::as_writable_bytes(std::span(output_)));
    } catch (const VerifierError& e) {
      report_ = e.what();
      return e.Check();
    }
    return "none";
  }

  Fabric fabric_{FabricConfig{.seed = 3, .profile = profiles::kFunctional}};
  Node* node_ = nullptr;
  Environment env_{fabric_, EnvironmentConfig{.seed = 7}};
  _DRIVER_OBJECT* driver_ = nullptr;
  std::array<char, 16> output_{};
  std::string report_;
};

TEST_F(KernelIo, ADeviceOpensThroughItsSymbolicLinkAndClosesWithCleanupAndClose) {
  Load();
  DeviceHandle handle;
  EXPECT_EQ(env_.OpenDevice(*node_, kLink, &handle).status, kSuccess);
  EXPECT_EQ(env_.CloseDevice(handle).status, kSuccess);
  EXPECT_EQ(g_io_counts.creates, 1);
  EXPECT_EQ(g_io_counts.cleanups, 1);
  EXPECT_EQ(g_io_counts.closes, 1);
}

TEST_F(KernelIo, ADeviceOpensByItsDeviceName) {
  Load();
  DeviceHandle handle;
  EXPECT_EQ(env_.OpenDevice(*node_, "\\Device\\NdksimIoTest", &handle).status, kSuccess);
}

TEST_F(KernelIo, NamesCompareWithoutRegardToCase) {
  Load();
  DeviceHandle handle;
  EXPECT_EQ(env_.OpenDevice(*node_, "\\\\.\\NDKSIMIOTEST", &handle).status, kSuccess);
  EXPECT_EQ(env_.OpenDevice(*node_, "\\device\\ndksimiotest", &handle).status, kSuccess);
}

TEST_F(KernelIo, ASecondDeviceOfTheSameNameIsANameCollision) {
  Load();
  std::int32_t status = kSuccess;
  env_.StartThread("test", [&] { status = IoTestCreateDeviceTwice(driver_); }, node_);
  env_.Run();
  EXPECT_EQ(status, static_cast<std::int32_t>(0xC0000035u));  // STATUS_OBJECT_NAME_COLLISION
}

TEST_F(KernelIo, ANameNothingHasIsNotFound) {
  Load();
  DeviceHandle handle;
  EXPECT_EQ(env_.OpenDevice(*node_, "\\\\.\\Nothing", &handle).status, kNameNotFound);
  EXPECT_EQ(handle.id, 0u);
}

TEST_F(KernelIo, ADeviceIsNotFoundFromAnotherMachine) {
  Node& other = fabric_.AddNode({"other", {"192.0.2.2"}});
  Load();
  DeviceHandle handle;
  EXPECT_EQ(env_.OpenDevice(other, kLink, &handle).status, kNameNotFound);
}

TEST_F(KernelIo, AnOpenOfADriverWithoutACreateHandlerIsAnInvalidDeviceRequest) {
  Load(&IoTestNoCreateDriverEntry);
  DeviceHandle handle;
  EXPECT_EQ(env_.OpenDevice(*node_, kLink, &handle).status, kInvalidDeviceRequest);
}

TEST_F(KernelIo, ABufferedIoctlReturnsWhatTheDriverLeftInTheSystemBuffer) {
  Load();
  const IoResult r = Control(IO_TEST_ECHO, "hello");
  EXPECT_EQ(r.status, kSuccess);
  EXPECT_EQ(r.information, 5u);
  EXPECT_EQ(std::string(output_.data(), 5), "hello");
}

// STATUS_BUFFER_OVERFLOW is a warning: as on Windows, the part that fits comes back with it (it was
// copied back on success only).
TEST_F(KernelIo, ABufferedIoctlCompletedWithAWarningStillReturnsItsOutput) {
  Load();
  std::array<char, 3> small{};
  const std::string input = "hello";
  const IoResult r = env_.DeviceIoControl(Open(), IO_TEST_PARTIAL, std::as_bytes(std::span(input)),
                                          std::as_writable_bytes(std::span(small)));
  EXPECT_EQ(r.status, kBufferOverflow);
  EXPECT_EQ(r.information, 3u);
  EXPECT_EQ(std::string(small.data(), 3), "hel");
}

// ---- reads and writes, by the device's I/O method ----

class KernelIoTransfer : public KernelIo, public ::testing::WithParamInterface<Environment::DriverEntry> {};

std::span<const std::byte> Bytes(std::string_view text) { return std::as_bytes(std::span(text)); }

TEST_P(KernelIoTransfer, AWriteThenAReadAtItsOffsetGiveTheBytesBack) {
  Load(GetParam());
  const DeviceHandle handle = Open();
  const IoResult written = env_.WriteFile(handle, Bytes("hello"), 10);
  EXPECT_EQ(written.status, kSuccess);
  EXPECT_EQ(written.information, 5u);
  std::array<char, 5> back{};
  const IoResult read = env_.ReadFile(handle, std::as_writable_bytes(std::span(back)), 10);
  EXPECT_EQ(read.status, kSuccess);
  EXPECT_EQ(read.information, 5u);
  EXPECT_EQ(std::string(back.data(), back.size()), "hello");
}

// A short read at the disk's end gives the bytes there; the rest of the program's buffer keeps
// what it had (for a buffered device, only Information bytes are copied back).
TEST_P(KernelIoTransfer, AShortReadGivesOnlyTheBytesThereAndLeavesTheRestOfTheBuffer) {
  Load(GetParam());
  const DeviceHandle handle = Open();
  ASSERT_EQ(env_.WriteFile(handle, Bytes("tail!!"), 250).status, kSuccess);
  std::array<char, 10> back{};
  back.fill('x');
  const IoResult read = env_.ReadFile(handle, std::as_writable_bytes(std::span(back)), 250);
  EXPECT_EQ(read.status, kSuccess);
  EXPECT_EQ(read.information, 6u);
  EXPECT_EQ(std::string(back.data(), back.size()), "tail!!xxxx");
}

TEST_P(KernelIoTransfer, AReadFromTheEndOnIsEndOfFile) {
  Load(GetParam());
  std::array<char, 4> back{};
  EXPECT_EQ(env_.ReadFile(Open(), std::as_writable_bytes(std::span(back)), 256).status,
            static_cast<std::int32_t>(0xC0000011u));  // STATUS_END_OF_FILE
}

INSTANTIATE_TEST_SUITE_P(Methods, KernelIoTransfer,
                         ::testing::Values(&IoTestDriverEntry, &IoTestDirectDriverEntry, &IoTestNeitherDriverEntry),
                         [](const ::testing::TestParamInfo<Environment::DriverEntry>& info) {
                           return info.index == 0 ? std::string("Buffered")
                                                  : info.index == 1 ? std::string("Direct") : std::string("Neither");
                         });

TEST_F(KernelIo, APendedIoctlReturnsWhenADpcCompletesIt) {
  Load();
  const TimePoint before = env_.Now();
  const IoResult r = Control(IO_TEST_PEND);
  EXPECT_EQ(r.status, kSuccess);
  EXPECT_EQ(std::string(output_.data(), r.information), "done");
  EXPECT_EQ(env_.Now() - before, Microseconds(10));  // the driver's timer
}

TEST_F(KernelIo, AnIrpCancelledWhilePendingRunsItsCancelRoutine) {
  Load();
  EXPECT_EQ(Control(IO_TEST_CANCELLED).status, kCancelled);
  EXPECT_EQ(g_io_counts.cancel_routines, 1);
}

TEST_F(KernelIo, AnOverlappedRequestReturnsPendingAndCompletesWhenWaitedFor) {
  Load();
  const DeviceHandle handle = Open();
  const PendingIo io = env_.StartDeviceIoControl(handle, IO_TEST_PEND, {}, std::as_writable_bytes(std::span(output_)));
  EXPECT_FALSE(env_.IoCompleted(io));
  const IoResult r = env_.WaitIo(io);
  EXPECT_EQ(r.status, kSuccess);
  EXPECT_EQ(std::string(output_.data(), r.information), "done");
}

TEST_F(KernelIo, CancelIoRunsTheCancelRoutineOfAHeldIrp) {
  Load();
  const DeviceHandle handle = Open();
  const PendingIo io = env_.StartDeviceIoControl(handle, IO_TEST_HOLD, {}, std::as_writable_bytes(std::span(output_)));
  EXPECT_FALSE(env_.IoCompleted(io));
  env_.CancelIo(handle);  // as CancelIoEx: the request completes when its driver completes it
  EXPECT_EQ(env_.WaitIo(io).status, kCancelled);
  EXPECT_EQ(g_io_counts.cancel_routines, 1);
}

TEST_F(KernelIo, AnOutDirectIoctlWritesThroughTheMdl) {
  Load();
  const IoResult r = Control(IO_TEST_FILL);
  EXPECT_EQ(r.status, kSuccess);
  EXPECT_EQ(r.information, output_.size());
  EXPECT_EQ(static_cast<unsigned char>(output_[0]), 0xA5);
  EXPECT_EQ(static_cast<unsigned char>(output_[15]), 0xA5);
}

TEST_F(KernelIo, ANeitherIoctlUsesTheProgramsOwnBuffers) {
  Load();
  const std::uint32_t value = 21;
  const DeviceHandle handle = Open();
  std::uint32_t doubled = 0;
  const IoResult r = env_.DeviceIoControl(handle, IO_TEST_DOUBLE, std::as_bytes(std::span(&value, 1)),
                                          std::as_writable_bytes(std::span(&doubled, 1)));
  EXPECT_EQ(r.status, kSuccess);
  EXPECT_EQ(doubled, 42u);
}

// METHOD_NEITHER's driver probes the program's buffers inside __try: a misaligned one raises, and
// the exception is reported (no handler can take it here).
TEST_F(KernelIo, AMisalignedNeitherBufferIsReportedWhenTheDriverProbesIt) {
  Load();
  alignas(4) std::array<std::byte, 8> input{};
  std::uint32_t doubled = 0;
  const DeviceHandle handle = Open();
  try {
    (void)env_.DeviceIoControl(handle, IO_TEST_DOUBLE, std::span(input).subspan(1, 4),
                               std::as_writable_bytes(std::span(&doubled, 1)));
    FAIL() << "the probe raised nothing";
  } catch (const VerifierError& e) {
    EXPECT_EQ(e.Check(), "RAISE");
    EXPECT_NE(std::string(e.what()).find("ProbeForRead"), std::string::npos) << e.what();
  }
}

TEST_F(KernelIo, ADispatchRoutineThatNeitherCompletesNorPendsIsReported) {
  Load();
  EXPECT_EQ(CheckOf(IO_TEST_FORGET), "IRP");
  EXPECT_NE(report_.find("without completing the IRP or pending it"), std::string::npos) << report_;
}

TEST_F(KernelIo, StatusPendingWithoutIoMarkIrpPendingIsReported) {
  Load();
  EXPECT_EQ(CheckOf(IO_TEST_UNMARKED), "IRP");
  EXPECT_NE(report_.find("without IoMarkIrpPending"), std::string::npos) << report_;
}

// Driver Verifier's rule: a dispatch routine that marks its IRP pending must return STATUS_PENDING,
// even if the IRP has completed meanwhile. This one returned success without a report.
TEST_F(KernelIo, AnIrpMarkedPendingWhoseDispatchReturnsAnotherStatusIsReported) {
  Load();
  EXPECT_EQ(CheckOf(IO_TEST_MARKED), "IRP");
  EXPECT_NE(report_.find("after IoMarkIrpPending"), std::string::npos) << report_;
}

TEST_F(KernelIo, AnIrpCompletedTwiceIsReported) {
  Load();
  EXPECT_EQ(CheckOf(IO_TEST_TWICE), "IRP");
  EXPECT_NE(report_.find("MULTIPLE_IRP_COMPLETE_REQUESTS"), std::string::npos) << report_;
}

TEST_F(KernelIo, ASymbolicLinkLeftAtUnloadIsALeak) {
  Load(&IoTestLeakyLinkDriverEntry);
  env_.UnloadDriver(driver_);
  std::string report;
  EXPECT_EQ(testing::CheckOfRun(env_, &report), "LEAK");
  EXPECT_NE(report.find("symbolic link '\\DosDevices\\NdksimIoTest'"), std::string::npos) << report;  // as spelled
}

TEST_F(KernelIo, ADriverThatDeletesItsLinkAndDeviceUnloadsSilently) {
  Load();
  env_.UnloadDriver(driver_);
  std::string report;
  EXPECT_EQ(testing::CheckOfRun(env_, &report), "none") << report;
}

}  // namespace
}  // namespace ndksim::kernel
