# SPDX-License-Identifier: MIT
# The command line around memc (make check): man pages render without a
# warning and list every option of --help (tests/cli-extra/check-man.sh).
EXTRA_CHECKS += man
check-man: all
	@MEMC_COUNTS=$(COUNTS) tests/cli-extra/check-man.sh $(MEMC)
.PHONY: check-man
