/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lock backend, for kernels without memory.exec_protect: keeps the
 * resident pages of protected processes' exec file mappings mlock()ed,
 * page precisely, within budgets, and gives them back under memory
 * pressure. The decisions are lockset.c's; this file does the I/O (scans,
 * mlock()) and owns the re-check timer. backend-lock-pressure.c gives
 * back, backend-lock-report.c reports (see backend-lock-state.h).
 *
 * What is locked: the whole program, not only its text. For every file a
 * protected process maps executable, each of that file's mappings in the
 * process (the r-- head with symbol tables and relocations, r-x text,
 * .rodata, relro/.data) is a range; of it the pages that are resident
 * (mincore() on the daemon's own read-only shared mapping of the file)
 * and mapped by a protected process as the file's page (present and
 * file-backed in /proc/PID/pagemap: a private page already copied on
 * write is the process's anonymous memory, not the file's, and is left
 * alone), so not the read-ahead around a fault that never ran. Locking
 * the daemon's own read-only mapping never copies or touches the
 * process's memory. Without a readable pagemap, resident pages are taken;
 * so are they for a range only kept (LockKeepSec=: no process maps it
 * to ask). Data files and anonymous memory are never ranges. */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backend-lock-state.h"
#include "backend-lock.h"
#include "caps.h"
#include "log.h"
#include "procfs.h"
#include "residency.h"

static unsigned recheck_sec(const struct daemon_settings *s)
{
	return s->lock_recheck_sec ? s->lock_recheck_sec : DEFAULT_RECHECK_SEC;
}

static uint64_t resolve_cap(const struct budget *b, uint64_t mem_total)
{
	uint64_t v = budget_resolve(b, mem_total);

	return v == UINT64_MAX ? 0 : v;
}

static void range_unmap(struct lock_range *r, void *userdata _unused_)
{
	/* munmap() drops our locks on it too. */
	residency_unmap(r->map, r->key.length);
	r->map = NULL;
}

static const struct lockset_ops lock_ops = { .range_free = range_unmap };

static int cmp_key_ptr(const struct lock_key *a, const struct lock_key *b)
{
	return lock_key_compare(a, b);
}

static int cmp_user(const void *x, const void *y)
{
	const struct map_user *a = x, *b = y;

	return cmp_key_ptr(&a->m->key, &b->m->key);
}

static void users_rebuild(struct lock_backend *b)
{
	size_t n = 0;
	struct map_user *u;

	if (!b->users_dirty)
		return;
	for (size_t i = 0; i < b->n_procs; i++)
		n += b->procs[i]->n_maps;
	u = realloc(b->users, (n ? n : 1) * sizeof(*u));
	if (!u)
		return; /* keep dirty: the next scan tries again */
	b->users = u;
	b->n_users = 0;
	for (size_t i = 0; i < b->n_procs; i++)
		for (size_t j = 0; j < b->procs[i]->n_maps; j++)
			b->users[b->n_users++] = (struct map_user){ &b->procs[i]->maps[j], b->procs[i] };
	qsort(b->users, b->n_users, sizeof(*b->users), cmp_user);
	b->users_dirty = false;
}

/* OR the pagemap present bits of one process's mapping into b->mapped. */
static int read_present(struct lock_backend *b, const struct map_user *u, size_t n_pages)
{
	enum { CHUNK = 512 };
	uint64_t first = u->m->start / b->page_size;

	if (!b->pm) {
		b->pm = malloc(CHUNK * sizeof(uint64_t));
		if (!b->pm)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n_pages;) {
		size_t want = n_pages - i < CHUNK ? n_pages - i : CHUNK;
		ssize_t got = pread(u->p->pagemap_fd, b->pm, want * sizeof(uint64_t),
				    (off_t)((first + i) * sizeof(uint64_t)));

		if (got < 0)
			return -errno;
		if (got == 0)
			return -ESRCH; /* that address space is gone (exit, exec) */
		/* Present and the file's page: not a private copy made on write. */
		lock_pages_from_pagemap(b->pm, (size_t)got / sizeof(uint64_t), b->mapped + i);
		i += (size_t)got / sizeof(uint64_t);
	}
	return 0;
}

