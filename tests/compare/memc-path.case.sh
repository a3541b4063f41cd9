# MEMC_PATH is read by compare as by check: a missing folder is an error.
MEMC_PATH=tests/compare/no-such-dir $MEMC compare --job tiny tests/compare/tiny.mem tests/compare/tiny.json
