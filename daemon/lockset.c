/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r() */
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lockset.h"
#include "util.h"

struct lock_process {
	pid_t pid;
	struct lock_unit *unit;
	struct lock_range **ranges; /* sorted by key, no duplicates */
	size_t n_ranges;
};

struct failed_file {
	uint64_t dev, ino;
};

struct lockset {
	size_t page_size;
	struct lockset_ops ops;
	void *userdata;

	struct lock_range **ranges; /* sorted by key */
	size_t n_ranges, allocated_ranges;
	struct lock_process **procs; /* sorted by pid */
	size_t n_procs, allocated_procs;
	struct lock_unit **units; /* sorted by name */
	size_t n_units, allocated_units;

	struct failed_file *failed;
	size_t n_failed, allocated_failed;

	uint64_t keep_usec, now_usec; /* lockset_set_keep(), lockset_set_now() */

	uint64_t ceiling; /* UINT64_MAX: none */
	uint64_t last_pressure_usec; /* last step down */
	uint64_t last_event_usec;    /* last event, stepped or not: calm counts from here */
	bool pressure_seen;
	unsigned n_pressure_events;
};

const char *lock_refusal_to_string(enum lock_refusal r)
{
	switch (r) {
	case LOCK_REFUSAL_NONE:
		return "none";
	case LOCK_REFUSAL_GLOBAL:
		return "global-budget";
	case LOCK_REFUSAL_UNIT:
		return "unit-budget";
	case LOCK_REFUSAL_PRESSURE:
		return "memory-pressure";
	case LOCK_REFUSAL_ERROR:
		return "mlock-failed";
	}
	return "unknown";
}