/* Which pages of r a protected process has mapped, into b->mapped: true
 * when that is known; false when some process mapping the range cannot
 * be asked (then every resident page counts). */
static bool find_mapped(struct lock_backend *b, struct lock_range *r)
{
	size_t lo = 0, hi, n;
	bool any = false;

	users_rebuild(b);
	if (b->users_dirty)
		return false;
	hi = b->n_users;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_key_ptr(&b->users[mid].m->key, &r->key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == b->n_users || cmp_key_ptr(&b->users[lo].m->key, &r->key) != 0)
		return false;
	if (r->n_pages > b->mapped_size) {
		unsigned char *nm = realloc(b->mapped, r->n_pages);

		if (!nm)
			return false;
		b->mapped = nm;
		b->mapped_size = r->n_pages;
	}
	memset(b->mapped, 0, r->n_pages);
	for (n = lo; n < b->n_users && cmp_key_ptr(&b->users[n].m->key, &r->key) == 0; n++) {
		const struct map_user *u = &b->users[n];

		if (u->p->pagemap_fd < 0)
			return false;
		int k = read_present(b, u, r->n_pages);

		if (k == 0)
			any = true;
		else if (k == -ENOMEM)
			return false;
	}
	return any;
}

static int scan_range(struct lock_backend *b, struct lock_range *r)
{
	int k;

	if (r->state != LOCK_RANGE_OPEN || !r->map)
		return 0;
	if (r->n_pages > b->vec_size) {
		unsigned char *nv = realloc(b->vec, r->n_pages);

		if (!nv)
			return -ENOMEM;
		b->vec = nv;
		b->vec_size = r->n_pages;
	}
	k = residency_mincore(r->map, r->key.length, b->vec);
	if (k < 0)
		return k;
	/* Resident and used by a protected process, or kept (LockKeepSec=). */
	lockset_range_update_used(r, b->vec, find_mapped(b, r) ? b->mapped : NULL);
	return 0;
}

static int do_recheck(struct lock_backend *b)
{
	size_t n;
	unsigned stall, window, recover;
	int r = 0;

	pressure_params(&b->settings, &stall, &window, &recover);
	/* A ceiling stays while memory is short (under twice the reserve):
	 * retaking would only be given back again. */
	if (lockset_pressure_ceiling(b->ls) != UINT64_MAX && meminfo_available(b->proc_fd, &b->avail) >= 0 &&
	    b->avail < 2 * reserve_of(&b->settings, b->mem_total))
		lockset_pressure_hold(b->ls, NULL, lock_now_usec(b));
	for (size_t i = 0; i < b->n_watches; i++) {
		struct unit_watch *w = b->watches[i];
		struct lock_unit *u = lockset_find_unit(b->ls, w->unit);

		if (!u || u->ceiling == UINT64_MAX)
			continue;
		unit_room(b, w);
		if (w->room.limit != UINT64_MAX && w->room.headroom < 2 * w->reserve)
			lockset_pressure_hold(b->ls, w->unit, lock_now_usec(b));
	}
	/* What exited processes left is kept only so long. */
	(void)lockset_expire(b->ls, lock_now_usec(b));
	unit_watches_prune(b);
	if (lockset_pressure_tick(b->ls, lock_now_usec(b), (uint64_t)recover * 1000000) && b->ceiling_logged) {
		struct log_fields f = LOG_FIELDS_INIT;

		f.backend = "lock";
		log_event(LOG_NOTICE, MID_LOCK_RELOCKED, &f,
			  "enough memory for %us: locking text again within the budget", recover);
		b->ceiling_logged = false;
	}
	/* Counted after the expiry above, which removes ranges. */
	n = lockset_n_ranges(b->ls);
	for (size_t i = 0; i < n; i++) {
		int k = scan_range(b, lockset_range(b->ls, i));

		if (k < 0 && r == 0)
			r = k;
	}
	plan_and_apply(b);
	/* Also without PSI events: memory can run short quietly. */
	look_at_memory(b);
	log_summary(b, false);
	return r;
}

