// SPDX-License-Identifier: MIT
// Must compile (the control for the hwmodel_* probes): the layer reaches its own interface and common.
#include "common/check.h"
#include "hwmodel/device.h"

int main() { return 0; }