const char *lock_range_state_to_string(enum lock_range_state s)
{
	switch (s) {
	case LOCK_RANGE_NEW:
		return "new";
	case LOCK_RANGE_OPEN:
		return "open";
	case LOCK_RANGE_UNLOCKABLE:
		return "unlockable";
	case LOCK_RANGE_FAILED:
		return "failed";
	}
	return "unknown";
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

int lock_key_compare(const struct lock_key *a, const struct lock_key *b)
{
	int c;

	if ((c = cmp_u64(a->dev, b->dev)) || (c = cmp_u64(a->ino, b->ino)) ||
	    (c = cmp_u64(a->offset, b->offset)))
		return c;
	return cmp_u64(a->length, b->length);
}

void lock_key_from_mapping(uint64_t dev, uint64_t ino, uint64_t file_offset, uint64_t length,
			   size_t page_size, struct lock_key *ret)
{
	uint64_t mask = (uint64_t)page_size - 1;
	uint64_t start = file_offset & ~mask;
	uint64_t end = (file_offset + length + mask) & ~mask;

	*ret = (struct lock_key){ .dev = dev, .ino = ino, .offset = start, .length = end - start };
}

#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_FILE (1ULL << 61) /* "file-page or shared-anon" */

void lock_pages_from_pagemap(const uint64_t *entries, size_t n, unsigned char *mapped)
{
	for (size_t i = 0; i < n; i++)
		if ((entries[i] & PAGEMAP_PRESENT) && (entries[i] & PAGEMAP_FILE))
			mapped[i] = 1;
}

/* A small growable array of pointers. */
static int grow(void *items_p, size_t *allocated, size_t need)
{
	void ***items = items_p;
	size_t na;
	void **ni;

	if (need <= *allocated)
		return 0;
	na = *allocated ? *allocated * 2 : 16;
	while (na < need)
		na *= 2;
	ni = realloc(*items, na * sizeof(void *));
	if (!ni)
		return -ENOMEM;
	*items = ni;
	*allocated = na;
	return 0;
}

int lockset_new(size_t page_size, const struct lockset_ops *ops, void *userdata, struct lockset **ret)
{
	struct lockset *ls;

	if (page_size == 0 || (page_size & (page_size - 1)))
		return -EINVAL;
	ls = calloc(1, sizeof(*ls));
	if (!ls)
		return -ENOMEM;
	ls->page_size = page_size;
	if (ops)
		ls->ops = *ops;
	ls->userdata = userdata;
	ls->ceiling = UINT64_MAX;
	*ret = ls;
	return 0;
}

static void range_free(struct lockset *ls, struct lock_range *r)
{
	if (!r)
		return;
	if (ls->ops.range_free)
		ls->ops.range_free(r, ls->userdata);
	free(r->path);
	free(r->reason);
	free(r->pages);
	free(r->units);
	free(r);
}

static void process_free(struct lock_process *p)
{
	if (!p)
		return;
	free(p->ranges);
	free(p);
}

static void unit_free(struct lock_unit *u)
{
	if (!u)
		return;
	free(u->name);
	free(u);
}

struct lockset *lockset_free(struct lockset *ls)
{
	if (!ls)
		return NULL;
	for (size_t i = 0; i < ls->n_procs; i++)
		process_free(ls->procs[i]);
	for (size_t i = 0; i < ls->n_ranges; i++)
		range_free(ls, ls->ranges[i]);
	for (size_t i = 0; i < ls->n_units; i++)
		unit_free(ls->units[i]);
	free(ls->procs);
	free(ls->ranges);
	free(ls->units);
	free(ls->failed);
	free(ls);
	return NULL;
}

/* Binary search over a sorted array of pointers: the index of the match,
 * or of where it goes. cmp(item, key) orders an item against the key. */
static size_t sorted_index(void *const *items, size_t n, const void *key,
			   int (*cmp)(const void *item, const void *key), bool *found)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp(items[mid], key);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static int range_cmp(const void *item, const void *key)
{
	return lock_key_compare(&((const struct lock_range *)item)->key, key);
}

static int proc_cmp(const void *item, const void *key)
{
	pid_t a = ((const struct lock_process *)item)->pid, b = *(const pid_t *)key;

	return (a > b) - (a < b);
}

static int unit_cmp(const void *item, const void *key)
{
	return strcmp(((const struct lock_unit *)item)->name, key);
}

static size_t range_index(const struct lockset *ls, const struct lock_key *key, bool *found)
{
	return sorted_index((void *const *)ls->ranges, ls->n_ranges, key, range_cmp, found);
}

static size_t proc_index(const struct lockset *ls, pid_t pid, bool *found)
{
	return sorted_index((void *const *)ls->procs, ls->n_procs, &pid, proc_cmp, found);
}

static size_t unit_index(const struct lockset *ls, const char *name, bool *found)
{
	return sorted_index((void *const *)ls->units, ls->n_units, name, unit_cmp, found);
}

static void remove_at(void *items_p, size_t *n, size_t i)
{
	void **items = items_p;

	memmove(items + i, items + i + 1, (*n - i - 1) * sizeof(void *));
	(*n)--;
}

static void insert_at(void *items_p, size_t *n, size_t i, void *item)
{
	void **items = items_p;

	memmove(items + i + 1, items + i, (*n - i) * sizeof(void *));
	items[i] = item;
	(*n)++;
}

struct lock_range *lockset_find_range(const struct lockset *ls, const struct lock_key *key)
{
	bool found;
	size_t i = range_index(ls, key, &found);

	return found ? ls->ranges[i] : NULL;
}

bool lockset_has_process(const struct lockset *ls, pid_t pid)
{
	bool found;

	proc_index(ls, pid, &found);
	return found;
}

size_t lockset_n_ranges(const struct lockset *ls)
{
	return ls->n_ranges;
}

struct lock_range *lockset_range(const struct lockset *ls, size_t i)
{
	return i < ls->n_ranges ? ls->ranges[i] : NULL;
}

size_t lockset_n_units(const struct lockset *ls)
{
	return ls->n_units;
}

struct lock_unit *lockset_unit(const struct lockset *ls, size_t i)
{
	return i < ls->n_units ? ls->units[i] : NULL;
}

struct lock_unit *lockset_find_unit(const struct lockset *ls, const char *name)
{
	bool found;
	size_t i = unit_index(ls, name, &found);

	return found ? ls->units[i] : NULL;
}

size_t lockset_n_processes(const struct lockset *ls)
{
	return ls->n_procs;
}

static int unit_get(struct lockset *ls, const char *name, struct lock_unit **ret)
{
	struct lock_unit *u;
	bool found;
	size_t i = unit_index(ls, name, &found);
	int r;

	if (found) {
		*ret = ls->units[i];
		return 0;
	}
	r = grow(&ls->units, &ls->allocated_units, ls->n_units + 1);
	if (r < 0)
		return r;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->name = strdup(name);
	if (!u->name) {
		free(u);
		return -ENOMEM;
	}
	u->ceiling = UINT64_MAX;
	insert_at(ls->units, &ls->n_units, i, u);
	*ret = u;
	return 0;
}

static void unit_put(struct lockset *ls, struct lock_unit *u)
{
	bool found;
	size_t i;

	if (u->n_pids > 0 || u->n_kept > 0)
		return;
	i = unit_index(ls, u->name, &found);
	if (found && ls->units[i] == u) {
		remove_at(ls->units, &ls->n_units, i);
		unit_free(u);
	}
}

/* Count one more process of unit u mapping r (a kept reference comes
 * back to life). */
static int range_ref(struct lock_range *r, struct lock_unit *u)
{
	struct lock_unit_ref *nu;

	for (size_t i = 0; i < r->n_units; i++)
		if (r->units[i].unit == u) {
			if (r->units[i].n_pids++ == 0) {
				u->n_kept--;
				r->units[i].kept_usec = 0;
				r->n_live_units++;
			}
			r->n_pids++;
			return 0;
		}
	nu = realloc(r->units, (r->n_units + 1) * sizeof(*nu));
	if (!nu)
		return -ENOMEM;
	r->units = nu;
	r->units[r->n_units++] = (struct lock_unit_ref){ .unit = u, .n_pids = 1 };
	r->n_live_units++;
	r->n_pids++;
	return 0;
}

static void range_remove_ref(struct lock_range *r, size_t i)
{
	r->units[i] = r->units[r->n_units - 1];
	r->n_units--;
}

/* Frees r when no unit maps or keeps it. */
static void range_drop_if_unused(struct lockset *ls, struct lock_range *r)
{
	bool found;
	size_t i;

	if (r->n_units > 0)
		return;
	i = range_index(ls, &r->key, &found);
	if (found && ls->ranges[i] == r)
		remove_at(ls->ranges, &ls->n_ranges, i);
	range_free(ls, r);
}

/* What the range's processes used at the last look stays used for the
 * keep time: the process that stops mapping it (a per-request helper
 * exiting) may have used pages the others do not. */
static void keep_pages(struct lockset *ls, struct lock_range *r)
{
	bool any = false;

	for (size_t i = 0; i < r->n_pages; i++)
		if (r->pages[i] & LOCK_PAGE_RESIDENT) {
			r->pages[i] |= LOCK_PAGE_KEPT;
			any = true;
		}
	if (any)
		r->pages_kept_usec = ls->now_usec ? ls->now_usec : 1;
}

/* Drop one process's reference; when it was the unit's last, the unit
 * keeps the range (keep and a keep time set) or lets it go. */
static void range_unref(struct lockset *ls, struct lock_range *r, struct lock_unit *u, bool keep)
{
	if (keep && ls->keep_usec)
		keep_pages(ls, r);
	for (size_t i = 0; i < r->n_units; i++)
		if (r->units[i].unit == u) {
			if (r->units[i].n_pids == 0)
				break; /* kept already: no process of it to drop */
			r->n_pids--;
			if (--r->units[i].n_pids == 0) {
				r->n_live_units--;
				if (keep && ls->keep_usec) {
					r->units[i].kept_usec = ls->now_usec;
					u->n_kept++;
				} else {
					range_remove_ref(r, i);
				}
			}
			break;
		}
	range_drop_if_unused(ls, r);
}

void lockset_set_keep(struct lockset *ls, uint64_t keep_usec)
{
	ls->keep_usec = keep_usec;
}

void lockset_set_now(struct lockset *ls, uint64_t now_usec)
{
	ls->now_usec = now_usec;
}

/* Whether something kept at t has been kept long enough at now. */
static bool keep_over(const struct lockset *ls, uint64_t t, uint64_t now_usec)
{
	return ls->keep_usec == 0 || (now_usec >= t && now_usec - t >= ls->keep_usec);
}

size_t lockset_expire(struct lockset *ls, uint64_t now_usec)
{
	size_t dropped = 0;

	for (size_t i = 0; i < ls->n_ranges;) {
		struct lock_range *r = ls->ranges[i];

		/* Kept pages: from now on only what is used counts (the next
		 * look at residency unlocks the rest). */
		if (r->pages_kept_usec && keep_over(ls, r->pages_kept_usec, now_usec)) {
			for (size_t p = 0; p < r->n_pages; p++)
				r->pages[p] &= (uint8_t)~LOCK_PAGE_KEPT;
			r->pages_kept_usec = 0;
			r->dirty = true;
		}

		for (size_t k = 0; k < r->n_units;) {
			struct lock_unit_ref *ref = &r->units[k];

			if (ref->n_pids == 0 && keep_over(ls, ref->kept_usec, now_usec)) {
				ref->unit->n_kept--;
				range_remove_ref(r, k);
				dropped++;
			} else {
				k++;
			}
		}
		if (r->n_units == 0) {
			remove_at(ls->ranges, &ls->n_ranges, i);
			range_free(ls, r);
		} else {
			i++;
		}
	}
	/* Units left with nothing mapped or kept go too. */
	for (size_t i = 0; i < ls->n_units;) {
		struct lock_unit *u = ls->units[i];

		if (u->n_pids == 0 && u->n_kept == 0) {
			remove_at(ls->units, &ls->n_units, i);
			unit_free(u);
		} else {
			i++;
		}
	}
	return dropped;
}

static int cmp_range_ptr(const void *a, const void *b)
{
	const struct lock_range *const *x = a, *const *y = b;

	return lock_key_compare(&(*x)->key, &(*y)->key);
}

/* A process's mappings are whole pages (lock_key_from_mapping()). */
static bool mappings_valid(const struct lockset *ls, const struct lock_mapping *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].key.length == 0 || (m[i].key.offset | m[i].key.length) % ls->page_size)
			return false;
	return true;
}

