# SPDX-License-Identifier: MIT
#
# Capacity boundaries (tests/validation/cap/, README there): published
# "OOM" / "fits" observations, one .mem per CAP row of the validation data.
#
#   make check-cap   (part of `make check`) memc puts every configuration on
#                    the side of its GPU's memory that was observed
#   make cap-table   the figures as the Markdown rows of docs/accuracy.md's
#                    "Capacity boundaries" section

.PHONY: check-cap cap-table

EXTRA_CHECKS += cap

check-cap: all
	@mkdir -p $(dir $(COUNTS))
	@MEMC_COUNTS=$(COUNTS) tests/validation/cap/check-cap.sh --memc $(MEMC)

cap-table: all
	@tests/validation/cap/check-cap.sh --memc $(MEMC) --table
