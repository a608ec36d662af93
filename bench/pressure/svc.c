// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The benchmark's service: large generated text (text.c), a request every
 * INTERVAL_US, each running the hot modules, and now and then (COLD per
 * mille of requests, at random) one cold "error handling" module.
 *
 * It first warms up (runs every hot and cold module once, as a service
 * that has been up a while has), creates READY, then serves requests until
 * SIGTERM. SIGUSR1 starts the next phase (0 = unloaded, 1 = under
 * pressure, ...). Per request it records start, duration, its own major
 * faults (getrusage ru_majflt) and whether a cold module ran. At each
 * phase change and at exit it records how much of each of its executable
 * file mappings is resident (mincore).
 *
 * Usage: svc OUT READY INTERVAL_US COLD_PER_MILLE SEED
 * Writes OUT (one request a line: phase start_us dur_us majflt cold) and
 * OUT.text (phase path mapped_bytes resident_bytes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "text.h"

struct rec {
	uint64_t start_ns;
	uint32_t dur_ns;
	uint16_t majflt;
	uint8_t cold, phase;
};

static volatile sig_atomic_t phase_req, stop;
static void on_usr1(int s) { (void)s; phase_req++; }
static void on_term(int s) { (void)s; stop = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static long majflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_majflt;
}

static unsigned sink;

static void run_module(int m)
{
	unsigned x = sink;

	for (int i = 0; i < FPM; i++)
		x = mods[m][i](x);
	sink = x;
}

/* resident bytes of every executable file mapping, to FP */
static void text_snapshot(FILE *fp, int phase)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[4096];
	long pg = sysconf(_SC_PAGESIZE);

	if (!maps)
		return;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perms[8];
		int n = 0;

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &n) < 3)
			continue;
		if (perms[2] != 'x' || line[n] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		size_t len = hi - lo, np = len / pg, res = 0;
		unsigned char *v = malloc(np);

		if (v && mincore((void *)lo, len, v) == 0)
			for (size_t i = 0; i < np; i++)
				res += v[i] & 1;
		free(v);
		fprintf(fp, "%d %s %zu %zu\n", phase, line + n, len, res * pg);
	}
	fclose(maps);
	fflush(fp);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: svc OUT READY INTERVAL_US COLD_PER_MILLE SEED\n");
		return 2;
	}
	const char *out = argv[1], *ready = argv[2];
	uint64_t interval = strtoull(argv[3], NULL, 0) * 1000;
	unsigned cold = atoi(argv[4]);
	uint64_t rng = strtoull(argv[5], NULL, 0) | 1;
	/* 2^18 requests (22 min at 5 ms); faulted in now, so that a request
	 * never waits for a new page of this log under memory pressure */
	size_t cap = 1 << 18, n = 0;
	struct rec *r = malloc(cap * sizeof(*r));
	char tpath[4096];
	int ncold = 0, coldmods[NMOD], nhot = 0;

	snprintf(tpath, sizeof(tpath), "%s.text", out);
	FILE *tf = fopen(tpath, "w");
	if (!r || !tf) {
		perror("svc");
		return 1;
	}
	memset(r, 0, cap * sizeof(*r));
	signal(SIGUSR1, on_usr1);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);

	for (int m = 0; m < NMOD; m++) {
		if (mod_role[m] == 1)
			coldmods[ncold++] = m;
		else if (mod_role[m] == 0)
			nhot++;
	}
	/* warm-up: what a service that has been up for a while has run */
	for (int k = 0; k < 3; k++)
		for (int m = 0; m < NMOD; m++)
			if (mod_role[m] == 0)
				run_module(m);
	/* the error paths have run once each, in no particular order */
	int order[NMOD];

	for (int i = 0; i < ncold; i++)
		order[i] = i;
	for (int i = ncold - 1; i > 0; i--) {
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		int j = rng % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < ncold; i++)
		run_module(coldmods[order[i]]);
	fprintf(tf, "# executed generated text: hot %d KiB, cold %d KiB, of %d KiB\n",
		nhot * FPM * 4, ncold * FPM * 4, NMOD * FPM * 4);
	close(open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644));

	uint64_t t0 = now_ns(), next = t0;
	int phase = 0;

	while (!stop && n < cap) {
		if (phase_req != phase) {
			text_snapshot(tf, phase);
			phase = phase_req;
		}
		uint64_t now = now_ns();
		if (next > now) {
			struct timespec ts = { next / 1000000000u, next % 1000000000u };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			if (stop)
				break;
		}
		long f0 = majflt();
		uint64_t s = now_ns();
		int c = 0;

		for (int m = 0; m < NMOD; m++)
			if (mod_role[m] == 0)
				run_module(m);
		rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
		if (rng % 1000 < cold) {
			run_module(coldmods[(rng >> 20) % ncold]);
			c = 1;
		}
		uint64_t e = now_ns();

		r[n++] = (struct rec){ s - t0, (uint32_t)(e - s), (uint16_t)(majflt() - f0), c, phase };
		next += interval;
		if (next < e)
			next = e;	/* late: the next request starts now, no burst */
	}
	text_snapshot(tf, phase);
	fclose(tf);

	FILE *fp = fopen(out, "w");
	if (!fp) {
		perror(out);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(fp, "%u %llu %u %u %u\n", r[i].phase,
			(unsigned long long)(r[i].start_ns / 1000), r[i].dur_ns / 1000,
			r[i].majflt, r[i].cold);
	fclose(fp);
	return 0;
}
