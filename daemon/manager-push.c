/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cgroups pushed, processes not chased. memory.exec_protect belongs to
 * a cgroup, not to a process: with such a backend, a cgroup that the
 * policy protects whatever its processes run (no MatchExe= rule matches
 * it) is protected as a whole, and nothing is done per exec.
 *
 * Who tells: cgroupfs, when a directory appears or goes and when a
 * cgroup's cgroup.events changes (cgroup-watch.h, inotify), and systemd,
 * when a unit starts or stops (unit-events.h). The directories watched are
 * those of protected cgroups and of cgroups waiting for their unit's
 * section, so that cgroups made later inside them are seen (the kernel
 * wants every ancestor set, so each has its own protection) and, when a
 * rule may match outside units or no systemd tells of units, the whole
 * tree.
 *
 * Each cgroup is decided as a process in it would be, without the
 * executable: the unit from its path, the unit's [X-ExecGuard] section
 * (asked of systemd: the cgroup waits for the answer, keeping what it
 * had), the policy, Protect=auto. A wanted cgroup is protected while it
 * is populated (a new one from the start: its first process is coming)
 * and its unit has not stopped. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "cgroup.h"
#include "containers.h"
#include "manager-auto.h"
#include "manager-push.h"
#include "manager-view.h"

struct pushed {
	char *path;
	char *unit;	       /* from the path; NULL outside units */
	bool wanted;	       /* the decision protects it */
	bool waiting;	       /* its unit's section is being asked for */
	bool populated;	       /* cgroup.events at the last read; a new cgroup is */
	bool stopped;	       /* systemd said its unit stopped */
	bool held;	       /* the backend holds it */
	bool protected_now;    /* and it is in force */
	unsigned retries;      /* held, not in force yet: tries made again */
	bool seen;	       /* mark for a scan */
	bool by_auto;	       /* Protect=auto decided */
	bool prewarming;       /* followed by prewarm (Prewarm=yes) */
	bool fresh;	       /* just made: its protection's latency counts */
	struct rule_settings settings;
	char *source;	       /* what decided to protect it */
	const char *source_kind;
	uint64_t since_usec;   /* CLOCK_MONOTONIC when protected */
	int last_error;	       /* the backend's, reported once */
};

static void pushed_free(struct pushed *e)
{
	if (!e)
		return;
	free(e->path);
	free(e->unit);
	free(e->source);
	free(e);
}

bool push_possible(const struct manager *m)
{
	return m->backend_ops && m->backend_ops->protect_cgroup && m->backend_ops->release_cgroup;
}

bool push_needs_processes(const struct manager *m)
{
	return !m->push || policy_names_exes(&m->policy);
}

/* populated from cgroup.events; a cgroup without the file (only the
 * fake trees of tests lack it) counts as populated while it exists. */
static bool read_populated(struct manager *m, const char *cgroup, bool *ret_exists)
{
	_cleanup_free_ char *buf = NULL;
	char path[4096];
	const char *rel, *p;
	struct stat st;

	*ret_exists = false;
	if (cgroup_relative(cgroup, &rel) < 0 || fstatat(m->cgroup_root_fd, rel, &st, 0) < 0)
		return false;
	*ret_exists = true;
	if (snprintf(path, sizeof(path), "%s/cgroup.events", rel) >= (int)sizeof(path) ||
	    read_file_at(m->cgroup_root_fd, path, 4096, &buf, NULL) < 0)
		return true;
	p = strstr(buf, "populated ");
	return !p || p[10] != '0';
}

/* From the cgroup's creation (its directory's ctime) to now. */
static long long latency_since_created(struct manager *m, const char *cgroup)
{
	struct timespec now;
	const char *rel;
	struct stat st;
	long long us;

	if (cgroup_relative(cgroup, &rel) < 0 || fstatat(m->cgroup_root_fd, rel, &st, 0) < 0 ||
	    clock_gettime(CLOCK_REALTIME, &now) < 0)
		return -1;
	us = (long long)(now.tv_sec - st.st_ctim.tv_sec) * 1000000 + (now.tv_nsec - st.st_ctim.tv_nsec) / 1000;
	return us < 0 ? 0 : us;
}

