/* SPDX-License-Identifier: MIT */
/*
 * test_fit_gpu_swap.c - the -Wcapacity search's GPU-only variants
 * (analyzer/cmd/fit_variant.c "One GPU for another"): a variant that only
 * puts a larger GPU into a build already made takes that build with the
 * GPU's figures put in instead of being built. For every such variant the
 * notes' searches try on the examples and on every golden file, the
 * variant is also built the full way (the shortcut's check hook) and the
 * two outcomes (fits, the device total, what the GPU has left) must be the
 * same; and every line of the checker, builder and analysis that reads
 * the job's GPU is one the shortcut knows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdbool.h>

#include <cmocka.h>

#include "analyzer/cmd/driver.h"
#include "analyzer/cmd/fit_impl.h"
#include "check_files.h"
#include "source_guard.h"

static void shortcut_is_the_full_build(void **state)
{
	size_t n;

	(void)state;
	fit_gpu_shortcut = (struct fit_gpu_shortcut_stats){ .check = true };
	fit_floor = (struct fit_floor_stats){ .check = true };	/* every variant built (test_fit_floor.c) */
	n = check_all("examples/*.mem") + check_all("tests/*/*.mem");
	print_message("%zu files, %lu GPU-only variants, %lu differ\n", n, fit_gpu_shortcut.taken,
		      fit_gpu_shortcut.mismatches);
	assert_true(n > 100);
	/* does-not-fit.mem alone has 16 */
	assert_true(fit_gpu_shortcut.taken >= 16);
	assert_int_equal(fit_gpu_shortcut.mismatches, 0);
}

/* A variant's figures from the shortcut are the ones a build gives: one
 * example by itself, so that a failure names it. */
static void does_not_fit_example(void **state)
{
	(void)state;
	fit_gpu_shortcut = (struct fit_gpu_shortcut_stats){ .check = true };
	fit_floor = (struct fit_floor_stats){ .check = true };
	int saved = dup(2), null = open("/dev/null", O_WRONLY);

	dup2(null, 2);
	check_all("examples/does-not-fit.mem");
	fflush(stderr);
	dup2(saved, 2);
	close(null);
	close(saved);
	print_message("does-not-fit: %lu GPU-only variants, %lu differ\n", fit_gpu_shortcut.taken,
		      fit_gpu_shortcut.mismatches);
	/* its 16 GPU variants (docs/performance.md): the larger GPU alone,
	 * then with checkpoint = selective or full, paged_adamw_8bit, the
	 * optimizer offloaded, QLoRA and their pairs */
	assert_int_equal(fit_gpu_shortcut.taken, 16);
	assert_int_equal(fit_gpu_shortcut.mismatches, 0);
}

/* Every line of the checker, the builder and the analysis that reads the
 * job's GPU (its declaration, a field through build_gpu_u64, the capacity
 * set from it), as the shortcut knows them: fit_variant.c puts in the
 * builder's five fields (build_gpu_figures), `allows_as_much` stands for
 * the checker's capability rules, and mem_analyze runs again. A line not listed here is
 * a new reader of the GPU, which the shortcut must learn (or refuse)
 * before this list does. */
static const char *const gpu_readers[] = {
	"check_fp8.c: mx ? \"Blackwell\" : \"Ada, Hopper\", j->cluster.decl->name, cc),",
	"check_layout.c: const struct field *f = j->cluster.kind == VAL_CLUSTER && j->cluster.decl ?",
	"check_layout.c: eval_record_field(ev->scope, j->cluster.decl, \"compute_capability\") : NULL;",
	"check_layout.c: fp8 ? \"Ada, Hopper\" : \"Ampere\", j->cluster.decl->name, cc);",
	"check_layout.c: j->cluster.decl->name, cc),",
	"build_job.c: bool build_gpu_u64(struct eval *ev, const struct decl *gpu, const char *field, uint64_t *out)",
	"build_job.c: r->gpu = cj->cluster.decl->name;",
	"build_job_buffers.c: build_gpu_u64(ev, gpu, field, &u);",
	"build_job_buffers.c: j->cuda_context_bytes = overhead(ev, gpu, cj, \"context\", 500ull << 20);",
	"build_job_buffers.c: j->cublas_workspace_bytes = overhead(ev, gpu, cj, \"cublas_workspace\", 8519680);",
	"build_job_buffers.c: j->nccl_bytes_per_comm = overhead(ev, check_job_record(cj, \"nccl\") ? NULL : gpu, cj, \"nccl\", 0);",
	"build_job_buffers.c: build_gpu_u64(ev, gpu, \"memory\", &mem);",
	"build_job_buffers.c: j->capacity_bytes = mem;",
	"build_job_buffers.c: build_gpu_u64(ev, gpu, \"host_memory\", &mem);",
	"build_job_buffers.c: j->host_capacity_bytes = mem;",
	"build_job_buffers.c: build_gpu_figures(b->ev, b->cj->cluster.decl, b->cj, j);",
	"build_rl.c: out->job.engine_bytes = engine_share(b, out->job.capacity_bytes);",
	"memory.c: uint64_t cap = job->capacity_bytes, res, trace;",
	"memory.c: k->capacity = job->capacity_bytes;",
	"offload.c: uint64_t cap = bd->job.host_capacity_bytes, node, ds;",
};

static bool reads_gpu(const char *line)
{
	return strstr(line, "cluster.decl") || strstr(line, "gpu_u64(") || strstr(line, "capacity_bytes") ||
	       strstr(line, "overhead(ev, ");
}

static const struct source_guard gpu_guard = {
	gpu_readers, sizeof gpu_readers / sizeof *gpu_readers, reads_gpu, "the GPU"
};

static void every_gpu_reader_known(void **state)
{
	(void)state;
	assert_int_equal(guard_unlisted(&gpu_guard, "lang/*.c") + guard_unlisted(&gpu_guard, "analyzer/lower/*.c") +
			 guard_unlisted(&gpu_guard, "analyzer/memory/*.c") +
			 guard_unlisted(&gpu_guard, "analyzer/model/*.c"), 0);
	assert_true(guard_listed(&gpu_guard, "build_job_buffers.c", "build_gpu_u64(ev, gpu, \"memory\", &mem);"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_gpu_reader_known),
		cmocka_unit_test(does_not_fit_example),
		cmocka_unit_test(shortcut_is_the_full_build),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
