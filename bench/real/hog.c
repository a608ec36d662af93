/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Anonymous memory pressure for bench/real (no swap: what it holds cannot
 * be reclaimed, so everything else is squeezed into what is left).
 *
 *   hog MIB                          touch MIB of anonymous memory, hold it
 *   hog MIB SPIKE_MIB AFTER_S HOLD_S  the same; AFTER_S seconds after it is
 *                                    filled, touch SPIKE_MIB more, hold that
 *                                    HOLD_S seconds, free it, hold MIB again
 *
 * Until SIGTERM. Prints "filled", "spike_start", "spike_filled" and
 * "spike_end" lines with CLOCK_REALTIME seconds, so that the analysis can
 * line them up with the requests' own timestamps. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void mark(const char *what)
{
	printf("%s %.3f\n", what, now());
	fflush(stdout);
}

/* MAP_POPULATE faults it all in at once (faster under TCG than a
 * fault a page); the loop touches what it could not populate. */
static char *fill(size_t mib)
{
	size_t len = mib << 20;
	char *p = mmap(NULL, len ? len : 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED) {
		perror("hog: mmap");
		exit(1);
	}
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 5) {
		fprintf(stderr, "usage: hog MIB [SPIKE_MIB AFTER_S HOLD_S]\n");
		return 2;
	}
	size_t mib = strtoul(argv[1], NULL, 10);
	fill(mib);
	mark("filled");
	if (argc == 5) {
		size_t spike = strtoul(argv[2], NULL, 10);
		sleep(atoi(argv[3]));
		mark("spike_start");
		char *p = fill(spike);
		mark("spike_filled");
		sleep(atoi(argv[4]));
		munmap(p, spike << 20);
		mark("spike_end");
	}
	for (;;)
		pause();
}