static void log_push(struct manager *m, const struct pushed *e, bool protect, const char *why, long long latency)
{
	struct log_fields f = LOG_FIELDS_INIT;
	bool would = m->args.dry_run || m->backend_ops->observe_only;

	f.unit = e->unit;
	f.cgroup = e->path;
	f.backend = m->backend_ops->name;
	f.policy = e->source;
	f.latency_us = latency;
	if (protect)
		log_event(LOG_INFO, MID_PUSH_PROTECTED, &f, "%s %s%s%s as a whole: policy %s, backend %s", would ?
			  "would protect cgroup" : "protect cgroup", e->path, e->unit ? ", unit " : "",
			  strempty(e->unit), strna(e->source), m->backend_ops->name);
	else
		log_event(LOG_INFO, MID_PUSH_RELEASED, &f, "cgroup %s no longer protected: %s", e->path, why);
}

static void record_push_latency(struct manager *m, long long us)
{
	if (us < 0)
		return;
	m->push_latency_us[m->n_push_latency++ % ELEMENTSOF(m->push_latency_us)] =
		us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static void forget(struct manager *m, struct pushed *e)
{
	hashmap_remove(&m->pushed, e->path);
	pushed_free(e);
}

/* Prewarm (Prewarm=yes) follows the unit of a protected cgroup: its
 * processes are listed from the unit's cgroup. */
static void follow_prewarm(struct manager *m, struct pushed *e, bool on)
{
	const char *key = e->unit ?: e->path;

	on = on && e->settings.prewarm == PREWARM_YES;
	if (on == e->prewarming || !m->prewarm)
		return;
	e->prewarming = on;
	if (on) {
		_cleanup_free_ char *root = e->unit ? cgroup_unit_root(e->path, e->unit) : strdup(e->path);

		if (root)
			prewarm_cgroup_start(m->prewarm, key, root, &e->settings);
		else
			e->prewarming = false;
	} else {
		prewarm_cgroup_end(m->prewarm, key);
	}
}

/* Held but not in force (a cgroup made before its memory controller is
 * enabled: a container runtime makes its cgroup, then enables the
 * controller for it): tried again after these, then said once. */
static const uint64_t retry_usec[] = { 20000, 100000, 500000, 2000000, 10000000 };

static void arm_retry(struct manager *m, struct pushed *e)
{
	uint64_t due;
	int on = SD_EVENT_OFF;

	if (e->retries >= ELEMENTSOF(retry_usec)) {
		struct log_fields f = LOG_FIELDS_INIT;

		if (e->retries++ > ELEMENTSOF(retry_usec))
			return; /* said */
		f.cgroup = e->path;
		f.unit = e->unit;
		log_event(LOG_NOTICE, MID_PUSH_WATCH_FAILED, &f,
			  "memory.exec_protect of cgroup %s could not be set (the memory controller not enabled "
			  "there?); tried again for %llu s",
			  e->path, (unsigned long long)(retry_usec[ELEMENTSOF(retry_usec) - 1] / 1000000));
		return;
	}
	due = event_now(m->event) + retry_usec[e->retries++];
	if (sd_event_source_get_enabled(m->push_retry, &on) >= 0 && on != SD_EVENT_OFF) {
		uint64_t cur;

		if (sd_event_source_get_time(m->push_retry, &cur) >= 0 && cur <= due)
			return; /* an earlier round tries it too */
	}
	(void)event_timer_set(m->push_retry, due);
}

/* Protected while wanted, populated and its unit running; forgotten
 * when neither wanted nor waiting nor protected. */
static void apply(struct manager *m, struct pushed *e)
{
	bool want = e->wanted && e->populated && !e->stopped;

	if (want) {
		int r = m->backend_ops->protect_cgroup(m->backend, e->path, &e->settings);

		if (r < 0 && r != e->last_error) {
			m->n_push_errors++;
			m->n_backend_errors++;
			log_warning_errno(r, "cannot protect cgroup %s: %m", e->path);
		}
		e->last_error = r < 0 ? r : 0;
		e->held = r >= 0;
		if (r > 0 && !e->protected_now)
			arm_retry(m, e);
		if (r == 0 && !e->protected_now) {
			long long latency = e->fresh ? latency_since_created(m, e->path) : -1;

			e->fresh = false;
			e->protected_now = true;
			m->n_pushed_now++;
			e->since_usec = event_now(m->event);
			m->n_pushed_protects++;
			m->status_dirty = true;
			record_push_latency(m, latency);
			log_push(m, e, true, NULL, latency);
		}
	} else if (e->held) {
		m->backend_ops->release_cgroup(m->backend, e->path);
		e->held = false;
		e->retries = 0;
		if (e->protected_now) {
			e->protected_now = false;
			m->n_pushed_now--;
			m->status_dirty = true;
			log_push(m, e, false,
				 !e->wanted ? "the policy does not protect it" :
				 e->stopped ? "its unit stopped" : "no process left in it (populated 0)", -1);
		}
	}
	follow_prewarm(m, e, e->protected_now);
	if (!e->wanted && !e->waiting && !e->held)
		forget(m, e);
}

/* The retry timer: every cgroup held and not in force is tried again. */
int on_push_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e;

	(void)s;
	(void)usec;
	while ((e = hashmap_iter_next(&m->pushed, &it))) {
		struct pushed *p = e->value;

		if (p->held && !p->protected_now)
			apply(m, p); /* may remove this entry, only this one */
	}
	return 0;
}

