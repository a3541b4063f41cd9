/* SPDX-License-Identifier: MIT */
/*
 * str.h - string equality for the table searches on the front end's hot
 * paths (type words, record and job keys, reserved names, dtype and unit
 * spellings), asked at every binding and field of every walk.
 */
#ifndef MEMC_LANG_STR_H
#define MEMC_LANG_STR_H

#include <stdbool.h>
#include <string.h>

/* strcmp() == 0 behind a first-byte test: most comparisons of a table
 * search fail on that byte, without a call. */
static inline bool str_is(const char *s, const char *word)
{
	return s[0] == word[0] && strcmp(s, word) == 0;
}

#endif
