/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lock backend's engine, free of system calls: which file ranges the
 * protected processes map (one entry per dev/inode/offset/length whatever
 * the number of processes), which of their pages were resident at the last
 * look and which are locked, and the plan of what to lock within the
 * global and per-unit budgets, hot shared ranges first, giving back the
 * coldest first under memory pressure. A range a unit's processes stop
 * mapping (exit, exec of something else, munmap) may be kept for the
 * unit for a while: per-request helpers stay resident between requests,
 * after every mapped range, most recently used first. The backend does
 * the I/O (residency.h) and feeds the results in. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Per-page state bits in lock_range.pages. */
#define LOCK_PAGE_RESIDENT 0x01u /* in the page cache at the last mincore() */
#define LOCK_PAGE_LOCKED   0x02u /* mlock()ed by us */
/* Used by a process that no longer maps the range (exit, exec, munmap):
 * counts as used while resident, until the keep time has passed. */
#define LOCK_PAGE_KEPT     0x04u

enum lock_range_state {
	LOCK_RANGE_NEW,	       /* not opened yet */
	LOCK_RANGE_OPEN,       /* mapped into the daemon, ready to lock */
	LOCK_RANGE_UNLOCKABLE, /* opened or classified, but not lockable (reason) */
	LOCK_RANGE_FAILED,     /* could not be opened (reason); not retried */
};

enum lock_refusal {
	LOCK_REFUSAL_NONE,
	LOCK_REFUSAL_GLOBAL,   /* the global budget (or pressure ceiling) is full */
	LOCK_REFUSAL_UNIT,     /* every unit that maps it is at its cap */
	LOCK_REFUSAL_PRESSURE, /* the pressure ceiling, not the budget, refused it */
	LOCK_REFUSAL_ERROR,    /* mlock() failed (RLIMIT_MEMLOCK?) */
};

const char *lock_refusal_to_string(enum lock_refusal r);
const char *lock_range_state_to_string(enum lock_range_state s);

struct lock_key {
	uint64_t dev; /* makedev(major, minor) */
	uint64_t ino;
	uint64_t offset; /* page aligned */
	uint64_t length; /* page aligned, > 0 */
};

int lock_key_compare(const struct lock_key *a, const struct lock_key *b);

struct lock_unit;

/* A unit's reference to a range: n_pids of its processes map it, or
 * none does any more and it is kept since kept_usec (lockset_set_keep). */
struct lock_unit_ref {
	struct lock_unit *unit;
	unsigned n_pids;
	uint64_t kept_usec;
};

struct lock_range {
	struct lock_key key;
	char *path; /* for reports; the path at the time it was first seen */
	unsigned prot; /* MAP_PROT_* (maps.h) of the mappings seen, or'ed */
	enum lock_range_state state;
	char *reason; /* for UNLOCKABLE and FAILED */

	size_t n_pages;
	uint8_t *pages; /* LOCK_PAGE_* per page */
	uint64_t pages_kept_usec; /* when LOCK_PAGE_KEPT bits were last set; 0: none */
	size_t n_resident, n_locked;

	/* Who maps it: one entry per unit with the count of its processes
	 * (n_units counts the units keeping it too, n_live_units not). The
	 * range exists while some unit maps or keeps it. */
	struct lock_unit_ref *units;
	size_t n_units, n_live_units, n_pids;

	/* Result of the last plan. */
	bool admitted;
	/* Residency or admission changed since the I/O side last acted on
	 * it: only such ranges need a walk over their pages. */
	bool dirty;
	enum lock_refusal refusal;
	unsigned refusals_reported; /* bit per enum lock_refusal, for the I/O side */

	/* Owned by the I/O side: the daemon's own mapping of the range. */
	void *map;
};

struct lock_unit {
	char *name;
	uint64_t cap;	  /* per-unit budget in bytes; 0 = none */
	size_t n_pids;
	size_t n_kept;	  /* ranges it keeps that none of its processes maps */
	uint64_t charged; /* bytes charged to it by the last plan */

	/* Pressure in the unit's own cgroup (memory.pressure). */
	uint64_t ceiling; /* UINT64_MAX: none */
	uint64_t last_step_usec, last_event_usec;
	bool pressure_seen;
	unsigned n_pressure_events;
};

struct lockset_ops {
	/* Called before a range is freed (last process gone): unmap it. */
	void (*range_free)(struct lock_range *r, void *userdata);
};

struct lockset;

int lockset_new(size_t page_size, const struct lockset_ops *ops, void *userdata, struct lockset **ret);
struct lockset *lockset_free(struct lockset *ls);

