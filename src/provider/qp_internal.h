// SPDX-License-Identifier: MIT
// Shared by qp.cc, qp_post.cc and qp_memory.cc: the flags every initiator and memory operation
// accepts, and the memory operations' entries in the QP dispatch table (defined in qp_memory.cc).
#pragma once

#include "ndkpi.h"

namespace ndksim::provider::qp_internal {

inline constexpr ULONG kCommonFlags = NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_DEFER;

NTSTATUS Bind(NDK_QP* ndk, PVOID context, NDK_MR* ndk_mr, NDK_MW* ndk_mw, PVOID va, SIZE_T length, ULONG flags);
NTSTATUS FastRegister(NDK_QP* ndk, PVOID context, NDK_MR* ndk_mr, ULONG page_count,
                      const NDK_LOGICAL_ADDRESS* pages, ULONG fbo, SIZE_T length, PVOID base, ULONG flags);
NTSTATUS Invalidate(NDK_QP* ndk, PVOID context, NDK_OBJECT_HEADER* header, ULONG flags);

}  // namespace ndksim::provider::qp_internal
