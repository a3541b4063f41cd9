# SPDX-License-Identifier: MIT
# The JSON, SARIF and GitHub goldens of tests/output are well-formed
# (tests/output/check-schema.sh; make check). Needs jq (make deps).
EXTRA_CHECKS += output-schema
check-output-schema:
	@MEMC_COUNTS=$(COUNTS) tests/output/check-schema.sh
.PHONY: check-output-schema
