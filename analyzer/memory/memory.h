/* SPDX-License-Identifier: MIT */
/*
 * memory.h - the numeric memory model: per-GPU peak memory of one training step.
 *
 * Input is a fully evaluated, purely numeric job (struct mem_job): the model as
 * blocks of layers, each layer with its parameter tensors and activation bytes
 * for ONE micro-batch on ONE device (already split by TP/SP/CP/EP and already
 * reflecting dtype widths, frozen parameters, LoRA/QLoRA and selective
 * recomputation).  This module owns what depends on the parallel layout and the
 * step's schedule: DP sharding (DDP, ZeRO-1/2/3, FSDP), pipeline placement and
 * in-flight micro-batches, full recomputation, communication buffers, the
 * caching allocator's rounding and the fixed overheads.  It walks one step as a
 * timeline (forward, loss, backward, optimizer step) per pipeline stage and
 * reports, per class of rank, the peak and what is live at it.
 *
 * It does not know about the .mem language, source locations or GPUs: the
 * caller maps results back through the opaque `origin` pointers it set on
 * layers and parameters.  docs/memory-model.md describes every rule with the
 * section of ../shared/design/memory-model.md it comes from.
 *
 * Invariants and ownership:
 *  - All byte counts are exact uint64_t; every sum and product is overflow
 *    checked (MEM_E_OVERFLOW).  Fractional factors (fragmentation) are applied
 *    only when deriving peak_reserved from peak_allocated.
 *  - mem_analyze() never keeps pointers into the job except the `name` and
 *    `origin` pointers copied into struct mem_where; those stay valid as long
 *    as the caller's job data does.
 *  - The result owns one heap array (classes); release it with
 *    mem_result_free().  There is no global state: concurrent calls are safe.
 *  - The cost of mem_analyze() is O(distinct layers x pipeline stages), not
 *    O(repeat): a body block repeated 10^9 times costs as much as one repeated
 *    4 times (the live bytes are linear in the repeat index, §"Folding" in
 *    docs/memory-model.md).
 */
#ifndef MEMC_ANALYZER_MEMORY_H
#define MEMC_ANALYZER_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/memory/mem_comm.h"

/* Data-parallel treatment of model states (memory-model.md §3). */
enum mem_sharding {
	MEM_SHARD_NONE,		/* single replica, no DP communication */
	MEM_SHARD_DDP,		/* torch DDP: reducer buckets hold every gradient (§3.4) */
	MEM_SHARD_ZERO1,	/* optimizer states + master sharded (§3.1) */
	MEM_SHARD_ZERO2,	/* + gradients sharded */
	MEM_SHARD_ZERO3,	/* + weights sharded, gathered per module */
	MEM_SHARD_FSDP_FULL,	/* FULL_SHARD: like ZeRO-3, units + root unit (§3.3) */
	MEM_SHARD_FSDP_GRAD_OP,	/* SHARD_GRAD_OP: units stay gathered fwd -> bwd */
	MEM_SHARD_FSDP_HYBRID,	/* FULL_SHARD inside min(dp, gpus_per_node) ranks */
	MEM_SHARD_FSDP_NO_SHARD,/* DDP-equivalent states, no reducer buckets */
};

/* Peak reserved over peak allocated where the allocator is not replayed
 * (M16: `overhead.fragmentation`, else 1.10). */
double mem_frag_factor(const struct mem_job *job);

/* Weights sharded and gathered per unit: the framework gathers and reduces
 * on streams of its own (the class the allocator replay describes and the
 * flat ratio does not: docs/accuracy.md, fifth pass). */
static inline bool mem_shards_weights(enum mem_sharding m)
{
	return m == MEM_SHARD_ZERO3 || m == MEM_SHARD_FSDP_FULL || m == MEM_SHARD_FSDP_GRAD_OP ||
	       m == MEM_SHARD_FSDP_HYBRID;
}

/* torch FSDP's share of that class (FSDP1 full_shard, shard_grad_op,
 * hybrid_shard; FSDP2's fully_shard, which the builder spells the same
 * with mem_job.fsdp2): the jobs whose reserved figure is the allocator
 * replay's unless `alloc { replay = false }` (§5.4; docs/accuracy.md,
 * "The replay by default"). ZeRO-3 is not: no published ZeRO-3 reserved
 * reading checks the replay there. */
static inline bool mem_replays_by_default(enum mem_sharding m)
{
	return mem_shards_weights(m) && m != MEM_SHARD_ZERO3;
}

enum mem_recompute {
	MEM_RECOMPUTE_NONE,
	MEM_RECOMPUTE_SELECTIVE,	/* caller already dropped core attention from saves */
	MEM_RECOMPUTE_FULL,		/* body repeats keep only their input (§4.5) */
	MEM_RECOMPUTE_SELECTIVE_OP,	/* torchtitan op-level SAC: full, but the outputs of
					   saved ops (mem_layer.op_*) stay stored */
};

enum { MEM_SAC_MM = 1, MEM_SAC_SDPA = 2 };

