// SPDX-License-Identifier: MIT
// Shared by qp.cc, qp_post.cc and qp_memory.cc: the flags every initiator and memory operation
// accepts, and the QP dispatch table's entries for memory operations (defined in qp_memory.cc) and
// for posting (qp_post.cc).
#pragma once

#include "ndkpi.h"

namespace ndksim::provider::qp_internal {

inline constexpr ULONG kCommonFlags = NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_DEFER;

NTSTATUS Bind(NDK_QP* ndk, PVOID context, NDK_MR* ndk_mr, NDK_MW* ndk_mw, PVOID va, SIZE_T length, ULONG flags);
NTSTATUS FastRegister(NDK_QP* ndk, PVOID context, NDK_MR* ndk_mr, ULONG page_count,
                      const NDK_LOGICAL_ADDRESS* pages, ULONG fbo, SIZE_T length, PVOID base, ULONG flags);
NTSTATUS Invalidate(NDK_QP* ndk, PVOID context, NDK_OBJECT_HEADER* header, ULONG flags);

// The posting entries (defined in qp_post.cc, each with the posting path inlined into it).
NTSTATUS Send(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, ULONG flags);
NTSTATUS SendAndInvalidate(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, ULONG flags, UINT32 remote_token);
NTSTATUS Read(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, UINT64 remote_address, UINT32 remote_token,
              ULONG flags);
NTSTATUS Write(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n, UINT64 remote_address, UINT32 remote_token,
               ULONG flags);
NTSTATUS Receive(NDK_QP* ndk, PVOID context, const NDK_SGE* sgl, ULONG n);

}  // namespace ndksim::provider::qp_internal
