/* Two built jobs compared block by block: every field of every layer,
 * the arrays they point to by content (the build cache's and the
 * optimizer-after-the-walk tests, each against a build without the
 * cache).  Included after cmocka.h by the tests that use it. */
#ifndef MEMC_TESTS_SAME_BLOCKS_H
#define MEMC_TESTS_SAME_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/memory/memory.h"

static void assert_same_u64s(const uint64_t *x, const uint64_t *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(x[i], y[i]);
}

static void assert_same_layer(const struct mem_layer *p, const struct mem_layer *q)
{
	struct mem_layer l = *p, m = *q;

	assert_int_equal(l.nparams, m.nparams);
	assert_memory_equal(l.params, m.params, l.nparams * sizeof *l.params);
	assert_int_equal(l.nsave_parts, m.nsave_parts);
	assert_same_u64s(l.save_parts, m.save_parts, l.nsave_parts);
	assert_int_equal(l.ntemp_fwd_parts, m.ntemp_fwd_parts);
	assert_same_u64s(l.temp_fwd_parts, m.temp_fwd_parts, l.ntemp_fwd_parts);
	assert_int_equal(l.ntemp_bwd_parts, m.ntemp_bwd_parts);
	assert_same_u64s(l.temp_bwd_parts, m.temp_bwd_parts, l.ntemp_bwd_parts);
	l.params = m.params = NULL;
	l.save_parts = m.save_parts = l.temp_fwd_parts = m.temp_fwd_parts = NULL;
	l.temp_bwd_parts = m.temp_bwd_parts = NULL;
	assert_memory_equal(&l, &m, sizeof l);
}

static void assert_same_blocks(const struct mem_job *x, const struct mem_job *y)
{
	assert_int_equal(x->nblocks, y->nblocks);
	for (size_t i = 0; i < x->nblocks; i++) {
		assert_int_equal(x->blocks[i].nlayers, y->blocks[i].nlayers);
		assert_int_equal(x->blocks[i].repeat, y->blocks[i].repeat);
		assert_int_equal(x->blocks[i].is_body, y->blocks[i].is_body);
		for (size_t k = 0; k < x->blocks[i].nlayers; k++)
			assert_same_layer(&x->blocks[i].layers[k], &y->blocks[i].layers[k]);
	}
}

#endif
