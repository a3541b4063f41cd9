/* SPDX-License-Identifier: MIT */
/*
 * list.c - memc list: the declarations visible from the given files.
 */
#include <stdio.h>

#include "analyzer/driver.h"

int driver_list(struct driver_opts *o)
{
	(void)o;
	fputs("memc: list is not implemented yet\n", stderr);
	return 2;
}
