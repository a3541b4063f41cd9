# SPDX-License-Identifier: MIT
# Every stdlib file and every ```mem block of docs/ checks cleanly (make check).
EXTRA_CHECKS += stdlib
check-stdlib: all
	@MEMC_COUNTS=$(COUNTS) tests/check-stdlib.sh $(MEMC)
.PHONY: check-stdlib
