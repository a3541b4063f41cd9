# SPDX-License-Identifier: MIT
# memc lsp: a scripted session over stdio (tests/lsp/session.sh), run on
# the plain and the sanitizer build, and the editor files of contrib/
# (tests/lsp/check-editors.sh). Needs jq.
EXTRA_CHECKS += lsp lsp-asan editors
check-lsp: all
	@MEMC_COUNTS=$(COUNTS) tests/lsp/session.sh $(MEMC)
check-lsp-asan:
	@$(MAKE) --no-print-directory B=build-asan SAN=1 all
	@MEMC_COUNTS=$(COUNTS) MEMC_SUITE_NAME=lsp-asan tests/lsp/session.sh build-asan/$(PROG)
check-editors:
	@MEMC_COUNTS=$(COUNTS) tests/lsp/check-editors.sh
.PHONY: check-lsp check-lsp-asan check-editors
