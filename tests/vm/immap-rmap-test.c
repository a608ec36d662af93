// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The rmap of a hot file stays complete (issue 17): a file mapped by many
 * processes the way the dynamic loader maps a library (a whole-file
 * PROT_READ reservation, the "text" remapped over it with MAP_FIXED and
 * PROT_EXEC, part of the "data" made read-only with mprotect, which
 * splits VMAs: the paths the exec-storm patches change), then
 *
 *  1. truncate: the file is truncated to half while mapped; every mapper
 *     gets SIGBUS beyond the new EOF, no page table entry is left there
 *     (/proc/self/pagemap), the first half is intact; extended again, the
 *     second half reads as zeros in every mapper (no stale page);
 *  2. migration: /proc/sys/vm/compact_memory until some of the file's
 *     pages have a new PFN (seen in /proc/PID/pagemap; needs root); each
 *     moved page must have the same new PFN in every mapper (compaction
 *     only moves a mapped page when the rmap found and unmapped all its
 *     mappings) and the same contents.
 *
 * TAP output. Usage: immap-rmap-test [DIR] (default: the current one; a
 * disk file system, as the exec-protect tests use). No timing assertions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPAGES		64	/* 256 KiB with 4 KiB pages */
#define NMAPPERS	16

static long psz;
static int tests;
static int failed;

static void result(int ok, const char *name, const char *why)
{
	tests++;
	if (!ok)
		failed++;
	printf("%s %d - %s%s%s\n", ok ? "ok" : "not ok", tests, name,
	       why && *why ? " # " : "", why ? why : "");
	fflush(stdout);
}

/* the value of the page's bytes: its index, so a stale page shows */
static unsigned char page_byte(int i)
{
	return (unsigned char)(0x40 + i);
}

/*
 * Map the file as ld.so maps a library: reserve all of it read-only, map
 * pages [8, 24) over it again executable (MAP_FIXED: split, unlink, link),
 * the rest of the file writable-private from page 40 (split again), then
 * make pages [40, 44) read-only (RELRO: another split).
 */
static unsigned char *map_like_a_library(int fd)
{
	unsigned char *p;

	p = mmap(NULL, NPAGES * psz, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mmap(p + 8 * psz, 16 * psz, PROT_READ | PROT_EXEC,
		 MAP_PRIVATE | MAP_FIXED, fd, 8 * psz) == MAP_FAILED)
		return NULL;
	if (mmap(p + 40 * psz, (NPAGES - 40) * psz, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_FIXED, fd, 40 * psz) == MAP_FAILED)
		return NULL;
	if (mprotect(p + 40 * psz, 4 * psz, PROT_READ))
		return NULL;
	return p;
}

static uint64_t pagemap_entry(pid_t pid, void *addr)
{
	char path[64];
	uint64_t e = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	if (pread(fd, &e, sizeof(e), (uintptr_t)addr / psz * sizeof(e)) != sizeof(e))
		e = 0;
	close(fd);
	return e;
}

#define PM_PRESENT	(1ULL << 63)
#define PM_PFN(e)	((e) & ((1ULL << 55) - 1))

static sigjmp_buf bus_jmp;

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* 1 if reading *p raises SIGBUS */
static int sigbus_on_read(volatile unsigned char *p)
{
	if (sigsetjmp(bus_jmp, 1))
		return 1;
	(void)*p;
	return 0;
}

/*
 * A mapper: map, touch every page, then wait for commands on its pipe
 * ('t': check after truncate, 'z': check after extending, 'c': check
 * every page's contents, 'q': exit) and
 * answer on the other pipe with '1' (good) or '0' (with a message on
 * stderr). 'a' answers with the mapping's address, for pagemap reads by
 * the parent.
 */
static void mapper(int fd, int cmd, int ans)
{
	struct sigaction sa = { .sa_handler = on_bus };
	volatile unsigned char *p;
	char c, ok;
	int i;

	sigaction(SIGBUS, &sa, NULL);
	p = map_like_a_library(fd);
	if (!p)
		_exit(2);
	for (i = 0; i < NPAGES; i++)
		if (p[i * psz] != page_byte(i))
			_exit(3);
	if (write(ans, (void *)&p, sizeof(p)) != sizeof(p))
		_exit(4);
	while (read(cmd, &c, 1) == 1) {
		ok = '1';
		switch (c) {
		case 't':
			for (i = 0; i < NPAGES / 2; i++)
				if (p[i * psz] != page_byte(i)) {
					fprintf(stderr, "# page %d changed\n", i);
					ok = '0';
				}
			for (i = NPAGES / 2; i < NPAGES; i++) {
				if (pagemap_entry(getpid(), (void *)(p + i * psz)) & PM_PRESENT) {
					fprintf(stderr, "# page %d still mapped after truncate\n", i);
					ok = '0';
				}
				if (!sigbus_on_read(p + i * psz)) {
					fprintf(stderr, "# no SIGBUS on page %d\n", i);
					ok = '0';
				}
			}
			break;
		case 'z':
			for (i = NPAGES / 2; i < NPAGES; i++)
				if (p[i * psz] != 0) {
					fprintf(stderr, "# stale page %d: %#x\n", i, p[i * psz]);
					ok = '0';
				}
			break;
		case 'c':
			for (i = 0; i < NPAGES; i++)
				if (p[i * psz] != page_byte(i)) {
					fprintf(stderr, "# page %d: %#x\n", i, p[i * psz]);
					ok = '0';
				}
			break;
		case 'q':
			_exit(0);
		}
		if (write(ans, &ok, 1) != 1)
			_exit(5);
	}
	_exit(0);
}

