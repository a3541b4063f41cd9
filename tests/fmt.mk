# SPDX-License-Identifier: MIT
# The stdlib and the examples are in the canonical layout of memc fmt
# (make check; docs/fmt.md).
EXTRA_CHECKS += fmt
check-fmt: all
	@MEMC_COUNTS=$(COUNTS) tests/check-fmt.sh $(MEMC)
.PHONY: check-fmt
