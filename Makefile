# SPDX-License-Identifier: MIT
#
# memc: one non-recursive Makefile (the check targets re-invoke this same
# file for the sanitizer build, into a separate build directory).
#
#   make                 build/memc and build/liblang.a
#   make run             install missing deps, build, report an example
#   make check           deps, build, every test suite, ASan rerun;
#                        last line "N passed, N failed"
#   make check-unit | check-golden | check-tables | check-asan | valgrind
#   make update-golden   rewrite golden expectations (review the diff!)
#   make install         PREFIX=/usr/local DESTDIR= (binary, stdlib, man pages,
#                        shell completions)
#
# Sources are found by wildcard: a new lang/*.c, analyzer/*.c, analyzer/*/*.c or
# tests/unit/test_*.c is picked up without editing this file. Extra
# targets (bench, validate, fuzz, ...) live in tests/*.mk, included below.

PROG      := memc
VERSION   ?= 0.1.0
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
DATADIR   ?= $(PREFIX)/share
STDLIBDIR ?= $(DATADIR)/memc/stdlib
INSTALL   ?= install
BISON     ?= bison
FLEX      ?= flex
PKG_CONFIG ?= pkg-config
VALGRIND  ?= valgrind

# B is the build directory. check-asan runs this Makefile again with
# B=build-asan SAN=1, so both builds can coexist.
B         ?= build
WERROR    ?= 1
SAN       ?= 0

CFLAGS ?= -O2 -g

WARNINGS := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	    -Wformat=2 -Wvla
ifeq ($(WERROR),1)
WARNINGS += -Werror
endif

SANFLAGS :=
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

# MEMC_STDLIB_DIR: where `make install` puts the stdlib (the installed
# binary's default). MEMC_SOURCE_STDLIB: this checkout's stdlib/, for a
# binary run from the build tree. See docs/architecture.md.
MEMC_DEFS := -DMEMC_VERSION='"$(VERSION)"' \
	     -DMEMC_STDLIB_DIR='"$(STDLIBDIR)"' \
	     -DMEMC_SOURCE_STDLIB='"$(abspath stdlib)"'

ALL_CPPFLAGS = -I. -I$(B) -MMD -MP $(MEMC_DEFS) $(CPPFLAGS)
ALL_CFLAGS   = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARNINGS) $(CFLAGS) $(SANFLAGS)
# flex and bison output is not ours to fix: relax only what it trips.
GEN_CFLAGS   = $(ALL_CFLAGS) -Wno-unused-function -Wno-sign-compare \
	       -Wno-missing-prototypes
ALL_LDFLAGS  = $(LDFLAGS) $(SANFLAGS)
# libunistring from its archive when one is installed: mapping and
# relocating the shared library is a tenth of a `memc report`
# (docs/performance.md). UNISTRING_STATIC=0 links the shared one.
UNISTRING_STATIC ?= 1
UNISTRING_A  := $(if $(filter 1,$(UNISTRING_STATIC)),$(shell $(CC) -print-file-name=libunistring.a))

# jansson and libyaml read the configs of `memc import` (docs/import.md).
# Deferred (=) like CMOCKA: pkg-config runs after `make deps` installed them.
IMPORT_LIBS  = $(shell $(PKG_CONFIG) --libs jansson yaml-0.1 2>/dev/null || echo -ljansson -lyaml)
LIBS         = $(if $(filter /%,$(UNISTRING_A)),$(UNISTRING_A),-lunistring) -lm $(IMPORT_LIBS)
# Deferred (=): evaluated only when a test is linked, after `make deps`.
CMOCKA       = $(shell $(PKG_CONFIG) --cflags --libs cmocka)
# memc itself is linked -static-pie when the C library's archive is
# installed: loading and relocating libc, libm, jansson and libyaml was a
# sixth of a `memc report` (docs/architecture.md "Startup"). PIE is kept
# (ASLR); nothing memc calls needs the dynamic loader (no NSS, iconv or
# dlopen: the link would warn). STATIC=0 links it dynamically. Sanitizer
# builds and the unit tests stay dynamic; $(B)/memc-dyn, the same objects
# linked dynamically, is what `make valgrind` runs, since valgrind cannot
# follow malloc inside a static binary.
STATIC      ?= 1
LIBC_A      := $(if $(filter 1,$(STATIC)),$(if $(filter 0,$(SAN)),$(shell $(CC) -print-file-name=libc.a)))
MEMC_LDFLAGS := $(if $(filter /%,$(LIBC_A)),-static-pie)

