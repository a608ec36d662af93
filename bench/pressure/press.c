// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Memory pressure for the benchmark, and the whole-file mlock baseline.
 *
 *   press lock FILE MIB      make FILE MIB long (sparse: its pages are read
 *                            as zeros, no I/O), mmap it and mlock it all, as
 *                            "vmtouch -l" does; print "locked", then sleep
 *   press stream FILE...     read the files in 1 MiB chunks, over and over
 *   press prelock PID        mmap and mlock every whole file that PID maps
 *                            executable (what prelockd and memlockd do);
 *                            print the bytes locked, then sleep
 * All run until killed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int lock_file(const char *path, off_t size, size_t *locked)
{
	int fd = open(path, size ? O_RDWR | O_CREAT : O_RDONLY, 0644);
	struct stat st;

	if (fd < 0 || (size && ftruncate(fd, size)) || fstat(fd, &st)) {
		perror(path);
		return -1;
	}
	if (!st.st_size)
		return 0;
	void *p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || mlock(p, st.st_size)) {
		perror(path);
		return -1;
	}
	close(fd);
	*locked += st.st_size;
	return 0;
}

int main(int argc, char **argv)
{
	size_t locked = 0;

	if (argc >= 4 && !strcmp(argv[1], "lock")) {
		if (lock_file(argv[2], (off_t)atol(argv[3]) << 20, &locked))
			return 1;
		printf("locked %zu\n", locked);
	} else if (argc >= 3 && !strcmp(argv[1], "stream")) {
		static char buf[1 << 20];

		for (;;)
			for (int i = 2; i < argc; i++) {
				int fd = open(argv[i], O_RDONLY);

				if (fd < 0) {
					perror(argv[i]);
					return 1;
				}
				while (read(fd, buf, sizeof(buf)) > 0)
					;
				close(fd);
			}
	} else if (argc >= 3 && !strcmp(argv[1], "prelock")) {
		char path[64], line[4096], seen[64][1024];
		int nseen = 0;

		snprintf(path, sizeof(path), "/proc/%s/maps", argv[2]);
		FILE *maps = fopen(path, "r");
		if (!maps) {
			perror(path);
			return 1;
		}
		while (fgets(line, sizeof(line), maps)) {
			char perms[8];
			int n = 0, dup = 0;

			if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &n) < 1 ||
			    perms[2] != 'x' || line[n] != '/')
				continue;
			line[strcspn(line, "\n")] = 0;
			for (int i = 0; i < nseen; i++)
				dup |= !strcmp(seen[i], line + n);
			if (dup || nseen == 64)
				continue;
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", line + n);
			if (lock_file(line + n, 0, &locked))
				return 1;
		}
		fclose(maps);
		printf("locked %zu\n", locked);
	} else {
		fprintf(stderr, "usage: press lock FILE MIB | stream FILE... | prelock PID\n");
		return 2;
	}
	fflush(stdout);
	for (;;)
		pause();
}
