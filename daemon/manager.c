/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>

#include "caps.h"
#include "cgroup.h"
#include "bus.h"
#include "cnproc.h"
#include "containers.h"
#include "manager-internal.h"
#include "maps.h"
#include "units.h"

static void log_policy_errors(const struct policy *p, const char *what)
{
	for (size_t i = 0; i < p->n_errors; i++) {
		const struct policy_error *e = &p->errors[i];

		if (e->line)
			log_event(LOG_ERR, MID_POLICY_REJECTED, NULL, "%s:%u: %s", e->file, e->line,
				  e->message);
		else
			log_event(LOG_ERR, MID_POLICY_REJECTED, NULL, "%s: %s", e->file, e->message);
	}
	log_event(LOG_ERR, MID_POLICY_REJECTED, NULL, "%s: %zu error%s in the policy", what,
		  p->n_errors, p->n_errors == 1 ? "" : "s");
}

/* Reported once until a process is looked at fine again: an open file
 * limit reached, say, must not fill the journal. */
void report_examine_error(struct manager *m, pid_t pid, int r, const char *tracked_look)
{
	struct log_fields f = LOG_FIELDS_INIT;

	m->n_examine_errors++;
	if (tracked_look)
		log_debug_errno(r, "protected pid %d: %s failed: %m; kept", (int)pid, tracked_look);
	/* Kept apart: a failure that costs a new process its protection is
	 * other news than one that a protected process survives. */
	int *last = tracked_look ? &m->last_relook_error : &m->last_examine_error;

	if (*last == r)
		return;
	*last = r;
	f.pid = pid;
	if (tracked_look)
		log_event_errno(LOG_ERR, r, MID_LOOK_FAILED_KEPT, &f,
				"cannot look at pid %d again: %m%s; it stays protected and is looked at again later",
				(int)pid,
			  r == -EMFILE ? " (one open file per protected process; raise LimitNOFILE=)" : "");
	else
		log_event_errno(LOG_ERR, r, MID_LOOK_FAILED, &f, "cannot look at pid %d: %m%s; not protected%s",
				(int)pid,
			  r == -EMFILE ? " (one open file per protected process; raise LimitNOFILE=)" : "",
			  r == -EMFILE || r == -ENFILE ? ", nor others until files are free again" : "");
}

/* Only an exit or the policy drops a protection: a look that failed for
 * another reason (EMFILE, ENOMEM, EACCES...) says nothing about the
 * process, which keeps what it had until a later look succeeds. -ENOENT
 * (no cgroup2 path) is a fact about the process, not a failure. */
bool look_error_is_transient(int r)
{
	return r != -ESRCH && r != -ENOENT;
}

/* The outcome of looking at a process and asking the policy. */
enum look_outcome {
	LOOK_DECIDED,	/* d holds the decision (and l the pin when it protects) */
	LOOK_WAITING,	/* its unit's section is being asked for: decided later */
	LOOK_FAILED,	/* the error is returned */
};

/* Look at pid (cgroup, unit), ask the unit's section and the policy;
 * read the executable and pin the process only when a rule may protect
 * it. -errno on failure (-ESRCH: gone). */