/* Body repeats re-run their forward in backward (full and op-level SAC). */
static inline bool mem_recomputes_repeat(enum mem_recompute r)
{
	return r == MEM_RECOMPUTE_FULL || r == MEM_RECOMPUTE_SELECTIVE_OP;
}

/* ZB_H1/ZB_H2: zero-bubble schedules (Qi et al., ICLR 2024), B split from W;
 * DUALPIPE/DUALPIPEV: deepseek-ai/DualPipe, two chunks per rank; ZBV,
 * INTERLEAVED_ZB: torch.distributed.pipelining's ScheduleZBVZeroBubble and
 * ScheduleInterleavedZeroBubble (memory-model.md "torch's zero-bubble
 * schedules") */
enum mem_schedule { MEM_PP_1F1B, MEM_PP_INTERLEAVED, MEM_PP_GPIPE, MEM_PP_ZB_H1, MEM_PP_ZB_H2,
		    MEM_PP_DUALPIPE, MEM_PP_DUALPIPEV, MEM_PP_ZBV, MEM_PP_INTERLEAVED_ZB };

/* Two chunks per rank, each with its own in-flight count. */
static inline bool mem_pp_dual(enum mem_schedule s)
{
	return s == MEM_PP_DUALPIPE || s == MEM_PP_DUALPIPEV || s == MEM_PP_ZBV;
}

/* The body over 2 pp stages in a V: rank i holds stages i and 2pp - 1 - i. */
static inline bool mem_pp_v(enum mem_schedule s)
{
	return s == MEM_PP_DUALPIPEV || s == MEM_PP_ZBV;
}

/* vp model chunks per stage, chunk c on stage c mod pp. */
static inline bool mem_pp_interleaved(enum mem_schedule s)
{
	return s == MEM_PP_INTERLEAVED || s == MEM_PP_INTERLEAVED_ZB;
}

enum mem_component {
	MEM_C_WEIGHTS,		/* resident weights (sharded if the mode shards them) */
	MEM_C_GRADIENTS,	/* resident (accumulated / sharded) gradients */
	MEM_C_OPTIMIZER,	/* optimizer states + fp32 master copy */
	MEM_C_ACTIVATIONS,	/* saved tensors + layer temporaries outside the loss region */
	MEM_C_LOGITS,		/* saves/temporaries of loss_region layers (logits + loss) */
	MEM_C_BUFFERS,		/* comm buckets, gathered units, unsharded grads, casts, step temps */
	MEM_C_OVERHEAD,		/* context, cuBLAS, NCCL, fragmentation: device_total - allocated */
	MEM_C__COUNT
};

/* What the MEM_C_BUFFERS bytes are made of (for --explain). */
enum mem_buffer {
	MEM_B_GATHERED,		/* ZeRO-3/FSDP all-gathered (unsharded) parameters */
	MEM_B_UNSHARDED_GRADS,	/* gradients before their reduce-scatter */
	MEM_B_BUCKETS,		/* DDP reducer buckets, ZeRO IPG / reduce buckets */
	MEM_B_CASTS,		/* low-precision weight copies (AMP cache, FP8, dequant) */
	MEM_B_STEP_TEMPS,	/* optimizer-step temporaries (foreach copies) */
	MEM_B__COUNT
};

/* Loading before the step, as the allocator replay plays it (§5.4). */
enum mem_load {
	MEM_LOAD_NONE,		/* not replayed: the step starts from an empty pool */
	MEM_LOAD_META,		/* meta init, each tensor loaded (and quantised) in place */
	MEM_LOAD_FROM_PRETRAINED,/* the whole model on the GPU, then sharded per unit */
	MEM_LOAD_RANK0_CPU,	/* one unit at a time moved to the GPU and sharded */
};

/* Who quantises a 4-bit weight while it is loaded (qlora(quantizer)): the
 * transient each leaves beside the 16-bit source (§5.4 loading). */
enum mem_quantizer {
	MEM_QUANT_BNB,		/* bitsandbytes Params4bit._quantize */
	MEM_QUANT_TORCHAO,	/* torchao >= 0.2 to_nf4, 2^20 elements a chunk */
	MEM_QUANT_TORCHAO_WHOLE,/* torchao 0.1 to_nf4, the whole tensor at once */
	MEM_QUANT_HQQ,		/* HQQ Quantizer.quantize with its proximal optimiser */
};

enum mem_phase { MEM_PHASE_FORWARD, MEM_PHASE_LOSS, MEM_PHASE_BACKWARD, MEM_PHASE_OPTIMIZER,
		 MEM_PHASE__COUNT };

