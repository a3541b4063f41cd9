# SPDX-License-Identifier: MIT
# memc report --format html: a self-contained page whose chart agrees with
# the numbers, rendered by headless chromium where it can start
# (tests/html/check-html.sh; make check).
EXTRA_CHECKS += html
check-html: all
	@MEMC_COUNTS=$(COUNTS) tests/html/check-html.sh $(MEMC)
.PHONY: check-html
