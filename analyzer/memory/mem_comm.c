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
#include "analyzer/memory/mem_comm.h"
#include "analyzer/memory/mem_internal.h"

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
	/* DTensor's Shard(1) all-gather (_functional_collectives.py
	 * all_gather_tensor) gathers on dim 0 and cats along the sequence: the
	 * dim-0 buffer beside the gathered input the Linear saves. AsyncTP's
	 * fused_all_gather_matmul gathers in place (restride, no cat) */
	if (!job->sequence_parallel || job->tp < 2 || (job->tp_saves_gathered && job->async_tp))
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

/* deep_ep/buffer.py Buffer.get_dispatch_config / get_combine_config: per
 * EP group size, (num_max_nvl_chunked_recv_tokens,
 * num_max_rdma_chunked_send_tokens, num_max_rdma_chunked_recv_tokens) of
 * each Config; the NVL send chunk does not size a buffer. */
struct deepep_cfg {
	uint32_t ranks;
	uint32_t d_nvl_recv, d_rdma_send, d_rdma_recv;
	uint32_t c_nvl_recv, c_rdma_send, c_rdma_recv;
};

static const struct deepep_cfg deepep_cfgs[] = {
	{ 2, 256, 6, 128, 256, 6, 128 },    { 4, 256, 6, 128, 256, 6, 128 },
	{ 8, 256, 6, 128, 256, 6, 128 },    { 16, 288, 20, 128, 288, 12, 128 },
	{ 24, 288, 8, 128, 288, 8, 128 },   { 32, 288, 8, 128, 288, 8, 128 },
	{ 48, 288, 8, 128, 288, 8, 128 },   { 64, 288, 8, 128, 288, 8, 128 },
	{ 96, 480, 12, 128, 480, 8, 128 },  { 128, 560, 12, 128, 560, 8, 128 },
	{ 144, 720, 12, 128, 720, 8, 128 }, { 160, 720, 12, 128, 720, 8, 128 },
};

/* csrc/kernels/configs.cuh NUM_MAX_NVL_PEERS, NUM_WORKSPACE_BYTES; the
 * per-token metadata of config.hpp's hints: SourceMeta (2 ints), top-k
 * indices and weights (kNumMaxTopK 128 x 4 B each), scales (kNumMaxScales
 * 128 x 4 B), one int4. */
#define DEEPEP_NVL_PEERS 8u
#define DEEPEP_WORKSPACE (32ull << 20)
#define DEEPEP_META_PER_TOKEN (8ull + 128 * 4 + 128 * 4 + 128 * 4 + 16)

uint32_t mem_comm_deepep_ranks(const struct mem_job *job)
{
	uint64_t n = (uint64_t)job->ep * (job->etp ? job->etp : job->tp);

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

static const struct deepep_cfg *deepep_cfg(uint32_t ranks)
{
	for (size_t i = 0; i < sizeof deepep_cfgs / sizeof deepep_cfgs[0]; i++)
		if (deepep_cfgs[i].ranks == ranks)
			return &deepep_cfgs[i];
	return NULL;
}

bool mem_comm_deepep_supported(uint32_t ranks)
{
	return deepep_cfg(ranks) != NULL;
}

static uint64_t align128(bool *ovf, uint64_t x)
{
	return mem_mul(ovf, x / 128 + (x % 128 != 0), 128);
}

/* csrc/config.hpp Config::get_nvl_buffer_size_hint (NVSHMEM compiled in). */
static uint64_t deepep_nvl(bool *ovf, uint64_t hidden, uint32_t ranks, uint64_t ch, uint64_t recv)
{
	uint64_t nvl = ranks < DEEPEP_NVL_PEERS ? ranks : DEEPEP_NVL_PEERS;
	uint64_t rdma = ranks / DEEPEP_NVL_PEERS ? ranks / DEEPEP_NVL_PEERS : 1;
	uint64_t per = mem_mul(ovf, ch, nvl);
	uint64_t x = mem_mul(ovf, per, (2 * rdma + 2) * 4);

	return align128(ovf, mem_add(ovf, x, mem_mul(ovf, mem_mul(ovf, per, recv),
						      mem_add(ovf, hidden, DEEPEP_META_PER_TOKEN))));
}

/* Config::get_rdma_buffer_size_hint: 0 within one node; the receive chunk
 * is first rounded up to a multiple of the send chunk (Config's ctor). */
static uint64_t deepep_rdma(bool *ovf, uint64_t hidden, uint32_t ranks, uint64_t ch, uint64_t send,
			    uint64_t recv)
{
	uint64_t per, x;

	if (ranks <= DEEPEP_NVL_PEERS)
		return 0;
	recv = (recv + send - 1) / send * send;
	per = mem_mul(ovf, ch, ranks / DEEPEP_NVL_PEERS);
	x = mem_mul(ovf, per, (DEEPEP_NVL_PEERS * 2 + 2) * 2 * 4);
	x = mem_add(ovf, x, mem_mul(ovf, mem_mul(ovf, per, recv),
				    mem_mul(ovf, mem_add(ovf, hidden, DEEPEP_META_PER_TOKEN), 2)));
	return align128(ovf, mem_add(ovf, x, mem_mul(ovf, per, 2 * 8 * 2)));
}

/* Megatron-Core moe/fused_a2a.py get_buffer: the larger hint of the
 * dispatch and the combine config; csrc/deep_ep.cpp Buffer::Buffer
 * allocates the NVL buffer with its barrier signals and peer pointers (8 x
 * (4 + 8 + 8) B), the workspace with cudaMalloc and the RDMA buffer from
 * NVSHMEM's symmetric heap: none of it through PyTorch's allocator. */
uint64_t mem_comm_deepep_bytes(const struct mem_job *job, bool *ovf)
{
	uint32_t n = mem_comm_deepep_ranks(job);
	const struct deepep_cfg *c = deepep_cfg(n);
	uint64_t h = job->deepep_hidden_bytes, ch = job->deepep_num_sms / 2, nvl, rdma;

	if (!h || !c)
		return 0;
	nvl = deepep_nvl(ovf, h, n, ch, c->d_nvl_recv);
	if (deepep_nvl(ovf, h, n, ch, c->c_nvl_recv) > nvl)
		nvl = deepep_nvl(ovf, h, n, ch, c->c_nvl_recv);
	rdma = deepep_rdma(ovf, h, n, ch, c->d_rdma_send, c->d_rdma_recv);
	if (deepep_rdma(ovf, h, n, ch, c->c_rdma_send, c->c_rdma_recv) > rdma)
		rdma = deepep_rdma(ovf, h, n, ch, c->c_rdma_send, c->c_rdma_recv);
	nvl = mem_add(ovf, nvl, DEEPEP_NVL_PEERS * (4 + 8 + 8));
	return mem_add(ovf, mem_add(ovf, nvl, DEEPEP_WORKSPACE), rdma);
}
