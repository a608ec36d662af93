/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>

#include "bus.h"
#include "cnproc.h"
#include "cgroup.h"
#include "containers.h"
#include "manager-auto.h"
#include "manager-connector.h"
#include "manager-push.h"
#include "manager-stats.h"
#include "manager-tracking.h"
#include "manager.h"
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
	decide_cache_clear(m);
	m->env.settings = &m->policy.daemon;
	m->backend_ops->reconfigure(m->backend, &m->policy.daemon);
	auto_reload_begin(m);
	f.backend = m->backend_ops->name;
	log_event(LOG_INFO, MID_POLICY_LOADED, &f, "policy reloaded: %zu rule%s from %zu file%s",
		  m->policy.n_rules, m->policy.n_rules == 1 ? "" : "s", m->policy.n_files,
		  m->policy.n_files == 1 ? "" : "s");
	/* A rule that names executables may have come or gone. */
	(void)connector_set(m, push_needs_processes(m));
	if (push_needs_processes(m) || m->procs.n_items)
		scan_all(m);
	if (m->push) {
		m->push_tree = m->push_tree || policy_matches_beyond_units(&m->policy);
		(void)push_scan(m);
	}
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
	int r = 0;

	decide_cache_clear(m);
	if (push_needs_processes(m) || m->procs.n_items)
		r = scan_all(m);
	if (r >= 0)
		r = push_scan(m);
	update_status(m, NULL);
	return r;
}

void manager_decide_pid(struct manager *m, pid_t pid, uint64_t exec_ts)
{
	/* STATUS= follows with the status timer (status_dirty): a unit's
	 * answer may decide thousands of waiting processes at once. */
	(void)examine(m, pid, exec_ts);
}

void manager_set_unit_settings(struct manager *m, unit_settings_fn fn, void *userdata)
{
	m->unit_settings = fn;
	m->unit_settings_userdata = userdata;
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	(void)s;
	log_info("received %s, stopping", strsignal((int)si->ssi_signo));
	sd_notify(false, "STOPPING=1\nSTATUS=stopping");
	return sd_event_exit(m->event, 0);
}

/* The later looks that are due; a process found moved is decided again. */
static int on_later_looks(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	tracking_run_due(userdata, examine);
	return 0;
}

static int on_remap_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	tracking_remap_round(userdata, examine);
	return 0;
}

static int on_auto_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	auto_round(userdata, decide_unit_again, manager_foreach_pushed);
	return 0;
}

static int on_cgroup_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	int r;

	(void)s;
	(void)fd;
	(void)revents;
	r = cgroup_watch_dispatch(m->cw, &push_cgroup_watch_callbacks, m);
	if (r < 0)
		return log_error_errno(r, "cannot read cgroup events: %m");
	return 0;
}

static int on_units_rescan(sd_event_source *s, void *userdata)
{
	(void)s;
	manager_rescan(userdata);
	return 0;
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

/* The loop, and every source of the manager's own in it (disabled
 * until armed), each named for sd-event's logs. */
static int add_sources(struct manager *m)
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
	sigset_t mask;
	int r;

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
	if ((r = event_add_timer(m->event, &m->rescan_timer, "later-looks", on_later_looks, m)) < 0 ||
	    (r = event_add_timer(m->event, &m->full_rescan_timer, "full-rescan", on_full_rescan, m)) < 0 ||
	    (r = event_add_timer(m->event, &m->status_timer, "status", on_status_timer, m)) < 0 ||
	    (r = event_add_timer(m->event, &m->remap_timer, "remap", on_remap_timer, m)) < 0 ||
	    (r = event_add_timer(m->event, &m->cn_retry_timer, "connector-retry", on_connector_retry, m)) < 0 ||
	    (r = event_add_timer(m->event, &m->cn_batch_timer, "exec-batch", on_connector_batch, m)) < 0 ||
	    (r = event_add_timer(m->event, &m->auto_timer, "auto-sample", on_auto_timer, m)) < 0 ||
	    (r = event_add_timer(m->event, &m->push_retry, "push-retry", on_push_retry, m)) < 0 ||
	    (r = event_add_defer(m->event, &m->units_rescan, "units-rescan", on_units_rescan, m)) < 0)
		return r;
	/* Sends WATCHDOG=1 at half of WATCHDOG_USEC when that is set. */
	r = sd_event_set_watchdog(m->event, true);
	if (r < 0)
		return log_error_errno(r, "cannot set up the watchdog: %m");
	return 0;
}

int manager_new(const struct manager_args *args, struct manager **ret)
{
	_cleanup_(manager_freep) struct manager *m = NULL;
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
	hashmap_init(&m->pushed, hash_string, equal_string);
	hashmap_init(&m->classes, hash_string, equal_string);
	hashmap_init(&m->auto_estimates, hash_string, equal_string);
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

	r = add_sources(m);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(m);
	return 0;
}

