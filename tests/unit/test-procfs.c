/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one parser of keyed /proc and cgroupfs lines (procfs.h). */
#include <errno.h>
#include <string.h>

#include "procfs.h"
#include "test.h"
#include "util.h"

static void test_meminfo(void)
{
	static const char mi[] = "MemTotal:        1015128 kB\nMemFree:            8456 kB\n"
				 "MemAvailable:      37148 kB\nMlocked:          939008 kB\n";
	static const struct {
		const char *in;
		int r;
		uint64_t v;
	} t[] = {
		{ "MemTotal:       24683584 kB\nMemFree: 1 kB\n", 0, 24683584ull * 1024 },
		{ "MemFree: 1 kB\nMemTotal: 2 kB", 0, 2048 },
		{ "MemTotal: kB\n", -EINVAL, 0 },
		{ "MemTotal: 12 MB\n", -EINVAL, 0 },
		{ "MemTotal: 12 kBx\n", -EINVAL, 0 },
		{ "MemFree: 1 kB\n", -ENOENT, 0 },
		{ "MemTotal: 99999999999999999999999 kB\n", -ERANGE, 0 },
		{ "MemTotal: 18014398509481984 kB\n", -ERANGE, 0 }, /* 2^54 kB: over 64 bits in bytes */
	};
	uint64_t v = 0;

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		int r = procfs_field_kb(t[i].in, strlen(t[i].in), "MemTotal", &v);

		CHECK_EQ_INT(r, t[i].r);
		if (r == 0)
			CHECK(v == t[i].v);
	}
	CHECK(procfs_field_kb(mi, strlen(mi), "MemAvailable", &v) == 0 && v == 37148ull * 1024);
	/* A key is whole: "Mem" is not MemFree. */
	CHECK_EQ_INT(procfs_field_kb(mi, strlen(mi), "Mem", &v), -ENOENT);
	CHECK_EQ_INT(procfs_field_kb(mi, strlen(mi), "SwapTotal", &v), -ENOENT);
	CHECK_EQ_INT(procfs_field_kb("MemAvailable: x kB\n", 19, "MemAvailable", &v), -EINVAL);
	/* The buffer need not end in a NUL: the length is the end. */
	CHECK(procfs_field_kb("MemTotal: 4 kB9", 14, "MemTotal", &v) == 0 && v == 4096);
}

static void test_memstat(void)
{
	static const char st[] = "anon 1000\nfile 2000\nactive_file 300\ninactive_file 700\n"
				 "unevictable 4096\ntotal_active_file 5\n";
	static const char v1[] = "cache 1\nhierarchical_memory_limit 33554432\n"
				 "total_inactive_file 4096\ntotal_active_file 8192";
	uint64_t v = 0;

	CHECK(procfs_field_u64(st, strlen(st), "active_file", ' ', &v) == 0 && v == 300);
	CHECK(procfs_field_u64(st, strlen(st), "inactive_file", ' ', &v) == 0 && v == 700);
	CHECK(procfs_field_u64(st, strlen(st), "file", ' ', &v) == 0 && v == 2000);
	CHECK_EQ_INT(procfs_field_u64(st, strlen(st), "active_anon", ' ', &v), -ENOENT);
	CHECK(procfs_field_u64(v1, strlen(v1), "total_active_file", ' ', &v) == 0 && v == 8192);
	CHECK(procfs_field_u64(v1, strlen(v1), "hierarchical_memory_limit", ' ', &v) == 0 && v == 33554432);
	CHECK_EQ_INT(procfs_field_u64("file 12x\n", 9, "file", ' ', &v), -EINVAL);
	CHECK_EQ_INT(procfs_field_u64("file \n", 6, "file", ' ', &v), -EINVAL);
	CHECK_EQ_INT(procfs_field_u64("file 99999999999999999999\n", 26, "file", ' ', &v), -ERANGE);
	CHECK(procfs_parse_u64("42", 2, &v) == 0 && v == 42);
	CHECK_EQ_INT(procfs_parse_u64("", 0, &v), -EINVAL);
	CHECK_EQ_INT(procfs_parse_u64("4 2", 3, &v), -EINVAL);
}

