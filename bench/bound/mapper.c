// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench/exec-bound.sh's protected task: map FILE executable, touch every
 * page, then either leave it cold (period 0) or touch it all again every
 * PERIOD_MS. Writes one byte to stdout after the first pass.
 *
 * Usage: mapper FILE PERIOD_MS
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	volatile unsigned long sum = 0;
	struct stat st;
	long period;
	char *p;
	int fd;

	if (argc != 3)
		return 2;
	period = atol(argv[2]);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 1;
	p = mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	for (;;) {
		for (off_t o = 0; o < st.st_size; o += 4096)
			sum += p[o];
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
