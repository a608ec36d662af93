/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel backend: memory.exec_protect on the cgroup of each
 * protected process and on every ancestor below the root, because the
 * kernel honours the file only when the whole chain has it set. It
 * clears only what it set itself. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "backend.h"
#include "bus-stats.h"
#include "cgroup.h"
#include "hashmap.h"
#include "log.h"
#include "util.h"

#define EXEC_PROTECT "memory.exec_protect"
/* What the daemon writes: no bound of its own (the kernel takes the
 * smallest value up the chain; "0" is off). */
#define EXEC_PROTECT_ON "max"
/* The cgroups whose file we changed: a daemon killed with SIGKILL leaves
 * them set, and the next start must know they are its own to clear. A
 * journal: "PATH" when we set one, "-PATH" when we cleared it, appended
 * (one short write each, not the whole set); rewritten as the plain set
 * when it holds more than twice that (and at the start's scan), so that
 * what is written stays proportional to what changed. */
#define STATE_FILE "kernel-owned"
#define STATE_SLACK_LINES 64

struct kcgroup {
	char *path;	   /* "/system.slice/x.service" */
	unsigned users;	   /* holders: protected processes directly in it, and itself when pushed */
	bool pushed;	   /* protected as a cgroup (the push path), asking for pushed_limit */
	uint64_t pushed_limit;
	unsigned wanted;   /* cgroups at or below it with users */
	bool owned;	   /* we changed it from 0 */
	int failed;	   /* last write error, reported once */
	/* The bound its own processes' rules ask for, the largest of them
	 * (0 for "max"), and how many ask for each. Ancestors without
	 * processes of their own get "max": the leaf bounds. */
	uint64_t limit;
	struct limit_count {
		uint64_t limit; /* 0: max */
		unsigned n;	/* its processes asking for it */
	} *limits;
	size_t n_limits;
};

/* A protected process: its cgroup and the bound its rule asks for. */
struct kpid {
	struct kcgroup *c;
	uint64_t limit;
};

struct kstate {
	const struct backend_env *env;
	struct hashmap cgroups; /* path -> struct kcgroup */
	struct hashmap pids;	/* pid -> struct kcgroup (its own cgroup) */
	unsigned n_owned;
	unsigned n_failures;
	bool quiet_missing; /* a cgroup pushed: a missing file is the caller's to retry */
	int state_fd;		/* the journal, open for appending; -1: not open */
	unsigned state_lines;	/* lines in it */
	bool state_quiet;	/* stopping: one rewrite at the end */
};

static int kernel_probe(const struct backend_env *env, char **ret_reason)
{
	DIR *d;
	struct dirent *de;
	int found = 0, r;

	r = opendir_at(env->cgroup_root_fd, &d);
	if (r < 0)
		return r;
	/* The root cgroup has no such file; a child with the memory
	 * controller enabled does when the kernel has the feature. */
	while ((de = readdir(d))) {
		struct stat st;
		char p[512];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/" EXEC_PROTECT, de->d_name);
		if (fstatat(dirfd(d), p, &st, 0) == 0) {
			found = 1;
			break;
		}
	}
	closedir(d);
	if (found)
		return 0;
	if (asprintf(ret_reason,
		     "no %s under %s: the kernel lacks the execguard patch, or the memory controller is not enabled in %s/cgroup.subtree_control",
		     EXEC_PROTECT, env->cgroup_root, env->cgroup_root) < 0)
		*ret_reason = NULL;
	return -EOPNOTSUPP;
}

static struct kcgroup *get_cgroup(struct kstate *s, const char *path, size_t len);

/* Write the owned set whole and atomically: a crash leaves the old or
 * the new. */
