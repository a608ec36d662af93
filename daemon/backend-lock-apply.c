/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lock backend's plan carried out: lockset.c plans within the
 * budgets, this file mlock()s and munlock()s the pages to match and
 * reports what was refused (see backend-lock-state.h). */
#include <fcntl.h>
#include <sys/resource.h>

#include "backend-lock-state.h"
#include "log.h"
#include "procfs.h"
#include "residency.h"

bool has_cap_ipc_lock(void)
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
	log_event_errno(LOG_WARNING, err, MID_LOCK_MLOCK_FAILED, &f,
			"mlock() of %s failed: %m (RLIMIT_MEMLOCK %s, CAP_IPC_LOCK %s); give execguardd "
			"CAP_IPC_LOCK or a larger LimitMEMLOCK=, or check vm.max_map_count; such ranges stay "
			"unlocked until a reload (said once)",
			r->path, lim, has_cap_ipc_lock() ? "yes" : "no");
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

void plan_and_apply(struct lock_backend *b)
{
	lockset_plan(b->ls, b->global_cap);
	apply(b);
	report_refusals(b);
}
