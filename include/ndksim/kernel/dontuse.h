/* SPDX-License-Identifier: MIT */
/* dontuse.h - ndksim's stand-in. The WDK's deprecates the C library's unsafe string functions in
 * favour of ntstrsafe.h; it declares nothing a driver calls, so here it is empty. */
#ifndef NDKSIM_KERNEL_DONTUSE_H_
#define NDKSIM_KERNEL_DONTUSE_H_
#endif
