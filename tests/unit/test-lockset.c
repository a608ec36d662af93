/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lock engine, fed from tables: references, budgets, hot-first
 * order, give-back order under pressure, page runs. No system calls. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockset.h"
#include "meminfo.h"
#include "psi.h"
#include "test.h"
#include "util.h"

#define PAGE 4096u

static unsigned n_freed;

static void on_free(struct lock_range *r _unused_, void *userdata _unused_)
{
	n_freed++;
}

static const struct lockset_ops ops = { .range_free = on_free };

static struct lock_mapping M(uint64_t ino, uint64_t off, uint64_t pages, const char *path)
{
	return (struct lock_mapping){
		.key = { .dev = 0x801, .ino = ino, .offset = off * PAGE, .length = pages * PAGE },
		.path = path,
	};
}

/* Open every NEW range and make `resident` of its pages resident. */
static void open_all(struct lockset *ls, size_t resident)
{
	for (size_t i = 0; i < lockset_n_ranges(ls); i++) {
		struct lock_range *r = lockset_range(ls, i);
		unsigned char *vec;

		if (r->state != LOCK_RANGE_NEW)
			continue;
		CHECK(lockset_range_opened(ls, r) == 0);
		vec = calloc(r->n_pages, 1);
		for (size_t p = 0; p < r->n_pages && p < resident; p++)
			vec[p] = 1;
		lockset_range_update_resident(r, vec);
		free(vec);
	}
}

/* What the backend does after a plan: unlock, then lock, every run. */
static void apply(struct lockset *ls)
{
	for (int kind = LOCK_RUN_UNLOCK; kind >= LOCK_RUN_LOCK; kind--)
		for (size_t i = 0; i < lockset_n_ranges(ls); i++) {
			struct lock_range *r = lockset_range(ls, i);
			size_t pos = 0, first, count;

			while (lockset_next_run(r, kind, &pos, &first, &count))
				lockset_range_mark(r, first, count, kind == LOCK_RUN_LOCK);
		}
}

static uint64_t locked_of(struct lockset *ls, uint64_t ino)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < lockset_n_ranges(ls); i++) {
		struct lock_range *r = lockset_range(ls, i);

		if (r->key.ino == ino)
			sum += (uint64_t)r->n_locked * PAGE;
	}
	return sum;
}

/* Which pages of a process's mapping count as used: present file pages,
 * never its anonymous copies. */
static void test_pagemap_selection(void)
{
	static const struct {
		uint64_t entry;
		bool used;
	} rows[] = {
		{ 0, false },					/* not present */
		{ (1ULL << 63) | (1ULL << 61) | 0x1234, true }, /* the file's page */
		{ (1ULL << 63) | 0x1234, false },		/* copied on write: anonymous */
		{ (1ULL << 63) | (1ULL << 61) | (1ULL << 56), true }, /* exclusively mapped file page */
		{ (1ULL << 62) | 0x5, false },			/* swapped anonymous */
		{ (1ULL << 61), false },			/* file bit without present */
		{ (1ULL << 63) | (1ULL << 61) | (1ULL << 55), true }, /* soft-dirty */
	};
	uint64_t e[ELEMENTSOF(rows)];
	unsigned char mapped[ELEMENTSOF(rows) + 1];

	for (size_t i = 0; i < ELEMENTSOF(rows); i++)
		e[i] = rows[i].entry;
	memset(mapped, 0, sizeof(mapped));
	mapped[ELEMENTSOF(rows)] = 7; /* never written past n */
	lock_pages_from_pagemap(e, ELEMENTSOF(rows), mapped);
	for (size_t i = 0; i < ELEMENTSOF(rows); i++)
		CHECK_EQ_INT(mapped[i], rows[i].used);
	CHECK_EQ_INT(mapped[ELEMENTSOF(rows)], 7);
	/* OR'ed across processes: a page one process uses stays used. */
	e[2] = (1ULL << 63) | (1ULL << 61);
	lock_pages_from_pagemap(e, ELEMENTSOF(rows), mapped);
	CHECK_EQ_INT(mapped[2], 1);
	CHECK_EQ_INT(mapped[0], 0);
}

static void test_key_alignment(void)
{
	struct lock_key k;

	lock_key_from_mapping(1, 2, 0x1234, 0x2000, PAGE, &k);
	CHECK(k.offset == 0x1000 && k.length == 0x3000);
	lock_key_from_mapping(1, 2, 0x1000, 0x1000, PAGE, &k);
	CHECK(k.offset == 0x1000 && k.length == 0x1000);
}