enum mem_status {
	MEM_OK,
	MEM_E_INVALID,		/* a degree is 0, micro_batches 0, frag_factor in (0,1), ... */
	MEM_E_PP_UNEVEN,	/* body repeats cannot be split over pp x vp (mem_pp_split) */
	MEM_E_PP_MICRO_BATCHES,	/* interleaved: micro_batches not a multiple of pp */
	MEM_E_PP_GROUP,		/* interleaved: microbatch_group_size_per_vp_stage outside
				   [pp, m], or m mod it in (0, pp) */
	MEM_E_HYBRID_GROUP,	/* dp not a multiple of the hybrid shard group */
	MEM_E_OVERFLOW,		/* a byte count exceeds 2^64 - 1 */
	MEM_E_NOMEM,
	MEM_E_EXPERT_GROUP,	/* ep x etp does not divide dp_shard x cp x tp */
	MEM_E_PP_DUALPIPE,	/* DualPipe(V).step's asserts: pp even (DualPipe), micro_batches
				   even (DualPipe) and at least 2 pp (mem_pp_dual_rule) */
};

/* Which model a parameter belongs to: the job's (sharded and gathered with
 * its units), or a frozen model prepared apart from it, gathered only
 * while its own forward runs (never in the step): TRL's reference and
 * reward models (trl/models/utils.py prepare_deepspeed keeps stage 3,
 * prepare_fsdp wraps it in an FSDP of its own; PPOTrainer under FSDP
 * moves them whole to the GPU, ppo_trainer.py `.to(device)`). */
enum mem_engine {
	MEM_ENGINE_JOB,
	MEM_ENGINE_APART,	/* sharded as the job's weights are */
	MEM_ENGINE_APART_ZERO3,	/* sharded under ZeRO-3; whole under FSDP */
};

/* One parameter tensor of ONE layer instance, already split by TP/EP: its size
 * on one device before DP sharding.  Fields for frozen tensors (!trainable):
 * grad, master, state and step temps are ignored. */
struct mem_param {
	const char *name;
	const void *origin;		/* opaque, for the caller's diagnostics */
	uint64_t numel;
	uint64_t weight_bytes;		/* stored weight (policy dtype, or NF4 bytes incl. absmax) */
	uint64_t grad_bytes;		/* resident gradient (accumulation dtype) */
	uint64_t master_bytes;		/* fp32 master copy kept by the optimizer; 0 if none */
	uint64_t state_bytes;		/* all optimizer state tensors of this param together */
	uint64_t paged_state_bytes;	/* bitsandbytes paged states (cudaMallocManaged): outside
					   the allocator, not in state_bytes */
	uint64_t step_temp_bytes;	/* optimizer-step temporaries (foreach sqrt copy, fp32 grad copy) */
	bool step_temp_grouped;		/* true: temps of all tensors live together (foreach) */
	uint64_t gather_bytes;		/* ZeRO-3/FSDP unsharded copy (param dtype); 0 = weight_bytes */
	uint64_t gather_grad_bytes;	/* unsharded grad before reduce-scatter (+fp32 reduce copy);
					   0 = grad_bytes.  Used by ZeRO-2/3 and FSDP. */
	uint64_t cast_bytes;		/* transient low-precision copy made while the layer runs */
	bool cast_saved;		/* AMP: the cast lives from forward to this layer's backward */
	bool cast_each;			/* a 4-bit weight's dequantised copy, made per matmul and
					   freed after it: a layer holds its largest, not the sum */
	uint8_t load_quantizer;		/* enum mem_quantizer: who packs load_bytes into the weight */
	uint64_t resident_bytes;	/* kept all step beside the weight, never sharded: FP8
					   weight caches and scaling state (build_fp8.c) */
	bool trainable;
	bool replicated_dp;		/* never partitioned (ZeRO-3 persistence threshold) */
	bool expert;			/* an MoE expert weight: sharded over the expert-data-parallel
					   group, not the dense one (mem_expert_group) */
	uint8_t engine;			/* enum mem_engine: frozen, of a model prepared apart
					   (rl { }); in the padding before shard_group */
	uint32_t shard_group;		/* sharding group size; 0 = the job's (mem_shard_group, or
					   mem_expert_group for expert params) */
	uint64_t acc_grad_bytes;	/* FSDP2 without gradient sync: the unsharded gradient kept
					   to the last micro-batch (unsharded_accumulated_grad in
					   reduce_dtype); 0 = gather_grad_bytes */
	uint64_t quant_state_bytes;	/* of weight_bytes, a bitsandbytes 4-bit weight's QuantState
					   (absmax and its second level): attributes of the
					   Params4bit, outside the FlatParameter, so FSDP/ZeRO-3
					   neither shard nor offload them */
	uint64_t load_bytes;		/* the tensor as loaded onto the GPU when that differs
					   from its stored form (a 4-bit weight's 16-bit source,
					   quantised there); 0 = its stored bytes.  Trace only. */
};

