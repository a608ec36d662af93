/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The figures behind execguardctl status and libs: smaps, memory.stat,
 * memory.events, /proc/PID/stat, memory.exec_protect up the tree. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus-stats.h"
#include "procfs.h"
#include "test.h"
#include "util.h"

static void test_smaps(void)
{
	static const char t[] =
		"55d056b5b000-55d056b7f000 r-xp 00004000 fe:01 247476                     /usr/bin/grep\n"
		"Size:                144 kB\n"
		"KernelPageSize:        4 kB\n"
		"Rss:                 100 kB\n"
		"VmFlags: rd ex mr mw me \n"
		"55d056b7f000-55d056b87000 r--p 00028000 fe:01 247476                     /usr/bin/grep\n"
		"Size:                 32 kB\n"
		"Rss:                  32 kB\n"
		"7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"
		"Size:                  4 kB\n"
		"Rss:                   4 kB\n"
		"7f1000000000-7f1000002000 r-xp 00001000 fe:01 99 /usr/lib/libx.so (deleted)\n"
		"Size:                  8 kB\n"
		"Rss:                   0 kB\n";
	struct text_mappings m;

	CHECK_EQ_INT(smaps_parse_exec(t, sizeof(t) - 1, &m), 0);
	CHECK_EQ_INT(m.n, 2);
	if (m.n == 2) {
		CHECK_STREQ(m.items[0].path, "/usr/bin/grep");
		CHECK_EQ_INT(m.items[0].size, 144 * 1024);
		CHECK_EQ_INT(m.items[0].rss, 100 * 1024);
		CHECK_EQ_INT(m.items[0].ino, 247476);
		CHECK_EQ_INT(m.items[0].offset, 0x4000);
		CHECK_STREQ(m.items[1].path, "/usr/lib/libx.so");
		CHECK_EQ_INT(m.items[1].rss, 0);
	}
	text_mappings_done(&m);
	CHECK_EQ_INT(smaps_parse_exec("garbage\n", 8, &m), -EINVAL);
}

static void test_keyed(void)
{
	static const char stat[] = "anon 4096\nfile 8192\npgmajfault 17\npgmajfault_exec 5\n";
	uint64_t v = 0;

	CHECK_EQ_INT(procfs_field_u64(stat, sizeof(stat) - 1, "pgmajfault", ' ', &v), 0);
	CHECK_EQ_INT(v, 17);
	CHECK_EQ_INT(procfs_field_u64(stat, sizeof(stat) - 1, "pgmajfault_exec", ' ', &v), 0);
	CHECK_EQ_INT(v, 5);
	CHECK_EQ_INT(procfs_field_u64(stat, sizeof(stat) - 1, "pgfault", ' ', &v), -ENOENT);
	CHECK_EQ_INT(procfs_field_u64("low 1 x\n", 8, "low", ' ', &v), -EINVAL);
}

static void test_majflt(void)
{
	/* A comm with ") " inside must not shift the fields. */
	static const char t[] = "1234 (a) b (c) S 1 1234 1234 0 -1 4194560 120 0 42 0 3 4\n";
	uint64_t v = 0;

	CHECK_EQ_INT(proc_stat_majflt(t, sizeof(t) - 1, &v), 0);
	CHECK_EQ_INT(v, 42);
	CHECK_EQ_INT(proc_stat_majflt("1234 noparen", 12, &v), -EINVAL);
	/* utime 3 + stime 4, after cmajflt 0. */
	CHECK_EQ_INT(proc_stat_cpu_ticks(t, sizeof(t) - 1, &v), 0);
	CHECK_EQ_INT(v, 7);
	CHECK_EQ_INT(proc_stat_cpu_ticks("1 (x) S 1 1", 11, &v), -EINVAL);
}

static void put(int dfd, const char *path, const char *v)
{
	int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	CHECK(fd >= 0 && write(fd, v, strlen(v)) == (ssize_t)strlen(v));
	close(fd);
}

static void test_effective(void)
{
	char dir[] = "/tmp/test-bus-stats-XXXXXX";
	char *where = NULL;
	uint64_t bound = 0;
	int dfd;

	CHECK(mkdtemp(dir) != NULL);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(mkdirat(dfd, "s.slice", 0755) == 0 && mkdirat(dfd, "s.slice/a.service", 0755) == 0);
	put(dfd, "s.slice/memory.exec_protect", "0\n");
	put(dfd, "s.slice/a.service/memory.exec_protect", "max\n");
	/* As the kernel series writes it (the v1 name was exec_protect). */
	put(dfd, "s.slice/a.service/memory.events", "low 0\nhigh 0\noom 0\nexec_protect_breach 3\n");
	put(dfd, "s.slice/a.service/memory.stat", "anon 0\nfile 4096\nexec_protect_usage 1048576\n");
	CHECK_EQ_INT(read_exec_protect_effective(dfd, "/s.slice/a.service", &bound, &where), 0);
	CHECK_STREQ(where, "/s.slice");
	free(where);
	/* On: a bound in bytes or max, the smallest up the chain. */
	put(dfd, "s.slice/memory.exec_protect", "16777216\n");
	CHECK_EQ_INT(read_exec_protect_effective(dfd, "/s.slice/a.service", &bound, &where), 1);
	CHECK(bound == 16777216);
	put(dfd, "s.slice/memory.exec_protect", "max\n");
	CHECK_EQ_INT(read_exec_protect_effective(dfd, "/s.slice/a.service", &bound, &where), 1);
	CHECK(bound == UINT64_MAX);
	put(dfd, "s.slice/a.service/memory.exec_protect", "8388608\n");
	CHECK_EQ_INT(read_exec_protect_effective(dfd, "/s.slice/a.service", &bound, &where), 1);
	CHECK(bound == 8388608);
	put(dfd, "s.slice/a.service/memory.exec_protect", "bogus\n");
	CHECK_EQ_INT(read_exec_protect_effective(dfd, "/s.slice/a.service", &bound, &where), -EINVAL);
	CHECK_EQ_INT(read_exec_protect_effective(dfd, "/s.slice/none", &bound, &where), -ENOENT);
	CHECK_EQ_INT(read_exec_protect_effective(dfd, "/s.slice/../x", &bound, &where), -ENOENT);
	CHECK(read_cgroup_exec_usage(dfd, "/s.slice/a.service") == 1048576);
	CHECK(read_cgroup_exec_usage(dfd, "/s.slice") == STAT_UNKNOWN);
	CHECK(exec_protect_is_off("0\n") && exec_protect_is_off("0") && !exec_protect_is_off("max\n") &&
	      !exec_protect_is_off("4096\n") && !exec_protect_is_off("01"));
	CHECK_EQ_INT(read_cgroup_breaches(dfd, "/s.slice/a.service"), 3);
	CHECK(read_cgroup_breaches(dfd, "/s.slice") == STAT_UNKNOWN);
	unlinkat(dfd, "s.slice/a.service/memory.events", 0);
	unlinkat(dfd, "s.slice/a.service/memory.stat", 0);
	unlinkat(dfd, "s.slice/a.service/memory.exec_protect", 0);
	unlinkat(dfd, "s.slice/memory.exec_protect", 0);
	unlinkat(dfd, "s.slice/a.service", AT_REMOVEDIR);
	unlinkat(dfd, "s.slice", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir);
}

TEST_MAIN(test_smaps, test_keyed, test_majflt, test_effective)