/* The unit lookup's answers: the processes and cgroups that waited are
 * decided. */
static void on_unit_answered(void *userdata, const char *unit, const struct unit_waiter *w, size_t n)
{
	decide_cache_clear(userdata); /* the unit's cgroups may be others' now */
	for (size_t i = 0; i < n; i++)
		manager_decide_pid(userdata, w[i].pid, w[i].exec_ts);
	push_unit_answered(userdata, unit);
}

static void on_units_rescan_request(void *userdata)
{
	struct manager *m = userdata;

	(void)event_source_enable(m->units_rescan, SD_EVENT_ONESHOT);
}

/* The Reload method: unit files may have changed too, read them again
 * with the rest. */
static int on_bus_reload(void *userdata, struct policy *ret_rejected)
{
	struct manager *m = userdata;

	units_flush(m->units);
	return manager_reload(m, ret_rejected);
}

static void on_bus_connected(void *userdata, sd_bus *bus)
{
	struct manager *m = userdata;
	int r = units_set_bus(m->units, bus);

	if (r >= 0 && m->uw)
		r = unit_events_set_bus(m->uw, bus);
	if (r < 0)
		log_warning_errno(r, "cannot watch systemd on the bus: %m");
}

/* A container asked (execguard-oci-hook): decided again, its process and
 * the cgroups decided as a whole. */
static void decide_container_pid(void *userdata, pid_t pid)
{
	struct manager *m = userdata;

	decide_cache_clear(m); /* the container's cgroup is decided otherwise now */
	manager_decide_pid(m, pid, 0);
	push_decide_pid_cgroup(m, pid);
}

int manager_start_bus(struct manager *m)
{
	static const struct units_callbacks ucb = { on_unit_answered, on_units_rescan_request };
	static const struct bus_control ctl = { on_bus_reload, on_bus_connected };
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
		r = units_new(&ucb, m, &m->units);

	/* Units starting and stopping, for cgroups decided as a whole. */
	if (r >= 0 && push_possible(m))
		r = unit_events_new(&push_unit_events_callbacks, m, &m->uw);
	if (r >= 0) {
		manager_set_unit_settings(m, units_lookup, m->units);
		r = bus_new(m, m->units, &ctl, m, &m->bus);
	}
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
		.cgroup_root_fd = m->cgroup_root_fd,
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
	r = push_setup(m);
	if (r >= 0 && m->push)
		r = sd_event_add_io(m->event, &m->cw_source, cgroup_watch_fd(m->cw), EPOLLIN, on_cgroup_watch, m);
	if (r < 0)
		return log_error_errno(r, "cannot watch cgroups: %m");
	if (m->cw_source)
		(void)sd_event_source_set_description(m->cw_source, "cgroup-watch");
	if (!push_needs_processes(m))
		log_info("not listening to the proc connector: backend %s protects cgroups as a whole and no rule "
			 "names executables (MatchExe=); cgroups are told by %s", m->backend_ops->name,
			 m->push_tree ? "cgroupfs" : "systemd and cgroupfs");
	r = connector_set(m, push_needs_processes(m));
	if (r < 0)
		return r;

	/* STATUS= once a second when something changed; the remap timer
	 * runs while anything is tracked (armed by the first one). */
	return event_timer_set(m->status_timer, event_now(m->event) + STATUS_INTERVAL_USEC);
}

int manager_scan(struct manager *m)
{
	int r = push_needs_processes(m) ? scan_all(m) : 0;

	if (r < 0)
		return log_error_errno(r, "cannot scan processes: %m");
	r = push_scan(m);
	if (r < 0)
		return log_error_errno(r, "cannot scan cgroups: %m");
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
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e;

	if (!m)
		return NULL;
	/* The interface and the lookups first: they call into the rest. */
	m->bus = bus_free(m->bus);
	m->units = units_free(m->units);
	m->containers = containers_free(m->containers);
	/* Before the releases: it samples the running units once more. */
	m->prewarm = prewarm_free(m->prewarm);
	while ((e = hashmap_iter_next(&m->procs, &it))) {
		/* Each removes its own entry, and only that. */
		if (m->backend_ops)
			release_tracked(m, e->value);
		else
			tracked_free(m, e->value);
	}
	m->cw_source = sd_event_source_disable_unref(m->cw_source);
	m->push_retry = sd_event_source_disable_unref(m->push_retry);
	push_free(m);
	if (m->backend_ops)
		m->backend_ops->destroy(m->backend);
	auto_free(m);
	decide_cache_clear(m);
	hashmap_done(&m->classes);
	hashmap_done(&m->procs);
	sd_event_source_unref(m->auto_timer);
	sd_event_source_unref(m->units_rescan);
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
