/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a look at a process costs the daemon in reading its mappings: only
 * the executable ones against the whole images (every mapping of a file
 * mapped executable: what the lock backend reads since issue 36). Four
 * ways, on one PID:
 *   exec    PROCMAP_QUERY  maps_read_select(MAPS_EXEC), the ioctl (6.11+)
 *   exec    text           the same from the text of /proc/PID/maps
 *   images  text           maps_read_select(MAPS_IMAGES): the text
 *   images  PROCMAP_QUERY  the alternative not taken: the ioctl over the
 *                          executable VMAs, then over every file-backed
 *                          one (PROCMAP_QUERY_FILE_BACKED_VMA), each VMA a
 *                          call, as maps.c did at first
 * Prints per way the median and range of ROUNDS rounds of N reads each, in
 * microseconds of this process's CPU time (user and system: the work, not
 * the waits of a loaded machine) per read, and how many mappings one read
 * returns.
 * Usage: mapscost PID [N [ROUNDS]] */
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "maps.h"
#include "util.h"

/* Debian 12's uapi headers predate PROCMAP_QUERY (6.11); the ABI is fixed. */
#ifndef PROCMAP_QUERY
struct procmap_query {
	uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#endif
#define Q_EXECUTABLE 0x04
#define Q_COVERING_OR_NEXT 0x10
#define Q_FILE_BACKED 0x20

/* The VMAs the flags select, one ioctl each, with their names. */
static int query_count(int maps_fd, uint64_t flags, bool skip_exec, size_t *n)
{
	static char name[4200];
	uint64_t addr = 0;

	for (;;) {
		struct procmap_query q = {
			.size = sizeof(q),
			.query_flags = Q_COVERING_OR_NEXT | flags,
			.query_addr = addr,
			.vma_name_size = sizeof(name),
			.vma_name_addr = (uint64_t)(uintptr_t)name,
		};

		if (ioctl(maps_fd, PROCMAP_QUERY, &q) < 0)
			return errno == ENOENT ? 0 : -errno;
		if (q.vma_end <= addr)
			return -EIO;
		addr = q.vma_end;
		if (!skip_exec || !(q.vma_flags & Q_EXECUTABLE))
			(*n)++;
	}
}

static int images_by_query(int proc_fd, size_t *n)
{
	_cleanup_close_ int fd = openat(proc_fd, "maps", O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	*n = 0;
	r = query_count(fd, Q_EXECUTABLE, false, n);
	return r < 0 ? r : query_count(fd, Q_FILE_BACKED, true, n);
}

static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One read the given way; the count of mappings it returned. */
static int read_once(int fd, int way, size_t *n)
{
	static const enum maps_select sel[] = { MAPS_EXEC, MAPS_EXEC, MAPS_IMAGES };
	struct exec_mappings m = { 0 };
	bool query = way == 0;
	int r;

	if (way == 3)
		return images_by_query(fd, n);
	r = maps_read_select(fd, &query, sel[way], &m);
	if (r >= 0 && way == 0 && !query)
		r = -ENOTTY;
	*n = m.n;
	exec_mappings_clear(&m);
	free(m.items);
	return r;
}

int main(int argc, char **argv)
{
	static const char *const ways[] = { "exec    PROCMAP_QUERY", "exec    text", "images  text",
					    "images  PROCMAP_QUERY" };
	char path[64];
	int n = argc > 2 ? atoi(argv[2]) : 200, rounds = argc > 3 ? atoi(argv[3]) : 7, fd;

	if (argc < 2 || n <= 0 || rounds <= 0 || rounds > 64) {
		fprintf(stderr, "usage: %s PID [N [ROUNDS]]\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%s", argv[1]);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	printf("# bench/mapscost %s %d %d\n", argv[1], n, rounds);
	for (int way = 0; way < 4; way++) {
		double t[64];
		size_t count = 0;
		int r = 0;

		for (int k = 0; k < rounds && r >= 0; k++) {
			double t0 = cpu_us();

			for (int i = 0; i < n && r >= 0; i++)
				r = read_once(fd, way, &count);
			t[k] = (cpu_us() - t0) / n;
		}
		if (r < 0) {
			printf("%-22s not measured: %s\n", ways[way], strerror(-r));
			continue;
		}
		qsort(t, (size_t)rounds, sizeof(*t), cmp_double);
		printf("%-22s %5zu mappings %9.1f us CPU per read (median of %d rounds of %d, range %.1f-%.1f)\n",
		       ways[way], count, t[rounds / 2], rounds, n, t[0], t[rounds - 1]);
	}
	close(fd);
	return 0;
}
