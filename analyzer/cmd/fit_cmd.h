/* SPDX-License-Identifier: MIT */
/*
 * fit_cmd.h - `memc fit` (docs/fit.md).
 */
#ifndef MEMC_ANALYZER_CMD_FIT_CMD_H
#define MEMC_ANALYZER_CMD_FIT_CMD_H

extern const char fit_usage_text[];

/* argv[1] is "fit"; returns the exit status. */
int fit_main(int argc, char **argv);

#endif
