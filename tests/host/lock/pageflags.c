/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Independent check for the lock tests, sharing no code with the daemon:
 * page by page over [ADDR, ADDR + PAGES pages) of process PID, what the
 * kernel says of
 *   file=  the file's page in the page cache (through our own shared
 *          mapping of the file PID maps there, /proc/PID/map_files):
 *          L mlocked (PG_mlocked in /proc/kpageflags), r resident and
 *          not mlocked, . not resident;
 *   proc=  PID's own page table: f present and the file's page, a present
 *          anonymous page (copied on write, or anonymous memory), A an
 *          anonymous page that is mlocked (never wanted), - not present.
 * Prints "file=... proc=...". Needs root (PFNs, kpageflags).
 * Usage: pageflags PID ADDR PAGES */
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PRESENT (1ULL << 63)
#define FILE_PAGE (1ULL << 61)
#define PFN_MASK ((1ULL << 55) - 1)
#define KPF_MLOCKED 33

static int kpf = -1;

static int mlocked(uint64_t pfn)
{
	uint64_t flags = 0;

	if (pread(kpf, &flags, sizeof(flags), (off_t)(pfn * sizeof(flags))) != sizeof(flags))
		return -1;
	return (int)(flags >> KPF_MLOCKED & 1);
}

int main(int argc, char **argv)
{
	unsigned long long addr, start = 0, end = 0, off = 0, s, e, o;
	long page = sysconf(_SC_PAGESIZE);
	char path[128], line[8192], perms[8];
	char *file_s, *proc_s;
	int pm, self, fd;
	unsigned char *vec;
	long n;
	FILE *f;
	char *map;

	if (argc != 4) {
		fprintf(stderr, "usage: %s PID ADDR PAGES\n", argv[0]);
		return 2;
	}
	addr = strtoull(argv[2], NULL, 16);
	n = atol(argv[3]);
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	f = fopen(path, "re");
	if (!f) {
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %7s %llx", &s, &e, perms, &o) == 4 && s <= addr && addr < e) {
			start = s, end = e, off = o;
			break;
		}
	fclose(f);
	if (!end || addr + (unsigned long long)n * page > end) {
		fprintf(stderr, "pageflags: no single mapping covers %llx + %ld pages\n", addr, n);
		return 1;
	}
	kpf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%s/pagemap", argv[1]);
	pm = open(path, O_RDONLY | O_CLOEXEC);
	self = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (kpf < 0 || pm < 0 || self < 0) {
		perror("pageflags: kpageflags or pagemap");
		return 1;
	}
	file_s = calloc((size_t)n + 1, 1);
	proc_s = calloc((size_t)n + 1, 1);
	vec = calloc((size_t)n, 1);
	/* The file: map_files is the very file the process maps there. */
	snprintf(path, sizeof(path), "/proc/%s/map_files/%llx-%llx", argv[1], start, end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	map = fd < 0 ? MAP_FAILED :
		       mmap(NULL, (size_t)n * page, PROT_READ, MAP_SHARED, fd, (off_t)(off + (addr - start)));
	for (long i = 0; i < n; i++) {
		uint64_t pe = 0;
		int m;

		file_s[i] = '?';
		if (map != MAP_FAILED && mincore(map + i * page, (size_t)page, vec + i) == 0) {
			if (!(vec[i] & 1)) {
				file_s[i] = '.';
			} else {
				volatile char c = map[i * page]; /* resident: a minor fault maps it */
				uint64_t se = 0;

				(void)c;
				pread(self, &se, sizeof(se), (off_t)(((uintptr_t)map / page + i) * sizeof(se)));
				m = (se & PRESENT) ? mlocked(se & PFN_MASK) : -1;
				file_s[i] = m == 1 ? 'L' : m == 0 ? 'r' : '?';
			}
		}
		pread(pm, &pe, sizeof(pe), (off_t)((addr / page + i) * sizeof(pe)));
		if (!(pe & PRESENT))
			proc_s[i] = '-';
		else if (pe & FILE_PAGE)
			proc_s[i] = 'f';
		else
			proc_s[i] = mlocked(pe & PFN_MASK) == 1 ? 'A' : 'a';
	}
	printf("file=%s proc=%s\n", file_s, proc_s);
	return 0;
}