static void arm_recheck(struct lock_backend *b)
{
	if (!b->recheck)
		return;
	(void)event_timer_set(b->recheck, lock_now_usec(b) + (uint64_t)recheck_sec(&b->settings) * 1000000);
}

/* Armed only while there is something to look at (or a ceiling to lift):
 * an idle daemon does not wake up for nothing. */
static int on_recheck(sd_event_source *s _unused_, uint64_t usec _unused_, void *userdata)
{
	struct lock_backend *b = userdata;

	(void)do_recheck(b);
	if (lockset_n_ranges(b->ls) > 0 || lockset_pressure_ceiling(b->ls) != UINT64_MAX)
		arm_recheck(b);
	return 0;
}

static int setup_sources(struct lock_backend *b)
{
	int r;

	if (!b->event)
		return 0;
	if (!b->recheck) {
		r = sd_event_add_time_relative(b->event, &b->recheck, CLOCK_MONOTONIC,
					       (uint64_t)recheck_sec(&b->settings) * 1000000, 100000,
					       on_recheck, b);
		if (r < 0)
			return r;
		(void)sd_event_source_set_description(b->recheck, "lock-recheck");
	} else {
		arm_recheck(b);
	}

	setup_pressure_triggers(b);
	return 0;
}


static void proc_entry_free(struct proc_entry *p)
{
	if (!p)
		return;
	closep(&p->pagemap_fd);
	free(p->maps);
	free(p);
}

static struct proc_entry *proc_entry_find(struct lock_backend *b, pid_t pid, size_t *ret_i)
{
	for (size_t i = 0; i < b->n_procs; i++)
		if (b->procs[i]->pid == pid) {
			if (ret_i)
				*ret_i = i;
			return b->procs[i];
		}
	return NULL;
}

/* Remember where pid maps its ranges, and open its pagemap once. */
static void proc_entry_set(struct lock_backend *b, const struct protect_target *t, const struct lock_mapping *lm,
			   const struct exec_mapping *const *src, size_t n)
{
	struct proc_entry *p = proc_entry_find(b, t->pid, NULL);
	struct proc_map *maps = calloc(n ? n : 1, sizeof(*maps));

	if (!maps)
		return;
	if (!p) {
		struct proc_entry **np = realloc(b->procs, (b->n_procs + 1) * sizeof(*np));

		if (!np) {
			free(maps);
			return;
		}
		b->procs = np;
		p = calloc(1, sizeof(*p));
		if (!p) {
			free(maps);
			return;
		}
		p->pid = t->pid;
		p->pagemap_fd = -1;
		b->procs[b->n_procs++] = p;
	}
	/* Anew on each look: an exec since the last one replaced the
	 * address space the old descriptor reads. */
	closep(&p->pagemap_fd);
	p->pagemap_fd = t->proc_pid_fd >= 0 ? openat(t->proc_pid_fd, "pagemap", O_RDONLY | O_CLOEXEC) : -1;
	if (p->pagemap_fd < 0)
		p->pagemap_fd = -1;
	for (size_t i = 0; i < n; i++)
		maps[i] = (struct proc_map){ lm[i].key, src[i]->start };
	free(p->maps);
	p->maps = maps;
	p->n_maps = n;
	b->users_dirty = true;
}

static void proc_entry_remove(struct lock_backend *b, pid_t pid)
{
	size_t i;
	struct proc_entry *p = proc_entry_find(b, pid, &i);

	if (!p)
		return;
	proc_entry_free(p);
	b->procs[i] = b->procs[--b->n_procs];
	b->users_dirty = true;
}

static int lock_probe(const struct backend_env *env _unused_, char **ret_reason)
{
	struct rlimit rl;

	*ret_reason = NULL;
	if (has_cap_ipc_lock())
		return 0;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return -errno;
	if (rl.rlim_cur == 0) {
		*ret_reason = strdup("no CAP_IPC_LOCK and RLIMIT_MEMLOCK is 0: cannot lock any page");
		return -EPERM;
	}
	return 0;
}

