/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lock backend's state and what its parts share: backend-lock.c
 * scans and follows the protected processes (create, protect, release,
 * reconfigure, the re-check timer), backend-lock-apply.c carries out the
 * plan (mlock) and reports refusals, backend-lock-pressure.c gives locks
 * back under memory pressure (PSI triggers, the memory watch),
 * backend-lock-report.c logs and reports what is locked. Each calls only
 * the ones after it in this list. Nothing outside these files includes
 * this header. */
#pragma once

#include <systemd/sd-event.h>

#include "backend.h"
#include "event-util.h"
#include "lockset.h"
#include "meminfo.h"
#include "psi.h"
#include "util.h"

#define DEFAULT_RECHECK_SEC 10u
#define DEFAULT_STALL_MS 100u
#define DEFAULT_WINDOW_MS 1000u
#define DEFAULT_RECOVER_SEC 30u
#define DEFAULT_RESERVE_PERCENT 1u /* policy.c's default; for zeroed settings */
/* The reserve is never below this (or an eighth of what it is taken of). */
#define RESERVE_FLOOR (4ull << 20)
/* How often memory is looked at while there was pressure recently. */
#define WATCH_USEC 250000ull

struct lock_backend;

/* A memory PSI trigger on one unit's cgroup. */
struct unit_watch {
	struct lock_backend *b;
	char *unit;
	char *cgroup;
	struct psi_trigger *psi; /* NULL: could not be set (reported once) */
	struct psi_trigger *psi_full;
	char *memcg1;		 /* v1 memory controller directory, if any */
	uint64_t full_until;	 /* a "full" stall was seen: low room is severe */
	uint64_t low_since;	 /* below the reserve since; 0: not */
	struct memcg_room room;	 /* at the last look */
	uint64_t reserve;
};

/* Where a protected process maps each of its ranges, and its pagemap. */
struct proc_map {
	struct lock_key key;
	uint64_t start;
};

struct proc_entry {
	pid_t pid;
	int pagemap_fd; /* -1: cannot tell what it maps, take what is resident */
	struct proc_map *maps;
	size_t n_maps;
};

struct map_user {
	const struct proc_map *m;
	const struct proc_entry *p;
};

struct lock_backend {
	sd_event *event;
	int cgroup_root_fd;
	int proc_fd; /* the proc root: meminfo, pressure/memory */
	bool dry_run;
	struct daemon_settings settings;
	size_t page_size;
	uint64_t mem_total;
	uint64_t global_cap; /* 0: none */

	struct lockset *ls;
	unsigned char *vec; /* mincore() scratch */
	size_t vec_size;

	sd_event_source *recheck;
	struct psi_trigger *psi, *psi_full;
	bool ceiling_logged;

	/* The memory watch: armed by PSI events, looks at the room left. */
	sd_event_source *watch;
	uint64_t watch_until, full_until;
	uint64_t avail, reserve; /* at the last look; avail UINT64_MAX: unknown */
	uint64_t low_since;	 /* below the reserve since; 0: not */

	struct proc_entry **procs;
	size_t n_procs;
	struct map_user *users; /* sorted by key, rebuilt when users_dirty */
	size_t n_users;
	bool users_dirty;
	uint64_t *pm; /* pagemap scratch */
	unsigned char *mapped;
	size_t mapped_size;

	struct unit_watch **watches;
	size_t n_watches;
	bool watch_failed_logged;

	unsigned skipped_kinds; /* bit per enum mapping_kind already reported */
	bool mlock_failed_logged;
	uint64_t last_logged_locked;
};

/* The loop's CLOCK_MONOTONIC now in microseconds; the clock's without
 * a loop. */
static inline uint64_t lock_now_usec(struct lock_backend *b)
{
	uint64_t t = 0;

	if (!b->event || sd_event_now(b->event, CLOCK_MONOTONIC, &t) < 0)
		t = now_ns() / 1000;
	return t;
}

/* backend-lock-apply.c */
/* Plan within the budgets, lock and unlock to match, report refusals. */
void plan_and_apply(struct lock_backend *b);
/* Whether this process may lock beyond RLIMIT_MEMLOCK. */
bool has_cap_ipc_lock(void);

/* backend-lock-pressure.c */
void pressure_params(const struct daemon_settings *s, unsigned *stall, unsigned *window,
		     unsigned *recover);
uint64_t reserve_of(const struct daemon_settings *s, uint64_t base);
/* A unit's room under its memory limits and its reserve, into w. */
void unit_room(struct lock_backend *b, struct unit_watch *w);
void look_at_memory(struct lock_backend *b);
/* The global memory PSI triggers, set anew (failures are logged). */
void setup_pressure_triggers(struct lock_backend *b);
struct unit_watch *unit_watch_free(struct unit_watch *w);
void unit_watch_add(struct lock_backend *b, const char *unit, const char *cgroup, int proc_pid_fd,
		    const char *memcg1);
void unit_watches_prune(struct lock_backend *b);
void unit_watches_reset(struct lock_backend *b);

/* backend-lock-report.c */
/* Per unit; unless forced only when the locked total moved by 1 MiB. */
void log_summary(struct lock_backend *b, bool force);
void lock_describe(void *state, char *buf, size_t size);
void lock_log_stats(void *state);
int lock_report_units(void *state, struct backend_unit_report *units, size_t n);
int lock_report_files(void *state, struct backend_file_report **ret, size_t *ret_n);
