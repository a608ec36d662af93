/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text-fault estimate's pure parts, fed synthetic samples, and the
 * reader on a fake cgroup tree. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "textfault.h"
#include "util.h"

static void test_parse_stat(void)
{
	const char *s = "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 7 0 1 2 0 0 20 0 1 0 12345 0 0\n";
	uint64_t maj = 0, start = 0;

	CHECK_EQ_INT(text_faults_parse_stat(s, strlen(s), &maj, &start), 0);
	CHECK_EQ_INT(maj, 7);
	CHECK_EQ_INT(start, 12345);
	CHECK(text_faults_parse_stat("42 (x S 1", 9, &maj, &start) < 0);
	CHECK(text_faults_parse_stat("42 (x) S 1 2 3", 14, &maj, &start) < 0);
	CHECK(text_faults_parse_stat("", 0, &maj, &start) < 0);
}

#define P(pid, start, maj) { pid, start, maj }

static void test_proc_delta(void)
{
	const struct text_faults_proc before[] = { P(10, 100, 5), P(20, 100, 50), P(30, 150, 0) };
	/* No change: nothing. */
	CHECK_EQ_INT(text_faults_proc_delta(before, 3, 200, before, 3), 0);
	/* Growth of the ones that stay. */
	const struct text_faults_proc grew[] = { P(10, 100, 8), P(20, 100, 51), P(30, 150, 0) };
	CHECK_EQ_INT(text_faults_proc_delta(before, 3, 200, grew, 3), 4);
	/* An exit takes nothing away: its faults were counted already. */
	const struct text_faults_proc exited[] = { P(10, 100, 6), P(30, 150, 0) };
	CHECK_EQ_INT(text_faults_proc_delta(before, 3, 200, exited, 2), 1);
	/* A process born since the last look brings its own faults... */
	const struct text_faults_proc born[] = { P(10, 100, 5), P(15, 210, 9), P(20, 100, 50), P(30, 150, 0) };
	CHECK_EQ_INT(text_faults_proc_delta(before, 3, 200, born, 4), 9);
	/* ...one that was there before and moved in does not (its faults
	 * were taken elsewhere). */
	const struct text_faults_proc moved[] = { P(10, 100, 5), P(15, 20, 900), P(20, 100, 50), P(30, 150, 0) };
	CHECK_EQ_INT(text_faults_proc_delta(before, 3, 200, moved, 4), 0);
	/* A reused pid is a new process: not "majflt went down". */
	const struct text_faults_proc reused[] = { P(10, 100, 5), P(20, 205, 3), P(30, 150, 0) };
	CHECK_EQ_INT(text_faults_proc_delta(before, 3, 200, reused, 3), 3);
	const struct text_faults_proc old_reuse[] = { P(10, 100, 5), P(20, 120, 3), P(30, 150, 0) };
	CHECK_EQ_INT(text_faults_proc_delta(before, 3, 200, old_reuse, 3), 0);
	/* The first sample: nothing is new. */
	CHECK_EQ_INT(text_faults_proc_delta(NULL, 0, UINT64_MAX, born, 4), 0);
	/* After a sample with no process, a new one counts. */
	CHECK_EQ_INT(text_faults_proc_delta(NULL, 0, 200, born, 4), 9);
	/* All gone. */
	CHECK_EQ_INT(text_faults_proc_delta(before, 3, 200, NULL, 0), 0);
}

static void fill(unsigned char *vec, size_t n, size_t from, size_t to, int v)
{
	for (size_t i = from; i < to && i < n; i++)
		vec[i] = (unsigned char)v;
}

