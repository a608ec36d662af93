/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "backend.h"
#include "caps.h"
#include "cgroup.h"
#include "cnproc.h"
#include "hashmap.h"
#include "manager.h"
#include "maps.h"
#include "procfs.h"
#include "util.h"

#define RX_BUFFER_SIZE (64 * 1024)
#define MAX_EVENTS_PER_DATAGRAM 64
#define LATENCY_SAMPLES 16384
#define RESCAN_DEBOUNCE_USEC 10000
#define STATUS_INTERVAL_USEC 1000000

struct tracked {
	struct manager *m;
	pid_t pid;
	int pidfd;		   /* a pidfd, or its /proc/PID dir without pidfd_open */
	char *exe, *cgroup, *unit;
	char *source;		   /* what decided: rule name or unit file */
	struct rule_settings settings;
	unsigned stage;		   /* next look: index into rescan delays */
	uint64_t due_ns;
	struct tracked *prev, *next; /* in the queue of its stage */
	bool queued;
	bool seen;		   /* mark for the full rescan */
	uint64_t exec_bytes;	   /* file-backed exec mappings, last look */
	sd_event_source *exit_source; /* the pidfd turning readable */
};

struct stage_queue {
	struct tracked *head, *tail;
};

struct manager {
	struct manager_args args;
	sd_event *event;
	sd_event_source *cn_source, *rescan_timer, *full_rescan_timer, *status_timer;
	sd_event_source *cn_retry_timer; /* reopening the connector after an error */
	sd_event_source *cn_batch_timer; /* ExecBatchMSec: gathering exec events */
	sd_event_source *remap_timer;	 /* new mappings of long-running processes */
	size_t remap_cursor;
	int cn_fd;
	int cn_reopen_failures;
	bool cn_filtered;
	bool systemd;
	bool use_procmap_query;
	bool status_dirty;
	bool overflow_pending; /* lost events; rescan once the queue is empty */
	bool pin_by_proc_dir;  /* no pidfd_open (before 5.3, valgrind 3.19) */

	struct policy policy;
	enum backend_choice backend_choice;
	const struct backend_ops *backend_ops;
	void *backend;
	struct backend_env env;
	int proc_fd;
	int cgroup_root_fd;
	int state_dir_fd;
	char *cgroup_root;

	struct hashmap procs; /* pid -> struct tracked (protected ones only) */
	unit_settings_fn unit_settings; /* [X-ExecGuard] of a unit, or NULL */
	void *unit_settings_userdata;
	struct stage_queue stages[ELEMENTSOF(((struct daemon_settings *)0)->rescan_delays_ms)];

	uint64_t n_datagrams, n_exec, n_exit, n_decisions, n_protect_decisions;
	uint64_t n_overflows, n_full_rescans, n_looks, n_gone_early, n_backend_errors;
	uint64_t n_connector_reopens, n_examine_errors;
	/* Wake-ups by the connector socket and by the ExecBatchMSec timer:
	 * the daemon's own count of what batching saves. */
	uint64_t n_connector_wakeups, n_exec_batches;
	uint64_t n_unit_waits; /* decisions that waited for systemd's answer */
	int last_examine_error, last_relook_error;
	uint32_t latency_us[LATENCY_SAMPLES];
	uint64_t n_latency;
	uint8_t rx[RX_BUFFER_SIZE];
};

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Without pidfds the /proc/PID directory fd is the pin: lookups in it
 * fail once its process is reaped, and a zombie leader still has live
 * threads only while "Threads:" counts more than itself. */
static bool proc_dir_exited(int dir_fd)
{
	char buf[2048];
	_cleanup_close_ int fd = openat(dir_fd, "status", O_RDONLY | O_CLOEXEC);
	struct proc_status st;
	ssize_t n;

	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0)
		return true;
	/* A status we cannot read says nothing: alive as far as we know. */
	return proc_status_parse(buf, (size_t)n, &st) == 0 && proc_status_exited(&st);
}

/* The process behind a pin has exited (or the fd is bad). */
static bool pin_exited(const struct manager *m, int pin)
{
	struct pollfd p = { .fd = pin, .events = POLLIN };

	if (m->pin_by_proc_dir)
		return proc_dir_exited(pin);
	return poll(&p, 1, 0) != 0;
}

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

static void tracked_unqueue(struct manager *m, struct tracked *t)
{
	struct stage_queue *q;

	if (!t->queued)
		return;
	q = &m->stages[t->stage];
	if (t->prev)
		t->prev->next = t->next;
	else
		q->head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		q->tail = t->prev;
	t->prev = t->next = NULL;
	t->queued = false;
}

