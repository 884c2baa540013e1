/* SPDX-License-Identifier: MIT */
/* sdkddkver.h - ndksim's stand-in: the NTDDI version the environment implements, Windows 10 (the
 * NDK 2.0 and WSK level of the services it has), and the constants drivers compare it with. */
#ifndef NDKSIM_KERNEL_SDKDDKVER_H_
#define NDKSIM_KERNEL_SDKDDKVER_H_
#define NTDDI_WIN7 0x06010000
#define NTDDI_WIN8 0x06020000
#define NTDDI_WINBLUE 0x06030000
#define NTDDI_WIN10 0x0A000000
#define NTDDI_WIN10_TH2 0x0A000001
#define NTDDI_WIN10_RS1 0x0A000002
#define NTDDI_WIN10_RS2 0x0A000003
#define NTDDI_WIN10_RS3 0x0A000004
#define NTDDI_WIN10_RS4 0x0A000005
#define NTDDI_WIN10_RS5 0x0A000006
#define NTDDI_WIN10_19H1 0x0A000007
#define NTDDI_WIN10_VB 0x0A000008
#define NTDDI_WIN10_MN 0x0A000009
#define NTDDI_WIN10_FE 0x0A00000A
#define NTDDI_WIN10_CO 0x0A00000B
#define NTDDI_WIN10_NI 0x0A00000C
#ifndef NTDDI_VERSION
#define NTDDI_VERSION NTDDI_WIN10_NI
#endif
#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0A00
#endif
#endif
