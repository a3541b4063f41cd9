/* SPDX-License-Identifier: MIT */
/* Unit tests for the allocation trace the replay plays (analyzer/alloc/mem_trace*.c,
 * memory-model.md §5.4): hand-built jobs replayed and worked by hand, and
 * the trace's peak against the timeline's on the validation rows. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "analyzer/alloc/alloc.h"
#include "analyzer/lower/build.h"
#include "analyzer/memory/memory.h"
#include "load_fixture.h"
#include "mem_fixture.h"

#include <glob.h>
#include <stdbool.h>
#include <string.h>

#define MiB (1ull << 20)

/* Three parameter-free layers, each storing 10 MiB and using a 30 MiB
 * forward temporary, replayed (memory-model.md §5.4).  By hand: layer 1's
 * save gets a 10 MiB segment, its temporary a 30 MiB one; layer 2's save
 * splits the freed 30 MiB block (10 + 20) so its temporary needs a second
 * 30 MiB segment; layer 3's save splits the 20 and its temporary reuses the
 * second segment.  Peak allocated 20 + 10 + 30 = 60 MiB, reserved 70 MiB;
 * the second step reuses the same blocks. */
static struct mem_job frag_job(struct mem_layer *l, struct mem_block *b)
{
	struct mem_job j;

	memset(l, 0, sizeof(*l));
	l->name = "layer";
	l->saves_bytes = 10 * MiB;
	l->temp_fwd_bytes = 30 * MiB;
	*b = (struct mem_block){ l, 1, 3, true };
	mem_fx_job(&j, false);
	j.blocks = b;
	j.nblocks = 1;
	j.alloc_replay = true;
	return j;
}


/* Layer l holds parameter p alone (named `name`, numel elements of
 * `bytes`), no saves, no temporaries: the jobs below that replay only
 * weights, gradients and gathered units. */
static void weight_only(struct mem_layer *l, struct mem_param *p, const char *name, uint64_t numel,
			uint64_t bytes)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->numel = numel;
	p->weight_bytes = bytes;
	l->params = p;
	l->nparams = 1;
	l->saves_bytes = l->temp_fwd_bytes = 0;
}

/* FSDP full_shard over 2 ranks; with FSDP1's record and backward_pre. */
static void fsdp_two(struct mem_job *j, bool fsdp1)
{
	j->dp = 2;
	j->sharding = MEM_SHARD_FSDP_FULL;
	j->fsdp1 = j->fsdp1_backward_pre = fsdp1;
}

/* The same layers with each save as two 5 MiB tensors (save_parts), the
 * temporary made between them, as the forward runs.  By hand: layer 1's
 * first half takes a 20 MiB segment (kLargeBuffer for a request under
 * 10 MiB), its temporary a 30 MiB one, its second half splits the 15 MiB
 * rest; layer 2 packs both halves into that segment and reuses the 30 MiB
 * block; layer 3's first half splits the free 30 MiB block (5 + 25), so its
 * temporary needs a second 30 MiB segment.  Reserved 20 + 30 + 30 = 80 MiB
 * (one 10 MiB block per save gave 70), peak allocated unchanged; the second
 * step repeats the first's blocks. */
static void replayed_job_save_parts(void **state)
{
	static const uint64_t parts[] = { 5 * MiB, 5 * MiB };
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	l.save_parts = parts;
	l.nsave_parts = 2;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 60 * MiB);
	assert_int_equal(k.peak_reserved, 80 * MiB);
}

/* Batch shapes (data.padding = longest, seq_len 8, min_seq_len 4): one
 * layer saving 10 MiB and making a 30 MiB temporary at length 8, i.e.
 * 1.25 and 3.75 MiB per token.  Steps at 4 + round(f x 4) for the van der
 * Corput f = 1/2, 1/4, 3/4, 1/8, 5/8, 3/8, 7/8, then 8: lengths 6, 5, 7, 5,
 * 7, 6, 8, 8.  By hand: step 1 (7.5 + 22.5 MiB) takes a 20 MiB segment
 * (under 10 MiB) and a 24 MiB one (22.5 rounded to 2 MiB); length 5 fits
 * both; length 7's 26.25 MiB fits neither free block (20, 24): a 28 MiB
 * segment; length 8's 10 MiB save splits the 20 MiB block, its 30 MiB
 * temporary fits no free block (10, 24, 28): a 30 MiB segment.  Reserved
 * 20 + 24 + 28 + 30 = 102 MiB; the same job at fixed length 8 reserves a
 * 10 MiB and a 30 MiB segment (40 MiB).  Peak allocated: 40 MiB either way. */
static void replayed_job_shapes(void **state)
{
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	b.repeat = 1;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 40 * MiB);
	assert_int_equal(k.peak_reserved, 40 * MiB);
	j.shape_seq_len = 8;
	j.shape_min_seq_len = 4;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 40 * MiB);
	assert_int_equal(k.peak_reserved, 102 * MiB);
	j.shape_min_seq_len = 8;	/* min = seq_len: every step at 8 */
	assert_int_equal(mem_fx_analyze(&j).peak_reserved, 40 * MiB);
}

