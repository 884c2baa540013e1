/* SPDX-License-Identifier: MIT */
/* A driver built as an image (ndksim_add_driver_image): globals, as drivers keep them, which each
 * machine that loads the image has a set of. Its DriverEntry counts its loads in a global and
 * prints the count; its unload prints it again. */
#include <ntddk.h>

static LONG g_Loads;
static volatile LONG g_Touches;

DRIVER_INITIALIZE DriverEntry;
static DRIVER_UNLOAD ImageDriverUnload;

static VOID ImageDriverUnload(PDRIVER_OBJECT DriverObject) {
    UNREFERENCED_PARAMETER(DriverObject);
    DbgPrint("image driver: unloaded after %ld load(s), %ld touch(es)\n", g_Loads, g_Touches);
}

NTSTATUS DriverEntry(PDRIVER_OBJECT DriverObject, PUNICODE_STRING RegistryPath) {
    UNREFERENCED_PARAMETER(RegistryPath);
    g_Loads += 1;
    InterlockedIncrement(&g_Touches);
    DriverObject->DriverUnload = ImageDriverUnload;
    DbgPrint("image driver: load %ld\n", g_Loads);
    return STATUS_SUCCESS;
}