/* The decision, as for a process of the cgroup without its executable.
 * false: it waits for its unit's section (keeping what it had). */
static bool decide(struct manager *m, struct pushed *e)
{
	struct policy_input in = { .unit = e->unit, .cgroup = e->path };
	struct rule_settings section = { .protect = -1 };
	_cleanup_free_ char *section_source = NULL;
	struct policy_decision d;

	e->waiting = false;
	if (e->unit && m->unit_settings) {
		int u = m->unit_settings(m->unit_settings_userdata, e->unit, 0, 0, &section, &section_source);

		if (u == UNIT_SETTINGS_PENDING) {
			e->waiting = true;
			return false;
		}
		if (u > 0) {
			in.unit_section = &section;
			in.unit_section_source = section_source;
		}
	}
	/* A container's annotation stands where a unit's section would. */
	if (!in.unit_section)
		containers_policy_input(m->containers, &m->policy.daemon, e->path, &in);
	/* Its processes may differ: the connector decides them. */
	if (policy_exe_matters(&m->policy, &in)) {
		e->wanted = false;
		return true;
	}
	policy_decide(&m->policy, &in, &d);
	auto_on_decision(m, e->unit, e->path, &d);
	e->wanted = d.protect;
	e->by_auto = d.watch;
	e->settings = d.settings;
	e->source_kind = d.protect_kind;
	if (!streq_ptr(e->source, d.protect_source)) {
		free(e->source);
		e->source = d.protect_source ? strdup(d.protect_source) : NULL;
	}
	return true;
}

static int walk(struct manager *m, const char *cgroup, unsigned depth, bool fresh);

/* Watch what a wanted (or waiting) cgroup needs watched: its directory
 * for cgroups made in it, its cgroup.events for its processes leaving. */
static void watch(struct manager *m, struct pushed *e)
{
	int r = cgroup_watch_add(m->cw, e->path, CGROUP_WATCH_DIR | CGROUP_WATCH_EVENTS);

	if (r < 0 && r != -ENOENT) {
		struct log_fields f = LOG_FIELDS_INIT;

		m->n_push_errors++;
		f.cgroup = e->path;
		log_event_errno(LOG_WARNING, r, MID_PUSH_WATCH_FAILED, &f, "cannot watch cgroup %s: %m%s", e->path,
				r == -ENOSPC ? " (fs.inotify.max_user_watches reached)" : "");
	}
}

/* A cgroup appeared (fresh: just made, or its unit just started) or was
 * found by a walk: decided, watched, protected or not. Unless a walk
 * goes on below it (walking), the cgroups already in it are seen too. */
