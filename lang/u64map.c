/* SPDX-License-Identifier: MIT */
#include "lang/u64map.h"

#include "lang/arena.h"

/* Keys are often pointers (low bits zero, high bits shared): mix them. */
static size_t slot_of(uint64_t key, size_t cap)
{
	key ^= key >> 29;
	key *= 0x9E3779B97F4A7C15u;
	return (size_t)(key >> 7) & (cap - 1);
}

static void place(uint64_t *keys, void **vals, size_t cap, uint64_t key, void *val)
{
	size_t i = slot_of(key, cap);

	while (vals[i])
		i = (i + 1) & (cap - 1);
	keys[i] = key;
	vals[i] = val;
}

void *u64map_get(const struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = slot_of(key, m->cap); m->vals[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->vals[i];
	return NULL;
}

void u64map_put(struct u64map *m, struct arena *a, uint64_t key, void *val)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		uint64_t *keys = ARENA_NEW_ARRAY(a, uint64_t, cap);
		void **vals = ARENA_NEW_ARRAY(a, void *, cap);

		for (size_t i = 0; i < m->cap; i++)
			if (m->vals[i])
				place(keys, vals, cap, m->keys[i], m->vals[i]);
		m->keys = keys;
		m->vals = vals;
		m->cap = cap;
	}
	place(m->keys, m->vals, m->cap, key, val);
	m->n++;
}