static void test_refcount_shared(void)
{
	struct lockset *ls;
	struct lock_mapping a[] = { M(10, 0, 8, "/bin/a"), M(100, 0, 16, "/lib/libc.so") };
	struct lock_mapping b[] = { M(20, 0, 8, "/bin/b"), M(100, 0, 16, "/lib/libc.so") };
	struct lock_key libc = M(100, 0, 16, NULL).key;
	struct lockset_totals t;

	n_freed = 0;
	CHECK(lockset_new(PAGE, &ops, NULL, &ls) == 0);
	CHECK(lockset_process_set(ls, 1000, "a.service", 0, a, 2) == 2);
	CHECK(lockset_process_set(ls, 2000, "b.service", 0, b, 2) == 1); /* libc exists */
	CHECK(lockset_n_ranges(ls) == 3);
	CHECK(lockset_find_range(ls, &libc)->n_pids == 2);
	CHECK(lockset_find_range(ls, &libc)->n_units == 2);

	open_all(ls, 4);
	lockset_plan(ls, 0);
	apply(ls);
	lockset_totals(ls, &t);
	/* Each range once: 3 ranges with 4 resident pages each. */
	CHECK(t.locked == 3 * 4 * PAGE);
	CHECK(t.resident == 3 * 4 * PAGE);
	CHECK(t.mapped == (8 + 8 + 16) * PAGE);

	/* Same set again: nothing created, nothing lost. */
	CHECK(lockset_process_set(ls, 1000, "a.service", 0, a, 2) == 0);
	CHECK(locked_of(ls, 100) == 4 * PAGE);

	CHECK(lockset_process_remove(ls, 1000) == 1);
	CHECK(n_freed == 1); /* /bin/a only */
	CHECK(lockset_find_range(ls, &libc)->n_pids == 1);
	CHECK(locked_of(ls, 100) == 4 * PAGE);
	CHECK(lockset_process_remove(ls, 1000) == 0);
	CHECK(lockset_process_remove(ls, 2000) == 1);
	CHECK(n_freed == 3);
	CHECK(lockset_n_ranges(ls) == 0 && lockset_n_units(ls) == 0);
	lockset_free(ls);
}

static void test_same_unit_counts_once(void)
{
	struct lockset *ls;
	struct lock_mapping a[] = { M(100, 0, 4, "/lib/x"), M(100, 0, 4, "/lib/x") }; /* duplicate */
	struct lock_key x = M(100, 0, 4, NULL).key;

	CHECK(lockset_new(PAGE, NULL, NULL, &ls) == 0);
	CHECK(lockset_process_set(ls, 1, "u", 0, a, 2) == 1);
	CHECK(lockset_process_set(ls, 2, "u", 0, a, 1) == 0);
	CHECK(lockset_find_range(ls, &x)->n_pids == 2);
	CHECK(lockset_find_range(ls, &x)->n_units == 1);
	CHECK(lockset_n_units(ls) == 1 && lockset_unit(ls, 0)->n_pids == 2);
	/* A re-exec into another unit moves the reference. */
	CHECK(lockset_process_set(ls, 2, "v", 0, a, 1) == 0);
	CHECK(lockset_find_range(ls, &x)->n_units == 2);
	CHECK(lockset_process_set(ls, 2, "v", 0, NULL, 0) == 0);
	CHECK(lockset_find_range(ls, &x)->n_pids == 1);
	CHECK(lockset_process_set(ls, 3, "w", 0, (struct lock_mapping[]){ M(100, 0, 3, "/lib/x") }, 1) == 1); /* other range */
	CHECK(lockset_n_ranges(ls) == 2);
	CHECK(lockset_process_set(ls, 4, "w", 0, &(struct lock_mapping){ .key = { 1, 1, 1, PAGE } }, 1) ==
	      -EINVAL);
	lockset_free(ls);
}

static void test_replaced_file(void)
{
	struct lockset *ls;
	struct lock_mapping oldm = M(100, 0, 8, "/usr/bin/prog");
	struct lock_mapping newm = M(101, 0, 8, "/usr/bin/prog"); /* same path, new inode */

	n_freed = 0;
	CHECK(lockset_new(PAGE, &ops, NULL, &ls) == 0);
	CHECK(lockset_process_set(ls, 1, "u", 0, &oldm, 1) == 1);
	open_all(ls, 8);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(lockset_process_set(ls, 2, "u", 0, &newm, 1) == 1);
	open_all(ls, 2);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) == 8 * PAGE && locked_of(ls, 101) == 2 * PAGE);
	CHECK(lockset_process_remove(ls, 1) == 1);
	CHECK(n_freed == 1 && lockset_n_ranges(ls) == 1);
	CHECK(locked_of(ls, 101) == 2 * PAGE);
	lockset_free(ls);
	CHECK(n_freed == 2);
}

