// SPDX-License-Identifier: MIT
// Which simulated core a thread runs on. Every node has `HardwareProfile::host_cores` cores, each a
// timeline of simulated time: what a thread does through the provider (building a WQE, the doorbell
// record, the MMIO doorbell write, polling a CQ) moves the clock of its core on the node it reaches
// forward by the profile's host costs (docs/model.md, "The host CPU").
#pragma once

#include <cstdint>

namespace ndksim {

// The core the calling thread runs on, on every node. A thread that has not been bound is given
// one the first time it asks (directly or by posting or polling): the first such thread in the
// process gets core 0, the next core 1, and so on. Cores are numbered per node, and a number is
// taken modulo the node's `host_cores`, so two threads share a core only when a node has fewer
// cores than threads post to it.
std::uint32_t ThisThreadCore();

// Binds the calling thread to `core` for the scope's lifetime (nestable: the previous binding comes
// back when the scope ends). A single-threaded test uses it to post from several cores:
//
//   { ndksim::ScopedCore on(1); qp->Dispatch->NdkWrite(...); }  // charged to core 1
//
// A scope belongs to the thread that made it; destroy it on that thread.
class ScopedCore {
 public:
  explicit ScopedCore(std::uint32_t core);
  ~ScopedCore();
  ScopedCore(const ScopedCore&) = delete;
  ScopedCore& operator=(const ScopedCore&) = delete;

 private:
  std::uint32_t previous_;
};

}  // namespace ndksim
