// SPDX-License-Identifier: MIT
// ndksim-perf as a user runs it: perftest's options, its tables and units, the JSON output, every
// bad argument refused by name with a non-zero exit, and every command line the docs show.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ndksim/version.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Outcome {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs ndksim-perf with `args` (shell words; first, so that a perftest program name leads), capturing
// stdout and stderr; in `cwd` if given.
Outcome Perf(const std::string& args, const std::string& cwd = {}) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string err_path = (dir / ("ndksim_perf_err_" + std::to_string(::getpid()))).string();
  const std::string command = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + std::string(NDKSIM_PERF_PATH) + " " +
                              args + " --no-progress 2>" + err_path;
  Outcome o;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return o;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) o.out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream text;
  text << err.rdbuf();
  o.err = text.str();
  std::filesystem::remove(err_path);
  return o;
}

// ---- regressions of the first hour ---------------------------------------------------------------

TEST(PerfCli, WritesOnTwoQpsComplete) {
  const Outcome o = Perf("--op write --size 64 --iters 200 --qps 2");
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

TEST(PerfCli, ReadsOnTwoQpsComplete) {
  const Outcome o = Perf("--op read --size 64 --iters 100 --qps 2");
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

TEST(PerfCli, ReadsOnTheIWarpProfileComplete) {
  const Outcome o = Perf("--profile iwarp --op read --size 4096 --iters 50");
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

// ---- perftest's options and tables -------------------------------------------------------------

TEST(PerfCli, TakesPerftestsShortOptions) {
  const Outcome o = Perf("-s 64 -n 100 -q 4 -l 16 -I 64 -Q 16 -t 64 --report_gbits");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"));
  EXPECT_THAT(o.out, HasSubstr(" Number of qps   : 4 "));
  EXPECT_THAT(o.out, HasSubstr(" Post List      : 16"));
}

TEST(PerfCli, PrintsPerftestsLatencyColumns) {
  const Outcome o = Perf("-s 8 -n 50 --phases lat");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                               "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"));
  EXPECT_THAT(o.out, ::testing::Not(HasSubstr("BW average")));
}

TEST(PerfCli, ReportsMebibytesPerSecondByDefaultAsCurrentPerftest) {
  const Outcome o = Perf("-s 4096 -n 100 --phases bw");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("BW peak[MiB/sec]    BW average[MiB/sec]"));
}

TEST(PerfCli, SignalsOneRequestInAHundredByDefaultAsPerftest) {
  const Outcome o = Perf("-s 64 -n 200 --phases bw");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("CQ Moderation   : 100"));
}

TEST(PerfCli, PerftestsWriteBwRunsTheBandwidthTestAloneAtItsDefaultSize) {
  const Outcome o = Perf("write_bw -n 100");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("RDMA_Write BW Test"));
  EXPECT_THAT(o.out, ::testing::Not(HasSubstr("t_typical")));
  EXPECT_THAT(o.out, ::testing::ContainsRegex("\n 65536 +100 "));
}

TEST(PerfCli, PerftestsSendLatRunsTheLatencyTestAloneAtItsDefaultSize) {
  const Outcome o = Perf("send_lat -n 50");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("Send Latency Test"));
  EXPECT_THAT(o.out, ::testing::Not(HasSubstr("BW average")));
  EXPECT_THAT(o.out, ::testing::ContainsRegex("\n 2 +50 "));
}

TEST(PerfCli, EventsRunTheSendLatencyTestThroughTheInterruptPath) {
  const Outcome o = Perf("send_lat -e -n 20");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("Completions     : events"));
}

TEST(PerfCli, EventsWithTheWriteLatencyTestAreRefused) {
  const Outcome o = Perf("write_lat -e -n 20");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("-e: the write latency test polls memory"));
}

TEST(PerfCli, APerftestEntryPointRefusesAnotherOperation) {
  const Outcome o = Perf("read_bw --op write");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("read_bw runs one test"));
}

