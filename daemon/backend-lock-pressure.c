/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Giving locks back under memory pressure: the PSI triggers (system-wide
 * and on each unit's cgroup), the memory watch they start, and the
 * give-backs with their journal events.
 *
 * A PSI trigger event only starts a watch. Locks are given back when
 * memory is actually running out, that is when MemAvailable (or a unit
 * cgroup's room under its limit plus its reclaimable file memory,
 * meminfo.h) is below PressureReserve=: page-cache churn keeps those
 * high, and then the locks are what keeps text from being thrashed. */
#include <stdio.h>

#include "backend-lock-state.h"
#include "log.h"

void pressure_params(const struct daemon_settings *s, unsigned *stall, unsigned *window,
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
uint64_t reserve_of(const struct daemon_settings *s, uint64_t base)
{
	uint64_t v = s->pressure_reserve.set ? budget_resolve(&s->pressure_reserve, base)
					     : base / 100 * DEFAULT_RESERVE_PERCENT;
	uint64_t floor = base / 8 < RESERVE_FLOOR ? base / 8 : RESERVE_FLOOR;

	if (s->pressure_reserve.set && !s->pressure_reserve.percent && !s->pressure_reserve.bytes)
		return 0; /* PressureReserve=0: never give back */
	return v > floor ? v : floor;
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

void unit_room(struct lock_backend *b, struct unit_watch *w)
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
void look_at_memory(struct lock_backend *b)
{
	uint64_t now = lock_now_usec(b);
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

	if (lock_now_usec(b) < b->watch_until)
		look_at_memory(b);
	if (lock_now_usec(b) < b->watch_until)
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
		(void)event_timer_set(b->watch, lock_now_usec(b) + WATCH_USEC);
	}
}

/* A PSI event: memory is contended. Look now and every WATCH_USEC for
 * two windows after the last event; under an anonymous squeeze the room
 * can shrink faster than one event per window. */
static void pressure_seen(struct lock_backend *b, struct unit_watch *w, bool full)
{
	unsigned stall, window, recover;
	uint64_t now = lock_now_usec(b);

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

struct unit_watch *unit_watch_free(struct unit_watch *w)
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
void unit_watch_add(struct lock_backend *b, const char *unit, const char *cgroup, int proc_pid_fd,
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
		log_event_errno(LOG_INFO, r, MID_LOCK_PRESSURE_WATCH, &f,
				"cannot watch memory pressure of %s (%m): only the global trigger applies (said once)",
				cgroup);
	}
	b->watches[b->n_watches++] = w;
}

/* Drop the watches of units that have no protected process any more. */
void unit_watches_prune(struct lock_backend *b)
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
void unit_watches_reset(struct lock_backend *b)
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

void setup_pressure_triggers(struct lock_backend *b)
{
	unsigned stall, window, recover;
	int r;

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
		log_event_errno(LOG_WARNING, r, MID_LOCK_PRESSURE_WATCH, &f,
				"cannot watch memory pressure (/proc/pressure/memory: %m): locks are kept "
				"within the budgets but not given back under pressure");
	} else if (psi_trigger_window_ms(b->psi) != window) {
		struct log_fields f = LOG_FIELDS_INIT;

		f.backend = "lock";
		log_event(LOG_NOTICE, MID_LOCK_PRESSURE_WATCH, &f,
			  "no CAP_SYS_RESOURCE: memory pressure trigger uses %ums of stall per %ums "
			  "instead of %u/%u (unprivileged windows are multiples of 2 s)",
			  psi_trigger_stall_ms(b->psi), psi_trigger_window_ms(b->psi), stall, window);
	}
}
