/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Independent check for the lock tests: how much of each executable file
 * mapping of PID is in the page cache, by its own reading of
 * /proc/PID/maps and mincore(), sharing no code with the daemon.
 * Prints "ino=I resident=BYTES length=BYTES path=P" per mapping. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[4096], line[8192];
	long page = sysconf(_SC_PAGESIZE);
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PID\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	f = fopen(path, "re");
	if (!f) {
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		char perms[8], dev[16], name[4096] = "";
		unsigned long long res = 0;
		unsigned char *vec;
		size_t len, n;
		void *p;
		int fd;

		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %4095[^\n]", &start, &end, perms, &off, dev, &ino,
			   name) < 6)
			continue;
		if (perms[2] != 'x' || ino == 0 || name[0] != '/')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/map_files/%llx-%llx", argv[1], start, end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(path);
			continue;
		}
		len = (size_t)(end - start);
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)(off & ~(unsigned long long)(page - 1)));
		close(fd);
		if (p == MAP_FAILED) {
			perror("mmap");
			continue;
		}
		n = (len + (size_t)page - 1) / (size_t)page;
		vec = calloc(n, 1);
		if (vec && mincore(p, len, vec) == 0)
			for (size_t i = 0; i < n; i++)
				res += vec[i] & 1;
		free(vec);
		munmap(p, len);
		printf("ino=%llu resident=%llu length=%zu path=%s\n", ino, res * (unsigned long long)page, len,
		       name);
	}
	fclose(f);
	return 0;
}
