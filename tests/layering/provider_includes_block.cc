// SPDX-License-Identifier: MIT
// Must not compile: the provider never sees a hardware block.
#include "hwmodel/requester.h"
