/* SPDX-License-Identifier: MIT */
/* ntifs.h - ndksim's stand-in: file-system drivers (SMB-style NDK consumers) include it for ntddk.h's
 * services; the file-system interfaces themselves are not part of the kernel environment. */
#ifndef NDKSIM_KERNEL_NTIFS_H_
#define NDKSIM_KERNEL_NTIFS_H_
#include "ntddk.h"
#endif /* NDKSIM_KERNEL_NTIFS_H_ */
