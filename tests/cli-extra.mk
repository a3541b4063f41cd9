# SPDX-License-Identifier: MIT
# The command line around memc (make check): man pages render without a
# warning and list every option of --help (tests/cli-extra/check-man.sh).
EXTRA_CHECKS += man
check-man: all
	@MEMC_COUNTS=$(COUNTS) tests/cli-extra/check-man.sh $(MEMC)
.PHONY: check-man

# Shell completion: the bash function called with COMP_WORDS, zsh -n and
# fish -n where installed (tests/cli-extra/check-completion.sh).
EXTRA_CHECKS += completion
check-completion: all
	@MEMC_COUNTS=$(COUNTS) tests/cli-extra/check-completion.sh $(MEMC)
.PHONY: check-completion

# The GitHub problem matcher's pattern against every golden .err
# (tests/cli-extra/check-matcher.sh; docs/ci.md).
EXTRA_CHECKS += problem-matcher
check-problem-matcher:
	@MEMC_COUNTS=$(COUNTS) tests/cli-extra/check-matcher.sh
.PHONY: check-problem-matcher

# make install DESTDIR=... PREFIX=/usr from a build of its own, then
# uninstall (tests/cli-extra/check-install.sh).
EXTRA_CHECKS += install
check-install:
	@MEMC_COUNTS=$(COUNTS) tests/cli-extra/check-install.sh
.PHONY: check-install
