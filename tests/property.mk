# SPDX-License-Identifier: MIT
#
# Property suite (tests/property/, docs/testing.md "Property tests").
#
#   make check-property    (part of `make check`) PROPERTY_CHECK_VARIANTS
#                          variants with seed PROPERTY_SEED, then the
#                          regression goldens of tests/property/regress/
#   make fuzz-property     PROPERTY_VARIANTS variants (also run by `make fuzz`)
#   build/tests/run-property --seed S --only V --verbose   replay one variant

PROPERTY_BIN  := $(B)/tests/run-property
PROPERTY_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard tests/property/*.c))
PROPERTY_SEED ?= 1
PROPERTY_CHECK_VARIANTS ?= 300
PROPERTY_VARIANTS ?= 5000
PROPERTY_ARGS = --stdlib stdlib --tmp $(B)/property-job-$$$$.mem

EXTRA_CHECKS += property
.PHONY: check-property fuzz-property

$(PROPERTY_BIN): $(PROPERTY_OBJS) $(ANALYZER_LIB_OBJS) $(LIBLANG)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $(PROPERTY_OBJS) $(ANALYZER_LIB_OBJS) $(LIBLANG) $(LIBS)

-include $(PROPERTY_OBJS:.o=.d)

# One count per property check, plus the regression goldens (their own
# count line, like any golden suite).
check-property: $(PROPERTY_BIN) all
	@mkdir -p $(dir $(COUNTS))
	@rc=0; $(PROPERTY_BIN) $(PROPERTY_ARGS) --seed $(PROPERTY_SEED) \
		--variants $(PROPERTY_CHECK_VARIANTS) >$(B)/property.log 2>&1 || rc=$$?; \
	grep -v '^property: ' $(B)/property.log | head -200; tail -1 $(B)/property.log; \
	tail -1 $(B)/property.log | awk '/^property: / { print "property", $$2, $$4; ok = 1 } \
		END { if (!ok) print "property 0 1" }' >> $(COUNTS); \
	MEMC_COUNTS=$(COUNTS) MEMC_SUITE_NAME=property-regress \
		tests/run-golden.sh $(MEMC) tests/property/regress || rc=1; \
	test $$rc -eq 0

fuzz-property: $(PROPERTY_BIN) all
	$(PROPERTY_BIN) $(PROPERTY_ARGS) --seed $(PROPERTY_SEED) --variants $(PROPERTY_VARIANTS)

fuzz: fuzz-property
