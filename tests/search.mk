# SPDX-License-Identifier: MIT
# make bench-search: memc search's speed target (tests/search/bench.sh,
# docs/search.md). A speed target, so never in make check.
bench-search: all
	@tests/search/bench.sh $(MEMC)
.PHONY: bench-search