/* Budget table: hot (shared by 3 units) stays; cold ones go first. */
static void test_budgets(void)
{
	struct lockset *ls;
	struct lock_mapping lib = M(100, 0, 10, "/lib/hot.so");
	struct lock_mapping own[3] = { M(1, 0, 10, "/bin/one"), M(2, 0, 10, "/bin/two"),
				       M(3, 0, 10, "/bin/three") };
	const char *units[3] = { "one", "two", "three" };
	struct lockset_unit_stat *us;
	size_t nus;

	CHECK(lockset_new(PAGE, NULL, NULL, &ls) == 0);
	for (int i = 0; i < 3; i++) {
		struct lock_mapping m[2] = { own[i], lib };

		CHECK(lockset_process_set(ls, 10 + i, units[i], 0, m, 2) >= 1);
	}
	open_all(ls, 10);

	/* Room for 25 pages: the shared 10, then first fit of the rest by key:
	 * /bin/one (ino 1) fits, two and three do not. */
	lockset_plan(ls, 25 * PAGE);
	apply(ls);
	CHECK(locked_of(ls, 100) == 10 * PAGE);
	CHECK(locked_of(ls, 1) == 10 * PAGE);
	CHECK(locked_of(ls, 2) == 0 && locked_of(ls, 3) == 0);
	CHECK(lockset_find_range(ls, &own[1].key)->refusal == LOCK_REFUSAL_GLOBAL);

	/* Tight: only 10 pages. The hot library is the one that stays. */
	lockset_plan(ls, 10 * PAGE);
	apply(ls);
	CHECK(locked_of(ls, 100) == 10 * PAGE);
	CHECK(locked_of(ls, 1) == 0);

	/* Too tight for anything but smaller ranges: none here. */
	lockset_plan(ls, 9 * PAGE);
	apply(ls);
	CHECK(locked_of(ls, 100) == 0);

	/* Per-unit cap of 15 pages on "one": lib (10) fits, its own 10 not;
	 * "two" and "three" are uncapped. */
	{
		struct lock_mapping m[2] = { own[0], lib };

		CHECK(lockset_process_set(ls, 10, "one", 15 * PAGE, m, 2) == 0);
	}
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) == 10 * PAGE);
	CHECK(locked_of(ls, 1) == 0);
	CHECK(locked_of(ls, 2) == 10 * PAGE && locked_of(ls, 3) == 10 * PAGE);
	CHECK(lockset_find_range(ls, &own[0].key)->refusal == LOCK_REFUSAL_UNIT);
	CHECK(lockset_unit_stats(ls, &us, &nus) == 0);
	CHECK(nus == 3);
	for (size_t i = 0; i < nus; i++) {
		if (us[i].cap)
			CHECK(us[i].charged <= us[i].cap);
		CHECK(us[i].mapped == 20 * PAGE);
		if (streq(us[i].name, "one"))
			CHECK(us[i].locked == 10 * PAGE && us[i].charged == 10 * PAGE);
		else
			CHECK(us[i].locked == 20 * PAGE);
	}
	free(us);
	lockset_free(ls);
}

/* Growth: pages that become resident are locked on the next look, and
 * pages that vanish (truncation) are unlocked. */
static void test_growth_and_runs(void)
{
	struct lockset *ls;
	struct lock_mapping m = M(5, 0, 10, "/bin/x");
	unsigned char vec[10] = { 1, 1, 0, 0, 1, 0, 0, 0, 0, 1 };
	struct lock_range *r;
	size_t pos = 0, first, count, n = 0;

	CHECK(lockset_new(PAGE, NULL, NULL, &ls) == 0);
	CHECK(lockset_process_set(ls, 1, "u", 0, &m, 1) == 1);
	r = lockset_range(ls, 0);
	CHECK(lockset_range_opened(ls, r) == 0);
	lockset_range_update_resident(r, vec);
	lockset_plan(ls, 0);
	/* Three runs: [0,2) [4,5) [9,10). */
	while (lockset_next_run(r, LOCK_RUN_LOCK, &pos, &first, &count)) {
		CHECK((n == 0 && first == 0 && count == 2) || (n == 1 && first == 4 && count == 1) ||
		      (n == 2 && first == 9 && count == 1));
		n++;
	}
	CHECK(n == 3);
	apply(ls);
	CHECK(r->n_locked == 4);

	vec[2] = vec[3] = 1; /* more ran */
	vec[9] = 0;	     /* truncated away */
	lockset_range_update_resident(r, vec);
	lockset_plan(ls, 0);
	pos = 0;
	CHECK(lockset_next_run(r, LOCK_RUN_UNLOCK, &pos, &first, &count) && first == 9 && count == 1);
	CHECK(!lockset_next_run(r, LOCK_RUN_UNLOCK, &pos, &first, &count));
	apply(ls);
	CHECK(r->n_locked == 5 && r->n_resident == 5);
	lockset_free(ls);
}

/* Memory running out: give back coldest first, by the bytes asked; a
 * hold keeps the ceiling; lifted after recover_usec without either. */
