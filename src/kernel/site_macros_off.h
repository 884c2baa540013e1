// SPDX-License-Identifier: MIT
// The files that define the C services take back the headers' call-site macros, so the functions
// themselves are declared and defined under their own names.
#pragma once

#undef KeRaiseIrql
#undef KeLowerIrql
#undef KeSetEvent
#undef KeWaitForSingleObject
#undef KeWaitForMultipleObjects
#undef KeDelayExecutionThread
#undef KeAcquireSpinLockRaiseToDpc
#undef KeReleaseSpinLock
#undef KeAcquireSpinLockAtDpcLevel
#undef KeReleaseSpinLockFromDpcLevel
#undef KeAcquireInStackQueuedSpinLock
#undef KeReleaseInStackQueuedSpinLock
#undef KeAcquireInStackQueuedSpinLockAtDpcLevel
#undef KeReleaseInStackQueuedSpinLockFromDpcLevel
#undef KeInsertQueueDpc
#undef PsCreateSystemThread
#undef ExAllocatePool2
#undef ExAllocatePool3
#undef ExAllocatePoolWithTag
#undef ExAllocatePoolWithTagPriority
#undef ExAllocatePoolZero
#undef ExAllocatePoolUninitialized
#undef ExFreePoolWithTag
#undef ExFreePool
#undef ExFreePool2
#undef IoAllocateWorkItem
#undef IoFreeWorkItem
#undef IoQueueWorkItem
#undef IoQueueWorkItemEx
#undef ExQueueWorkItem
#undef IoAllocateMdl
#undef IoFreeMdl
#undef IoCreateDeviceSecure
#undef KeEnterCriticalRegion
#undef KeLeaveCriticalRegion
#undef KeEnterGuardedRegion
#undef KeLeaveGuardedRegion