static void rearm_rescan_timer(struct manager *m);

/* Queue the look of the given stage. Unqueues first, from the queue of
 * the stage it is in now. */
static void tracked_queue(struct manager *m, struct tracked *t, unsigned stage, uint64_t base_ns)
{
	const struct daemon_settings *d = &m->policy.daemon;
	struct stage_queue *q;

	tracked_unqueue(m, t);
	t->stage = stage;
	if (t->stage >= d->n_rescan_delays)
		return;
	/* Every entry of a stage has the same delay, so appending keeps
	 * each queue sorted by due time. */
	t->due_ns = base_ns + (uint64_t)d->rescan_delays_ms[t->stage] * 1000000ULL;
	q = &m->stages[t->stage];
	t->prev = q->tail;
	t->next = NULL;
	if (q->tail)
		q->tail->next = t;
	else
		q->head = t;
	q->tail = t;
	t->queued = true;
	rearm_rescan_timer(m);
}

static void tracked_free(struct manager *m, struct tracked *t)
{
	if (!t)
		return;
	tracked_unqueue(m, t);
	hashmap_remove(&m->procs, INT_TO_KEY(t->pid));
	t->exit_source = sd_event_source_disable_unref(t->exit_source);
	closep(&t->pidfd);
	free(t->exe);
	free(t->cgroup);
	free(t->unit);
	free(t->source);
	free(t);
	m->status_dirty = true;
}

static void release_tracked(struct manager *m, struct tracked *t)
{
	m->backend_ops->release(m->backend, t->pid);
	tracked_free(m, t);
}