/* One mapping a process has, as the lock set sees it. */
struct lock_mapping {
	struct lock_key key;
	const char *path;
	unsigned prot; /* MAP_PROT_* */
};

/* Keeping: a range that the processes of a unit stop mapping (the last
 * exits, or execs or unmaps it) stays the unit's for keep_usec after
 * that (0, the default: dropped at once), charged to its budget like a
 * mapped one. The clock is the caller's: lockset_set_now() before the
 * calls that may drop references. */
void lockset_set_keep(struct lockset *ls, uint64_t keep_usec);
void lockset_set_now(struct lockset *ls, uint64_t now_usec);
/* Drop what was kept keep_usec or longer (all of it with keep 0);
 * returns the number of references dropped. */
size_t lockset_expire(struct lockset *ls, uint64_t now_usec);

/* Set the complete list of lockable ranges mapped by pid, in unit (which
 * may be any grouping name, never NULL) with its per-unit cap (0 = none).
 * References the process no longer has are dropped (kept for the unit,
 * see lockset_set_keep), new ranges are created in state NEW. Returns the
 * number of ranges created or a negative errno (on error the previous
 * state of pid is kept). */
int lockset_process_set(struct lockset *ls, pid_t pid, const char *unit, uint64_t unit_cap,
			const struct lock_mapping *m, size_t n);

/* Drop every reference pid holds (the policy no longer protects it);
 * ranges nobody maps or keeps any more are freed through
 * ops->range_free. Returns 1 if pid was known, else 0. */
int lockset_process_remove(struct lockset *ls, pid_t pid);
/* The same when pid exited: what only it mapped is kept for its unit. */
int lockset_process_exit(struct lockset *ls, pid_t pid);

bool lockset_has_process(const struct lockset *ls, pid_t pid);

/* Iteration over ranges and units, sorted by key / by name. */
size_t lockset_n_ranges(const struct lockset *ls);
struct lock_range *lockset_range(const struct lockset *ls, size_t i);
struct lock_range *lockset_find_range(const struct lockset *ls, const struct lock_key *key);
size_t lockset_n_units(const struct lockset *ls);
struct lock_unit *lockset_find_unit(const struct lockset *ls, const char *name);
struct lock_unit *lockset_unit(const struct lockset *ls, size_t i);
size_t lockset_n_processes(const struct lockset *ls);

/* Mark a range as opened (allocates its page array), unlockable or failed.
 * Either way the (dev, inode) is remembered: lockset_reported_before() says
 * it was reported already (do not report again), until
 * lockset_forget_failures() (on reload). */
int lockset_range_opened(struct lockset *ls, struct lock_range *r);
int lockset_range_set_unlockable(struct lockset *ls, struct lock_range *r, const char *reason);
int lockset_range_set_failed(struct lockset *ls, struct lock_range *r, const char *reason);
bool lockset_reported_before(const struct lockset *ls, uint64_t dev, uint64_t ino);
void lockset_forget_failures(struct lockset *ls);

/* Take a mincore() vector (bit 0 of each byte) for an OPEN range. Pages
 * that were locked but are no longer resident (truncated file) keep their
 * LOCKED bit so that lockset_next_run() finds them to unlock. */
void lockset_range_update_resident(struct lock_range *r, const unsigned char *vec);
/* The same from residency and use apart: a page counts (RESIDENT) when
 * it is resident and used (the processes mapping the range map it; used
 * NULL: all resident pages are), or resident and kept (LOCK_PAGE_KEPT). A
 * kept page no longer resident is kept no more. */
void lockset_range_update_used(struct lock_range *r, const unsigned char *resident, const unsigned char *used);

/* Record that pages [first, first+count) are now locked or unlocked. */
void lockset_range_mark(struct lock_range *r, size_t first, size_t count, bool locked);

enum lock_run_kind {
	LOCK_RUN_LOCK,	 /* resident, not locked, range admitted */
	LOCK_RUN_UNLOCK, /* locked, and the range is not admitted or the page is gone */
};

/* Find the next run of pages at or after *pos that needs the given action.
 * Returns true with [*ret_first, *ret_first + *ret_count) and advances *pos. */
bool lockset_next_run(const struct lock_range *r, enum lock_run_kind kind, size_t *pos,
		      size_t *ret_first, size_t *ret_count);

