// SPDX-License-Identifier: MIT
// Must not compile: the provider has no path to sim.
#include "sim/node_access.h"
