/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Protect=auto in the manager: the units auto rules match are watched;
 * a timer samples them (and only them): text faults (textfault.h), the
 * system's and the unit's memory PSI; the engine (autoprotect.h)
 * decides; a decision acts by deciding the unit's processes again (the
 * apply callback the caller passes: manager-decide.c), so a protection
 * takes the same path as Protect=yes (examine() -> protect_now() ->
 * backend->protect()) and a release the same as a policy that stopped
 * protecting. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "autoprotect.h"
#include "cgroup.h"
#include "manager-auto.h"
#include "manager-tracking.h"
#include "manager-view.h"
#include "maps.h"
#include "psi.h"
#include "textfault.h"

struct auto_unit {
	/* The unit, or the cgroup for processes outside units (status keys
	 * them the same way); its cgroup is the unit's own, not a process's
	 * below it. */
	char *unit, *cgroup;
	struct rule_settings settings;
	bool seen;		/* decided watched since the last reload */
	struct text_estimate cost; /* its text */
	bool no_figures_said;	/* MID_AUTO_NO_FIGURES logged */
};

static void auto_unit_free(struct auto_unit *u)
{
	if (!u)
		return;
	free(u->unit);
	free(u->cgroup);
	free(u);
}

static uint64_t mem_total(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : UINT64_MAX;
}

static void auto_config(const struct manager *m, struct autoprotect_config *c)
{
	const struct daemon_settings *d = &m->policy.daemon;

	*c = (struct autoprotect_config){
		.fault_rate = d->auto_fault_rate,
		.pressure_some = d->auto_pressure_some,
		.window_usec = (uint64_t)d->auto_window_sec * 1000000ULL,
		.calm_usec = (uint64_t)d->auto_calm_sec * 1000000ULL,
		.budget = budget_resolve(&d->lock_budget, mem_total()),
	};
}

int auto_setup(struct manager *m)
{
	struct autoprotect_config c;
	int r;

	auto_config(m, &c);
	r = autoprotect_new(&c, &m->autoprotect);
	if (r < 0)
		return log_error_errno(r, "cannot set up Protect=auto: %m");
	r = text_faults_new(m->cgroup_root_fd, m->proc_fd, &m->text_faults);
	if (r < 0)
		return log_error_errno(r, "cannot set up the text fault reader: %m");
	return 0;
}

void auto_free(struct manager *m)
{
	struct auto_unit *u;
	size_t cursor = 0;

	struct text_estimate *est;

	while ((u = hashmap_steal(&m->auto_units, &cursor)))
		auto_unit_free(u);
	hashmap_done(&m->auto_units);
	for (cursor = 0; (est = hashmap_steal(&m->auto_estimates, &cursor));) {
		free(est->key);
		free(est);
	}
	hashmap_done(&m->auto_estimates);
	m->autoprotect = autoprotect_free(m->autoprotect);
	m->text_faults = text_faults_free(m->text_faults);
}

static void arm_auto_timer(struct manager *m)
{
	int on = SD_EVENT_OFF;

	if (!m->auto_timer || (sd_event_source_get_enabled(m->auto_timer, &on) >= 0 && on != SD_EVENT_OFF))
		return;
	(void)event_timer_set(m->auto_timer,
				event_now(m->event) + (uint64_t)m->policy.daemon.auto_interval_sec * 1000000ULL);
}

static void auto_forget(struct manager *m, const char *unit)
{
	struct auto_unit *u = hashmap_remove(&m->auto_units, unit);

	autoprotect_forget(m->autoprotect, unit);
	text_faults_forget(m->text_faults, unit);
	auto_unit_free(u);
}

void auto_on_decision(struct manager *m, const char *unit_name, const char *cgroup, struct policy_decision *d)
{
	const char *unit = unit_name ?: cgroup;
	struct auto_unit *u;

	/* The root cgroup has no memory.exec_protect (nor a budget of its own). */
	if (!d->watch || !cgroup || !m->autoprotect || (!unit_name && streq(cgroup, "/")))
		return;
	u = hashmap_get(&m->auto_units, unit);
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u || !(u->unit = strdup(unit)) ||
		    !(u->cgroup = unit_name ? cgroup_unit_root(cgroup, unit_name) : strdup(cgroup)) ||
		    hashmap_put(&m->auto_units, u->unit, u) < 0 || autoprotect_watch(m->autoprotect, unit) < 0) {
			if (u && hashmap_get(&m->auto_units, unit) == u)
				hashmap_remove(&m->auto_units, unit);
			auto_unit_free(u);
			log_warning_errno(-ENOMEM, "cannot watch %s for Protect=auto: %m", unit);
			return;
		}
		log_debug("Protect=auto: watching %s (%s)", unit, u->cgroup);
		arm_auto_timer(m);
	}
	u->seen = true;
	u->settings = d->settings;
	if (autoprotect_is_protected(m->autoprotect, unit))
		d->protect = true;
}

