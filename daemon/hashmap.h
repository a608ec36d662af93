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

/* Iterate: for (size_t i = 0; (e = hashmap_next(m, &i, e)); ) */
struct hashmap_entry *hashmap_next(const struct hashmap *m, size_t *bucket, struct hashmap_entry *prev);
