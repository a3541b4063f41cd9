/* SPDX-License-Identifier: MIT */
/*
 * dtypes.h - element types (fp32, bf16, nf4, mxfp4, ...) and their exact
 * storage cost.
 *
 * Every dtype lives in the constant table of dtypes.def; the pointers
 * handed out are into that table, so two dtypes are the same exactly when
 * their pointers are equal (aliases such as "fp8" return the pointer of
 * their target). Nothing here allocates or keeps state.
 *
 * Block-quantized dtypes store per-block scales next to the element codes.
 * dtype_size() is the element alone (nf4: 1/2 byte), which is what
 * `nf4.size` means in a .mem file; dtype_bytes() and dtype_effective_bits()
 * include the scales.
 */
#ifndef MEMC_LANG_DTYPES_H
#define MEMC_LANG_DTYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/num.h"

enum dtype_kind { DTYPE_FLOAT, DTYPE_INT, DTYPE_UINT, DTYPE_BOOL };

/* One row of dtypes.def (see its header for the byte formula). Only the
 * table creates these. */
struct interner;

struct dtype {
	const char *name;
	enum dtype_kind kind;
	unsigned bits;		/* storage bits per element */
	unsigned block;		/* elements per first-level scale; 0 = none */
	unsigned scale_bits;	/* bits per first-level scale */
	unsigned block2;	/* first-level scales per second-level scale; 0 = none */
	unsigned scale2_bits;	/* bits per second-level scale */
	unsigned tensor_bytes;	/* fixed bytes per (non-empty) tensor */
	const char *description;
};

/* By exact name or alias; NULL if unknown. */
const struct dtype *dtype_find(const char *name);
/* dtype_find() of an interned name, searching once per name and
 * compilation (struct intern_memo); any other string as dtype_find(). */
const struct dtype *dtype_find_in(const struct interner *in, const char *name);
const char *dtype_name(const struct dtype *dt);
unsigned dtype_bits(const struct dtype *dt);
bool dtype_is_block_scaled(const struct dtype *dt);
/* Bytes per element without block scales, exact: bf16 -> 2, nf4 -> 1/2. */
struct num dtype_size(const struct dtype *dt);
/* Bits per element including block scales, ignoring tensor_bytes and
 * the rounding of partial blocks: nf4 -> 9/2, nf4_dq -> 2113/512 (4.127). */
struct num dtype_effective_bits(const struct dtype *dt);
/*
 * Exact bytes of one tensor of @numel elements, scales included (formula in
 * dtypes.def); 0 for numel == 0. False (and *out untouched) on uint64_t
 * overflow.
 */
bool dtype_bytes(const struct dtype *dt, uint64_t numel, uint64_t *out);

/*
 * Did-you-mean for an unknown dtype name: case-insensitive match ("BF16"
 * -> "bf16"), then common framework spellings ("bfloat16" -> "bf16",
 * "float32" -> "fp32", "half" -> "fp16"), then the closest name within edit
 * distance 2 ("nf4dq" -> "nf4_dq"). NULL if nothing is close. Static storage.
 */
const char *dtype_suggest(const char *name);

/* Iteration in table order, for --list-dtypes and docs. */
size_t dtype_count(void);
const struct dtype *dtype_at(size_t i);
size_t dtype_alias_count(void);
/* Alias @i's name; *target (if non-NULL) receives the dtype it stands for. */
const char *dtype_alias_at(size_t i, const struct dtype **target);

/* Table self-check (see dtypes.def). Returns the number of problems. */
int dtype_table_check(void);

#endif
