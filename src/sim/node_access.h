// SPDX-License-Identifier: MIT
// What the simulator's own tests and fuzzers reach behind a Node: its NIC, to act as a rogue peer
// would (raw management datagrams, unsolicited packets). Not part of the public API.
#pragma once

#include "ndksim/fabric.h"

namespace ndksim::hw {
class Nic;
}

namespace ndksim::sim {

struct NodeAccess {
  static hw::Nic& Nic(Node& node);
};

inline hw::Nic& NicOf(Node& node) { return NodeAccess::Nic(node); }

}  // namespace ndksim::sim