static void test_field(void)
{
	static const char s[] = "Name:\tsleep\nState:\tS (sleeping)\nUid:\t0\t0\t0\t0\n";
	const char *v;
	size_t n;

	CHECK(procfs_field(s, strlen(s), "State", ':', &v, &n) == 0 && n == 12 &&
	      memcmp(v, "S (sleeping)", 12) == 0);
	/* Blanks after the separator and at the end are not the value. */
	CHECK(procfs_field("k:  \t v \t\n", 10, "k", ':', &v, &n) == 0 && n == 1 && v[0] == 'v');
	CHECK(procfs_field("k:\n", 3, "k", ':', &v, &n) == 0 && n == 0);
	CHECK_EQ_INT(procfs_field("k 1\n", 4, "k", ':', &v, &n), -ENOENT);
	CHECK_EQ_INT(procfs_field("", 0, "k", ':', &v, &n), -ENOENT);
}

static void test_status(void)
{
	static const char running[] = "Name:\tsleep\nState:\tS (sleeping)\nThreads:\t1\n"
				      "CapEff:\t000001ffffffffff\n";
	static const char zombie[] = "Name:\tx\nState:\tZ (zombie)\nThreads:\t1\n";
	static const char zombie_leader[] = "State:\tZ (zombie)\nThreads:\t3\n";
	struct proc_status st;

	CHECK_EQ_INT(proc_status_parse(running, strlen(running), &st), 0);
	CHECK(st.state == 'S' && st.threads == 1 && st.has_cap_eff && st.cap_eff == 0x1ffffffffffULL);
	CHECK(!proc_status_exited(&st));
	CHECK_EQ_INT(proc_status_parse(zombie, strlen(zombie), &st), 0);
	CHECK(proc_status_exited(&st) && !st.has_cap_eff);
	/* A zombie leader whose threads still run has not exited. */
	CHECK_EQ_INT(proc_status_parse(zombie_leader, strlen(zombie_leader), &st), 0);
	CHECK(!proc_status_exited(&st));
	CHECK_EQ_INT(proc_status_parse("Name:\tx\n", 8, &st), -ENOENT);
	CHECK_EQ_INT(proc_status_parse("State:\n", 7, &st), -EINVAL);
	CHECK_EQ_INT(proc_status_parse("State:\tS\nThreads:\tmany\n", 23, &st), -EINVAL);
	CHECK_EQ_INT(proc_status_parse("State:\tS\nCapEff:\t0000000000000000f\n", 35, &st), -EINVAL);
	CHECK_EQ_INT(proc_status_parse("State:\tS\nCapEff:\tfg\n", 20, &st), -EINVAL);
}

/* The fields after the comm: the last ')' counts, the output is cut and
 * terminated. */
static void test_stat_tail(void)
{
	const char *st = "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 7 0";
	char out[64], small[5];

	CHECK_EQ_INT(procfs_stat_tail(st, strlen(st), out, sizeof(out)), 0);
	CHECK_STREQ(out, " S 1 42 42 0 -1 4194560 100 0 7 0");
	CHECK_EQ_INT(procfs_stat_tail(st, strlen(st), small, sizeof(small)), 0);
	CHECK_STREQ(small, " S 1");
	CHECK_EQ_INT(procfs_stat_tail("42 (a S 1", 9, out, sizeof(out)), -EINVAL);
	CHECK_EQ_INT(procfs_stat_tail("", 0, out, sizeof(out)), -EINVAL);
	/* Not NUL-terminated: only len bytes are read. */
	CHECK_EQ_INT(procfs_stat_tail("1 (x) R 1 junk", 9, out, sizeof(out)), 0);
	CHECK_STREQ(out, " R 1");
}

TEST_MAIN(test_stat_tail, test_meminfo, test_memstat, test_field, test_status)
