# SPDX-License-Identifier: MIT
# The Makefile includes tests/*.mk only; the fuzz targets live next to
# their harness.
include tests/fuzz/fuzz.mk