static void state_rewrite(struct kstate *s)
{
	_cleanup_fclose_ FILE *f = NULL;
	struct hashmap_entry *e = NULL;
	size_t i = 0;
	int fd;

	if (s->env->state_dir_fd < 0 || s->env->dry_run)
		return;
	closep(&s->state_fd); /* names the file about to be replaced */
	s->state_fd = -1;
	fd = openat(s->env->state_dir_fd, STATE_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		log_warning_errno(-errno, "cannot save %s: %m", STATE_FILE);
		return;
	}
	while ((e = hashmap_next(&s->cgroups, &i, e)))
		if (((struct kcgroup *)e->value)->owned)
			fprintf(f, "%s\n", ((struct kcgroup *)e->value)->path);
	if (fflush(f) != 0 || renameat(s->env->state_dir_fd, STATE_FILE ".tmp", s->env->state_dir_fd,
				       STATE_FILE) < 0) {
		log_warning_errno(-errno, "cannot save %s: %m", STATE_FILE);
		return;
	}
	s->state_lines = s->n_owned;
}

/* One change to the journal: "PATH" set by us, "-PATH" cleared. */
static void state_append(struct kstate *s, const char *prefix, const char *path)
{
	_cleanup_free_ char *line = NULL;
	int len;

	if (s->env->state_dir_fd < 0 || s->env->dry_run || s->state_quiet)
		return;
	if (s->state_lines >= 2 * s->n_owned + STATE_SLACK_LINES) {
		state_rewrite(s);
		return;
	}
	if (s->state_fd < 0)
		s->state_fd = openat(s->env->state_dir_fd, STATE_FILE, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
				     0600);
	len = asprintf(&line, "%s%s\n", prefix, path);
	if (len < 0) {
		log_warning_errno(-ENOMEM, "cannot save %s: %m", STATE_FILE);
		return;
	}
	/* One write of one line: a crash tears at most the last one, which
	 * the loader ignores (no newline). */
	if (s->state_fd < 0 || write(s->state_fd, line, (size_t)len) != len) {
		log_warning_errno(s->state_fd < 0 ? -errno : -EIO, "cannot save %s: %m", STATE_FILE);
		closep(&s->state_fd);
		s->state_fd = -1;
		return;
	}
	s->state_lines++;
}

static void own(struct kstate *s, struct kcgroup *c)
{
	c->owned = true;
	s->n_owned++;
	state_append(s, "", c->path);
}

static void disown(struct kstate *s, struct kcgroup *c)
{
	c->owned = false;
	s->n_owned--;
	state_append(s, "-", c->path);
}

/* The journal replayed: the set as the last run left it. */
static int load_owned(struct kstate *s)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	char *line, *next;
	int r;

	if (s->env->state_dir_fd < 0 || s->env->dry_run)
		return 0;
	r = read_file_at(s->env->state_dir_fd, STATE_FILE, 64 << 20, &buf, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	for (line = buf; (next = memchr(line, '\n', len - (size_t)(line - buf))); line = next + 1) {
		bool gone = line[0] == '-';
		const char *path = line + gone;
		struct kcgroup *c;
		const char *rel;

		*next = '\0';
		s->state_lines++;
		if (cgroup_relative(path, &rel) < 0 || streq(rel, "."))
			continue; /* not a path we would have written */
		c = get_cgroup(s, path, strlen(path));
		if (!c)
			return -ENOMEM;
		if (!gone && !c->owned) {
			c->owned = true;
			s->n_owned++;
		} else if (gone && c->owned) {
			c->owned = false;
			s->n_owned--;
		}
	}
	return 0;
}

static int kernel_create(const struct backend_env *env, void **ret_state)
{
	struct kstate *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->env = env;
	s->state_fd = -1;
	hashmap_init(&s->cgroups, hash_string, equal_string);
	hashmap_init(&s->pids, hash_int, equal_int);
	r = load_owned(s);
	if (r < 0)
		log_warning_errno(r, "cannot read %s: %m; files set by an earlier run are not cleared",
			    STATE_FILE);
	else if (s->n_owned)
		log_info("%u cgroups were set by an earlier run; those the policy no longer wants are cleared after the scan",
			 s->n_owned);
	*ret_state = s;
	return 0;
}

static void drop_cgroup(struct kstate *s, struct kcgroup *c);
static void clear_one(struct kstate *s, struct kcgroup *c);