struct child {
	pid_t pid;
	int cmd, ans;
	unsigned char *addr;
};

static int ask_all(struct child *ch, char c)
{
	int i, good = 1;
	char r;

	for (i = 0; i < NMAPPERS; i++)
		if (write(ch[i].cmd, &c, 1) != 1)
			good = 0;
	for (i = 0; i < NMAPPERS; i++)
		if (read(ch[i].ans, &r, 1) != 1 || r != '1')
			good = 0;
	return good;
}

static int start_mappers(int fd, struct child *ch)
{
	int i, c[2], a[2];

	for (i = 0; i < NMAPPERS; i++) {
		if (pipe(c) || pipe(a))
			return -1;
		ch[i].pid = fork();
		if (ch[i].pid < 0)
			return -1;
		if (!ch[i].pid) {
			close(c[1]);
			close(a[0]);
			mapper(fd, c[0], a[1]);
		}
		close(c[0]);
		close(a[1]);
		ch[i].cmd = c[1];
		ch[i].ans = a[0];
		if (read(ch[i].ans, &ch[i].addr, sizeof(ch[i].addr)) != sizeof(ch[i].addr))
			return -1;
	}
	return 0;
}

static void stop_mappers(struct child *ch)
{
	int i, st;

	for (i = 0; i < NMAPPERS; i++) {
		if (write(ch[i].cmd, "q", 1) != 1)
			kill(ch[i].pid, SIGKILL);
		close(ch[i].cmd);
		close(ch[i].ans);
		waitpid(ch[i].pid, &st, 0);
	}
}

static int make_file(const char *path)
{
	unsigned char *buf = malloc(NPAGES * psz);
	int i, fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !buf)
		return -1;
	for (i = 0; i < NPAGES; i++)
		memset(buf + i * psz, page_byte(i), psz);
	if (write(fd, buf, NPAGES * psz) != NPAGES * psz)
		return -1;
	free(buf);
	fsync(fd);
	return fd;
}

static void test_truncate(const char *dir)
{
	struct child ch[NMAPPERS];
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/immap-truncate.bin", dir);
	fd = make_file(path);
	if (fd < 0 || start_mappers(fd, ch)) {
		result(0, "truncate: set up", strerror(errno));
		return;
	}
	if (ftruncate(fd, NPAGES / 2 * psz)) {
		result(0, "truncate: ftruncate", strerror(errno));
		stop_mappers(ch);
		return;
	}
	result(ask_all(ch, 't'), "truncate: every mapper: first half intact, SIGBUS and no PTE beyond EOF", "");
	if (ftruncate(fd, NPAGES * psz)) {
		result(0, "truncate: extend", strerror(errno));
		stop_mappers(ch);
		return;
	}
	result(ask_all(ch, 'z'), "truncate: extended again, every mapper reads zeros (no stale page)", "");
	stop_mappers(ch);
	close(fd);
	unlink(path);
}

static void test_migration(const char *dir)
{
	struct child ch[NMAPPERS];
	uint64_t before[NPAGES];
	char path[4096], why[128];
	int fd, i, j, round, moved = 0, bad = 0;

	snprintf(path, sizeof(path), "%s/immap-migrate.bin", dir);
	fd = make_file(path);
	if (fd < 0 || start_mappers(fd, ch)) {
		result(0, "migration: set up", strerror(errno));
		return;
	}
	for (i = 0; i < NPAGES; i++)
		before[i] = PM_PFN(pagemap_entry(ch[0].pid, ch[0].addr + i * psz));
	if (!before[0]) {
		result(1, "migration # SKIP no PFNs in pagemap (not root?)", "");
		stop_mappers(ch);
		return;
	}
	for (round = 0; round < 10 && !moved; round++) {
		int cfd = open("/proc/sys/vm/compact_memory", O_WRONLY);

		if (cfd < 0 || write(cfd, "1", 1) != 1) {
			result(1, "migration # SKIP no /proc/sys/vm/compact_memory", "");
			stop_mappers(ch);
			return;
		}
		close(cfd);
		for (i = 0; i < NPAGES; i++) {
			uint64_t now = PM_PFN(pagemap_entry(ch[0].pid, ch[0].addr + i * psz));

			if (now && now != before[i])
				moved++;
		}
	}
	for (i = 0; i < NPAGES; i++) {
		uint64_t pfn0 = PM_PFN(pagemap_entry(ch[0].pid, ch[0].addr + i * psz));

		/* Pages 40.. were written by no one: still the file's pages */
		for (j = 1; j < NMAPPERS; j++) {
			uint64_t e = pagemap_entry(ch[j].pid, ch[j].addr + i * psz);

			if ((e & PM_PRESENT) && PM_PFN(e) != pfn0) {
				if (bad++ < 5)
					fprintf(stderr, "# page %d: mapper %d PFN %#llx, mapper 0 %#llx\n",
						i, j, (unsigned long long)PM_PFN(e),
						(unsigned long long)pfn0);
			}
		}
	}
	snprintf(why, sizeof(why), "%d of %d pages moved, %d PFN mismatches", moved,
		 NPAGES, bad);
	if (!moved)
		result(1, "migration # SKIP compaction moved none of the file's pages", NULL);
	else
		result(!bad, "migration: moved pages have the same new PFN in every mapper", why);
	result(ask_all(ch, 'c'), "migration: contents intact in every mapper", "");
	stop_mappers(ch);
	close(fd);
	unlink(path);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";

	psz = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..4\n");
	test_migration(dir);
	test_truncate(dir);
	return failed ? 1 : 0;
}
