/* SPDX-License-Identifier: MIT */
/* devioctl.h - ndksim's stand-in: CTL_CODE, the transfer methods and the device types, which
 * <wdm.h> has (and defines only if the driver's own IOCTL header has not). */
#include "wdm.h"