static void kernel_scan_done(void *state)
{
	struct kstate *s = state;
	struct hashmap_iter it = HASHMAP_ITER_INIT;
	struct hashmap_entry *e;

	while ((e = hashmap_iter_next(&s->cgroups, &it))) {
		struct kcgroup *c = e->value;

		if (c->owned && c->wanted == 0) {
			clear_one(s, c);
			drop_cgroup(s, c); /* removes this entry only */
		}
	}
	state_rewrite(s);
}

static struct kcgroup *get_cgroup(struct kstate *s, const char *path, size_t len)
{
	_cleanup_free_ char *key = strndup(path, len);
	struct kcgroup *c;

	if (!key)
		return NULL;
	c = hashmap_get(&s->cgroups, key);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->path = TAKE_PTR(key);
	if (hashmap_put(&s->cgroups, c->path, c) < 0) {
		free(c->path);
		free(c);
		return NULL;
	}
	return c;
}

static void drop_cgroup(struct kstate *s, struct kcgroup *c)
{
	if (c->users || c->wanted || c->owned)
		return;
	hashmap_remove(&s->cgroups, c->path);
	free(c->limits);
	free(c->path);
	free(c);
}

static void report_failure(struct kstate *s, struct kcgroup *c, int r, const char *what)
{
	struct log_fields f = LOG_FIELDS_INIT;

	if (c->failed == r)
		return; /* said once already */
	c->failed = r;
	if (r == -ENOENT && s->quiet_missing)
		return; /* the push path tries again, and says so if in vain */
	s->n_failures++;
	f.cgroup = c->path;
	f.backend = "kernel";
	log_event_errno(LOG_WARNING, r, MID_CGROUP_FAILED, &f, "cannot %s %s in %s: %m%s", what,
		  EXEC_PROTECT, c->path,
		  r == -ENOENT ? " (cgroup gone, or kernel without the execguard patch)" :
		  r == -EROFS ? " (cgroup file system read-only)" :
		  r == -EACCES ? " (permission denied: a delegated cgroup not owned by root, or a security module)" :
		  r == -EPERM ? " (not permitted: a security module, or a missing capability)" :
		  r == -EINVAL ? " (the kernel refused the value: the root cgroup, or another execguard version)" : "");
}

static void format_limit(uint64_t limit, char *buf, size_t size)
{
	if (limit == 0 || limit == EXEC_PROTECT_LIMIT_MAX)
		snprintf(buf, size, "%s", EXEC_PROTECT_ON);
	else
		/* As the kernel reads it back: whole pages. */
		snprintf(buf, size, "%llu", (unsigned long long)(limit & ~4095ULL));
}

static int set_one(struct kstate *s, struct kcgroup *c)
{
	_cleanup_free_ char *file = NULL, *cur = NULL;
	const char *rel;
	struct log_fields f = LOG_FIELDS_INIT;
	char value[32];
	int r;

	r = cgroup_relative(c->path, &rel);
	if (r < 0)
		return r;
	if (asprintf(&file, "%s/" EXEC_PROTECT, rel) < 0)
		return -ENOMEM;
	r = read_file_at(s->env->cgroup_root_fd, file, 64, &cur, NULL);
	if (r < 0) {
		report_failure(s, c, r, "read");
		return r;
	}
	if (c->failed == -ENOENT)
		c->failed = 0; /* there now (a controller enabled since) */
	format_limit(c->limit, value, sizeof(value));
	/* Someone else's: leave it. Ours (from this run or an earlier one):
	 * rewrite only a changed bound. */
	cur[strcspn(cur, "\n")] = '\0';
	if (!exec_protect_is_off(cur) && (!c->owned || streq(cur, value)))
		return 0;
	f.cgroup = c->path;
	f.backend = "kernel";
	if (s->env->dry_run) {
		log_event(LOG_INFO, MID_CGROUP_PROTECTED, &f, "would set %s=%s in %s (dry run)",
			  EXEC_PROTECT, value, c->path);
		return 0;
	}
	r = write_file_at(s->env->cgroup_root_fd, file, value);
	if (r < 0) {
		report_failure(s, c, r, "write");
		return r;
	}
	c->failed = 0;
	if (!c->owned)
		own(s, c);
	log_event(LOG_INFO, MID_CGROUP_PROTECTED, &f, "set %s=%s in %s", EXEC_PROTECT, value, c->path);
	return 0;
}

