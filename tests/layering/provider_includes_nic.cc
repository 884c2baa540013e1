// SPDX-License-Identifier: MIT
// Must not compile: the provider sees the NIC only through device.h, never the NIC whole.
#include "hwmodel/nic.h"