/* One layer instance; activation bytes are for ONE micro-batch on one device. */
struct mem_layer {
	const char *name;
	const void *origin;
	const struct mem_param *params;
	size_t nparams;
	uint64_t saves_bytes;		/* kept from forward to backward */
	uint64_t input_bytes;		/* the layer input: what full recompute stores per repeat */
	uint64_t input_saved_bytes;	/* part of saves_bytes that is the input tensor itself:
					   the stored checkpoint input shares it (§4.5) */
	uint64_t temp_fwd_bytes;	/* transients alive only while its forward runs */
	uint64_t temp_bwd_bytes;	/* transients alive only while its backward runs */
	bool loss_region;		/* saves/temps count as MEM_C_LOGITS */
	/* `matmul` temps declared (head.mem): the layer's per-call weight copy
	 * (MatMul4Bit dequantises per call) exists at an instant of its own,
	 * before the loss region in forward and after it in backward, where the
	 * layer holds mm_fwd/mm_bwd_bytes (its saves and temps outside the loss
	 * region + those temps) instead of its saves and temps (mem_timeline.c) */
	bool mm_split;
	uint64_t mm_fwd_bytes, mm_bwd_bytes;
	/* saves tagged op(mm) / op(sdpa), for op-level SAC: op_mm[k] adds the
	 * layer's (k+1)-th, (k+3)-th, ... mm output (the block's parity decides
	 * which half torchtitan keeps), op_mm_count their number */
	uint64_t op_mm[2], op_sdpa;
	uint64_t op_mm_count;
	/* optional: each saved tensor's bytes in the order forward makes them
	 * (they sum to saves_bytes); only the allocator replay's trace reads
	 * them, to allocate each save as its own block (§5.4) */
	const uint64_t *save_parts;
	size_t nsave_parts;
	/* optional, the same for the temporaries (sum: temp_fwd/bwd_bytes) */
	const uint64_t *temp_fwd_parts, *temp_bwd_parts;
	size_t ntemp_fwd_parts, ntemp_bwd_parts;
	/* a weight tied to an earlier layer's (the LM head reading the token
	 * embedding's): the gradient this layer makes of it, held in the
	 * weight's AccumulateGrad input buffer from this layer's backward
	 * until the earlier layer's (0: frozen); on that earlier layer, the
	 * bytes whose hold its backward ends (docs/memory-model.md) */
	uint64_t tied_grad_bytes, tied_grad_end_bytes;
	/* of this layer's tensors, the model's output (`output`: the logits
	 * the loop or a pipeline stage receives from forward), one micro-batch:
	 * a transient of the layer, or (saved) part of saves_bytes */
	uint64_t output_bytes, output_saved_bytes;
	/* what a deferred weight gradient (DualPipe's WeightGradStore) holds
	 * from this layer's backward to its W pass, one micro-batch: its trained
	 * Linears' inputs and the gradients of their outputs (build.c) */
	uint64_t wgrad_bytes;
	/* of it, the Linears' output gradients: what torch.distributed.pipelining's
	 * stage_backward_input keeps (param_groups' "grads") until the W */
	uint64_t wgrad_out_bytes;
};

/* Under data.padding = longest: the share of a layer's saves_bytes,
 * temp_fwd_bytes and temp_bwd_bytes that grows as seq_len^2 (eager
 * attention's scores); the rest grows per token.  The replay's shorter
 * steps scale by them (§5.4 "Batch shapes"). */
struct mem_quad {
	double save, tfwd, tbwd;
};

/* A run of layers repeated `repeat` times.  Body blocks are the transformer
 * blocks: split over pipeline stages, and one repeat is the checkpoint unit and
 * the ZeRO-3/FSDP wrapping unit.  Other blocks go with the stage of the body
 * repeat before them (stage 0 if none) and form FSDP's root unit. */
struct mem_block {
	const struct mem_layer *layers;
	size_t nlayers;
	uint64_t repeat;
	bool is_body;
};