static void test_pressure(void)
{
	struct lockset *ls;
	struct lock_mapping hot = M(100, 0, 8, "/lib/hot");
	struct lock_mapping c1 = M(1, 0, 8, "/bin/c1"), c2 = M(2, 0, 8, "/bin/c2");
	const uint64_t s = 1000000;

	CHECK(lockset_new(PAGE, NULL, NULL, &ls) == 0);
	CHECK(lockset_process_set(ls, 1, "a", 0, (struct lock_mapping[]){ hot, c1 }, 2) == 2);
	CHECK(lockset_process_set(ls, 2, "b", 0, (struct lock_mapping[]){ hot, c2 }, 2) == 1);
	open_all(ls, 8);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) + locked_of(ls, 1) + locked_of(ls, 2) == 24 * PAGE);
	CHECK(lockset_pressure_ceiling(ls) == UINT64_MAX);

	/* 24 pages locked, 12 asked back (and a bit, rounded down to
	 * pages) -> ceiling 11: the hot one and one cold one cannot both
	 * stay; the hot stays. */
	CHECK(lockset_pressure_give_back(ls, 10 * s, 12 * PAGE + 1));
	CHECK(lockset_pressure_ceiling(ls) == 11 * PAGE);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) == 8 * PAGE);
	CHECK(locked_of(ls, 1) == 0 && locked_of(ls, 2) == 0);
	CHECK(lockset_find_range(ls, &c1.key)->refusal == LOCK_REFUSAL_PRESSURE);

	/* Asking back nothing more: from the 8 locked, ceiling 8, a change
	 * (11 -> 8) but nothing more is unlocked. Then 4 more: nothing fits. */
	CHECK(lockset_pressure_give_back(ls, 11 * s, 0));
	CHECK(lockset_pressure_ceiling(ls) == 8 * PAGE);
	CHECK(!lockset_pressure_give_back(ls, 11 * s, 0));
	CHECK(lockset_pressure_give_back(ls, 12 * s, 4 * PAGE));
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) == 0);
	CHECK(lockset_pressure_events(ls) == 4);

	/* Memory still short at 50 s: held; lifted 60 s after that. */
	lockset_pressure_hold(ls, NULL, 50 * s);
	CHECK(!lockset_pressure_tick(ls, 72 * s, 60 * s));
	CHECK(lockset_pressure_tick(ls, 110 * s, 60 * s));
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) + locked_of(ls, 1) + locked_of(ls, 2) == 24 * PAGE);

	/* A full stall: everything at once, the hot range too. */
	CHECK(lockset_pressure_release_all(ls, 120 * s));
	CHECK(lockset_pressure_ceiling(ls) == 0);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) + locked_of(ls, 1) + locked_of(ls, 2) == 0);
	CHECK(!lockset_pressure_release_all(ls, 121 * s));
	CHECK(!lockset_pressure_tick(ls, 140 * s, 60 * s));
	CHECK(lockset_pressure_tick(ls, 181 * s, 60 * s));
	/* No ceiling: a hold does nothing. */
	lockset_pressure_hold(ls, NULL, 200 * s);
	CHECK(lockset_pressure_ceiling(ls) == UINT64_MAX);
	lockset_free(ls);
}

/* Pressure in one unit's cgroup: that unit's own cold ranges go, what it
 * shares with a calm unit stays, the other unit is untouched. */
static void test_unit_pressure(void)
{
	struct lockset *ls;
	struct lock_mapping shared = M(100, 0, 8, "/lib/shared");
	struct lock_mapping a1 = M(1, 0, 8, "/bin/a1"), a2 = M(2, 0, 8, "/bin/a2"), b = M(3, 0, 8, "/bin/b");
	const uint64_t s = 1000000;

	CHECK(lockset_new(PAGE, NULL, NULL, &ls) == 0);
	CHECK(lockset_process_set(ls, 1, "a", 0, (struct lock_mapping[]){ shared, a1, a2 }, 3) == 3);
	CHECK(lockset_process_set(ls, 2, "b", 0, (struct lock_mapping[]){ shared, b }, 2) == 1);
	open_all(ls, 8);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(lockset_find_unit(ls, "a")->charged == 24 * PAGE);
	CHECK(!lockset_unit_give_back(ls, "nosuch", 1 * s, PAGE));

	/* a: 24 charged, 12 back -> ceiling 12: shared (8) fits, a1 (8)
	 * not, a2 not. */
	CHECK(lockset_unit_give_back(ls, "a", 1 * s, 12 * PAGE));
	CHECK(lockset_find_unit(ls, "a")->ceiling == 12 * PAGE);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) == 8 * PAGE);
	CHECK(locked_of(ls, 1) == 0 && locked_of(ls, 2) == 0);
	CHECK(locked_of(ls, 3) == 8 * PAGE);
	CHECK(lockset_find_range(ls, &a1.key)->refusal == LOCK_REFUSAL_PRESSURE);
	CHECK(lockset_pressure_ceiling(ls) == UINT64_MAX);

	/* More: a's ceiling 4; the shared range stays, on b's behalf. */
	CHECK(lockset_unit_give_back(ls, "a", 3 * s, 4 * PAGE));
	CHECK(lockset_find_unit(ls, "a")->ceiling == 4 * PAGE);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 100) == 8 * PAGE);
	CHECK(lockset_find_unit(ls, "a")->charged == 0);
	CHECK(lockset_find_unit(ls, "b")->charged == 16 * PAGE);

	lockset_pressure_hold(ls, "a", 5 * s);
	lockset_pressure_hold(ls, "nosuch", 5 * s);
	CHECK(!lockset_pressure_tick(ls, 34 * s, 30 * s));
	CHECK(lockset_pressure_tick(ls, 40 * s, 30 * s));
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 1) == 8 * PAGE && locked_of(ls, 2) == 8 * PAGE);

	/* A full stall in a's cgroup: all of a's own, shared stays for b. */
	CHECK(lockset_unit_release_all(ls, "a", 50 * s));
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 1) == 0 && locked_of(ls, 2) == 0);
	CHECK(locked_of(ls, 100) == 8 * PAGE && locked_of(ls, 3) == 8 * PAGE);
	CHECK(!lockset_unit_release_all(ls, "nosuch", 50 * s));
	lockset_free(ls);
}

