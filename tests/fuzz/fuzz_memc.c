/* SPDX-License-Identifier: MIT */
/*
 * fuzz_memc.c - libFuzzer harness: the memc front end, in process, on
 * arbitrary bytes.
 *
 * Built and run by tests/fuzz/fuzz.mk (`make fuzz`, `make check-fuzz`).
 * Each input is one whole compilation with its own arena, so state never
 * leaks from one input to the next and LeakSanitizer sees exactly what a
 * real run would leave behind. Diagnostics are recorded while the phases
 * run (a NULL stream) and rendered once at the end into /dev/null, so the
 * printer (snippets, carets, escapes) is fuzzed and the log stays readable.
 *
 * fuzz_one() is the pipeline: memc fmt's layout, parse, dump,
 * -Wconfusable/-Wmixed-script,
 * and on a file that parsed without errors (the driver's gate,
 * analyzer/pipeline.c) the checker:
 * scope resolution, evaluation of every declaration and train block; then,
 * for a file that checked, each job is built, analysed, searched for
 * capacity fixes and reported as text and JSON, as `memc report` does.
 * Imports are not followed: an input must not reach the file system, so
 * the program is the one file, and names from the stdlib are undefined.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyzer/lower/build.h"
#include "analyzer/cmd/driver.h"
#include "analyzer/fit/fit.h"
#include "analyzer/fmt/fmt_impl.h"
#include "analyzer/memory/memory.h"
#include "analyzer/out/diag_out.h"
#include "analyzer/out/report.h"
#include "lang/arena.h"
#include "lang/ast.h"
#include "lang/check.h"
#include "lang/confusable.h"
#include "lang/diag.h"
#include "lang/import.h"
#include "lang/intern.h"
#include "lang/parse.h"
#include "lang/source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * Where ast_dump() writes. Opened once: opening /dev/null per input would
 * cost a syscall pair per exec for nothing. A static is the only way to
 * share it with LLVMFuzzerTestOneInput(), whose signature is fixed.
 */
static FILE *dump_sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	dump_sink = fopen("/dev/null", "w");
	if (!dump_sink) {
		perror("fuzz_memc: /dev/null");
		abort();
	}
	return 0;
}

/* One job through the analyzer and both reports, as pipeline.c does. */
static void analyse_one(struct arena *arena, struct check_result *cr, const struct check_job *cj,
			struct diag_engine *de, struct fit_memo *fit)
{
	struct build_override none = { .zero = -1 };
	struct build bd;
	struct mem_result res;

	if (!build_job(cr->ev, arena, cj, &none, false, &bd) || mem_analyze(&bd.job, &res) != MEM_OK)
		return;
	bd.rep.result = &res;
	bd.rep.analysed = true;
	fit_check(fit, cr->ev, arena, cj, &bd);
	report_text(dump_sink, &bd.rep, true);
	report_json_begin(dump_sink);
	report_json_file(dump_sink, "fuzz.mem", &bd.rep, 1, de, true);
	report_json_end(dump_sink);
	mem_result_free(&res);
}

/* The checker on @ast as the whole program, as the driver runs it. */
static void check_one(struct arena *arena, struct interner *in, struct diag_engine *de,
		      const struct src_table *src, struct file_ast *ast)
{
	struct file_ast *files[1] = { ast };
	struct program prog = { .files = files, .nfiles = 1, .root = ast };
	struct check_result *cr = check_program(arena, in, de, src, &prog);
	struct driver_opts o = { .ndirs = 0 };
	struct fit_memo *fit = fit_memo_new(arena, &o, src, &prog, cr->ev);

	for (const struct check_job *j = cr->jobs; j && !diag_error_count(de); j = j->next)
		analyse_one(arena, cr, j, de, fit);
	fit_memo_free(fit);
}

static void fuzz_one(const uint8_t *data, size_t size)
{
	struct arena arena = { 0 };
	struct interner *in = interner_new(&arena);
	struct src_table *src = src_table_new(&arena);
	struct diag_engine *de = diag_new(&arena, src, NULL);

	/* The CLI's default limit: the fuzzer should see what users see. */
	diag_set_max_errors(de, 20);

	/* NULL: too large, invalid UTF-8 or a NUL byte (already diagnosed). */
	const struct src_file *f = src_add_string(src, de, "fuzz.mem", (const char *)data, size);

	if (f) {
		/* memc fmt's own scanner and layout: fmt lays out only a file
		 * that parses, but its scanner is not the lexer, and any loaded
		 * text must be safe to scan */
		size_t flen = 0;

		free(fmt_layout(f->text, f->len, &flen));
		struct file_ast *ast = parse_file(&arena, in, de, f);
		struct file_ast *files[1] = { ast };
		struct program prog = { .files = files, .nfiles = 1, .root = ast };

		ast_dump(dump_sink, ast);
		confusable_check(&arena, de, &prog);	/* as import_load() runs it */
		if (diag_error_count(de) == 0)
			check_one(&arena, in, de, src, ast);
	}
	/* Walk the records as the JSON reporter would: locations must map. */
	for (const struct diag *d = diag_first(de); d; d = d->next) {
		(void)diag_loc_line(de, d->loc);
		(void)diag_loc_col(de, d->loc);
	}
	/* And print them as the CLI would: snippets, carets and escapes. */
	diag_set_output(de, dump_sink);
	diag_flush(de);
	/* And as check --format json|sarif|github writes them. */
	for (int fmt = DIAG_OUT_JSON; fmt <= DIAG_OUT_GITHUB; fmt++) {
		struct diag_out w;

		diag_out_begin(&w, dump_sink, (enum diag_out_format)fmt);
		diag_out_file(&w, "fuzz.mem", de);
		diag_out_end(&w);
	}
	arena_free(&arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_one(data, size);
	return 0;
}