static int look_and_decide(struct manager *m, pid_t pid, uint64_t exec_ts, const struct tracked *t,
			   struct look *l, struct policy_decision *d, enum look_outcome *ret)
{
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
	/* Most processes are in no cgroup a rule protects: decide those
	 * without reading their executable or pinning them. Rules that need
	 * the executable do not match them, and none of them protects. */
	if (policy_may_protect(&m->policy, &in)) {
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
		  m->backend_ops->name, r < 0 ? ", failed: " : "", r < 0 ? strerror(-r) : "");
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
	r = look_and_decide(m, pid, exec_ts, t, &l, &d, &outcome);
	if (r < 0)
		return look_failed(m, pid, exec_ts, t, r);
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
		if (t) {
			struct log_fields f = LOG_FIELDS_INIT;

			f.pid = pid;
			f.exe = l.exe ?: t->exe;
			f.cgroup = l.cgroup;
			f.policy = d.protect_source;
			log_event(LOG_INFO, MID_PROCESS_RELEASED, &f, "pid %d (%s) no longer protected: %s",
				  (int)pid, strna(l.exe ?: t->exe), d.protect_source);
			release_tracked(m, t);
		}
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
static int scan_all(struct manager *m)
{
	struct hashmap_entry *e = NULL;
	struct tracked *gone[256];
	size_t i = 0, n_gone;
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
	/* Tracked but not seen: exited while events were lost. */
	do {
		n_gone = 0;
		i = 0;
		e = NULL;
		while (n_gone < ELEMENTSOF(gone) && (e = hashmap_next(&m->procs, &i, e)))
			if (!((struct tracked *)e->value)->seen)
				gone[n_gone++] = e->value;
		for (size_t k = 0; k < n_gone; k++)
			release_tracked(m, gone[k]);
	} while (n_gone == ELEMENTSOF(gone));
	m->n_full_rescans++;
	return 0;
}

static int on_full_rescan(sd_event_source *s, uint64_t usec, void *userdata)
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
	(void)manager_timer_set(m, m->full_rescan_timer, manager_now(m) + RESCAN_DEBOUNCE_USEC);
}

uint64_t manager_now(struct manager *m)
{
	uint64_t now;

	/* Only fails for a clock the loop does not know: not this one. */
	if (sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0)
		now = now_ns() / 1000;
	return now;
}

/* A source that cannot be armed or switched leaves the daemon deaf or
 * stuck: say which one, and end the loop with the error. */
static int source_failed(struct manager *m, sd_event_source *s, int r)
{
	const char *name = NULL;

	(void)sd_event_source_get_description(s, &name);
	log_error_errno(r, "cannot arm event source %s: %m; exiting so that the service manager restarts execguardd",
			strna(name));
	(void)sd_event_exit(m->event, r);
	return r;
}

int manager_timer_set(struct manager *m, sd_event_source *s, uint64_t usec)
{
	int r;

	if (usec == USEC_OFF)
		r = sd_event_source_set_enabled(s, SD_EVENT_OFF);
	else if ((r = sd_event_source_set_time(s, usec)) >= 0)
		r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	return r < 0 ? source_failed(m, s, r) : 0;
}

int manager_source_enable(struct manager *m, sd_event_source *s, int enabled)
{
	int r = sd_event_source_set_enabled(s, enabled);

	return r < 0 ? source_failed(m, s, r) : 0;
}

