/* SPDX-License-Identifier: MIT */
/* The channel's wire messages: a request carried by one send from the initiator, and a response
 * carried by one send (with invalidate, when the request lent an MR) from the target. Both sides
 * are the same machine type, so fields travel in host order. */
#ifndef NDKSIM_EXAMPLES_KERNEL_RPC_RPC_PROTOCOL_H_
#define NDKSIM_EXAMPLES_KERNEL_RPC_RPC_PROTOCOL_H_

#include <wdm.h>

#define RPC_REQUEST_MAGIC 0x31515252u  /* "RRQ1" */
#define RPC_RESPONSE_MAGIC 0x31505252u /* "RRP1" */

typedef enum _RPC_OPCODE {
    RpcOpWrite = 1, /* the target RDMA-reads the lent buffer into the disk */
    RpcOpRead = 2,  /* the target RDMA-writes the disk into the lent buffer */
    RpcOpEcho = 3,  /* no data, no buffer: a round trip */
} RPC_OPCODE;

typedef struct _RPC_REQUEST {
    ULONG Magic;
    USHORT Opcode;
    USHORT Reserved;
    ULONG64 Tag;           /* echoed in the response */
    ULONG64 Lba;
    ULONG Length;          /* bytes, a multiple of RPC_BLOCK_SIZE */
    UINT32 RemoteToken;    /* of the initiator's fast-registered buffer; the response invalidates it */
    ULONG64 RemoteAddress; /* the buffer's first byte, as registered */
} RPC_REQUEST;
C_ASSERT(sizeof(RPC_REQUEST) == 40);

typedef struct _RPC_RESPONSE {
    ULONG Magic;
    NTSTATUS Status;
    ULONG64 Tag;
} RPC_RESPONSE;
C_ASSERT(sizeof(RPC_RESPONSE) == 16);

/* Each message has a slot of this size in its side's message area, so none crosses a page. */
#define RPC_MESSAGE_SLOT 64u
C_ASSERT(sizeof(RPC_REQUEST) <= RPC_MESSAGE_SLOT && sizeof(RPC_RESPONSE) <= RPC_MESSAGE_SLOT);

#endif