void auto_reload_begin(struct manager *m)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;
	struct autoprotect_config c;

	while ((e = hashmap_next(&m->auto_units, &i, e)))
		((struct auto_unit *)e->value)->seen = false;
	auto_config(m, &c);
	autoprotect_reconfigure(m->autoprotect, &c);
}

/* After the reload's scan: a unit no rule says auto for any more is
 * forgotten (its processes were decided by the new policy already). */
void auto_reload_end(struct manager *m)
{
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e;

	while ((e = hashmap_iter_next(&m->auto_units, &it))) {
		struct auto_unit *u = e->value;

		if (!u->seen)
			auto_forget(m, u->unit); /* removes this entry only */
	}
}

struct range {
	uint64_t dev, ino, offset, len;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* The file-backed text the processes map, each file range once (the
 * processes of a unit map the same program and libraries). */
static uint64_t pids_text_bytes(struct manager *m, const pid_t *pids, size_t n)
{
	_cleanup_free_ struct range *ranges = NULL;
	size_t n_ranges = 0, allocated = 0;
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		struct exec_mappings maps = { 0 };
		char name[32];
		int fd;

		snprintf(name, sizeof(name), "%d", (int)pids[i]);
		fd = openat(m->proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (maps_read(fd, &m->use_procmap_query, &maps) >= 0)
			for (size_t k = 0; k < maps.n; k++) {
				const struct exec_mapping *e = &maps.items[k];

				if (e->kind != MAPPING_FILE && e->kind != MAPPING_DELETED)
					continue;
				if (n_ranges == allocated) {
					size_t na = allocated ? allocated * 2 : 64;
					struct range *r = realloc(ranges, na * sizeof(*r));

					if (!r)
						break;
					ranges = r;
					allocated = na;
				}
				ranges[n_ranges++] = (struct range){
					.dev = ((uint64_t)e->dev_major << 32) | e->dev_minor,
					.ino = e->inode,
					.offset = e->offset,
					.len = e->end - e->start,
				};
			}
		exec_mappings_clear(&maps);
		free(maps.items);
		close(fd);
	}
	if (n_ranges)
		qsort(ranges, n_ranges, sizeof(*ranges), cmp_range);
	for (size_t i = 0; i < n_ranges; i++)
		if (i == 0 || cmp_range(&ranges[i - 1], &ranges[i]) != 0)
			sum += ranges[i].len;
	return sum;
}

/* The unit's own cap: LockBudget= (and ExecProtectLimit= for the kernel
 * backend, which keeps no more than that of it). */
static uint64_t capped(const struct manager *m, const struct rule_settings *s, uint64_t bytes)
{
	uint64_t cap = budget_resolve(&s->lock_budget, mem_total());

	if (m->backend_ops == &backend_kernel_ops && s->exec_protect_limit &&
	    s->exec_protect_limit != EXEC_PROTECT_LIMIT_MAX && s->exec_protect_limit < cap)
		cap = s->exec_protect_limit;
	return bytes < cap ? bytes : cap;
}

/* What a unit's text costs: estimated from at most SAMPLE_PIDS of its
 * processes (they map the same program and libraries; each file range
 * counts once), read again at most every COST_TTL_USEC, and never more
 * than READS_PER_ROUND mappings read in one round whatever the number of
 * units and processes (a round runs in the event loop): what is not read
 * in a round keeps its last figure until a later one. */
#define COST_TTL_USEC (60 * 1000000ULL)
#define SAMPLE_PIDS 16
#define READS_PER_ROUND 64

static uint64_t estimate(struct manager *m, struct text_estimate *est, const char *cgroup)
{
	_cleanup_free_ pid_t *pids = NULL;
	uint64_t now = event_now(m->event);
	size_t n = 0, max;

	if (est->at_usec && now - est->at_usec < COST_TTL_USEC)
		return est->bytes;
	max = m->auto_reads_left < SAMPLE_PIDS ? m->auto_reads_left : SAMPLE_PIDS;
	if (!max || cgroup_list_pids(m->cgroup_root_fd, cgroup, max, &pids, &n) < 0)
		return est->bytes;
	m->auto_reads_left -= n;
	est->bytes = pids_text_bytes(m, pids, n);
	est->at_usec = now;
	return est->bytes;
}

static uint64_t auto_cost(void *userdata, const char *key)
{
	struct manager *m = userdata;
	struct auto_unit *u = hashmap_get(&m->auto_units, key);

	return u ? capped(m, &u->settings, estimate(m, &u->cost, u->cgroup)) : 0;
}

/* The units explicit rules protect now, with their text: from the
 * tracked processes and the cgroups protected whole that no auto
 * decision protects. */
struct explicit_unit {
	char *cgroup;		      /* the unit's own */
	struct rule_settings settings; /* the unit's, for its own cap */
	bool exact;		      /* cost summed from the lock backend's figures */
};

struct explicit_set {
	struct autoprotect_explicit *units;
	struct explicit_unit *more;
	size_t n;
	struct hashmap index; /* unit -> index + 1 */
};

static void explicit_set_done(struct explicit_set *x)
{
	for (size_t i = 0; i < x->n; i++) {
		free((char *)x->units[i].key);
		free(x->more[i].cgroup);
	}
	free(x->units);
	free(x->more);
	hashmap_done(&x->index);
}

static size_t explicit_get(struct explicit_set *x, const char *key, const char *cgroup, const char *unit,
			   const struct rule_settings *s)
{
	uintptr_t at = (uintptr_t)hashmap_get(&x->index, key);
	struct autoprotect_explicit *n;
	struct explicit_unit *nm;

	if (at)
		return at;
	n = reallocarray(x->units, x->n + 1, sizeof(*n));
	if (!n)
		return 0;
	x->units = n;
	nm = reallocarray(x->more, x->n + 1, sizeof(*nm));
	if (!nm)
		return 0;
	x->more = nm;
	x->units[x->n] = (struct autoprotect_explicit){ .key = strdup(key) };
	x->more[x->n] = (struct explicit_unit){
		.cgroup = unit ? cgroup_unit_root(cgroup, unit) : strdup(cgroup),
		.settings = *s,
	};
	x->n++; /* freed with the set from here on */
	if (!x->units[x->n - 1].key || !x->more[x->n - 1].cgroup ||
	    hashmap_put(&x->index, x->units[x->n - 1].key, (void *)(uintptr_t)x->n) < 0)
		return 0;
	return x->n;
}

static int explicit_pushed(const struct manager_cgroup_info *c, void *userdata)
{
	struct explicit_set *x = userdata;

	if (c->by_auto)
		return 0;
	return explicit_get(x, c->unit ?: c->cgroup, c->cgroup, c->unit, c->settings) ? 0 : -ENOMEM;
}

static struct text_estimate *estimate_get(struct manager *m, const char *key)
{
	struct text_estimate *e = hashmap_get(&m->auto_estimates, key);

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->key = strdup(key)) || hashmap_put(&m->auto_estimates, e->key, e) < 0) {
		if (e)
			free(e->key);
		free(e);
		return NULL;
	}
	return e;
}

