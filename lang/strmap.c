/* SPDX-License-Identifier: MIT */
#include "lang/strmap.h"

#include <string.h>

#include "lang/arena.h"
#include "lang/source.h"

/* Keys whose digests are equal share a chain (u64map keeps one value per
 * key): a collision costs a comparison, never an answer. */
struct strmap_entry {
	const char *key;
	size_t len;
	void *val;
	struct strmap_entry *next;
};

void *strmap_get(const struct strmap *m, const char *key, size_t len)
{
	for (const struct strmap_entry *e = u64map_get(&m->chains, src_digest(key, len)); e; e = e->next)
		if (e->len == len && memcmp(e->key, key, len) == 0)
			return e->val;
	return NULL;
}

const char *strmap_put(struct strmap *m, struct arena *a, const char *key, size_t len, void *val)
{
	uint64_t h = src_digest(key, len);
	struct strmap_entry *e = ARENA_NEW(a, struct strmap_entry), *head = u64map_get(&m->chains, h);
	char *copy = ARENA_NEW_ARRAY(a, char, len + 1);

	memcpy(copy, key, len);
	copy[len] = '\0';
	*e = (struct strmap_entry){ copy, len, val, NULL };
	if (!head) {
		u64map_put(&m->chains, a, h, e);
	} else {
		while (head->next)
			head = head->next;
		head->next = e;
	}
	m->n++;
	return copy;
}
