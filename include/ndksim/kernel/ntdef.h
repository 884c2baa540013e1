/* SPDX-License-Identifier: MIT */
/* ntdef.h - ndksim's stand-in: the base types, NTSTATUS tests and counted strings, which <wdm.h>
 * has. */
#include "wdm.h"