/* The range of one mapping, found or created in state NEW (the list has
 * room: the caller grew it); *ret_created says which. */
static int range_get(struct lockset *ls, const struct lock_mapping *m, struct lock_range **ret,
		     bool *ret_created)
{
	bool found;
	size_t ri = range_index(ls, &m->key, &found);
	struct lock_range *lr;

	if (found) {
		lr = ls->ranges[ri];
		*ret_created = false;
	} else {
		lr = calloc(1, sizeof(*lr));
		if (!lr)
			return -ENOMEM;
		lr->key = m->key;
		lr->path = strdup(m->path ? m->path : "");
		if (!lr->path) {
			free(lr);
			return -ENOMEM;
		}
		lr->state = LOCK_RANGE_NEW;
		lr->prot = m->prot;
		insert_at(ls->ranges, &ls->n_ranges, ri, lr);
		*ret_created = true;
	}
	lr->prot |= m->prot;
	*ret = lr;
	return 0;
}

/* Undo range_get() for a set that failed before any reference was taken:
 * only the ranges created for it have no references; free them again. */
static void ranges_free_created(struct lockset *ls, struct lock_range **want, const bool *created, size_t n)
{
	bool found;

	for (size_t i = 0; i < n; i++)
		if (created[i]) {
			size_t ri = range_index(ls, &want[i]->key, &found);

			if (found)
				remove_at(ls->ranges, &ls->n_ranges, ri);
			range_free(ls, want[i]);
		}
}