struct mem_job {
	const struct mem_block *blocks;
	size_t nblocks;
	uint32_t dp, tp, pp, cp, ep;	/* degrees, each >= 1; world = dp x tp x pp x cp */
	uint32_t vp;			/* model chunks per GPU (interleaved); 1 otherwise */
	uint32_t etp;			/* expert tensor parallel degree; 0 = tp (Megatron's default) */
	uint32_t dp_shard;		/* dp ranks of one shard group (torchtitan dp_shard; the
					   rest, dp / dp_shard, replicate); 0 = dp, or the node's
					   ranks under FSDP hybrid_shard */
	uint32_t gpus_per_node;		/* hybrid shard group; 0 = dp */
	enum mem_schedule schedule;
	/* Megatron-Core's uneven split (get_num_layers_to_build): body repeats on
	 * the first / last stage, 0 = split evenly; the embedding / the loss
	 * counted as one layer of the first / last model chunk */
	uint64_t first_stage_layers, last_stage_layers;
	bool pp_account_embedding, pp_account_loss;
	/* parallel { stage_layers }: body repeats of every model chunk (virtual
	 * stage) in stage order, the embedding on the first, the loss on the
	 * last; NULL: the rule above makes them (mem_pp_chunk_layers) */
	const uint64_t *stage_layers;
	uint32_t nstage_layers;
	uint64_t micro_batches;		/* per optimizer step per DP rank (>= 1) */
	uint64_t pp_group;		/* interleaved: Megatron-Core's
					   microbatch_group_size_per_vp_stage; 0 = pp */
	enum mem_recompute recompute;
	unsigned sac_ops;		/* SELECTIVE_OP: MEM_SAC_* ops whose outputs stay stored */
	bool sac_every_other_mm;	/* torchtitan's rule: of the mms, only the odd ones */
	/* which body repeats the recompute mode applies to; the others run as
	 * under none. every: torchtitan's layer SAC, the repeats whose 1-based
	 * index is a multiple (0: all); first: Megatron --recompute-method block,
	 * the first repeats of each pipeline chunk (0: all) */
	uint64_t recompute_every, recompute_first;
	enum mem_sharding sharding;
	/* FSDP2 (fully_shard, mem_fsdp.c): reshard_after_forward as the ranks a
	 * unit keeps its parameters over between its forward and backward: 0 =
	 * the sharding mode's own, 1 = False (kept gathered), N = an int (1/N of
	 * the gathered copy kept); no_sync: set_requires_gradient_sync(False)
	 * until the last micro-batch (unsharded gradients accumulate); keep:
	 * set_reshard_after_backward(False), as torch.distributed.pipelining does */
	uint32_t fsdp_reshard_to;
	bool fsdp_no_sync, fsdp_keep_after_backward;
	bool fsdp2;			/* an fsdp2 record: fully_shard's all-gather buffers */
	bool fsdp_split_root;		/* the non-body layers before the body and those after it
					   are two units of their own, not the root's */
	bool grad_as_bucket_view;	/* DDP gradient_as_bucket_view=True */
	bool keep_output;		/* train.keep_output: the loop holds each micro-batch's
					   output (mem_layer.output_bytes, output_saved_bytes)
					   from its forward until after the optimizer step */
	bool optimizer_in_backward;	/* torchtune optimizer_in_bwd: each parameter is stepped,
					   and its gradient freed, as soon as the gradient exists */
	bool grads_persistent;		/* grads exist before backward (Megatron main_grad,
					   zero_grad(set_to_none=False)) */
	uint64_t zero_reduce_bucket_bytes; /* ZeRO-1/2 IPG bucket, ZeRO-3 reduce bucket (bytes) */
	bool overlap_comm;		/* ZeRO-1/2: two IPG buckets */
	uint64_t zero_prefetch_bytes;	/* ZeRO-3 prefetch cap (bytes); FSDP prefetches a unit */
	bool offload_optimizer;		/* states, master (and sharded grads) live on the host */
	bool offload_params;		/* ZeRO-3/FSDP sharded weights live on the host */
	bool offload_optimizer_nvme;	/* ... on NVMe (ZeRO-Infinity), staged through pinned buffers */
	bool offload_params_nvme;
	/* activation offload (offload { activations = cpu }: torchtune OffloadActivations,
	   Unsloth's offloaded checkpointing): the stored activations of body repeats other
	   than the running one live in pinned host memory */
	bool offload_activations;
	/* Megatron --cpu-offloading-num-layers N (Transformer Engine cpu_offload.py
	   DefaultOffloadSynchronizer): the stored activations of the first N body
	   repeats live in pinned host memory, the rest on the GPU; 0 = off */
	uint64_t offload_first;
	/* torch FSDP1 (train.fsdp1, analyzer/memory/mem_fsdp1.c); all false without the record */
	bool fsdp1;			/* the record is given: FSDP1's prefetch rules below */
	bool fsdp1_orig_params;		/* use_orig_params: a unit holding a trainable parameter
					   keeps a gradient for its whole FlatParameter */
	bool fsdp1_no_sync;		/* accumulation under no_sync(): unsharded grads accumulate */
	bool fsdp1_forward_prefetch;	/* forward_prefetch: the next unit gathered in forward */
	bool fsdp1_backward_pre;	/* backward_prefetch = BACKWARD_PRE: and in backward */
	uint64_t host_capacity_bytes;	/* RAM of one node (gpu host_memory); 0 = unknown */
	bool no_rounding;		/* reference checks: do not round tensors to 512 B */
	uint64_t cuda_context_bytes;
	uint64_t cublas_workspace_bytes;
	uint64_t nccl_bytes_per_comm;	/* a flat figure per communicator; 0: from `nccl` */
	struct mem_nccl nccl;		/* NCCL's buffer sizes (mem_comm.h) */
	bool sequence_parallel;		/* Megatron SP: the gathered input lives in the global
					   memory buffer (mem_comm_sp_buffer) */
	bool async_tp;			/* torch symmetric-memory workspace per tp group */
	bool tp_saves_gathered;		/* torch's DTensor plan (a job with fsdp2 keys): the
					   column-parallel Linears save the gathered input */
	/* Megatron's flex dispatcher (moe_token_dispatcher_type = flex): DeepEP's
	   Buffer over the tp x ep group, sized for get_hidden_bytes (mem_comm.c);
	   0 = none */
	uint64_t deepep_hidden_bytes;
	uint32_t deepep_num_sms;	/* Buffer.num_sms (moe_flex_dispatcher_num_sms, 20) */
	bool pp_stage_buffers;		/* torch.distributed.pipelining's PipelineStage: receive
					   buffers per micro-batch, outputs kept to backward */
	bool pp_return_outputs;		/* ... and step(return_outputs=True): the last stage keeps
					   every micro-batch's output to the end of the step */
	double frag_factor;		/* reserved/allocated; 0 = 1.10 (§5.3.4); else >= 1 */
	bool alloc_replay;		/* reserved from the caching-allocator replay (§5.4) */
	uint64_t alloc_max_split_bytes;	/* PYTORCH_CUDA_ALLOC_CONF max_split_size; 0 = unset */
	uint32_t alloc_roundup_divisions; /* roundup_power2_divisions; 0 = off */
	double alloc_gc_threshold;	/* garbage_collection_threshold; 0 = off */
	bool alloc_expandable;		/* expandable_segments:True */
	bool wgrad_fused;		/* the replay's trace: a Megatron-Core layer's gradient
					   is added into main_grad in place, no .grad beside it
					   (gradient_accumulation_fusion) */
	uint64_t shape_seq_len;		/* data.padding = longest: the replay's steps are
					   padded to lengths from shape_min_seq_len to this
					   (seq_len); 0: every step at seq_len (§5.4) */
	uint64_t shape_min_seq_len;
	uint64_t later_seq_len;		/* data { later_seq_len } below seq_len: the micro-batches
					   after the run's first (lit-gpt 2023 forces its longest
					   sample into iteration 0) are this long; 0 = seq_len */
	const struct mem_quad *shape_quad; /* [layers of blocks[0], blocks[1], ...];
					   NULL: every activation per token */
	size_t shape_quad_n;
	enum mem_load load;		/* how the weights reach the GPU before the step: the
					   replay runs that loading first (§5.4) */
	uint64_t capacity_bytes;	/* usable device memory; 0 = unknown */
	double headroom;		/* requested free fraction, e.g. 0.10 */
	bool phase_series;		/* fill mem_class.series (the HTML chart); off: not paid */
	bool no_explain;		/* leave mem_class.explain* empty: a what-if variant
					   that is never printed does not format them */
	uint64_t engine_bytes;		/* a colocated generation engine (vLLM) outside the
					   trainer's allocator: in the device total */
	bool walk_every_segment;	/* tests: walk each pipeline chunk on its own, not
					   consecutive chunks of a stage as one run */
};

