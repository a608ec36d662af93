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

TEST_MAIN(test_chain, test_limit, test_dry_run)
