# SPDX-License-Identifier: MIT
#
# libFuzzer harness for the front end (tests/fuzz/fuzz_memc.c), built with
# clang into its own directory so it never mixes with the gcc objects.
#
#   make fuzz [FUZZ_SECONDS=600] [FUZZ_JOBS=1]   fuzz until time runs out
#   make check-fuzz                              replay the regressions, then
#                                                fuzz FUZZ_CHECK_SECONDS (30)
#   make fuzz-build                              just build $(FUZZ_BIN)
#
# The seed corpus is copied at run time from examples/, stdlib/ and every
# tests/**/*.mem into $(FUZZ_CORPUS), which also collects what the fuzzer
# finds; nothing is duplicated in git. Each example and validation job is
# also seeded with its imports inlined (tests/fuzz/inline-imports.sh),
# since the harness does not follow imports and would otherwise never
# build a real model. FUZZ_JOBS > 1 runs libFuzzer's
# -jobs mode (logs in fuzz-N.log in the current folder). Crashes land in $(FUZZ_ARTIFACTS):
# minimise one with `$(FUZZ_BIN) -minimize_crash=1 FILE`, then keep it as a
# tests/bad/ case (it must give located errors) or under
# tests/fuzz/regress/ (replayed by check-fuzz).

FUZZ_CC        ?= clang
FUZZ_B         := $(B)/fuzz
FUZZ_BIN       := $(FUZZ_B)/fuzz_memc
FUZZ_CORPUS    := $(B)/fuzz-corpus
FUZZ_ARTIFACTS := $(B)/fuzz-artifacts
FUZZ_DICT      := tests/fuzz/memc.dict
FUZZ_SECONDS   ?= 600
FUZZ_CHECK_SECONDS ?= 30
FUZZ_JOBS      ?= 1
# Inputs larger than this teach the fuzzer nothing a smaller one would not,
# and the limits (docs/limits.md) are tested by their own cases. The
# inlined seeds (a job with its stdlib imports pasted in, comments and
# blank lines dropped) are 13-27 KiB: they must fit whole.
FUZZ_MAX_LEN   ?= 32768
FUZZ_RSS_MB    ?= 2048
FUZZ_FLAGS     ?=

# Every front-end source; override to fuzz a subset while lang/ is mid-edit.
FUZZ_LANG_SRCS ?= $(wildcard lang/*.c)

FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		 -fno-omit-frame-pointer
FUZZ_CPPFLAGS := -I. -I$(FUZZ_B) $(MEMC_DEFS)
FUZZ_CFLAGS   := -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 $(FUZZ_SAN)
FUZZ_GEN_OBJS := $(if $(PARSER_Y),$(FUZZ_B)/lang/parser.tab.o $(FUZZ_B)/lang/parser_nolac.tab.o) \
		 $(if $(LEXER_L),$(FUZZ_B)/lang/lexer.o)
FUZZ_GEN_H    := $(if $(PARSER_Y),$(FUZZ_B)/lang/parser.tab.h) $(if $(LEXER_L),$(FUZZ_B)/lang/lexer.h)
# The analyzer without its command line (main, pipeline, lsp, and the
# commands under analyzer/cmd): the harness calls the phases itself.
# The fit search stays: the -Wcapacity notes of fit.c run it.
FUZZ_ANALYZER_SRCS ?= $(filter-out analyzer/main.c analyzer/pipeline.c analyzer/lsp/% analyzer/cmd/%,\
			$(wildcard analyzer/*.c analyzer/*/*.c)) analyzer/cmd/fit_search.c analyzer/cmd/fit_variant.c
FUZZ_OBJS     := $(patsubst %.c,$(FUZZ_B)/%.o,$(FUZZ_LANG_SRCS) $(FUZZ_ANALYZER_SRCS)) $(FUZZ_GEN_OBJS)
# The SARIF help text the Makefile generates (DIAG_HELP_C).
FUZZ_OBJS     += $(FUZZ_B)/gen/diag_help.o
# The fit search loads the stdlib with memc's build-time digests; the
# harness links the empty table, so every stdlib file is checked in full.
FUZZ_OBJS     += $(FUZZ_B)/tools/stdlib-digests-none.o

# The import and snapshot readers (tests/fuzz/fuzz_import.c): the same
# objects, with snapshot.c from analyzer/cmd; seeds are every config and
# snapshot of the tests, each behind the byte that picks its reader.
FUZZ_IMPORT_BIN    := $(FUZZ_B)/fuzz_import
FUZZ_IMPORT_CORPUS := $(B)/fuzz-import-corpus
FUZZ_IMPORT_DICT   := tests/fuzz/import.dict
FUZZ_IMPORT_CHECK_SECONDS ?= 10