/* cuBLAS's workspaces in the pool (mem_trace.c blas_workspaces): one
 * layer saving 10 MiB and making a 30 MiB temporary (40 MiB reserved
 * without them, replayed_job_shapes), workspaces of w MiB, one made before
 * the forward (the loop's thread) and one after the layer's backward
 * temporaries (autograd's thread), never freed.  By hand, w = 4: the first
 * takes a 20 MiB segment (under 10 MiB), the save splits its 16 MiB rest
 * (10 + 6), the temporary a 30 MiB segment; the second splits the 6 MiB
 * rest (best fit): 20 + 30 = 50 MiB, every later step in the same blocks.
 * w = 8: the save splits the first segment's 12 MiB rest (10 + 2); the
 * second workspace fits only the freed 30 MiB block (8 + 22), so step 2's
 * save splits the 22 (10 + 12) and its temporary needs another 30 MiB
 * segment; step 3 finds both (the 12, the 30): 20 + 30 + 30 = 80 MiB.
 * Peak allocated stays the timeline's 40 MiB (M17 counts the workspace
 * outside it), and the class no longer adds it to the device total. */
static void replayed_job_blas_workspaces(void **state)
{
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	b.repeat = 1;
	j.cublas_workspace_bytes = 4 * MiB;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 40 * MiB);
	assert_int_equal(k.replay_allocated, 40 * MiB);
	assert_int_equal(k.peak_reserved, 50 * MiB);
	assert_int_equal(k.overhead_cublas, 0);
	assert_int_equal(k.device_total, 50 * MiB + j.cuda_context_bytes);
	j.cublas_workspace_bytes = 8 * MiB;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 40 * MiB);
	assert_int_equal(k.peak_reserved, 80 * MiB);
	j.cublas_workspace_bytes = 0;
	assert_int_equal(mem_fx_analyze(&j).peak_reserved, 40 * MiB);
}

/* The same with the temporary quadratic in the length (eager scores,
 * mem_quad.tfwd = 1): 30 x (L/8)^2 = 16.875, 11.71875, 22.96875, 30 MiB
 * at 6, 5, 7, 8; the saves stay 7.5, 6.25, 8.75, 10.  By hand: length 6
 * takes a 20 MiB segment and an 18 MiB one; length 5 fits the 18 (6.25 +
 * the 11.75 rest); length 7's 22.97 MiB fits neither free block: a 24 MiB
 * segment; length 6 again splits the 18 and the 20; length 8's save splits
 * the 18 (10 + 8), its 30 MiB fits no free block (8, 20, 24): a 30 MiB
 * segment.  Reserved 20 + 18 + 24 + 30 = 92 MiB (102 with the temporary
 * per token). */
static void replayed_job_shapes_quadratic(void **state)
{
	static const struct mem_quad q = { 0, 1, 0 };
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	b.repeat = 1;
	j.shape_seq_len = 8;
	j.shape_min_seq_len = 4;
	j.shape_quad = &q;
	j.shape_quad_n = 1;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 40 * MiB);
	assert_int_equal(k.peak_reserved, 92 * MiB);
}

/* Loading in place (mem_job.load): a frozen 4-bit weight of 16 MiB is
 * quantised on the GPU from its 64 MiB 16-bit source (load_bytes), which
 * is freed and stays cached: reserved 64 + 16 = 80 MiB, where the step
 * alone (no loading replayed) reserves the weight's 16 MiB segment.  Peak
 * allocated is the step's. */
static void replayed_job_loading(void **state)
{
	struct mem_param p;
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	weight_only(&l, &p, "w", 32 * MiB, 16 * MiB);
	p.load_bytes = 64 * MiB;
	b.repeat = 1;
	j.load = MEM_LOAD_META;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 16 * MiB);
	assert_int_equal(k.peak_reserved, 80 * MiB);
	j.load = MEM_LOAD_NONE;
	assert_int_equal(mem_fx_analyze(&j).peak_reserved, 16 * MiB);
}

/* The job of the two tests below: FSDP over 2 ranks, three units of one
 * trainable 32 MiB weight (16 MiB shards), nothing else. */
static void three_trainable_units(struct mem_layer *l, struct mem_param *p, struct mem_block *b,
				  struct mem_job *j)
{
	weight_only(l, p, "w", 16 * MiB, 32 * MiB);
	p->grad_bytes = 32 * MiB;
	p->trainable = true;
	b->repeat = 3;
	fsdp_two(j, false);
}

/* FSDP over 2 ranks, three units of one trainable 32 MiB weight (16 MiB
 * shards), nothing else.  By hand: the shards take three 16 MiB segments;
 * the all-gather stream two 32 MiB segments (the running unit and the next
 * one, prefetched), reused by every gather; backward makes each unit's
 * 32 MiB unsharded gradient on the compute stream (one segment, reused),
 * then foreach_reduce's 32 MiB input and 16 MiB output on the
 * reduce-scatter stream, whose outputs stay as the sharded gradients to the
 * optimizer step: that stream holds 32 + 3 x 16.  Reserved 48 + 32 + 64 +
 * 80 = 224 MiB; the peak, the timeline's and the trace's, is unit 2's
 * backward: the shards, two gathered units, its unsharded gradient and
 * unit 3's output, 48 + 64 + 32 + 16 = 160 MiB; the cache 64 MiB. */
static void replayed_job_fsdp_streams(void **state)
{
	struct mem_param p;
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	three_trainable_units(&l, &p, &b, &j);
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 160 * MiB);
	assert_int_equal(k.replay_allocated, 160 * MiB);
	assert_int_equal(k.peak_reserved, 224 * MiB);
	assert_int_equal(k.overhead_frag, 64 * MiB);
}

