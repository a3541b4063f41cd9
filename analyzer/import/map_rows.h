/* SPDX-License-Identifier: MIT */
/*
 * map_rows.h - short forms for the rows of a key table (struct map_row in
 * import_impl.h), so each table reads as a list of source key -> memc key.
 * Include it only in a file that defines such a table, after import_impl.h.
 */
#ifndef MEMC_ANALYZER_IMPORT_MAP_ROWS_H
#define MEMC_ANALYZER_IMPORT_MAP_ROWS_H

#define C(s, d)    { s, d, MAP_COUNT, NULL }		/* a whole number */
#define B(s, d)    { s, d, MAP_BOOL, NULL }		/* true or false */
#define E(s, d, a) { s, d, MAP_ENUM, a }		/* "src=memc|..." */
#define T(s, d, v) { s, d, MAP_IF_TRUE, v }		/* when true, d = v */
#define MUST(s, v) { s, NULL, MAP_MUST, v }		/* any other value is an error */
#define IGN(s)     { s, NULL, MAP_IGNORE, NULL }	/* changes no memory */
#define NOTE(s, w) { s, NULL, MAP_NOTE, w }		/* a comment in the output */
#define R(s, d)    { s, d, MAP_RATIO, NULL }		/* a number from 0 to 1 */
#define K(s, d, v) { s, d, MAP_IMPLIES, v }		/* present (not false): d = v */

#endif
