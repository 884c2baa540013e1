/* SPDX-License-Identifier: MIT */
/* precomp.h - the headers every source file of the NDK sockets driver includes first (the WDK
 * build precompiles them). */
#pragma once

#include <ntddk.h>
#include <wdm.h>
#include <wdmsec.h>
#include <ndkpi.h>
#include <wsk.h>
#include <wskndk.h>
#include <netioapi.h>
#include <ip2string.h>
#include <ntstrsafe.h>

#include "nksioctl.h"
#include "ndksock.h"
#include "driver.h"