static void test_failed_once(void)
{
	struct lockset *ls;
	struct lock_mapping m = M(7, 0, 2, "/x");

	CHECK(lockset_new(PAGE, NULL, NULL, &ls) == 0);
	CHECK(lockset_process_set(ls, 1, "u", 0, &m, 1) == 1);
	CHECK(!lockset_reported_before(ls, 0x801, 7));
	CHECK(lockset_range_set_failed(ls, lockset_range(ls, 0), "nope") == 0);
	CHECK(lockset_reported_before(ls, 0x801, 7));
	CHECK(lockset_process_remove(ls, 1) == 1);
	/* Gone and back: still known as reported. */
	CHECK(lockset_process_set(ls, 2, "u", 0, &m, 1) == 1);
	CHECK(lockset_reported_before(ls, 0x801, 7));
	lockset_forget_failures(ls);
	CHECK(!lockset_reported_before(ls, 0x801, 7));
	lockset_plan(ls, 0);
	CHECK(!lockset_range(ls, 0)->admitted); /* never opened */
	lockset_free(ls);
}

/* Random operations against invariants: references add up, budgets and
 * ceilings hold after every plan, locked pages are resident, everything
 * is freed at the end. Deterministic (fixed seed). */
/* Per-request helpers: what an exited process mapped stays its unit's
 * for the keep time, behind every mapped range in the plan, least
 * recently used given up first; a policy release keeps nothing. */
