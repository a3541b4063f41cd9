# SPDX-License-Identifier: MIT
# `memc import` of real config.json files: exact parameter counts (make check).
EXTRA_CHECKS += config-import
check-config-import: all
	@MEMC_COUNTS=$(COUNTS) tests/config-import/check-import.sh $(MEMC)
.PHONY: check-config-import
