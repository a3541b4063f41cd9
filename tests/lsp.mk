# SPDX-License-Identifier: MIT
# memc lsp: a scripted session over stdio (tests/lsp/session.sh), and the
# editor files of contrib/ (tests/lsp/check-editors.sh). Needs jq.
EXTRA_CHECKS += lsp editors
check-lsp: all
	@MEMC_COUNTS=$(COUNTS) tests/lsp/session.sh $(MEMC)
check-editors:
	@MEMC_COUNTS=$(COUNTS) tests/lsp/check-editors.sh
.PHONY: check-lsp check-editors
