/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <unistd.h>

#include "cgroup.h"
#include "test.h"
#include "util.h"

static void test_proc_cgroup(void)
{
	const char *hybrid = "9:name=systemd:/\n4:memory:/x\n0::/system.slice/nginx.service\n";
	const char *v1only = "4:memory:/x\n1:cpu:/\n";
	const char *forged = "0::/evil\n0::/system.slice/sshd.service\n";
	char *p = NULL;

	CHECK_EQ_INT(cgroup_parse_proc_cgroup(hybrid, strlen(hybrid), &p), 0);
	CHECK_STREQ(p, "/system.slice/nginx.service");
	free(p);
	CHECK_EQ_INT(cgroup_parse_proc_cgroup("0::/\n", 5, &p), 0);
	CHECK_STREQ(p, "/");
	free(p);
	CHECK_EQ_INT(cgroup_parse_proc_cgroup(v1only, strlen(v1only), &p), -ENOENT);
	CHECK_EQ_INT(cgroup_parse_proc_cgroup(forged, strlen(forged), &p), -EBADMSG);
	CHECK_EQ_INT(cgroup_parse_proc_cgroup("0::\n", 4, &p), -EBADMSG);
	CHECK_EQ_INT(cgroup_parse_proc_cgroup("0::relative\n", 12, &p), -EBADMSG);
}

static void test_unit(void)
{
	static const struct {
		const char *path, *unit;
	} cases[] = {
		{ "/system.slice/nginx.service", "nginx.service" },
		{ "/system.slice/nginx.service/worker", "nginx.service" },
		{ "/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service" },
		{ "/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service", "user@1000.service" },
		{ "/user.slice/user-1000.slice/session-3.scope", "session-3.scope" },
		{ "/init.scope", "init.scope" },
		{ "/system.slice/foo\\x2dbar.service", "foo\\x2dbar.service" },
		{ "/", NULL },
		{ "/system.slice", NULL },
		{ "/execguard-test-1", NULL },
		{ "/docker/abc123", NULL },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *u = NULL;
		int r = cgroup_path_to_unit(cases[i].path, &u);

		if (cases[i].unit) {
			CHECK_EQ_INT(r, 0);
			CHECK_STREQ(u, cases[i].unit);
		} else {
			CHECK_EQ_INT(r, -ENXIO);
		}
		free(u);
	}
}

static void test_relative(void)
{
	const char *r = NULL;

	CHECK_EQ_INT(cgroup_relative("/a/b", &r), 0);
	CHECK_STREQ(r, "a/b");
	CHECK_EQ_INT(cgroup_relative("/", &r), 0);
	CHECK_STREQ(r, ".");
	CHECK_EQ_INT(cgroup_relative("/a/../b", &r), -EINVAL);
	CHECK_EQ_INT(cgroup_relative("/a/./b", &r), -EINVAL);
	CHECK_EQ_INT(cgroup_relative("a/b", &r), -EINVAL);
	CHECK_EQ_INT(cgroup_relative("/a/..b", &r), 0);
}

static void check_mount_of(int (*find)(const char *, char **), const char *mountinfo, int want_r,
			   const char *want)
{
	char path[] = "/tmp/execguard-mountinfo-XXXXXX";
	int fd = mkstemp(path);
	char *found = NULL;

	CHECK(fd >= 0);
	CHECK(write(fd, mountinfo, strlen(mountinfo)) == (ssize_t)strlen(mountinfo));
	close(fd);
	CHECK_EQ_INT(find(path, &found), want_r);
	if (want)
		CHECK_STREQ(found, want);
	free(found);
	unlink(path);
}

static void check_mount(const char *mountinfo, int want_r, const char *want)
{
	check_mount_of(cgroup2_find_mount, mountinfo, want_r, want);
}

static void test_find_mount(void)
{
	check_mount("25 1 0:23 / /sys rw,nosuid - sysfs sysfs rw\n"
		    "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate\n",
		    0, "/sys/fs/cgroup");
	check_mount("30 25 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
		    "31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
		    "32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
		    0, "/sys/fs/cgroup/unified");
	check_mount("32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", -ENOENT, NULL);
	/* This machine's own table has one (or the test says which). */
	{
		char *p = NULL;
		int r = cgroup2_find_mount(NULL, &p);

		fprintf(stderr, "this machine: cgroup2 %s\n", r == 0 ? p : "not mounted");
		free(p);
	}
}

/* The v1 memory hierarchy: the controller is a super option, whole. */
static void test_find_memory_mount(void)
{
	static const char hybrid[] =
		"30 25 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
		"31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
		"33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		"34 30 0:30 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n";

	check_mount_of(cgroup1_find_memory_mount, hybrid, 0, "/sys/fs/cgroup/memory");
	check_mount_of(cgroup1_find_memory_mount,
		       "35 30 0:31 / /sys/fs/cgroup/x rw - cgroup cgroup rw,memory_pressure\n"
		       "36 30 0:32 / /sys/fs/cgroup/m rw - cgroup cgroup rw,xattr,memory,release_agent=/a\n",
		       0, "/sys/fs/cgroup/m");
	/* "memory" among the mount (not super) options of a cgroup2 mount
	 * or of another file system is not a v1 memory hierarchy. */
	check_mount_of(cgroup1_find_memory_mount,
		       "31 30 0:27 / /sys/fs/cgroup rw,memory - cgroup2 cgroup2 rw,memory_recursiveprot\n"
		       "37 30 0:33 / /mnt rw - tmpfs tmpfs rw,memory\n",
		       -ENOENT, NULL);
}

static void check_ancestors(const char *path, const char *want)
{
	char got[256] = "";

	for (size_t l = 0; cgroup_next_ancestor(path, &l);) {
		CHECK(strlen(got) + l + 2 < sizeof(got));
		strncat(got, path, l);
		strcat(got, "|");
	}
	CHECK_STREQ(got, want);
}

static void test_ancestors(void)
{
	check_ancestors("/a/b/c", "/a|/a/b|/a/b/c|");
	check_ancestors("/system.slice/x.service", "/system.slice|/system.slice/x.service|");
	check_ancestors("a/b", "a|a/b|");
	check_ancestors("//a//b/", "//a|//a//b|");
	check_ancestors("/", "");
	check_ancestors("", "");
}

static void test_unit_root(void)
{
	const char *found;
	size_t len;
	char *r;

	r = cgroup_unit_root("/machine.slice/libpod-ab.scope/container", "libpod-ab.scope");
	CHECK_STREQ(r, "/machine.slice/libpod-ab.scope");
	free(r);
	r = cgroup_unit_root("/system.slice/x.service", "x.service");
	CHECK_STREQ(r, "/system.slice/x.service");
	free(r);
	/* A component that only contains the name is not it. */
	r = cgroup_unit_root("/a/xx.service/b", "x.service");
	CHECK_STREQ(r, "/a/xx.service/b");
	free(r);
	CHECK_EQ_INT(cgroup_find_proc_cgroup("0::/a/b\n", 8, &found, &len), 0);
	CHECK_EQ_INT(len, 4);
	CHECK(strncmp(found, "/a/b", len) == 0);
}

TEST_MAIN(test_unit_root, test_proc_cgroup, test_unit, test_relative, test_find_mount, test_find_memory_mount, test_ancestors)
