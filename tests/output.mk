# SPDX-License-Identifier: MIT
# The JSON, SARIF and GitHub goldens of tests/output are well-formed
# (tests/output/check-schema.sh; make check). Needs jq (make deps); the
# check against the official SARIF 2.1.0 schema also node and npm, and
# fetches that schema and ajv into build/sarif-official the first time.
EXTRA_CHECKS += output-schema
check-output-schema: all
	@MEMC_COUNTS=$(COUNTS) MEMC=$(MEMC) tests/output/check-schema.sh
.PHONY: check-output-schema
