// SPDX-License-Identifier: MIT
/// @file
/// A swarm: many machines, each running threads that keep RDMA READs in flight to every other
/// machine over many connected QPs at once, as rc-swarm (efficient/rdma_bench, FaSST's QP
/// scalability experiment) does. The number of QPs each NIC serves is the variable: every QP of
/// every machine both issues reads and answers its peer's, chosen at random, so a NIC's on-chip
/// context caches see all of them in turn. Stepped mode; deterministic for a seed.
///
/// Machine m runs `threads` threads. Thread t of machine m has one QP for every machine k and each
/// of `vms` slots v, and its QP for (k, v) is connected to thread t's QP on machine k for (m, v). The QPs for its own machine stay unconnected and idle,
/// as in rc-swarm, so a machine holds threads * machines * vms QPs, of which
/// threads * (machines - 1) * vms carry traffic. Each thread keeps `window` reads in flight: it picks
/// a connected QP at random, reads `bytes` from a random offset of its peer thread's buffer into a
/// random offset of its own, every read signaled, and posts the next read when a completion frees a
/// slot. Its QPs share one CQ; thread t posts and polls on core t of its node.
///
/// Two more patterns measure one NIC's ceilings (Kalia et al., ATC 2016): kInbound, where every
/// machine but machine 0 issues requests and all of them go to machine 0, and kOutbound, where only
/// machine 0 issues requests, to all the others. The operation may be a read, a write or a send
/// (a send's receiver keeps a receive posted per request in flight, and re-posts as they complete).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ndksim/fabric.h"
#include "ndksim/time.h"
#include "ndksim/workload.h"  // Operation

namespace ndksim {

/// Who issues requests to whom.
enum class SwarmPattern : std::uint8_t {
  kAllToAll,  ///< every machine to every other (rc-swarm)
  kInbound,   ///< every machine but 0, to machine 0
  kOutbound,  ///< machine 0, to every other
};

/// What a Swarm is made of: its machines, threads and QPs, and the requests they issue.
struct SwarmConfig {
  FabricConfig fabric;                     ///< profile and seed
  SwarmPattern pattern = SwarmPattern::kAllToAll;  ///< who issues requests to whom
  Operation op = Operation::kRead;         ///< the operation of every request
  int machines = 6;                        ///< nodes, joined by one switch
  int threads = 14;                        ///< per machine, each on a core of its own
  int vms = 1;                             ///< QPs per thread per machine (rc-swarm's VMs per machine)
  std::size_t window = 24;                 ///< reads in flight per thread
  ULONG bytes = 32;                        ///< bytes per request (0 for a header-only write or send)
  std::size_t buffer_bytes = 2u << 20;     ///< each thread's registered buffer (reads land in it and come from it)
  ULONG read_limit = 16;                   ///< ORD and IRD of each connection
};

/// What Swarm::Run measured.
struct SwarmResult {
  Duration measured{};                     ///< the simulated time the rates are over
  std::vector<double> rate_per_machine;    ///< requests completed per second by each machine's threads, in M/s
  std::vector<double> served_per_machine;  ///< requests each machine's NIC answered per second, in M/s
  double MeanRate() const;                 ///< the mean of rate_per_machine over the machines that issue requests
  std::vector<bool> issues;                ///< which machines issue requests
};

/// Machines whose threads keep requests in flight to each other over many QPs at once, as this
/// header's opening comment describes.
class Swarm {
 public:
  /// Builds the fabric and connects every QP (through the NDK connection manager). Throws
  /// std::invalid_argument for a configuration the profile cannot hold (naming the limit),
  /// HarnessError if a step of the setup fails.
  explicit Swarm(const SwarmConfig& config);
  ~Swarm();
  Swarm(const Swarm&) = delete;
  Swarm& operator=(const Swarm&) = delete;

  /// @name QPs

  /// QPs on each machine (threads * machines * vms), and how many of them carry traffic.
  ///@{
  std::size_t QpsPerMachine() const;
  std::size_t ActiveQpsPerMachine() const;
  ///@}
  /// The swarm's fabric.
  Fabric& fabric();

  /// Runs the threads for `warmup`, then counts the requests each machine completes (and answers)
  /// in the next `measure` of simulated time. Throws HarnessError if a request completes with an
  /// error or nothing completes for a second of simulated time.
  SwarmResult Run(Duration warmup, Duration measure);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ndksim