TEST(PerfCli, PerftestOptionsThatMeanNothingHereAreTakenAndReportedAsIgnored) {
  const Outcome o = Perf("-s 64 -n 50 --phases lat -F -R -x 3");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.err, HasSubstr("ndksim-perf: -F ignored: no CPU frequency to check here\n"));
  EXPECT_THAT(o.err, HasSubstr("ndksim-perf: -R ignored: NDK connects through its own interface\n"));
  EXPECT_THAT(o.err, HasSubstr("ndksim-perf: -x ignored: the simulated port has one address\n"));
}

TEST(PerfCli, AllSizesRunFromTwoBytes) {
  const Outcome o = Perf("-a -n 2 --phases bw --profile functional --dry-run");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("23 size(s)"));
}

TEST(PerfCli, PrintsHelpOnStdout) {
  const Outcome o = Perf("--help");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_THAT(o.out, HasSubstr("Usage: ndksim-perf"));
  EXPECT_THAT(o.out, HasSubstr("--report_gbits"));
  EXPECT_TRUE(o.err.empty()) << o.err;
}

TEST(PerfCli, PrintsItsVersion) {
  const Outcome o = Perf("--version");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out, std::string("ndksim-perf ") + NDKSIM_VERSION_STRING + "\n");
}

// ---- the JSON output -------------------------------------------------------------------------------

TEST(PerfCli, WritesEveryFigureAndTheConfigurationUnderNdksimInTheJson) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ndksim_perf_" + std::to_string(::getpid()) + ".json")).string();
  const Outcome o = Perf("--op send -s 1024 -n 40 -q 2 --out_json_file " + path);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  const nlohmann::json& j = doc["ndksim"];
  EXPECT_EQ(j["tool"], "ndksim-perf");
  EXPECT_EQ(j["version"], NDKSIM_VERSION_STRING);
  EXPECT_EQ(j["config"]["op"], "send");
  EXPECT_EQ(j["config"]["qps"], 2);
  EXPECT_EQ(j["config"]["profile"], "connectx-100g-roce");
  ASSERT_EQ(j["results"].size(), 1u);
  const nlohmann::json& r = j["results"][0];
  EXPECT_EQ(r["bytes"], 1024);
  EXPECT_EQ(r["latency"]["iterations"], 40);
  EXPECT_GT(r["latency"]["t_typical_us"].get<double>(), 0.0);
  EXPECT_LE(r["latency"]["t_min_us"].get<double>(), r["latency"]["p99_9_us"].get<double>());
  EXPECT_EQ(r["bandwidth"]["iterations"], 80);  // per QP, as perftest counts
  EXPECT_GE(r["bandwidth"]["bw_peak_gbps"].get<double>(), r["bandwidth"]["bw_avg_gbps"].get<double>());
  EXPECT_LT(r["bandwidth"]["bw_peak_gbps"].get<double>(), 100.0);  // never above the link
}

// Runs ndksim-perf with `args` in a directory of its own; returns what it wrote there as
// perftest_out.json (null if nothing).
nlohmann::json PerfJsonInScratchDirectory(const std::string& args, const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const Outcome o = Perf(args, dir.string());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j;
  if (std::ifstream in(dir / "perftest_out.json"); in) j = nlohmann::json::parse(in);
  std::filesystem::remove_all(dir);
  return j;
}

// The JSON of two runs (with --out_json added), for a test that compares them; both must have run.
std::pair<nlohmann::json, nlohmann::json> TwoRuns(const std::string& first, const std::string& second) {
  nlohmann::json one = PerfJsonInScratchDirectory(first + " --out_json", "ndksim_perf_first_");
  nlohmann::json two = PerfJsonInScratchDirectory(second + " --out_json", "ndksim_perf_second_");
  if (one.is_null() || two.is_null()) throw std::runtime_error("ndksim-perf wrote no JSON: " + first + " / " + second);
  return {std::move(one), std::move(two)};
}

