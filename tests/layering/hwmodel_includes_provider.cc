// SPDX-License-Identifier: MIT
// Must not compile: the hardware model has no path to the provider.
#include "provider/driver.h"