static int explicit_collect(struct manager *m, struct explicit_set *x, auto_foreach_pushed_fn foreach_pushed)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;
	int r;

	hashmap_init(&x->index, hash_string, equal_string);
	while ((e = hashmap_next(&m->procs, &i, e))) {
		struct tracked *t = e->value;
		const char *key = t->unit ?: t->cgroup;
		size_t at;

		if (!key || t->by_auto)
			continue;
		at = explicit_get(x, key, t->cgroup, t->unit, &t->settings);
		if (!at)
			return -ENOMEM;
		/* The lock backend reads the mappings: what it locks at most. */
		if (t->exec_bytes) {
			x->units[at - 1].cost += t->exec_bytes;
			x->more[at - 1].exact = true;
		}
	}
	r = foreach_pushed(m, explicit_pushed, x);
	if (r < 0)
		return r;
	for (size_t k = 0; k < x->n; k++) {
		struct text_estimate *est = x->more[k].exact ? NULL : estimate_get(m, x->units[k].key);

		if (est)
			x->units[k].cost = estimate(m, est, x->more[k].cgroup);
		x->units[k].cost = capped(m, &x->more[k].settings, x->units[k].cost);
	}
	/* Units no longer protected explicitly: their figures go. */
	{
		struct hashmap_iter it = HASHMAP_ITER_INIT;
		struct hashmap_entry *e2;

		while ((e2 = hashmap_iter_next(&m->auto_estimates, &it)))
			if (!hashmap_get(&x->index, e2->key)) {
				struct text_estimate *est = hashmap_remove(&m->auto_estimates, e2->key);

				free(est->key);
				free(est);
			}
	}
	return 0;
}

