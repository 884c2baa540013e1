/* SPDX-License-Identifier: MIT */
/* wdmsec.h - ndksim's stand-in for the WDK header of the same name (and its library, wdmsec.lib):
 * IoCreateDeviceSecure and the default SDDL strings for device objects.
 *
 * The environment has no user mode and no opens of a device, so nothing ever checks a device's
 * access: IoCreateDeviceSecure checks that its SDDL string is of the form device objects take
 * ("D:P" followed by "(A;;<rights>;;;<SID>)" entries) and then creates the device exactly as
 * IoCreateDevice does. */
#ifndef NDKSIM_KERNEL_WDMSEC_H_
#define NDKSIM_KERNEL_WDMSEC_H_
#include "wdm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel and system only: "D:P". */
extern const UNICODE_STRING SDDL_DEVOBJ_KERNEL_ONLY;
#define SDDL_DEVOBJ_INF_SUPPLIED SDDL_DEVOBJ_KERNEL_ONLY
/* SYSTEM: all access. */
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL;
/* SYSTEM and administrators: all access. */
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_ALL;
/* SYSTEM: all; administrators: read and traverse. */
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RX;
/* SYSTEM: all; administrators: read, write, traverse; everyone: read. */
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_R;
/* As above, and restricted code: read. */
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_R_RES_R;
/* SYSTEM: all; administrators: read, write, traverse; everyone: read, write; restricted code: read. */
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_RW_RES_R;
/* SYSTEM: all; administrators, everyone and restricted code: read, write, traverse. */
extern const UNICODE_STRING SDDL_DEVOBJ_SYS_ALL_ADM_RWX_WORLD_RWX_RES_RWX;

/* PASSIVE_LEVEL. STATUS_INVALID_PARAMETER for a DefaultSDDLString outside the device-object form;
 * otherwise as IoCreateDevice. DeviceClassGuid selects a class's registry override of the string on
 * Windows; the environment has no registry, and ignores it. */
NTSTATUS IoCreateDeviceSecure(PDRIVER_OBJECT DriverObject, ULONG DeviceExtensionSize, PUNICODE_STRING DeviceName,
                              DEVICE_TYPE DeviceType, ULONG DeviceCharacteristics, BOOLEAN Exclusive,
                              PCUNICODE_STRING DefaultSDDLString, LPCGUID DeviceClassGuid,
                              PDEVICE_OBJECT *DeviceObject);
#define IoCreateDeviceSecure(DriverObject, DeviceExtensionSize, DeviceName, DeviceType, DeviceCharacteristics,         \
                             Exclusive, DefaultSDDLString, DeviceClassGuid, DeviceObject)                              \
    NDKSIM_AT(IoCreateDeviceSecure((DriverObject), (DeviceExtensionSize), (DeviceName), (DeviceType),                  \
                                   (DeviceCharacteristics), (Exclusive), (DefaultSDDLString), (DeviceClassGuid),       \
                                   (DeviceObject)))
/* The WDK's wdmsec.h names the library's own routine so; it is the same service. */
#define WdmlibIoCreateDeviceSecure IoCreateDeviceSecure

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* NDKSIM_KERNEL_WDMSEC_H_ */