# ---- sources ---------------------------------------------------------------

PARSER_Y := $(wildcard lang/parser.y)
LEXER_L  := $(wildcard lang/lexer.l)
GEN_C    := $(if $(PARSER_Y),$(B)/lang/parser.tab.c $(B)/lang/parser_nolac.tab.c) $(if $(LEXER_L),$(B)/lang/lexer.c)
GEN_H    := $(if $(PARSER_Y),$(B)/lang/parser.tab.h) $(if $(LEXER_L),$(B)/lang/lexer.h)
GEN_OBJS := $(GEN_C:.c=.o)

LANG_OBJS     := $(patsubst %.c,$(B)/%.o,$(wildcard lang/*.c))
ANALYZER_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard analyzer/*.c analyzer/*/*.c))
# The SARIF rules' help text, generated from docs/diagnostics.md.
DIAG_HELP_C   := $(B)/gen/diag_help.c
ANALYZER_OBJS += $(DIAG_HELP_C:.c=.o)
# The stdlib files that check clean on their own, with their digests
# (analyzer/cmd/stdlib_digests.h): memc-stage, memc with an empty table,
# decides; a change to any object can change what is clean, so it is
# redone after each (docs/architecture.md "The stdlib, verified at build
# time").
STDLIB_SRCS   := $(wildcard stdlib/*.mem stdlib/*/*.mem stdlib/*/*/*.mem)
DIGESTS_C     := $(B)/gen/stdlib_digests.c
STAGE_OBJS    := $(ANALYZER_OBJS) $(B)/tools/stdlib-digests-none.o
ANALYZER_OBJS += $(DIGESTS_C:.c=.o)
# Everything the unit tests link: the analyzer without its main().
ANALYZER_LIB_OBJS := $(filter-out $(B)/analyzer/main.o,$(ANALYZER_OBJS))
UNIT_TESTS    := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/test_*.c))

LIBLANG  := $(B)/liblang.a
MEMC     := $(B)/$(PROG)
MEMC_DYN := $(B)/$(PROG)-dyn
# Without analyzer/main.c there is no program yet, only the library.
ALL_TARGETS := $(LIBLANG) $(if $(wildcard analyzer/main.c),$(MEMC))

# Appended to by every suite ("suite passed failed"); `make check` sums it.
COUNTS ?= $(abspath $(B))/counts

.PHONY: all deps run check check-unit check-golden check-tables check-asan \
	update-golden valgrind check-valgrind install uninstall clean FORCE
.DEFAULT_GOAL := all

all: $(ALL_TARGETS)

# ---- build rules -----------------------------------------------------------

# Objects depend on the exact compiler command line, so changing PREFIX (or
# CFLAGS) rebuilds them (git's GIT-CFLAGS trick).
FLAGS_FILE := $(B)/.build-flags
BUILD_CMD = $(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(LIBS) $(MEMC_LDFLAGS)
$(FLAGS_FILE): FORCE
	@mkdir -p $(@D)
	@echo '$(subst ','\'',$(BUILD_CMD))' | cmp -s - $@ || \
		echo '$(subst ','\'',$(BUILD_CMD))' > $@

# Every object waits for the generated headers (order-only): any of them may
# include a header that includes parser.tab.h, and -MMD only knows that
# after the first build.
$(B)/%.o: %.c $(FLAGS_FILE) | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