/* Sort a process's ranges by key and drop duplicates (a process may map
 * one range twice); returns the new count. */
static size_t ranges_sort_unique(struct lock_range **want, size_t n)
{
	size_t k = 0;

	qsort(want, n, sizeof(*want), cmp_range_ptr);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || want[k - 1] != want[i])
			want[k++] = want[i];
	return k;
}

/* Count a process of u in each of its ranges, all or none: on failure
 * the references taken are dropped again (which frees the created ranges
 * that had been referenced) and the created ones never referenced, still
 * in the list with no unit, are freed too. */
static int ranges_ref_all(struct lockset *ls, struct lock_range **want, size_t n, struct lock_unit *u)
{
	for (size_t i = 0; i < n; i++)
		if (range_ref(want[i], u) < 0) {
			for (size_t j = 0; j < i; j++)
				range_unref(ls, want[j], u, false);
			for (size_t k = 0; k < ls->n_ranges;) {
				if (ls->ranges[k]->n_units == 0) {
					struct lock_range *lr = ls->ranges[k];

					remove_at(ls->ranges, &ls->n_ranges, k);
					range_free(ls, lr);
				} else {
					k++;
				}
			}
			return -ENOMEM;
		}
	return 0;
}

/* Put p in the process list (which has room), in place of the entry its
 * pid had; returns that entry, NULL for a new pid. */
static struct lock_process *process_replace(struct lockset *ls, struct lock_process *p)
{
	struct lock_process *old = NULL;
	bool found;
	size_t pi = proc_index(ls, p->pid, &found);

	if (found) {
		old = ls->procs[pi];
		ls->procs[pi] = p;
	} else {
		insert_at(ls->procs, &ls->n_procs, pi, p);
	}
	return old;
}

/* The entry p replaced goes: what it stopped mapping is kept (exec of
 * another image, munmap), as at an exit; what it still maps only moves
 * its count. */
static void process_retire(struct lockset *ls, struct lock_process *old, const struct lock_process *p)
{
	for (size_t i = 0; i < old->n_ranges; i++) {
		bool still = old->unit == p->unit &&
			     bsearch(&old->ranges[i], p->ranges, p->n_ranges, sizeof(*p->ranges), cmp_range_ptr);

		range_unref(ls, old->ranges[i], old->unit, !still);
	}
	old->unit->n_pids--;
	unit_put(ls, old->unit);
	process_free(old);
}

