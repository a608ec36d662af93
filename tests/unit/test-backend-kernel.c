/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel backend against a fake cgroup tree: which files it sets,
 * which it leaves alone, and that it clears only its own. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"
#include "test.h"
#include "util.h"

static char root[] = "/tmp/execguard-cgroot-XXXXXX";

/* strndup() as glibc's, except that the one call counted down to fails
 * (ENOMEM): the backend's code is linked in and calls this one. */
static int strndup_fail_in = -1;
char *strndup(const char *s, size_t n)
{
	size_t l = strnlen(s, n);
	char *r;

	if (strndup_fail_in >= 0 && strndup_fail_in-- == 0) {
		errno = ENOMEM;
		return NULL;
	}
	r = malloc(l + 1);
	if (r) {
		memcpy(r, s, l);
		r[l] = '\0';
	}
	return r;
}

/* Bytes this process has written so far (/proc/self/io wchar). */
static unsigned long long written(void)
{
	unsigned long long v = 0;
	char line[128];
	FILE *f = fopen("/proc/self/io", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "wchar: %llu", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static void make_cgroup(const char *rel, const char *value)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	CHECK(mkdir(p, 0755) == 0);
	if (!value)
		return;
	snprintf(p, sizeof(p), "%s/%s/memory.exec_protect", root, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK(write(fd, value, strlen(value)) == (ssize_t)strlen(value));
	close(fd);
}

static char value_of(const char *rel)
{
	char p[512], c = '?';
	int fd;

	snprintf(p, sizeof(p), "%s/%s/memory.exec_protect", root, rel);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return 'E';
	if (read(fd, &c, 1) != 1)
		c = '?';
	close(fd);
	return c;
}

static const char *string_of(const char *rel)
{
	static char buf[64];
	char p[512];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/%s/memory.exec_protect", root, rel);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return "E";
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static struct protect_target target(pid_t pid, const char *cgroup)
{
	return (struct protect_target){ .pid = pid, .pidfd = -1, .proc_pid_fd = -1, .cgroup = cgroup };
}

static void test_chain(void)
{
	struct daemon_settings ds = { 0 };
	struct backend_env env = { .settings = &ds };
	char *why = NULL;
	void *s;
	struct protect_target t;

	CHECK(mkdtemp(root) != NULL);
	env.cgroup_root = root;
	env.cgroup_root_fd = open(root, O_RDONLY | O_DIRECTORY);

	/* No file anywhere: the probe says why. */
	make_cgroup("plain", NULL);
	CHECK_EQ_INT(backend_kernel_ops.probe(&env, &why), -EOPNOTSUPP);
	CHECK(why && strstr(why, "lacks the execguard patch"));
	free(why);

	make_cgroup("system.slice", "0\n");
	make_cgroup("system.slice/a.service", "0\n");
	make_cgroup("system.slice/b.service", "0\n");
	make_cgroup("system.slice/c.service", "16777216\n"); /* set by someone else */
	CHECK_EQ_INT(backend_kernel_ops.probe(&env, &why), 0);

	CHECK_EQ_INT(backend_kernel_ops.create(&env, &s), 0);
	t = target(100, "/system.slice/a.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_EQ_INT(value_of("system.slice"), 'm');
	CHECK_EQ_INT(value_of("system.slice/a.service"), 'm');
	CHECK_EQ_INT(value_of("system.slice/b.service"), '0');

	/* A second process in the same cgroup, one in another. */
	t = target(101, "/system.slice/a.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	t = target(200, "/system.slice/b.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	t = target(300, "/system.slice/c.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_EQ_INT(value_of("system.slice/b.service"), 'm');

	backend_kernel_ops.release(s, 100);
	CHECK_EQ_INT(value_of("system.slice/a.service"), 'm'); /* 101 still there */
	backend_kernel_ops.release(s, 101);
	CHECK_EQ_INT(value_of("system.slice/a.service"), '0');
	CHECK_EQ_INT(value_of("system.slice"), 'm'); /* b still wants it */
	backend_kernel_ops.release(s, 200);
	backend_kernel_ops.release(s, 300);
	CHECK_EQ_INT(value_of("system.slice/b.service"), '0');
	CHECK_EQ_INT(value_of("system.slice/c.service"), '1'); /* not ours: untouched */
	CHECK_EQ_INT(value_of("system.slice"), '0');

	/* A process that moves follows its cgroup. */
	t = target(400, "/system.slice/a.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	t = target(400, "/system.slice/b.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_EQ_INT(value_of("system.slice/a.service"), '0');
	CHECK_EQ_INT(value_of("system.slice/b.service"), 'm');

	/* A cgroup without the file: an error, reported, no crash. */
	make_cgroup("system.slice/nofile.service", NULL);
	t = target(500, "/system.slice/nofile.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	backend_kernel_ops.release(s, 500);
	/* The root cgroup cannot be protected. */
	t = target(600, "/");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), -EINVAL);

	/* Stopping clears what we set. */
	backend_kernel_ops.destroy(s);
	CHECK_EQ_INT(value_of("system.slice/b.service"), '0');
	CHECK_EQ_INT(value_of("system.slice"), '0');
	CHECK_EQ_INT(value_of("system.slice/c.service"), '1');
	close(env.cgroup_root_fd);
}

/* ExecProtectLimit=: the leaf gets the bound, its ancestors "max"; with
 * processes under different rules the largest bound of those there now
 * holds; a rule changed by a reload is followed both ways. */
static void test_limit(void)
{
	struct daemon_settings ds = { 0 };
	struct backend_env env = { .settings = &ds, .cgroup_root = root, .state_dir_fd = -1 };
	struct rule_settings small = { .protect = 1, .exec_protect_limit = 16 << 20 };
	struct rule_settings odd = { .protect = 1, .exec_protect_limit = (32 << 20) + 100 };
	struct rule_settings unbounded = { .protect = 1, .exec_protect_limit = EXEC_PROTECT_LIMIT_MAX };
	struct protect_target t;
	void *s;

	env.cgroup_root_fd = open(root, O_RDONLY | O_DIRECTORY);
	make_cgroup("limit.slice", "0\n");
	make_cgroup("limit.slice/d.service", "0\n");
	CHECK_EQ_INT(backend_kernel_ops.create(&env, &s), 0);

	t = target(700, "/limit.slice/d.service");
	t.settings = &small;
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_STREQ(string_of("limit.slice"), "max");
	CHECK_STREQ(string_of("limit.slice/d.service"), "16777216");

	t = target(701, "/limit.slice/d.service");
	t.settings = &odd; /* whole pages, as the kernel reads it back */
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_STREQ(string_of("limit.slice/d.service"), "33554432");
	t = target(702, "/limit.slice/d.service");
	t.settings = &unbounded;
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_STREQ(string_of("limit.slice/d.service"), "max");

	/* The largest of those there now: 702 gone, 701 asks for 32M. */
	backend_kernel_ops.release(s, 702);
	CHECK_STREQ(string_of("limit.slice/d.service"), "33554432");
	/* A rule changed by a reload, seen on the next look: it goes down. */
	t = target(701, "/limit.slice/d.service");
	t.settings = &small;
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_STREQ(string_of("limit.slice/d.service"), "16777216");
	CHECK_STREQ(string_of("limit.slice"), "max");

	backend_kernel_ops.release(s, 700);
	backend_kernel_ops.release(s, 701);
	CHECK_STREQ(string_of("limit.slice/d.service"), "0");
	CHECK_STREQ(string_of("limit.slice"), "0");

	/* Without a rule's bound: "max". */
	t = target(703, "/limit.slice/d.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_STREQ(string_of("limit.slice/d.service"), "max");
	backend_kernel_ops.destroy(s);
	CHECK_STREQ(string_of("limit.slice/d.service"), "0");
	close(env.cgroup_root_fd);
}

/* The set the state file says is ours, as a start replays it: "PATH"
 * set, "-PATH" cleared. */
static size_t journal_set(int dir_fd)
{
	_cleanup_free_ char *text = NULL;
	char *paths[2048];
	size_t n = 0, len;

	if (read_file_at(dir_fd, "kernel-owned", 1 << 24, &text, &len) < 0)
		return SIZE_MAX;
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		size_t i = 0;
		const char *p = l[0] == '-' ? l + 1 : l;

		while (i < n && strcmp(paths[i], p) != 0)
			i++;
		if (l[0] == '-' && i < n)
			paths[i] = paths[--n];
		else if (l[0] != '-' && i == n && n < 2048)
			paths[n++] = l;
	}
	return n;
}

/* A chain that could not be counted (ENOMEM half way up) is not the
 * process's: its release must not count the chain down from 0, after
 * which the ancestors were never set again. */
static void test_chain_failure(void)
{
	struct daemon_settings ds = { 0 };
	struct backend_env env = { .settings = &ds, .cgroup_root = root, .state_dir_fd = -1 };
	struct protect_target t;
	void *s;

	env.cgroup_root_fd = open(root, O_RDONLY | O_DIRECTORY);
	make_cgroup("w.slice", "0\n");
	make_cgroup("w.slice/x.service", "0\n");
	make_cgroup("w.slice/y.service", "0\n");
	CHECK_EQ_INT(backend_kernel_ops.create(&env, &s), 0);
	/* The leaf's own entry, then "/w.slice", then the leaf again: fail it. */
	t = target(800, "/w.slice/x.service");
	strndup_fail_in = 2;
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), -ENOMEM);
	strndup_fail_in = -1;
	backend_kernel_ops.release(s, 800);
	t = target(801, "/w.slice/y.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_STREQ(string_of("w.slice"), "max");
	CHECK_STREQ(string_of("w.slice/y.service"), "max");
	backend_kernel_ops.release(s, 801);
	CHECK_STREQ(string_of("w.slice"), "0");
	backend_kernel_ops.destroy(s);
	close(env.cgroup_root_fd);
}

/* 800 units protected one after another and released: the state file
 * gets what changed, not the whole set at every change (which was 1,602
 * rewrites and 17 MB). It stays what a restart after a crash needs. */
static void test_state_journal(void)
{
	struct daemon_settings ds = { 0 };
	struct backend_env env = { .settings = &ds, .cgroup_root = root };
	char state[512], rel[64], cg[64];
	unsigned long long before;
	_cleanup_free_ char *text = NULL;
	size_t len;
	void *s;

	snprintf(state, sizeof(state), "%s/state", root);
	CHECK(mkdir(state, 0700) == 0);
	env.state_dir_fd = open(state, O_RDONLY | O_DIRECTORY);
	env.cgroup_root_fd = open(root, O_RDONLY | O_DIRECTORY);
	make_cgroup("j.slice", "0\n");
	for (int i = 0; i < 800; i++) {
		snprintf(rel, sizeof(rel), "j.slice/u%d.service", i);
		make_cgroup(rel, "0\n");
	}
	log_setup(LOG_TARGET_STDERR, LOG_WARNING);
	CHECK_EQ_INT(backend_kernel_ops.create(&env, &s), 0);
	before = written();
	for (int i = 0; i < 800; i++) {
		struct protect_target t;

		snprintf(cg, sizeof(cg), "/j.slice/u%d.service", i);
		t = target(1000 + i, cg);
		CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	}
	CHECK_EQ_INT(journal_set(env.state_dir_fd), 801);
	for (int i = 0; i < 400; i++)
		backend_kernel_ops.release(s, 1000 + i);
	/* Written: a line per change (and a rewrite now and then), where
	 * every change rewrote the whole set before (over 17 MB here). */
	CHECK(written() - before < 256 * 1024);
	/* After a crash here the next start knows which are its own. */
	CHECK_EQ_INT(journal_set(env.state_dir_fd), 401);
	for (int i = 400; i < 800; i++)
		backend_kernel_ops.release(s, 1000 + i);
	CHECK_STREQ(string_of("j.slice"), "0");
	fprintf(stderr, "800 units protected and released: %llu bytes written (state file and memory.exec_protect)\n",
		written() - before);
	backend_kernel_ops.destroy(s);
	CHECK_EQ_INT(read_file_at(env.state_dir_fd, "kernel-owned", 1 << 24, &text, &len), 0);
	CHECK_EQ_INT(len, 0);
	log_setup(LOG_TARGET_STDERR, LOG_INFO);
	close(env.state_dir_fd);
	close(env.cgroup_root_fd);
}

/* The push path: a cgroup protected as such is one holder beside its
 * protected processes; its bound follows a new decision. */
static void test_cgroup_holder(void)
{
	struct daemon_settings ds = { 0 };
	struct backend_env env = { .settings = &ds, .cgroup_root = root, .state_dir_fd = -1 };
	struct rule_settings small = { .protect = 1, .exec_protect_limit = 16 << 20 };
	struct protect_target t;
	void *s;

	env.cgroup_root_fd = open(root, O_RDONLY | O_DIRECTORY);
	make_cgroup("p.slice", "0\n");
	make_cgroup("p.slice/u.service", "0\n");
	make_cgroup("p.slice/u.service/sub", "0\n");
	CHECK_EQ_INT(backend_kernel_ops.create(&env, &s), 0);
	CHECK_EQ_INT(backend_kernel_ops.protect_cgroup(s, "/p.slice/u.service", NULL), 0);
	CHECK_EQ_INT(backend_kernel_ops.protect_cgroup(s, "/p.slice/u.service", NULL), 0); /* again: one holder */
	CHECK_STREQ(string_of("p.slice"), "max");
	CHECK_STREQ(string_of("p.slice/u.service"), "max");
	CHECK_EQ_INT(backend_kernel_ops.protect_cgroup(s, "/p.slice/u.service/sub", &small), 0);
	CHECK_STREQ(string_of("p.slice/u.service/sub"), "16777216");
	/* A process there too: the cgroup stays with either holder. */
	t = target(900, "/p.slice/u.service");
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	backend_kernel_ops.release_cgroup(s, "/p.slice/u.service");
	CHECK_STREQ(string_of("p.slice/u.service"), "max");
	backend_kernel_ops.release(s, 900);
	CHECK_STREQ(string_of("p.slice/u.service"), "max"); /* an ancestor of sub */
	CHECK_EQ_INT(backend_kernel_ops.protect_cgroup(s, "/p.slice/u.service/sub", NULL), 0);
	CHECK_STREQ(string_of("p.slice/u.service/sub"), "max");
	backend_kernel_ops.release_cgroup(s, "/p.slice/u.service/sub");
	CHECK_STREQ(string_of("p.slice/u.service/sub"), "0");
	CHECK_STREQ(string_of("p.slice/u.service"), "0");
	CHECK_STREQ(string_of("p.slice"), "0");
	backend_kernel_ops.release_cgroup(s, "/p.slice/u.service/sub"); /* not held: nothing */
	CHECK_EQ_INT(backend_kernel_ops.protect_cgroup(s, "/", NULL), -EINVAL);
	/* Made before its memory controller is enabled (no file yet): held,
	 * not in force; in force when asked again once the file is there. */
	make_cgroup("p.slice/early", NULL);
	CHECK_EQ_INT(backend_kernel_ops.protect_cgroup(s, "/p.slice/early", NULL), 1);
	CHECK_STREQ(string_of("p.slice"), "max");
	{
		char p[512];
		FILE *f;

		snprintf(p, sizeof(p), "%s/p.slice/early/memory.exec_protect", root);
		f = fopen(p, "w");
		CHECK(f != NULL);
		if (f) {
			fputs("0\n", f);
			fclose(f);
		}
	}
	CHECK_EQ_INT(backend_kernel_ops.protect_cgroup(s, "/p.slice/early", NULL), 0);
	CHECK_STREQ(string_of("p.slice/early"), "max");
	backend_kernel_ops.release_cgroup(s, "/p.slice/early");
	CHECK_STREQ(string_of("p.slice/early"), "0");
	CHECK_STREQ(string_of("p.slice"), "0");
	backend_kernel_ops.destroy(s);
	close(env.cgroup_root_fd);
}

static void test_dry_run(void)
{
	struct daemon_settings ds = { 0 };
	struct backend_env env = { .settings = &ds, .dry_run = true, .cgroup_root = root };
	struct protect_target t = target(700, "/system.slice/a.service");
	void *s;

	env.cgroup_root_fd = open(root, O_RDONLY | O_DIRECTORY);
	CHECK_EQ_INT(backend_kernel_ops.create(&env, &s), 0);
	CHECK_EQ_INT(backend_kernel_ops.protect(s, &t), 0);
	CHECK_EQ_INT(value_of("system.slice/a.service"), '0');
	backend_kernel_ops.destroy(s);
	close(env.cgroup_root_fd);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		CHECK(system(cmd) == 0);
	}
}

TEST_MAIN(test_chain, test_limit, test_chain_failure, test_state_journal, test_cgroup_holder, test_dry_run)