# The timeline walk is the compiled model's inner loop: -O3 there is
# measured in docs/performance.md ("The compiled model"); `make
# HOT_CFLAGS=` builds it as the rest.
HOT_CFLAGS ?= -O3
$(B)/analyzer/memory/mem_timeline.o: ALL_CFLAGS += $(HOT_CFLAGS)

$(GEN_OBJS): %.o: %.c $(FLAGS_FILE) | $(GEN_H)
	$(CC) $(ALL_CPPFLAGS) $(GEN_CFLAGS) -c -o $@ $<

# One bison run makes both files (grouped target, GNU make >= 4.3).
$(B)/lang/parser.tab.c $(B)/lang/parser.tab.h &: lang/parser.y
	@mkdir -p $(@D)
	$(BISON) -Wall -Werror -d -o $(B)/lang/parser.tab.c $<

# The same grammar without lookahead correction, for text that checked
# clean at build time (lang/parse.h parse_file_range_clean); its one
# external symbol renamed.
$(B)/lang/parser_nolac.tab.c: lang/parser.y
	@mkdir -p $(@D)
	$(BISON) -Wall -Werror -Fparse.lac=none -o $@ $<
$(B)/lang/parser_nolac.tab.o: ALL_CPPFLAGS += -Dyyparse=parse_yyparse_nolac

$(B)/lang/lexer.c $(B)/lang/lexer.h &: lang/lexer.l $(if $(PARSER_Y),$(B)/lang/parser.tab.h)
	@mkdir -p $(@D)
	$(FLEX) --header-file=$(B)/lang/lexer.h -o $(B)/lang/lexer.c $<

$(DIAG_HELP_C): tools/gen-diag-help.sh lang/diag.def docs/diagnostics.md
	@mkdir -p $(@D)
	tools/gen-diag-help.sh lang/diag.def docs/diagnostics.md > $@.tmp && mv $@.tmp $@

$(DIAG_HELP_C:.c=.o): $(DIAG_HELP_C) $(FLAGS_FILE) | $(GEN_H)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

# Rebuilt from scratch so an object whose source was deleted leaves too.
$(LIBLANG): $(LANG_OBJS) $(GEN_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

# Objects before the archive: the linker resolves an archive's symbols only
# for objects that appear to its left.
$(MEMC): $(ANALYZER_OBJS) $(LIBLANG) $(FLAGS_FILE)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) $(MEMC_LDFLAGS) -o $@ $(ANALYZER_OBJS) $(LIBLANG) $(LIBS)

$(MEMC_DYN): $(ANALYZER_OBJS) $(LIBLANG) $(FLAGS_FILE)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(ANALYZER_OBJS) $(LIBLANG) $(LIBS)

$(B)/memc-stage: $(STAGE_OBJS) $(LIBLANG) $(FLAGS_FILE)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(STAGE_OBJS) $(LIBLANG) $(LIBS)

$(B)/stdlib-digest: tools/stdlib-digest.c $(LIBLANG) $(FLAGS_FILE) | $(GEN_H)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIBLANG) $(LIBS)

$(DIGESTS_C): tools/gen-stdlib-digests.sh $(B)/memc-stage $(B)/stdlib-digest $(STDLIB_SRCS)
	@mkdir -p $(@D)
	tools/gen-stdlib-digests.sh $(B)/memc-stage $(B)/stdlib-digest stdlib > $@.tmp && mv $@.tmp $@

$(DIGESTS_C:.c=.o): $(DIGESTS_C) $(FLAGS_FILE) | $(GEN_H)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(B)/tests/test_%: tests/unit/test_%.c $(ANALYZER_LIB_OBJS) $(LIBLANG) $(FLAGS_FILE) | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< \
		$(ANALYZER_LIB_OBJS) $(LIBLANG) $(CMOCKA) $(LIBS)

