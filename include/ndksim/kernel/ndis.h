/* SPDX-License-Identifier: MIT */
/* ndis.h - ndksim's stand-in, as far as NDK consumers use NDIS: the kernel services (wdm.h), the
 * NDKPI itself with its NDIS glue (ndkpi.h: NDIS_STATUS values, NDIS_OBJECT_HEADER,
 * NDIS_NDK_PROVIDER_CHARACTERISTICS) and the interface-identifier types of netioapi.h. Miniport and
 * protocol driver interfaces are not part of the kernel environment. */
#ifndef NDKSIM_KERNEL_NDIS_H_
#define NDKSIM_KERNEL_NDIS_H_
#include "wdm.h"
#include "ndkpi.h"
#include "netioapi.h"
#include "ip2string.h" /* the WDK's NDIS consumers get the address conversions with it */

#define NDIS_STATUS_FAILURE ((NDIS_STATUS)STATUS_UNSUCCESSFUL)
#define NDIS_STATUS_PENDING ((NDIS_STATUS)STATUS_PENDING)
#define NDIS_STATUS_NOT_SUPPORTED ((NDIS_STATUS)STATUS_NOT_SUPPORTED)
#define NDIS_STATUS_INVALID_PARAMETER ((NDIS_STATUS)STATUS_INVALID_PARAMETER)
#define NDIS_OBJECT_TYPE_DEFAULT 0x80
#endif /* NDKSIM_KERNEL_NDIS_H_ */
