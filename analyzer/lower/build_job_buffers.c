/* SPDX-License-Identifier: MIT */
/*
 * build_job_buffers.c - the job's buffers and overheads from the train
 * block and its GPU: gradient buckets, offload, the allocator replay's
 * settings and batch shapes, NCCL, CUDA context and workspaces.
 */
#include <stdio.h>
#include <string.h>

#include "analyzer/lower/build_impl.h"
#include "lang/arena.h"
#include "lang/dtypes.h"

/* GPU field @field (skipped without @gpu), the job's `overhead.<field>`
 * over it, @dflt without either. */
static uint64_t overhead(struct eval *ev, const struct decl *gpu, const struct check_job *cj,
			 const char *field, uint64_t dflt)
{
	char k[64];
	struct value v;
	uint64_t u = dflt;

	if (gpu)
		build_gpu_u64(ev, gpu, field, &u);
	snprintf(k, sizeof k, "overhead.%s", field);
	if (check_job_field(cj, k, &v) && v.kind == VAL_NUM)
		num_to_u64(v.num, &u);
	return u;
}

void build_gpu_figures(struct eval *ev, const struct decl *gpu, const struct check_job *cj, struct mem_job *j)
{
	uint64_t mem = 0;

	j->cuda_context_bytes = overhead(ev, gpu, cj, "context", 500ull << 20);
	j->cublas_workspace_bytes = overhead(ev, gpu, cj, "cublas_workspace", 8519680);
	/* an nccl { } record describes the buffers: no GPU's flat figure */
	j->nccl_bytes_per_comm = overhead(ev, check_job_record(cj, "nccl") ? NULL : gpu, cj, "nccl", 0);
	build_gpu_u64(ev, gpu, "memory", &mem);
	j->capacity_bytes = mem;
	mem = 0;
	build_gpu_u64(ev, gpu, "host_memory", &mem);
	j->host_capacity_bytes = mem;
}

/* A count key times an element size, blaming the key if it overflows. */
static uint64_t key_bytes(struct bld *b, const char *k, uint64_t dflt, uint64_t elem)
{
	struct value v;
	uint64_t n = 0;

	if (__builtin_mul_overflow(bld_key_u64(b, k, dflt), elem, &n) && bld_key(b, k, &v))
		bld_overflow(b, "a DeepSpeed bucket's byte count", &v);
	return n;
}

/* fsdp1 { }: FullyShardedDataParallel's arguments with torch's defaults
 * (use_orig_params=False, forward_prefetch=False, BACKWARD_PRE) and
 * no_sync() for accumulation; cpu_offload is CPUOffload(offload_params=True),
 * `offload { params = cpu }` (memory-model.md "FSDP1"). */
static void fsdp1_setup(struct bld *b, struct mem_job *j)
{
	for (const struct field *f = b->cj->decl->record.fields; f; f = f->next)
		j->fsdp1 |= !strcmp(f->name, "fsdp1");	/* an empty fsdp1 { } too */
	j->fsdp1 |= check_job_record(b->cj, "fsdp1");
	j->fsdp1_orig_params = bld_key_bool(b, "fsdp1.use_orig_params", false);
	j->fsdp1_no_sync = bld_key_bool(b, "fsdp1.no_sync", false);
	j->fsdp1_forward_prefetch = bld_key_bool(b, "fsdp1.forward_prefetch", false);
	j->fsdp1_backward_pre = !strcmp(bld_key_sym(b, "fsdp1.backward_prefetch", "backward_pre"), "backward_pre");
	if (!j->fsdp1)
		j->fsdp1_backward_pre = false;
}