static void clear_one(struct kstate *s, struct kcgroup *c)
{
	_cleanup_free_ char *file = NULL;
	const char *rel;
	struct log_fields f = LOG_FIELDS_INIT;
	int r;

	if (!c->owned)
		return;
	disown(s, c);
	if (cgroup_relative(c->path, &rel) < 0 || asprintf(&file, "%s/" EXEC_PROTECT, rel) < 0)
		return;
	r = write_file_at(s->env->cgroup_root_fd, file, "0");
	f.cgroup = c->path;
	f.backend = "kernel";
	if (r == -ENOENT)
		return; /* the cgroup went away with its last process: nothing to undo */
	if (r < 0) {
		report_failure(s, c, r, "clear");
		return;
	}
	log_event(LOG_INFO, MID_CGROUP_RELEASED, &f, "set %s=0 in %s (no protected process left)",
		  EXEC_PROTECT, c->path);
}

/* Walk "/a/b/c" as "/a", "/a/b", "/a/b/c"; top-down for setting. */
static int for_each_prefix(struct kstate *s, const char *path, int delta)
{
	struct kcgroup *chain[256];
	size_t n = 0;

	for (size_t l = 0; cgroup_next_ancestor(path, &l);) {
		struct kcgroup *c = n < ELEMENTSOF(chain) ? get_cgroup(s, path, l) : NULL;

		if (!c) {
			int r = n == ELEMENTSOF(chain) ? -E2BIG : -ENOMEM;

			/* Nothing counted: what was made for it goes. */
			while (n > 0)
				drop_cgroup(s, chain[--n]);
			return r;
		}
		chain[n++] = c;
	}
	if (delta > 0) {
		for (size_t i = 0; i < n; i++)
			if (chain[i]->wanted++ == 0)
				set_one(s, chain[i]);
	} else {
		for (size_t i = n; i-- > 0;) {
			if (--chain[i]->wanted == 0) {
				clear_one(s, chain[i]);
				drop_cgroup(s, chain[i]);
			}
		}
	}
	return 0;
}

static uint64_t wanted_limit(const struct rule_settings *rs)
{
	return rs && rs->exec_protect_limit != EXEC_PROTECT_LIMIT_MAX ? rs->exec_protect_limit : 0;
}

