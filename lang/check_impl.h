/* SPDX-License-Identifier: MIT */
/*
 * check_impl.h - shared by check.c (records, templates) and check_train.c
 * (train blocks, template bodies).
 */
#ifndef MEMC_LANG_CHECK_IMPL_H
#define MEMC_LANG_CHECK_IMPL_H

#include "lang/check.h"

struct field_spec {
	const char *name;
	const char *type;		/* an eval type name, "dtype?" (or none), "enum:a|b", "record" */
	bool required;
};

bool check_duplicate_field(struct eval *ev, const struct field *first, const struct field *f);
void check_list_add(char *buf, size_t n, const char *name);
const struct field_spec *check_spec_find(const struct field_spec *specs, const char *name);
void check_unknown_field(struct eval *ev, const struct field_spec *specs, const struct field *f,
			 const char *what);
bool check_value_type(struct eval *ev, struct value v, const char *type, const char *what);
void check_body_static(struct eval *ev, const struct decl *d);
struct check_job *check_train(struct eval *ev, const struct decl *d);

#endif
