/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lock backend, for kernels without memory.exec_protect: keeps the
 * resident pages of protected processes' exec file mappings mlock()ed,
 * page precisely, within budgets, and gives them back under memory
 * pressure. The decisions are lockset.c's; this file does the I/O and owns
 * the sd-event sources (re-check timer, PSI triggers, the memory watch).
 *
 * What is locked: the pages of each exec file range that are resident
 * (mincore() on the daemon's own mapping) and mapped by a protected
 * process (the present bit of /proc/PID/pagemap over its mapping), so not
 * the read-ahead around a fault that never ran. Without a readable
 * pagemap, resident pages are taken.
 *
 * Giving back: a PSI trigger event only starts a watch. Locks are given
 * back when memory is actually running out, that is when MemAvailable (or
 * a unit cgroup's room under its limit plus its reclaimable file memory,
 * meminfo.h) is below PressureReserve=: page-cache churn keeps those
 * high, and then the locks are what keeps text from being thrashed. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "backend-lock.h"
#include "backend.h"
#include "caps.h"
#include "hashmap.h"
#include "lockset.h"
#include "log.h"
#include "meminfo.h"
#include "procfs.h"
#include "psi.h"
#include "residency.h"
#include "util.h"

/* Message ids of the lock backend's journal events (see the catalog). */

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

static unsigned recheck_sec(const struct daemon_settings *s)
{
	return s->lock_recheck_sec ? s->lock_recheck_sec : DEFAULT_RECHECK_SEC;
}

static void pressure_params(const struct daemon_settings *s, unsigned *stall, unsigned *window,
			    unsigned *recover)
{
	*window = s->pressure_window_ms ? s->pressure_window_ms : DEFAULT_WINDOW_MS;
	if (*window < PSI_WINDOW_MIN_MS)
		*window = PSI_WINDOW_MIN_MS;
	if (*window > PSI_WINDOW_MAX_MS)
		*window = PSI_WINDOW_MAX_MS;
	*stall = s->pressure_stall_ms ? s->pressure_stall_ms : DEFAULT_STALL_MS;
	if (*stall > *window)
		*stall = *window;
	*recover = s->pressure_recover_sec ? s->pressure_recover_sec : DEFAULT_RECOVER_SEC;
}

/* PressureReserve= of what (RAM, a cgroup limit), with its floor. */
static uint64_t reserve_of(const struct daemon_settings *s, uint64_t base)
{
	uint64_t v = s->pressure_reserve.set ? budget_resolve(&s->pressure_reserve, base)
					     : base / 100 * DEFAULT_RESERVE_PERCENT;
	uint64_t floor = base / 8 < RESERVE_FLOOR ? base / 8 : RESERVE_FLOOR;

	if (s->pressure_reserve.set && !s->pressure_reserve.percent && !s->pressure_reserve.bytes)
		return 0; /* PressureReserve=0: never give back */
	return v > floor ? v : floor;
}

static uint64_t resolve_cap(const struct budget *b, uint64_t mem_total)
{
	uint64_t v = budget_resolve(b, mem_total);

	return v == UINT64_MAX ? 0 : v;
}

static uint64_t now_usec(struct lock_backend *b)
{
	uint64_t t = 0;

	if (!b->event || sd_event_now(b->event, CLOCK_MONOTONIC, &t) < 0)
		t = now_ns() / 1000;
	return t;
}

static void range_unmap(struct lock_range *r, void *userdata _unused_)
{
	/* munmap() drops our locks on it too. */
	residency_unmap(r->map, r->key.length);
	r->map = NULL;
}

static const struct lockset_ops lock_ops = { .range_free = range_unmap };

static int cmp_key_ptr(const struct lock_key *a, const struct lock_key *b)
{
	return lock_key_compare(a, b);
}

static int cmp_user(const void *x, const void *y)
{
	const struct map_user *a = x, *b = y;

	return cmp_key_ptr(&a->m->key, &b->m->key);
}

static void users_rebuild(struct lock_backend *b)
{
	size_t n = 0;
	struct map_user *u;

	if (!b->users_dirty)
		return;
	for (size_t i = 0; i < b->n_procs; i++)
		n += b->procs[i]->n_maps;
	u = realloc(b->users, (n ? n : 1) * sizeof(*u));
	if (!u)
		return; /* keep dirty: the next scan tries again */
	b->users = u;
	b->n_users = 0;
	for (size_t i = 0; i < b->n_procs; i++)
		for (size_t j = 0; j < b->procs[i]->n_maps; j++)
			b->users[b->n_users++] = (struct map_user){ &b->procs[i]->maps[j], b->procs[i] };
	qsort(b->users, b->n_users, sizeof(*b->users), cmp_user);
	b->users_dirty = false;
}

/* OR the pagemap present bits of one process's mapping into b->mapped. */
static int read_present(struct lock_backend *b, const struct map_user *u, size_t n_pages)
{
	enum { CHUNK = 512 };
	uint64_t first = u->m->start / b->page_size;

	if (!b->pm) {
		b->pm = malloc(CHUNK * sizeof(uint64_t));
		if (!b->pm)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n_pages;) {
		size_t want = n_pages - i < CHUNK ? n_pages - i : CHUNK;
		ssize_t got = pread(u->p->pagemap_fd, b->pm, want * sizeof(uint64_t),
				    (off_t)((first + i) * sizeof(uint64_t)));

		if (got < 0)
			return -errno;
		if (got == 0)
			return -ESRCH; /* that address space is gone (exit, exec) */
		for (size_t k = 0; k < (size_t)got / sizeof(uint64_t); k++)
			if (b->pm[k] >> 63) /* present */
				b->mapped[i + k] = 1;
		i += (size_t)got / sizeof(uint64_t);
	}
	return 0;
}

/* Keep of the resident pages only those a protected process has mapped;
 * unchanged when some process mapping the range cannot be asked. */
static void filter_mapped(struct lock_backend *b, struct lock_range *r)
{
	size_t lo = 0, hi, n;
	bool any = false;

	users_rebuild(b);
	if (b->users_dirty)
		return;
	hi = b->n_users;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_key_ptr(&b->users[mid].m->key, &r->key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == b->n_users || cmp_key_ptr(&b->users[lo].m->key, &r->key) != 0)
		return;
	if (r->n_pages > b->mapped_size) {
		unsigned char *nm = realloc(b->mapped, r->n_pages);

		if (!nm)
			return;
		b->mapped = nm;
		b->mapped_size = r->n_pages;
	}
	memset(b->mapped, 0, r->n_pages);
	for (n = lo; n < b->n_users && cmp_key_ptr(&b->users[n].m->key, &r->key) == 0; n++) {
		const struct map_user *u = &b->users[n];

		if (u->p->pagemap_fd < 0)
			return;
		int k = read_present(b, u, r->n_pages);

		if (k == 0)
			any = true;
		else if (k == -ENOMEM)
			return;
	}
	if (!any)
		return;
	for (size_t i = 0; i < r->n_pages; i++)
		if (!b->mapped[i])
			b->vec[i] &= (unsigned char)~1u;
}

static int scan_range(struct lock_backend *b, struct lock_range *r)
{
	int k;

	if (r->state != LOCK_RANGE_OPEN || !r->map)
		return 0;
	if (r->n_pages > b->vec_size) {
		unsigned char *nv = realloc(b->vec, r->n_pages);

		if (!nv)
			return -ENOMEM;
		b->vec = nv;
		b->vec_size = r->n_pages;
	}
	k = residency_mincore(r->map, r->key.length, b->vec);
	if (k < 0)
		return k;
	filter_mapped(b, r);
	lockset_range_update_resident(r, b->vec);
	return 0;
}

static bool has_cap_ipc_lock(void)
{
	_cleanup_free_ char *buf = NULL;
	struct proc_status st;
	size_t len;

	/* The daemon's own status: /proc/self even with another proc root. */
	if (read_file_at(AT_FDCWD, "/proc/self/status", 1 << 16, &buf, &len) < 0 ||
	    proc_status_parse(buf, len, &st) < 0 || !st.has_cap_eff)
		return false;
	return st.cap_eff & (1ULL << 14); /* CAP_IPC_LOCK */
}

static void log_mlock_failure(struct lock_backend *b, struct lock_range *r, int err)
{
	struct rlimit rl = { 0 };
	struct log_fields f = LOG_FIELDS_INIT;
	char lim[32] = "unlimited";

	if (b->mlock_failed_logged)
		return;
	b->mlock_failed_logged = true;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		format_bytes(lim, sizeof(lim), (uint64_t)rl.rlim_cur);
	f.backend = "lock";
	f.exe = r->path;
	log_event(LOG_WARNING, MID_LOCK_MLOCK_FAILED, &f,
		  "mlock() of %s failed: %s (RLIMIT_MEMLOCK %s, CAP_IPC_LOCK %s); give execguardd "
		  "CAP_IPC_LOCK or a larger LimitMEMLOCK=, or check vm.max_map_count; such ranges stay "
		  "unlocked until a reload (said once)",
		  r->path, strerror(-err), lim, has_cap_ipc_lock() ? "yes" : "no");
}

static void unlock_runs(struct lock_backend *b, struct lock_range *r)
{
	size_t pos = 0, first, count;

	while (lockset_next_run(r, LOCK_RUN_UNLOCK, &pos, &first, &count)) {
		(void)residency_unlock((char *)r->map + first * b->page_size, (uint64_t)count * b->page_size);
		lockset_range_mark(r, first, count, false);
	}
}

/* Carry out the plan on the ranges it changed: unlock what is no longer
 * admitted (or vanished) first, so that the memlock limit has room, then
 * lock the resident pages of admitted ranges. */
static void apply(struct lock_backend *b)
{
	size_t n = lockset_n_ranges(b->ls);

	if (b->dry_run)
		return;
	for (size_t i = 0; i < n; i++) {
		struct lock_range *r = lockset_range(b->ls, i);

		if (r->dirty)
			unlock_runs(b, r);
	}
	for (size_t i = 0; i < n; i++) {
		struct lock_range *r = lockset_range(b->ls, i);
		size_t pos = 0, first, count;

		if (!r->dirty)
			continue;
		r->dirty = false;
		while (lockset_next_run(r, LOCK_RUN_LOCK, &pos, &first, &count)) {
			char *addr = (char *)r->map + first * b->page_size;
			uint64_t len = (uint64_t)count * b->page_size;
			int k = residency_lock(addr, len);

			if (k < 0) {
				(void)residency_unlock(addr, len);
				log_mlock_failure(b, r, k);
				r->refusal = LOCK_REFUSAL_ERROR;
				r->admitted = false;
				/* All or nothing for a range: give back its other runs. */
				unlock_runs(b, r);
				break;
			}
			lockset_range_mark(r, first, count, true);
		}
	}
}

/* Report each refused range once per reason. */
static void report_refusals(struct lock_backend *b)
{
	size_t n = lockset_n_ranges(b->ls);

	for (size_t i = 0; i < n; i++) {
		struct lock_range *r = lockset_range(b->ls, i);
		struct log_fields f = LOG_FIELDS_INIT;
		char res[32];

		if (r->state != LOCK_RANGE_OPEN || r->admitted || (r->refusals_reported & (1u << r->refusal)) ||
		    r->refusal == LOCK_REFUSAL_NONE || r->refusal == LOCK_REFUSAL_ERROR)
			continue;
		/* Once per range and reason, not at each flip of a range that
		 * hovers at the edge of the budget. */
		r->refusals_reported |= 1u << r->refusal;
		if (r->refusal == LOCK_REFUSAL_PRESSURE)
			continue; /* the pressure message says it for all */
		f.backend = "lock";
		f.exe = r->path;
		f.bytes = (long long)((uint64_t)r->n_resident * b->page_size);
		if (r->n_units == 1)
			f.unit = r->units[0].unit->name;
		format_bytes(res, sizeof(res), (uint64_t)r->n_resident * b->page_size);
		log_event(LOG_NOTICE, r->refusal == LOCK_REFUSAL_UNIT ? MID_LOCK_UNIT_REFUSED : MID_LOCK_REFUSED, &f,
			  "not locking %s (%s resident, mapped by %zu units, %zu processes): %s full",
			  r->path, res, r->n_units, r->n_pids,
			  r->refusal == LOCK_REFUSAL_UNIT ? "unit budget" : "global budget");
	}
}

static void log_summary(struct lock_backend *b, bool force)
{
	struct lockset_unit_stat *us = NULL;
	struct lockset_totals t;
	size_t n = 0;

	lockset_totals(b->ls, &t);
	/* Only when the figure moved by a megabyte or more. */
	if (!force && (t.locked > b->last_logged_locked ? t.locked - b->last_logged_locked
							 : b->last_logged_locked - t.locked) < (1u << 20))
		return;
	b->last_logged_locked = t.locked;
	if (lockset_unit_stats(b->ls, &us, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct log_fields f = LOG_FIELDS_INIT;
		char m[32], r[32], l[32];

		f.backend = "lock";
		f.unit = us[i].name;
		f.bytes = (long long)us[i].locked;
		format_bytes(m, sizeof(m), us[i].mapped);
		format_bytes(r, sizeof(r), us[i].resident);
		format_bytes(l, sizeof(l), us[i].locked);
		log_event(LOG_INFO, MID_LOCK_SUMMARY, &f,
			  "%s: text mapped %s, resident %s, locked %s (%zu processes, %zu ranges)", us[i].name,
			  m, r, l, us[i].n_pids, us[i].n_ranges);
	}
	free(us);
}

static void plan_and_apply(struct lock_backend *b)
{
	lockset_plan(b->ls, b->global_cap);
	apply(b);
	report_refusals(b);
}

static void log_give_back(struct lock_backend *b, const struct unit_watch *w, bool all, uint64_t freed,
			  uint64_t room, uint64_t reserve)
{
	unsigned stall, window, recover;
	struct log_fields f = LOG_FIELDS_INIT;
	char fr[32], rm[32], rs[32], c[32];
	uint64_t ceiling = lockset_pressure_ceiling(b->ls);

	pressure_params(&b->settings, &stall, &window, &recover);
	format_bytes(fr, sizeof(fr), freed);
	format_bytes(rm, sizeof(rm), room);
	format_bytes(rs, sizeof(rs), reserve);
	f.backend = "lock";
	if (w) {
		struct lock_unit *u = lockset_find_unit(b->ls, w->unit);

		ceiling = u ? u->ceiling : 0;
		f.unit = w->unit;
		f.cgroup = w->cgroup;
		f.bytes = u ? (long long)u->charged : -1;
	} else {
		struct lockset_totals t;

		lockset_totals(b->ls, &t);
		f.bytes = (long long)t.locked;
	}
	format_bytes(c, sizeof(c), ceiling);
	if (all)
		log_event(LOG_WARNING, MID_LOCK_PRESSURE, &f,
			  "memory nearly exhausted%s%s (%s left, reserve %s): gave back all %s of %slocked text "
			  "until %us with enough memory",
			  w ? " in " : "", w ? w->cgroup : "", rm, rs, fr, w ? "its own " : "", recover);
	else
		log_event(LOG_NOTICE, MID_LOCK_PRESSURE, &f,
			  "memory running out%s%s (%s left, reserve %s): gave back %s of %slocked text, coldest "
			  "and least shared first; locking at most %s until %us with enough memory",
			  w ? " in " : "", w ? w->cgroup : "", rm, rs, fr, w ? "its own " : "", c, recover);
	b->ceiling_logged = true;
}

/* Below the reserve for LOW_USEC (reclaim catching up makes short dips):
 * give back what brings the room to twice the reserve, everything when a
 * "full" stall was seen within the window; at once and everything when
 * less than half of the reserve is left. */
#define LOW_USEC 1000000ull
static bool below_reserve(uint64_t *low_since, uint64_t room, uint64_t reserve, uint64_t now)
{
	if (room >= reserve) {
		*low_since = 0;
		return false;
	}
	if (!*low_since)
		*low_since = now;
	return room < reserve / 2 || now - *low_since >= LOW_USEC;
}

static bool give_back_global(struct lock_backend *b, uint64_t now)
{
	struct lockset_totals before, after;
	bool all, changed;

	if (meminfo_available(b->proc_fd, &b->avail) < 0) {
		b->avail = UINT64_MAX;
		return false;
	}
	b->reserve = reserve_of(&b->settings, b->mem_total);
	all = b->avail < b->reserve / 2 || now < b->full_until;
	if (!below_reserve(&b->low_since, b->avail, b->reserve, now))
		return false;
	lockset_totals(b->ls, &before);
	changed = all ? lockset_pressure_release_all(b->ls, now)
		      : lockset_pressure_give_back(b->ls, now, 2 * b->reserve - b->avail);
	if (!changed)
		return false;
	plan_and_apply(b);
	lockset_totals(b->ls, &after);
	log_give_back(b, NULL, all, before.locked > after.locked ? before.locked - after.locked : 0, b->avail,
		      b->reserve);
	return true;
}

static void unit_room(struct lock_backend *b, struct unit_watch *w)
{
	struct memcg_room r2 = { UINT64_MAX, UINT64_MAX }, r1 = { UINT64_MAX, UINT64_MAX };

	if (b->cgroup_root_fd >= 0 && w->cgroup)
		(void)memcg2_room(b->cgroup_root_fd, w->cgroup, b->mem_total, &r2);
	if (w->memcg1)
		(void)memcg1_room(w->memcg1, b->mem_total, &r1);
	w->room = r1.headroom < r2.headroom ? r1 : r2;
	w->reserve = w->room.limit == UINT64_MAX ? 0 : reserve_of(&b->settings, w->room.limit);
}

static bool give_back_unit(struct lock_backend *b, struct unit_watch *w, uint64_t now)
{
	struct lock_unit *u;
	uint64_t before;
	bool all, changed;

	unit_room(b, w);
	if (w->room.limit == UINT64_MAX)
		return false;
	all = w->room.headroom < w->reserve / 2 || now < w->full_until;
	if (!below_reserve(&w->low_since, w->room.headroom, w->reserve, now))
		return false;
	u = lockset_find_unit(b->ls, w->unit);
	if (!u)
		return false;
	before = u->charged;
	changed = all ? lockset_unit_release_all(b->ls, w->unit, now)
		      : lockset_unit_give_back(b->ls, w->unit, now, 2 * w->reserve - w->room.headroom);
	if (!changed)
		return false;
	plan_and_apply(b);
	u = lockset_find_unit(b->ls, w->unit);
	log_give_back(b, w, all, u && before > u->charged ? before - u->charged : 0, w->room.headroom, w->reserve);
	return true;
}

static void arm_watch(struct lock_backend *b);

/* Look at the memory left, system-wide and in every watched unit. While
 * some of it is within four times its reserve, keep looking every
 * WATCH_USEC (an anonymous squeeze can be faster than PSI events). */
static void look_at_memory(struct lock_backend *b)
{
	uint64_t now = now_usec(b);
	bool low;

	(void)give_back_global(b, now);
	low = b->avail != UINT64_MAX && b->avail < 4 * b->reserve;
	for (size_t i = 0; i < b->n_watches; i++) {
		struct unit_watch *w = b->watches[i];

		(void)give_back_unit(b, w, now);
		if (w->room.limit != UINT64_MAX && w->room.headroom < 4 * w->reserve)
			low = true;
	}
	if (low) {
		if (b->watch_until < now + 2 * WATCH_USEC)
			b->watch_until = now + 2 * WATCH_USEC;
		arm_watch(b);
	}
}

static int on_watch(sd_event_source *s _unused_, uint64_t usec _unused_, void *userdata)
{
	struct lock_backend *b = userdata;

	if (now_usec(b) < b->watch_until)
		look_at_memory(b);
	if (now_usec(b) < b->watch_until)
		arm_watch(b);
	return 0;
}

static void arm_watch(struct lock_backend *b)
{
	int on = SD_EVENT_OFF;

	if (!b->event)
		return;
	if (!b->watch) {
		if (sd_event_add_time_relative(b->event, &b->watch, CLOCK_MONOTONIC, WATCH_USEC, 10000, on_watch,
					       b) >= 0)
			(void)sd_event_source_set_description(b->watch, "lock-memory-watch");
		return;
	}
	if (sd_event_source_get_enabled(b->watch, &on) >= 0 && on == SD_EVENT_OFF) {
		(void)sd_event_source_set_time_relative(b->watch, WATCH_USEC);
		(void)sd_event_source_set_enabled(b->watch, SD_EVENT_ONESHOT);
	}
}

/* A PSI event: memory is contended. Look now and every WATCH_USEC for
 * two windows after the last event; under an anonymous squeeze the room
 * can shrink faster than one event per window. */
static void pressure_seen(struct lock_backend *b, struct unit_watch *w, bool full)
{
	unsigned stall, window, recover;
	uint64_t now = now_usec(b);

	pressure_params(&b->settings, &stall, &window, &recover);
	if (full) {
		if (w)
			w->full_until = now + (uint64_t)window * 1000;
		else
			b->full_until = now + (uint64_t)window * 1000;
	}
	if (b->watch_until < now + 2ull * window * 1000)
		b->watch_until = now + 2ull * window * 1000;
	look_at_memory(b);
	arm_watch(b);
}

static void on_pressure(struct psi_trigger *t _unused_, void *userdata)
{
	pressure_seen(userdata, NULL, false);
}

static void on_full_pressure(struct psi_trigger *t _unused_, void *userdata)
{
	pressure_seen(userdata, NULL, true);
}

static void on_unit_pressure(struct psi_trigger *t _unused_, void *userdata)
{
	struct unit_watch *w = userdata;

	pressure_seen(w->b, w, false);
}

static void on_unit_full_pressure(struct psi_trigger *t _unused_, void *userdata)
{
	struct unit_watch *w = userdata;

	pressure_seen(w->b, w, true);
}

static struct unit_watch *unit_watch_free(struct unit_watch *w)
{
	if (!w)
		return NULL;
	psi_trigger_free(w->psi);
	psi_trigger_free(w->psi_full);
	free(w->unit);
	free(w->cgroup);
	free(w->memcg1);
	free(w);
	return NULL;
}

/* Watch the memory.pressure of the cgroup of a unit, once per unit, and
 * look at its room under its memory limits (cgroup2, and the v1 memory
 * controller's group of the process at proc_pid_fd, or memcg1 given). The
 * root cgroup is the global trigger's business. */
static void unit_watch_add(struct lock_backend *b, const char *unit, const char *cgroup, int proc_pid_fd,
			   const char *memcg1)
{
	unsigned stall, window, recover;
	struct unit_watch *w, **nw;
	_cleanup_free_ char *path = NULL;
	const char *rel = cgroup;
	int r;

	if (!b->event || b->cgroup_root_fd < 0 || !cgroup)
		return;
	while (*rel == '/')
		rel++;
	if (!*rel)
		return;
	for (size_t i = 0; i < b->n_watches; i++)
		if (streq(b->watches[i]->unit, unit))
			return;
	if (asprintf(&path, "%s/memory.pressure", rel) < 0)
		return;
	w = calloc(1, sizeof(*w));
	nw = realloc(b->watches, (b->n_watches + 1) * sizeof(*nw));
	if (!w || !nw) {
		free(w);
		if (nw)
			b->watches = nw;
		return;
	}
	b->watches = nw;
	w->b = b;
	w->unit = strdup(unit);
	w->cgroup = strdup(cgroup);
	if (!w->unit || !w->cgroup) {
		unit_watch_free(w);
		return;
	}
	if (memcg1)
		w->memcg1 = strdup(memcg1);
	else if (proc_pid_fd >= 0)
		(void)memcg1_dir_of(proc_pid_fd, &w->memcg1);
	pressure_params(&b->settings, &stall, &window, &recover);
	r = psi_trigger_new(b->event, b->cgroup_root_fd, path, PSI_SOME, stall, window, on_unit_pressure, w, &w->psi);
	if (r >= 0)
		(void)psi_trigger_new(b->event, b->cgroup_root_fd, path, PSI_FULL, stall, window,
				      on_unit_full_pressure, w, &w->psi_full);
	if (r < 0 && !b->watch_failed_logged) {
		struct log_fields f = LOG_FIELDS_INIT;

		b->watch_failed_logged = true;
		f.backend = "lock";
		f.unit = unit;
		f.cgroup = cgroup;
		log_event(LOG_INFO, MID_LOCK_PRESSURE_WATCH, &f,
			  "cannot watch memory pressure of %s (%s): only the global trigger applies (said once)",
			  cgroup, strerror(-r));
	}
	b->watches[b->n_watches++] = w;
}

/* Drop the watches of units that have no protected process any more. */
static void unit_watches_prune(struct lock_backend *b)
{
	size_t k = 0;

	for (size_t i = 0; i < b->n_watches; i++) {
		if (lockset_find_unit(b->ls, b->watches[i]->unit))
			b->watches[k++] = b->watches[i];
		else
			unit_watch_free(b->watches[i]);
	}
	b->n_watches = k;
}

/* After a reload the thresholds may differ: set every trigger anew. */
static void unit_watches_reset(struct lock_backend *b)
{
	size_t n = b->n_watches;
	struct unit_watch **old = b->watches;

	b->watches = NULL;
	b->n_watches = 0;
	for (size_t i = 0; i < n; i++) {
		unit_watch_add(b, old[i]->unit, old[i]->cgroup, -1, old[i]->memcg1);
		unit_watch_free(old[i]);
	}
	free(old);
}

static int do_recheck(struct lock_backend *b)
{
	size_t n = lockset_n_ranges(b->ls);
	unsigned stall, window, recover;
	int r = 0;

	pressure_params(&b->settings, &stall, &window, &recover);
	/* A ceiling stays while memory is short (under twice the reserve):
	 * retaking would only be given back again. */
	if (lockset_pressure_ceiling(b->ls) != UINT64_MAX && meminfo_available(b->proc_fd, &b->avail) >= 0 &&
	    b->avail < 2 * reserve_of(&b->settings, b->mem_total))
		lockset_pressure_hold(b->ls, NULL, now_usec(b));
	for (size_t i = 0; i < b->n_watches; i++) {
		struct unit_watch *w = b->watches[i];
		struct lock_unit *u = lockset_find_unit(b->ls, w->unit);

		if (!u || u->ceiling == UINT64_MAX)
			continue;
		unit_room(b, w);
		if (w->room.limit != UINT64_MAX && w->room.headroom < 2 * w->reserve)
			lockset_pressure_hold(b->ls, w->unit, now_usec(b));
	}
	if (lockset_pressure_tick(b->ls, now_usec(b), (uint64_t)recover * 1000000) && b->ceiling_logged) {
		struct log_fields f = LOG_FIELDS_INIT;

		f.backend = "lock";
		log_event(LOG_NOTICE, MID_LOCK_RELOCKED, &f,
			  "enough memory for %us: locking text again within the budget", recover);
		b->ceiling_logged = false;
	}
	for (size_t i = 0; i < n; i++) {
		int k = scan_range(b, lockset_range(b->ls, i));

		if (k < 0 && r == 0)
			r = k;
	}
	plan_and_apply(b);
	/* Also without PSI events: memory can run short quietly. */
	look_at_memory(b);
	log_summary(b, false);
	return r;
}

static void arm_recheck(struct lock_backend *b)
{
	if (!b->recheck)
		return;
	(void)sd_event_source_set_time_relative(b->recheck, (uint64_t)recheck_sec(&b->settings) * 1000000);
	(void)sd_event_source_set_enabled(b->recheck, SD_EVENT_ONESHOT);
}

/* Armed only while there is something to look at (or a ceiling to lift):
 * an idle daemon does not wake up for nothing. */
static int on_recheck(sd_event_source *s _unused_, uint64_t usec _unused_, void *userdata)
{
	struct lock_backend *b = userdata;

	(void)do_recheck(b);
	if (lockset_n_ranges(b->ls) > 0 || lockset_pressure_ceiling(b->ls) != UINT64_MAX)
		arm_recheck(b);
	return 0;
}

static int setup_sources(struct lock_backend *b)
{
	unsigned stall, window, recover;
	int r;

	if (!b->event)
		return 0;
	if (!b->recheck) {
		r = sd_event_add_time_relative(b->event, &b->recheck, CLOCK_MONOTONIC,
					       (uint64_t)recheck_sec(&b->settings) * 1000000, 100000,
					       on_recheck, b);
		if (r < 0)
			return r;
		(void)sd_event_source_set_description(b->recheck, "lock-recheck");
	} else {
		arm_recheck(b);
	}

	b->psi = psi_trigger_free(b->psi);
	b->psi_full = psi_trigger_free(b->psi_full);
	pressure_params(&b->settings, &stall, &window, &recover);
	r = psi_trigger_new(b->event, b->proc_fd, "pressure/memory", PSI_SOME, stall, window, on_pressure, b,
			    &b->psi);
	if (r >= 0)
		(void)psi_trigger_new(b->event, b->proc_fd, "pressure/memory", PSI_FULL, stall, window,
				      on_full_pressure, b, &b->psi_full);
	if (r < 0) {
		struct log_fields f = LOG_FIELDS_INIT;

		f.backend = "lock";
		log_event(LOG_WARNING, MID_LOCK_PRESSURE_WATCH, &f,
			  "cannot watch memory pressure (/proc/pressure/memory: %s): locks are kept "
			  "within the budgets but not given back under pressure",
			  strerror(-r));
	} else if (psi_trigger_window_ms(b->psi) != window) {
		struct log_fields f = LOG_FIELDS_INIT;

		f.backend = "lock";
		log_event(LOG_NOTICE, MID_LOCK_PRESSURE_WATCH, &f,
			  "no CAP_SYS_RESOURCE: memory pressure trigger uses %ums of stall per %ums "
			  "instead of %u/%u (unprivileged windows are multiples of 2 s)",
			  psi_trigger_stall_ms(b->psi), psi_trigger_window_ms(b->psi), stall, window);
	}
	return 0;
}


static void proc_entry_free(struct proc_entry *p)
{
	if (!p)
		return;
	closep(&p->pagemap_fd);
	free(p->maps);
	free(p);
}

static struct proc_entry *proc_entry_find(struct lock_backend *b, pid_t pid, size_t *ret_i)
{
	for (size_t i = 0; i < b->n_procs; i++)
		if (b->procs[i]->pid == pid) {
			if (ret_i)
				*ret_i = i;
			return b->procs[i];
		}
	return NULL;
}

/* Remember where pid maps its ranges, and open its pagemap once. */
static void proc_entry_set(struct lock_backend *b, const struct protect_target *t, const struct lock_mapping *lm,
			   const struct exec_mapping *const *src, size_t n)
{
	struct proc_entry *p = proc_entry_find(b, t->pid, NULL);
	struct proc_map *maps = calloc(n ? n : 1, sizeof(*maps));

	if (!maps)
		return;
	if (!p) {
		struct proc_entry **np = realloc(b->procs, (b->n_procs + 1) * sizeof(*np));

		if (!np) {
			free(maps);
			return;
		}
		b->procs = np;
		p = calloc(1, sizeof(*p));
		if (!p) {
			free(maps);
			return;
		}
		p->pid = t->pid;
		p->pagemap_fd = t->proc_pid_fd >= 0 ? openat(t->proc_pid_fd, "pagemap", O_RDONLY | O_CLOEXEC) : -1;
		if (p->pagemap_fd < 0)
			p->pagemap_fd = -1;
		b->procs[b->n_procs++] = p;
	}
	for (size_t i = 0; i < n; i++)
		maps[i] = (struct proc_map){ lm[i].key, src[i]->start };
	free(p->maps);
	p->maps = maps;
	p->n_maps = n;
	b->users_dirty = true;
}

static void proc_entry_remove(struct lock_backend *b, pid_t pid)
{
	size_t i;
	struct proc_entry *p = proc_entry_find(b, pid, &i);

	if (!p)
		return;
	proc_entry_free(p);
	b->procs[i] = b->procs[--b->n_procs];
	b->users_dirty = true;
}

static int lock_probe(const struct backend_env *env _unused_, char **ret_reason)
{
	struct rlimit rl;

	*ret_reason = NULL;
	if (has_cap_ipc_lock())
		return 0;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return -errno;
	if (rl.rlim_cur == 0) {
		*ret_reason = strdup("no CAP_IPC_LOCK and RLIMIT_MEMLOCK is 0: cannot lock any page");
		return -EPERM;
	}
	return 0;
}

static void lock_destroy(void *state)
{
	struct lock_backend *b = state;

	if (!b)
		return;
	b->recheck = sd_event_source_disable_unref(b->recheck);
	b->watch = sd_event_source_disable_unref(b->watch);
	for (size_t i = 0; i < b->n_procs; i++)
		proc_entry_free(b->procs[i]);
	free(b->procs);
	free(b->users);
	free(b->pm);
	free(b->mapped);
	b->psi = psi_trigger_free(b->psi);
	b->psi_full = psi_trigger_free(b->psi_full);
	for (size_t i = 0; i < b->n_watches; i++)
		unit_watch_free(b->watches[i]);
	free(b->watches);
	b->ls = lockset_free(b->ls); /* unmaps, which unlocks */
	free(b->vec);
	closep(&b->cgroup_root_fd);
	closep(&b->proc_fd);
	sd_event_unref(b->event);
	free(b);
}

/* Without CAP_IPC_LOCK the kernel refuses mlock() beyond RLIMIT_MEMLOCK:
 * plan within it rather than fail on it. */
static void apply_settings(struct lock_backend *b, const struct daemon_settings *s)
{
	struct rlimit rl;

	if (s)
		b->settings = *s;
	b->global_cap = resolve_cap(&b->settings.lock_budget, b->mem_total);
	if (!has_cap_ipc_lock() && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		uint64_t lim = (uint64_t)rl.rlim_cur - (uint64_t)rl.rlim_cur % b->page_size;

		if (b->global_cap == 0 || lim < b->global_cap) {
			struct log_fields f = LOG_FIELDS_INIT;
			char v[32];

			b->global_cap = lim;
			format_bytes(v, sizeof(v), lim);
			f.backend = "lock";
			f.bytes = (long long)lim;
			log_event(LOG_NOTICE, MID_LOCK_MLOCK_FAILED, &f,
				  "no CAP_IPC_LOCK: locking at most RLIMIT_MEMLOCK (%s); raise LimitMEMLOCK= or "
				  "grant CAP_IPC_LOCK for the configured budget",
				  v);
		}
	}
}

static void lock_destroyp(struct lock_backend **b)
{
	lock_destroy(*b);
}

static int lock_create(const struct backend_env *env, void **ret_state)
{
	_cleanup_(lock_destroyp) struct lock_backend *b = NULL;
	long ps = sysconf(_SC_PAGESIZE);
	int r;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->cgroup_root_fd = b->proc_fd = -1;
	b->page_size = ps > 0 ? (size_t)ps : 4096;
	b->dry_run = env->dry_run;
	b->event = env->event ? sd_event_ref(env->event) : NULL;
	/* Our own copy, whatever the manager does with its fd. */
	b->cgroup_root_fd = env->cgroup_root_fd >= 0 ? fcntl(env->cgroup_root_fd, F_DUPFD_CLOEXEC, 3) : -1;
	b->proc_fd = env->proc_fd >= 0 ? fcntl(env->proc_fd, F_DUPFD_CLOEXEC, 3) :
					 open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->proc_fd < 0)
		return -errno;
	r = residency_mem_total(b->proc_fd, &b->mem_total);
	if (r < 0)
		return r;
	apply_settings(b, env->settings);
	r = lockset_new(b->page_size, &lock_ops, b, &b->ls);
	if (r < 0)
		return r;
	r = setup_sources(b);
	if (r < 0)
		return r;
	{
		struct log_fields f = LOG_FIELDS_INIT;
		char cap[32] = "no cap";

		if (b->global_cap)
			format_bytes(cap, sizeof(cap), b->global_cap);
		f.backend = "lock";
		f.bytes = (long long)b->global_cap;
		log_event(LOG_INFO, NULL, &f,
			  "lock backend: budget %s, re-check every %us, memory pressure trigger %s%s",
			  cap, recheck_sec(&b->settings), b->psi ? psi_trigger_path(b->psi) : "none",
			  b->dry_run ? " (dry run: nothing is locked)" : "");
	}
	*ret_state = TAKE_PTR(b);
	return 0;
}

static void report_skipped_kind(struct lock_backend *b, const struct protect_target *t,
				const struct exec_mapping *m)
{
	struct log_fields f = LOG_FIELDS_INIT;

	if (b->skipped_kinds & (1u << m->kind))
		return;
	b->skipped_kinds |= 1u << m->kind;
	f.backend = "lock";
	f.unit = t->unit;
	f.pid = t->pid;
	f.exe = m->path; /* the mapping, as in the other lock events: not the process's executable */
	log_event(LOG_INFO, MID_LOCK_SKIPPED, &f, "not locking %s exec mapping %s of pid %d: %s (said once)",
		  mapping_kind_to_string(m->kind), strna(m->path), (int)t->pid,
		  residency_unlockable_kind(m->kind));
}

static void open_range(struct lock_backend *b, const struct protect_target *t, const struct exec_mapping *m,
		       struct lock_range *r)
{
	bool quiet = lockset_reported_before(b->ls, r->key.dev, r->key.ino);
	_cleanup_close_ int fd = -1;
	struct log_fields f = LOG_FIELDS_INIT;
	const char *why = NULL;
	int k;

	f.backend = "lock";
	f.unit = t->unit;
	f.pid = t->pid;
	f.exe = r->path;

	fd = residency_open(t->proc_pid_fd, m, &why);
	if (fd == -EMEDIUMTYPE) {
		(void)lockset_range_set_unlockable(b->ls, r, why);
		if (!quiet)
			log_event(LOG_INFO, MID_LOCK_SKIPPED, &f, "not locking %s: %s", r->path, why);
		return;
	}
	if (fd < 0) {
		(void)lockset_range_set_failed(b->ls, r, why ? why : strerror(-fd));
		if (!quiet)
			log_event(LOG_WARNING, MID_LOCK_SKIPPED, &f,
				  "cannot open %s mapped by pid %d: %s (%s); not retried until reload",
				  r->path, (int)t->pid, why ? why : "error", strerror(-fd));
		return;
	}
	k = residency_map(fd, r->key.offset, r->key.length, &r->map);
	if (k < 0) {
		(void)lockset_range_set_failed(b->ls, r, "mmap() failed");
		if (!quiet)
			log_event(LOG_WARNING, MID_LOCK_SKIPPED, &f, "cannot map %s: %s", r->path, strerror(-k));
		return;
	}
	if (lockset_range_opened(b->ls, r) < 0) {
		range_unmap(r, NULL);
		(void)lockset_range_set_failed(b->ls, r, "out of memory");
		return;
	}
	(void)scan_range(b, r);
}

static int lock_protect(void *state, const struct protect_target *t)
{
	struct lock_backend *b = state;
	const struct exec_mappings *maps = t->maps;
	_cleanup_free_ struct lock_mapping *lm = NULL;
	_cleanup_free_ const struct exec_mapping **src = NULL;
	const char *group = t->unit ? t->unit : t->cgroup ? t->cgroup : "-";
	uint64_t unit_cap = 0;
	size_t n = 0, total = maps ? maps->n : 0;
	int r;

	if (t->settings)
		unit_cap = resolve_cap(&t->settings->lock_budget, b->mem_total);

	lm = calloc(total ? total : 1, sizeof(*lm));
	src = calloc(total ? total : 1, sizeof(*src));
	if (!lm || !src)
		return -ENOMEM;
	for (size_t i = 0; i < total; i++) {
		const struct exec_mapping *m = &maps->items[i];

		if (residency_unlockable_kind(m->kind) || m->inode == 0 || m->end <= m->start) {
			report_skipped_kind(b, t, m);
			continue;
		}
		lock_key_from_mapping(makedev(m->dev_major, m->dev_minor), m->inode, m->offset,
				      m->end - m->start, b->page_size, &lm[n].key);
		lm[n].path = m->path;
		src[n] = m;
		n++;
	}

	r = lockset_process_set(b->ls, t->pid, group, unit_cap, lm, n);
	if (r < 0)
		return r;
	proc_entry_set(b, t, lm, src, n);
	if (t->unit || t->cgroup)
		unit_watch_add(b, group, t->cgroup, t->proc_pid_fd, NULL);
	if (b->recheck) {
		int on = SD_EVENT_OFF;

		if (sd_event_source_get_enabled(b->recheck, &on) >= 0 && on == SD_EVENT_OFF)
			arm_recheck(b);
	}
	for (size_t i = 0; i < n; i++) {
		struct lock_range *lr = lockset_find_range(b->ls, &lm[i].key);

		if (lr && lr->state == LOCK_RANGE_NEW)
			open_range(b, t, src[i], lr);
		else if (lr)
			/* What this process has mapped counts now, not at the
			 * next re-check. */
			(void)scan_range(b, lr);
	}
	plan_and_apply(b);
	return 0;
}

static void lock_release(void *state, pid_t pid)
{
	struct lock_backend *b = state;

	/* Ranges nobody maps any more are unmapped (and so unlocked);
	 * the freed budget goes to what was refused. */
	proc_entry_remove(b, pid);
	if (lockset_process_remove(b->ls, pid) > 0) {
		unit_watches_prune(b);
		plan_and_apply(b);
	}
}

static int lock_reconfigure(void *state, const struct daemon_settings *s)
{
	struct lock_backend *b = state;
	size_t n;

	(void)residency_mem_total(b->proc_fd, &b->mem_total);
	apply_settings(b, s);
	/* A reload is the moment to try again what failed. */
	lockset_forget_failures(b->ls);
	b->mlock_failed_logged = false;
	b->skipped_kinds = 0;
	n = lockset_n_ranges(b->ls);
	for (size_t i = 0; i < n; i++) {
		struct lock_range *r = lockset_range(b->ls, i);

		if (r->refusal == LOCK_REFUSAL_ERROR)
			r->refusal = LOCK_REFUSAL_NONE;
		r->refusals_reported = 0;
	}
	(void)setup_sources(b);
	b->watch_failed_logged = false;
	unit_watches_reset(b);
	plan_and_apply(b);
	log_summary(b, true);
	return 0;
}

static void lock_describe(void *state, char *buf, size_t size)
{
	struct lock_backend *b = state;
	struct lockset_totals t;
	char l[32], r[32], m[32], c[64] = "";

	lockset_totals(b->ls, &t);
	format_bytes(l, sizeof(l), b->dry_run ? t.admitted_resident : t.locked);
	format_bytes(r, sizeof(r), t.resident);
	format_bytes(m, sizeof(m), t.mapped);
	if (lockset_pressure_ceiling(b->ls) != UINT64_MAX) {
		char v[24];

		format_bytes(v, sizeof(v), lockset_pressure_ceiling(b->ls));
		snprintf(c, sizeof(c), ", pressure: at most %s", v);
	}
	snprintf(buf, size, "%s%s locked of %s resident text (%s mapped) in %zu ranges of %zu units%s%s",
		 b->dry_run ? "would have " : "", l, r, m, t.n_admitted, t.n_units,
		 t.n_refused ? ", some over budget" : "", c);
}

const struct lockset *backend_lock_lockset(void *state)
{
	struct lock_backend *b = state;

	return b->ls;
}

int backend_lock_recheck(void *state)
{
	return do_recheck(state);
}

int backend_lock_dump(void *state, FILE *f)
{
	struct lock_backend *b = state;
	struct lockset_file_stat *fs = NULL;
	struct lockset_unit_stat *us = NULL;
	struct lockset_totals t;
	size_t nf = 0, nu = 0;
	uint64_t ceiling = lockset_pressure_ceiling(b->ls);
	int r;

	lockset_totals(b->ls, &t);
	fprintf(f,
		"total ranges=%zu open=%zu admitted=%zu refused=%zu unlockable=%zu failed=%zu processes=%zu "
		"units=%zu mapped=%" PRIu64 " resident=%" PRIu64 " locked=%" PRIu64 " cap=%" PRIu64,
		t.n_ranges, t.n_open, t.n_admitted, t.n_refused, t.n_unlockable, t.n_failed, t.n_processes,
		t.n_units, t.mapped, t.resident, t.locked, b->global_cap);
	if (ceiling == UINT64_MAX)
		fprintf(f, " ceiling=none");
	else
		fprintf(f, " ceiling=%" PRIu64, ceiling);
	fprintf(f, " pressure_events=%u psi_events=%u", lockset_pressure_events(b->ls),
		(b->psi ? psi_trigger_events(b->psi) : 0) + (b->psi_full ? psi_trigger_events(b->psi_full) : 0));
	{
		uint64_t avail = 0;

		if (meminfo_available(b->proc_fd, &avail) >= 0)
			fprintf(f, " available=%" PRIu64, avail);
		fprintf(f, " reserve=%" PRIu64, reserve_of(&b->settings, b->mem_total));
	}
	if (b->psi)
		fprintf(f, " psi=%s:some:%ums/%ums", psi_trigger_path(b->psi), psi_trigger_stall_ms(b->psi),
			psi_trigger_window_ms(b->psi));
	else
		fprintf(f, " psi=none");
	if (b->psi_full)
		fprintf(f, " psi_full=%s:full:%ums/%ums\n", psi_trigger_path(b->psi_full),
			psi_trigger_stall_ms(b->psi_full), psi_trigger_window_ms(b->psi_full));
	else
		fprintf(f, " psi_full=none\n");

	r = lockset_file_stats(b->ls, &fs, &nf);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nf; i++)
		fprintf(f,
			"file dev=%u:%u ino=%" PRIu64 " ranges=%zu units=%zu pids=%zu mapped=%" PRIu64
			" resident=%" PRIu64 " locked=%" PRIu64 " state=%s refusal=%s path=%s%s%s\n",
			major(fs[i].dev), minor(fs[i].dev), fs[i].ino, fs[i].n_ranges, fs[i].n_units,
			fs[i].n_pids, fs[i].mapped, fs[i].resident, fs[i].locked,
			lock_range_state_to_string(fs[i].state), lock_refusal_to_string(fs[i].refusal),
			fs[i].path, fs[i].reason ? " reason=" : "", strempty(fs[i].reason));
	free(fs);

	r = lockset_unit_stats(b->ls, &us, &nu);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nu; i++) {
		const char *psi = "none";
		char ceiling[24] = "none", room[64] = "none";
		unsigned psi_events = 0;

		for (size_t k = 0; k < b->n_watches; k++) {
			struct unit_watch *w = b->watches[k];

			if (!streq(w->unit, us[i].name))
				continue;
			if (w->psi) {
				psi = psi_trigger_path(w->psi);
				psi_events = psi_trigger_events(w->psi) + (w->psi_full ? psi_trigger_events(w->psi_full) : 0);
			}
			unit_room(b, w);
			if (w->room.limit != UINT64_MAX)
				snprintf(room, sizeof(room), "%" PRIu64 " limit=%" PRIu64 " reserve=%" PRIu64,
					 w->room.headroom, w->room.limit, w->reserve);
		}
		if (us[i].ceiling != UINT64_MAX)
			snprintf(ceiling, sizeof(ceiling), "%" PRIu64, us[i].ceiling);
		fprintf(f,
			"unit pids=%zu ranges=%zu mapped=%" PRIu64 " resident=%" PRIu64 " locked=%" PRIu64
			" charged=%" PRIu64 " cap=%" PRIu64 " ceiling=%s pressure_events=%u psi_events=%u room=%s"
			" psi=%s name=%s\n",
			us[i].n_pids, us[i].n_ranges, us[i].mapped, us[i].resident, us[i].locked, us[i].charged,
			us[i].cap, ceiling, us[i].n_pressure_events, psi_events, room, psi, us[i].name);
	}
	free(us);
	return 0;
}