/* One instant of the timeline. */
struct mem_where {
	enum mem_phase phase;
	bool backward_pass;	/* LOSS phase: in the loss layers' backward (else their forward) */
	bool recompute;		/* BACKWARD phase: re-running a checkpointed block's forward */
	bool accumulating;	/* micro-batch >= 2: accumulated gradients resident */
	size_t block;		/* index into job->blocks; SIZE_MAX for the optimizer step */
	uint64_t iteration;	/* 0-based repeat index within the block */
	size_t layer;		/* index into the block's layers */
	const char *layer_name;
	const void *origin;
	uint64_t unit;		/* 1-based body repeat across the model ("layer 40"); 0 outside */
};

/* The highest instant of one phase of one kind of micro-batch: what each
 * component holds there (mem_job.phase_series). */
struct mem_phase_point {
	uint64_t allocated;		/* 0: the phase does not occur in this class */
	uint64_t c[MEM_C__COUNT];	/* [OVERHEAD] stays 0: allocated bytes only */
	struct mem_where where;
};

#define MEM_EXPLAIN_LEN 224

/* One class of ranks: one pipeline stage, or several stages with identical figures. */
struct mem_class {
	uint32_t stage;			/* first stage of the class (0-based) */
	uint32_t nstages;		/* stages merged into this class */
	uint64_t ranks;			/* nstages x dp x tp x cp */
	uint64_t chunks_in_flight;	/* model-chunk micro-batches holding activations (§4.6) */
	uint64_t body_layers;		/* body repeats on the stage (its chunks': mem_pp_chunk_layers) */
	/* Activations kept from forward to backward by one micro-batch (all vp
	 * chunks), and by all in flight at the end of the warm-up: they exist
	 * even when the peak (at_peak) falls where they are freed. */
	uint64_t stored_act, stored_logits;
	uint64_t stored_act_in_flight, stored_logits_in_flight;
	uint64_t persistent[MEM_C__COUNT]; /* resident across steps: states, DDP/ZeRO-3 buckets */
	uint64_t at_peak[MEM_C__COUNT];	/* live at the peak; [OVERHEAD] = device - allocated */
	uint64_t buffers_at_peak[MEM_B__COUNT];
	uint64_t phase_peak[MEM_PHASE__COUNT]; /* highest allocated bytes per phase */
	/* [accumulating][phase]: the first micro-batch (and the optimizer step),
	 * then one with accumulated gradients; zero unless job->phase_series. */
	struct mem_phase_point series[2][MEM_PHASE__COUNT];
	uint64_t peak_allocated;	/* torch.cuda.max_memory_allocated */
	uint64_t peak_reserved;		/* torch.cuda.max_memory_reserved */
	uint64_t device_total;		/* nvidia-smi: reserved + overheads + paged_bytes */
	uint64_t paged_bytes;		/* paged optimizer states in unified memory, resident on
					   the device; outside peak allocated/reserved */
	uint64_t engine_bytes;		/* mem_job.engine_bytes: in device_total */
	uint64_t overhead_context, overhead_cublas, overhead_nccl, overhead_frag;
	uint32_t ncomms;		/* communicators counted for NCCL */
	bool replayed;			/* peak_reserved comes from the allocator replay */
	bool alloc_oom;			/* the replay failed a request at capacity */
	uint64_t alloc_oom_request;	/* its bytes */
	const char *alloc_oom_what;	/* the layer (or "optimizer step") that asked */
	uint64_t alloc_retries;		/* cache flushes the replay needed near capacity */
	uint64_t replay_setup_reserved;	/* replayed: peak reserved of the loading and setup,
					   before the first step (phases.c's loading) */
	uint64_t replay_allocated;	/* replayed: the trace's own peak allocated (what
					   the shift to peak_allocated makes up, §5.4) */
	uint64_t host_bytes;		/* per rank: offloaded state in (pinned) host RAM plus
					   the NVMe staging buffers (§7); 0 without offload */
	uint64_t nvme_bytes;		/* per rank: offloaded state on NVMe */
	uint64_t capacity;
	bool fits;			/* capacity == 0 || device_total - paged_bytes <= capacity */
	uint64_t paged_evicted;		/* fits, but device_total over capacity by this: paged
					   states the driver keeps on the host */
	bool fits_headroom;		/* device_total <= capacity x (1 - headroom) */
	double headroom;		/* (capacity - device_total) / capacity; 0 if unknown */
	struct mem_where peak;
	char explain[MEM_C__COUNT][MEM_EXPLAIN_LEN];
	char explain_peak[MEM_EXPLAIN_LEN];
};