.PHONY: fuzz fuzz-build fuzz-corpus check-fuzz fuzz-import fuzz-import-corpus

# `make check` runs check-fuzz after the other suites (see EXTRA_CHECKS in
# the Makefile).
EXTRA_CHECKS += fuzz

fuzz-build: $(FUZZ_BIN)

# Coverage instrumentation everywhere (fuzzer-no-link); libFuzzer's main()
# only at the final link.
$(FUZZ_B)/%.o: %.c | $(FUZZ_GEN_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_B)/gen/diag_help.o: $(DIAG_HELP_C)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_B)/lang/%.o: $(FUZZ_B)/lang/%.c | $(FUZZ_GEN_H)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_B)/lang/parser.tab.c $(FUZZ_B)/lang/parser.tab.h &: lang/parser.y
	@mkdir -p $(@D)
	$(BISON) -Wall -Werror -d -o $(FUZZ_B)/lang/parser.tab.c $<

$(FUZZ_B)/lang/parser_nolac.tab.c: lang/parser.y
	@mkdir -p $(@D)
	$(BISON) -Wall -Werror -Fparse.lac=none -o $@ $<
$(FUZZ_B)/lang/parser_nolac.tab.o: FUZZ_CPPFLAGS += -Dyyparse=parse_yyparse_nolac

$(FUZZ_B)/lang/lexer.c $(FUZZ_B)/lang/lexer.h &: lang/lexer.l $(if $(PARSER_Y),$(FUZZ_B)/lang/parser.tab.h)
	@mkdir -p $(@D)
	$(FLEX) --header-file=$(FUZZ_B)/lang/lexer.h -o $(FUZZ_B)/lang/lexer.c $<

$(FUZZ_BIN): $(FUZZ_B)/tests/fuzz/fuzz_memc.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)

$(FUZZ_IMPORT_BIN): $(FUZZ_B)/tests/fuzz/fuzz_import.o $(FUZZ_B)/analyzer/cmd/snapshot.o $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)

-include $(FUZZ_OBJS:.o=.d) $(FUZZ_B)/tests/fuzz/fuzz_memc.d $(FUZZ_B)/tests/fuzz/fuzz_import.d \
	$(FUZZ_B)/analyzer/cmd/snapshot.d

