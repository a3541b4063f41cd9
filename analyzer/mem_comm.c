/* SPDX-License-Identifier: MIT */
/*
 * mem_comm.c - NCCL's device buffers per communicator, and the
 * communicators a job creates (docs/memory-model.md, "Communication
 * memory").
 *
 * NCCL allocates its FIFOs with cuMem, outside PyTorch's caching allocator:
 * they are in nvidia-smi's figure, not in memory_reserved, so they land in
 * the overhead next to the CUDA context.
 */
#include "analyzer/mem_comm.h"
#include "analyzer/mem_internal.h"

/* src/include/device.h: NCCL_STEPS 8, NCCL_LL_LINES_PER_THREAD 8,
 * NCCL_LL_MAX_NTHREADS 512, sizeof(union ncclLLFifoLine) 16;
 * NCCL_LL128_ELEMS_PER_THREAD 120, NCCL_LL128_MAX_NTHREADS 640, 8-byte
 * elements; src/init.cc DEFAULT_BUFFSIZE (1 << 22). */
#define NCCL_STEPS 8u
#define NCCL_DEFAULT_LL (8ull * 512 * NCCL_STEPS * 16)
#define NCCL_DEFAULT_LL128 (120ull * 640 * NCCL_STEPS * 8)
#define NCCL_DEFAULT_SIMPLE (1ull << 22)
#define NCCL_DEFAULT_NVLS_CHUNK (128ull << 10)

static uint64_t or_default(uint64_t v, uint64_t d)
{
	return v ? v : d;
}

/* One connection's receive FIFOs, one per protocol (p2p.cc p2pRecvSetup
 * sums comm->buffSizes[p]; with P2P read the SIMPLE one moves to the
 * sender, which holds it for the connection it sends on: one set per
 * connection either way). */
static uint64_t connection_bytes(const struct mem_nccl *n, bool *ovf)
{
	return mem_add(ovf, mem_add(ovf, or_default(n->ll_buffsize, NCCL_DEFAULT_LL),
				    or_default(n->ll128_buffsize, NCCL_DEFAULT_LL128)),
		       or_default(n->buffsize, NCCL_DEFAULT_SIMPLE));
}

/* nvls.cc ncclNvlsBufferSetup: nvlsChannels x 2 x (chunk x NCCL_STEPS) per
 * head, one head per rank of the node in the communicator. */
static uint64_t nvls_bytes(const struct mem_nccl *n, uint64_t ranks, bool *ovf)
{
	uint64_t heads = n->local_ranks && n->local_ranks < ranks ? n->local_ranks : ranks;
	uint64_t ch = or_default(n->nvls_nchannels, 16);
	uint64_t buf = mem_mul(ovf, or_default(n->nvls_chunksize, NCCL_DEFAULT_NVLS_CHUNK), NCCL_STEPS);

	return mem_mul(ovf, mem_mul(ovf, ch, 2), mem_mul(ovf, buf, heads));
}

uint64_t mem_comm_nccl_bytes(const struct mem_nccl *n, enum mem_comm_kind kind, uint64_t ranks,
			     bool *ovf)
{
	uint64_t conn = connection_bytes(n, ovf), peers;

	if (ranks < 2)
		return 0;
	if (kind == MEM_COMM_COLLECTIVE) {
		/* a ring channel receives from one neighbour: one set per channel */
		uint64_t b = mem_mul(ovf, or_default(n->nchannels, 16), conn);

		return n->nvls ? mem_add(ovf, b, nvls_bytes(n, ranks, ovf)) : b;
	}
	/* send/recv: a connection from every peer it receives from, on
	 * nchannels_per_peer channels each: the two neighbours of a pipeline
	 * or of a rotation ring (one when there are two ranks), all others
	 * under all-to-all */
	peers = kind == MEM_COMM_ALL_TO_ALL ? ranks - 1 : ranks == 2 ? 1 : 2;
	return mem_mul(ovf, mem_mul(ovf, peers, or_default(n->nchannels_per_peer, 2)), conn);
}