// perftest: --out_json is a flag, and the file is perftest_out.json in the working directory.
TEST(PerfCli, OutJsonIsAFlagThatWritesPerftestOutJsonInTheWorkingDirectory) {
  const nlohmann::json j = PerfJsonInScratchDirectory("write_bw -n 10 --out_json", "ndksim_perf_pj_");
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["results"]["MsgSize"], 65536);
}

// perftest's schema: ib_write_bw's test_info and results, with its names and units (MiB/s).
TEST(PerfCli, TheJsonHasPerftestsBandwidthSchema) {
  const nlohmann::json j = PerfJsonInScratchDirectory("write_bw -s 4096 -n 50 -q 2 --out_json",
                                                      "ndksim_perf_schema_bw_");
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["test_info"]["test"], "RDMA_Write_BW_Test");
  EXPECT_EQ(j["test_info"]["Number_of_qps"], 2);
  EXPECT_EQ(j["test_info"]["Connection_type"], "RC");
  EXPECT_EQ(j["test_info"]["Link_type"], "Ethernet");
  EXPECT_EQ(j["test_info"]["CQ_Moderation"], 100);
  const nlohmann::json& r = j["results"];
  EXPECT_EQ(r["MsgSize"], 4096);
  EXPECT_EQ(r["n_iterations"], 100);
  const nlohmann::json& mine = j["ndksim"]["results"][0]["bandwidth"];
  EXPECT_NEAR(r["BW_average"].get<double>(), mine["bw_avg_MBps"].get<double>(), 0.005);
  EXPECT_NEAR(r["MsgRate"].get<double>(), mine["msg_rate_mpps"].get<double>(), 5e-7);
  EXPECT_GE(r["BW_peak"].get<double>(), r["BW_average"].get<double>());
}

TEST(PerfCli, TheJsonHasPerftestsLatencySchema) {
  const nlohmann::json j = PerfJsonInScratchDirectory("send_lat -n 100 --out_json",
                                                      "ndksim_perf_schema_lat_");
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["test_info"]["test"], "Send_Latency_Test");
  const nlohmann::json& r = j["results"];
  EXPECT_EQ(r["MsgSize"], 2);
  EXPECT_EQ(r["n_iterations"], 100);
  for (const char* key : {"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99", "percentile_99.9"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  EXPECT_LE(r["t_min"].get<double>(), r["t_typical"].get<double>());
}

// A deterministic simulation writes the same file twice: no wall-clock figure unless asked.
TEST(PerfCli, TheSameCommandWritesTheSameJson) {
  const std::string args = "--op write -s 64 -n 100 --phases bw";
  const nlohmann::json one = PerfJsonInScratchDirectory(args + " --out_json", "ndksim_perf_same1_");
  const nlohmann::json two = PerfJsonInScratchDirectory(args + " --out_json", "ndksim_perf_same2_");
  ASSERT_FALSE(one.is_null());
  EXPECT_EQ(one.dump(), two.dump());
  EXPECT_FALSE(one["ndksim"]["results"][0].contains("sim_ops_per_wall_s"));
}

TEST(PerfCli, ReportSpeedAddsTheSimulatorsWallClockSpeed) {
  const nlohmann::json j = PerfJsonInScratchDirectory(
      "--op write -s 64 -n 100 --phases bw --report_speed --out_json", "ndksim_perf_speed_");
  ASSERT_FALSE(j.is_null());
  EXPECT_GT(j["ndksim"]["results"][0]["sim_ops_per_wall_s"].get<double>(), 0.0);
}

// perftest's -b: both directions' bandwidth, about twice one direction's on a full-duplex link.
TEST(PerfCli, BidirectionalBandwidthIsBothDirections) {
  const auto [one, two] = TwoRuns("write_bw -n 1000", "write_bw -n 1000 -b");
  EXPECT_EQ(two["test_info"]["test"], "RDMA_Write_Bidirectional_BW_Test");
  EXPECT_EQ(two["results"]["n_iterations"], 1000);
  const double ratio = two["results"]["BW_average"].get<double>() / one["results"]["BW_average"].get<double>();
  EXPECT_GT(ratio, 1.8);
  EXPECT_LT(ratio, 2.05);
}

// A usage error: exit status 2, and the message names what was wrong.
void ExpectRefused(const std::string& args, const std::string& says) {
  const Outcome o = Perf(args);
  EXPECT_EQ(o.exit_code, 2) << args;
  EXPECT_THAT(o.err, HasSubstr(says)) << args;
}

TEST(PerfCli, BidirectionalIsRefusedForALatencyTest) { ExpectRefused("write_lat -b", "-b: bidirectional"); }

TEST(PerfCli, ReportBothGivesEachDirectionOfABidirectionalRun) {
  const Outcome o = Perf("write_bw -n 500 -b --report-both");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr(" Local results: "));
  EXPECT_THAT(o.out, HasSubstr(" Remote results: "));
  // The rows: both directions, then each; the two halves make the whole.
  std::vector<double> averages;
  std::istringstream lines(o.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream row(line);
    double bytes = 0, iterations = 0, peak = 0, average = 0;
    if (line.rfind(" 65536 ", 0) == 0 && row >> bytes >> iterations >> peak >> average) averages.push_back(average);
  }
  ASSERT_EQ(averages.size(), 3u) << o.out;
  EXPECT_NEAR(averages[1] + averages[2], averages[0], 0.02);
}