int manager_add_timer(struct manager *m, sd_event_source **ret, const char *name,
		      sd_event_time_handler_t handler)
{
	int r;

	r = sd_event_add_time(m->event, ret, CLOCK_MONOTONIC, UINT64_MAX, 1000, handler, m);
	if (r < 0)
		return log_error_errno(r, "cannot add the %s timer: %m", name);
	(void)sd_event_source_set_description(*ret, name);
	r = sd_event_source_set_enabled(*ret, SD_EVENT_OFF);
	if (r < 0)
		return log_error_errno(r, "cannot set up the %s timer: %m", name);
	return 0;
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

static int load_policy_into(struct manager *m, struct policy *p)
{
	int r;

	policy_init(p);
	r = policy_load(p, m->args.config_file, m->args.dropin_dirs, !m->args.config_required);
	for (size_t i = 0; i < p->n_warnings; i++) {
		const struct policy_error *w = &p->warnings[i];

		if (w->line)
			log_event(LOG_WARNING, MID_POLICY_WARNING, NULL, "%s:%u: warning: %s", w->file, w->line,
				  w->message);
		else
			log_event(LOG_WARNING, MID_POLICY_WARNING, NULL, "%s: warning: %s", w->file, w->message);
	}
	return r;
}

int manager_load_policy(struct manager *m)
{
	int r = load_policy_into(m, &m->policy);
	struct log_fields f = LOG_FIELDS_INIT;

	if (r < 0) {
		log_policy_errors(&m->policy, "refusing to start");
		return r;
	}
	f.backend = backend_choice_to_string(m->policy.daemon.backend);
	log_event(LOG_INFO, MID_POLICY_LOADED, &f, "policy loaded: %zu rule%s from %zu file%s",
		  m->policy.n_rules, m->policy.n_rules == 1 ? "" : "s", m->policy.n_files,
		  m->policy.n_files == 1 ? "" : "s");
	return 0;
}

int manager_reload(struct manager *m, struct policy *ret_rejected)
{
	struct policy next;
	struct log_fields f = LOG_FIELDS_INIT;
	int r;

	sd_notify(false, "RELOADING=1\nSTATUS=reloading policy");
	r = load_policy_into(m, &next);
	if (r < 0) {
		log_policy_errors(&next, "reload rejected, the previous policy stays in force");
		if (ret_rejected)
			*ret_rejected = next;
		else
			policy_done(&next);
		update_status(m, "reload rejected (see log), previous policy in force;");
		sd_notify(false, "READY=1");
		return r;
	}
	if (next.daemon.backend != m->policy.daemon.backend)
		log_notice("Backend=%s takes effect at the next start; keeping %s",
			   backend_choice_to_string(next.daemon.backend), m->backend_ops->name);
	/* Delay stages index the queues: drain them before swapping. */
	for (size_t i = 0; i < ELEMENTSOF(m->stages); i++)
		while (m->stages[i].head)
			tracked_unqueue(m, m->stages[i].head);
	policy_done(&m->policy);
	m->policy = next;
	m->env.settings = &m->policy.daemon;
	m->backend_ops->reconfigure(m->backend, &m->policy.daemon);
	auto_reload_begin(m);
	f.backend = m->backend_ops->name;
	log_event(LOG_INFO, MID_POLICY_LOADED, &f, "policy reloaded: %zu rule%s from %zu file%s",
		  m->policy.n_rules, m->policy.n_rules == 1 ? "" : "s", m->policy.n_files,
		  m->policy.n_files == 1 ? "" : "s");
	scan_all(m);
	auto_reload_end(m);
	update_status(m, NULL);
	sd_notify(false, "READY=1");
	return 0;
}

static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	(void)s;
	(void)si;
	manager_reload(userdata, NULL);
	return 0;
}

int manager_rescan(struct manager *m)
{
	int r = scan_all(m);

	update_status(m, NULL);
	return r;
}

void manager_decide_pid(struct manager *m, pid_t pid, uint64_t exec_ts)
{
	(void)examine(m, pid, exec_ts);
	if (m->status_dirty)
		update_status(m, NULL);
}

void manager_set_unit_settings(struct manager *m, unit_settings_fn fn, void *userdata)
{
	m->unit_settings = fn;
	m->unit_settings_userdata = userdata;
}

sd_event *manager_event(struct manager *m)
{
	return m->event;
}

int manager_cgroup_root_fd(struct manager *m)
{
	return m->cgroup_root_fd;
}

int manager_proc_fd(struct manager *m)
{
	return m->proc_fd;
}

struct text_faults *manager_text_faults(struct manager *m)
{
	return m->text_faults;
}

const struct policy *manager_policy(struct manager *m)
{
	return &m->policy;
}

const struct backend_ops *manager_backend(struct manager *m, void **ret_state)
{
	if (ret_state)
		*ret_state = m->backend;
	return m->backend_ops;
}

bool manager_dry_run(const struct manager *m)
{
	return m->args.dry_run;
}

int manager_foreach_process(struct manager *m, manager_process_fn fn, void *userdata)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&m->procs, &i, e))) {
		const struct tracked *t = e->value;
		struct manager_process_info p = {
			.pid = t->pid,
			.exe = t->exe,
			.cgroup = t->cgroup,
			.unit = t->unit,
			.source = t->source,
			.source_kind = t->source_kind,
			.exec_bytes = t->exec_bytes,
		};
		int r = fn(&p, userdata);

		if (r != 0)
			return r;
	}
	return 0;
}