static void test_keep(void)
{
	struct lockset *ls;
	struct lock_mapping svc[2] = { M(1, 0, 10, "/usr/sbin/svc"), M(100, 0, 10, "/lib/libc.so") };
	struct lock_mapping sh[2] = { M(2, 0, 6, "/bin/sh"), M(100, 0, 10, "/lib/libc.so") };
	struct lock_mapping cmd = M(3, 0, 4, "/usr/bin/cmd");
	struct lock_mapping other = M(4, 0, 4, "/usr/bin/other");
	struct lockset_totals t;
	struct lock_unit *u;
	size_t *order, n;

	n_freed = 0;
	CHECK(lockset_new(PAGE, &ops, NULL, &ls) == 0);
	lockset_set_keep(ls, 600 * 1000000ull);
	lockset_set_now(ls, 1000);
	CHECK(lockset_process_set(ls, 10, "web", 0, svc, 2) == 2);
	/* A request: a shell, which execs a command (same pid, new image). */
	CHECK(lockset_process_set(ls, 11, "web", 0, sh, 2) == 1);
	open_all(ls, 100);
	lockset_set_now(ls, 2000);
	CHECK(lockset_process_set(ls, 11, "web", 0, &cmd, 1) == 1);
	open_all(ls, 100);
	/* sh is kept (its unit still exists with the service). */
	CHECK(lockset_find_range(ls, &sh[0].key) != NULL);
	CHECK(lockset_find_range(ls, &sh[0].key)->n_pids == 0);
	CHECK(lockset_find_range(ls, &sh[0].key)->units[0].kept_usec == 2000);
	CHECK(lockset_find_range(ls, &sh[1].key)->n_pids == 1); /* libc: the service maps it */
	lockset_set_now(ls, 3000);
	CHECK(lockset_process_exit(ls, 11) == 1);
	CHECK(lockset_find_range(ls, &cmd.key)->n_pids == 0);
	CHECK(n_freed == 0);
	u = lockset_find_unit(ls, "web");
	CHECK(u && u->n_pids == 1 && u->n_kept == 2);

	/* The plan: mapped first, then kept, the most recent (cmd) first. */
	CHECK(lockset_hot_order(ls, &order, &n) == 0);
	CHECK(n == 4);
	CHECK(lockset_range(ls, order[0])->n_pids > 0 && lockset_range(ls, order[1])->n_pids > 0);
	CHECK(lockset_range(ls, order[2])->key.ino == 3);
	CHECK(lockset_range(ls, order[3])->key.ino == 2);
	free(order);
	/* A unit cap with room for the service and the newest only. */
	CHECK(lockset_process_set(ls, 10, "web", 24 * PAGE, svc, 2) == 0);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK(locked_of(ls, 1) == 10 * PAGE && locked_of(ls, 100) == 10 * PAGE);
	CHECK(locked_of(ls, 3) == 4 * PAGE);
	CHECK(locked_of(ls, 2) == 0);
	CHECK(lockset_find_range(ls, &sh[0].key)->refusal == LOCK_REFUSAL_UNIT);
	lockset_totals(ls, &t);
	CHECK(t.n_kept == 2 && t.kept_locked == 4 * PAGE);

	/* Run again: the kept range comes back to life, then is kept anew. */
	lockset_set_now(ls, 5000);
	CHECK(lockset_process_set(ls, 12, "web", 0, &sh[0], 1) == 0);
	CHECK(lockset_find_range(ls, &sh[0].key)->n_pids == 1 && u->n_kept == 1);
	lockset_set_now(ls, 6000);
	CHECK(lockset_process_exit(ls, 12) == 1);
	CHECK(lockset_find_range(ls, &sh[0].key)->units[0].kept_usec == 6000 && u->n_kept == 2);

	/* A release by the policy keeps nothing. */
	CHECK(lockset_process_set(ls, 13, "web", 0, &other, 1) == 1);
	CHECK(lockset_process_remove(ls, 13) == 1);
	CHECK(lockset_find_range(ls, &other.key) == NULL && n_freed == 1);

	/* Expiry: cmd (kept at 3000) goes 600 s later, sh (6000) not yet. */
	CHECK(lockset_expire(ls, 3000 + 600 * 1000000ull - 1) == 0);
	CHECK(lockset_expire(ls, 3000 + 600 * 1000000ull) == 1);
	CHECK(lockset_find_range(ls, &cmd.key) == NULL && n_freed == 2);
	CHECK(lockset_find_range(ls, &sh[0].key) != NULL);

	/* The unit outlives its processes while it keeps something. */
	CHECK(lockset_process_exit(ls, 10) == 1);
	CHECK(lockset_find_unit(ls, "web") != NULL && lockset_n_processes(ls) == 0);
	lockset_totals(ls, &t);
	CHECK(t.n_kept == 3 && t.n_ranges == 3);
	/* Keep 0: everything kept goes at the next expiry, unit too. */
	lockset_set_keep(ls, 0);
	CHECK(lockset_expire(ls, 7000) == 3);
	CHECK(lockset_n_ranges(ls) == 0 && lockset_n_units(ls) == 0 && n_freed == 5);
	/* Without a keep time, an exit drops at once. */
	CHECK(lockset_process_set(ls, 14, "web", 0, &cmd, 1) == 1);
	CHECK(lockset_process_exit(ls, 14) == 1);
	CHECK(lockset_n_ranges(ls) == 0 && lockset_n_units(ls) == 0);
	lockset_free(ls);
}

/* A helper's pages of a library the service maps too stay used after
 * the helper exits, for the keep time: page by page. */
static void test_keep_pages(void)
{
	struct lockset *ls;
	struct lock_mapping libc = M(100, 0, 10, "/lib/libc.so");
	unsigned char resident[10], used[10];
	struct lock_range *r;

	CHECK(lockset_new(PAGE, NULL, NULL, &ls) == 0);
	lockset_set_keep(ls, 1000);
	lockset_set_now(ls, 10);
	CHECK(lockset_process_set(ls, 1, "web", 0, &libc, 1) == 1);
	CHECK(lockset_process_set(ls, 2, "web", 0, &libc, 1) == 0);
	r = lockset_find_range(ls, &libc.key);
	CHECK(lockset_range_opened(ls, r) == 0);
	for (int i = 0; i < 10; i++) {
		resident[i] = 1;
		used[i] = i < 8; /* the service 0-3, the helper 4-7; 8, 9 read-ahead */
	}
	lockset_range_update_used(r, resident, used);
	CHECK_EQ_INT(r->n_resident, 8);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK_EQ_INT(r->n_locked, 8);
	/* A later look at the service with the same set keeps nothing. */
	CHECK(lockset_process_set(ls, 1, "web", 0, &libc, 1) == 0);
	CHECK_EQ_INT(r->pages_kept_usec, 0);
	/* The helper exits: its pages stay used while resident. */
	lockset_set_now(ls, 20);
	CHECK(lockset_process_exit(ls, 2) == 1);
	CHECK_EQ_INT(r->pages_kept_usec, 20);
	for (int i = 0; i < 10; i++)
		used[i] = i < 4;
	lockset_range_update_used(r, resident, used);
	CHECK_EQ_INT(r->n_resident, 8);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK_EQ_INT(r->n_locked, 8);
	/* A kept page that left the page cache is kept no more. */
	resident[7] = 0;
	lockset_range_update_used(r, resident, used);
	resident[7] = 1;
	lockset_range_update_used(r, resident, used);
	CHECK_EQ_INT(r->n_resident, 7);
	/* After the keep time only what the service uses counts. */
	CHECK(lockset_expire(ls, 20 + 999) == 0);
	lockset_range_update_used(r, resident, used);
	CHECK_EQ_INT(r->n_resident, 7);
	CHECK(lockset_expire(ls, 20 + 1000) == 0);
	CHECK_EQ_INT(r->pages_kept_usec, 0);
	lockset_range_update_used(r, resident, used);
	CHECK_EQ_INT(r->n_resident, 4);
	lockset_plan(ls, 0);
	apply(ls);
	CHECK_EQ_INT(r->n_locked, 4);
	/* Keep 0: an exit keeps no page. */
	lockset_set_keep(ls, 0);
	CHECK(lockset_process_set(ls, 3, "web", 0, &libc, 1) == 0);
	for (int i = 0; i < 10; i++)
		used[i] = 1;
	lockset_range_update_used(r, resident, used);
	CHECK(lockset_process_exit(ls, 3) == 1);
	CHECK_EQ_INT(r->pages_kept_usec, 0);
	for (int i = 0; i < 10; i++)
		used[i] = i < 4;
	lockset_range_update_used(r, resident, used);
	CHECK_EQ_INT(r->n_resident, 4);
	lockset_free(ls);
}

