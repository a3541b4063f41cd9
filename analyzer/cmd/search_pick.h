/* SPDX-License-Identifier: MIT */
/*
 * search_pick.h - a layout as a train block, and its verification
 * (search_block.c).
 */
#ifndef MEMC_ANALYZER_CMD_SEARCH_PICK_H
#define MEMC_ANALYZER_CMD_SEARCH_PICK_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/cmd/search_impl.h"

/* The train block @name with @l's keys, the job's others copied (arena). */
char *search_render(const struct search_ctx *c, const struct search_layout *l, const char *name);
/* Whether the file with the job's block replaced by @block checks clean
 * (no error, no warning beyond the file's own) and fits; *total: its
 * largest device total over classes and phases. */
bool search_verify(const struct search_ctx *c, const char *block, uint64_t *total);

#endif
