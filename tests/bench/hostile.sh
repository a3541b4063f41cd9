#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
#   tests/bench/hostile.sh MEMC RUSAGE [OUTDIR]
#
# `make bench-limits`: builds the worst inputs we know of at each limit of
# docs/limits.md (generated, since most are megabytes), runs `memc check`
# and `memc report` on each under RUSAGE (tests/bench/rusage.c) and prints
# wall time, peak RSS and exit status. The budget for hostile input is 2 s
# and 200 MB per run: a row past it is marked OVER and the script exits 1.
# Not a test (timings never go into `make check`): the figures are the ones
# docs/limits.md quotes.
set -euo pipefail
memc="$1"
rusage="$2"
out="${3:-build/hostile}"
mkdir -p "$out"
over=0

head_job() { # the stdlib imports every generated job needs
	printf 'import "gpus/nvidia"\nimport "models/llama"\nimport "optimizers"\nimport "precision"\n'
}

gen_fanout() { # an undefined layer under 40 levels of 2x fan-out, 20,000 other names
	{
		for i in $(seq 1 20000); do printf 'let name_%d = %d\n' "$i" "$i"; done
		printf 'layer l0(h: count) { undefined_layer(h) }\n'
		for i in $(seq 1 40); do
			printf 'layer l%d(h: count) { l%d(h)\n l%d(h) }\n' "$i" $((i - 1)) $((i - 1))
		done
		printf 'model m { l40(4) }\n'
	} > "$out/fanout.mem"
}

gen_jobs() { # 95,000 train blocks on llama2_7b (about 15 MiB)
	{
		head_job
		for i in $(seq 1 95000); do
			printf 'train t%d {\n  model = llama2_7b\n  cluster = 8 x A100_80GB\n  precision = bf16_mixed\n  optimizer = adamw\n  micro_batch = %d\n  seq_len = 4096\n}\n' "$i" $((1 + i % 8))
		done
	} > "$out/jobs.mem"
}

gen_repeats() { # 64 nested repeats of 2 in a layer (2^64 parameters)
	{
		printf 'layer deep(h: count) {\n'
		for _ in $(seq 1 64); do printf 'repeat 2 {\n'; done
		printf 'param w : [h]\n'
		for _ in $(seq 1 64); do printf '}\n'; done
		printf '}\nmodel m { deep(1) }\n'
	} > "$out/repeats.mem"
}

gen_list() { # a list literal of five million 1s (10 MB)
	awk 'BEGIN { printf "let x = ["; for (i = 0; i < 5000000; i++) printf "1,"; print "1]" }' > "$out/list.mem"
}

gen_errors() { # a million syntax errors
	awk 'BEGIN { for (i = 0; i < 1000000; i++) print ")" }' > "$out/errors.mem"
}

gen_imports() { # a chain of 10,000 imports
	mkdir -p "$out/chain"
	for i in $(seq 0 9999); do printf 'import "c%d"\n' $((i + 1)) > "$out/chain/c$i.mem"; done
	: > "$out/chain/c10000.mem"
}

gen_cluster() { # a cluster product past 2^64 and a degree past 2^32
	{
		head_job
		printf 'train a {\n  model = llama2_7b\n  cluster = 3 x 6148914691236517206 x A100_80GB\n  precision = bf16_mixed\n  optimizer = adamw\n  micro_batch = 1\n  seq_len = 4096\n}\n'
		printf 'train b {\n  model = llama2_7b\n  cluster = 4294967297 x A100_80GB\n  precision = bf16_mixed\n  optimizer = adamw\n  micro_batch = 1\n  seq_len = 4096\n}\n'
		printf 'train c {\n  model = llama2_7b\n  cluster = 8 x A100_80GB\n  precision = bf16_mixed\n  optimizer = adamw\n  micro_batch = 9223372036854775807\n  seq_len = 200000000000000\n}\n'
	} > "$out/cluster.mem"
}

measure() { # name file...
	local name="$1" cmd r
	shift
	for cmd in check report; do
		"$rusage" "$out/$name.$cmd.time" "$memc" "$cmd" "$@" 2>"$out/$name.$cmd.err" >/dev/null
		read -r wall rss rc _ < "$out/$name.$cmd.time"
		local flag=""
		if awk -v w="$wall" -v m="$rss" 'BEGIN { exit !(w > 2 || m > 200) }'; then flag=" OVER"; over=1; fi
		if [ "$rc" -ge 128 ]; then flag="$flag CRASH"; over=1; fi
		printf '%-10s %-7s %7.3f s %8.1f MB  exit %s%s  %s\n' "$name" "$cmd" "$wall" "$rss" "$rc" "$flag" \
			"$(grep -m1 -o '\[[a-z-]*\]' "$out/$name.$cmd.err" || true)"
	done
}

gen_fanout; gen_jobs; gen_repeats; gen_list; gen_errors; gen_imports; gen_cluster
printf '%-10s %-7s %9s %11s  %s\n' input command wall "peak RSS" "exit, first diagnostic"
measure fanout "$out/fanout.mem"
measure jobs "$out/jobs.mem"
measure repeats "$out/repeats.mem"
measure list "$out/list.mem"
measure errors "$out/errors.mem"
measure imports "$out/chain/c0.mem"
measure cluster "$out/cluster.mem"
exit $over
