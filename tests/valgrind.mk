# SPDX-License-Identifier: MIT
#
# make valgrind-bad: only the hostile inputs of tests/bad/ under valgrind,
# the quick check after touching the lexer or the importer (the whole
# `make valgrind` takes minutes). Same flags as `make valgrind`: definite
# and indirect leaks fail a case, since one arena per run should leave none.

.PHONY: valgrind-bad

valgrind-bad: all $(MEMC_DYN)
	@MEMC_WRAP="$(VALGRIND) -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect" \
		MEMC_COUNTS=$(COUNTS) MEMC_SUITE_NAME=valgrind-bad tests/run-golden.sh $(MEMC_DYN) tests/bad