static void record_latency(struct manager *m, uint64_t exec_ts)
{
	uint64_t now = now_ns();
	uint64_t us = now > exec_ts ? (now - exec_ts) / 1000 : 0;

	m->latency_us[m->n_latency++ % LATENCY_SAMPLES] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* What we learn about a process, read through a /proc/PID fd that is
 * known to belong to the pidfd's process. */
struct look {
	pid_t pid;
	int pidfd;
	int proc_pid_fd;
	char *exe, *cgroup, *unit;
	/* The unit's own section, when it has one: the decision may point
	 * into it, so it lives as long as the look. */
	struct rule_settings unit_section;
	char *unit_source;
};

#define LOOK_INIT { .pidfd = -1, .proc_pid_fd = -1 }

static void look_done(struct look *l)
{
	closep(&l->pidfd);
	closep(&l->proc_pid_fd);
	free(l->exe);
	free(l->cgroup);
	free(l->unit);
	free(l->unit_source);
}

/* Read a process's cgroup and unit through a /proc/PID directory fd:
 * bound to that process, so a later process with the same PID cannot
 * answer. 0 on success, -ESRCH when it is gone (normal), -ENOENT for
 * processes without a cgroup2 path. */
static int look_at(struct manager *m, pid_t pid, struct look *l)
{
	char name[16], buf[4096];
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *big = NULL;
	const char *cg = buf;
	ssize_t n;
	size_t len;
	int r;

	*l = (struct look){ .pid = pid, .pidfd = -1, .proc_pid_fd = -1, .unit_section = { .protect = -1 } };
	snprintf(name, sizeof(name), "%d", (int)pid);
	l->proc_pid_fd = openat(m->proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->proc_pid_fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	/* On the hot path: one read into the stack is all it takes unless
	 * the hierarchy list is long. */
	fd = openat(l->proc_pid_fd, "cgroup", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf));
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	len = (size_t)n;
	if (len == sizeof(buf)) {
		r = read_file_at(l->proc_pid_fd, "cgroup", 1 << 16, &big, &len);
		if (r < 0)
			return r == -ENOENT || r == -ESRCH ? -ESRCH : r;
		cg = big;
	}
	r = cgroup_parse_proc_cgroup(cg, len, &l->cgroup);
	if (r < 0)
		return r;
	/* systemd's own rule on the path we hold: sd_pid_get_unit() would
	 * read /proc/PID/cgroup a second time on the hot path. */
	r = cgroup_path_to_unit(l->cgroup, &l->unit);
	if (r == -ENOMEM)
		return r;
	return 0;
}

/* Only needed when a rule looks at the executable. -ENOENT: a kernel
 * thread. */
static int look_at_exe(struct look *l)
{
	char exe[4096];
	ssize_t n;

	n = readlinkat(l->proc_pid_fd, "exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return errno == ENOENT ? -ENOENT : errno == ESRCH ? -ESRCH : -errno;
	exe[n] = '\0';
	l->exe = strdup(exe);
	return l->exe ? 0 : -ENOMEM;
}

/* Pin the process we looked at with a pidfd, only when we act on it.
 * The pidfd is opened first; a lookup in the directory fd succeeding
 * afterwards shows its process was still alive then, so the PID had
 * not been reused and the pidfd is that same process. */
static int look_pin(struct manager *m, struct look *l, int known_pidfd)
{
	if (known_pidfd >= 0)
		l->pidfd = fcntl(known_pidfd, F_DUPFD_CLOEXEC, 3);
	else if (m->pin_by_proc_dir)
		return (l->pidfd = fcntl(l->proc_pid_fd, F_DUPFD_CLOEXEC, 3)) < 0 ? -errno : 0;
	else
		l->pidfd = pidfd_open_(l->pid);
	if (l->pidfd < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	if (faccessat(l->proc_pid_fd, "cgroup", F_OK, 0) < 0)
		return -ESRCH;
	return 0;
}

static int protect_now(struct manager *m, struct tracked *t, struct look *l)
{
	struct exec_mappings maps = { 0 };
	struct protect_target target;
	int r;

	if (!m->backend_ops->cgroup_only) {
		r = maps_read(l->proc_pid_fd, &m->use_procmap_query, &maps);
		if (r < 0 && r != -ESRCH && r != -ENOENT)
			log_debug_errno(r, "cannot read mappings of pid %d: %m", (int)t->pid);
	}
	t->exec_bytes = exec_mappings_file_bytes(&maps);
	target = (struct protect_target){
		.pid = t->pid,
		.pidfd = t->pidfd,
		.proc_pid_fd = l->proc_pid_fd,
		.unit = t->unit,
		.cgroup = t->cgroup,
		.exe = t->exe,
		.maps = &maps,
		.settings = &t->settings,
	};
	r = m->backend_ops->protect(m->backend, &target);
	if (r < 0)
		m->n_backend_errors++;
	exec_mappings_clear(&maps);
	free(maps.items);
	m->n_looks++;
	return r;
}

static int on_pin_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct tracked *t = userdata;

	(void)s;
	(void)fd;
	(void)revents;
	release_tracked(t->m, t);
	return 0;
}

/* A pidfd turns readable when its whole process has exited: exact, and
 * it spares us every other process's exit event. */
static int watch_exit(struct manager *m, struct tracked *t)
{
	if (m->pin_by_proc_dir)
		return 0;
	return sd_event_add_io(m->event, &t->exit_source, t->pidfd, EPOLLIN, on_pin_exit, t);
}

static uint64_t remap_interval_usec(const struct manager *m)
{
	return (uint64_t)(m->policy.daemon.lock_recheck_sec ?: 10) * 1000000;
}

/* The later looks' timer (on_remap_timer) runs while anything is tracked. */
static void arm_remap_timer(struct manager *m)
{
	if (!m->remap_timer)
		return;
	(void)sd_event_source_set_time_relative(m->remap_timer, remap_interval_usec(m));
	(void)sd_event_source_set_enabled(m->remap_timer, SD_EVENT_ONESHOT);
}

static char *strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Reported once until a process is looked at fine again: an open file
 * limit reached, say, must not fill the journal. */
static void report_examine_error(struct manager *m, pid_t pid, int r, const char *tracked_look)
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
		log_event_errno(LOG_ERR, r, MID_LOOK_FAILED, &f,
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
static bool look_error_is_transient(int r)
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
	r = look_at(m, pid, l);
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
	if (d->protect && in.exe) {
		r = look_pin(m, l, t ? t->pidfd : -1);
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

/* A new entry for a process to protect, pinned by l's pidfd. */
static int track_new(struct manager *m, pid_t pid, struct look *l, struct tracked **ret)
{
	struct tracked *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	t->m = m;
	t->pid = pid;
	t->pidfd = TAKE_FD(l->pidfd);
	r = hashmap_put(&m->procs, INT_TO_KEY(pid), t);
	if (r < 0) {
		closep(&t->pidfd);
		free(t);
		return r;
	}
	r = watch_exit(m, t);
	if (r < 0) {
		tracked_free(m, t);
		return r;
	}
	if (m->remap_timer) {
		int on = SD_EVENT_OFF;

		if (sd_event_source_get_enabled(m->remap_timer, &on) >= 0 && on == SD_EVENT_OFF)
			arm_remap_timer(m);
	}
	*ret = t;
	return 0;
}

/* What the look found becomes the entry's: names, decision, settings. */
static void tracked_update(struct tracked *t, struct look *l, const struct policy_decision *d)
{
	free(t->exe);
	free(t->cgroup);
	free(t->unit);
	free(t->source);
	t->exe = TAKE_PTR(l->exe);
	t->cgroup = TAKE_PTR(l->cgroup);
	t->unit = TAKE_PTR(l->unit);
	t->source = strdup_or_null(d->protect_source);
	t->settings = d->settings;
	t->seen = true;
	t->m->status_dirty = true;
}

static void log_protected(struct manager *m, const struct tracked *t, uint64_t exec_ts, int r)
{
	struct log_fields f = LOG_FIELDS_INIT;

	f.unit = t->unit;
	f.cgroup = t->cgroup;
	f.exe = t->exe;
	f.pid = t->pid;
	f.backend = m->backend_ops->name;
	f.bytes = (long long)t->exec_bytes;
	if (exec_ts)
		f.latency_us = (long long)m->latency_us[(m->n_latency - 1) % LATENCY_SAMPLES];
	log_event(LOG_INFO, MID_PROCESS_PROTECTED, &f, "%s pid %d (%s) in %s%s%s: policy %s, backend %s%s%s",
		  m->args.dry_run || m->backend_ops->observe_only ? "would protect" : "protect", (int)t->pid,
		  t->exe, t->cgroup, t->unit ? ", unit " : "", strempty(t->unit), strna(t->source),
		  m->backend_ops->name, r < 0 ? ", failed: " : "", r < 0 ? strerror(-r) : "");
}

/* Decide about one process and act on the decision. exec_ts is the
 * kernel's exec timestamp, 0 when found by a scan. */
static int examine(struct manager *m, pid_t pid, uint64_t exec_ts)
{
	struct tracked *t = hashmap_get(&m->procs, INT_TO_KEY(pid));
	_cleanup_(look_done) struct look l = LOOK_INIT;
	enum look_outcome outcome;
	struct policy_decision d;
	bool is_new;
	int r;

	/* A reused PID: the process we tracked under it is gone, whatever
	 * order its pidfd and the new exec event come in. */
	if (t && pin_exited(m, t->pidfd)) {
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
			log_info("pid %d (%s) no longer protected: %s", (int)pid, strna(l.exe ?: t->exe),
				 d.protect_source);
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
	log_event(LOG_NOTICE, MID_OVERFLOW, NULL,
		  "rescanned /proc after lost connector events (%llu overflows so far)",
		  (unsigned long long)m->n_overflows);
	return 0;
}

static void schedule_full_rescan(struct manager *m)
{
	int enabled = SD_EVENT_OFF;
	uint64_t now;

	sd_event_source_get_enabled(m->full_rescan_timer, &enabled);
	if (enabled != SD_EVENT_OFF)
		return; /* one is pending; it will see everything */
	sd_event_now(m->event, CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(m->full_rescan_timer, now + RESCAN_DEBOUNCE_USEC);
	sd_event_source_set_enabled(m->full_rescan_timer, SD_EVENT_ONESHOT);
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
	if (pin_exited(m, t->pidfd))
		release_tracked(m, t);
	else
		tracked_queue(m, t, 0, now_ns());
}

static int on_connector(sd_event_source *s, int fd, uint32_t revents, void *userdata);

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

/* A socket, subscribed, watched. Exit events only without pidfds. */
static int connector_open(struct manager *m)
{
	_cleanup_close_ int fd = -1;
	int r;

	fd = cnproc_open(m->args.receive_buffer ?: m->policy.daemon.receive_buffer);
	if (fd < 0)
		return log_error_errno(fd, "cannot open the proc connector: %m%s",
				       fd == -EPROTONOSUPPORT ? " (kernel without CONFIG_PROC_EVENTS)" : "");
	r = cnproc_subscribe(fd, m->cn_filtered, m->pin_by_proc_dir);
	if (r < 0)
		return log_error_errno(r, "cannot subscribe to the proc connector: %m%s",
				       r == -EPERM ? " (needs CAP_NET_ADMIN)" : "");
	r = sd_event_add_io(m->event, &m->cn_source, fd, EPOLLIN, on_connector, m);
	if (r < 0)
		return log_error_errno(r, "cannot watch the proc connector: %m");
	m->cn_fd = TAKE_FD(fd);
	return 0;
}

static int on_connector_retry(sd_event_source *s, uint64_t usec, void *userdata);

/* After a socket error nothing says which events were lost: a new
 * socket, then a rescan once it listens. Retried every second while the
 * kernel refuses, reported once. */
static void connector_reopen(struct manager *m)
{
	m->cn_source = sd_event_source_disable_unref(m->cn_source);
	closep(&m->cn_fd);
	m->status_dirty = true;
	if (connector_open(m) < 0) {
		if (m->cn_reopen_failures++ == 0)
			log_error("proc connector unavailable: retrying every second; processes started "
				  "meanwhile are found by the rescan after it is back");
		if (!m->cn_retry_timer)
			(void)sd_event_add_time_relative(m->event, &m->cn_retry_timer, CLOCK_MONOTONIC,
							 1000000, 100000, on_connector_retry, m);
		else {
			(void)sd_event_source_set_time_relative(m->cn_retry_timer, 1000000);
			(void)sd_event_source_set_enabled(m->cn_retry_timer, SD_EVENT_ONESHOT);
		}
		return;
	}
	if (m->cn_reopen_failures)
		log_notice("proc connector back after %d failed attempt%s", m->cn_reopen_failures,
			   m->cn_reopen_failures == 1 ? "" : "s");
	m->cn_reopen_failures = 0;
	m->overflow_pending = false;
	m->n_connector_reopens++;
	schedule_full_rescan(m);
}

static int on_connector_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	connector_reopen(userdata);
	return 0;
}

static int on_connector_batch(sd_event_source *s, uint64_t usec, void *userdata);

/* The number of datagrams taken, or -1 when the socket was replaced. */
static int connector_drain(struct manager *m, int fd)
{
	struct cnproc_event ev[MAX_EVENTS_PER_DATAGRAM];
	int round;

	/* Drain what is queued, but let other sources run between bursts. */
	for (round = 0; round < 1024; round++) {
		ssize_t n = cnproc_receive(fd, m->rx, sizeof(m->rx));
		int k;

		if (n == -EAGAIN || n == -EINTR) {
			/* Netlink reports ENOBUFS once per congestion and drops
			 * silently until the queue has run empty, which is now:
			 * only a rescan from here on sees every lost process. */
			if (n == -EAGAIN && m->overflow_pending) {
				m->overflow_pending = false;
				schedule_full_rescan(m);
			}
			return round;
		}
		if (n == -ENOBUFS) {
			if (m->n_overflows++ == 0 || m->n_overflows % 100 == 0)
				log_event(LOG_WARNING, MID_OVERFLOW, NULL,
					  "proc connector overflow: events lost (%llu times so far); rescanning /proc",
					  (unsigned long long)m->n_overflows);
			m->overflow_pending = true;
			m->status_dirty = true;
			continue;
		}
		if (n == -EPERM)
			continue; /* not from the kernel: ignore */
		if (n < 0) {
			log_error_errno((int)n, "proc connector receive failed: %m; opening a new socket and rescanning");
			connector_reopen(m);
			return -1;
		}
		m->n_datagrams++;
		k = cnproc_decode(m->rx, (size_t)n, ev, ELEMENTSOF(ev));
		if (k < 0) {
			log_debug_errno(k, "malformed proc connector datagram: %m");
			continue;
		}
		manager_process_events(m, ev, (size_t)k);
	}
	return round;
}

static int arm_batch_timer(struct manager *m)
{
	uint64_t usec = (uint64_t)m->policy.daemon.exec_batch_ms * 1000;
	int r;

	if (!usec)
		return -EINVAL;
	if (!m->cn_batch_timer)
		r = sd_event_add_time_relative(m->event, &m->cn_batch_timer, CLOCK_MONOTONIC, usec, 1,
					       on_connector_batch, m);
	else
		r = sd_event_source_set_time_relative(m->cn_batch_timer, usec);
	if (r >= 0)
		r = sd_event_source_set_enabled(m->cn_batch_timer, SD_EVENT_ONESHOT);
	return r;
}

/* While events keep coming, the socket stays unwatched and this timer
 * takes them every ExecBatchMSec: one wake-up per batch. A batch that
 * finds nothing goes back to watching the socket. */
static int on_connector_batch(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	int n;

	(void)s;
	(void)usec;
	if (!m->cn_source)
		return 0; /* reopening: the rescan after it sees everything */
	m->n_exec_batches++;
	n = connector_drain(m, m->cn_fd);
	if (n < 0)
		return 0; /* a new socket, watched */
	if (n == 0 || arm_batch_timer(m) < 0)
		(void)sd_event_source_set_enabled(m->cn_source, SD_EVENT_ON);
	return 0;
}

/* With ExecBatchMSec, the first event of a batch stops the socket watch
 * and the events of the next milliseconds are taken in one go: fewer
 * wake-ups, and a process that exited meanwhile costs one failed open
 * instead of a pin, a watch and a release. */
static int on_connector(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	if (revents & (EPOLLERR | EPOLLHUP) && !(revents & EPOLLIN)) {
		log_error("proc connector socket failed (poll events 0x%x); opening a new socket and rescanning",
			  revents);
		connector_reopen(m);
		return 0;
	}
	m->n_connector_wakeups++;
	if (m->policy.daemon.exec_batch_ms && arm_batch_timer(m) >= 0) {
		(void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
		return 0;
	}
	/* At once, or no timer: take the events now rather than lose them. */
	(void)connector_drain(m, fd);
	return 0;
}

static void rearm_rescan_timer(struct manager *m)
{
	uint64_t due = UINT64_MAX;

	for (size_t i = 0; i < ELEMENTSOF(m->stages); i++)
		if (m->stages[i].head && m->stages[i].head->due_ns < due)
			due = m->stages[i].head->due_ns;
	if (due == UINT64_MAX) {
		sd_event_source_set_enabled(m->rescan_timer, SD_EVENT_OFF);
		return;
	}
	sd_event_source_set_time(m->rescan_timer, due / 1000);
	sd_event_source_set_enabled(m->rescan_timer, SD_EVENT_ONESHOT);
}

/* A later look at a protected process: its libraries are mapped now, or
 * it was moved to another cgroup (no event tells: decided again).
 * false: t is not to be used any more (gone and released, or decided
 * again, which may have released it). */
static bool relook(struct manager *m, struct tracked *t)
{
	struct look l;
	pid_t pid = t->pid;
	int r;

	/* The pidfd pins the process: if it exited, a new one with its PID
	 * must not be mistaken for it. */
	if (pin_exited(m, t->pidfd)) {
		release_tracked(m, t);
		return false;
	}
	r = look_at(m, t->pid, &l);
	if (r == 0 && pin_exited(m, t->pidfd))
		r = -ESRCH;
	if (r < 0) {
		look_done(&l);
		if (look_error_is_transient(r)) {
			report_examine_error(m, pid, r, "a later look");
			return true;
		}
		release_tracked(m, t);
		return false;
	}
	m->last_relook_error = 0;
	if (!streq_ptr(l.cgroup, t->cgroup)) {
		log_info("pid %d (%s) moved from %s to %s: deciding again", (int)pid, strna(t->exe),
			 strna(t->cgroup), strna(l.cgroup));
		look_done(&l);
		(void)examine(m, pid, 0);
		return false;
	}
	protect_now(m, t, &l);
	look_done(&l);
	return true;
}

static void look_again(struct manager *m, struct tracked *t)
{
	if (relook(m, t))
		tracked_queue(m, t, t->stage + 1, now_ns());
}

/* Long-running processes map more later (dlopen, plugins) and may be
 * moved to another cgroup: every LockRecheckSec, those done with their
 * later looks are looked at again, at most REMAP_BATCH of them per round,
 * round robin. With a cgroup-only backend that is one read of
 * /proc/PID/cgroup each. */
#define REMAP_BATCH 256

static int on_remap_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	struct tracked *batch[REMAP_BATCH];
	struct hashmap_entry *e = NULL;
	size_t n = 0, i = m->remap_cursor, visited = 0;

	(void)s;
	(void)usec;
	if (i >= m->procs.n_buckets)
		i = 0;
	/* Collect first: a look may release (and free) its process. */
	while (n < REMAP_BATCH && visited < m->procs.n_items && (e = hashmap_next(&m->procs, &i, e))) {
		struct tracked *t = e->value;

		visited++;
		if (!t->queued)
			batch[n++] = t;
		if (!e->next)
			m->remap_cursor = i + 1; /* whole buckets only */
	}
	if (!e || m->remap_cursor >= m->procs.n_buckets)
		m->remap_cursor = 0;
	for (size_t k = 0; k < n; k++)
		relook(m, batch[k]);
	/* Nothing tracked: idle until examine() arms it again. */
	if (m->procs.n_items)
		arm_remap_timer(m);
	return 0;
}

static int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	uint64_t now = now_ns();

	(void)s;
	(void)usec;
	for (size_t i = 0; i < ELEMENTSOF(m->stages); i++) {
		struct tracked *t;

		while ((t = m->stages[i].head) && t->due_ns <= now + 1000000ULL) {
			tracked_unqueue(m, t);
			look_again(m, t);
		}
	}
	rearm_rescan_timer(m);
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void latency_percentiles(struct manager *m, uint32_t *p50, uint32_t *p99, uint32_t *max)
{
	size_t n = m->n_latency < LATENCY_SAMPLES ? m->n_latency : LATENCY_SAMPLES;
	uint32_t *copy;

	*p50 = *p99 = *max = 0;
	if (!n)
		return;
	copy = malloc(n * sizeof(uint32_t));
	if (!copy)
		return;
	memcpy(copy, m->latency_us, n * sizeof(uint32_t));
	qsort(copy, n, sizeof(uint32_t), cmp_u32);
	*p50 = copy[n / 2];
	*p99 = copy[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
	*max = copy[n - 1];
	free(copy);
}

static void log_stats(struct manager *m, const char *when)
{
	struct rusage ru;
	uint32_t p50, p99, max;
	double cpu_us;

	getrusage(RUSAGE_SELF, &ru);
	cpu_us = (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
		 (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
	latency_percentiles(m, &p50, &p99, &max);
	log_notice("stats (%s): exec events %llu, exit events %llu, decisions %llu, protect decisions %llu, later looks %llu, gone before look %llu, overflows %llu, full rescans %llu, backend errors %llu, exec-to-decision p50 %u us p99 %u us max %u us over %llu, cpu %.0f us, maxrss %ld KiB, protected now %zu, connector wake-ups %llu, exec batches %llu, waits for unit sections %llu",
		   when, (unsigned long long)m->n_exec, (unsigned long long)m->n_exit,
		   (unsigned long long)m->n_decisions, (unsigned long long)m->n_protect_decisions,
		   (unsigned long long)m->n_looks, (unsigned long long)m->n_gone_early,
		   (unsigned long long)m->n_overflows, (unsigned long long)m->n_full_rescans,
		   (unsigned long long)m->n_backend_errors, p50, p99, max,
		   (unsigned long long)(m->n_latency < LATENCY_SAMPLES ? m->n_latency : LATENCY_SAMPLES),
		   cpu_us, ru.ru_maxrss, m->procs.n_items, (unsigned long long)m->n_connector_wakeups,
		   (unsigned long long)m->n_exec_batches, (unsigned long long)m->n_unit_waits);
}

static void update_status(struct manager *m, const char *prefix)
{
	char backend[256];

	m->backend_ops->describe(m->backend, backend, sizeof(backend));
	sd_notifyf(false, "STATUS=%s%sbackend %s%s: %zu processes protected; %s; %llu execs seen, %llu overflows",
		   strempty(prefix), prefix ? " " : "", m->backend_ops->name,
		   m->args.dry_run ? " (dry run)" : "", m->procs.n_items, backend,
		   (unsigned long long)m->n_exec, (unsigned long long)m->n_overflows);
	m->status_dirty = false;
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	if (m->status_dirty)
		update_status(m, NULL);
	sd_event_source_set_time(s, usec + STATUS_INTERVAL_USEC);
	return 0;
}

static int load_policy_into(struct manager *m, struct policy *p)
{
	policy_init(p);
	return policy_load(p, m->args.config_file, m->args.dropin_dir, true);
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
	f.backend = m->backend_ops->name;
	log_event(LOG_INFO, MID_POLICY_LOADED, &f, "policy reloaded: %zu rule%s from %zu file%s",
		  m->policy.n_rules, m->policy.n_rules == 1 ? "" : "s", m->policy.n_files,
		  m->policy.n_files == 1 ? "" : "s");
	scan_all(m);
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
			.exec_bytes = t->exec_bytes,
		};
		int r = fn(&p, userdata);

		if (r != 0)
			return r;
	}
	return 0;
}

void manager_get_stats(struct manager *m, struct manager_stats *ret)
{
	*ret = (struct manager_stats){
		.backend = m->backend_ops ? m->backend_ops->name : "none",
		.dry_run = m->args.dry_run,
		.processes_protected = m->procs.n_items,
		.exec_events = m->n_exec,
		.exit_events = m->n_exit,
		.decisions = m->n_decisions,
		.overflows = m->n_overflows,
		.full_rescans = m->n_full_rescans,
		.backend_errors = m->n_backend_errors,
	};
	latency_percentiles(m, &ret->latency_p50_us, &ret->latency_p99_us, &ret->latency_max_us);
}

int manager_explain(struct manager *m, pid_t pid, struct manager_explanation *ret)
{
	struct look l;
	struct policy_input in;
	int r;

	*ret = (struct manager_explanation){ .pid = pid };
	r = look_at(m, pid, &l);
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
	policy_decide(&m->policy, &in, &ret->decision);
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

static int on_stats(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	(void)s;
	(void)si;
	log_stats(m, "on request");
	if (m->backend_ops->log_stats)
		m->backend_ops->log_stats(m->backend);
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

int manager_new(const struct manager_args *args, struct manager **ret)
{
	struct manager *m;
	sigset_t mask;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->args = *args;
	m->cn_fd = m->proc_fd = m->cgroup_root_fd = m->state_dir_fd = -1;
	m->use_procmap_query = true;
	m->systemd = sd_booted() > 0;
	/* A pidfd names a process of this machine's /proc: with a proc root
	 * elsewhere (a test's fake tree) the /proc/PID directory is the pin. */
	m->pin_by_proc_dir = args->proc_root && !streq(args->proc_root, "/proc");
	raise_nofile_limit();
	hashmap_init(&m->procs, hash_int, equal_int);
	policy_init(&m->policy);

	m->proc_fd = open(args->proc_root ?: "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m->proc_fd < 0) {
		r = log_error_errno(-errno, "cannot open %s: %m", args->proc_root ?: "/proc");
		goto fail;
	}
	if (args->cgroup_root) {
		m->cgroup_root = strdup(args->cgroup_root);
	} else {
		r = cgroup2_find_mount(NULL, &m->cgroup_root);
		if (r < 0) {
			log_error_errno(r, "no cgroup2 file system is mounted (looked in /proc/self/mountinfo): %m");
			goto fail;
		}
	}
	if (!m->cgroup_root) {
		r = -ENOMEM;
		goto fail;
	}
	m->cgroup_root_fd = open(m->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m->cgroup_root_fd < 0) {
		r = log_error_errno(-errno, "cannot open cgroup root %s: %m", m->cgroup_root);
		goto fail;
	}

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
		goto fail;
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if ((r = sd_event_add_signal(m->event, NULL, SIGHUP, on_reload, m)) < 0 ||
	    (r = sd_event_add_signal(m->event, NULL, SIGTERM, on_terminate, m)) < 0 ||
	    (r = sd_event_add_signal(m->event, NULL, SIGINT, on_terminate, m)) < 0 ||
	    (r = sd_event_add_signal(m->event, NULL, SIGUSR1, on_stats, m)) < 0)
		goto fail;
	r = sd_event_add_time(m->event, &m->rescan_timer, CLOCK_MONOTONIC, UINT64_MAX, 1000,
			      on_rescan_timer, m);
	if (r < 0)
		goto fail;
	sd_event_source_set_enabled(m->rescan_timer, SD_EVENT_OFF);
	r = sd_event_add_time(m->event, &m->full_rescan_timer, CLOCK_MONOTONIC, UINT64_MAX, 1000,
			      on_full_rescan, m);
	if (r < 0)
		goto fail;
	sd_event_source_set_enabled(m->full_rescan_timer, SD_EVENT_OFF);
	/* Sends WATCHDOG=1 at half of WATCHDOG_USEC when that is set. */
	r = sd_event_set_watchdog(m->event, true);
	if (r < 0)
		goto fail;
	*ret = m;
	return 0;
fail:
	manager_free(m);
	return r;
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
	f.backend = m->backend_ops->name;
	log_event(LOG_INFO, MID_BACKEND, &f, "backend %s%s, cgroup2 at %s", m->backend_ops->name,
		  m->args.dry_run ? " (dry run: nothing is changed)" : "", m->cgroup_root);
	return 0;
}

int manager_start_events(struct manager *m)
{
	struct utsname u;
	int r;

	/* Linux 5.3+ pins processes with pidfds; older kernels (and
	 * valgrind 3.19) need the /proc directory and exit events. */
	r = pidfd_open_(getpid());
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

	r = sd_event_add_time_relative(m->event, &m->status_timer, CLOCK_MONOTONIC,
				       STATUS_INTERVAL_USEC, 100000, on_status_timer, m);
	if (r < 0)
		return r;
	sd_event_source_set_enabled(m->status_timer, SD_EVENT_ON);
	r = sd_event_add_time_relative(m->event, &m->remap_timer, CLOCK_MONOTONIC, remap_interval_usec(m), 100000,
				       on_remap_timer, m);
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
	update_status(m, NULL);
	return 0;
}

int manager_run(struct manager *m)
{
	int r;

	sd_notify(false, "READY=1");
	log_info("ready: %zu processes protected after the initial scan", m->procs.n_items);
	r = sd_event_loop(m->event);
	log_stats(m, "at exit");
	return r;
}

struct manager *manager_free(struct manager *m)
{
	struct hashmap_entry *e;
	size_t i;

	if (!m)
		return NULL;
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
	hashmap_done(&m->procs);
	sd_event_source_unref(m->cn_source);
	sd_event_source_unref(m->cn_retry_timer);
	sd_event_source_unref(m->cn_batch_timer);
	sd_event_source_unref(m->remap_timer);
	sd_event_source_unref(m->rescan_timer);
	sd_event_source_unref(m->full_rescan_timer);
	sd_event_source_unref(m->status_timer);
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