static void lock_destroy(void *state)
{
	struct lock_backend *b = state;

	if (!b)
		return;
	b->recheck = sd_event_source_disable_unref(b->recheck);
	b->watch = sd_event_source_disable_unref(b->watch);
	for (size_t i = 0; i < b->n_procs; i++)
		proc_entry_free(b->procs[i]);
	free(b->procs);
	free(b->users);
	free(b->pm);
	free(b->mapped);
	b->psi = psi_trigger_free(b->psi);
	b->psi_full = psi_trigger_free(b->psi_full);
	for (size_t i = 0; i < b->n_watches; i++)
		unit_watch_free(b->watches[i]);
	free(b->watches);
	b->ls = lockset_free(b->ls); /* unmaps, which unlocks */
	free(b->vec);
	closep(&b->cgroup_root_fd);
	closep(&b->proc_fd);
	sd_event_unref(b->event);
	free(b);
}

/* Without CAP_IPC_LOCK the kernel refuses mlock() beyond RLIMIT_MEMLOCK:
 * plan within it rather than fail on it. */
static void apply_settings(struct lock_backend *b, const struct daemon_settings *s)
{
	struct rlimit rl;

	if (s)
		b->settings = *s;
	if (b->ls)
		lockset_set_keep(b->ls, (uint64_t)b->settings.lock_keep_sec * 1000000);
	b->global_cap = resolve_cap(&b->settings.lock_budget, b->mem_total);
	if (!has_cap_ipc_lock() && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		uint64_t lim = (uint64_t)rl.rlim_cur - (uint64_t)rl.rlim_cur % b->page_size;

		if (b->global_cap == 0 || lim < b->global_cap) {
			struct log_fields f = LOG_FIELDS_INIT;
			char v[32];

			b->global_cap = lim;
			format_bytes(v, sizeof(v), lim);
			f.backend = "lock";
			f.bytes = (long long)lim;
			log_event(LOG_NOTICE, MID_LOCK_MLOCK_FAILED, &f,
				  "no CAP_IPC_LOCK: locking at most RLIMIT_MEMLOCK (%s); raise LimitMEMLOCK= or "
				  "grant CAP_IPC_LOCK for the configured budget",
				  v);
		}
	}
}

static void lock_destroyp(struct lock_backend **b)
{
	lock_destroy(*b);
}

static int lock_create(const struct backend_env *env, void **ret_state)
{
	_cleanup_(lock_destroyp) struct lock_backend *b = NULL;
	long ps = sysconf(_SC_PAGESIZE);
	int r;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->cgroup_root_fd = b->proc_fd = -1;
	b->page_size = ps > 0 ? (size_t)ps : 4096;
	b->dry_run = env->dry_run;
	b->event = env->event ? sd_event_ref(env->event) : NULL;
	/* Our own copy, whatever the manager does with its fd. */
	b->cgroup_root_fd = env->cgroup_root_fd >= 0 ? fcntl(env->cgroup_root_fd, F_DUPFD_CLOEXEC, 3) : -1;
	b->proc_fd = env->proc_fd >= 0 ? fcntl(env->proc_fd, F_DUPFD_CLOEXEC, 3) :
					 open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (b->proc_fd < 0)
		return -errno;
	r = residency_mem_total(b->proc_fd, &b->mem_total);
	if (r < 0)
		return r;
	apply_settings(b, env->settings);
	r = lockset_new(b->page_size, &lock_ops, b, &b->ls);
	if (r < 0)
		return r;
	lockset_set_keep(b->ls, (uint64_t)b->settings.lock_keep_sec * 1000000);
	r = setup_sources(b);
	if (r < 0)
		return r;
	{
		struct log_fields f = LOG_FIELDS_INIT;
		char cap[32] = "no cap";

		if (b->global_cap)
			format_bytes(cap, sizeof(cap), b->global_cap);
		f.backend = "lock";
		f.bytes = (long long)b->global_cap;
		log_event(LOG_INFO, NULL, &f,
			  "lock backend: budget %s, re-check every %us, memory pressure trigger %s%s",
			  cap, recheck_sec(&b->settings), b->psi ? psi_trigger_path(b->psi) : "none",
			  b->dry_run ? " (dry run: nothing is locked)" : "");
	}
	*ret_state = TAKE_PTR(b);
	return 0;
}