/* FSDP2 without gradient sync (fsdp2 { requires_gradient_sync = false },
 * mem_trace_fsdp.c accumulate2, sync_one), the three units above and two
 * micro-batches.  By hand: the first micro-batch's backward makes each
 * unit's 32 MiB gradient on the compute stream and, at its post_backward,
 * turns it into the 32 MiB accumulated gradient (freed, then made: the
 * same block), so the compute stream holds 3 x 16 MiB shards + 3 x 32 MiB;
 * the second micro-batch adds in place (param_dtype = reduce_dtype: no new
 * tensor, as the timeline counts it) and then reduce-scatters unit by unit
 * into 16 MiB shards on the reduce-scatter stream (3 x 16 MiB segments,
 * kept as the gradients to the optimizer step).  The peak, the timeline's
 * and the trace's, is the second micro-batch's backward of unit 2: the
 * shards, two gathered units and all three accumulated gradients, 48 + 64
 * + 96 = 208 MiB; reserved 144 + 64 (the all-gather stream) + 48 = 256
 * MiB.  Before the trace had these gradients its peak was 192 MiB, and
 * the 16 MiB it lacked were added to reserved unplayed. */
static void replayed_job_fsdp2_no_sync(void **state)
{
	struct mem_param p;
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	three_trainable_units(&l, &p, &b, &j);
	j.fsdp2 = j.fsdp_no_sync = true;
	j.micro_batches = 2;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 208 * MiB);
	assert_int_equal(k.replay_allocated, 208 * MiB);
	assert_int_equal(k.peak_reserved, 256 * MiB);
}

/* FSDP1 (the fsdp1 record) frees each gathered unit after record_stream()
 * and its rate limiter waits for the oldest free event when two are
 * queued, before the next all-gather (mem_trace_fsdp.c mtr_reshard, unshard_wait).
 * Three frozen units of a 32 MiB weight over dp 2: 3 x 16 MiB shards on the
 * compute stream.  By hand, on the all-gather stream: unit 1 takes a
 * 32 MiB segment and is freed pending; unit 2 cannot reuse it (a second
 * segment); unit 3 waits for unit 1's event and reuses its block.  In
 * backward (backward_pre) unit 3's gather reuses unit 2's block, freed by
 * the limiter's wait, and the prefetched unit 2, issued while unit 3's
 * forward block is pending, takes a third: 48 + 96 = 144 MiB replayed, at
 * a trace peak of 48 + 64 = 112 MiB, the timeline's (the running and the
 * prefetched unit): reserved 144 MiB, cache 32 MiB.  Without the recorded
 * frees two segments serve every unit: no cache. */
static void replayed_job_fsdp1_record_stream(void **state)
{
	struct mem_param p;
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	weight_only(&l, &p, "w", 16 * MiB, 32 * MiB);
	fsdp_two(&j, true);
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 112 * MiB);
	assert_int_equal(k.peak_reserved, 144 * MiB);
	assert_int_equal(k.overhead_frag, 32 * MiB);
}

/* The same units after a frozen root layer of a 64 MiB weight (FSDP1's
 * root unit, gathered through forward and backward, resharded at the end
 * of backward with a recorded free).  The trace takes every recorded free
 * as complete at the end of the micro-batch (mem_trace_fsdp.c mtr_caught_up), so
 * the next step's root all-gather reuses the root's block.  By hand: the
 * shards, 32 + 3 x 16 = 80 MiB; on the all-gather stream the root takes a
 * 64 MiB segment and the units three 32 MiB ones (as in the test above):
 * 240 MiB replayed, at a trace peak of 80 + 64 + 2 x 32 = 208 MiB, the
 * timeline's: reserved 240 MiB, cache 32 MiB.  Were the root still pending
 * at the next forward, the rate limiter would free only a 32 MiB unit
 * block before the root's gather, which then takes a second 64 MiB
 * segment: 304 MiB. */
static void replayed_job_fsdp1_root_caught_up(void **state)
{
	struct mem_param p, q;
	struct mem_layer l, rl;
	struct mem_block b[2];
	struct mem_job j = frag_job(&l, &b[1]);
	struct mem_class k;

	(void)state;
	weight_only(&l, &p, "w", 16 * MiB, 32 * MiB);
	rl = l;
	rl.name = "root";
	weight_only(&rl, &q, "r", 32 * MiB, 64 * MiB);
	b[0] = (struct mem_block){ &rl, 1, 1, false };
	j.blocks = b;
	j.nblocks = 2;
	fsdp_two(&j, true);
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 208 * MiB);
	assert_int_equal(k.peak_reserved, 240 * MiB);
	assert_int_equal(k.overhead_frag, 32 * MiB);
}

/* FSDP1's CPU offload (fsdp1 { cpu_offload = true }): a frozen root layer
 * of an 8 MiB weight and the three frozen 32 MiB units above, every shard
 * on the host.  FlatParamHandle.pre_unshard copies a unit's shard to the
 * GPU on FSDP's pre-unshard stream (torch/distributed/fsdp/_runtime_utils.py
 * _unshard: `with stream(pre_unshard_stream): handle.pre_unshard()`, a
 * stream of its own from _init_streams), freed once the gathered view
 * replaces it.  By hand: that stream takes one 20 MiB segment for the
 * root's 4 MiB copy (a request under 10 MiB), which every unit's 16 MiB
 * copy then splits; the all-gather stream a 20 MiB segment for the
 * gathered root (kept through the step) and the units' three 32 MiB ones
 * (as above): reserved 20 + 20 + 96 = 136 MiB, peak allocated (the
 * timeline's, which has no copy) the root and two units, 8 + 64 = 72 MiB.
 * With the copies on the all-gather stream the root's gather split the
 * copy's 20 MiB segment and the 16 MiB copies took a segment of their own:
 * 132 MiB. */
