# SPDX-License-Identifier: MIT
# make bench: whole-process `memc report` against a program that only
# starts, a 10,000-train-block file, the in-process variant rate and peak
# RSS for each, written to docs/performance.md (tests/bench/bench.sh).
# Speed targets live here, never in `make check`.
BENCH_VARIANTS ?= 10000

$(B)/bench-sweep: tests/bench/sweep.c $(filter-out $(B)/analyzer/main.o,$(ANALYZER_OBJS)) $(B)/liblang.a
	$(CC) $(ALL_CFLAGS) -I. -I$(B) -o $@ $^ $(LIBS)

$(B)/bench-compiled: tests/bench/compiled.c $(filter-out $(B)/analyzer/main.o,$(ANALYZER_OBJS)) $(B)/liblang.a
	$(CC) $(ALL_CFLAGS) -I. -I$(B) -o $@ $^ $(LIBS)

$(B)/bench-pairs: tests/bench/pairs.c
	$(CC) $(ALL_CFLAGS) -o $@ $<

# Linked like memc (even a shared library it does not call is loaded),
# so the loader's share is the same on both sides.
$(B)/bench-empty: tests/bench/empty.c
	$(CC) $(ALL_CFLAGS) $(MEMC_LDFLAGS) -o $@ $< -Wl,--no-as-needed $(LIBS)

bench: all $(B)/bench-sweep $(B)/bench-compiled $(B)/bench-pairs $(B)/bench-empty $(B)/bench-rusage $(MEMC_DYN)
	@tests/bench/bench.sh $(MEMC) $(B)
.PHONY: bench

# make bench-limits: the worst inputs at each limit of docs/limits.md,
# generated into build/hostile/, each run under a 2 s / 200 MB budget.
$(B)/bench-rusage: tests/bench/rusage.c
	$(CC) $(ALL_CFLAGS) -o $@ $<

bench-limits: all $(B)/bench-rusage
	@tests/bench/hostile.sh $(MEMC) $(B)/bench-rusage $(B)/hostile
.PHONY: bench-limits