int manager_explain(struct manager *m, pid_t pid, struct manager_explanation *ret)
{
	struct look l;
	struct policy_input in;
	int r;

	*ret = (struct manager_explanation){ .pid = pid };
	r = look_at(m->proc_fd, pid, &l);
	if (r == 0)
		r = look_at_exe(&l);
	if (r < 0) {
		look_done(&l);
		return r;
	}
	if (m->systemd) {
		_cleanup_free_ char *sd_unit = NULL;

		/* Decisions take the unit from the cgroup path; a person asking
		 * why should hear if systemd sees it otherwise. */
		if (cgroup_unit_of(pid, l.cgroup, true, &sd_unit) >= 0 && !streq_ptr(sd_unit, l.unit))
			log_warning("pid %d: systemd puts it in unit %s, its cgroup path %s says %s; "
				    "decisions use the path",
				    (int)pid, sd_unit, l.cgroup, strna(l.unit));
	}
	in = (struct policy_input){ .unit = l.unit, .cgroup = l.cgroup, .exe = l.exe };
	if (l.unit && m->unit_settings) {
		r = m->unit_settings(m->unit_settings_userdata, l.unit, 0, 0, &ret->unit_section,
				     &ret->unit_section_source);
		if (r > 0 && r != UNIT_SETTINGS_PENDING)
			in.unit_section = &ret->unit_section;
		ret->unit_section_pending = r == UNIT_SETTINGS_PENDING;
	}
	in.unit_section_source = ret->unit_section_source;
	if (!in.unit_section && containers_policy_input(m->containers, &m->policy.daemon, l.cgroup, &in)) {
		ret->unit_section = *in.unit_section;
		free(ret->unit_section_source);
		ret->unit_section_source = strdup(in.unit_section_source);
	}
	policy_decide(&m->policy, &in, &ret->decision);
	/* Protect=auto: what the engine decided is the decision. */
	if (ret->decision.watch &&
	    manager_auto_describe(m, l.unit ?: l.cgroup, ret->auto_state, sizeof(ret->auto_state)) > 0)
		ret->decision.protect = true;
	ret->tracked = hashmap_get(&m->procs, INT_TO_KEY(pid)) != NULL;
	ret->exe = TAKE_PTR(l.exe);
	ret->cgroup = TAKE_PTR(l.cgroup);
	ret->unit = TAKE_PTR(l.unit);
	look_done(&l);
	return 0;
}

void manager_explanation_done(struct manager_explanation *e)
{
	free(e->exe);
	free(e->cgroup);
	free(e->unit);
	free(e->unit_section_source);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	(void)s;
	log_info("received %s, stopping", strsignal((int)si->ssi_signo));
	sd_notify(false, "STOPPING=1\nSTATUS=stopping");
	return sd_event_exit(m->event, 0);
}

/* One pidfd per protected process: the soft limit (1024 under systemd)
 * goes up to the hard one. sd-event uses epoll, so large fds are fine. */
static void raise_nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warning_errno(errno, "cannot raise the open file limit to %llu: %m", (unsigned long long)rl.rlim_max);
}

