/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Deciding about processes: look at one (cgroup, unit, the executable
 * when a rule needs it), ask the unit's section and the policy, act on
 * the decision (track and protect, or release); the scan of every
 * process at start, after lost events and after a reload; the proc
 * connector's events. */
#include <dirent.h>

#include "cgroup.h"
#include "cnproc.h"
#include "containers.h"
#include "manager-auto.h"
#include "manager-decide.h"
#include "manager-push.h"
#include "manager-stats.h"
#include "manager-tracking.h"
#include "manager-view.h"

/* The outcome of looking at a process and asking the policy. */
enum look_outcome {
	LOOK_DECIDED,	/* d holds the decision (and l the pin when it protects) */
	LOOK_WAITING,	/* its unit's section is being asked for: decided later */
	LOOK_PUSHED,	/* its cgroup is decided as a whole (manager-push.c) */
	LOOK_FAILED,	/* the error is returned */
};

/* The decision cache: what an exec in a cgroup needs. Most execs are in
 * cgroups no rule can protect, or in cgroups decided as a whole: those
 * cost one read of /proc/PID/cgroup. Cleared when the policy, a unit's
 * section or systemd's view of units changes; bounded. */
enum cgroup_class {
	CLASS_LOOK = 1, /* a rule may protect a process here: look at each */
	CLASS_NONE,	/* no rule can protect a process here */
	CLASS_PUSHED,	/* decided as a whole, whatever runs here */
};
#define CLASSES_MAX 16384

struct class_entry {
	char *path;
	enum cgroup_class c;
};

void decide_cache_clear(struct manager *m)
{
	struct class_entry *e;
	size_t cursor = 0;

	while ((e = hashmap_steal(&m->classes, &cursor))) {
		free(e->path);
		free(e);
	}
}

static void class_put(struct manager *m, const char *cgroup, enum cgroup_class c)
{
	struct class_entry *e;

	if (hashmap_get(&m->classes, cgroup))
		return;
	if (m->classes.n_items >= CLASSES_MAX)
		decide_cache_clear(m);
	e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup(cgroup)) || hashmap_put(&m->classes, e->path, e) < 0) {
		if (e)
			free(e->path);
		free(e);
		return; /* not cached: decided the long way next time too */
	}
	e->c = c;
}

static enum cgroup_class class_of(struct manager *m, const struct policy_input *in)
{
	if (m->push && !policy_exe_matters(&m->policy, in))
		return CLASS_PUSHED;
	return policy_may_protect(&m->policy, in) ? CLASS_LOOK : CLASS_NONE;
}

/* An exec (not of a tracked process) in a cgroup whose class is known
 * and needs nothing: true, decided. */
static bool decided_by_class(struct manager *m, pid_t pid)
{
	const struct class_entry *e;
	const char *cgroup;
	char buf[4096];
	int r;

	if (!m->classes.n_items)
		return false;
	r = look_cgroup(m->proc_fd, pid, buf, sizeof(buf), &cgroup);
	if (r == -ESRCH) {
		m->n_gone_early++; /* exited before we looked: normal */
		return true;
	}
	if (r < 0)
		return false;
	e = hashmap_get(&m->classes, cgroup);
	if (!e || e->c == CLASS_LOOK)
		return false;
	m->n_class_hits++;
	return true;
}

/* Look at pid (cgroup, unit), ask the unit's section and the policy;
 * read the executable and pin the process only when a rule may protect
 * it. -errno on failure (-ESRCH: gone). */
static int look_and_decide(struct manager *m, pid_t pid, uint64_t exec_ts, const struct tracked *t,
			   struct look *l, struct policy_decision *d, enum look_outcome *ret)
{
	enum cgroup_class class;
	struct policy_input in;
	int r;

	*ret = LOOK_FAILED;
	r = look_at(m->proc_fd, pid, l);
	if (r < 0)
		return r;
	in = (struct policy_input){ .unit = l->unit, .cgroup = l->cgroup };
	if (l->unit && m->unit_settings) {
		int u = m->unit_settings(m->unit_settings_userdata, l->unit, pid, exec_ts, &l->unit_section,
					 &l->unit_source);

		if (u == UNIT_SETTINGS_PENDING) {
			*ret = LOOK_WAITING;
			return 0;
		}
		if (u > 0) {
			in.unit_section = &l->unit_section;
			in.unit_section_source = l->unit_source;
		}
	}
	/* A container's annotation stands where a unit's section would. */
	if (!in.unit_section)
		containers_policy_input(m->containers, &m->policy.daemon, l->cgroup, &in);
	class = class_of(m, &in);
	class_put(m, l->cgroup, class);
	if (class == CLASS_PUSHED) {
		*ret = LOOK_PUSHED;
		return 0;
	}
	/* Most processes are in no cgroup a rule protects: decide those
	 * without reading their executable or pinning them. Rules that need
	 * the executable do not match them, and none of them protects. */
	if (class == CLASS_LOOK) {
		r = look_at_exe(l);
		if (r < 0)
			return r;
		in.exe = l->exe;
	}
	policy_decide(&m->policy, &in, d);
	/* Protect=auto: watched; protected once the engine says so. */
	auto_on_decision(m, l->unit, l->cgroup, d);
	if (d->protect && in.exe) {
		r = look_pin(l, m->pin_by_proc_dir, t ? t->pidfd : -1);
		if (r < 0)
			return r;
	}
	*ret = LOOK_DECIDED;
	return 0;
}

