/* SPDX-License-Identifier: MIT */
/* A kernel-mode block-storage channel over NDK: what the tests and the benchmark see of its two
 * drivers (an initiator and a target), in plain C types so C++ can include it without the WDK
 * headers. Each driver is a singleton: configure it, load it, read its results while it is loaded. */
#ifndef NDKSIM_EXAMPLES_KERNEL_RPC_RPC_H_
#define NDKSIM_EXAMPLES_KERNEL_RPC_RPC_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RPC_BLOCK_SIZE 512u
/* One request moves at most one page, so an initiator buffer is one page of one fast-register MR. */
#define RPC_MAX_IO_BLOCKS 8u
#define RPC_MAX_QUEUE_DEPTH 16u
#define RPC_MAX_SUBMITTERS 8u

typedef struct RpcTargetConfig {
    uint32_t ipv4;          /* the address it listens on, network byte order */
    uint16_t port;          /* host byte order */
    uint32_t disk_blocks;   /* RPC_BLOCK_SIZE each */
    /* Receives kept posted for requests, 1..RPC_MAX_QUEUE_DEPTH. Fewer than the initiator's queue
     * depth makes the initiator's sends meet receiver-not-ready NAKs and retry. */
    uint32_t receive_depth;
    /* Whether a READ's response takes the lent buffer back with send-and-invalidate, as a WRITE's
     * always does. Off: a plain send, and the initiator invalidates the MR itself (NdkInvalidate),
     * as it does for any response that did not. */
    uint8_t invalidate_reads;
} RpcTargetConfig;

typedef struct RpcInitiatorConfig {
    uint32_t ipv4;          /* the initiator's own address, network byte order */
    uint32_t target_ipv4;   /* network byte order */
    uint16_t port;          /* the target's, host byte order */
    uint32_t submitters;    /* system threads sharing the request slots, 1..RPC_MAX_SUBMITTERS */
    uint32_t queue_depth;   /* request slots, so requests outstanding at once, 1..RPC_MAX_QUEUE_DEPTH */
    /* The workload, in this order: write_count WRITEs of blocks_per_io blocks each to consecutive
     * LBAs from 0, then a READ of each of those ranges (after every WRITE has completed), then
     * echo_count ECHOs. */
    uint32_t write_count;
    uint32_t blocks_per_io; /* 1..RPC_MAX_IO_BLOCKS */
    uint32_t echo_count;
    uint32_t pattern_seed;  /* what RpcPatternByte writes */
} RpcInitiatorConfig;

typedef struct RpcInitiatorResults {
    int32_t status;              /* the first failure (NTSTATUS), or STATUS_SUCCESS */
    uint8_t connected;
    uint8_t done;                /* the workload ran and every NDK object is closed */
    uint64_t requests;           /* in the workload */
    uint64_t completed;          /* requests whose every completion arrived */
    uint64_t succeeded;          /* of those, the ones the target answered with success */
    uint64_t writes;             /* succeeded, by opcode */
    uint64_t reads;
    uint64_t echoes;
    uint64_t duplicate_completions;  /* a request finished a second time */
    uint64_t unexpected_responses;   /* a tag no outstanding request had */
    uint64_t data_mismatches;        /* READs whose data was not what was written */
    uint64_t fast_registers;         /* NdkFastRegister completions */
    uint64_t remote_invalidations;   /* responses that invalidated the request's MR token */
    uint64_t local_invalidations;    /* NdkInvalidate completions, after responses that did not */
    uint64_t flushed_receives;       /* response receives cancelled at disconnect */
    uint64_t max_outstanding;        /* most requests in flight at once */
} RpcInitiatorResults;

typedef struct RpcTargetResults {
    int32_t status;              /* the first failure (NTSTATUS), or STATUS_SUCCESS */
    uint8_t accepted;
    uint8_t torn_down;           /* the connection's QP was flushed and closed after the disconnect */
    uint64_t requests;           /* requests received */
    uint64_t rdma_reads;         /* completed, one per WRITE request */
    uint64_t rdma_writes;        /* completed, one per READ request */
    uint64_t echoes;
    uint64_t responses;          /* response sends completed */
    uint64_t flushed;            /* completions with STATUS_CANCELLED after the flush */
    uint64_t bad_requests;       /* malformed or out of the disk's range: answered with an error */
} RpcTargetResults;

/* Configuration is read by the driver's DriverEntry; call before loading it. */
void RpcTargetConfigure(const RpcTargetConfig *config);
void RpcInitiatorConfigure(const RpcInitiatorConfig *config);
/* Reset by each DriverEntry; readable until the next. */
const RpcTargetResults *RpcTargetGetResults(void);
const RpcInitiatorResults *RpcInitiatorGetResults(void);
/* The target's disk while its driver is loaded (NULL otherwise). */
const uint8_t *RpcTargetDisk(size_t *bytes);
/* The byte the initiator writes at `offset` of block `lba`. */
uint8_t RpcPatternByte(uint32_t seed, uint64_t lba, uint32_t offset);

struct _DRIVER_OBJECT;
struct _UNICODE_STRING;
int32_t RpcTargetDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);
int32_t RpcInitiatorDriverEntry(struct _DRIVER_OBJECT *driver, struct _UNICODE_STRING *registry_path);

#ifdef __cplusplus
}
#endif

#endif