static void log_decision(struct manager *m, const struct auto_unit *u, const struct autoprotect_decision *d,
			 double system_psi)
{
	struct log_fields f = LOG_FIELDS_INIT;
	char extra[512];
	const char *mid;
	int prio;

	snprintf(extra, sizeof(extra),
		 "EXECGUARD_FAULT_RATE=%.1f EXECGUARD_PSI_SOME=%.2f EXECGUARD_PSI_SOME_SYSTEM=%.2f "
		 "EXECGUARD_WINDOW_SEC=%.1f EXECGUARD_BUDGET_LEFT=%" PRIu64 " EXECGUARD_AUTO=%s",
		 d->rate, d->pressure_some, system_psi, (double)d->span_usec / 1e6, d->budget_left,
		 autoprotect_action_to_string(d->action));
	f.unit = u->unit[0] == '/' ? NULL : u->unit; /* a cgroup outside units */
	f.cgroup = u->cgroup;
	f.backend = m->backend_ops->name;
	f.extra = extra;
	if (d->action != AUTOPROTECT_RELEASE)
		f.bytes = (long long)d->cost;
	switch (d->action) {
	case AUTOPROTECT_PROTECT:
		mid = MID_AUTO_PROTECTED;
		prio = LOG_NOTICE;
		log_event(prio, mid, &f,
			  "%s %s: %.0f text faults/s over %.0f s under memory PSI some %.1f%% "
			  "(AutoFaultRate=%u, AutoPressureSome=%u%%); %" PRIu64 " bytes of text, %" PRIu64
			  " left in the budget",
			  m->args.dry_run || m->backend_ops->observe_only ? "Protect=auto would protect" :
									     "Protect=auto protects",
			  u->unit, d->rate, (double)d->span_usec / 1e6, d->pressure_some,
			  m->policy.daemon.auto_fault_rate, m->policy.daemon.auto_pressure_some, d->cost,
			  d->budget_left);
		break;
	case AUTOPROTECT_RELEASE:
		log_event(LOG_NOTICE, MID_AUTO_RELEASED, &f,
			  "Protect=auto releases %s: calm for AutoCalmSec=%u (now %.0f text faults/s, PSI some %.1f%%)",
			  u->unit, m->policy.daemon.auto_calm_sec, d->rate, d->pressure_some);
		break;
	case AUTOPROTECT_OVER_BUDGET:
		log_event(LOG_NOTICE, MID_AUTO_OVER_BUDGET, &f,
			  "Protect=auto: %s suffers (%.0f text faults/s under PSI some %.1f%%) but its %" PRIu64
			  " bytes of text do not fit the %" PRIu64 " left of LockBudget=; not protected",
			  u->unit, d->rate, d->pressure_some, d->cost, d->budget_left);
		break;
	}
}