/* The summary is otherwise logged only when it moved by a megabyte. */
static void lock_log_stats(void *state)
{
	log_summary(state, true);
}

static int lock_report_units(void *state, struct backend_unit_report *units, size_t n)
{
	struct lock_backend *b = state;
	_cleanup_free_ struct lockset_unit_stat *st = NULL;
	struct hashmap by_name;
	size_t n_st = 0;
	int r;

	r = lockset_unit_stats(b->ls, &st, &n_st);
	if (r < 0)
		return r;
	hashmap_init(&by_name, hash_string, equal_string);
	for (size_t i = 0; i < n_st; i++)
		if (hashmap_put(&by_name, st[i].name, &st[i]) == -ENOMEM) {
			hashmap_done(&by_name);
			return -ENOMEM;
		}
	for (size_t i = 0; i < n; i++) {
		struct backend_unit_report *u = &units[i];
		const struct lockset_unit_stat *s = hashmap_get(&by_name, u->key);

		u->mapped = s ? s->mapped : 0;
		u->resident = s ? s->resident : 0;
		u->locked = s ? s->locked : 0;
		u->protected_now = u->locked > 0;
		u->blocked = false;
		snprintf(u->state, sizeof(u->state), "%s", u->locked ? "text locked" : "nothing locked yet");
	}
	hashmap_done(&by_name);
	return 0;
}

