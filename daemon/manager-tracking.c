/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The protected processes: their entries, the exit watch on each pin,
 * the queues of later looks after an exec (ld.so maps the libraries
 * after it), and the round-robin look at long-running ones. */
#include "manager-tracking.h"
#include "maps.h"

static void rearm_rescan_timer(struct manager *m);

static char *strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
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

void tracked_unqueue(struct manager *m, struct tracked *t)
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

/* Queue the look of the given stage. Unqueues first, from the queue of
 * the stage it is in now. */
void tracked_queue(struct manager *m, struct tracked *t, unsigned stage, uint64_t base_ns)
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

void tracked_free(struct manager *m, struct tracked *t)
{
	if (!t)
		return;
	tracked_unqueue(m, t);
	prewarm_process_end(m->prewarm, t->pid);
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

void release_tracked(struct manager *m, struct tracked *t)
{
	m->backend_ops->release(m->backend, t->pid);
	tracked_free(m, t);
}

int protect_now(struct manager *m, struct tracked *t, struct look *l)
{
	struct exec_mappings maps = { 0 };
	struct protect_target target;
	int r;

	if (!m->backend_ops->cgroup_only) {
		/* The whole images: the lock backend keeps every page the
		 * program uses of the files it maps executable. */
		r = maps_read_select(l->proc_pid_fd, &m->use_procmap_query, MAPS_IMAGES, &maps);
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
	int r;

	if (m->pin_by_proc_dir)
		return 0;
	r = sd_event_add_io(m->event, &t->exit_source, t->pidfd, EPOLLIN, on_pin_exit, t);
	if (r >= 0)
		(void)sd_event_source_set_description(t->exit_source, "pin-exit");
	return r;
}

uint64_t remap_interval_usec(const struct manager *m)
{
	return (uint64_t)(m->policy.daemon.lock_recheck_sec ?: 10) * 1000000;
}

/* The later looks' timer (on_remap_timer) runs while anything is tracked. */
static void arm_remap_timer(struct manager *m)
{
	(void)event_timer_set(m->remap_timer, event_now(m->event) + remap_interval_usec(m));
}

/* A new entry for a process to protect, pinned by l's pidfd. */
int track_new(struct manager *m, pid_t pid, struct look *l, struct tracked **ret)
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
void tracked_update(struct tracked *t, struct look *l, const struct policy_decision *d)
{
	free(t->exe);
	free(t->cgroup);
	free(t->unit);
	free(t->source);
	t->exe = TAKE_PTR(l->exe);
	t->cgroup = TAKE_PTR(l->cgroup);
	t->unit = TAKE_PTR(l->unit);
	t->source = strdup_or_null(d->protect_source);
	t->source_kind = d->protect_kind;
	t->settings = d->settings;
	t->by_auto = d->watch;
	t->seen = true;
	t->m->status_dirty = true;
}

static void rearm_rescan_timer(struct manager *m)
{
	uint64_t due = UINT64_MAX;

	for (size_t i = 0; i < ELEMENTSOF(m->stages); i++)
		if (m->stages[i].head && m->stages[i].head->due_ns < due)
			due = m->stages[i].head->due_ns;
	(void)event_timer_set(m->rescan_timer, due == UINT64_MAX ? USEC_OFF : due / 1000);
}

/* A later look at a protected process: its libraries are mapped now, or
 * it was moved to another cgroup (no event tells: decided again).
 * false: t is not to be used any more (gone and released, or decided
 * again, which may have released it). */
static bool relook(struct manager *m, struct tracked *t, tracked_decide_fn decide)
{
	struct look l;
	pid_t pid = t->pid;
	int r;

	/* The pidfd pins the process: if it exited, a new one with its PID
	 * must not be mistaken for it. */
	if (pin_exited(t->pidfd, m->pin_by_proc_dir)) {
		release_tracked(m, t);
		return false;
	}
	r = look_at(m->proc_fd, t->pid, &l);
	if (r == 0 && pin_exited(t->pidfd, m->pin_by_proc_dir))
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
		struct log_fields f = LOG_FIELDS_INIT;

		f.pid = pid;
		f.exe = t->exe;
		f.cgroup = l.cgroup;
		log_event(LOG_INFO, MID_PROCESS_MOVED, &f, "pid %d (%s) moved from %s to %s: deciding again",
			  (int)pid, strna(t->exe), strna(t->cgroup), strna(l.cgroup));
		look_done(&l);
		(void)decide(m, pid, 0);
		return false;
	}
	protect_now(m, t, &l);
	look_done(&l);
	return true;
}

static void look_again(struct manager *m, struct tracked *t, tracked_decide_fn decide)
{
	if (relook(m, t, decide))
		tracked_queue(m, t, t->stage + 1, now_ns());
}

/* Long-running processes map more later (dlopen, plugins) and may be
 * moved to another cgroup: every LockRecheckSec, those done with their
 * later looks are looked at again, at most REMAP_BATCH of them per round,
 * round robin. With a cgroup-only backend that is one read of
 * /proc/PID/cgroup each. */
#define REMAP_BATCH 256

void tracking_remap_round(struct manager *m, tracked_decide_fn decide)
{
	struct tracked *batch[REMAP_BATCH];
	struct hashmap_entry *e = NULL;
	size_t n = 0, i = m->remap_cursor, visited = 0;

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
		relook(m, batch[k], decide);
	/* Nothing tracked: idle until track_new() arms it again. */
	if (m->procs.n_items)
		arm_remap_timer(m);
}

void tracking_run_due(struct manager *m, tracked_decide_fn decide)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < ELEMENTSOF(m->stages); i++) {
		struct tracked *t;

		while ((t = m->stages[i].head) && t->due_ns <= now + 1000000ULL) {
			tracked_unqueue(m, t);
			look_again(m, t, decide);
		}
	}
	rearm_rescan_timer(m);
}