static void report_skipped_kind(struct lock_backend *b, const struct protect_target *t,
				const struct exec_mapping *m)
{
	struct log_fields f = LOG_FIELDS_INIT;

	if (b->skipped_kinds & (1u << m->kind))
		return;
	b->skipped_kinds |= 1u << m->kind;
	f.backend = "lock";
	f.unit = t->unit;
	f.pid = t->pid;
	f.exe = m->path; /* the mapping, as in the other lock events: not the process's executable */
	log_event(LOG_INFO, MID_LOCK_SKIPPED, &f, "not locking %s exec mapping %s of pid %d: %s (said once)",
		  mapping_kind_to_string(m->kind), strna(m->path), (int)t->pid,
		  residency_unlockable_kind(m->kind));
}

static void open_range(struct lock_backend *b, const struct protect_target *t, const struct exec_mapping *m,
		       struct lock_range *r)
{
	bool quiet = lockset_reported_before(b->ls, r->key.dev, r->key.ino);
	_cleanup_close_ int fd = -1;
	struct log_fields f = LOG_FIELDS_INIT;
	const char *why = NULL;
	int k;

	f.backend = "lock";
	f.unit = t->unit;
	f.pid = t->pid;
	f.exe = r->path;

	fd = residency_open(t->proc_pid_fd, m, &why);
	if (fd == -EMEDIUMTYPE) {
		(void)lockset_range_set_unlockable(b->ls, r, why);
		if (!quiet)
			log_event(LOG_INFO, MID_LOCK_SKIPPED, &f, "not locking %s: %s", r->path, why);
		return;
	}
	if (fd < 0) {
		(void)lockset_range_set_failed(b->ls, r, why ? why : STRERROR(fd));
		if (!quiet)
			log_event_errno(LOG_WARNING, fd, MID_LOCK_SKIPPED, &f,
					"cannot open %s mapped by pid %d: %s (%m); not retried until reload",
					r->path, (int)t->pid, why ? why : "error");
		return;
	}
	k = residency_map(fd, r->key.offset, r->key.length, &r->map);
	if (k < 0) {
		(void)lockset_range_set_failed(b->ls, r, "mmap() failed");
		if (!quiet)
			log_event_errno(LOG_WARNING, k, MID_LOCK_SKIPPED, &f, "cannot map %s: %m", r->path);
		return;
	}
	if (lockset_range_opened(b->ls, r) < 0) {
		range_unmap(r, NULL);
		(void)lockset_range_set_failed(b->ls, r, "out of memory");
		return;
	}
	(void)scan_range(b, r);
}

static int lock_protect(void *state, const struct protect_target *t)
{
	struct lock_backend *b = state;
	const struct exec_mappings *maps = t->maps;
	_cleanup_free_ struct lock_mapping *lm = NULL;
	_cleanup_free_ const struct exec_mapping **src = NULL;
	const char *group = t->unit ? t->unit : t->cgroup ? t->cgroup : "-";
	uint64_t unit_cap = 0;
	size_t n = 0, total = maps ? maps->n : 0;
	int r;

	if (t->settings)
		unit_cap = resolve_cap(&t->settings->lock_budget, b->mem_total);

	lm = calloc(total ? total : 1, sizeof(*lm));
	src = calloc(total ? total : 1, sizeof(*src));
	if (!lm || !src)
		return -ENOMEM;
	for (size_t i = 0; i < total; i++) {
		const struct exec_mapping *m = &maps->items[i];

		if (residency_unlockable_kind(m->kind) || m->inode == 0 || m->end <= m->start) {
			report_skipped_kind(b, t, m);
			continue;
		}
		lock_key_from_mapping(makedev(m->dev_major, m->dev_minor), m->inode, m->offset,
				      m->end - m->start, b->page_size, &lm[n].key);
		lm[n].path = m->path;
		lm[n].prot = m->prot;
		src[n] = m;
		n++;
	}

	lockset_set_now(b->ls, lock_now_usec(b));
	r = lockset_process_set(b->ls, t->pid, group, unit_cap, lm, n);
	if (r < 0)
		return r;
	proc_entry_set(b, t, lm, src, n);
	if (t->unit || t->cgroup)
		unit_watch_add(b, group, t->cgroup, t->proc_pid_fd, NULL);
	if (b->recheck) {
		int on = SD_EVENT_OFF;

		if (sd_event_source_get_enabled(b->recheck, &on) >= 0 && on == SD_EVENT_OFF)
			arm_recheck(b);
	}
	for (size_t i = 0; i < n; i++) {
		struct lock_range *lr = lockset_find_range(b->ls, &lm[i].key);

		if (lr && lr->state == LOCK_RANGE_NEW)
			open_range(b, t, src[i], lr);
		else if (lr)
			/* What this process has mapped counts now, not at the
			 * next re-check. */
			(void)scan_range(b, lr);
	}
	plan_and_apply(b);
	return 0;
}