-include $(LANG_OBJS:.o=.d) $(GEN_OBJS:.o=.d) $(ANALYZER_OBJS:.o=.d) $(UNIT_TESTS:=.d)

# ---- set-up and demo -------------------------------------------------------

deps:
	@tools/install-deps.sh

RUN_EXAMPLE ?= examples/llama2-13b-zero3.mem

# `memc report` exits 2 for a usage error (such as an unknown command), so
# rc 2 means "no report command yet": fall back to `check`, then --help.
run: deps
	@$(MAKE) --no-print-directory all
	@if [ ! -x $(MEMC) ]; then echo "make run: $(MEMC) is not built yet (no analyzer/main.c)"; exit 0; fi; \
	if [ ! -f $(RUN_EXAMPLE) ]; then \
		echo "make run: $(RUN_EXAMPLE) does not exist yet; showing --help"; \
		$(MEMC) --help || true; exit 0; \
	fi; \
	echo "$$ $(MEMC) report $(RUN_EXAMPLE)"; \
	rc=0; $(MEMC) report $(RUN_EXAMPLE) || rc=$$?; \
	if [ $$rc -eq 2 ]; then \
		echo "$$ $(MEMC) check $(RUN_EXAMPLE)"; \
		rc=0; $(MEMC) check $(RUN_EXAMPLE) || rc=$$?; \
		[ $$rc -ne 2 ] || rc=0; \
	fi; exit $$rc

# ---- tests -----------------------------------------------------------------

# Run every cmocka binary; count test cases from cmocka's progress lines on
# stdout. A binary that dies without reporting a failure counts as one.
check-unit: $(UNIT_TESTS)
	@mkdir -p $(dir $(COUNTS)); pass=0; fail=0; \
	for t in $(UNIT_TESTS); do \
		rc=0; $$t >$$t.log 2>&1 || rc=$$?; \
		p=$$(grep -c '^\[       OK \]' $$t.log); f=$$(grep -c '^\[  FAILED  \] [^0-9]' $$t.log); \
		if [ $$rc -ne 0 ] && [ $$f -eq 0 ]; then f=1; fi; \
		if [ $$rc -ne 0 ] || [ $$f -ne 0 ]; then echo "FAIL: $$t"; cat $$t.log; fi; \
		pass=$$((pass + p)); fail=$$((fail + f)); \
	done; \
	echo "unit$(if $(filter 1,$(SAN)), (asan)): $$pass passed, $$fail failed"; \
	echo "unit$(if $(filter 1,$(SAN)),-asan) $$pass $$fail" >> $(COUNTS); \
	test $$fail -eq 0

check-golden: all
	@MEMC_COUNTS=$(COUNTS) MEMC_SUITE_NAME=golden$(if $(filter 1,$(SAN)),-asan) \
		tests/run-golden.sh $(MEMC)

check-tables:
	@MEMC_COUNTS=$(COUNTS) tests/check-tables.sh

update-golden: all
	@UPDATE=1 tests/run-golden.sh $(MEMC)

# Leaks of kind "definite" or "indirect" fail the case: with one arena per
# run there should be none.
valgrind: all $(MEMC_DYN)
	@MEMC_WRAP="$(VALGRIND) -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect" \
		MEMC_COUNTS=$(COUNTS) MEMC_SUITE_NAME=valgrind tests/run-golden.sh $(MEMC_DYN)

check-asan:
	@$(MAKE) --no-print-directory B=build-asan SAN=1 COUNTS=$(COUNTS) check-unit check-golden

# Run one suite for `make check`, recording a failure even when the suite
# could not run at all (a build error writes no counts line).
# $(1): suite name, $(2): make arguments
define run_suite
	@n0=$$(wc -l < $(COUNTS)); \
	$(MAKE) --no-print-directory COUNTS=$(COUNTS) $(2) || true; \
	if [ $$(wc -l < $(COUNTS)) -eq $$n0 ]; then \
		echo "$(1): could not run"; echo "$(1) 0 1" >> $(COUNTS); fi