int lockset_process_set(struct lockset *ls, pid_t pid, const char *unit, uint64_t unit_cap,
			const struct lock_mapping *m, size_t n)
{
	_cleanup_free_ struct lock_range **want = NULL;
	_cleanup_free_ bool *created = NULL;
	struct lock_process *p, *old;
	struct lock_unit *u;
	size_t n_want = 0, n_created = 0;
	int r;

	if (!unit || pid <= 0 || !mappings_valid(ls, m, n))
		return -EINVAL;

	r = unit_get(ls, unit, &u);
	if (r < 0)
		return r;
	u->cap = unit_cap;

	want = calloc(n ? n : 1, sizeof(*want));
	created = calloc(n ? n : 1, sizeof(*created));
	p = calloc(1, sizeof(*p));
	if (!want || !created || !p ||
	    grow(&ls->ranges, &ls->allocated_ranges, ls->n_ranges + n) < 0 ||
	    grow(&ls->procs, &ls->allocated_procs, ls->n_procs + 1) < 0)
		goto fail;

	/* Find or create every range first, so that nothing is dropped and
	 * re-created (losing its locks) when the set merely changes. */
	for (size_t i = 0; i < n; i++) {
		if (range_get(ls, &m[i], &want[n_want], &created[n_want]) < 0) {
			ranges_free_created(ls, want, created, n_want);
			goto fail;
		}
		n_created += created[n_want];
		n_want++;
	}
	n_want = ranges_sort_unique(want, n_want);
	if (ranges_ref_all(ls, want, n_want, u) < 0)
		goto fail;

	p->pid = pid;
	p->unit = u;
	p->ranges = TAKE_PTR(want);
	p->n_ranges = n_want;
	u->n_pids++;

	old = process_replace(ls, p);
	if (old)
		process_retire(ls, old, p);
	return (int)n_created;

fail:
	free(p);
	unit_put(ls, u);
	return -ENOMEM;
}

static int process_drop(struct lockset *ls, pid_t pid, bool keep)
{
	struct lock_process *p;
	bool found;
	size_t i = proc_index(ls, pid, &found);

	if (!found)
		return 0;
	p = ls->procs[i];
	remove_at(ls->procs, &ls->n_procs, i);
	for (size_t k = 0; k < p->n_ranges; k++)
		range_unref(ls, p->ranges[k], p->unit, keep);
	p->unit->n_pids--;
	unit_put(ls, p->unit);
	process_free(p);
	return 1;
}

int lockset_process_remove(struct lockset *ls, pid_t pid)
{
	return process_drop(ls, pid, false);
}

int lockset_process_exit(struct lockset *ls, pid_t pid)
{
	return process_drop(ls, pid, true);
}

int lockset_range_opened(struct lockset *ls, struct lock_range *r)
{
	size_t n = (size_t)(r->key.length / ls->page_size);
	uint8_t *pages = calloc(n, 1);

	if (!pages)
		return -ENOMEM;
	free(r->pages);
	r->pages = pages;
	r->n_pages = n;
	r->n_resident = r->n_locked = 0;
	r->state = LOCK_RANGE_OPEN;
	r->dirty = true;
	return 0;
}

bool lockset_reported_before(const struct lockset *ls, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < ls->n_failed; i++)
		if (ls->failed[i].dev == dev && ls->failed[i].ino == ino)
			return true;
	return false;
}