/* The plan: admit OPEN ranges hot first (most units, then most processes
 * mapping them; then the kept ones, most recently used first) while their
 * resident bytes fit the global cap (0 = no cap), the pressure ceiling
 * and the cap and pressure ceiling of at least one unit mapping or
 * keeping them (charged to each such unit that has room).
 * Returns the number of ranges whose admission changed. */
size_t lockset_plan(struct lockset *ls, uint64_t global_cap);

/* Order (indices into the range list) used by the plan; for reports. */
int lockset_hot_order(const struct lockset *ls, size_t **ret, size_t *ret_n);

/* Memory pressure: the backend found memory running out (see meminfo.h)
 * and gives back bytes of locked text, least shared and coldest first:
 * the ceiling drops to what is locked (or the ceiling in force, if lower)
 * minus bytes. lockset_pressure_tick() lifts a ceiling after recover_usec
 * without a give-back or a lockset_pressure_hold() (memory still short).
 * Return true when the ceiling changed (then plan again). */
bool lockset_pressure_give_back(struct lockset *ls, uint64_t now_usec, uint64_t bytes);
bool lockset_pressure_tick(struct lockset *ls, uint64_t now_usec, uint64_t recover_usec);
/* The same for one unit, from its cgroup's room under its limit: the
 * unit's ceiling drops from what the last plan charged it; ranges it
 * shares with units that still have room stay locked. The tick above
 * lifts unit ceilings too. */
bool lockset_unit_give_back(struct lockset *ls, const char *unit, uint64_t now_usec, uint64_t bytes);
/* Keep a ceiling in force (global with unit NULL, else that unit's) as if
 * it had just been set: memory is still short, do not retake yet. */
void lockset_pressure_hold(struct lockset *ls, const char *unit, uint64_t now_usec);
/* Severe pressure (memory nearly gone): give back everything at once,
 * globally or for one unit; lifted by the tick like any ceiling. Return
 * true when the ceiling changed. */
bool lockset_pressure_release_all(struct lockset *ls, uint64_t now_usec);
bool lockset_unit_release_all(struct lockset *ls, const char *unit, uint64_t now_usec);
/* UINT64_MAX when no ceiling is in force. */
uint64_t lockset_pressure_ceiling(const struct lockset *ls);
unsigned lockset_pressure_events(const struct lockset *ls);

struct lockset_totals {
	size_t n_ranges, n_open, n_admitted, n_refused, n_unlockable, n_failed;
	size_t n_processes, n_units;
	size_t n_kept;			   /* ranges no process maps, kept */
	uint64_t mapped, resident, locked; /* bytes, each range counted once */
	uint64_t kept_locked;		   /* of locked: in kept ranges */
	uint64_t admitted_resident;	   /* what a plan would lock (dry run) */
};

void lockset_totals(const struct lockset *ls, struct lockset_totals *ret);

/* Per-file and per-unit figures for the journal, STATUS= and execguardctl.
 * A unit's mapped/resident/locked count every range it maps (shared ones
 * in full); charged is what the budget plan charged it. */
struct lockset_file_stat {
	const char *path;
	uint64_t dev, ino;
	size_t n_ranges, n_units, n_pids;
	uint64_t mapped, resident, locked;
	enum lock_range_state state;
	enum lock_refusal refusal; /* of the first refused range, if any */
	const char *reason;
};

struct lockset_unit_stat {
	const char *name;
	size_t n_pids, n_ranges;
	size_t n_kept;	     /* of n_ranges: kept, none of its processes maps them */
	uint64_t kept_locked; /* locked bytes of those */
	uint64_t mapped, resident, locked, charged, cap;
	uint64_t ceiling; /* UINT64_MAX: none */
	unsigned n_pressure_events;
};

int lockset_file_stats(const struct lockset *ls, struct lockset_file_stat **ret, size_t *ret_n);
int lockset_unit_stats(const struct lockset *ls, struct lockset_unit_stat **ret, size_t *ret_n);

/* Pure helpers shared with the tests. */
/* /proc/PID/pagemap entries of a process's mapping of a range, page by
 * page: set mapped[i] for each page it maps as the file's page (present,
 * bit 63, and file-backed, bit 61). A private page already copied on
 * write is anonymous memory (bit 61 clear) and stays unset, as do pages
 * not present or swapped out. */
void lock_pages_from_pagemap(const uint64_t *entries, size_t n, unsigned char *mapped);
/* Page-align a mapping: [offset, offset + length) rounded out to pages. */
void lock_key_from_mapping(uint64_t dev, uint64_t ino, uint64_t file_offset, uint64_t length,
			   size_t page_size, struct lock_key *ret);