TEST(PerfCli, ReportBothWithoutBidirectionalIsReportedIgnored) {
  const Outcome o = Perf("write_bw -n 10 --report-both");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.err, HasSubstr("--report-both ignored"));
}

// perftest's -o: the reads a QP may have outstanding (its ORD and IRD), at most the device's.
TEST(PerfCli, FewerOutstandingReadsGiveLessReadBandwidth) {
  const auto [four, most] = TwoRuns("read_bw -s 4096 -n 2000 -o 4", "read_bw -s 4096 -n 2000");
  EXPECT_EQ(four["test_info"]["Outstand_reads"], 4);
  EXPECT_EQ(most["test_info"]["Outstand_reads"], 16);
  EXPECT_LT(four["results"]["BW_average"].get<double>(), 0.9 * most["results"]["BW_average"].get<double>());
}

TEST(PerfCli, OutstandingReadsAboveTheDevicesAreClampedAsPerftestDoes) {
  const Outcome o = Perf("read_bw -n 10 -o 64");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.err, HasSubstr("-o 64 is above the profile's 16"));
  EXPECT_THAT(o.out, HasSubstr(" Outstand reads  : 16"));
}

// perftest's -D: a duration of simulated time, its middle half measured; the rate agrees with an
// iteration-counted run of the same stream.
TEST(PerfCli, ADurationMeasuresTheMiddleOfTheRun) {
  const auto [counted, timed] = TwoRuns("write_bw -s 4096 -n 5000", "write_bw -s 4096 -D 0.001");
  EXPECT_EQ(timed["ndksim"]["config"]["duration_s"], 0.001);
  // 0.5 ms measured at about 3 M writes of 4 KiB per second.
  EXPECT_GT(timed["results"]["n_iterations"].get<int>(), 1000);
  EXPECT_NEAR(timed["results"]["BW_average"].get<double>(), counted["results"]["BW_average"].get<double>(),
              0.02 * counted["results"]["BW_average"].get<double>());
}

TEST(PerfCli, ALatencyTestForADurationPrintsPerftestsDurationColumns) {
  const Outcome o = Perf("send_lat -D 0.0005");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr(" #bytes        #iterations       t_avg[usec]    tps average"));
}

TEST(PerfCli, ADurationAndAnIterationCountAreRefusedTogether) { ExpectRefused("write_bw -D 1 -n 10", "-D and -n"); }