static void cgroup_seen(struct manager *m, const char *path, bool fresh, bool walking)
{
	struct pushed *e = hashmap_get(&m->pushed, path);
	bool was_watched, exists;

	if (streq(path, "/"))
		return; /* the root cgroup has no memory.exec_protect */
	if (m->push_tree)
		(void)cgroup_watch_add(m->cw, path, CGROUP_WATCH_DIR);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || !(e->path = strdup(path)) || hashmap_put(&m->pushed, e->path, e) < 0) {
			pushed_free(e);
			log_warning_errno(-ENOMEM, "cannot decide about cgroup %s: %m", path);
			return;
		}
		if (cgroup_path_to_unit(path, &e->unit) == -ENOMEM)
			e->unit = NULL;
	}
	e->seen = true;
	/* Its latency counts from its appearance, whoever says so first. */
	e->fresh = e->fresh || (fresh && !e->protected_now);
	(void)decide(m, e);
	if (!e->wanted && !e->waiting) {
		apply(m, e);
		return;
	}
	was_watched = cgroup_watch_has(m->cw, path) & CGROUP_WATCH_DIR;
	watch(m, e);
	e->populated = read_populated(m, path, &exists) || fresh;
	if (!exists) {
		e->wanted = e->waiting = false; /* gone already */
		apply(m, e);
		return;
	}
	apply(m, e);
	/* Cgroups made in it before it was watched. */
	if (!was_watched && !walking)
		(void)walk(m, path, 0, fresh);
}

/* Every cgroup at and below cgroup, parents first. */
static int walk(struct manager *m, const char *cgroup, unsigned depth, bool fresh)
{
	char path[4096];
	const char *rel;
	struct dirent *de;
	DIR *d;
	int fd;

	if (depth > 64 || cgroup_relative(cgroup, &rel) < 0)
		return 0;
	fd = openat(m->cgroup_root_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", streq(cgroup, "/") ? "" : cgroup, de->d_name) >=
		    (int)sizeof(path))
			continue;
		cgroup_seen(m, path, fresh, true);
		(void)walk(m, path, depth + 1, fresh);
	}
	closedir(d);
	return 0;
}

int push_scan(struct manager *m)
{
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e;
	int r;

	if (!m->push)
		return 0;
	while ((e = hashmap_iter_next(&m->pushed, &it)))
		((struct pushed *)e->value)->seen = false;
	if (m->push_tree)
		(void)cgroup_watch_add(m->cw, "/", CGROUP_WATCH_DIR);
	r = walk(m, "/", 0, false);
	if (r < 0)
		return r;
	/* Not found: gone meanwhile. Each removes its own entry only. */
	it = (struct hashmap_iter)HASHMAP_ITER_INIT;
	while ((e = hashmap_iter_next(&m->pushed, &it))) {
		struct pushed *p = e->value;

		if (!p->seen) {
			p->wanted = p->waiting = false;
			apply(m, p);
		}
	}
	return 0;
}

static void on_created(void *userdata, const char *cgroup)
{
	struct manager *m = userdata;

	m->n_cgroup_events++;
	/* Made with children already (mkdir -p): seen below it too. */
	cgroup_seen(m, cgroup, true, m->push_tree);
	if (m->push_tree)
		(void)walk(m, cgroup, 0, true);
}

static void on_removed(void *userdata, const char *cgroup)
{
	struct manager *m = userdata;
	struct pushed *e = hashmap_get(&m->pushed, cgroup);

	m->n_cgroup_events++;
	if (!e)
		return;
	e->wanted = e->waiting = false;
	e->populated = false;
	apply(m, e);
}

static void on_events(void *userdata, const char *cgroup)
{
	struct manager *m = userdata;
	struct pushed *e = hashmap_get(&m->pushed, cgroup);
	bool exists;

	m->n_cgroup_events++;
	if (!e)
		return;
	e->populated = read_populated(m, cgroup, &exists);
	apply(m, e);
}

static void on_overflow(void *userdata)
{
	struct manager *m = userdata;

	log_notice("inotify on cgroupfs overflowed: deciding every cgroup again");
	(void)push_scan(m);
}

const struct cgroup_watch_callbacks push_cgroup_watch_callbacks = {
	.created = on_created,
	.removed = on_removed,
	.events = on_events,
	.overflow = on_overflow,
};

static void on_unit_started(void *userdata, const char *unit, const char *cgroup)
{
	struct manager *m = userdata;
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e;

	if (!m->push)
		return; /* before the start's scan: it sees the unit */
	/* Running again (a restart may keep the cgroup). */
	while ((e = hashmap_iter_next(&m->pushed, &it))) {
		struct pushed *p = e->value;

		if (p->stopped && streq_ptr(p->unit, unit))
			p->stopped = false;
	}
	cgroup_seen(m, cgroup, true, false);
}

