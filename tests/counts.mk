# SPDX-License-Identifier: MIT
# Published parameter counts of every stdlib architecture (make check).
EXTRA_CHECKS += counts
check-counts: all
	@MEMC_COUNTS=$(COUNTS) tests/check-counts.sh $(MEMC)
.PHONY: check-counts
