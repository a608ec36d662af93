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
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long stat_key(const char *cgroup, const char *key)
{
	char path[4096], line[256];
	size_t len = strlen(key);
	long val = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.stat", cgroup);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ' ') {
			val = atol(line + len + 1);
			break;
		}
	fclose(f);
	return val;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	long interval, seconds, start, pages, i;
	unsigned char *vec;
	struct stat st;
	void *addr;
	int fd;

	if (argc != 5)
		return 2;
	interval = atol(argv[3]);
	seconds = atol(argv[4]);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 1;
	addr = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (addr == MAP_FAILED)
		return 1;
	pages = (st.st_size + 4095) / 4096;
	vec = malloc(pages);
	if (!vec)
		return 1;
	start = now_ms();
	while (now_ms() - start < seconds * 1000) {
		long resident = 0;

		if (mincore(addr, st.st_size, vec))
			return 1;
		for (i = 0; i < pages; i++)
			resident += vec[i] & 1;
		printf("SAMPLE %ld %ld %ld\n", now_ms() - start, resident * 4096,
		       stat_key(argv[2], "exec_protect_usage"));
		fflush(stdout);
		usleep(interval * 1000);
	}
	return 0;
}