// A perftest user's command line, unchanged but for the program's name: the host's device name,
// its port, GID index, TCP port and CPU-frequency check are taken and reported, and the run is the
// default profile's.
TEST(PerfCli, APerftestClientsCommandLineRunsUnchanged) {
  const Outcome o = Perf("write_bw -d mlx5_0 -i 1 -x 3 -F -p 18515 -S 0 -T 0 --report_gbits -q 4 -n 50 192.0.2.1");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.err, HasSubstr("device mlx5_0 is not a simulated profile: connectx-100g-roce runs"));
  for (const char* option : {"-i", "-x", "-F", "-p", "-S", "-T"}) {
    EXPECT_THAT(o.err, HasSubstr(std::string("ndksim-perf: ") + option + " ignored")) << option;
  }
  EXPECT_THAT(o.out, HasSubstr("BW average[Gb/sec]"));
}

TEST(PerfCli, ADeviceThatIsAProfileChoosesIt) {
  const Outcome o = Perf("write_bw -d iwarp -n 10");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("Device (profile): iwarp"));
  EXPECT_THAT(o.err, Not(HasSubstr("not a simulated profile")));
}

TEST(PerfCli, TwoDifferentDevicesAreRefused) { ExpectRefused("-d iwarp --profile functional", "name two devices"); }

// A perftest client's command line ends with the server's address.
TEST(PerfCli, APerftestClientsServerAddressIsAcceptedAndReportedIgnored) {
  const Outcome o = Perf("write_bw -n 10 192.0.2.7");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.err, HasSubstr("server 192.0.2.7 ignored"));
}

// Runs ndksim-perf with `args` and --out_json, and returns the JSON it wrote (null if it failed).
nlohmann::json PerfJson(const std::string& args, const std::string& name) {
  const std::string path =
      (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()) + ".json")).string();
  const Outcome o = Perf(args + " --out_json --out_json_file " + path);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::ifstream in(path);
  if (!in) return nullptr;
  nlohmann::json j = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  return j;
}

// perftest's -u: the QP timeout exponent sets the ACK timeout, 4.096 us x 2^N.
TEST(PerfCli, TheQpTimeoutExponentSetsTheAckTimeout) {
  const nlohmann::json j = PerfJson("--op write -s 64 -n 20 --phases bw -u 10", "ndksim_perf_u_");
  ASSERT_FALSE(j.is_null());
  EXPECT_DOUBLE_EQ(j["ndksim"]["config"]["ack_timeout_us"].get<double>(), 4.096 * 1024);
}

TEST(PerfCli, TheDefaultAckTimeoutIsExponentFourteen) {
  const nlohmann::json j = PerfJson("--op write -s 64 -n 20 --phases bw", "ndksim_perf_d_");
  ASSERT_FALSE(j.is_null());
  EXPECT_DOUBLE_EQ(j["ndksim"]["config"]["ack_timeout_us"].get<double>(), 4.096 * 16384);
}

TEST(PerfCli, TheCoresOptionIsInTheConfiguration) {
  const nlohmann::json j = PerfJson("--op write -s 64 -n 20 -q 2 --cores 2 --phases bw", "ndksim_perf_c_");
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["ndksim"]["config"]["cores"].get<int>(), 2);
}

TEST(PerfCli, WithNoNoiseTheSeedDoesNotMoveTheLatencies) {
  const nlohmann::json one = PerfJson("--op send -s 8 -n 2000 --phases lat --no-noise --seed 1", "ndksim_perf_nn1_");
  const nlohmann::json two = PerfJson("--op send -s 8 -n 2000 --phases lat --no-noise --seed 2", "ndksim_perf_nn2_");
  ASSERT_FALSE(one.is_null());
  ASSERT_FALSE(two.is_null());
  EXPECT_FALSE(one["ndksim"]["config"]["noise"].get<bool>());
  EXPECT_EQ(one["ndksim"]["results"][0]["latency"], two["ndksim"]["results"][0]["latency"]);
}

