# SPDX-License-Identifier: MIT
#
# Accuracy against published measurements (tests/validation/, README there).
#
#   make validate          predict every row of tests/validation/rows.tsv,
#                          print errors and statistics, rewrite the generated
#                          section of docs/accuracy.md and its guard line
#   make check-validation  (part of `make check`) every row file passes
#                          `memc check`; the TEST=yes median and p90 absolute
#                          error are no worse than docs/accuracy.md's guard
#                          line; passes while no row is analysed

.PHONY: validate check-validation

EXTRA_CHECKS += validation

VALIDATE := tests/validation/validate.sh

validate: all
	@$(VALIDATE) --memc $(MEMC) --write

check-validation: all
	@mkdir -p $(dir $(COUNTS))
	@MEMC_COUNTS=$(COUNTS) $(VALIDATE) --memc $(MEMC) --check