void bld_buffers(struct bld *b, struct mem_job *j, int zero)
{
	uint64_t gsz = bld_bytes(b, b->grads, 1), wsz = bld_bytes(b, b->weights, 1);
	const char *off_opt = bld_key_sym(b, "offload.optimizer", "none");
	const char *off_par = bld_key_sym(b, "offload.params", "none");

	fsdp1_setup(b, j);
	if (bld_key_bool(b, "fsdp1.cpu_offload", false) && !strcmp(off_par, "none"))
		off_par = "cpu";

	bool mcore = bld_megatron_job(b, zero);

	/* Megatron-Core (param_and_grad_buffer.py _ParamAndGradBuffer): one
	 * contiguous grad buffer (main_grad), allocated when DDP wraps the model
	 * and zeroed each step; its buckets are views of it: no gradient copy,
	 * no IPG bucket, gradients resident from the first micro-batch */
	j->grad_as_bucket_view = mcore || bld_key_bool(b, "ddp.gradient_as_bucket_view", false);
	/* zero_grad(set_to_none=False) (PyTorch < 2.0 default, HF Trainer then):
	 * zeroed gradients stay allocated through forward (memory-model.md §5.1) */
	j->grads_persistent = mcore || !strcmp(bld_key_sym(b, "zero_grad", "set_to_none"), "zeros");
	j->wgrad_fused = mcore;
	j->optimizer_in_backward = bld_key_bool(b, "optimizer_in_backward", false);
	if (zero >= 1 && !mcore) {
		j->zero_reduce_bucket_bytes = key_bytes(b, "deepspeed.reduce_bucket_size", 500000000, gsz);
		j->overlap_comm = bld_key_bool(b, "deepspeed.overlap_comm", zero == 3);
		j->zero_prefetch_bytes = key_bytes(b, "deepspeed.prefetch_bucket_size", 50000000, wsz);
	}
	j->offload_optimizer = strcmp(off_opt, "none") != 0;
	j->offload_params = strcmp(off_par, "none") != 0;
	j->offload_optimizer_nvme = !strcmp(off_opt, "nvme");
	/* FSDP CPUOffload(offload_params=True) / FSDP2 CPUOffloadPolicy: the
	 * sharded grads go to the CPU with the params, so the optimizer steps
	 * there and its states live there (memory-model.md §7) */
	if (j->offload_params && j->sharding >= MEM_SHARD_FSDP_FULL && !j->offload_optimizer) {
		j->offload_optimizer = true;
		j->offload_optimizer_nvme = j->offload_params_nvme;
	}
	j->offload_params_nvme = !strcmp(off_par, "nvme");
	j->offload_activations = !strcmp(bld_key_sym(b, "offload.activations", "none"), "cpu");
	if (bld_key_bool(b, "megatron.cpu_offloading_activations", true))
		j->offload_first = bld_key_u64(b, "megatron.cpu_offloading_num_layers", 0);
}

/* train.alloc (memory-model.md §5.4).  PyTorch refuses max_split_size_mb
 * below 20 (kLargeBuffer), and so does the checker (RANGE_SPLIT_MB); a
 * job built without it still gets 20 MiB. */
static void alloc_conf(struct bld *b, struct mem_job *j)
{
	struct value v;
	uint64_t mb = bld_key_u64(b, "alloc.max_split_size_mb", 0);
	uint64_t div = bld_key_u64(b, "alloc.roundup_power2_divisions", 0);

	bool conf = bld_key(b, "alloc.max_split_size_mb", &v) ||
		    bld_key(b, "alloc.roundup_power2_divisions", &v) ||
		    bld_key(b, "alloc.garbage_collection_threshold", &v) ||
		    bld_key(b, "alloc.expandable_segments", &v);

	/* a conf key means nothing without the replay: it turns it on; a
	 * torch FSDP job that shards its weights replays unless it says
	 * `replay = false` (memory.h mem_replays_by_default) */
	j->alloc_replay = bld_key_bool(b, "alloc.replay", conf || mem_replays_by_default(j->sharding));
	j->alloc_expandable = bld_key_bool(b, "alloc.expandable_segments", false);
	j->alloc_roundup_divisions = div > (1u << 30) ? 1u << 30 : (uint32_t)div;
	if (mb)
		j->alloc_max_split_bytes = mb < 20 ? 20ull << 20 : mb > (UINT64_MAX >> 20) ?
					   UINT64_MAX : mb << 20;
	if (bld_key(b, "alloc.garbage_collection_threshold", &v) && v.kind == VAL_NUM)
		j->alloc_gc_threshold = num_to_double(v.num);
}

/* train.data (§5.4 "Batch shapes"): padding to the longest sample varies
 * the replay's step lengths from min_seq_len (default 1: nothing is known
 * of the dataset but the bound) to seq_len; a larger one is seq_len. */
static void data_shapes(struct bld *b, struct mem_job *j)
{
	uint64_t s = bld_bound_u64(b, "seq", 1), m = bld_key_u64(b, "data.min_seq_len", 1);

	if (strcmp(bld_key_sym(b, "data.padding", "max_length"), "longest"))
		return;
	j->shape_seq_len = s;
	j->shape_min_seq_len = m < 1 ? 1 : m > s ? s : m;
	m = bld_key_u64(b, "data.later_seq_len", s);
	j->later_seq_len = m >= 1 && m < s ? m : 0;
}