struct mem_result {
	struct mem_class *classes;	/* in stage order */
	size_t nclasses;
	uint64_t params_total;		/* sum of numel over all layer instances (one device's TP shard) */
	uint64_t params_trainable;
};

/* Analyze `job`; on MEM_OK `out` holds the classes (free with mem_result_free),
 * on error `out` is empty. */
enum mem_status mem_analyze(const struct mem_job *job, struct mem_result *out);
void mem_result_free(struct mem_result *res);

/* Scratch memory reused across analyses (the compiled model's variants):
 * every block of one mem_analyze_ws() comes from `buf`; what does not fit
 * is taken from the heap for that call and makes the next call's `buf`
 * big enough, so a caller that analyses many jobs stops allocating once
 * it has seen the largest.  Zero-initialise; release with mem_ws_free(). */
struct mem_pcache;

/* A listener on one analysis (the compiled model's plans, analyzer/model/
 * compiled.c): every instant the walk weighs for the peak, in the order it
 * weighs them, with what the scenario holds there (scenario 0: the first
 * micro-batch and the optimizer step; 1: a later micro-batch), then each
 * stage's class as analysed, before stages merge into classes.  Stages
 * come in order; the instants before a stage's call are that stage's. */
struct mem_rec {
	void (*instant)(struct mem_rec *r, int scenario, enum mem_phase phase, uint64_t total,
			const uint64_t c[MEM_C__COUNT], const uint64_t b[MEM_B__COUNT],
			const struct mem_where *where);
	void (*stage)(struct mem_rec *r, const struct mem_class *k);
};

struct mem_ws {
	unsigned char *buf;
	size_t cap, used;
	size_t spilled;			/* bytes asked past cap during this call */
	void *heap;			/* list of this call's heap blocks */
	struct mem_pcache *pcache;	/* per-layer parameter costs of the last call, reused
					   where the parameters and what they read are equal */
	uint64_t pcache_hits;		/* layers whose cost came from it (the tests' check) */
	struct mem_rec *rec;		/* NULL, or told every instant and stage */
};

/* mem_analyze() with its scratch (and out->classes) in `ws`: the result
 * lives until the next call with the same ws; never mem_result_free() it. */
enum mem_status mem_analyze_ws(const struct mem_job *job, struct mem_ws *ws,
			       struct mem_result *out);
void mem_ws_free(struct mem_ws *ws);

/* The figures of class @k that follow from its peak_allocated, overheads,
 * paged and engine bytes (what mem_analyze does last): peak_reserved
 * (unless replayed), overhead_frag, device_total, at_peak[MEM_C_OVERHEAD],
 * capacity, fits and headroom.  Then @k appended to @res, or merged into
 * its last class where it is the next stage with identical figures. */
void mem_class_totals(const struct mem_job *job, struct mem_class *k, bool *ovf);
void mem_class_add(struct mem_result *res, const struct mem_class *k, bool *ovf);

/* Every field of two parameter tensors equal (names by content): the
 * builder folds identical repeats with it, the compiled model compares two
 * builds with it. */
bool mem_param_equal(const struct mem_param *x, const struct mem_param *y);

const char *mem_status_str(enum mem_status st);
const char *mem_component_name(enum mem_component c);	/* "weights", "logits+loss", ... */
const char *mem_buffer_name(enum mem_buffer b);
const char *mem_phase_name(enum mem_phase p);		/* "forward", "optimizer step", ... */

