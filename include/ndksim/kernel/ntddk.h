/* SPDX-License-Identifier: MIT */
/* ntddk.h - ndksim's stand-in: the WDK's ntddk.h is wdm.h plus services for non-WDM drivers;
 * everything the kernel environment offers is in wdm.h. */
#ifndef NDKSIM_KERNEL_NTDDK_H_
#define NDKSIM_KERNEL_NTDDK_H_
#include "wdm.h"
#endif /* NDKSIM_KERNEL_NTDDK_H_ */
