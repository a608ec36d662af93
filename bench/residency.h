/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * For the benchmarks' samplers (built standalone into the test VMs, so
 * header-only): how much of a file is in the page cache, and one value
 * of a "key value" file such as memory.stat, /proc/vmstat or smaps.
 *
 * Residency is mincore() over a shared read-only mapping that touches
 * nothing, so sampling does not make what it counts resident. The vector
 * is kept, so that a caller can count a part of the file (an ELF
 * segment) with residency_count().
 */
#ifndef EXECGUARD_BENCH_RESIDENCY_H
#define EXECGUARD_BENCH_RESIDENCY_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct residency {
	void *map;
	size_t len;
	size_t pages;
	long page_size;
	unsigned char *vec;
};

/* Map @fd for sampling; 0 or -errno (an empty file cannot be mapped) */
static inline int residency_open(struct residency *r, int fd)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->map = MAP_FAILED;
	if (fstat(fd, &st))
		return -errno;
	if (st.st_size == 0)
		return -ENODATA;
	r->page_size = sysconf(_SC_PAGESIZE);
	r->len = st.st_size;
	r->pages = (r->len + r->page_size - 1) / r->page_size;
	r->vec = malloc(r->pages);
	if (!r->vec)
		return -ENOMEM;
	r->map = mmap(NULL, r->len, PROT_READ, MAP_SHARED, fd, 0);
	if (r->map == MAP_FAILED)
		return -errno;
	return 0;
}

/* Read the page cache's state into the vector; 0 or -errno */
static inline int residency_sample(struct residency *r)
{
	return mincore(r->map, r->len, r->vec) ? -errno : 0;
}

/* Resident pages among [@first, @last) of the last sample */
static inline size_t residency_count(const struct residency *r, size_t first, size_t last)
{
	size_t n = 0;

	for (size_t pg = first; pg < last && pg < r->pages; pg++)
		n += r->vec[pg] & 1;
	return n;
}

static inline void residency_close(struct residency *r)
{
	if (r->map != MAP_FAILED)
		munmap(r->map, r->len);
	free(r->vec);
	r->map = MAP_FAILED;
	r->vec = NULL;
}

/*
 * The number after @key at the start of a line of @path ("key value" or
 * "Key:   value kB"), or -1 when the file or the key is missing.
 */
static inline long stat_file_key(const char *path, const char *key)
{
	size_t len = strlen(key);
	char line[512];
	long val = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && (line[len] == ' ' || line[len] == '\t')) {
			val = strtol(line + len, NULL, 10);
			break;
		}
	fclose(f);
	return val;
}

#endif
