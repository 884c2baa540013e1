/* SPDX-License-Identifier: MIT */
/* guiddef.h - ndksim's stand-in: DEFINE_GUID, and GUID comparison. A header that names a GUID with
 * DEFINE_GUID declares it; the one file that includes <initguid.h> first defines it, as with the
 * WDK. A definition is weak, so two files that both define it (DECLSPEC_SELECTANY's effect) link. */
#ifndef NDKSIM_KERNEL_GUIDDEF_H_
#define NDKSIM_KERNEL_GUIDDEF_H_
#include <string.h>

#include "ndksim/wdk_types.h"

/* A declaration is extern; a definition is extern only in C++, where a const object would
 * otherwise be the file's own (and C warns of an extern object with an initializer). */
#ifdef __cplusplus
#define NDKSIM_EXTERN_C extern "C"
#define NDKSIM_GUID_DEFINITION extern "C"
#else
#define NDKSIM_EXTERN_C extern
#define NDKSIM_GUID_DEFINITION
#endif

/* A GUID argument: a reference in C++, a pointer in C (the same in the ABI). */
#ifndef REFGUID
#ifdef __cplusplus
#define REFGUID const GUID &
#else
#define REFGUID const GUID *
#endif
#endif

#ifndef NDKSIM_GUID_COMPARISON_DEFINED
#define NDKSIM_GUID_COMPARISON_DEFINED
#define InlineIsEqualGUID(rguid1, rguid2) (memcmp((rguid1), (rguid2), sizeof(GUID)) == 0)
#define IsEqualGUID(rguid1, rguid2) (memcmp((rguid1), (rguid2), sizeof(GUID)) == 0)
#endif

#endif /* NDKSIM_KERNEL_GUIDDEF_H_ */

/* Outside the guard: <initguid.h> includes this again to make DEFINE_GUID a definition. */
#undef DEFINE_GUID
#ifdef INITGUID
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8)                                     \
    NDKSIM_GUID_DEFINITION const GUID name __attribute__((weak)) = {l, w1, w2, {b1, b2, b3, b4, b5, b6, b7, b8}}
#else
#define DEFINE_GUID(name, l, w1, w2, b1, b2, b3, b4, b5, b6, b7, b8) NDKSIM_EXTERN_C const GUID name
#endif