endef

# Suites that tests/*.mk add to `make check`: EXTRA_CHECKS += NAME runs
# target check-NAME, which must append its counts line like the others.
EXTRA_CHECKS ?=
define newline


endef

# A broken build counts as one failure and the suites still run, so the
# summary is always printed. It is the last line on stdout (make's own
# "*** Error" note, on failure, goes to stderr) and is kept in
# $(B)/summary for .ci/run.
check: deps
	@mkdir -p $(B); : > $(COUNTS)
	@$(MAKE) --no-print-directory all || { echo "build: failed"; echo "build 0 1" >> $(COUNTS); }
	$(call run_suite,unit,check-unit)
	$(call run_suite,golden,check-golden)
	$(call run_suite,tables,check-tables)
	$(call run_suite,unit-asan,B=build-asan SAN=1 check-unit)
	$(call run_suite,golden-asan,B=build-asan SAN=1 check-golden)
	$(foreach s,$(EXTRA_CHECKS),$(call run_suite,$(s),check-$(s))$(newline))
	@awk '{ p += $$2; f += $$3 } END { printf "%d passed, %d failed\n", p, f }' $(COUNTS) \
		| tee $(B)/summary
	@grep -q ' 0 failed$$' $(B)/summary

check-valgrind: valgrind

# ---- install ---------------------------------------------------------------

# Man pages, shell completions and the GitHub problem matcher go where
# Debian and Fedora look for them (the zsh folder is Debian's; Fedora's
# is $(DATADIR)/zsh/site-functions: set ZSHCOMPDIR).
MANDIR      ?= $(DATADIR)/man
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR  ?= $(DATADIR)/zsh/vendor-completions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
# Debian's vim looks in vimfiles/ for syntax and ftdetect files of packages.
VIMDIR      ?= $(DATADIR)/vim/vimfiles
EXTRA_FILES := $(MANDIR)/man1/memc.1=docs/man/memc.1 $(MANDIR)/man5/memc.5=docs/man/memc.5 \
	       $(BASHCOMPDIR)/memc=contrib/completion/memc.bash \
	       $(ZSHCOMPDIR)/_memc=contrib/completion/_memc \
	       $(FISHCOMPDIR)/memc.fish=contrib/completion/memc.fish \
	       $(DATADIR)/memc/memc-problem-matcher.json=contrib/github/memc-problem-matcher.json \
	       $(VIMDIR)/syntax/mem.vim=contrib/vim/syntax/mem.vim \
	       $(VIMDIR)/ftdetect/mem.vim=contrib/vim/ftdetect/mem.vim

install: all
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(STDLIBDIR)
	$(INSTALL) -m 0755 $(MEMC) $(DESTDIR)$(BINDIR)/$(PROG)
	@if [ -d stdlib ]; then \
		cd stdlib && find . -type d -exec $(INSTALL) -d '$(DESTDIR)$(STDLIBDIR)/{}' \; && \
		find . -type f -name '*.mem' -exec $(INSTALL) -m 0644 '{}' '$(DESTDIR)$(STDLIBDIR)/{}' \; ; \
	fi
	$(foreach f,$(EXTRA_FILES),$(INSTALL) -D -m 0644 $(word 2,$(subst =, ,$(f))) $(DESTDIR)$(word 1,$(subst =, ,$(f)))$(newline))

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/$(PROG)
	rm -rf $(DESTDIR)$(STDLIBDIR)
	rm -f $(foreach f,$(EXTRA_FILES),$(DESTDIR)$(word 1,$(subst =, ,$(f))))
	-rmdir $(DESTDIR)$(DATADIR)/memc 2>/dev/null || true

clean:
	rm -rf build build-asan

# Later targets (bench, validate, fuzz, ...) come from here.
-include $(wildcard tests/*.mk)