/* A look failed. Only an exit drops a protected process here; other
 * errors keep it (see look_error_is_transient()). */
static int look_failed(struct manager *m, pid_t pid, uint64_t exec_ts, struct tracked *t, int r)
{
	if (r == -ESRCH) {
		m->n_gone_early++; /* exited before we looked: normal */
		if (t)
			release_tracked(m, t);
		return 0;
	}
	if (t && look_error_is_transient(r)) {
		report_examine_error(m, pid, r, exec_ts ? "the look at its exec" : "a look");
		t->seen = true; /* alive as far as we know: not swept */
		return r;
	}
	if (t)
		release_tracked(m, t);
	if (r != -ENOENT)
		report_examine_error(m, pid, r, NULL);
	return r == -ENOENT ? 0 : r;
}

static void log_protected(struct manager *m, const struct tracked *t, uint64_t exec_ts, int r)
{
	struct log_fields f = LOG_FIELDS_INIT;

	f.unit = t->unit;
	f.cgroup = t->cgroup;
	f.exe = t->exe;
	f.pid = t->pid;
	f.backend = m->backend_ops->name;
	f.policy = t->source;
	f.bytes = (long long)t->exec_bytes;
	if (exec_ts)
		f.latency_us = (long long)m->last_latency_us;
	log_event(LOG_INFO, MID_PROCESS_PROTECTED, &f, "%s pid %d (%s) in %s%s%s: policy %s, backend %s%s%s",
		  m->args.dry_run || m->backend_ops->observe_only ? "would protect" : "protect", (int)t->pid,
		  t->exe, t->cgroup, t->unit ? ", unit " : "", strempty(t->unit), strna(t->source),
		  m->backend_ops->name, r < 0 ? ", failed: " : "", r < 0 ? STRERROR(r) : "");
}

/* A process followed until now (moved to the cgroup, or a reload) whose
 * cgroup is decided as a whole on the push path: not followed any more. */
static void pushed_over(struct manager *m, struct tracked *t, const char *cgroup)
{
	struct log_fields f = LOG_FIELDS_INIT;

	f.pid = t->pid;
	f.exe = t->exe;
	f.cgroup = cgroup;
	log_event(LOG_INFO, MID_PROCESS_RELEASED, &f, "pid %d (%s) no longer followed: its cgroup %s is decided as a whole (%s)",
		  (int)t->pid, strna(t->exe), cgroup, push_protects(m, cgroup) ? "protected" : "not protected");
	release_tracked(m, t);
}

/* A followed process the policy no longer protects. */
static void policy_released(struct manager *m, struct tracked *t, const struct look *l,
			    const struct policy_decision *d)
{
	struct log_fields f = LOG_FIELDS_INIT;

	f.pid = t->pid;
	f.exe = l->exe ?: t->exe;
	f.cgroup = l->cgroup;
	f.policy = d->protect_source;
	log_event(LOG_INFO, MID_PROCESS_RELEASED, &f, "pid %d (%s) no longer protected: %s", (int)t->pid,
		  strna(l->exe ?: t->exe), d->protect_source);
	release_tracked(m, t);
}

int examine(struct manager *m, pid_t pid, uint64_t exec_ts)
{
	struct tracked *t = hashmap_get(&m->procs, INT_TO_KEY(pid));
	_cleanup_(look_done) struct look l = LOOK_INIT;
	enum look_outcome outcome;
	struct policy_decision d;
	bool is_new;
	int r;

	/* A reused PID: the process we tracked under it is gone, whatever
	 * order its pidfd and the new exec event come in. */
	if (t && pin_exited(t->pidfd, m->pin_by_proc_dir)) {
		release_tracked(m, t);
		t = NULL;
	}
	if (!t && decided_by_class(m, pid)) {
		m->n_decisions++;
		if (exec_ts)
			record_latency(m, exec_ts);
		return 0;
	}
	r = look_and_decide(m, pid, exec_ts, t, &l, &d, &outcome);
	if (r < 0)
		return look_failed(m, pid, exec_ts, t, r);
	if (outcome == LOOK_PUSHED) {
		m->n_decisions++;
		if (t)
			pushed_over(m, t, l.cgroup);
		return 0;
	}
	if (outcome == LOOK_WAITING) {
		/* Decided when systemd has answered; a tracked process keeps
		 * what it has meanwhile (a rescan must not sweep it). */
		m->n_unit_waits++;
		if (t)
			t->seen = true;
		return 0;
	}
	m->n_decisions++;
	if (!d.protect) {
		if (t)
			policy_released(m, t, &l, &d);
		if (exec_ts)
			record_latency(m, exec_ts);
		return 0;
	}
	/* Looked at fine: the next failure is news. */
	m->last_examine_error = m->last_relook_error = 0;
	is_new = !t;
	if (is_new) {
		r = track_new(m, pid, &l, &t);
		if (r < 0)
			return r;
	}
	tracked_update(t, &l, &d);
	r = protect_now(m, t, &l);
	/* Followed while the policy says so (a reload may change it). */
	if (t->settings.prewarm == PREWARM_YES)
		prewarm_process_start(m->prewarm, pid, l.proc_pid_fd, t->unit ?: t->cgroup, &t->settings);
	else
		prewarm_process_end(m->prewarm, pid);
	m->n_protect_decisions++;
	if (exec_ts)
		record_latency(m, exec_ts);
	if (!is_new && exec_ts == 0)
		return 0; /* a rescan found it as it was: nothing new to say */
	log_protected(m, t, exec_ts, r);
	/* ld.so maps the libraries after exec: look again later. */
	if (!m->backend_ops->cgroup_only)
		tracked_queue(m, t, 0, now_ns());
	return 0;
}

