// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench/anon-wait.sh's allocator: fault in ANON bytes of anonymous memory
 * CHUNK bytes at a time and time each chunk, inside a cgroup whose memory
 * is mostly page cache and (kept or not) executable text. What a chunk
 * waits is the reclaim it had to do: with memory.exec_protect, reclaim
 * walks past the kept images to find something else, or gives way.
 * Before and after, how much of TEXT is resident (mincore), and how many
 * protected pages reclaim took meanwhile (the guest's pgexec_breached: a
 * breach can go on after the allocation, so the caller's count may be
 * higher).
 *
 * Prints one line:
 * WAIT chunks=N p50_us=N p99_us=N max_us=N total_ms=N over_1ms=N
 *      over_10ms=N over_100ms=N text_start_kb=N text_resident_kb=N
 *      breached_during=N
 *
 * Usage: anon-wait ANON_BYTES CHUNK_BYTES TEXT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "residency.h"

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of @n sorted values, nearest rank */
static long quantile(const long *sorted, size_t n, double q)
{
	size_t i = (size_t)(q * (double)n);

	return sorted[i < n ? i : n - 1];
}

/* The guest's pgexec_breached, or -1 (a kernel without the counter) */
static long vmstat_breached(void)
{
	return stat_file_key("/proc/vmstat", "pgexec_breached");
}

/* kB of @path resident in the page cache, or -1 */
static long resident_kb(const char *path)
{
	struct residency r;
	long kb = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (residency_open(&r, fd) == 0 && residency_sample(&r) == 0)
		kb = residency_count(&r, 0, r.pages) * (r.page_size / 1024);
	residency_close(&r);
	close(fd);
	return kb;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE), total = 0, over[3] = { 0 }, text_start_kb;
	long breached_start, breached_end, text_end_kb;
	size_t anon, chunk, n;
	long *waits;
	char *area;

	if (argc != 4) {
		fprintf(stderr, "usage: anon-wait ANON_BYTES CHUNK_BYTES TEXT\n");
		return 2;
	}
	anon = strtoul(argv[1], NULL, 0);
	chunk = strtoul(argv[2], NULL, 0);
	if (chunk < (size_t)page || anon < chunk) {
		fprintf(stderr, "anon-wait: CHUNK at least a page, ANON at least a CHUNK\n");
		return 2;
	}
	n = anon / chunk;
	waits = calloc(n, sizeof(*waits));
	area = mmap(NULL, n * chunk, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!waits || area == MAP_FAILED) {
		perror("anon-wait");
		return 1;
	}
	/* no THP: a chunk is the small allocation this is about */
	madvise(area, n * chunk, MADV_NOHUGEPAGE);
	text_start_kb = resident_kb(argv[3]);
	breached_start = vmstat_breached();
	for (size_t i = 0; i < n; i++) {
		long start = now_us();

		for (size_t off = 0; off < chunk; off += page)
			area[i * chunk + off] = 1;
		waits[i] = now_us() - start;
		total += waits[i];
		over[0] += waits[i] > 1000;
		over[1] += waits[i] > 10000;
		over[2] += waits[i] > 100000;
	}
	text_end_kb = resident_kb(argv[3]);
	breached_end = vmstat_breached();
	qsort(waits, n, sizeof(*waits), cmp_long);
	printf("WAIT chunks=%zu p50_us=%ld p99_us=%ld max_us=%ld total_ms=%ld over_1ms=%ld over_10ms=%ld over_100ms=%ld text_start_kb=%ld text_resident_kb=%ld breached_during=%ld\n",
	       n, quantile(waits, n, 0.5), quantile(waits, n, 0.99), waits[n - 1],
	       total / 1000, over[0], over[1], over[2], text_start_kb, text_end_kb,
	       breached_start < 0 ? -1 : breached_end - breached_start);
	return 0;
}