# Mode bytes of fuzz_import.c: 0 JSON, 1 YAML, 2 TOML, 3 command line,
# 4 snapshot.
fuzz-import-corpus:
	@mkdir -p $(FUZZ_IMPORT_CORPUS) $(FUZZ_ARTIFACTS)
	@find tests -type f \( -name '*.json' -o -name '*.yaml' -o -name '*.yml' -o -name '*.toml' \
		-o -name '*.args' \) -size -$(FUZZ_MAX_LEN)c 2>/dev/null | sort | while read -r f; do \
		case "$$f" in *.json) m='\000';; *.yaml|*.yml) m='\001';; *.toml) m='\002';; *) m='\003';; esac; \
		case "$$f" in tests/compare/*) m='\004';; esac; \
		{ printf "$$m"; cat "$$f"; } > $(FUZZ_IMPORT_CORPUS)/.seed.tmp; \
		mv $(FUZZ_IMPORT_CORPUS)/.seed.tmp "$(FUZZ_IMPORT_CORPUS)/seed-$$(sha1sum < "$$f" | cut -c1-16)"; \
	done

FUZZ_IMPORT_RUN = $(FUZZ_IMPORT_BIN) -dict=$(FUZZ_IMPORT_DICT) -max_len=$(FUZZ_MAX_LEN) \
	   -rss_limit_mb=$(FUZZ_RSS_MB) -timeout=10 -artifact_prefix=$(FUZZ_ARTIFACTS)/import- \
	   -print_final_stats=1 $(FUZZ_FLAGS)

fuzz-import: $(FUZZ_IMPORT_BIN) fuzz-import-corpus
	$(FUZZ_IMPORT_RUN) -max_total_time=$(FUZZ_SECONDS) \
		$(if $(filter-out 1,$(FUZZ_JOBS)),-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS)) \
		$(FUZZ_IMPORT_CORPUS) tests/fuzz/regress-import

# Fresh seeds every time (names are hashes, so a seed already there is not
# duplicated); what earlier runs found stays.
fuzz-corpus:
	@mkdir -p $(FUZZ_CORPUS) $(FUZZ_ARTIFACTS)
	@find examples stdlib tests -name '*.mem' -type f -size -$(FUZZ_MAX_LEN)c 2>/dev/null | \
		while read -r f; do \
			cp "$$f" "$(FUZZ_CORPUS)/seed-$$(sha1sum < "$$f" | cut -c1-16)"; \
		done
	@for f in examples/*.mem tests/validation/*.mem; do \
		[ -f "$$f" ] || continue; \
		tests/fuzz/inline-imports.sh "$$f" | sed -e 's://.*$$::' -e 's/[[:space:]]*$$//' -e '/^$$/d' \
			> $(FUZZ_CORPUS)/.inline.tmp; \
		mv $(FUZZ_CORPUS)/.inline.tmp "$(FUZZ_CORPUS)/inline-$$(sha1sum < "$$f" | cut -c1-16)"; \
	done

FUZZ_RUN = $(FUZZ_BIN) -dict=$(FUZZ_DICT) -max_len=$(FUZZ_MAX_LEN) \
	   -rss_limit_mb=$(FUZZ_RSS_MB) -timeout=10 -artifact_prefix=$(FUZZ_ARTIFACTS)/ \
	   -print_final_stats=1 $(FUZZ_FLAGS)

fuzz: fuzz-build fuzz-corpus
	$(FUZZ_RUN) -max_total_time=$(FUZZ_SECONDS) \
		$(if $(filter-out 1,$(FUZZ_JOBS)),-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS)) \
		$(FUZZ_CORPUS) tests/fuzz/regress

# For `make check`: every regression input must run clean (one count per
# file), then a short run over the seeds must find nothing (one count).
# Without clang's fuzzer runtime the suite says so and counts nothing.
check-fuzz:
	@mkdir -p $(dir $(COUNTS))
	@if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' | \
		$(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1; then \
		echo "fuzz: skipped ($(FUZZ_CC) -fsanitize=fuzzer does not link)"; \
		echo "fuzz 0 0" >> $(COUNTS); exit 0; fi; \
	$(MAKE) --no-print-directory fuzz-build fuzz-corpus $(FUZZ_IMPORT_BIN) fuzz-import-corpus \
		>$(B)/fuzz-build.log 2>&1 || \
		{ cat $(B)/fuzz-build.log; echo "fuzz: build failed"; echo "fuzz 0 1" >> $(COUNTS); exit 1; }; \
	pass=0; fail=0; \
	for f in tests/fuzz/regress/*; do \
		[ -f "$$f" ] || continue; \
		if $(FUZZ_BIN) -rss_limit_mb=$(FUZZ_RSS_MB) -timeout=10 "$$f" >$(B)/fuzz-replay.log 2>&1; then \
			pass=$$((pass + 1)); \
		else echo "FAIL: fuzz regression $$f"; tail -40 $(B)/fuzz-replay.log; fail=$$((fail + 1)); fi; \
	done; \
	for f in tests/fuzz/regress-import/*; do \
		[ -f "$$f" ] || continue; \
		if $(FUZZ_IMPORT_BIN) -rss_limit_mb=$(FUZZ_RSS_MB) -timeout=10 "$$f" >$(B)/fuzz-replay.log 2>&1; then \
			pass=$$((pass + 1)); \
		else echo "FAIL: fuzz regression $$f"; tail -40 $(B)/fuzz-replay.log; fail=$$((fail + 1)); fi; \
	done; \
	if $(FUZZ_IMPORT_RUN) -max_total_time=$(FUZZ_IMPORT_CHECK_SECONDS) $(FUZZ_IMPORT_CORPUS) \
		tests/fuzz/regress-import >$(B)/fuzz-import-check.log 2>&1; then \
		pass=$$((pass + 1)); \
	else echo "FAIL: fuzzing the import readers found a problem (see $(FUZZ_ARTIFACTS)/)"; \
		grep -A30 'ERROR: \|==ERROR\|runtime error' $(B)/fuzz-import-check.log | head -60; \
		fail=$$((fail + 1)); fi; \
	if $(FUZZ_RUN) -max_total_time=$(FUZZ_CHECK_SECONDS) $(FUZZ_CORPUS) tests/fuzz/regress \
		>$(B)/fuzz-check.log 2>&1; then \
		pass=$$((pass + 1)); \
	else echo "FAIL: fuzzing found a problem (see $(FUZZ_ARTIFACTS)/)"; \
		grep -A30 'ERROR: \|==ERROR\|runtime error' $(B)/fuzz-check.log | head -60; fail=$$((fail + 1)); fi; \
	grep -h '^stat::number_of_executed_units' $(B)/fuzz-check.log | sed 's/^/fuzz: /'; \
	echo "fuzz: $$pass passed, $$fail failed"; \
	echo "fuzz $$pass $$fail" >> $(COUNTS); \
	test $$fail -eq 0
