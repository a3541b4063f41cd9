/* SPDX-License-Identifier: MIT */
/*
 * search_time.c - memc search's first-order step time (docs/search.md
 * gives every term with its source): the math of a micro-batch at a
 * fraction of the GPU's peak, the exposed communication of the tp, cp,
 * ep and pp groups per micro-batch, the pipeline's bubble, and the data-
 * parallel reduction (and ZeRO-3 gathers) less what backward hides.
 */
#include "analyzer/cmd/search_impl.h"

const char *search_ckpt_name(enum search_ckpt c)
{
	static const char *const names[] = { "none", "selective", "full" };

	return c < SEARCH_CKPT__COUNT ? names[c] : "none";
}

/* Training FLOPs per token: 6 N (forward 2 N, backward 4 N) plus the
 * attention scores, 12 L h s (torchtitan get_num_flop_per_token); a
 * recomputed forward adds its share again: selective re-runs the core
 * attention (4 L h s), full the whole forward (2 N + 4 L h s). */
double search_flops_per_token(const struct search_facts *f, enum search_ckpt c)
{
	double attn = f->layers * f->hidden * (double)f->seq_len;
	double flops = 6 * f->active + 12 * attn;

	if (c == SEARCH_CKPT_SELECTIVE)
		flops += 4 * attn;
	else if (c == SEARCH_CKPT_FULL)
		flops += 2 * f->active + 4 * attn;
	return flops;
}

/* The link of a group whose ranks span @span consecutive GPUs. */
static double link(const struct search_facts *f, const struct search_layout *l, double span)
{
	return span <= l->per_node ? f->node_bw : f->network_bw;
}

static double ring(double n)
{
	return n > 1 ? (n - 1) / n : 0;
}

/* Seconds of tp, cp, ep and pp traffic one micro-batch exposes on a stage. */
static double mb_comm(const struct search_facts *f, const struct search_layout *l)
{
	double layers = f->layers / l->pp, full = l->ckpt == SEARCH_CKPT_FULL;
	double tokens = (double)l->micro_batch * (double)f->seq_len / l->cp;
	double m = tokens * f->hidden * f->act_bytes;		/* one layer's activation */
	/* Megatron SP: all-gather + reduce-scatter before and after attention
	 * and the MLP, forward and backward (no SP: 4 all-reduces, the same) */
	double t = layers * (8 + 4 * full) * ring(l->tp) * m / f->node_bw;
	/* ring attention: each K/V chunk visits the cp - 1 others forward,
	 * K/V and dK/dV again backward */
	double kv = tokens * 2 * f->kv_dim / l->tp * f->act_bytes;

	t += layers * (3 + full) * (l->cp - 1) * kv / link(f, l, (double)l->tp * l->cp);
	if (f->top_k > 0)	/* dispatch + combine all-to-all, forward and backward */
		t += layers * (4 + 2 * full) * ring(l->ep) * tokens / l->tp * f->top_k * f->hidden *
		     f->act_bytes / link(f, l, (double)l->tp * l->cp * l->ep);
	if (l->pp > 1)		/* the activation and its gradient at each chunk boundary */
		t += 2.0 * l->vp * m / l->tp / link(f, l, (double)l->gpus / l->pp);
	return t;
}

static double pos(double x)
{
	return x > 0 ? x : 0;
}

/* Data-parallel traffic per step that backward does not hide. */
static double dp_comm(const struct search_facts *f, const struct search_layout *l, double t_mb)
{
	double dense = f->params - f->expert_params;
	double p = dense / (l->tp * l->pp) + f->expert_params / ((double)l->ep * l->tp * l->pp);
	double d = (double)l->dp * l->cp, r = ring(d);
	double bw = link(f, l, (double)l->tp * l->cp * l->dp), bwd = t_mb * 2 / 3;
	double m = (double)l->grad_accum, t;

	if (l->zero <= 0 && l->zero != -1)	/* DDP: one all-reduce, the last backward hides some */
		t = pos(2 * r * p * f->grad_bytes / bw - bwd);
	else if (l->zero == 1)			/* reduce-scatter, then all-gather the updated shard */
		t = pos(r * p * f->grad_bytes / bw - bwd) + r * p * f->weight_bytes / bw;
	else if (l->zero == 2)			/* a reduce-scatter every micro-batch */
		t = m * pos(r * p * f->grad_bytes / bw - bwd) + r * p * f->weight_bytes / bw;
	else					/* ZeRO-3 / FSDP: gathers forward and backward too */
		t = m * pos(r * p * (2 * f->weight_bytes + f->grad_bytes) / bw - t_mb);
	if (l->offload)				/* the shard's grads down, its weights back up */
		t += p / (l->zero >= 1 ? d : 1) * (f->grad_bytes + f->weight_bytes) / f->host_bw;
	return t;
}

void search_time(const struct search_facts *f, struct search_layout *l)
{
	double tokens = (double)l->micro_batch * (double)f->seq_len;
	double compute = search_flops_per_token(f, l->ckpt) * tokens /
			 ((double)l->tp * l->cp * l->pp) / (f->peak_flops * f->mfu);
	double t_mb = compute + mb_comm(f, l);
	/* 1F1B and interleaved: (pp - 1) / vp micro-batch times of bubble
	 * (Narayanan et al. 2021, §2.2) */
	double step = ((double)l->grad_accum + (l->pp - 1.0) / l->vp) * t_mb + dp_comm(f, l, compute);

	l->step_s = step;
	l->tokens_per_s = (double)f->global_batch * (double)f->seq_len / step / l->gpus;
	l->mfu = l->tokens_per_s * search_flops_per_token(f, SEARCH_CKPT_NONE) / f->peak_flops;
}
