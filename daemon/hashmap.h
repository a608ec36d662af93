/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small chained hash map for pid- and string-keyed tables. Keys are
 * borrowed from the value they index: the caller owns both. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_entry {
	struct hashmap_entry *next;
	const void *key;
	void *value;
	uint64_t hash;
};

struct hashmap {
	struct hashmap_entry **buckets;
	size_t n_buckets, n_items;
	uint64_t (*hash)(const void *key);
	bool (*equal)(const void *a, const void *b);
};

uint64_t hash_string(const void *key);
bool equal_string(const void *a, const void *b);
/* Integer keys are stored in the key pointer itself. */
uint64_t hash_int(const void *key);
bool equal_int(const void *a, const void *b);
#define INT_TO_KEY(i) ((const void *)(uintptr_t)(i))

void hashmap_init(struct hashmap *m, uint64_t (*hash)(const void *), bool (*equal)(const void *, const void *));
void hashmap_done(struct hashmap *m);
void *hashmap_get(const struct hashmap *m, const void *key);
/* -EEXIST if the key is there already. */
int hashmap_put(struct hashmap *m, const void *key, void *value);
void *hashmap_remove(struct hashmap *m, const void *key);

/* Iterate: for (size_t i = 0; (e = hashmap_next(m, &i, e)); ). Nothing
 * may be added or removed meanwhile. */
struct hashmap_entry *hashmap_next(const struct hashmap *m, size_t *bucket, struct hashmap_entry *prev);

/* Iterate where the entry just returned may be removed (that one only;
 * nothing added): every entry once, each bucket visited once.
 *   struct hashmap_iter it = HASHMAP_ITER_INIT;
 *   while ((e = hashmap_iter_next(m, &it)))
 *           if (unwanted(e->value)) free(hashmap_remove(m, e->key));
 */
struct hashmap_iter {
	size_t bucket;		    /* the next bucket to look in */
	struct hashmap_entry *next; /* the entry after the one returned */
};
#define HASHMAP_ITER_INIT { 0, NULL }
struct hashmap_entry *hashmap_iter_next(const struct hashmap *m, struct hashmap_iter *it);

/* Take any one entry out and return its value, NULL when empty: a drain,
 * while ((v = hashmap_steal(m, &cursor))) free(v), with cursor = 0 at the
 * start, looks at each bucket once in all. */
void *hashmap_steal(struct hashmap *m, size_t *cursor);