static void replayed_job_fsdp1_offload_stream(void **state)
{
	struct mem_param p, q;
	struct mem_layer l, rl;
	struct mem_block b[2];
	struct mem_job j = frag_job(&l, &b[1]);
	struct mem_class k;

	(void)state;
	weight_only(&l, &p, "w", 16 * MiB, 32 * MiB);
	rl = l;
	rl.name = "root";
	weight_only(&rl, &q, "r", 4 * MiB, 8 * MiB);
	b[0] = (struct mem_block){ &rl, 1, 1, false };
	j.blocks = b;
	j.nblocks = 2;
	fsdp_two(&j, true);
	j.offload_params = true;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 72 * MiB);
	assert_int_equal(k.peak_reserved, 136 * MiB);
}

/* fsdp_qlora's low_memory loading (FSDP1 from rank 0's CPU model, load =
 * rank0_cpu): three frozen units of one 4-bit weight, 32 MiB of codes
 * (16 MiB shards over dp 2) and a 4 MiB QuantState, quantised from a
 * 128 MiB 16-bit source.  load_and_quantize quantises every tensor on the
 * GPU before the wrap, and the QuantState stays there while the codes go
 * to the host (mem_trace_load.c quantise_ahead); then empty_cache.  By
 * hand: the source takes a 128 MiB segment, the codes a 32 MiB one, the
 * first QuantState a 20 MiB one (a request under 10 MiB), which the other
 * two split; empty_cache keeps only that segment.  The wrap: each unit's
 * codes moved back (a 32 MiB segment), its FlatParameter (another), its
 * shard (16 MiB, a segment each: 48), the first two cached for the next
 * unit; the step's all-gather stream three 32 MiB segments (the test
 * above).  Reserved 20 + 64 + 48 + 96 = 228 MiB at a peak of the shards,
 * the QuantStates and two gathered units, 48 + 12 + 64 = 124 MiB.  With
 * the QuantState made at the wrap, one 20 MiB block with the shard, it
 * was 3 x 20 + 64 + 96 = 220 MiB. */
static void replayed_job_fsdp1_quant_state(void **state)
{
	struct mem_param p;
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	weight_only(&l, &p, "w", 64 * MiB, 36 * MiB);
	p.quant_state_bytes = 4 * MiB;
	p.gather_bytes = 32 * MiB;
	p.load_bytes = 128 * MiB;
	fsdp_two(&j, true);
	j.load = MEM_LOAD_RANK0_CPU;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 124 * MiB);
	assert_int_equal(k.peak_reserved, 228 * MiB);
}

/* A tied weight's held gradient (mem_trace.c tied_hold): an embedding of a
 * trained 32 MiB weight, then a head reading it (tied) that saves 10 MiB
 * and makes a 40 MiB forward temporary.  By hand: the weight takes a 32 MiB
 * segment, the save a 10 MiB one, the temporary a 40 MiB one, cached once
 * freed; the head's backward makes the tied gradient (32 MiB), held until
 * the embedding's backward, in the cached 40 MiB block (split, 8 MiB
 * rest); the embedding's own 32 MiB gradient fits no free block (8, 10): a
 * second 32 MiB segment.  Reserved 32 + 10 + 40 + 32 = 114 MiB; the peak,
 * the embedding's backward, 32 + 32 + 32 = 96 MiB.  The next step reuses
 * every block.  Without the held gradient in the trace the embedding's
 * gradient split the 40 MiB block (82 MiB reserved) and the 14 MiB the
 * trace's peak missed were added as allocated: 96 MiB, no cache. */
static void replayed_job_tied_gradient(void **state)
{
	struct mem_param p;
	struct mem_layer l[2];
	struct mem_block b[2];
	struct mem_job j;
	struct mem_class k;

	(void)state;
	memset(l, 0, sizeof(l));
	weight_only(&l[0], &p, "w", 16 * MiB, 32 * MiB);
	p.grad_bytes = 32 * MiB;
	p.trainable = true;
	l[0].name = "embedding";
	l[0].tied_grad_end_bytes = 32 * MiB;
	l[1].name = "head";
	l[1].saves_bytes = 10 * MiB;
	l[1].temp_fwd_bytes = 40 * MiB;
	l[1].tied_grad_bytes = 32 * MiB;
	b[0] = (struct mem_block){ &l[0], 1, 1, false };
	b[1] = (struct mem_block){ &l[1], 1, 1, false };
	mem_fx_job(&j, false);
	j.blocks = b;
	j.nblocks = 2;
	j.alloc_replay = true;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 96 * MiB);
	assert_int_equal(k.replay_allocated, 96 * MiB);
	assert_int_equal(k.peak_reserved, 114 * MiB);
}

/* Activation offload (offload { activations = cpu }): three body repeats
 * each saving 10 MiB.  By hand: each repeat's save goes to the host once
 * its forward is done, so the next repeat's takes the same cached block,
 * and each comes back into it for its own backward: one 10 MiB segment,
 * reserved and peak 10 MiB.  Kept on the GPU the three saves live together:
 * three segments, 30 MiB. */
static void replayed_job_offloaded_activations(void **state)
{
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	l.temp_fwd_bytes = 0;
	j.offload_activations = true;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 10 * MiB);
	assert_int_equal(k.replay_allocated, 10 * MiB);
	assert_int_equal(k.peak_reserved, 10 * MiB);
	j.offload_activations = false;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 30 * MiB);
	assert_int_equal(k.peak_reserved, 30 * MiB);
}