static void on_unit_stopped(void *userdata, const char *unit)
{
	struct manager *m = userdata;
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e;

	while (m->push && (e = hashmap_iter_next(&m->pushed, &it))) {
		struct pushed *p = e->value;

		if (streq_ptr(p->unit, unit)) {
			p->stopped = true;
			apply(m, p); /* may remove this entry, only this one */
		}
	}
}

const struct unit_events_callbacks push_unit_events_callbacks = {
	.started = on_unit_started,
	.stopped = on_unit_stopped,
};

/* Decide again the entries whose key (unit, or path outside units) is key. */
static void decide_matching(struct manager *m, const char *unit, const char *path)
{
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e;

	while ((e = hashmap_iter_next(&m->pushed, &it))) {
		struct pushed *p = e->value;

		if ((unit && streq_ptr(p->unit, unit)) || (path && !p->unit && streq(p->path, path))) {
			bool waited = p->waiting;

			if (!decide(m, p))
				continue;
			if (waited && (p->wanted || p->waiting))
				watch(m, p);
			apply(m, p); /* may remove this entry, only this one */
		}
	}
}

void push_unit_answered(struct manager *m, const char *unit)
{
	if (m->push)
		decide_matching(m, unit, NULL);
}

void push_decide_key_again(struct manager *m, const char *key, const char *cgroup)
{
	if (!m->push)
		return;
	decide_matching(m, key[0] == '/' ? NULL : key, key[0] == '/' ? key : NULL);
	/* Those not followed so far (decided "watch only"): the unit's tree. */
	cgroup_seen(m, cgroup, false, true);
	(void)walk(m, cgroup, 0, false);
}

int manager_foreach_pushed(struct manager *m, manager_cgroup_fn fn, void *userdata)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&m->pushed, &i, e))) {
		const struct pushed *p = e->value;
		struct manager_cgroup_info info = {
			.cgroup = p->path,
			.unit = p->unit,
			.source = p->source,
			.source_kind = p->source_kind,
			.settings = &p->settings,
			.by_auto = p->by_auto,
		};
		int r;

		if (!p->protected_now)
			continue;
		r = fn(&info, userdata);
		if (r != 0)
			return r;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void push_latency(const struct manager *m, uint32_t *ret_p50, uint32_t *ret_max, size_t *ret_n)
{
	uint32_t v[ELEMENTSOF(m->push_latency_us)];
	size_t n = m->n_push_latency < ELEMENTSOF(v) ? m->n_push_latency : ELEMENTSOF(v);

	memcpy(v, m->push_latency_us, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_u32);
	*ret_p50 = n ? v[n / 2] : 0;
	*ret_max = n ? v[n - 1] : 0;
	*ret_n = n;
}

void push_decide_pid_cgroup(struct manager *m, pid_t pid)
{
	const struct container_entry *c;
	const char *cgroup;
	char buf[4096];

	if (!m->push || look_cgroup(m->proc_fd, pid, buf, sizeof(buf), &cgroup) < 0)
		return;
	/* The container's own cgroup and what is below it. */
	c = containers_lookup(m->containers, &m->policy.daemon, cgroup);
	if (c)
		cgroup = c->cgroup;
	cgroup_seen(m, cgroup, false, true);
	(void)walk(m, cgroup, 0, false);
}

bool push_protects(struct manager *m, const char *cgroup)
{
	const struct pushed *e = cgroup ? hashmap_get(&m->pushed, cgroup) : NULL;

	return e && e->protected_now;
}

int push_setup(struct manager *m)
{
	int r;

	m->push = push_possible(m);
	if (!m->push)
		return 0;
	/* Units come from systemd; without it (a container, tests) from
	 * cgroupfs too, named by their paths as decisions name them. */
	m->push_tree = policy_matches_beyond_units(&m->policy) || !m->systemd;
	r = cgroup_watch_new(m->cgroup_root, &m->cw);
	if (r < 0)
		return log_error_errno(r, "cannot watch cgroups (inotify): %m");
	return 0;
}

void push_free(struct manager *m)
{
	struct pushed *e;
	size_t cursor = 0;

	while ((e = hashmap_steal(&m->pushed, &cursor))) {
		if (e->held && m->backend_ops)
			m->backend_ops->release_cgroup(m->backend, e->path);
		follow_prewarm(m, e, false);
		pushed_free(e);
	}
	hashmap_done(&m->pushed);
	m->cw = cgroup_watch_free(m->cw);
	m->uw = unit_events_free(m->uw);
}