/* Look at every process: at start, after lost events, after reload. */
int scan_all(struct manager *m)
{
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e = NULL;
	size_t i = 0;
	struct dirent *de;
	DIR *d;
	int r;

	r = opendir_at(m->proc_fd, &d);

	if (r < 0)
		return r;
	while ((e = hashmap_next(&m->procs, &i, e)))
		((struct tracked *)e->value)->seen = false;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		examine(m, (pid_t)pid, 0);
	}
	closedir(d);
	/* Tracked but not seen: exited while events were lost. Each
	 * release removes its own entry, and only that. */
	while ((e = hashmap_iter_next(&m->procs, &it)))
		if (!((struct tracked *)e->value)->seen)
			release_tracked(m, e->value);
	m->n_full_rescans++;
	return 0;
}

int on_full_rescan(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	(void)s;
	(void)usec;
	scan_all(m);
	log_event(LOG_NOTICE, MID_RESCANNED, NULL,
		  "rescanned /proc after lost connector events (%llu overflows so far)",
		  (unsigned long long)m->n_overflows);
	return 0;
}

void schedule_full_rescan(struct manager *m)
{
	int enabled = SD_EVENT_OFF;

	if (sd_event_source_get_enabled(m->full_rescan_timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
		return; /* one is pending; it will see everything */
	(void)event_timer_set(m->full_rescan_timer, event_now(m->event) + RESCAN_DEBOUNCE_USEC);
}

/* Only without pidfds: the exit event can come before the process is
 * reaped, so what is not gone yet is looked at again shortly. */
static void handle_exit(struct manager *m, const struct cnproc_event *ev)
{
	struct tracked *t;

	if (!m->pin_by_proc_dir)
		return; /* the pidfd tells */
	t = hashmap_get(&m->procs, INT_TO_KEY(ev->tgid));
	if (!t)
		return;
	if (pin_exited(t->pidfd, m->pin_by_proc_dir))
		release_tracked(m, t);
	else
		tracked_queue(m, t, 0, now_ns());
}

void manager_process_events(struct manager *m, const struct cnproc_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (ev[i].type == CNPROC_EXEC) {
			m->n_exec++;
			examine(m, ev[i].tgid, ev[i].timestamp_ns);
		} else if (ev[i].type == CNPROC_EXIT) {
			m->n_exit++;
			handle_exit(m, &ev[i]);
		} else if (ev[i].type == CNPROC_ACK && ev[i].err) {
			log_warning_errno((int)ev[i].err, "proc connector refused the subscription: %m");
		}
	}
}

/* Protect=auto changed its mind about a unit (keyed by key): its
 * processes are decided again, which asks the engine; a release also
 * drops what the list did not show (exited meanwhile). */
void decide_unit_again(struct manager *m, const char *key, const char *cgroup)
{
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	_cleanup_free_ pid_t *pids = NULL;
	struct hashmap_entry *e;
	size_t n = 0;
	int r;

	push_decide_key_again(m, key, cgroup);
	if (!push_needs_processes(m) && !m->procs.n_items)
		return; /* no process is followed */
	r = cgroup_list_pids(m->cgroup_root_fd, cgroup, SIZE_MAX, &pids, &n);
	if (r < 0)
		log_debug_errno(r, "Protect=auto: cannot list the processes of %s: %m", key);
	for (size_t k = 0; k < n; k++)
		(void)examine(m, pids[k], 0);
	if (manager_auto_protects(m, key))
		return;
	while ((e = hashmap_iter_next(&m->procs, &it))) {
		struct tracked *t = e->value;

		if (t->by_auto && streq_ptr(t->unit ?: t->cgroup, key))
			release_tracked(m, t); /* removes this entry only */
	}
}