static void replayed_job_fragments(void **state)
{
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k = mem_fx_analyze(&j);

	(void)state;
	assert_true(k.replayed);
	assert_false(k.alloc_oom);
	assert_int_equal(k.peak_allocated, 60 * MiB);
	assert_int_equal(k.peak_reserved, 70 * MiB);
	assert_int_equal(k.overhead_frag, 10 * MiB);
	j.alloc_replay = false;	/* the ratio path (frag 1.0) gives allocated */
	assert_int_equal(mem_fx_analyze(&j).peak_reserved, 60 * MiB);
}

/* Expandable segments map 20 MiB pages: 20 for the first save, 40 once its
 * temporary comes, 60 for layer 2's temporary; layer 3 fits in the tail. */
static void replayed_job_expandable(void **state)
{
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	j.alloc_expandable = true;
	k = mem_fx_analyze(&j);
	assert_int_equal(k.peak_allocated, 60 * MiB);
	assert_int_equal(k.peak_reserved, 60 * MiB);
}

/* A 65 MiB GPU: layer 2's 30 MiB temporary needs a third segment (70 MiB),
 * no whole segment is cached to free: out of memory there; the figures are
 * the unlimited replay's.  At 70 MiB the job fits exactly. */
static void replayed_job_at_capacity(void **state)
{
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	j.capacity_bytes = 65 * MiB;
	k = mem_fx_analyze(&j);
	assert_true(k.alloc_oom);
	assert_int_equal(k.alloc_oom_request, 30 * MiB);
	assert_string_equal(k.alloc_oom_what, "layer");
	assert_int_equal(k.peak_reserved, 70 * MiB);
	assert_false(k.fits);
	j.capacity_bytes = 70 * MiB;
	k = mem_fx_analyze(&j);
	assert_false(k.alloc_oom);
	assert_true(k.fits);
	assert_int_equal(k.peak_reserved, 70 * MiB);
}

/* Stage 0 of a pp 2 1F1B job: its class after mem_analyze. */
static struct mem_class stage0(const struct mem_job *j)
{
	struct mem_result r;
	struct mem_class k;

	assert_int_equal(mem_analyze(j, &r), MEM_OK);
	assert_true(r.nclasses >= 1);
	k = r.classes[0];
	assert_int_equal(k.stage, 0);
	mem_result_free(&r);
	return k;
}

/* The other in-flight micro-batch's stored activations as one tensor per
 * layer (mem_trace.c put_flight): pp 2, 1F1B, 4 micro-batches, four
 * layers each storing 10 MiB and holding a 2 MiB weight (2 MiB gradient,
 * 12 MiB of optimizer states); stage 0 has two layers and holds two
 * micro-batches, the walked one and 20 MiB of the other.  By hand: the
 * weights take a 20 MiB segment A (a request under 10 MiB); the first
 * micro-batch's two 10 MiB in-flight tensors go into A's free 16 MiB and a
 * 10 MiB segment B, its saves into segments C and D (50 MiB), its
 * gradients into A's last 6 MiB; the second reuses A's middle, B, C and
 * D.  The optimizer's 12 MiB states find no free block that large (10, 10,
 * 10, 10, 2): two segments, 74 MiB.  Step 2 (zero_grad merged A's free
 * 10 + 2 + 2 into 14) fits every tensor in those blocks: reserved 74 MiB;
 * peak allocated 4 + 24 + 20 + 20 + 4 = 72 MiB, the trace's 74 with the
 * second micro-batch's 2 MiB gradient added in place.  As one 20 MiB tensor
 * (before put_flight) the second state split its freed segment and step
 * 2's 20 MiB needed a new one: 82 MiB. */
static void replayed_job_in_flight_pieces(void **state)
{
	struct mem_param p;
	struct mem_layer l;
	struct mem_block b;
	struct mem_job j = frag_job(&l, &b);
	struct mem_class k;

	(void)state;
	l.temp_fwd_bytes = 0;
	memset(&p, 0, sizeof(p));
	p.name = "w";
	p.numel = MiB / 2;
	p.weight_bytes = 2 * MiB;
	p.grad_bytes = 2 * MiB;
	p.state_bytes = 12 * MiB;
	p.trainable = true;
	l.params = &p;
	l.nparams = 1;
	b.repeat = 4;
	j.pp = 2;
	j.micro_batches = 4;
	j.schedule = MEM_PP_1F1B;
	k = stage0(&j);
	assert_int_equal(k.chunks_in_flight, 2);
	assert_int_equal(k.peak_allocated, 72 * MiB);
	assert_int_equal(k.replay_allocated, 74 * MiB);
	assert_int_equal(k.peak_reserved, 74 * MiB);
	assert_int_equal(k.overhead_frag, 2 * MiB);
}

/* The trace's request peak (alloc_trace_step_peak) against the timeline's
 * peak allocated, every job of a file replayed; returns the worst signed
 * difference relative to the timeline, in units of 1e-4. */
static double trace_vs_timeline(const char *path, unsigned *jobs)
{
	struct loaded l;
	double worst = 0;

	assert_true(load(&l, path));
	for (const struct check_job *cj = l.cr->jobs; cj; cj = cj->next) {
		struct arena tmp = { 0 };
		struct build_override ov = { .zero = -1 };	/* the job as written */
		struct build b;
		struct mem_result r;

		assert_true(build_job(l.cr->ev, &tmp, cj, &ov, true, &b));
		b.job.alloc_replay = true;
		assert_int_equal(mem_analyze(&b.job, &r), MEM_OK);
		for (size_t c = 0; c < r.nclasses; c++) {
			const struct mem_class *k = &r.classes[c];
			double d = ((double)k->replay_allocated - (double)k->peak_allocated) * 1e4 /
				   (double)k->peak_allocated;

			assert_true(k->replayed);
			if (d * d > worst * worst)
				worst = d;
		}
		mem_result_free(&r);
		arena_free(&tmp);
		++*jobs;
	}
	unload(&l);
	return worst;
}