int manager_new(const struct manager_args *args, struct manager **ret)
{
	static const struct {
		int signo;
		const char *name;
		sd_event_signal_handler_t handler;
	} signals[ELEMENTSOF(((struct manager *)0)->signal_sources)] = {
		{ SIGHUP, "SIGHUP", on_reload },
		{ SIGTERM, "SIGTERM", on_terminate },
		{ SIGINT, "SIGINT", on_terminate },
		{ SIGUSR1, "SIGUSR1", on_stats },
	};
	_cleanup_(manager_freep) struct manager *m = NULL;
	sigset_t mask;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return log_error_errno(-ENOMEM, "cannot start: %m");
	m->args = *args;
	m->cn_fd = m->proc_fd = m->cgroup_root_fd = m->state_dir_fd = -1;
	m->use_procmap_query = true;
	m->systemd = sd_booted() > 0;
	/* A pidfd names a process of this machine's /proc: with a proc root
	 * elsewhere (a test's fake tree) the /proc/PID directory is the pin. */
	m->pin_by_proc_dir = args->proc_root && !streq(args->proc_root, "/proc");
	raise_nofile_limit();
	hashmap_init(&m->procs, hash_int, equal_int);
	hashmap_init(&m->auto_units, hash_string, equal_string);
	policy_init(&m->policy);

	m->proc_fd = open(args->proc_root ?: "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m->proc_fd < 0)
		return log_error_errno(-errno, "cannot open %s: %m", args->proc_root ?: "/proc");
	if (args->cgroup_root) {
		m->cgroup_root = strdup(args->cgroup_root);
	} else {
		r = cgroup2_find_mount(NULL, &m->cgroup_root);
		if (r < 0)
			return log_error_errno(r, "no cgroup2 file system is mounted (looked in /proc/self/mountinfo): %m");
	}
	if (!m->cgroup_root)
		return log_error_errno(-ENOMEM, "cannot start: %m");
	m->cgroup_root_fd = open(m->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m->cgroup_root_fd < 0)
		return log_error_errno(-errno, "cannot open cgroup root %s: %m", m->cgroup_root);

	if (args->state_dir && !args->dry_run) {
		if (mkdir(args->state_dir, 0700) < 0 && errno != EEXIST)
			log_warning("cannot create state directory %s: %m; a restart after a crash cannot clear what this run sets",
				    args->state_dir);
		m->state_dir_fd = open(args->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (m->state_dir_fd < 0 && errno != ENOENT)
			log_warning("cannot open state directory %s: %m", args->state_dir);
	}

	r = sd_event_default(&m->event);
	if (r < 0)
		return log_error_errno(r, "cannot create the event loop: %m");
	sigemptyset(&mask);
	for (size_t i = 0; i < ELEMENTSOF(signals); i++)
		sigaddset(&mask, signals[i].signo);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
		r = sd_event_add_signal(m->event, &m->signal_sources[i], signals[i].signo, signals[i].handler, m);
		if (r < 0)
			return log_error_errno(r, "cannot handle %s: %m", signals[i].name);
		(void)sd_event_source_set_description(m->signal_sources[i], signals[i].name);
	}
	if ((r = manager_add_timer(m, &m->rescan_timer, "later-looks", on_rescan_timer)) < 0 ||
	    (r = manager_add_timer(m, &m->full_rescan_timer, "full-rescan", on_full_rescan)) < 0 ||
	    (r = manager_add_timer(m, &m->status_timer, "status", on_status_timer)) < 0 ||
	    (r = manager_add_timer(m, &m->remap_timer, "remap", on_remap_timer)) < 0 ||
	    (r = manager_add_timer(m, &m->cn_retry_timer, "connector-retry", on_connector_retry)) < 0 ||
	    (r = manager_add_timer(m, &m->cn_batch_timer, "exec-batch", on_connector_batch)) < 0)
		return r;
	/* Sends WATCHDOG=1 at half of WATCHDOG_USEC when that is set. */
	r = sd_event_set_watchdog(m->event, true);
	if (r < 0)
		return log_error_errno(r, "cannot set up the watchdog: %m");
	*ret = TAKE_PTR(m);
	return 0;
}

int manager_pick_backend(struct manager *m)
{
	static const enum backend_choice order[] = { BACKEND_KERNEL, BACKEND_LOCK };
	enum backend_choice want = m->args.backend_override >= 0 ?
					   (enum backend_choice)m->args.backend_override :
					   m->policy.daemon.backend;
	struct log_fields f = LOG_FIELDS_INIT;
	int r;

	m->env = (struct backend_env){
		.state_dir_fd = m->state_dir_fd,
		.cgroup_root_fd = m->cgroup_root_fd,
		.cgroup_root = m->cgroup_root,
		.proc_fd = m->proc_fd,
		.dry_run = m->args.dry_run,
		.event = m->event,
		.settings = &m->policy.daemon,
	};
	if (want == BACKEND_AUTO) {
		for (size_t i = 0; i < ELEMENTSOF(order) && !m->backend_ops; i++) {
			const struct backend_ops *ops = backend_ops_for(order[i]);
			char *why = NULL;

			if (!ops)
				continue;
			if (ops->probe(&m->env, &why) == 0)
				m->backend_ops = ops;
			else
				log_info("backend %s not usable: %s", ops->name, strna(why));
			free(why);
		}
		if (!m->backend_ops) {
			log_warning("no protecting backend works here; observing only (backend none)");
			m->backend_ops = &backend_none_ops;
		}
	} else {
		char *why = NULL;

		m->backend_ops = backend_ops_for(want);
		if (!m->backend_ops) {
			log_error("backend %s is not built into this execguardd",
				  backend_choice_to_string(want));
			return -EOPNOTSUPP;
		}
		r = m->backend_ops->probe(&m->env, &why);
		if (r < 0) {
			log_error("backend %s cannot work here: %s", m->backend_ops->name,
				  why ? why : strerror(-r));
			free(why);
			return r;
		}
		free(why);
	}
	r = m->backend_ops->create(&m->env, &m->backend);
	if (r < 0)
		return log_error_errno(r, "cannot set up backend %s: %m", m->backend_ops->name);
	m->backend_choice = want;
	r = auto_setup(m);
	if (r < 0)
		return r;
	f.backend = m->backend_ops->name;
	log_event(LOG_INFO, MID_BACKEND, &f, "backend %s%s, cgroup2 at %s", m->backend_ops->name,
		  m->args.dry_run ? " (dry run: nothing is changed)" : "", m->cgroup_root);
	return 0;
}

struct containers *manager_containers(struct manager *m)
{
	return m->containers;
}

static void decide_container_pid(void *userdata, pid_t pid)
{
	manager_decide_pid(userdata, pid, 0);
}

int manager_start_bus(struct manager *m)
{
	int r = 0;

	/* Containers ask over the bus; what they asked before a restart is
	 * back before the first scan. --dry-run keeps no state. */
	if (!m->args.dry_run) {
		r = containers_new(m->event, m->cgroup_root, m->cgroup_root_fd, m->state_dir_fd,
				   decide_container_pid, m, &m->containers);
		if (r >= 0)
			containers_load(m->containers, &m->policy.daemon);
	}
	if (r >= 0)
		r = units_new(m, &m->units);

	if (r >= 0)
		r = bus_new(m, m->units, &m->bus);
	if (r < 0)
		return log_error_errno(r, "cannot set up the D-Bus interface: %m");
	return 0;
}

int manager_start(struct manager *m)
{
	int r;

	if ((r = manager_load_policy(m)) < 0 || (r = manager_pick_backend(m)) < 0 ||
	    (r = manager_start_prewarm(m)) < 0 || (r = manager_start_bus(m)) < 0 || (r = manager_start_events(m)) < 0 ||
	    (r = manager_drop_privileges(m)) < 0 || (r = manager_scan(m)) < 0)
		return r;
	return 0;
}

int manager_start_prewarm(struct manager *m)
{
	struct prewarm_env env = {
		.event = m->event,
		.proc_fd = m->proc_fd,
		.dir = m->args.prewarm_dir,
		.settings = &m->policy.daemon,
	};
	int r;

	/* --dry-run changes nothing, not even the page cache. */
	if (!m->args.prewarm_dir || m->args.dry_run)
		return 0;
	r = prewarm_new(&env, &m->prewarm);
	if (r < 0)
		log_warning_errno(r, "prewarm is off: %m");
	return 0;
}

struct prewarm *manager_prewarm(struct manager *m)
{
	return m->prewarm;
}

int manager_start_events(struct manager *m)
{
	struct utsname u;
	int r;

	/* Linux 5.3+ pins processes with pidfds; older kernels (and
	 * valgrind 3.19) need the /proc directory and exit events. */
	r = pidfd_open_pid(getpid());
	if (r < 0 && errno == ENOSYS) {
		m->pin_by_proc_dir = true;
		log_notice("pidfd_open() is not available (kernel older than 5.3, or an emulator such as "
			   "valgrind): pinning processes by their /proc directory and following exit events");
	}
	closep(&r);
	/* The 6.6 event filter keeps fork/uid/comm traffic away from us. */
	m->cn_filtered = uname(&u) == 0 && kernel_release_at_least(u.release, 6, 6);
	r = connector_open(m);
	if (r < 0)
		return r;

	/* STATUS= once a second when something changed; the remap timer
	 * runs while anything is tracked (armed by the first one). */
	r = manager_timer_set(m, m->status_timer, manager_now(m) + STATUS_INTERVAL_USEC);
	if (r < 0)
		return r;
	log_info("listening to the proc connector (%s)",
		 !m->cn_filtered	  ? "all events, filtered here: kernel older than 6.6" :
		 m->pin_by_proc_dir ? "exec and exit events only, kernel-side filter" :
				      "exec events only, kernel-side filter; exits from pidfds");
	return 0;
}

int manager_drop_privileges(struct manager *m)
{
	uint64_t want = CAPS_COMMON | m->backend_ops->capabilities, kept = 0, had = 0;
	char k[512], d[1024];
	int bounding = 0, r;

	(void)caps_get_effective(&had);
	r = caps_keep_only(want, &kept, &bounding);
	if (r < 0) {
		/* Less safe, not broken: say so and go on. */
		log_warning_errno(r, "cannot drop capabilities: %m%s; keeping %s",
			    r == -EPERM ? " (a system call filter without capset?)" : "",
			    caps_format(had, d, sizeof(d)));
		return 0;
	}
	log_info("capabilities for backend %s: kept %s; dropped %s%s", m->backend_ops->name,
		 caps_format(kept, k, sizeof(k)), caps_format(had & ~kept, d, sizeof(d)),
		 bounding ? " (bounding set too)" : " (bounding set as the service manager set it)");
	if (want & ~kept)
		log_notice("started without %s: what needs it will fail and say so",
			   caps_format(want & ~kept, d, sizeof(d)));
	return 0;
}

int manager_scan(struct manager *m)
{
	int r = scan_all(m);

	if (r < 0)
		return log_error_errno(r, "cannot scan processes: %m");
	if (m->backend_ops->scan_done)
		m->backend_ops->scan_done(m->backend);
	/* The units running now queued theirs already. */
	prewarm_replay_all(m->prewarm);
	update_status(m, NULL);
	return 0;
}

int manager_run(struct manager *m)
{
	int r;

	sd_notify(false, "READY=1");
	log_event(LOG_INFO, MID_STARTED, NULL, "ready: %zu processes protected after the initial scan",
		  m->procs.n_items);
	r = sd_event_loop(m->event);
	log_stats(m, "at exit");
	if (r < 0)
		return log_error_errno(r, "event loop failed: %m");
	return r;
}

struct manager *manager_free(struct manager *m)
{
	struct hashmap_entry *e;
	size_t i;

	if (!m)
		return NULL;
	/* The interface and the lookups first: they call into the rest. */
	m->bus = bus_free(m->bus);
	m->units = units_free(m->units);
	m->containers = containers_free(m->containers);
	/* Before the releases: it samples the running units once more. */
	m->prewarm = prewarm_free(m->prewarm);
	for (;;) {
		i = 0;
		e = hashmap_next(&m->procs, &i, NULL);
		if (!e)
			break;
		if (m->backend_ops)
			release_tracked(m, e->value);
		else
			tracked_free(m, e->value);
	}
	if (m->backend_ops)
		m->backend_ops->destroy(m->backend);
	auto_free(m);
	hashmap_done(&m->procs);
	sd_event_source_unref(m->cn_source);
	sd_event_source_unref(m->cn_retry_timer);
	sd_event_source_unref(m->cn_batch_timer);
	sd_event_source_unref(m->remap_timer);
	sd_event_source_unref(m->rescan_timer);
	sd_event_source_unref(m->full_rescan_timer);
	sd_event_source_unref(m->status_timer);
	for (size_t k = 0; k < ELEMENTSOF(m->signal_sources); k++)
		sd_event_source_unref(m->signal_sources[k]);
	sd_event_unref(m->event);
	closep(&m->cn_fd);
	closep(&m->proc_fd);
	closep(&m->cgroup_root_fd);
	closep(&m->state_dir_fd);
	free(m->cgroup_root);
	policy_done(&m->policy);
	free(m);
	return NULL;
}
