/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench/prewarm.sh's program: its start-up runs every function of the hot
 * modules of the generated text (bench/pressure/gen-text.py: one function
 * per 4 KiB page, each module's functions in a shuffled order), then it
 * prints the time from main() to ready and its own major faults, and
 * with -w waits to be killed (so that execguardd can record it). */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "text.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double t0 = now_ms();
	struct rusage ru;
	unsigned x = 1, pages = 0;

	for (int m = 0; m < NMOD; m++) {
		if (mod_role[m] != 0)
			continue;
		for (int i = 0; i < FPM; i++, pages++)
			x = mods[m][i](x);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("ready %.2f ms majflt %ld pages %u x %u\n", now_ms() - t0, ru.ru_majflt, pages, x);
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "-w") == 0)
		for (;;)
			pause();
	return 0;
}