static int remember(struct lockset *ls, uint64_t dev, uint64_t ino)
{
	if (lockset_reported_before(ls, dev, ino))
		return 0;
	if (ls->n_failed == ls->allocated_failed) {
		size_t na = ls->allocated_failed ? ls->allocated_failed * 2 : 16;
		struct failed_file *nf = realloc(ls->failed, na * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		ls->failed = nf;
		ls->allocated_failed = na;
	}
	ls->failed[ls->n_failed++] = (struct failed_file){ .dev = dev, .ino = ino };
	return 0;
}

static int set_reason(struct lock_range *r, enum lock_range_state state, const char *reason)
{
	char *s = strdup(reason);

	if (!s)
		return -ENOMEM;
	free(r->reason);
	r->reason = s;
	r->state = state;
	return 0;
}

int lockset_range_set_unlockable(struct lockset *ls, struct lock_range *r, const char *reason)
{
	int k = set_reason(r, LOCK_RANGE_UNLOCKABLE, reason);

	return k < 0 ? k : remember(ls, r->key.dev, r->key.ino);
}

int lockset_range_set_failed(struct lockset *ls, struct lock_range *r, const char *reason)
{
	int k = set_reason(r, LOCK_RANGE_FAILED, reason);

	return k < 0 ? k : remember(ls, r->key.dev, r->key.ino);
}

void lockset_forget_failures(struct lockset *ls)
{
	ls->n_failed = 0;
}

void lockset_range_update_used(struct lock_range *r, const unsigned char *resident, const unsigned char *used)
{
	size_t res = 0;

	if (r->state != LOCK_RANGE_OPEN)
		return;
	for (size_t i = 0; i < r->n_pages; i++) {
		uint8_t s = r->pages[i] & (uint8_t)~LOCK_PAGE_RESIDENT;

		if (!(resident[i] & 1))
			s &= (uint8_t)~LOCK_PAGE_KEPT;
		else if (!used || (used[i] & 1) || (s & LOCK_PAGE_KEPT)) {
			s |= LOCK_PAGE_RESIDENT;
			res++;
		}
		/* Only a change of RESIDENT needs the I/O side. */
		if ((r->pages[i] ^ s) & LOCK_PAGE_RESIDENT)
			r->dirty = true;
		r->pages[i] = s;
	}
	r->n_resident = res;
}

void lockset_range_update_resident(struct lock_range *r, const unsigned char *vec)
{
	lockset_range_update_used(r, vec, NULL);
}

void lockset_range_mark(struct lock_range *r, size_t first, size_t count, bool locked)
{
	if (first > r->n_pages || count > r->n_pages - first)
		return;
	for (size_t i = first; i < first + count; i++) {
		bool was = r->pages[i] & LOCK_PAGE_LOCKED;

		if (locked && !was) {
			r->pages[i] |= LOCK_PAGE_LOCKED;
			r->n_locked++;
		} else if (!locked && was) {
			r->pages[i] &= (uint8_t)~LOCK_PAGE_LOCKED;
			r->n_locked--;
		}
	}
}

static bool page_needs(const struct lock_range *r, enum lock_run_kind kind, size_t i)
{
	uint8_t s = r->pages[i];

	if (kind == LOCK_RUN_LOCK)
		return r->admitted && (s & LOCK_PAGE_RESIDENT) && !(s & LOCK_PAGE_LOCKED);
	return (s & LOCK_PAGE_LOCKED) && (!r->admitted || !(s & LOCK_PAGE_RESIDENT));
}

bool lockset_next_run(const struct lock_range *r, enum lock_run_kind kind, size_t *pos,
		      size_t *ret_first, size_t *ret_count)
{
	size_t i = *pos, first;

	if (r->state != LOCK_RANGE_OPEN || !r->pages)
		return false;
	while (i < r->n_pages && !page_needs(r, kind, i))
		i++;
	if (i >= r->n_pages) {
		*pos = i;
		return false;
	}
	first = i;
	while (i < r->n_pages && page_needs(r, kind, i))
		i++;
	*pos = i;
	*ret_first = first;
	*ret_count = i - first;
	return true;
}

/* When a kept range was last mapped by some unit's process. */
static uint64_t last_kept(const struct lock_range *r)
{
	uint64_t t = 0;

	for (size_t i = 0; i < r->n_units; i++)
		if (r->units[i].n_pids == 0 && r->units[i].kept_usec > t)
			t = r->units[i].kept_usec;
	return t;
}

/* Hotness: ranges mapped by more units, then more processes, come first;
 * then the kept ones that no process maps, the most recently used first
 * (least recently used last, so given up first); ties by key, so that the
 * order is stable. */
static int cmp_hot(const void *a, const void *b, void *arg)
{
	const struct lockset *ls = arg;
	const struct lock_range *x = ls->ranges[*(const size_t *)a];
	const struct lock_range *y = ls->ranges[*(const size_t *)b];

	if ((x->n_pids > 0) != (y->n_pids > 0))
		return x->n_pids > 0 ? -1 : 1;
	if (x->n_pids == 0) {
		uint64_t tx = last_kept(x), ty = last_kept(y);

		if (tx != ty)
			return tx > ty ? -1 : 1;
	}
	if (x->n_live_units != y->n_live_units)
		return x->n_live_units > y->n_live_units ? -1 : 1;
	if (x->n_pids != y->n_pids)
		return x->n_pids > y->n_pids ? -1 : 1;
	return lock_key_compare(&x->key, &y->key);
}

int lockset_hot_order(const struct lockset *ls, size_t **ret, size_t *ret_n)
{
	size_t *order = malloc((ls->n_ranges ? ls->n_ranges : 1) * sizeof(*order));

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < ls->n_ranges; i++)
		order[i] = i;
	qsort_r(order, ls->n_ranges, sizeof(*order), cmp_hot, (void *)ls);
	*ret = order;
	*ret_n = ls->n_ranges;
	return 0;
}

