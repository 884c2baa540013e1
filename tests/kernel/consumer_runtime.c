/* SPDX-License-Identifier: MIT */
/* The runtime library beyond the services, as drivers write it: interlocked singly linked lists,
 * counted-string conversions, GUID text, the error log, and the names public drivers use besides
 * (excpt.h's try/except, Int32x32To64, the MSVC intrinsics, the NX opt-in, quota pool). */
#include <dontuse.h>
#include <ntdef.h>
#include <ntddk.h>
#include <devioctl.h>
#include <Wdmsec.h>
#include <wsk.h>

#include "consumer_runtime.h"

typedef struct _WORK {
    SLIST_ENTRY Link;
    ULONG Value;
} WORK;

/* Three entries pushed, one popped, the rest flushed: "3,2,1" order of a LIFO, and the depths. */
VOID ScenarioSListKeepsLastInFirstOut(RUNTIME_RESULTS *Results) {
    SLIST_HEADER head;
    static WORK work[3];
    PSLIST_ENTRY entry;
    ULONG i;
    InitializeSListHead(&head);
    for (i = 0; i < 3; ++i) {
        work[i].Value = i + 1;
        (void)InterlockedPushEntrySList(&head, &work[i].Link);
    }
    Results->depth_after_pushes = QueryDepthSList(&head);
    entry = InterlockedPopEntrySList(&head);
    Results->popped = CONTAINING_RECORD(entry, WORK, Link)->Value;
    entry = InterlockedFlushSList(&head);
    Results->flushed = 0;
    for (; entry != NULL; entry = entry->Next) Results->flushed = Results->flushed * 10 + CONTAINING_RECORD(entry, WORK, Link)->Value;
    Results->depth_after_flush = QueryDepthSList(&head);
    Results->pop_of_empty_is_null = InterlockedPopEntrySList(&head) == NULL;
}

/* ANSI to Unicode and back through pool the runtime allocates, freed again: no leak. */
VOID ScenarioStringConversions(RUNTIME_RESULTS *Results) {
    ANSI_STRING ansi;
    UNICODE_STRING unicode;
    ANSI_STRING back;
    WCHAR buffer[8];
    UNICODE_STRING small;
    UNICODE_STRING number;
    ULONG value = 0;
    RtlInitAnsiString(&ansi, "ndk0");
    Results->to_unicode = RtlAnsiStringToUnicodeString(&unicode, &ansi, TRUE);
    Results->unicode_length = unicode.Length;
    Results->to_ansi = RtlUnicodeStringToAnsiString(&back, &unicode, TRUE);
    Results->round_trip_equal = back.Length == 4 && RtlEqualMemory(back.Buffer, "ndk0", 4);
    RtlInitEmptyUnicodeString(&small, buffer, sizeof(buffer));
    RtlCopyUnicodeString(&small, &unicode);
    Results->append = RtlAppendUnicodeToString(&small, L"-x");
    Results->append_too_long = RtlAppendUnicodeToString(&small, L"overflow");
    Results->copy_length = small.Length;
    RtlFreeUnicodeString(&unicode);
    RtlFreeAnsiString(&back);
    RtlInitUnicodeString(&number, L"  -0x1F");
    Results->to_integer = RtlUnicodeStringToInteger(&number, 0, &value);
    Results->integer = value;
}

DEFINE_GUID(GUID_NDKSIM_RUNTIME_TEST, 0x0a1b2c3d, 0x4e5f, 0x6071, 0x82, 0x93, 0xa4, 0xb5, 0xc6, 0xd7, 0xe8, 0xf9);

VOID ScenarioGuidText(RUNTIME_RESULTS *Results, char *Text, ULONG TextSize) {
    UNICODE_STRING text;
    GUID parsed;
    ULONG i;
    static const GUID value = {0x0a1b2c3d, 0x4e5f, 0x6071, {0x82, 0x93, 0xa4, 0xb5, 0xc6, 0xd7, 0xe8, 0xf9}};
    Results->from_guid = RtlStringFromGUID(&value, &text);
    for (i = 0; i < text.Length / sizeof(WCHAR) && i + 1 < TextSize; ++i) Text[i] = (char)text.Buffer[i];
    Text[i] = 0;
    Results->to_guid = RtlGUIDFromString(&text, &parsed);
    Results->guid_round_trip = IsEqualGUID(&parsed, &value);
    RtlFreeUnicodeString(&text);
}

VOID ScenarioErrorLog(VOID) {
    PIO_ERROR_LOG_PACKET entry = (PIO_ERROR_LOG_PACKET)IoAllocateErrorLogEntry(NULL, sizeof(IO_ERROR_LOG_PACKET));
    if (entry == NULL) return;
    entry->ErrorCode = STATUS_IO_DEVICE_ERROR;
    entry->FinalStatus = STATUS_TRANSACTION_ABORTED;
    entry->UniqueErrorValue = 42;
    IoWriteErrorLogEntry(entry);
}

/* The names public drivers use besides: all of these compile and behave as on Windows. */
VOID ScenarioDriverIdioms(RUNTIME_RESULTS *Results) {
    LONG bits[2] = {0, 0};
    PVOID block;
    ExInitializeDriverRuntime(DrvRtPoolNxOptIn);
    Results->product = Int32x32To64(-70000, 70000);
    Results->bit_was_set = _interlockedbittestandset(bits, 33);
    Results->bit_now_set = _interlockedbittestandset(bits, 33);
    Results->bits_word = (ULONG)bits[1];
    Results->popcount = __popcnt16(0xF0F1);
    _mm_mfence();
    block = ExAllocatePoolQuotaZero(NonPagedPoolNx | POOL_QUOTA_FAIL_INSTEAD_OF_RAISE, 16, 'qtoQ');
    Results->quota_zeroed = block != NULL && ((PUCHAR)block)[15] == 0;
    if (block != NULL) ExFreePoolWithTag(block, 'qtoQ');
    Results->ntddi_is_windows10 = NTDDI_VERSION >= NTDDI_WIN10_RS2;
    Results->npi_wsk_data1 = NPI_WSK_INTERFACE_ID.Data1;
    try {
        Results->try_ran = TRUE;
    } except (EXCEPTION_EXECUTE_HANDLER) {
        Results->try_ran = FALSE;
    }
}
