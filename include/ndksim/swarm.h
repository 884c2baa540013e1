// SPDX-License-Identifier: MIT
// A swarm: many machines, each running threads that keep RDMA READs in flight to every other
// machine over many connected QPs at once, as rc-swarm (efficient/rdma_bench, FaSST's QP
// scalability experiment) does. The number of QPs each NIC serves is the variable: every QP of
// every machine both issues reads and answers its peer's, chosen at random, so a NIC's on-chip
// context caches see all of them in turn. Stepped mode; deterministic for a seed.
//
// Machine m runs `threads` threads. Thread t of machine m has one QP for every machine k and each
// of `vms` slots v, and its QP for (k, v) is connected to thread t's QP on machine k for (m, v). The QPs for its own machine stay unconnected and idle,
// as in rc-swarm, so a machine holds threads * machines * vms QPs, of which
// threads * (machines - 1) * vms carry traffic. Each thread keeps `window` reads in flight: it picks
// a connected QP at random, reads `bytes` from a random offset of its peer thread's buffer into a
// random offset of its own, every read signaled, and posts the next read when a completion frees a
// slot. Its QPs share one CQ; thread t posts and polls on core t of its node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ndksim/fabric.h"
#include "ndksim/time.h"

namespace ndksim {

struct SwarmConfig {
  FabricConfig fabric;                     // profile and seed
  int machines = 6;                        // nodes, joined by one switch
  int threads = 14;                        // per machine, each on a core of its own
  int vms = 1;                             // QPs per thread per machine (rc-swarm's VMs per machine)
  std::size_t window = 24;                 // reads in flight per thread
  ULONG bytes = 32;                        // bytes per read
  std::size_t buffer_bytes = 2u << 20;     // each thread's registered buffer (reads land in it and come from it)
  ULONG read_limit = 16;                   // ORD and IRD of each connection
};

struct SwarmResult {
  Duration measured{};                     // the simulated time the rates are over
  std::vector<double> rate_per_machine;    // reads completed per second by each machine's threads, in M/s
  double MeanRate() const;                 // their mean, in M/s
};

class Swarm {
 public:
  // Builds the fabric and connects every QP (through the NDK connection manager). Throws
  // std::invalid_argument for a configuration the profile cannot hold (naming the limit),
  // HarnessError if a step of the setup fails.
  explicit Swarm(const SwarmConfig& config);
  ~Swarm();
  Swarm(const Swarm&) = delete;
  Swarm& operator=(const Swarm&) = delete;

  // QPs on each machine (threads * machines * vms), and how many of them carry traffic.
  std::size_t QpsPerMachine() const;
  std::size_t ActiveQpsPerMachine() const;
  Fabric& fabric();

  // Runs the threads for `warmup`, then counts the reads each machine completes in the next
  // `measure` of simulated time. Throws HarnessError if a read completes with an error or nothing
  // completes for a second of simulated time.
  SwarmResult Run(Duration warmup, Duration measure);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ndksim