size_t lockset_plan(struct lockset *ls, uint64_t global_cap)
{
	_cleanup_free_ size_t *order = NULL;
	uint64_t total = 0, cap = global_cap ? global_cap : UINT64_MAX;
	size_t n, changed = 0;

	for (size_t i = 0; i < ls->n_units; i++)
		ls->units[i]->charged = 0;

	if (lockset_hot_order(ls, &order, &n) < 0) {
		/* Out of memory: keep the previous plan. */
		return 0;
	}

	for (size_t k = 0; k < n; k++) {
		struct lock_range *r = ls->ranges[order[k]];
		uint64_t cost = (uint64_t)r->n_resident * ls->page_size;
		bool was = r->admitted, any = false;
		enum lock_refusal why = LOCK_REFUSAL_NONE;

		if (r->state != LOCK_RANGE_OPEN) {
			r->admitted = false;
			r->refusal = LOCK_REFUSAL_NONE;
			continue;
		}
		if (r->refusal == LOCK_REFUSAL_ERROR) {
			/* mlock() failed on it: stays out until a reload. */
			r->admitted = false;
			if (was) {
				r->dirty = true;
				changed++;
			}
			continue;
		}
		if (total + cost > cap)
			why = LOCK_REFUSAL_GLOBAL;
		else if (total + cost > ls->ceiling)
			why = LOCK_REFUSAL_PRESSURE;
		else {
			bool cap_only = false;

			for (size_t i = 0; i < r->n_units; i++) {
				struct lock_unit *u = r->units[i].unit;
				bool cap_ok = u->cap == 0 || u->charged + cost <= u->cap;

				if (cap_ok && u->charged + cost <= u->ceiling)
					any = true;
				else if (cap_ok)
					cap_only = true;
			}
			if (!any)
				why = cap_only ? LOCK_REFUSAL_PRESSURE : LOCK_REFUSAL_UNIT;
		}
		if (why == LOCK_REFUSAL_NONE) {
			for (size_t i = 0; i < r->n_units; i++) {
				struct lock_unit *u = r->units[i].unit;

				if ((u->cap == 0 || u->charged + cost <= u->cap) && u->charged + cost <= u->ceiling)
					u->charged += cost;
			}
			total += cost;
		}
		r->admitted = why == LOCK_REFUSAL_NONE;
		r->refusal = why;
		if (r->admitted != was) {
			r->dirty = true;
			changed++;
		}
	}
	return changed;
}

static uint64_t page_floor(const struct lockset *ls, uint64_t v)
{
	return v - v % ls->page_size;
}

bool lockset_pressure_give_back(struct lockset *ls, uint64_t now_usec, uint64_t bytes)
{
	struct lockset_totals t;
	uint64_t base, c;

	ls->n_pressure_events++;
	ls->pressure_seen = true;
	ls->last_event_usec = ls->last_pressure_usec = now_usec;
	lockset_totals(ls, &t);
	base = t.locked < ls->ceiling ? t.locked : ls->ceiling;
	c = page_floor(ls, base > bytes ? base - bytes : 0);
	if (c == ls->ceiling)
		return false;
	ls->ceiling = c;
	return true;
}

bool lockset_unit_give_back(struct lockset *ls, const char *unit, uint64_t now_usec, uint64_t bytes)
{
	struct lock_unit *u = lockset_find_unit(ls, unit);
	uint64_t base, c;

	if (!u)
		return false;
	u->n_pressure_events++;
	u->pressure_seen = true;
	u->last_event_usec = u->last_step_usec = now_usec;
	base = u->charged < u->ceiling ? u->charged : u->ceiling;
	c = page_floor(ls, base > bytes ? base - bytes : 0);
	if (c == u->ceiling)
		return false;
	u->ceiling = c;
	return true;
}

void lockset_pressure_hold(struct lockset *ls, const char *unit, uint64_t now_usec)
{
	if (unit) {
		struct lock_unit *u = lockset_find_unit(ls, unit);

		if (u && u->ceiling != UINT64_MAX)
			u->last_event_usec = now_usec;
	} else if (ls->ceiling != UINT64_MAX)
		ls->last_event_usec = now_usec;
}

bool lockset_pressure_release_all(struct lockset *ls, uint64_t now_usec)
{
	bool changed = ls->ceiling != 0;

	ls->n_pressure_events++;
	ls->pressure_seen = true;
	ls->last_event_usec = ls->last_pressure_usec = now_usec;
	ls->ceiling = 0;
	return changed;
}

bool lockset_unit_release_all(struct lockset *ls, const char *unit, uint64_t now_usec)
{
	struct lock_unit *u = lockset_find_unit(ls, unit);
	bool changed;

	if (!u)
		return false;
	changed = u->ceiling != 0;
	u->n_pressure_events++;
	u->pressure_seen = true;
	u->last_event_usec = u->last_step_usec = now_usec;
	u->ceiling = 0;
	return changed;
}

