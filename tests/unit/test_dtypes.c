/* SPDX-License-Identifier: MIT */
/*
 * test_dtypes.c - dtype lookup, sizes, and exact byte counts of quantized
 * tensors, checked against the QLoRA numbers of memory-model.md section 6.3
 * (Llama-2-7B, NF4 with and without double quantization).
 */
/* cmocka 1.1.x needs these four headers before <cmocka.h>. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lang/dtypes.h"

static const struct dtype *get(const char *name)
{
	const struct dtype *dt = dtype_find(name);

	assert_non_null(dt);
	return dt;
}

static uint64_t bytes(const char *name, uint64_t numel)
{
	uint64_t b = 0;

	assert_true(dtype_bytes(get(name), numel, &b));
	return b;
}

/* Llama-2-7B's quantized linears: per layer q, k, v, o (4096 x 4096) and
 * gate, up (4096 x 11008), down (11008 x 4096); 32 layers. Each tensor is
 * quantized, and rounded up, on its own. */
static uint64_t llama2_7b_linears(const char *name)
{
	uint64_t attn = bytes(name, UINT64_C(4096) * 4096);
	uint64_t mlp = bytes(name, UINT64_C(4096) * 11008);

	assert_int_equal(bytes(name, UINT64_C(11008) * 4096), mlp);
	return 32 * (4 * attn + 3 * mlp);
}

static void table_is_consistent(void **state)
{
	(void)state;
	assert_int_equal(dtype_table_check(), 0);
	assert_int_equal(dtype_count(), 21);
	for (size_t i = 0; i < dtype_count(); i++)
		assert_ptr_equal(dtype_find(dtype_name(dtype_at(i))), dtype_at(i));
	assert_null(dtype_at(dtype_count()));
}

static void lookup_and_aliases(void **state)
{
	const struct dtype *target = NULL;
	(void)state;

	assert_ptr_equal(get("fp8"), get("fp8_e4m3"));
	assert_string_equal(dtype_name(get("fp8")), "fp8_e4m3");
	assert_int_equal(dtype_alias_count(), 1);
	assert_string_equal(dtype_alias_at(0, &target), "fp8");
	assert_ptr_equal(target, get("fp8_e4m3"));
	assert_null(dtype_find("BF16"));
	assert_null(dtype_find("float32"));
	assert_int_equal(dtype_bits(get("tf32")), 32);
	assert_int_equal(dtype_bits(get("bool")), 8);
	assert_true(dtype_is_block_scaled(get("nf4")));
	assert_false(dtype_is_block_scaled(get("int4")));
	assert_int_equal(get("int8")->kind, DTYPE_INT);
	assert_int_equal(get("uint8")->kind, DTYPE_UINT);
}

static void sizes_are_exact(void **state)
{
	struct num s;
	(void)state;

	s = dtype_size(get("bf16"));
	assert_true(num_eq(s, num_from_int(2)));
	s = dtype_size(get("fp64"));
	assert_true(num_eq(s, num_from_int(8)));
	s = dtype_size(get("nf4"));
	assert_int_equal(s.n, 1);
	assert_int_equal(s.d, 2);
	s = dtype_size(get("nf4_dq"));	/* the element alone, without scales */
	assert_int_equal(s.n, 1);
	assert_int_equal(s.d, 2);
}

static void effective_bits(void **state)
{
	static const struct {
		const char *name;
		int64_t n, d;
	} want[] = {
		{ "bf16", 16, 1 },
		{ "nf4", 9, 2 },	/* 4 + 32/64 */
		{ "fp4", 9, 2 },
		{ "nf4_dq", 2113, 512 },	/* 4 + 8/64 + 32/(64*256) = 4.126953125 */
		{ "mxfp4", 17, 4 },	/* 4 + 8/32 */
		{ "nvfp4", 9, 2 },	/* 4 + 8/16 (+ 4 B per tensor) */
		{ "mxfp8", 33, 4 },	/* 8 + 8/32 */
		{ "hqq4", 513, 128 },	/* 4 + 64/8192 */
	};
	(void)state;

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct num b = dtype_effective_bits(get(want[i].name));

		assert_int_equal(b.n, want[i].n);
		assert_int_equal(b.d, want[i].d);
	}
	assert_true(num_to_double(dtype_effective_bits(get("nf4_dq"))) == 4.126953125);
}

