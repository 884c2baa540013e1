// SPDX-License-Identifier: MIT
// Must not compile: the hardware model has no path to sim.
#include "sim/node_access.h"