TEST(PerfCli, WithNoiseAnotherSeedGivesAnotherTail) {
  const nlohmann::json one = PerfJson("--op send -s 8 -n 2000 --phases lat --seed 1", "ndksim_perf_n1_");
  const nlohmann::json two = PerfJson("--op send -s 8 -n 2000 --phases lat --seed 2", "ndksim_perf_n2_");
  ASSERT_FALSE(one.is_null());
  ASSERT_FALSE(two.is_null());
  EXPECT_NE(one["ndksim"]["results"][0]["latency"], two["ndksim"]["results"][0]["latency"]);
}

TEST(PerfCli, TheDefaultProfileHasATail) {
  const nlohmann::json j = PerfJson("--op send -s 8 -n 2000 --phases lat", "ndksim_perf_n_");
  ASSERT_FALSE(j.is_null());
  EXPECT_TRUE(j["ndksim"]["config"]["noise"].get<bool>());
  const nlohmann::json& l = j["ndksim"]["results"][0]["latency"];
  EXPECT_LT(l["t_min_us"].get<double>(), l["t_typical_us"].get<double>());
  EXPECT_LT(l["t_typical_us"].get<double>(), l["t_max_us"].get<double>());
}

TEST(PerfCli, StdoutEndsWithTheLastResultRowAndARuleAsPerftestsDoes) {
  const Outcome o = Perf("--op write -s 64 -n 10 --phases bw --no-progress");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  std::vector<std::string> lines;
  std::istringstream in(o.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.back().find_first_not_of('-'), std::string::npos) << lines.back();
  EXPECT_EQ(lines[lines.size() - 2].rfind(" 64 ", 0), 0u) << lines[lines.size() - 2];
  EXPECT_THAT(o.err, HasSubstr("Simulator speed"));
}

// ---- bad arguments, each named ---------------------------------------------------------------------

TEST(PerfCli, MoreCoresThanTheProfileHasAreRefusedWithTheLimit) {
  const Outcome o = Perf("--cores 64");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("--cores 64: profile connectx-100g-roce has 32 cores per node"));
}

TEST(PerfCli, TooManyQpsAreRefusedWithTheLimit) {
  const Outcome o = Perf("--qps 100000");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("--qp 100000: profile connectx-100g-roce allows at most 1913 QPs with --tx-depth 128"));
}

TEST(PerfCli, AZeroByteWriteLatencyIsRefusedByName) {
  const Outcome o = Perf("--size 0");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("--size 0: write latency polls the last byte"));
  EXPECT_TRUE(o.out.empty());
}

TEST(PerfCli, ZeroByteReadsAreMeasured) {
  const Outcome o = Perf("--op read --size 0 -n 20");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("\n 0       20 "));
}

TEST(PerfCli, AnUnwritableTracePathFailsBeforeTheRun) {
  const Outcome o = Perf("--size 8 -n 10 --trace /nonexistent-dir/trace.json");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("--trace /nonexistent-dir/trace.json: cannot write the file"));
  EXPECT_TRUE(o.out.empty());
}

TEST(PerfCli, APostListLongerThanTheTxDepthIsRefusedByName) {
  const Outcome o = Perf("-s 8 -l 200 -t 128");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("--post_list 200 does not fit in --tx-depth 128"));
}

TEST(PerfCli, AnUnknownOptionIsNamed) {
  const Outcome o = Perf("--bogus");
  EXPECT_EQ(o.exit_code, 2);  // every usage error, as the README says
  EXPECT_THAT(o.err, HasSubstr("--bogus"));
}

TEST(PerfCli, AnOutOfRangeValueIsNamed) {
  const Outcome o = Perf("--loss 0.9");
  EXPECT_EQ(o.exit_code, 2);  // every usage error, as the README says
  EXPECT_THAT(o.err, HasSubstr("--loss"));
}

