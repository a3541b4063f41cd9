# SPDX-License-Identifier: MIT
# make bench: time memc on every example and a 10,000-variant sweep in one
# process. Speed targets live here, never in `make check`.
BENCH_VARIANTS ?= 10000

$(B)/bench-sweep: tests/bench/sweep.c $(filter-out $(B)/analyzer/main.o,$(ANALYZER_OBJS)) $(B)/liblang.a
	$(CC) $(ALL_CFLAGS) -I. -I$(B) -o $@ $^ $(LIBS)

bench: all $(B)/bench-sweep
	@for f in examples/*.mem; do \
		s=$$(date +%s%N); for i in 1 2 3 4 5 6 7 8 9 10; do $(MEMC) report $$f >/dev/null 2>&1; done; \
		e=$$(date +%s%N); echo "$$f: $$(( (e - s) / 10000 )) us per memc report (process start included)"; \
	done
	@$(B)/bench-sweep examples/llama2-13b-zero3.mem $(BENCH_VARIANTS)
	@$(B)/bench-sweep examples/llama2-70b-3d.mem $(BENCH_VARIANTS)
.PHONY: bench

# make bench-limits: the worst inputs at each limit of docs/limits.md,
# generated into build/hostile/, each run under a 2 s / 200 MB budget.
$(B)/bench-rusage: tests/bench/rusage.c
	$(CC) $(ALL_CFLAGS) -o $@ $<

bench-limits: all $(B)/bench-rusage
	@tests/bench/hostile.sh $(MEMC) $(B)/bench-rusage $(B)/hostile
.PHONY: bench-limits
