/* SPDX-License-Identifier: MIT */
/*
 * builtins.c - the reserved names of builtins.h, in one table.
 */
#include <string.h>

#include "lang/builtins.h"
#include "lang/str.h"

static const char *const reserved[] = {
	/* bound by the train block (docs/language.md §4.2) */
	"batch", "seq", "tgt", "tp", "sp", "sp_in", "cp", "ep", "pp", "dp", "vp", "act", "autocast",
	"compile", "compile_loss", "async_tp", "dtensor_plan",
	/* bound per tensor inside optimizer bodies (§3.6) */
	"numel", "rows", "cols", "rank",
	/* values and functions */
	"none", "ceil", "floor", "max", "trains",
};

bool builtin_is_reserved(const char *name)
{
	/* every declared name is asked: the first byte rejects most entries */
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		if (str_is(reserved[i], name))
			return true;
	return false;
}