/* One more or one fewer process of c asking for this bound. */
static int count_limit(struct kcgroup *c, uint64_t limit, int delta)
{
	size_t i = 0;

	while (i < c->n_limits && c->limits[i].limit != limit)
		i++;
	if (i == c->n_limits) {
		struct limit_count *p;

		if (delta < 0)
			return 0;
		p = reallocarray(c->limits, i + 1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->limits = p;
		c->limits[c->n_limits++] = (struct limit_count){ .limit = limit };
	}
	c->limits[i].n += delta;
	if (c->limits[i].n == 0)
		c->limits[i] = c->limits[--c->n_limits];
	return 0;
}

/* Processes of one cgroup whose rules ask for different bounds: the
 * largest of those there now holds. */
static void update_limit(struct kstate *s, struct kcgroup *c)
{
	uint64_t largest = c->n_limits ? 1 : 0;

	for (size_t i = 0; i < c->n_limits && largest; i++)
		if (c->limits[i].limit == 0 || c->limits[i].limit > largest)
			largest = c->limits[i].limit;
	if (largest == c->limit)
		return;
	c->limit = largest;
	if (c->wanted)
		set_one(s, c);
}

/* A process leaves c: its bound no longer counts, and the chain is
 * released with the last one. */
/* One more holder of c (a protected process in it, or the cgroup pushed
 * as such) asking for the bound want: counted, and the chain set with
 * the first. On failure nothing is counted and c is dropped if unused. */
static int join_cgroup(struct kstate *s, struct kcgroup *c, uint64_t want)
{
	int r = count_limit(c, want, +1);

	if (r < 0) {
		drop_cgroup(s, c);
		return r;
	}
	if (c->users++ > 0) {
		update_limit(s, c);
		return 0;
	}
	c->limit = want;
	r = for_each_prefix(s, c->path, +1);
	if (r < 0) {
		/* Nothing of the chain counted: the holder is not ours, or
		 * its release would count the chain down from 0 and leave it
		 * never set again. */
		c->users--;
		count_limit(c, want, -1);
		drop_cgroup(s, c);
		return r;
	}
	if (c->wanted > 1) /* also an ancestor of a protected cgroup: its bound now */
		set_one(s, c);
	return 0;
}

/* A holder of c asking for limit goes: the chain is released with the
 * last one. */
static void leave_cgroup(struct kstate *s, struct kcgroup *c, uint64_t limit)
{
	char *path;

	count_limit(c, limit, -1);
	if (--c->users > 0) {
		update_limit(s, c);
		return;
	}
	path = strdup(c->path);
	if (path)
		for_each_prefix(s, path, -1);
	free(path);
}

static int kernel_protect(void *state, const struct protect_target *t)
{
	struct kstate *s = state;
	uint64_t want = wanted_limit(t->settings);
	struct kcgroup *c;
	struct kpid *p;
	int r;

	if (!t->cgroup || streq(t->cgroup, "/"))
		return -EINVAL; /* the root cgroup has no such file */
	p = hashmap_get(&s->pids, INT_TO_KEY(t->pid));
	if (p && streq(p->c->path, t->cgroup)) {
		/* Looked at again: its rule may have changed (reload). */
		if (p->limit == want)
			return 0;
		r = count_limit(p->c, want, +1);
		if (r < 0)
			return r;
		count_limit(p->c, p->limit, -1);
		p->limit = want;
		update_limit(s, p->c);
		return 0;
	}
	if (p) {
		/* Moved to another cgroup: follow it. */
		hashmap_remove(&s->pids, INT_TO_KEY(t->pid));
		leave_cgroup(s, p->c, p->limit);
		free(p);
	}
	c = get_cgroup(s, t->cgroup, strlen(t->cgroup));
	if (!c)
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p) {
		drop_cgroup(s, c);
		return -ENOMEM;
	}
	*p = (struct kpid){ .c = c, .limit = want };
	r = join_cgroup(s, c, want);
	if (r < 0) {
		free(p);
		return r;
	}
	r = hashmap_put(&s->pids, INT_TO_KEY(t->pid), p);
	if (r < 0) {
		leave_cgroup(s, c, want);
		free(p);
		return r;
	}
	return 0;
}

/* The push path: the cgroup protected as such, one holder however many
 * processes it has; again with another bound, the bound follows. */
static int kernel_protect_cgroup(void *state, const char *cgroup, const struct rule_settings *rs)
{
	struct kstate *s = state;
	uint64_t want = wanted_limit(rs);
	struct kcgroup *c;
	int r;

	if (!cgroup || streq(cgroup, "/"))
		return -EINVAL; /* the root cgroup has no such file */
	c = get_cgroup(s, cgroup, strlen(cgroup));
	if (!c)
		return -ENOMEM;
	s->quiet_missing = true;
	if (c->pushed) {
		if (c->pushed_limit != want) {
			r = count_limit(c, want, +1);
			if (r < 0)
				goto out;
			count_limit(c, c->pushed_limit, -1);
			c->pushed_limit = want;
			update_limit(s, c);
		} else if (c->failed) {
			(void)set_one(s, c); /* its file was not there before */
		}
	} else {
		r = join_cgroup(s, c, want);
		if (r < 0)
			goto out;
		c->pushed = true;
		c->pushed_limit = want;
	}
	/* Held; in force once its own file is written. */
	r = c->failed ? 1 : 0;
out:
	s->quiet_missing = false;
	return r;
}

