/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Exec load for bench/execstorm.sh: fork and exec PROGRAM at RATE per
 * second for SECONDS, paced on absolute deadlines, reaping as it goes.
 * Prints the rate it achieved, which a slow or busy machine may keep below
 * RATE: then it runs on until it has started RATE * SECONDS programs, or
 * with -t stops at SECONDS and says how many it started of those. Then
 * the CPU one fork+exec cost on this machine: its own and its children's
 * (user and system, getrusage()) over the programs started. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double rate, seconds, start, t;
	long n = 0, target;
	struct timespec next;
	int deadline = 0, late = 0;

	if (argc == 5 && strcmp(argv[1], "-t") == 0) {
		deadline = 1;
		argv++;
		argc--;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: %s [-t] RATE SECONDS PROGRAM\n", argv[0]);
		return 2;
	}
	rate = atof(argv[1]);
	seconds = atof(argv[2]);
	if (rate <= 0 || seconds <= 0) {
		fprintf(stderr, "execload: RATE and SECONDS must be positive\n");
		return 2;
	}
	target = (long)(rate * seconds);
	clock_gettime(CLOCK_MONOTONIC, &next);
	start = now();
	while (n < target) {
		pid_t p;

		if (deadline && now() - start >= seconds) {
			late = 1;
			break;
		}
		p = fork();

		if (p == 0) {
			execl(argv[3], argv[3], (char *)NULL);
			_exit(127);
		}
		if (p < 0) {
			perror("fork");
			return 1;
		}
		n++;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		next.tv_nsec += (long)(1e9 / rate);
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	t = now() - start;
	printf("execload: %ld execs in %.2f s = %.0f/s (asked %.0f/s", n, t, (double)n / t, rate);
	if (late)
		printf("; stopped at %.0f s, %ld of %ld started", seconds, n, target);
	printf(")\n");
	{
		struct rusage self, kids;
		double us;

		getrusage(RUSAGE_SELF, &self);
		getrusage(RUSAGE_CHILDREN, &kids);
		us = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) * 1e6 +
		     (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec + kids.ru_stime.tv_usec);
		printf("execload: %ld execs, %.1f us CPU per fork+exec (itself and its children)\n", n, n ? us / (double)n : 0);
	}
	return 0;
}
