// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench/exec-bound.sh's sampler: every INTERVAL_MS for SECONDS, how much
 * of FILE is in the page cache (mincore on a mapping that touches
 * nothing) and CGROUP's memory.stat exec_protect_usage. Prints one line
 * per sample: "SAMPLE ms resident_bytes usage_bytes".
 *
 * Usage: sampler FILE CGROUP_DIR INTERVAL_MS SECONDS
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../residency.h"

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	char stat_path[4096];
	struct residency r;
	long interval, seconds, start;
	int fd;

	if (argc != 5)
		return 2;
	interval = atol(argv[3]);
	seconds = atol(argv[4]);
	snprintf(stat_path, sizeof(stat_path), "%s/memory.stat", argv[2]);
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || residency_open(&r, fd))
		return 1;
	start = now_ms();
	while (now_ms() - start < seconds * 1000) {
		if (residency_sample(&r))
			return 1;
		printf("SAMPLE %ld %ld %ld\n", now_ms() - start,
		       (long)residency_count(&r, 0, r.pages) * r.page_size,
		       stat_file_key(stat_path, "exec_protect_usage"));
		fflush(stdout);
		usleep(interval * 1000);
	}
	residency_close(&r);
	return 0;
}