/* Jobs whose every mechanism the trace has: its peak is the timeline's to
 * the per-tensor rounding (0.01 %).  Among them the tied embedding's held
 * gradient (TT-31, TT-35: 788,070,400 B, 1.3 % and 3.3 % of the peak, were
 * missing), offloaded activations (TT-38: the trace was 15 % above),
 * FSDP's prefetched unit and root reduce-scatter (FQ-04: 3.2 % below),
 * torchao's loading and torchao 0.1's per-call unpack
 * (tests/finetune/run-loading-torchao.mem), a QLoRA and a LoRA example, a CNN, FSDP1's
 * view gradients and their flat concatenation (tests/fsdp1: 8-17 % below),
 * its no_sync() (LGHUB-35, LGRT-31/37: 24-39 % below; SHARD_GRAD_OP's
 * units held, no-sync.mem's grad_op: 7 % below), a 4-bit head's per-call
 * dequantised copy at its matmul only (LGRT-07/08: 0.13 % below), the
 * output a loop keeps (train.keep_output; FQ-04: 3.1 % below without it).
 * FQ-04 itself is left out: with its dropout, SDPA and kept output together
 * the trace is 0.46 % below, the one backward temporary by which freeing a
 * layer's saves between its temporaries differs from the timeline's instant
 * (each of the three alone matches).  TT-02 is left out for the same
 * kind of difference: with torchao 0.1's 14 B-an-element unpack its peak
 * is an MLP's backward, where the trace is 0.43 % below the instant (one
 * [2, 512, 11008] bf16 tensor, 22.5 MB, freed before the unpack). */
static void trace_peak_is_the_timeline_peak(void **state)
{
	static const char *const same[] = {
		"tests/finetune/run-loading-torchao.mem", "tests/validation/TT-05.mem",
		"tests/validation/TT-14.mem", "tests/validation/TT-31.mem",
		"tests/validation/TT-35.mem", "tests/validation/TT-38.mem",
		"tests/validation/HFB-05.mem",
		"tests/validation/LGRT-01.mem", "tests/validation/LGRT-11.mem",
		"tests/validation/LGHUB-02.mem", "examples/llama3-8b-lora-a100.mem",
		"examples/llama2-7b-qlora-4090.mem", "examples/resnet50-finetune.mem",
		"tests/fsdp1/prefetch.mem", "tests/fsdp1/orig-params.mem",
		"tests/fsdp1/cpu-offload.mem", "tests/alloc/replay-fsdp1.mem",
		"tests/fsdp1/no-sync.mem", "tests/validation/LGHUB-35.mem",
		"tests/validation/LGRT-31.mem", "tests/validation/LGRT-37.mem",
		"tests/validation/TT-01.mem", "tests/validation/TT-07.mem",
		"tests/validation/LGRT-07.mem", "tests/validation/LGRT-08.mem",
	};
	unsigned jobs = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		double d = trace_vs_timeline(same[i], &jobs);

		if (d > 1 || d < -1)
			print_error("%s: trace %+.4f %% of the timeline's peak\n", same[i], d / 100);
		assert_true(d <= 1 && d >= -1);
	}
	assert_true(jobs >= sizeof(same) / sizeof(same[0]));
}

/* On every validation row the trace holds at most what the timeline's
 * conservative instants count (0.01 % for the rounding): more would be a
 * tensor the trace keeps too long. */