static void test_residency(void)
{
	enum { N = 1000 };
	uint64_t bits[(N + 63) / 64] = { 0 };
	unsigned char vec[N];
	struct text_faults_residency_delta d;

	/* All resident: the first look only sets the base (windows over what
	 * "came back" from nothing are the caller's to ignore). */
	fill(vec, N, 0, N, 1);
	text_faults_residency_step(bits, vec, N, 32, &d);
	CHECK_EQ_INT(d.came_back, N);
	/* No change: nothing. */
	text_faults_residency_step(bits, vec, N, 32, &d);
	CHECK_EQ_INT(d.evicted, 0);
	CHECK_EQ_INT(d.came_back, 0);
	CHECK_EQ_INT(d.windows, 0);
	/* Eviction of 100..299. */
	fill(vec, N, 100, 300, 0);
	text_faults_residency_step(bits, vec, N, 32, &d);
	CHECK_EQ_INT(d.evicted, 200);
	CHECK_EQ_INT(d.came_back, 0);
	CHECK_EQ_INT(d.windows, 0);
	/* 40 contiguous pages come back: two read-around windows. */
	fill(vec, N, 100, 140, 1);
	text_faults_residency_step(bits, vec, N, 32, &d);
	CHECK_EQ_INT(d.evicted, 0);
	CHECK_EQ_INT(d.came_back, 40);
	CHECK_EQ_INT(d.windows, 2);
	/* Scattered single pages, each further apart than a window: one
	 * window each. */
	for (size_t i = 150; i < 300; i += 40)
		vec[i] = 1;
	text_faults_residency_step(bits, vec, N, 32, &d);
	CHECK_EQ_INT(d.came_back, 4);
	CHECK_EQ_INT(d.windows, 4);
	/* Single pages 8 apart with pages not cached between them: each
	 * came by a read of its own (a window would have read the gap). */
	fill(vec, N, 600, 700, 0);
	text_faults_residency_step(bits, vec, N, 32, &d);
	for (size_t i = 600; i < 624; i += 8)
		vec[i] = 1;
	text_faults_residency_step(bits, vec, N, 32, &d);
	CHECK_EQ_INT(d.came_back, 3);
	CHECK_EQ_INT(d.windows, 3);
	/* The same with the gaps cached (resident before and now): one
	 * window can have brought them all. */
	fill(vec, N, 650, 674, 1);
	for (size_t i = 650; i < 674; i += 8)
		vec[i] = 0;
	text_faults_residency_step(bits, vec, N, 32, &d);
	for (size_t i = 650; i < 674; i += 8)
		vec[i] = 1;
	text_faults_residency_step(bits, vec, N, 32, &d);
	CHECK_EQ_INT(d.came_back, 3);
	CHECK_EQ_INT(d.windows, 1);
	fill(vec, N, 600, 700, 1);
	text_faults_residency_step(bits, vec, N, 32, &d);
	/* Bits above what vec says are left alone past n_pages. */
	text_faults_residency_step(bits, vec, 64, 32, &d);
	CHECK_EQ_INT(d.came_back, 0);
	/* Mincore's other bits are not residency. */
	fill(vec, N, 0, N, 0xfe);
	text_faults_residency_step(bits, vec, N, 32, &d);
	CHECK_EQ_INT(d.came_back, 0);
	CHECK_EQ_INT(d.evicted, N - 200 + 44);
	/* A window of 0 is taken as 1. */
	fill(vec, N, 0, 3, 1);
	text_faults_residency_step(bits, vec, N, 0, &d);
	CHECK_EQ_INT(d.windows, 3);
}

static void test_estimate(void)
{
	struct text_faults_estimate e = TEXT_FAULTS_ESTIMATE_INIT;
	uint64_t last = 0;

	/* Without evidence all major faults count as text. */
	CHECK_EQ_INT(text_faults_estimate_step(&e, 10, 0, 0), 10);
	/* Nothing happened: nothing counted. */
	CHECK_EQ_INT(text_faults_estimate_step(&e, 0, 0, 0), 10);
	CHECK_EQ_INT(text_faults_estimate_step(&e, 0, 5, 0), 10);
	/* Only data came back: the share falls, and stays without news. */
	for (int i = 0; i < 20; i++)
		text_faults_estimate_step(&e, 0, 0, 50);
	CHECK(e.share < 0.01);
	last = text_faults_estimate_step(&e, 100, 0, 0);
	CHECK(last - 10 <= 1);
	/* Half and half. */
	for (int i = 0; i < 20; i++)
		text_faults_estimate_step(&e, 0, 50, 50);
	CHECK(e.share > 0.45 && e.share < 0.55);
	last = e.faults;
	CHECK_EQ_INT(text_faults_estimate_step(&e, 1000, 500, 500) - last, 500);
	/* Fractions are carried, not lost: 3 x 0.5 is 1.5, then 2. */
	e = (struct text_faults_estimate){ .share = 0.5 };
	text_faults_estimate_step(&e, 1, 0, 0);
	text_faults_estimate_step(&e, 1, 0, 0);
	text_faults_estimate_step(&e, 1, 0, 0);
	CHECK_EQ_INT(e.faults, 1);
	text_faults_estimate_step(&e, 1, 0, 0);
	CHECK_EQ_INT(e.faults, 2);
	/* Never backwards, whatever comes (a broken share is reset). */
	e = (struct text_faults_estimate){ .share = -3.0 };
	srand(1);
	last = 0;
	for (int i = 0; i < 10000; i++) {
		uint64_t f = text_faults_estimate_step(&e, (uint64_t)(rand() % 100), (uint64_t)(rand() % 7),
						       (uint64_t)(rand() % 7));
		CHECK(f >= last);
		last = f;
	}
	CHECK(e.share >= 0.0 && e.share <= 1.0);
}