TEST(PerfCli, AnUnknownProfileIsNamed) {
  const Outcome o = Perf("--profile cx9");
  EXPECT_EQ(o.exit_code, 2);  // every usage error, as the README says
  EXPECT_THAT(o.err, HasSubstr("cx9"));
}

TEST(PerfCli, ASizeTakesKMAndGSuffixesAsPerftestUsersWriteThem) {
  const nlohmann::json j = PerfJson("--op write -s 64K -n 10 --phases bw", "ndksim_perf_k_");
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["ndksim"]["config"]["sizes"], nlohmann::json::array({65536}));
}

TEST(PerfCli, ASweepTakesSuffixesToo) {
  const nlohmann::json j = PerfJson("--op write --sweep 1k:4K -n 10 --phases bw", "ndksim_perf_ks_");
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["ndksim"]["config"]["sizes"], nlohmann::json::array({1024, 2048, 4096}));
}

TEST(PerfCli, ASizeThatIsNoSizeIsNamed) {
  const Outcome o = Perf("-s 64X");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("64X is not a size in bytes"));
}

// ---- every command line the docs show is valid ---------------------------------------------------

// The arguments of each `scripts/run.sh ...` line of the Markdown files' sh blocks, and of each
// `ndksim-perf ...` they quote inline.
std::vector<std::string> DocumentedCommands() {
  std::vector<std::string> commands;
  std::vector<std::filesystem::path> files = {std::filesystem::path(NDKSIM_SOURCE_DIR) / "README.md"};
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(NDKSIM_SOURCE_DIR) / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line;
    bool in_sh = false;
    while (std::getline(in, line)) {
      if (line.rfind("```", 0) == 0) {
        in_sh = !in_sh && line.rfind("```sh", 0) == 0;
        continue;
      }
      const std::string run = "scripts/run.sh";
      if (in_sh && line.rfind(run, 0) == 0) {
        std::string args = line.substr(run.size());
        args = args.substr(0, args.find('#'));  // a comment follows the command
        commands.push_back(args);
      }
      // `ndksim-perf ...` written inline in prose and tables.
      const std::string quoted = "`ndksim-perf";
      for (std::size_t at = line.find(quoted); at != std::string::npos; at = line.find(quoted, at + 1)) {
        const std::size_t begin = at + quoted.size();
        const std::size_t end = line.find('`', begin);
        if (end != std::string::npos) commands.push_back(line.substr(begin, end - begin));
      }
    }
  }
  return commands;
}

// A documented command, checked without running it. --dry-run goes first: after the command, an
// option that wants a value would take it as its value (a quoted `--out_json` once ran for real
// and wrote a file named "--dry-run").
Outcome DryRun(const std::string& args) { return Perf(args + " --dry-run"); }

TEST(PerfCli, EveryCommandTheDocsShowIsValid) {
  const std::vector<std::string> commands = DocumentedCommands();
  EXPECT_GE(commands.size(), 10u);
  for (const std::string& args : commands) {
    const Outcome o = DryRun(args);
    EXPECT_EQ(o.exit_code, 0) << "scripts/run.sh" << args << ": " << o.err;
    // Nothing a documented command says is dropped (a file name after the --out_json flag would be
    // taken for a perftest server's address).
    EXPECT_THAT(o.err, Not(HasSubstr("ignored:"))) << "scripts/run.sh" << args;
  }
}

// Regression: --out_json took the next option as its file name and wrote a file of that name.
TEST(PerfCli, AnOptionAfterOutJsonFileIsNotTakenForItsFileName) {
  const Outcome o = Perf("--out_json_file --no-progress -n 10 --phases bw");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("not the option --no-progress"));
  EXPECT_FALSE(std::filesystem::exists("--no-progress"));
}

TEST(PerfCli, ADocumentedCommandMissingAnOptionsValueIsInvalidNotRun) {
  const Outcome o = DryRun(" --out_json_file");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_THAT(o.err, HasSubstr("--out_json_file"));
}

}  // namespace
