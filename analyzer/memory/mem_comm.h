/* SPDX-License-Identifier: MIT */
/*
 * mem_comm.h - communication memory outside the caching allocator: NCCL's
 * per-communicator buffers, from the communicators a job creates on each
 * rank (docs/memory-model.md, "Communication memory").
 *
 * The byte counts follow NCCL's own sizing (src/init.cc computeBuffSizes,
 * src/transport/p2p.cc p2pRecvSetup, src/transport/nvls.cc
 * ncclNvlsBufferSetup); the fields are NCCL's environment variables without
 * the NCCL_ prefix.  Zero in a field means NCCL's default.
 */
#ifndef MEMC_ANALYZER_MEM_COMM_H
#define MEMC_ANALYZER_MEM_COMM_H

#include <stdbool.h>
#include <stdint.h>

struct mem_nccl {
	uint64_t buffsize;		/* NCCL_BUFFSIZE: the SIMPLE protocol FIFO, 4 MiB */
	uint64_t ll_buffsize;		/* NCCL_LL_BUFFSIZE: 8 x 512 x 8 x 16 B = 512 KiB */
	uint64_t ll128_buffsize;	/* NCCL_LL128_BUFFSIZE: 120 x 640 x 8 x 8 B */
	uint32_t nchannels;		/* channels of a collective communicator (the
					   "N coll channels" of NCCL_DEBUG=INFO); 16 */
	uint32_t nchannels_per_peer;	/* NCCL_NCHANNELS_PER_NET_PEER: p2p channels to
					   each peer of a send/recv or all-to-all; 2 */
	bool nvls;			/* NCCL_NVLS_ENABLE: NVLink SHARP buffers too */
	uint32_t nvls_nchannels;	/* NCCL_NVLS_NCHANNELS: 16 (NVLS_NCHANNELS_SM90) */
	uint64_t nvls_chunksize;	/* NCCL_NVLS_CHUNKSIZE: 128 KiB */
	uint32_t local_ranks;		/* ranks of one node (NVLS heads); 0 = the group */
};

/* How a communicator moves data: rings of channels (all-reduce,
 * all-gather, reduce-scatter) or point-to-point connections to its peers
 * (pipeline send/recv, ring-attention rotation, all-to-all). */
enum mem_comm_kind { MEM_COMM_COLLECTIVE, MEM_COMM_P2P_RING, MEM_COMM_ALL_TO_ALL };

/* Device bytes NCCL holds for one communicator of `ranks` ranks on one
 * rank (0 when ranks < 2).  *ovf is set on overflow. */
uint64_t mem_comm_nccl_bytes(const struct mem_nccl *n, enum mem_comm_kind kind, uint64_t ranks,
			     bool *ovf);

struct mem_job;

/* One communicator a rank creates: how it moves data and its size. */
struct mem_comm_group {
	enum mem_comm_kind kind;
	uint64_t ranks;
};

/* The process groups of a job that run NCCL operations, one communicator
 * each (ProcessGroupNCCL creates one per group on its first operation):
 * the world group when another dimension splits it, dp x cp (gradients),
 * tp, pp, cp, ep, the replicate group of a partial shard group and the
 * expert-data-parallel group.  `replicas`: dp / dp_shard under a sharding
 * mode (1 = none); `expert_group`: the expert-data-parallel size when the
 * job has expert params (0 = none).  Returns the count (at most
 * MEM_COMM_MAX_GROUPS). */
#define MEM_COMM_MAX_GROUPS 8
unsigned mem_comm_groups(const struct mem_job *job, uint64_t replicas, uint64_t expert_group,
			 struct mem_comm_group out[MEM_COMM_MAX_GROUPS]);

/* NCCL bytes of all those communicators on one rank: the job's flat
 * figure per communicator when it states one (mem_job.nccl_bytes_per_comm),
 * else each communicator's buffers (mem_comm_nccl_bytes). */
uint64_t mem_comm_total(const struct mem_job *job, const struct mem_comm_group *g, unsigned n,
			bool *ovf);

/* Megatron-Core's sequence-parallel gather buffer: the all-gathered input
 * of a column-parallel linear, [s, b, h], in the global memory buffer that
 * lives from the first forward on: the largest body layer input x tp (0
 * without sequence parallelism). */
uint64_t mem_comm_sp_buffer(const struct mem_job *job, bool *ovf);

/* AsyncTP's symmetric-memory workspace of the tp group (outside the
 * caching allocator): the larger of the all-gather shard and two
 * reduce-scatter output chunks, both [s / tp, b, h] of the body (0 without
 * async_tp or with tp = 1). */
uint64_t mem_comm_symm_workspace(const struct mem_job *job, bool *ovf);

/* DeepEP's Buffer as Megatron-Core's flex dispatcher sizes it
 * (fused_a2a.py get_buffer): the NVLink buffer, its 32 MiB workspace and,
 * over more than 8 ranks, the NVSHMEM RDMA buffer, all outside the caching
 * allocator (0 without job->deepep_hidden_bytes). */
uint64_t mem_comm_deepep_bytes(const struct mem_job *job, bool *ovf);
/* The tp x ep group DeepEP runs over, and whether Buffer.get_dispatch_config
 * has a config for that many ranks. */
uint32_t mem_comm_deepep_ranks(const struct mem_job *job);
bool mem_comm_deepep_supported(uint32_t ranks);

#endif /* MEMC_ANALYZER_MEM_COMM_H */