static void test_maps_line(void)
{
	struct text_faults_range r;
	const char *l;

	l = "7f0000001000-7f0000003000 r-xp 00001000 08:01 1234    /usr/lib/libc.so.6\n";
	CHECK_EQ_INT(text_faults_parse_maps_line(l, strlen(l), &r), 1);
	CHECK(r.exec);
	CHECK_EQ_INT(r.start, 0x7f0000001000);
	CHECK_EQ_INT(r.end, 0x7f0000003000);
	CHECK_EQ_INT(r.offset, 0x1000);
	CHECK_EQ_INT(r.dev_major, 8);
	CHECK_EQ_INT(r.dev_minor, 1);
	CHECK_EQ_INT(r.inode, 1234);
	CHECK_STREQ(r.path, "/usr/lib/libc.so.6");
	free(r.path);
	l = "1000-2000 r--p 00000000 fd:00 99 /opt/a b/data file (deleted)";
	CHECK_EQ_INT(text_faults_parse_maps_line(l, strlen(l), &r), 1);
	CHECK(!r.exec);
	CHECK_STREQ(r.path, "/opt/a b/data file (deleted)");
	free(r.path);
	l = "1000-2000 rw-p 00000000 00:00 0 [heap]";
	CHECK_EQ_INT(text_faults_parse_maps_line(l, strlen(l), &r), 0);
	l = "1000-2000 r-xp 00000000 00:00 0 [vdso]";
	CHECK_EQ_INT(text_faults_parse_maps_line(l, strlen(l), &r), 0);
	l = "1000-2000 r-xp 00000000 00:01 77 /memfd:jit (deleted)";
	CHECK_EQ_INT(text_faults_parse_maps_line(l, strlen(l), &r), 0);
	l = "1000-2000 ---p 00000000 08:01 1234 /usr/lib/libc.so.6";
	CHECK_EQ_INT(text_faults_parse_maps_line(l, strlen(l), &r), 0);
	l = "1000-2000 rw-p 00000000 00:00 0";
	CHECK_EQ_INT(text_faults_parse_maps_line(l, strlen(l), &r), 0);
	l = "2000-1000 r-xp 00000000 08:01 1 /x";
	CHECK(text_faults_parse_maps_line(l, strlen(l), &r) < 0);
	l = "1000-2000 r-xp 0000000g 08:01 1 /x";
	CHECK(text_faults_parse_maps_line(l, strlen(l), &r) < 0);
	l = "1000-2000 r-x";
	CHECK(text_faults_parse_maps_line(l, strlen(l), &r) < 0);
	l = "1000-2000 r-xp 00000000 08:01 x /x";
	CHECK(text_faults_parse_maps_line(l, strlen(l), &r) < 0);
	CHECK(text_faults_parse_maps_line("", 0, &r) < 0);
}

