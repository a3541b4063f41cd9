/* SPDX-License-Identifier: MIT */
/*
 * lsp.h - `memc lsp`: a Language Server Protocol server on stdin/stdout
 * (docs/editors.md).
 */
#ifndef MEMC_ANALYZER_LSP_H
#define MEMC_ANALYZER_LSP_H

/* argv[1] is "lsp". Returns the exit status: 0 after shutdown + exit,
 * 1 for an exit without shutdown or end of input, 2 for a usage error. */
int lsp_main(int argc, char **argv);

#endif
