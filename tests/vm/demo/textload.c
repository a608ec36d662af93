/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A stand-in service for the demo: maps FILE executable, as a program's
 * text is mapped, touches a hot part of it on every "request" and a
 * random page of the rest ("error handling") now and then, and reports
 * once a second how many requests it served, how many major faults
 * that cost and its slowest request. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
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
	const long page = sysconf(_SC_PAGESIZE);
	volatile const unsigned char *text;
	struct stat st;
	size_t pages, hot;
	unsigned long sum = 0, requests = 0;
	double next_report, worst = 0;
	long last_majflt = 0;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	text = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (text == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pages = (size_t)st.st_size / (size_t)page;
	hot = pages / 16;
	/* Start up: every page used once, as a program's start runs most of it. */
	for (size_t i = 0; i < pages; i++)
		sum += text[i * (size_t)page];
	srandom(getpid());
	next_report = now() + 1;
	for (;;) {
		double t0 = now(), dt;
		struct timespec pause = { 0, 2000000 };

		for (size_t i = 0; i < hot; i += 8)
			sum += text[i * (size_t)page];
		if (random() % 4 == 0) /* the rarely run part */
			sum += text[(hot + (size_t)random() % (pages - hot)) * (size_t)page];
		dt = now() - t0;
		if (dt > worst)
			worst = dt;
		requests++;
		if (t0 >= next_report) {
			struct rusage ru;

			getrusage(RUSAGE_SELF, &ru);
			printf("requests %lu majflt %ld slowest_ms %.1f\n", requests,
			       ru.ru_majflt - last_majflt, worst * 1000);
			fflush(stdout);
			last_majflt = ru.ru_majflt;
			worst = 0;
			next_report += 1;
		}
		nanosleep(&pause, NULL);
	}
	return (int)(sum & 1);
}