static int lock_report_files(void *state, struct backend_file_report **ret, size_t *ret_n)
{
	struct lock_backend *b = state;
	_cleanup_free_ struct lockset_file_stat *fs = NULL;
	struct backend_file_report *out;
	size_t n_fs = 0;
	int r;

	r = lockset_file_stats(b->ls, &fs, &n_fs);
	if (r < 0)
		return r;
	out = calloc(n_fs ?: 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n_fs; i++) {
		out[i] = (struct backend_file_report){
			.path = strdup(fs[i].path ?: "?"),
			.n_units = (uint32_t)fs[i].n_units,
			.n_pids = (uint32_t)fs[i].n_pids,
			.mapped = fs[i].mapped,
			.resident = fs[i].resident,
			.locked = fs[i].locked,
			.state = fs[i].refusal != LOCK_REFUSAL_NONE ? lock_refusal_to_string(fs[i].refusal) :
								      lock_range_state_to_string(fs[i].state),
		};
		if (!out[i].path) {
			backend_file_reports_free(out, i);
			return -ENOMEM;
		}
	}
	*ret = out;
	*ret_n = n_fs;
	return 0;
}

const struct backend_ops backend_lock_ops = {
	.report_units = lock_report_units,
	.report_files = lock_report_files,
	/* Files others own (DAC_READ_SEARCH), mlock() past the rlimit
	 * (IPC_LOCK), PSI windows under 2 s (SYS_RESOURCE), map_files
	 * (CHECKPOINT_RESTORE). */
	.capabilities = CAP_BIT(2) | CAP_BIT(14) | CAP_BIT(24) | CAP_BIT(40),
	.name = "lock",
	.probe = lock_probe,
	.create = lock_create,
	.destroy = lock_destroy,
	.protect = lock_protect,
	.release = lock_release,
	.reconfigure = lock_reconfigure,
	.describe = lock_describe,
	.log_stats = lock_log_stats,
};
