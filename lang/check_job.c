/* SPDX-License-Identifier: MIT */
/*
 * check_job.c - a train block's keys by name. The checker and the
 * builder ask for a key about two hundred times per block, many of them
 * for keys the block does not write (fsdp2.*, fp8.*, rl.*, ...), so each
 * job keeps a 256-bit filter of its keys' first three bytes
 * (check_key_bit, lang/check.h): a key whose bit is clear is answered
 * without a scan. A set bit only means the scan runs, as it did before:
 * the filter can make a lookup faster, never give another answer.
 */
#include <string.h>

#include "lang/check_impl.h"
#include "lang/str.h"

static bool maybe(const struct check_job *j, unsigned bit)
{
	return (j->key_filter[bit >> 6] >> (bit & 63)) & 1u;
}

void check_job_index_key(struct check_job *j, const char *name)
{
	unsigned bit = check_key_bit(name);

	j->key_filter[bit >> 6] |= UINT64_C(1) << (bit & 63);
}

/* Every key of record @record starts "record.": with two bytes of the
 * name known, so are its keys' first three. An empty `fsdp2 { }`
 * flattens to no key, yet asks for the record with all its defaults: the
 * block's own fields (a base's too) count as well. */
bool check_job_record(const struct check_job *job, const char *record)
{
	size_t n = strlen(record);
	char head[4] = { record[0], n > 1 ? record[1] : '\0', n > 2 ? record[2] : '.', '\0' };

	if (n < 2 || maybe(job, check_key_bit(head)))
		for (unsigned i = 0; i < job->nfields; i++)
			if (!strncmp(job->names[i], record, n) && job->names[i][n] == '.')
				return true;
	for (const struct field *f = job->block; f; f = f->next)
		if (!f->sub && !f->value && !strcmp(f->name, record))
			return true;
	return false;
}

bool check_job_scan(const struct check_job *job, const char *key, struct value *out)
{
	for (unsigned i = 0; i < job->nfields; i++)
		if (str_is(job->names[i], key)) {
			*out = job->fields[i];
			return true;
		}
	return false;
}