static void trace_never_above_the_timeline(void **state)
{
	glob_t g;
	unsigned jobs = 0;

	(void)state;
	assert_int_equal(glob("tests/validation/*.mem", 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		double d = trace_vs_timeline(g.gl_pathv[i], &jobs);

		if (d > 1)
			print_error("%s: trace %+.4f %% of the timeline's peak\n", g.gl_pathv[i], d / 100);
		assert_true(d <= 1);
	}
	globfree(&g);
	assert_true(jobs >= 50);
}

/* The worst signed difference (1e-4 units) of every job of `path` built
 * with `ov`, as trace_vs_timeline; *jobs counts those built. */
static double matrix_case(struct loaded *l, const struct build_override *ov, const char *only,
			  unsigned *jobs)
{
	double worst = 0;

	for (const struct check_job *cj = l->cr->jobs; cj; cj = cj->next) {
		struct arena tmp = { 0 };
		struct build_override o = *ov;
		struct build b;
		struct mem_result r;
		const char *name = cj->decl->name;

		if (only && strncmp(name, only, strlen(only)))
			continue;
		assert_true(build_job(l->cr->ev, &tmp, cj, &o, true, &b));
		b.job.alloc_replay = true;
		assert_int_equal(mem_analyze(&b.job, &r), MEM_OK);
		for (size_t c = 0; c < r.nclasses; c++) {
			const struct mem_class *k = &r.classes[c];
			double d = ((double)k->replay_allocated - (double)k->peak_allocated) * 1e4 /
				   (double)k->peak_allocated;

			assert_true(k->replayed);
			if (d * d > worst * worst)
				worst = d;
			if (d > 60 || d < -30)
				print_error("%s zero %d ckpt %s stage %u: trace %+.4f %%\n", name, ov->zero,
					    ov->checkpoint ? ov->checkpoint : "-", k->stage, d / 100);
		}
		mem_result_free(&r);
		arena_free(&tmp);
		++*jobs;
	}
	return worst;
}

/* The property (issue 13): over a matrix of layouts (tests/alloc/
 * trace-matrix.mem: DP, CP + ZeRO-3, TP + SP + PP 1F1B, interleaved,
 * zero-bubble, DualPipe, MoE with EP, FSDP2 plain, reshard_after_forward
 * = 2, without gradient sync, under PP with both reshard policies, its
 * split root (alone, under PP, without sync), optimizer and activation
 * offload) x recompute (as written, full) x ZeRO (as written, 0-3), the
 * trace's peak is the timeline's peak allocated within the stated
 * differences (memory-model.md §5.4 "The trace against the timeline"):
 * at most 0.3 % below (a layer's saves freed between its backward
 * temporaries, which the timeline counts at once: 0.21 % at most here)
 * and, FSDP2 under PP resharded after forward alone, 0.6 % above (0.51 %,
 * not diagnosed); the FSDP2 jobs as written, and every other job under
 * ZeRO-2, agree to 0.15 %.  Before Megatron-Core's layers added their
 * gradient into main_grad in place in the trace (job.wgrad_fused), the
 * Megatron jobs under ZeRO-0/1 were up to 0.82 % above.  Before the trace had FSDP2's mechanisms,
 * fsdp2_no_sync was 49 % below, fsdp2_pp 23-26 %, fsdp2_pp_always
 * 34-37 %, fsdp2_reshard_int 19 %; before it had ZeRO-3's prefetch
 * bucket and a non-body module's gather in backward, dp_zero under
 * ZeRO-3 was 1.7 % below and offload_opt 5.3 %; before it had the split
 * root, fsdp2_split_root was 3.6-4.8 % above. */
static void trace_matrix_is_the_timeline(void **state)
{
	static const char *const ckpt[] = { NULL, "full" };
	struct loaded l;
	unsigned jobs = 0;

	(void)state;
	assert_true(load(&l, "tests/alloc/trace-matrix.mem"));
	for (int z = -1; z <= 3; z++)
		for (size_t c = 0; c < 2; c++) {
			struct build_override ov = { 0 };
			double d;

			ov.zero = z;
			ov.checkpoint = ckpt[c];
			d = matrix_case(&l, &ov, NULL, &jobs);
			assert_true(d <= 60 && d >= -30);
		}
	for (size_t c = 0; c < 2; c++) {
		struct build_override ov = { 0 };
		double d;

		ov.zero = 2;
		ov.checkpoint = ckpt[c];
		d = matrix_case(&l, &ov, "dp_", &jobs);
		assert_true(d <= 15 && d >= -15);
		d = matrix_case(&l, &ov, "tp_", &jobs);
		assert_true(d <= 15 && d >= -15);
		d = matrix_case(&l, &ov, "moe_", &jobs);
		assert_true(d <= 15 && d >= -15);
		d = matrix_case(&l, &ov, "dualpipe", &jobs);
		assert_true(d <= 15 && d >= -15);
		d = matrix_case(&l, &ov, "act_", &jobs);
		assert_true(d <= 15 && d >= -15);
	}
	{
		struct build_override ov = { 0 };
		double d;

		ov.zero = -1;
		d = matrix_case(&l, &ov, "fsdp2_plain", &jobs);
		assert_true(d <= 15 && d >= -15);
		d = matrix_case(&l, &ov, "fsdp2_reshard", &jobs);
		assert_true(d <= 15 && d >= -15);
		d = matrix_case(&l, &ov, "fsdp2_no_sync", &jobs);	/* and its split root */
		assert_true(d <= 15 && d >= -15);
		d = matrix_case(&l, &ov, "fsdp2_split", &jobs);
		assert_true(d <= 15 && d >= -15);
		d = matrix_case(&l, &ov, "fsdp2_pp", &jobs);	/* and fsdp2_pp_always */
		assert_true(d <= 60 && d >= -15);
	}
	unload(&l);
	assert_true(jobs >= 10 * 17);
}

/* A file's stated exception to trace_near_the_timeline_everywhere, and
 * its bounds (1e-4 units). */
struct stated {
	const char *path;
	double below, above;
};

static const struct stated stated_gaps[] = {
	/* one layer whose saves are most of the peak, freed by the trace
	 * between its backward temporaries (memory-model.md §5.4) */
	{ "tests/comm/ep-dispatch.mem", -1500, 100 },
	{ "tests/comm/ep-dispatch-torchtitan.mem", -1500, 100 },
	{ "tests/comm/deepep-buffer.mem", -1000, 100 },
	{ "tests/comm/deepep-bad.mem", -1000, 100 },
	{ "tests/comm/sp-row-partial.mem", -1000, 100 },
	/* one SDPA attention over 32768 tokens: 1.6 GB of saves, 1.5 GB of
	 * backward temporaries */
	{ "tests/comm/ring-attention-sdpa.mem", -3000, 100 },
	/* an activation-bound job: one 1.75 GiB MLP save */
	{ "tests/ckpt/host-memory.mem", -700, 100 },
	/* the timeline counts the root's sharded gradients at its reduce */
	{ "tests/fsdp2/root-reduce.mem", -400, 100 },
	/* FSDP over Jamba's layer pattern: the timeline's prefetched unit is
	 * the stage's largest (M8: an MoE layer's 5.85 GB), the trace's the
	 * next one (the dense layer 0's, about 0.5 GB) */
	{ "tests/lang-patterns/jamba-fsdp-pp.mem", -800, 100 },
	/* the last stage's head: 3.2 GB of saves freed between its 7.4 GB of
	 * backward temporaries, the eager DTensor gather copy among them
	 * since main's AsyncTP head (1.7 % below before it) */
	{ "tests/validation/TTN-13.mem", -500, 100 },
	/* FSDP1 with CPU offload: the QuantStates and rotary buffers stay on
	 * the GPU beside the offloaded shards (mem_trace_load.c fsdp1_unit);
	 * what is left, 2.2 % below, is the saves freed between backward
	 * temporaries, as on the jobs above */
	{ "tests/validation/FQ-13.mem", -300, 100 },
	/* issue #13's 70B at cp 8: activations small enough that the peak is
	 * a layer's reduce-scatter copy-in, where the trace holds the layer's
	 * 3.19 GiB of unsharded fp32 gradients beside the 3.19 GiB
	 * reduce-scatter input they are copied into (foreach_reduce:
	 * unsharded_grads.clear() after foreach_reduce_scatter_copy_in); the
	 * timeline counts one copy and peaks elsewhere, 1,455,226,880 B
	 * (2.2-2.6 %) below on every stage */
	{ "tests/alloc/replay-in-flight-pieces.mem", -200, 300 },
	/* the RL engines' passes, not diagnosed */
	{ "tests/rl/ppo-tiny.mem", -200, 400 },
	{ "tests/rl/grpo-generate.mem", -200, 400 },
	{ "tests/rl/ref-apart.mem", -200, 400 },
};

/* The worst signed difference over a file's jobs that build (of at least
 * 16 MiB), or 0 if none loads (the suites' error tests). */
static double file_gap(const char *path, unsigned *jobs)
{
	struct loaded l;
	double worst = 0;

	if (!load(&l, path)) {
		unload(&l);
		return 0;
	}
	for (const struct check_job *cj = l.cr->jobs; cj; cj = cj->next) {
		struct arena tmp = { 0 };
		struct build_override ov = { .zero = -1 };
		struct build b;
		struct mem_result r;

		if (build_job(l.cr->ev, &tmp, cj, &ov, true, &b) &&
		    (b.job.alloc_replay = true, mem_analyze(&b.job, &r) == MEM_OK)) {
			for (size_t c = 0; c < r.nclasses; c++) {
				const struct mem_class *k = &r.classes[c];
				double d = ((double)k->replay_allocated - (double)k->peak_allocated) *
					   1e4 / (double)k->peak_allocated;

				/* below 16 MiB the 512 B rounding of each tensor is
				 * a share of its own */
				if (k->replayed && k->peak_allocated >= 16 * MiB && d * d > worst * worst)
					worst = d;
			}
			mem_result_free(&r);
			++*jobs;
		}
		arena_free(&tmp);
	}
	unload(&l);
	return worst;
}

/* Every job of every suite and example: the trace's peak within 2 % below
 * and 1 % above the timeline's, but for the stated files above, so that a
 * layout the trace loses shows here (before the trace had FSDP2's and the
 * pipelines' mechanisms, TTN-13 and tests/fsdp2 were 29-56 % below). */
static void trace_near_the_timeline_everywhere(void **state)
{
	glob_t g;
	unsigned jobs = 0;

	(void)state;
	assert_int_equal(glob("tests/*/*.mem", 0, NULL, &g), 0);
	assert_int_equal(glob("examples/*.mem", GLOB_APPEND, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		double d = file_gap(g.gl_pathv[i], &jobs), lo = -200, hi = 100;

		for (size_t k = 0; k < sizeof(stated_gaps) / sizeof(stated_gaps[0]); k++)
			if (!strcmp(g.gl_pathv[i], stated_gaps[k].path)) {
				lo = stated_gaps[k].below;
				hi = stated_gaps[k].above;
			}
		if (d < lo || d > hi)
			print_error("%s: trace %+.4f %% of the timeline's peak\n", g.gl_pathv[i], d / 100);
		assert_true(d >= lo && d <= hi);
	}
	globfree(&g);
	assert_true(jobs >= 400);	/* 414 in Dec 2026 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(replayed_job_fragments),
		cmocka_unit_test(replayed_job_save_parts),
		cmocka_unit_test(replayed_job_loading),
		cmocka_unit_test(replayed_job_shapes),
		cmocka_unit_test(replayed_job_blas_workspaces),
		cmocka_unit_test(replayed_job_shapes_quadratic),
		cmocka_unit_test(replayed_job_fsdp_streams),
		cmocka_unit_test(replayed_job_fsdp2_no_sync),
		cmocka_unit_test(replayed_job_fsdp1_record_stream),
		cmocka_unit_test(replayed_job_fsdp1_root_caught_up),
		cmocka_unit_test(replayed_job_fsdp1_offload_stream),
		cmocka_unit_test(replayed_job_fsdp1_quant_state),
		cmocka_unit_test(replayed_job_tied_gradient),
		cmocka_unit_test(replayed_job_offloaded_activations),
		cmocka_unit_test(replayed_job_expandable),
		cmocka_unit_test(replayed_job_at_capacity),
		cmocka_unit_test(replayed_job_in_flight_pieces),
		cmocka_unit_test(trace_peak_is_the_timeline_peak),
		cmocka_unit_test(trace_never_above_the_timeline),
		cmocka_unit_test(trace_matrix_is_the_timeline),
		cmocka_unit_test(trace_near_the_timeline_everywhere),
	};
	return cmocka_run_group_tests_name("mem_trace", tests, NULL, NULL);
}