static void random_run(bool keep)
{
	static const char *const units[] = { "u0", "u1", "u2", "u3" };
	struct lockset *ls;
	unsigned seed = 12345;
	unsigned created = 0;

	n_freed = 0;
	CHECK(lockset_new(PAGE, &ops, NULL, &ls) == 0);
	if (keep)
		lockset_set_keep(ls, 50 * 100000);
	for (int step = 0; step < 3000; step++) {
		unsigned op = rand_r(&seed) % 10;
		pid_t pid = 1 + (pid_t)(rand_r(&seed) % 12);

		lockset_set_now(ls, (uint64_t)step * 100000);
		if (keep && rand_r(&seed) % 4 == 0)
			lockset_expire(ls, (uint64_t)step * 100000);
		if (op < 5) {
			struct lock_mapping m[6];
			size_t n = rand_r(&seed) % 6;
			const char *u = units[rand_r(&seed) % 4];
			uint64_t cap = rand_r(&seed) % 3 ? 0 : (uint64_t)(rand_r(&seed) % 40) * PAGE;
			int r;

			for (size_t i = 0; i < n; i++)
				m[i] = M(1 + rand_r(&seed) % 9, rand_r(&seed) % 2, 1 + rand_r(&seed) % 12, "/f");
			r = lockset_process_set(ls, pid, u, cap, m, n);
			CHECK(r >= 0);
			if (r > 0)
				created += (unsigned)r;
			open_all(ls, rand_r(&seed) % 13);
		} else if (op < 7) {
			if (rand_r(&seed) % 2)
				lockset_process_exit(ls, pid);
			else
				lockset_process_remove(ls, pid);
		} else if (op < 8) {
			lockset_pressure_give_back(ls, (uint64_t)step * 100000, (uint64_t)(rand_r(&seed) % 20) * PAGE);
		} else if (op < 9) {
			lockset_pressure_tick(ls, (uint64_t)step * 100000, 3000000);
		} else {
			const char *u = units[rand_r(&seed) % 4];

			lockset_unit_give_back(ls, u, (uint64_t)step * 100000, (uint64_t)(rand_r(&seed) % 20) * PAGE);
		}
		/* Residency drifts; locked pages stay resident. */
		for (size_t i = 0; i < lockset_n_ranges(ls); i++) {
			struct lock_range *r = lockset_range(ls, i);
			unsigned char vec[16];

			if (r->state != LOCK_RANGE_OPEN || rand_r(&seed) % 4)
				continue;
			for (size_t p = 0; p < r->n_pages; p++)
				vec[p] = (r->pages[p] & LOCK_PAGE_LOCKED) || rand_r(&seed) % 2;
			if (rand_r(&seed) % 2) {
				lockset_range_update_resident(r, vec);
			} else {
				unsigned char used[16];

				for (size_t p = 0; p < r->n_pages; p++)
					used[p] = rand_r(&seed) % 2;
				lockset_range_update_used(r, vec, used);
			}
		}
		{
			uint64_t cap = rand_r(&seed) % 2 ? 0 : (uint64_t)(rand_r(&seed) % 60) * PAGE;
			struct lockset_totals t;
			size_t sum_pids = 0;

			lockset_plan(ls, cap);
			apply(ls);
			lockset_totals(ls, &t);
			if (cap)
				CHECK(t.locked <= cap);
			CHECK(t.locked <= lockset_pressure_ceiling(ls));
			CHECK(t.locked <= t.resident);
			for (size_t i = 0; i < lockset_n_units(ls); i++) {
				struct lock_unit *u = lockset_unit(ls, i);

				size_t kept = 0;

				if (u->cap)
					CHECK(u->charged <= u->cap);
				CHECK(u->charged <= u->ceiling);
				sum_pids += u->n_pids;
				for (size_t k = 0; k < lockset_n_ranges(ls); k++) {
					struct lock_range *r = lockset_range(ls, k);

					for (size_t j = 0; j < r->n_units; j++)
						kept += r->units[j].unit == u && r->units[j].n_pids == 0;
				}
				CHECK(kept == u->n_kept);
				CHECK(u->n_pids > 0 || u->n_kept > 0);
			}
			CHECK(sum_pids == lockset_n_processes(ls));
			for (size_t i = 0; i < lockset_n_ranges(ls); i++) {
				struct lock_range *r = lockset_range(ls, i);
				size_t per_unit = 0, live = 0;

				for (size_t k = 0; k < r->n_units; k++) {
					per_unit += r->units[k].n_pids;
					live += r->units[k].n_pids > 0;
				}
				CHECK(per_unit == r->n_pids && r->n_units > 0);
				CHECK(live == r->n_live_units);
				CHECK(keep || r->n_pids > 0);
				for (size_t p = 0; p < r->n_pages; p++)
					CHECK(keep || !(r->pages[p] & LOCK_PAGE_KEPT));
				if (!r->admitted)
					CHECK(r->n_locked == 0);
			}
		}
	}
	for (pid_t pid = 1; pid <= 12; pid++)
		lockset_process_remove(ls, pid);
	lockset_set_keep(ls, 0);
	lockset_expire(ls, UINT64_MAX);
	CHECK(lockset_n_ranges(ls) == 0 && lockset_n_units(ls) == 0 && lockset_n_processes(ls) == 0);
	CHECK(n_freed == created);
	lockset_free(ls);
}