/* The share q of `full` bytes at seq_len that is quadratic in it, from
 * `half` bytes at x = half length / seq_len: half = full ((1-q) x + q x^2).
 * A part that does not grow with seq (a decoder's tgt) comes out below 0:
 * taken as linear. */
static double quad_share(uint64_t full, uint64_t half, double x)
{
	double q;

	if (!full)
		return 0;
	q = ((double)half / (double)full - x) / (x * x - x);
	return q < 0 ? 0 : q > 1 ? 1 : q;
}

/* §5.4 "Batch shapes": which part of each layer's activations grows as
 * seq_len^2 (eager attention's scores, a.s^2) is found by building the job
 * again at half the length.  A half-length build that fails or is shaped
 * otherwise leaves every activation per token. */
void bld_shapes_split(struct eval *ev, struct arena *a, const struct check_job *cj,
			 const struct build_override *ov, struct mem_job *j)
{
	struct build_override h = ov ? *ov : (struct build_override){ .zero = -1 };
	struct build half;
	struct mem_quad *q;
	size_t n = 0;
	double x;

	h.seq = j->shape_seq_len / 2;
	x = (double)h.seq / (double)j->shape_seq_len;
	if (!build_job(ev, a, cj, &h, true, &half) || half.job.nblocks != j->nblocks)
		return;
	for (size_t i = 0; i < j->nblocks; i++) {
		if (half.job.blocks[i].nlayers != j->blocks[i].nlayers)
			return;
		n += j->blocks[i].nlayers;
	}
	q = ARENA_NEW_ARRAY(a, struct mem_quad, n ? n : 1);
	n = 0;
	for (size_t i = 0; i < j->nblocks; i++)
		for (size_t k = 0; k < j->blocks[i].nlayers; k++, n++) {
			const struct mem_layer *l = &j->blocks[i].layers[k], *hl = &half.job.blocks[i].layers[k];

			q[n].save = quad_share(l->saves_bytes, hl->saves_bytes, x);
			q[n].tfwd = quad_share(l->temp_fwd_bytes, hl->temp_fwd_bytes, x);
			q[n].tbwd = quad_share(l->temp_bwd_bytes, hl->temp_bwd_bytes, x);
		}
	j->shape_quad = q;
	j->shape_quad_n = n;
}

/* A count key, 0 if absent; the checker bounds it, memc clamps it. */
static uint32_t key_u32(struct bld *b, const char *k)
{
	uint64_t u = bld_key_u64(b, k, 0);

	return u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

/* NCCL's buffers from its own sizes (mem_comm.c): train.nccl in NCCL's
 * spelling; a flat figure per communicator only where one is written
 * (overhead.nccl, or a GPU's `nccl` when the job has no nccl record). */
static void nccl_conf(struct bld *b, struct mem_job *j)
{
	j->nccl.buffsize = bld_key_u64(b, "nccl.buffsize", 0);
	j->nccl.ll_buffsize = bld_key_u64(b, "nccl.ll_buffsize", 0);
	j->nccl.ll128_buffsize = bld_key_u64(b, "nccl.ll128_buffsize", 0);
	j->nccl.nchannels = key_u32(b, "nccl.nchannels");
	j->nccl.nchannels_per_peer = key_u32(b, "nccl.nchannels_per_net_peer");
	j->nccl.nvls = bld_key_bool(b, "nccl.nvls_enable", false);
	j->nccl.nvls_nchannels = key_u32(b, "nccl.nvls_nchannels");
	j->nccl.nvls_chunksize = bld_key_u64(b, "nccl.nvls_chunksize", 0);
	j->nccl.local_ranks = j->gpus_per_node;
	j->sequence_parallel = bld_bound_u64(b, "sp", 1) > 1;
	j->async_tp = bld_key_bool(b, "parallel.async_tp", false);
	j->tp_saves_gathered = check_tp_saves_gathered(b->cj);
}

void bld_overheads(struct bld *b, struct mem_job *j)
{
	struct value v;

	build_gpu_figures(b->ev, b->cj->cluster.decl, b->cj, j);
	nccl_conf(b, j);
	j->frag_factor = 1.10;
	if (bld_key(b, "overhead.fragmentation", &v) && v.kind == VAL_NUM)
		j->frag_factor = 1.0 + num_to_double(v.num);
	alloc_conf(b, j);
	data_shapes(b, j);
	j->headroom = 0.10;
	if (bld_key(b, "headroom", &v) && v.kind == VAL_NUM)
		j->headroom = num_to_double(v.num);
}
