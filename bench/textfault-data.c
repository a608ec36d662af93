// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The validation's data faults (bench/textfault-validate.sh, --data): maps
 * FILE read-only, not executable, and reads one random page of it every
 * INTERVAL_MS, read-around off (MADV_RANDOM), until killed. Beside the
 * service in its cgroup, its faults are the major faults that are not
 * text, which the estimate must not count.
 *
 * Usage: textfault-data FILE INTERVAL_MS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	volatile unsigned char sum = 0;
	struct stat st;
	unsigned char *p;
	size_t pages;
	int fd;

	if (argc != 3)
		return 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 4096)
		return 1;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	madvise(p, (size_t)st.st_size, MADV_RANDOM);
	pages = (size_t)st.st_size / 4096;
	srand(1);
	for (;;) {
		sum += p[(size_t)rand() % pages * 4096];
		usleep((useconds_t)atoi(argv[2]) * 1000);
	}
}
