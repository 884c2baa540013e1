/* SPDX-License-Identifier: MIT */
/* initguid.h - ndksim's stand-in: included before the headers whose DEFINE_GUIDs a file defines
 * (guiddef.h). Not include-guarded, as the WDK's is not: it turns INITGUID on and DEFINE_GUID into
 * a definition from here on in this file. */
#define INITGUID
#include "guiddef.h"
