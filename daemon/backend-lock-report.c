/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the lock backend reports: refused ranges and the per-unit summary
 * in the journal, the status line, the dump the tests read, and the
 * figures of units and files for execguardctl and D-Bus. */
#include <inttypes.h>
#include <stdio.h>
#include <sys/sysmacros.h>

#include "backend-lock-state.h"
#include "backend-lock.h"
#include "hashmap.h"
#include "log.h"

void log_summary(struct lock_backend *b, bool force)
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

void lock_describe(void *state, char *buf, size_t size)
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

/* One "unit ..." line of backend_lock_dump(). */
static void dump_unit(struct lock_backend *b, const struct lockset_unit_stat *u, FILE *f)
{
	const char *psi = "none";
	char ceiling[24] = "none", room[64] = "none";
	unsigned psi_events = 0;

	for (size_t k = 0; k < b->n_watches; k++) {
		struct unit_watch *w = b->watches[k];

		if (!streq(w->unit, u->name))
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
	if (u->ceiling != UINT64_MAX)
		snprintf(ceiling, sizeof(ceiling), "%" PRIu64, u->ceiling);
	fprintf(f,
		"unit pids=%zu ranges=%zu mapped=%" PRIu64 " resident=%" PRIu64 " locked=%" PRIu64
		" kept=%zu kept_locked=%" PRIu64 " charged=%" PRIu64 " cap=%" PRIu64
		" ceiling=%s pressure_events=%u psi_events=%u room=%s psi=%s name=%s\n",
		u->n_pids, u->n_ranges, u->mapped, u->resident, u->locked, u->n_kept, u->kept_locked,
		u->charged, u->cap, ceiling, u->n_pressure_events, psi_events, room, psi, u->name);
}

/* One line per range: which mapping of the file it is (offset, prot),
 * who maps or keeps it, what of it is resident and locked. */
static void dump_ranges(struct lock_backend *b, FILE *f)
{
	size_t n = lockset_n_ranges(b->ls);

	for (size_t i = 0; i < n; i++) {
		const struct lock_range *r = lockset_range(b->ls, i);
		char prot[5];

		fprintf(f,
			"range dev=%u:%u ino=%" PRIu64 " offset=%" PRIu64 " length=%" PRIu64 " prot=%s units=%zu pids=%zu"
			" kept=%d resident=%" PRIu64 " locked=%" PRIu64 " state=%s refusal=%s path=%s\n",
			major(r->key.dev), minor(r->key.dev), r->key.ino, r->key.offset, r->key.length,
			map_prot_string(r->prot, prot), r->n_units, r->n_pids, r->n_pids == 0,
			(uint64_t)r->n_resident * b->page_size, (uint64_t)r->n_locked * b->page_size,
			lock_range_state_to_string(r->state),
			r->state == LOCK_RANGE_OPEN && !r->admitted ? lock_refusal_to_string(r->refusal) : "none",
			r->path);
	}
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
		"units=%zu mapped=%" PRIu64 " resident=%" PRIu64 " locked=%" PRIu64 " kept=%zu kept_locked=%" PRIu64
		" cap=%" PRIu64,
		t.n_ranges, t.n_open, t.n_admitted, t.n_refused, t.n_unlockable, t.n_failed, t.n_processes,
		t.n_units, t.mapped, t.resident, t.locked, t.n_kept, t.kept_locked, b->global_cap);
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
	dump_ranges(b, f);

	r = lockset_unit_stats(b->ls, &us, &nu);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nu; i++)
		dump_unit(b, &us[i], f);
	free(us);
	return 0;
}

/* The summary is otherwise logged only when it moved by a megabyte. */
void lock_log_stats(void *state)
{
	log_summary(state, true);
}

int lock_report_units(void *state, struct backend_unit_report *units, size_t n)
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

int lock_report_files(void *state, struct backend_file_report **ret, size_t *ret_n)
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
			/* No process maps it: a unit keeps it (LockKeepSec=). */
			.state = fs[i].refusal != LOCK_REFUSAL_NONE		     ? lock_refusal_to_string(fs[i].refusal) :
				 fs[i].n_pids == 0 && fs[i].state == LOCK_RANGE_OPEN ? "kept" :
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