/* Whether the process's address space is gone (exit, or an exec that
 * replaced it): its pagemap, opened on the old one, reads as empty. A
 * process released while it still runs (the policy changed) is not. */
static bool address_space_gone(const struct proc_entry *p)
{
	uint64_t e;

	return p && p->pagemap_fd >= 0 && pread(p->pagemap_fd, &e, sizeof(e), 0) == 0;
}

static void lock_release(void *state, pid_t pid)
{
	struct lock_backend *b = state;
	bool gone = address_space_gone(proc_entry_find(b, pid, NULL));
	int k;

	/* Ranges nobody maps or keeps any more are unmapped (and so
	 * unlocked); the freed budget goes to what was refused. What an
	 * exited process mapped stays its unit's for LockKeepSec=. */
	proc_entry_remove(b, pid);
	lockset_set_now(b->ls, lock_now_usec(b));
	k = gone ? lockset_process_exit(b->ls, pid) : lockset_process_remove(b->ls, pid);
	if (k > 0) {
		unit_watches_prune(b);
		plan_and_apply(b);
	}
}

static int lock_reconfigure(void *state, const struct daemon_settings *s)
{
	struct lock_backend *b = state;
	size_t n;

	(void)residency_mem_total(b->proc_fd, &b->mem_total);
	apply_settings(b, s);
	/* A shorter LockKeepSec= (or 0) applies at once. */
	(void)lockset_expire(b->ls, lock_now_usec(b));
	unit_watches_prune(b);
	/* A reload is the moment to try again what failed. */
	lockset_forget_failures(b->ls);
	b->mlock_failed_logged = false;
	b->skipped_kinds = 0;
	n = lockset_n_ranges(b->ls);
	for (size_t i = 0; i < n; i++) {
		struct lock_range *r = lockset_range(b->ls, i);

		if (r->refusal == LOCK_REFUSAL_ERROR)
			r->refusal = LOCK_REFUSAL_NONE;
		r->refusals_reported = 0;
	}
	(void)setup_sources(b);
	b->watch_failed_logged = false;
	unit_watches_reset(b);
	plan_and_apply(b);
	log_summary(b, true);
	return 0;
}

int backend_lock_recheck(void *state)
{
	return do_recheck(state);
}

const struct backend_ops backend_lock_ops = {
	.report_units = lock_report_units,
	.report_files = lock_report_files,
	/* Files others own (DAC_READ_SEARCH), mlock() past the rlimit
	 * (IPC_LOCK), PSI windows under 2 s (SYS_RESOURCE), map_files
	 * (CHECKPOINT_RESTORE). */
	.capabilities = CAP_BIT(2) | CAP_BIT(14) | CAP_BIT(24) | CAP_BIT(40),
	.name = "lock",
	.probe = lock_probe,
	.create = lock_create,
	.destroy = lock_destroy,
	.protect = lock_protect,
	.release = lock_release,
	.reconfigure = lock_reconfigure,
	.describe = lock_describe,
	.log_stats = lock_log_stats,
};