static void qlora_llama2_7b_nf4_double_quant(void **state)
{
	uint64_t codes = llama2_7b_linears("int4");	/* ceil(n/2) */
	uint64_t nf4 = llama2_7b_linears("nf4");
	uint64_t dq = llama2_7b_linears("nf4_dq");
	(void)state;

	/* memory-model.md 6.3: codes 3,238,002,688 + level-1 absmax
	 * 101,187,584 + level-2 1,581,056 = 3,340,771,328 B */
	assert_int_equal(codes, UINT64_C(3238002688));
	assert_int_equal((nf4 - codes) / 4, UINT64_C(101187584));	/* fp32 absmax */
	assert_int_equal(dq - codes - UINT64_C(101187584), UINT64_C(1581056));
	assert_int_equal(dq, UINT64_C(3340771328));
	/* without double quantization: 4,167,573,504 - 524,820,480 */
	assert_int_equal(nf4, UINT64_C(3642753024));
	assert_int_equal(nf4, UINT64_C(4167573504) - UINT64_C(524820480));
	/* the 16-bit embeddings, head and norms the reference adds back */
	assert_int_equal(bytes("bf16", 262410240), UINT64_C(524820480));
	/* level 2 per tensor equals level 2 over the flattened total here,
	 * because every tensor's absmax count is a multiple of 256 */
	assert_int_equal(bytes("nf4_dq", UINT64_C(6476005376)), UINT64_C(3340771328));
}

static void per_tensor_rounding(void **state)
{
	(void)state;
	assert_int_equal(bytes("int4", 1), 1);
	assert_int_equal(bytes("int4", 3), 2);
	assert_int_equal(bytes("int4", 4), 2);
	assert_int_equal(bytes("bf16", 3), 6);
	assert_int_equal(bytes("bool", 3), 3);
	assert_int_equal(bytes("fp32", 0), 0);
	assert_int_equal(bytes("nvfp4", 0), 0);
	/* one partial block still pays a whole scale */
	assert_int_equal(bytes("nf4", 1), 1 + 4);
	assert_int_equal(bytes("nf4", 65), 33 + 8);
	assert_int_equal(bytes("nf4_dq", 1), 1 + 1 + 4);
	assert_int_equal(bytes("nf4_dq", 64 * 257), 64 * 257 / 2 + 257 + 8);
	assert_int_equal(bytes("mxfp4", 32), 16 + 1);
	assert_int_equal(bytes("mxfp8", 33), 33 + 2);
	/* hqq4: codes + four bf16 meta-scales per 8192 (the 8-bit ones on the host) */
	assert_int_equal(bytes("hqq4", 8192), 4096 + 8);
	assert_int_equal(bytes("hqq4", 8193), 4097 + 16);
	/* nvfp4: codes + one fp8 scale per 16 + the fp32 tensor scale */
	assert_int_equal(bytes("nvfp4", 16), 8 + 1 + 4);
	assert_int_equal(bytes("nvfp4", 17), 9 + 2 + 4);
}

static void overflow_is_an_error(void **state)
{
	uint64_t b = 42;
	(void)state;

	assert_false(dtype_bytes(get("fp64"), UINT64_MAX / 4, &b));
	assert_int_equal(b, 42);
	assert_false(dtype_bytes(get("fp16"), UINT64_MAX, &b));
	/* no spurious overflow: numel * bits would not fit, the bytes do */
	assert_true(dtype_bytes(get("int4"), UINT64_MAX, &b));
	assert_int_equal(b, UINT64_C(1) << 63);
	assert_true(dtype_bytes(get("int4"), UINT64_MAX / 4, &b));
	assert_int_equal(b, UINT64_MAX / 8 + 1);
	assert_true(dtype_bytes(get("uint8"), UINT64_MAX, &b));
	assert_int_equal(b, UINT64_MAX);
	assert_false(dtype_bytes(get("mxfp8"), UINT64_MAX, &b));	/* codes fit, scales do not */
}

static void suggestions(void **state)
{
	(void)state;
	assert_string_equal(dtype_suggest("BF16"), "bf16");
	assert_string_equal(dtype_suggest("FP8"), "fp8");
	assert_string_equal(dtype_suggest("bfloat16"), "bf16");
	assert_string_equal(dtype_suggest("float32"), "fp32");
	assert_string_equal(dtype_suggest("half"), "fp16");
	assert_string_equal(dtype_suggest("nf4dq"), "nf4_dq");
	assert_string_equal(dtype_suggest("fp8e4m3"), "fp8_e4m3");
	assert_string_equal(dtype_suggest("MXFP4"), "mxfp4");
	assert_string_equal(dtype_suggest("bf61"), "bf16");
	assert_null(dtype_suggest("hidden"));
	assert_null(dtype_suggest("x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_is_consistent),
		cmocka_unit_test(lookup_and_aliases),
		cmocka_unit_test(sizes_are_exact),
		cmocka_unit_test(effective_bits),
		cmocka_unit_test(qlora_llama2_7b_nf4_double_quant),
		cmocka_unit_test(per_tensor_rounding),
		cmocka_unit_test(overflow_is_an_error),
		cmocka_unit_test(suggestions),
	};
	return cmocka_run_group_tests_name("dtypes", tests, NULL, NULL);
}