static void test_random(void)
{
	random_run(false);
	random_run(true);
}

static void test_memlimit(void)
{
	uint64_t v = 0;

	CHECK(memlimit_parse("max\n", 4, &v) == 0 && v == UINT64_MAX);
	CHECK(memlimit_parse("33554432\n", 9, &v) == 0 && v == 33554432);
	CHECK(memlimit_parse("", 0, &v) == -EINVAL);
	CHECK(memlimit_parse("12 kB", 5, &v) == -EINVAL);

	/* Room: what is left under the limit plus reclaimable file. */
	CHECK(mem_headroom(UINT64_MAX, 5, 5) == UINT64_MAX);
	CHECK(mem_headroom(100, 40, 30) == 90);
	CHECK(mem_headroom(100, 120, 30) == 30); /* over memory.high */
	CHECK(mem_headroom(100, 100, 0) == 0);
}

static void test_memcg1_parse(void)
{
	static const char cg[] = "12:pids:/x\n5:cpu,cpuacct:/y\n4:memory:/system.slice/a.service\n"
				 "0::/system.slice/a.service\n";
	char *s = NULL;

	CHECK(memcg1_parse_cgroup(cg, strlen(cg), &s) == 0 && streq(s, "/system.slice/a.service"));
	free(s);
	s = NULL;
	CHECK(memcg1_parse_cgroup("0::/a\n", 6, &s) == -ENOENT);
	CHECK(memcg1_parse_cgroup("3:cpu,memory:/b", 15, &s) == 0 && streq(s, "/b"));
	free(s);
}

static void test_psi_format(void)
{
	char b[64];

	CHECK(psi_trigger_format(b, sizeof(b), PSI_SOME, 150, 1000) == 0 && streq(b, "some 150000 1000000"));
	CHECK(psi_trigger_format(b, sizeof(b), PSI_FULL, 500, 2000) == 0 && streq(b, "full 500000 2000000"));
	CHECK(psi_trigger_format(b, sizeof(b), PSI_SOME, 0, 1000) == -EINVAL);
	CHECK(psi_trigger_format(b, sizeof(b), PSI_SOME, 100, 400) == -EINVAL);
	CHECK(psi_trigger_format(b, sizeof(b), PSI_SOME, 2000, 1000) == -EINVAL);
	CHECK(psi_trigger_format(b, sizeof(b), PSI_SOME, 100, 20000) == -EINVAL);
	CHECK(psi_trigger_format(b, 4, PSI_SOME, 100, 1000) == -ENOBUFS);
	{
		unsigned st, w;

		psi_unprivileged_window(100, 1000, &st, &w);
		CHECK(st == 200 && w == 2000);
		psi_unprivileged_window(150, 2000, &st, &w);
		CHECK(st == 150 && w == 2000);
		psi_unprivileged_window(1, 500, &st, &w);
		CHECK(st == 4 && w == 2000);
		psi_unprivileged_window(5000, 9000, &st, &w);
		CHECK(st == 5000 * 10 / 9 && w == 10000);
	}
}

TEST_MAIN(test_pagemap_selection, test_key_alignment, test_refcount_shared, test_same_unit_counts_once, test_replaced_file,
	  test_budgets, test_keep, test_keep_pages, test_growth_and_runs, test_pressure, test_unit_pressure, test_failed_once,
	  test_random, test_memlimit, test_memcg1_parse, test_psi_format)
