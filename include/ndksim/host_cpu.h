// SPDX-License-Identifier: MIT
/// @file
/// Which simulated core a thread runs on. Every node has `HardwareProfile::host_cores` cores, each a
/// timeline of simulated time: what a thread does through the provider (building a WQE, the doorbell
/// record, the MMIO doorbell write, polling a CQ) moves the clock of its core on the node it reaches
/// forward by the profile's host costs (docs/model.md, "The host CPU").
///
/// A thread that is not bound (ScopedCore) gets its core on each node from the order in which
/// threads first posted or polled anywhere: the first unbound thread to do so on a node is its
/// core 0, threads that started later get the cores after it in that order, and threads that
/// started earlier the highest ones (Node::CurrentCore says which). So a test's own thread is core 0
/// of every node it creates, whatever threads the process ran before, and the threads of a
/// threaded-mode test get cores of their own.
#pragma once

#include <cstdint>

namespace ndksim {

/// Binds the calling thread to `core` (taken modulo the node's `host_cores`) on every node, for the
/// scope's lifetime (nestable: the previous binding comes back when the scope ends). A
/// single-threaded test uses it to post from several cores:
///
///     { ndksim::ScopedCore on(1); qp->Dispatch->NdkWrite(...); }  // charged to core 1
///
/// A scope belongs to the thread that made it; destroy it on that thread.
class ScopedCore {
 public:
  /// Binds the calling thread to `core` until this scope ends.
  explicit ScopedCore(std::uint32_t core);
  /// Restores the binding the thread had before.
  ~ScopedCore();
  ScopedCore(const ScopedCore&) = delete;
  ScopedCore& operator=(const ScopedCore&) = delete;

 private:
  std::uint32_t previous_;
};

}  // namespace ndksim
