/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "hashmap.h"
#include "util.h"

uint64_t hash_string(const void *key)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (const unsigned char *p = key; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h;
}

bool equal_string(const void *a, const void *b)
{
	return strcmp(a, b) == 0;
}

uint64_t hash_int(const void *key)
{
	uint64_t x = (uint64_t)(uintptr_t)key;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

bool equal_int(const void *a, const void *b)
{
	return a == b;
}

void hashmap_init(struct hashmap *m, uint64_t (*hash)(const void *),
		  bool (*equal)(const void *, const void *))
{
	*m = (struct hashmap){ .hash = hash, .equal = equal };
}

void hashmap_done(struct hashmap *m)
{
	for (size_t i = 0; i < m->n_buckets; i++) {
		struct hashmap_entry *e = m->buckets[i];

		while (e) {
			struct hashmap_entry *n = e->next;

			free(e);
			e = n;
		}
	}
	free(m->buckets);
	m->buckets = NULL;
	m->n_buckets = m->n_items = 0;
}

static int grow(struct hashmap *m)
{
	size_t nb = m->n_buckets ? m->n_buckets * 2 : 64;
	struct hashmap_entry **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_buckets; i++) {
		struct hashmap_entry *e = m->buckets[i];

		while (e) {
			struct hashmap_entry *n = e->next;
			size_t k = e->hash & (nb - 1);

			e->next = b[k];
			b[k] = e;
			e = n;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->n_buckets = nb;
	return 0;
}

static struct hashmap_entry **find(const struct hashmap *m, const void *key, uint64_t h)
{
	struct hashmap_entry **p;

	if (!m->n_buckets)
		return NULL;
	for (p = &m->buckets[h & (m->n_buckets - 1)]; *p; p = &(*p)->next)
		if ((*p)->hash == h && m->equal((*p)->key, key))
			return p;
	return NULL;
}

void *hashmap_get(const struct hashmap *m, const void *key)
{
	struct hashmap_entry **p = find(m, key, m->hash(key));

	return p ? (*p)->value : NULL;
}

int hashmap_put(struct hashmap *m, const void *key, void *value)
{
	uint64_t h = m->hash(key);
	struct hashmap_entry *e;
	size_t k;

	if (find(m, key, h))
		return -EEXIST;
	if (m->n_items >= m->n_buckets * 3 / 4) {
		int r = grow(m);

		if (r < 0)
			return r;
	}
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	k = h & (m->n_buckets - 1);
	*e = (struct hashmap_entry){ .next = m->buckets[k], .key = key, .value = value, .hash = h };
	m->buckets[k] = e;
	m->n_items++;
	return 0;
}

void *hashmap_remove(struct hashmap *m, const void *key)
{
	struct hashmap_entry **p = find(m, key, m->hash(key)), *e;
	void *v;

	if (!p)
		return NULL;
	e = *p;
	*p = e->next;
	v = e->value;
	free(e);
	m->n_items--;
	return v;
}

struct hashmap_entry *hashmap_next(const struct hashmap *m, size_t *bucket, struct hashmap_entry *prev)
{
	if (prev && prev->next)
		return prev->next;
	if (prev)
		(*bucket)++;
	for (; *bucket < m->n_buckets; (*bucket)++)
		if (m->buckets[*bucket])
			return m->buckets[*bucket];
	return NULL;
}

struct hashmap_entry *hashmap_iter_next(const struct hashmap *m, struct hashmap_iter *it)
{
	struct hashmap_entry *e = it->next;

	for (; !e && it->bucket < m->n_buckets; it->bucket++)
		e = m->buckets[it->bucket];
	if (e)
		it->next = e->next;
	return e;
}

void *hashmap_steal(struct hashmap *m, size_t *cursor)
{
	for (; *cursor < m->n_buckets; (*cursor)++) {
		struct hashmap_entry *e = m->buckets[*cursor];
		void *v;

		if (!e)
			continue;
		m->buckets[*cursor] = e->next;
		v = e->value;
		free(e);
		m->n_items--;
		return v;
	}
	return NULL;
}