static void push(struct mem_comm_group *out, unsigned *k, enum mem_comm_kind kind, uint64_t ranks)
{
	if (ranks < 2 || *k >= MEM_COMM_MAX_GROUPS)
		return;
	out[*k].kind = kind;
	out[*k].ranks = ranks;
	++*k;
}

unsigned mem_comm_groups(const struct mem_job *job, uint64_t replicas, uint64_t expert_group,
			 struct mem_comm_group out[MEM_COMM_MAX_GROUPS])
{
	uint64_t dp_cp = (uint64_t)job->dp * job->cp, world = dp_cp * job->tp * job->pp;
	unsigned k = 0;

	/* the default group is the gradient group itself when nothing else
	 * splits the world (DDP/FSDP with process_group=None, a 1-D
	 * DeviceMesh); otherwise init_process_group's world communicator is
	 * one more (barriers, metrics, checkpoint collectives) */
	if (world > dp_cp)
		push(out, &k, MEM_COMM_COLLECTIVE, world);
	push(out, &k, MEM_COMM_COLLECTIVE, dp_cp);	/* Megatron dp_cp, torchtitan dp_shard_cp */
	push(out, &k, MEM_COMM_COLLECTIVE, job->tp);
	push(out, &k, MEM_COMM_P2P_RING, job->pp);
	push(out, &k, MEM_COMM_P2P_RING, job->cp);	/* ring attention's K/V rotation */
	push(out, &k, MEM_COMM_ALL_TO_ALL, job->ep);	/* token dispatch */
	push(out, &k, MEM_COMM_COLLECTIVE, replicas);	/* HSDP / partial shard group */
	push(out, &k, MEM_COMM_COLLECTIVE, expert_group);
	return k;
}

uint64_t mem_comm_total(const struct mem_job *job, const struct mem_comm_group *g, unsigned n,
			bool *ovf)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < n; i++)
		t = mem_add(ovf, t, job->nccl_bytes_per_comm ? job->nccl_bytes_per_comm :
				    mem_comm_nccl_bytes(&job->nccl, g[i].kind, g[i].ranks, ovf));
	return t;
}

/* The largest layer input of the body blocks: under sequence parallelism
 * the [s / tp, b, h] shard a column-parallel linear gathers. */
static uint64_t max_body_input(const struct mem_job *job)
{
	uint64_t m = 0;

	for (size_t b = 0; b < job->nblocks; b++)
		for (size_t j = 0; job->blocks[b].is_body && j < job->blocks[b].nlayers; j++)
			if (job->blocks[b].layers[j].input_bytes > m)
				m = job->blocks[b].layers[j].input_bytes;
	return m;
}

/* Megatron-Core tensor_parallel/layers.py
 * LinearWithGradAccumulationAndAsyncCommunication: forward all-gathers the
 * input into get_global_memory_buffer().get_tensor(dim_size, dtype, "mpu")
 * and saves the un-gathered input; backward gathers it again into the same
 * buffer. GlobalMemoryBuffer (utils.py) keeps the largest tensor asked for
 * per (name, dtype): one buffer of the largest gathered input, allocated
 * through the caching allocator and never freed. TE's linears and
 * DTensor's SequenceParallel gather into a fresh tensor per call instead:
 * the same bytes, live whenever a layer runs, so one buffer held
 * throughout stands for them too. */
uint64_t mem_comm_sp_buffer(const struct mem_job *job, bool *ovf)
{
	if (!job->sequence_parallel || job->tp < 2)
		return 0;
	return mem_round(job, mem_mul(ovf, max_body_input(job), job->tp));
}

/* torch/distributed/_symmetric_memory/__init__.py get_symm_mem_workspace:
 * one workspace per group, grown to the largest min_size asked for.
 * _pipelined_all_gather_and_consume (fused all-gather + matmul) asks for
 * the local shard's bytes, _pipelined_produce_and_all2all (fused matmul +
 * reduce-scatter) for two output chunks: 2 x [s / tp, b, h]. */
uint64_t mem_comm_symm_workspace(const struct mem_job *job, bool *ovf)
{
	if (!job->async_tp || job->tp < 2)
		return 0;
	return mem_mul(ovf, max_body_input(job), 2);
}
