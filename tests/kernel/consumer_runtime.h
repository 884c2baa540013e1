/* SPDX-License-Identifier: MIT */
/* consumer_runtime.c: the runtime library and idioms of public drivers. */
#ifndef NDKSIM_TESTS_KERNEL_CONSUMER_RUNTIME_H_
#define NDKSIM_TESTS_KERNEL_CONSUMER_RUNTIME_H_
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RUNTIME_RESULTS {
    uint16_t depth_after_pushes, depth_after_flush;
    uint32_t popped, flushed;
    int pop_of_empty_is_null;
    int32_t to_unicode, to_ansi, append, append_too_long, to_integer, from_guid, to_guid;
    uint16_t unicode_length, copy_length;
    int round_trip_equal, guid_round_trip;
    uint32_t integer;
    int64_t product;
    unsigned char bit_was_set, bit_now_set;
    uint32_t bits_word;
    uint16_t popcount;
    int quota_zeroed, ntddi_is_windows10, try_ran;
    uint32_t npi_wsk_data1;
} RUNTIME_RESULTS;

void ScenarioSListKeepsLastInFirstOut(RUNTIME_RESULTS *results);
void ScenarioStringConversions(RUNTIME_RESULTS *results);
void ScenarioGuidText(RUNTIME_RESULTS *results, char *text, uint32_t text_size);
void ScenarioErrorLog(void);
void ScenarioDriverIdioms(RUNTIME_RESULTS *results);

#ifdef __cplusplus
}
#endif
#endif