static void put(int dir, const char *path, const char *text)
{
	int fd = openat(dir, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ_INT(write(fd, text, strlen(text)), (long long)strlen(text));
	close(fd);
}

/* The reader on a fake tree: the kernel's counter when memory.stat has
 * it, the estimate (from memory.stat pgmajfault, no processes) when not
 * or when forced. */
static void test_reader(void)
{
	char dir[] = "/tmp/test-textfault-XXXXXX";
	_cleanup_close_ int root = -1, proc = -1;
	struct text_faults *tf = NULL;
	struct text_fault_reading rd;

	CHECK(mkdtemp(dir) != NULL);
	root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(root >= 0 && proc >= 0);
	CHECK_EQ_INT(mkdirat(root, "k", 0755), 0);
	CHECK_EQ_INT(mkdirat(root, "e", 0755), 0);
	put(root, "k/memory.stat", "anon 0\npgmajfault 90\npgmajfault_exec 40\n");
	put(root, "k/cgroup.procs", "");
	put(root, "e/memory.stat", "anon 0\npgmajfault 90\nworkingset_refault_file 3\n");
	put(root, "e/cgroup.procs", "");

	CHECK_EQ_INT(text_faults_new(root, proc, &tf), 0);
	text_faults_set_min_interval(tf, 0);
	CHECK_EQ_INT(text_faults_read(tf, "k.service", "/k", &rd), 0);
	CHECK_EQ_INT(rd.source, TEXT_FAULTS_KERNEL);
	CHECK_EQ_INT(rd.faults, 40);
	CHECK_STREQ(text_fault_source_to_string(rd.source), "kernel");
	/* The cgroup made again (the unit restarted): it does not go back. */
	put(root, "k/memory.stat", "pgmajfault_exec 5\n");
	CHECK_EQ_INT(text_faults_read(tf, "k.service", "/k", &rd), 0);
	CHECK_EQ_INT(rd.faults, 45);

	/* The estimate starts at 0 and follows the unit's major faults while
	 * nothing says some were not text. */
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.source, TEXT_FAULTS_ESTIMATE);
	CHECK_EQ_INT(rd.faults, 0);
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.faults, 0);
	put(root, "e/memory.stat", "pgmajfault 120\n");
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.faults, 30);
	put(root, "e/memory.stat", "pgmajfault 10\n"); /* a new cgroup */
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.faults, 40);

	/* The unit moved to another cgroup: it goes on from where it was. */
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/k", &rd), 0);
	CHECK_EQ_INT(rd.source, TEXT_FAULTS_KERNEL);
	CHECK_EQ_INT(rd.faults, 45);
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.source, TEXT_FAULTS_ESTIMATE);
	CHECK_EQ_INT(rd.faults, 45);
	put(root, "e/memory.stat", "pgmajfault 20\n");
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.faults, 55);

	/* Forced: the estimate where the kernel counts. */
	text_faults_set_force_estimate(tf, true);
	CHECK_EQ_INT(text_faults_read(tf, "k2.service", "/k", &rd), 0);
	CHECK_EQ_INT(rd.source, TEXT_FAULTS_ESTIMATE);
	text_faults_set_force_estimate(tf, false);

	/* Cached within the interval. */
	text_faults_set_min_interval(tf, 3600ULL * 1000000);
	put(root, "e/memory.stat", "pgmajfault 1000\n");
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.faults, 55);
	/* Forgotten: a new start. */
	text_faults_forget(tf, "e.service");
	text_faults_forget(tf, "never.service");
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.faults, 0);

	/* Gone, or not a cgroup path. */
	CHECK_EQ_INT(text_faults_read(tf, "x.service", "/gone", &rd), -ENOENT);
	CHECK_EQ_INT(text_faults_read(tf, "x.service", "/../k", &rd), -EINVAL);

	/* Pruned: the unit never read (x) and those idle too long go; one
	 * read lately stays and keeps its count. */
	text_faults_set_min_interval(tf, 0);
	put(root, "e/memory.stat", "pgmajfault 1010\n");
	CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
	CHECK_EQ_INT(rd.faults, 10);
	{
		struct text_faults_unit_info info;
		uint64_t now = rd.at_usec;

		CHECK_EQ_INT(text_faults_unit_info(tf, "x.service", &info), 0);
		CHECK_EQ_INT(text_faults_last(tf, "x.service", &rd), -ENOENT);
		CHECK_EQ_INT(text_faults_last(tf, "e.service", &rd), 0);
		CHECK_EQ_INT(rd.faults, 10);
		text_faults_prune(tf, now, 60ULL * 1000000);
		CHECK_EQ_INT(text_faults_unit_info(tf, "x.service", &info), -ENOENT);
		CHECK_EQ_INT(text_faults_unit_info(tf, "e.service", &info), 0);
		put(root, "e/memory.stat", "pgmajfault 1013\n");
		CHECK_EQ_INT(text_faults_read(tf, "e.service", "/e", &rd), 0);
		CHECK_EQ_INT(rd.faults, 13);
		text_faults_prune(tf, rd.at_usec + 61ULL * 1000000, 60ULL * 1000000);
		CHECK_EQ_INT(text_faults_unit_info(tf, "e.service", &info), -ENOENT);
	}
	tf = text_faults_free(tf);
	CHECK(tf == NULL);

	unlinkat(root, "k/memory.stat", 0);
	unlinkat(root, "k/cgroup.procs", 0);
	unlinkat(root, "e/memory.stat", 0);
	unlinkat(root, "e/cgroup.procs", 0);
	unlinkat(root, "k", AT_REMOVEDIR);
	unlinkat(root, "e", AT_REMOVEDIR);
	rmdir(dir);
}

TEST_MAIN(test_parse_stat, test_proc_delta, test_residency, test_estimate, test_maps_line, test_reader)
