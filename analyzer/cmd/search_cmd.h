/* SPDX-License-Identifier: MIT */
/*
 * search_cmd.h - `memc search` (docs/search.md).
 */
#ifndef MEMC_ANALYZER_CMD_SEARCH_CMD_H
#define MEMC_ANALYZER_CMD_SEARCH_CMD_H

extern const char search_usage_text[];

/* argv[1] is "search"; returns the exit status. */
int search_main(int argc, char **argv);

#endif