/* Ranks that share one shard of a dense parameter's states: dp_shard x cp
 * (Megatron's distributed optimizer over dp x cp, torchtitan's dp_shard_cp
 * mesh); the dp_replicate = dp / dp_shard groups each hold a full copy. */
uint32_t mem_shard_group(const struct mem_job *job);
/* The expert-data-parallel group an expert param is sharded over:
 * dp_shard x cp x tp / (ep x etp) (Megatron world / (pp x etp x ep),
 * DeepSpeed-MoE dp / ep, torchtitan dp_shard_mod_ep); 0 if it does not divide. */
uint32_t mem_expert_group(const struct mem_job *job);

/* Pipeline (§4.6): model-chunk forwards whose activations stage `stage` holds at
 * most (1F1B: min(pp - stage, m); GPipe: m; interleaved: Megatron's warm-up
 * 2(pp - stage - 1) + (vp - 1)pp + 1, capped at m x vp).  pp == 1 gives 1. */
uint64_t mem_pp_chunks_in_flight(enum mem_schedule s, uint32_t pp, uint32_t vp, uint32_t stage,
				 uint64_t m);
/* ... with micro-batch groups of g (Megatron-Core's
 * microbatch_group_size_per_vp_stage; the above: g = pp). */
uint64_t mem_pp_chunks_in_flight_group(enum mem_schedule s, uint32_t pp, uint32_t vp, uint64_t g,
				       uint32_t stage, uint64_t m);
/* Micro-batches with activations in flight: ceil(chunks / vp). */
uint64_t mem_pp_micro_batches_in_flight(enum mem_schedule s, uint32_t pp, uint32_t vp,
					uint32_t stage, uint64_t m);
/* Why the body repeats cannot be split over the job's pp x vp chunks. */
enum mem_split {
	MEM_SPLIT_OK,
	MEM_SPLIT_EVEN,		/* repeats (+ embedding, loss) not a multiple of pp */
	MEM_SPLIT_EDGES,	/* first + last stage layers exceed the repeats */
	MEM_SPLIT_MIDDLE,	/* the rest not a multiple of the middle stages */
	MEM_SPLIT_VP,		/* a stage's layers not a multiple of vp */
	MEM_SPLIT_ACCOUNT,	/* account_for_* together with first/last_stage_layers */
	MEM_SPLIT_EMPTY,	/* no body repeats to split */
	MEM_SPLIT_LIST_LEN,	/* stage_layers: not one entry per model chunk */
	MEM_SPLIT_LIST_SUM,	/* stage_layers: the entries do not add up to the repeats */
	MEM_SPLIT_LIST_MIXED,	/* stage_layers with first/last_stage_layers or account_for_* */
};
/* Check the split; *stage_layers: the layers of the offending stage (VP,
 * MIDDLE: one middle stage's share, rounded down). */
enum mem_split mem_pp_split(const struct mem_job *job, uint64_t *stage_layers);
/* Body repeats of model chunk c (stage c mod pp, chunk c / pp of it); the
 * split must be valid. */
uint64_t mem_pp_chunk_layers(const struct mem_job *job, uint64_t c);
/* Logits bytes of micro-batches in flight beside the walked one: the logits
 * live in the last model chunk only, of which the first `chunks` forwards of
 * the last stage hold (interleaved: one per group of pp x vp beyond
 * (vp - 1)pp; Megatron's forward order, microbatch groups of pp). */
uint64_t mem_extra_logits_in_flight(bool *ovf, const struct mem_job *job, uint64_t stored,
				    uint64_t chunks);
/* Whether the job states its split (stage_layers, first/last_stage_layers,
 * account_for_*) rather than an even one: the report shows its stages. */
bool mem_pp_stated_split(const struct mem_job *job);
/* Model chunks of the body: pp x vp (interleaved), 2 pp (DualPipeV), else pp. */
uint64_t mem_pp_model_chunks(const struct mem_job *job);
/* The stages (ranks) holding chunk c: 2 under DualPipe (stages c and pp-1-c
 * hold it), else 1; returns how many it wrote to r. */
unsigned mem_pp_chunk_ranks(const struct mem_job *job, uint64_t c, uint32_t r[2]);
/* DualPipe(V): forwards of chunk c in flight at a rank's peak; 0 otherwise. */
uint64_t mem_pp_chunk_flight(const struct mem_job *job, uint64_t c);
/* Which assert of DualPipe(V).step the job fails (MEM_E_PP_DUALPIPE). */
enum mem_dual_rule { MEM_DUAL_OK, MEM_DUAL_PP_ODD, MEM_DUAL_MB_ODD, MEM_DUAL_MB_FEW };
enum mem_dual_rule mem_pp_dual_rule(const struct mem_job *job);
/* Korthikanti §4.2.3 first-stage memory factor of interleaving: 1 + (p-1)/(p v). */
double mem_pp_interleaved_factor(uint32_t pp, uint32_t vp);

#endif /* MEMC_ANALYZER_MEMORY_H */
