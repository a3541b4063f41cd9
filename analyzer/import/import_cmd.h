/* SPDX-License-Identifier: MIT */
/*
 * import_cmd.h - `memc import [--name NAME] [-o FILE] CONFIG...`: framework
 * configs into .mem text (docs/import.md).
 */
#ifndef MEMC_ANALYZER_IMPORT_CMD_H
#define MEMC_ANALYZER_IMPORT_CMD_H

/* argv[1] is "import"; returns the exit status (0, 1 or 2). */
int import_main(int argc, char **argv);

#endif