void auto_round(struct manager *m, auto_apply_fn apply, auto_foreach_pushed_fn foreach_pushed)
{
	_cleanup_(explicit_set_done) struct explicit_set x = { 0 };
	const struct autoprotect_decision *d;
	struct hashmap_entry *e = NULL;
	char *gone[64];
	size_t i = 0, n_gone = 0, n;
	double system_psi = 0;
	int r;

	/* No PSI (CONFIG_PSI off, psi=0): pressure is unknown, counted as none. */
	if (psi_read_avg10(m->proc_fd, "pressure/memory", PSI_SOME, &system_psi) < 0)
		system_psi = 0;
	while ((e = hashmap_next(&m->auto_units, &i, e))) {
		struct auto_unit *u = e->value;
		struct text_fault_reading rd;
		double unit_psi = -1;
		char path[4096];
		const char *rel;

		r = text_faults_read(m->text_faults, u->unit, u->cgroup, &rd);
		if (r == -ENOENT) {
			if (n_gone < ELEMENTSOF(gone))
				gone[n_gone++] = u->unit;
			continue;
		}
		if (r == -ENODATA) {
			if (!u->no_figures_said) {
				struct log_fields f = LOG_FIELDS_INIT;

				f.unit = u->unit[0] == '/' ? NULL : u->unit;
				f.cgroup = u->cgroup;
				log_event(LOG_NOTICE, MID_AUTO_NO_FIGURES, &f,
					  "Protect=auto: no text fault figures for %s (%s): it cannot be judged and stays unprotected",
					  u->unit, u->cgroup);
				u->no_figures_said = true;
			}
			continue;
		}
		if (r < 0) {
			log_debug_errno(r, "Protect=auto: cannot read the text faults of %s: %m", u->unit);
			continue;
		}
		if (cgroup_relative(u->cgroup, &rel) >= 0 &&
		    snprintf(path, sizeof(path), "%s/memory.pressure", rel[0] ? rel : ".") < (int)sizeof(path) &&
		    psi_read_avg10(m->cgroup_root_fd, path, PSI_SOME, &unit_psi) < 0)
			unit_psi = -1;
		autoprotect_sample(m->autoprotect, u->unit, rd.faults, rd.at_usec, unit_psi);
	}
	for (size_t k = 0; k < n_gone; k++)
		auto_forget(m, gone[k]);

	m->auto_reads_left = READS_PER_ROUND;
	r = explicit_collect(m, &x, foreach_pushed);
	if (r < 0) {
		log_warning_errno(r, "Protect=auto: cannot decide this round: %m");
		goto rearm;
	}
	r = autoprotect_decide(m->autoprotect, event_now(m->event), system_psi, x.units, x.n, auto_cost, m, &d, &n);
	if (r < 0) {
		log_warning_errno(r, "Protect=auto: cannot decide this round: %m");
		goto rearm;
	}
	for (size_t k = 0; k < n; k++) {
		struct auto_unit *u = hashmap_get(&m->auto_units, d[k].key);

		if (!u)
			continue;
		log_decision(m, u, &d[k], system_psi);
		if (d[k].action != AUTOPROTECT_OVER_BUDGET)
			apply(m, u->unit, u->cgroup);
	}
rearm:
	if (m->auto_units.n_items)
		(void)event_timer_set(m->auto_timer,
				      event_now(m->event) + (uint64_t)m->policy.daemon.auto_interval_sec * 1000000ULL);
}

/* "protected since 2026-12-02 15:04:05 UTC" from a CLOCK_MONOTONIC time. */
static void format_since(struct manager *m, uint64_t mono_usec, char *buf, size_t size)
{
	struct timespec ts;
	uint64_t now_wall, ago = event_now(m->event) - mono_usec;
	time_t wall;
	struct tm tm;

	/* Rounded once from microseconds: status and explain agree. */
	clock_gettime(CLOCK_REALTIME, &ts);
	now_wall = (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
	wall = (time_t)((now_wall - ago + 500000) / 1000000ULL);

	if (!gmtime_r(&wall, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(buf, size, "?");
}

int manager_auto_describe(struct manager *m, const char *unit, char *buf, size_t size)
{
	struct autoprotect_status st;
	char since[64] = "";
	int r;

	if (!m->autoprotect || !unit)
		return -ENOENT;
	r = autoprotect_get(m->autoprotect, unit, &st);
	if (r < 0)
		return r;
	if (st.protected_now)
		format_since(m, st.since_usec, since, sizeof(since));
	autoprotect_format(&st, since, buf, size);
	return st.protected_now;
}

bool manager_auto_protects(struct manager *m, const char *unit)
{
	struct autoprotect_status st;

	return m->autoprotect && unit && autoprotect_get(m->autoprotect, unit, &st) >= 0 && st.protected_now;
}

int manager_auto_foreach(struct manager *m, int (*fn)(const char *unit, const char *cgroup, void *userdata),
			 void *userdata)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&m->auto_units, &i, e))) {
		const struct auto_unit *u = e->value;
		int r = fn(u->unit, u->cgroup, userdata);

		if (r != 0)
			return r;
	}
	return 0;
}