static void kernel_release_cgroup(void *state, const char *cgroup)
{
	struct kstate *s = state;
	struct kcgroup *c = hashmap_get(&s->cgroups, cgroup);

	if (!c || !c->pushed)
		return;
	c->pushed = false;
	leave_cgroup(s, c, c->pushed_limit);
}

static void kernel_release(void *state, pid_t pid)
{
	struct kstate *s = state;
	struct kpid *p = hashmap_remove(&s->pids, INT_TO_KEY(pid));

	if (!p)
		return;
	leave_cgroup(s, p->c, p->limit);
	free(p);
}

static int kernel_reconfigure(void *state, const struct daemon_settings *settings)
{
	(void)state;
	(void)settings;
	return 0;
}

static void kernel_describe(void *state, char *buf, size_t size)
{
	struct kstate *s = state;
	unsigned leafs = 0;
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&s->cgroups, &i, e)))
		if (((struct kcgroup *)e->value)->users)
			leafs++;
	snprintf(buf, size, "%u cgroups protected, %u exec_protect files set by us%s", leafs,
		 s->n_owned, s->n_failures ? ", write failures (see log)" : "");
}

static void kernel_destroy(void *state)
{
	struct kstate *s = state;
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	if (!s)
		return;
	/* Undo what we set, so that a stopped daemon leaves nothing behind;
	 * the journal is written once, empty, at the end. */
	s->state_quiet = true;
	while ((e = hashmap_next(&s->cgroups, &i, e)))
		clear_one(s, e->value);
	state_rewrite(s);
	closep(&s->state_fd);
	i = 0;
	while ((e = hashmap_next(&s->cgroups, &i, e))) {
		struct kcgroup *c = e->value;

		free(c->limits);
		free(c->path);
		free(c);
	}
	i = 0;
	while ((e = hashmap_next(&s->pids, &i, e)))
		free(e->value);
	hashmap_done(&s->cgroups);
	hashmap_done(&s->pids);
	free(s);
}

/* In force when memory.exec_protect is on for the unit's cgroup and every
 * ancestor below the root (the kernel's rule); the bound is the smallest
 * value up the chain, and memory.stat says how much of it reclaim keeps. */
static int kernel_report_units(void *state, struct backend_unit_report *units, size_t n)
{
	struct kstate *s = state;

	for (size_t i = 0; i < n; i++) {
		struct backend_unit_report *u = &units[i];
		_cleanup_free_ char *where = NULL;
		uint64_t bound = 0, usage;
		char b[32] = "max", k[32] = "-";
		int r = read_exec_protect_effective(s->env->cgroup_root_fd, u->cgroup, &bound, &where);

		u->protected_now = r > 0;
		u->blocked = r <= 0;
		u->mapped = u->resident = u->locked = BACKEND_FIGURE_UNKNOWN;
		if (r > 0) {
			usage = read_cgroup_exec_usage(s->env->cgroup_root_fd, u->cgroup);
			if (bound != UINT64_MAX)
				format_bytes(b, sizeof(b), bound);
			if (usage != STAT_UNKNOWN)
				format_bytes(k, sizeof(k), usage);
			snprintf(u->state, sizeof(u->state), "memory.exec_protect=%s, covers %s", b, k);
		} else if (r == 0) {
			snprintf(u->state, sizeof(u->state), "memory.exec_protect is 0 on %s", where);
		} else {
			snprintf(u->state, sizeof(u->state), "no memory.exec_protect on %s", u->cgroup);
		}
	}
	return 0;
}

const struct backend_ops backend_kernel_ops = {
	.name = "kernel",
	.report_units = kernel_report_units,
	.cgroup_only = true,
	.probe = kernel_probe,
	.create = kernel_create,
	.destroy = kernel_destroy,
	.protect = kernel_protect,
	.release = kernel_release,
	.protect_cgroup = kernel_protect_cgroup,
	.release_cgroup = kernel_release_cgroup,
	.reconfigure = kernel_reconfigure,
	.scan_done = kernel_scan_done,
	.describe = kernel_describe,
};
