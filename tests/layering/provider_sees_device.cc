// SPDX-License-Identifier: MIT
// Must compile (the control for the provider_* probes): the driver-facing interface is in reach.
#include "common/check.h"
#include "hwmodel/device.h"
#include "hwmodel/host.h"
#include "hwmodel/host_interface.h"

int main() { return ndksim::hw::kWqeBlockBytes == 64 ? 0 : 1; }
