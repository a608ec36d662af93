// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench/exec-bound.sh's protected task: map FILE executable, touch every
 * page, then either leave it cold (period 0) or touch it all again every
 * PERIOD_MS. Writes one byte to stdout after the first pass. With "thp",
 * the mapping is 2 MiB aligned and collapsed into huge pages first
 * (MADV_COLLAPSE: read-only THP for file text), and the file-backed huge
 * mappings it got are printed to stderr ("THP file_pmd_mapped_kb=N").
 *
 * Usage: mapper FILE PERIOD_MS [thp]
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../residency.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define HPAGE (2UL << 20)

/* A 2 MiB aligned executable mapping of @size bytes of @fd */
static char *map_aligned(int fd, size_t size)
{
	char *area, *p;

	area = mmap(NULL, size + HPAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return MAP_FAILED;
	p = (char *)(((unsigned long)area + HPAGE - 1) & ~(HPAGE - 1));
	return mmap(p, size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0);
}

/* FilePmdMapped of this process, kB: how much of the text is huge */
static long file_pmd_mapped_kb(void)
{
	return stat_file_key("/proc/self/smaps_rollup", "FilePmdMapped:");
}

/* Where the touches go, so that the compiler keeps them */
static volatile unsigned long touched;

int main(int argc, char **argv)
{
	struct stat st;
	long period;
	char *p;
	int fd;

	bool thp;

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "thp")))
		return 2;
	thp = argc == 4;
	period = atol(argv[2]);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 1;
	p = thp ? map_aligned(fd, st.st_size) :
		  mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	if (thp) {
		if (madvise(p, st.st_size, MADV_HUGEPAGE) ||
		    madvise(p, st.st_size, MADV_COLLAPSE))
			perror("mapper: madvise");
		fprintf(stderr, "THP file_pmd_mapped_kb=%ld\n", file_pmd_mapped_kb());
	}
	for (;;) {
		for (off_t o = 0; o < st.st_size; o += 4096)
			touched += p[o];
		if (write(1, "r", 1) != 1)
			return 1;
		if (!period) {
			/* cold from now on: aged, as time ages rarely run code */
			madvise(p, st.st_size, MADV_COLD);
			pause();
		}
		usleep(period * 1000);
	}
}