bool lockset_pressure_tick(struct lockset *ls, uint64_t now_usec, uint64_t recover_usec)
{
	bool changed = false;

	for (size_t i = 0; i < ls->n_units; i++) {
		struct lock_unit *u = ls->units[i];

		if (u->ceiling != UINT64_MAX && now_usec - u->last_event_usec >= recover_usec) {
			u->ceiling = UINT64_MAX;
			changed = true;
		}
	}
	if (ls->ceiling != UINT64_MAX && now_usec - ls->last_event_usec >= recover_usec) {
		ls->ceiling = UINT64_MAX;
		changed = true;
	}
	return changed;
}

uint64_t lockset_pressure_ceiling(const struct lockset *ls)
{
	return ls->ceiling;
}

unsigned lockset_pressure_events(const struct lockset *ls)
{
	return ls->n_pressure_events;
}

void lockset_totals(const struct lockset *ls, struct lockset_totals *ret)
{
	struct lockset_totals t = {
		.n_ranges = ls->n_ranges,
		.n_processes = ls->n_procs,
		.n_units = ls->n_units,
	};

	for (size_t i = 0; i < ls->n_ranges; i++) {
		const struct lock_range *r = ls->ranges[i];

		t.mapped += r->key.length;
		if (r->n_pids == 0) {
			t.n_kept++;
			t.kept_locked += (uint64_t)r->n_locked * ls->page_size;
		}
		switch (r->state) {
		case LOCK_RANGE_OPEN:
			t.n_open++;
			t.resident += (uint64_t)r->n_resident * ls->page_size;
			t.locked += (uint64_t)r->n_locked * ls->page_size;
			if (r->admitted) {
				t.n_admitted++;
				t.admitted_resident += (uint64_t)r->n_resident * ls->page_size;
			} else
				t.n_refused++;
			break;
		case LOCK_RANGE_UNLOCKABLE:
			t.n_unlockable++;
			break;
		case LOCK_RANGE_FAILED:
			t.n_failed++;
			break;
		case LOCK_RANGE_NEW:
			break;
		}
	}
	*ret = t;
}

int lockset_file_stats(const struct lockset *ls, struct lockset_file_stat **ret, size_t *ret_n)
{
	struct lockset_file_stat *out = calloc(ls->n_ranges ? ls->n_ranges : 1, sizeof(*out));
	size_t n = 0;

	if (!out)
		return -ENOMEM;
	/* Ranges are sorted by (dev, ino, ...): ranges of a file are adjacent. */
	for (size_t i = 0; i < ls->n_ranges; i++) {
		const struct lock_range *r = ls->ranges[i];
		struct lockset_file_stat *f;

		if (n > 0 && out[n - 1].dev == r->key.dev && out[n - 1].ino == r->key.ino) {
			f = &out[n - 1];
		} else {
			f = &out[n++];
			*f = (struct lockset_file_stat){
				.path = r->path,
				.dev = r->key.dev,
				.ino = r->key.ino,
				.state = r->state,
				.reason = r->reason,
			};
		}
		f->n_ranges++;
		if (r->n_units > f->n_units)
			f->n_units = r->n_units;
		if (r->n_pids > f->n_pids)
			f->n_pids = r->n_pids;
		f->mapped += r->key.length;
		f->resident += (uint64_t)r->n_resident * ls->page_size;
		f->locked += (uint64_t)r->n_locked * ls->page_size;
		if (r->state == LOCK_RANGE_OPEN && !r->admitted && f->refusal == LOCK_REFUSAL_NONE)
			f->refusal = r->refusal;
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

int lockset_unit_stats(const struct lockset *ls, struct lockset_unit_stat **ret, size_t *ret_n)
{
	struct lockset_unit_stat *out = calloc(ls->n_units ? ls->n_units : 1, sizeof(*out));

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < ls->n_units; i++)
		out[i] = (struct lockset_unit_stat){
			.name = ls->units[i]->name,
			.n_pids = ls->units[i]->n_pids,
			.charged = ls->units[i]->charged,
			.cap = ls->units[i]->cap,
			.ceiling = ls->units[i]->ceiling,
			.n_pressure_events = ls->units[i]->n_pressure_events,
		};
	for (size_t i = 0; i < ls->n_ranges; i++) {
		const struct lock_range *r = ls->ranges[i];

		for (size_t k = 0; k < r->n_units; k++) {
			bool found;
			size_t ui = unit_index(ls, r->units[k].unit->name, &found);

			if (!found)
				continue;
			out[ui].n_ranges++;
			if (r->units[k].n_pids == 0) {
				out[ui].n_kept++;
				out[ui].kept_locked += (uint64_t)r->n_locked * ls->page_size;
			}
			out[ui].mapped += r->key.length;
			out[ui].resident += (uint64_t)r->n_resident * ls->page_size;
			out[ui].locked += (uint64_t)r->n_locked * ls->page_size;
		}
	}
	*ret = out;
	*ret_n = ls->n_units;
	return 0;
}
