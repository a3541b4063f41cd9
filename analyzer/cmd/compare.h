/* SPDX-License-Identifier: MIT */
/*
 * compare.h - `memc compare FILE SNAPSHOT`: a train block's prediction
 * against a PyTorch memory snapshot (docs/compare.md).
 */
#ifndef MEMC_ANALYZER_CMD_COMPARE_H
#define MEMC_ANALYZER_CMD_COMPARE_H

/* argv[1] is "compare"; returns the exit status (0, 1 or 2). */
int compare_main(int argc, char **argv);

#endif
