/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Independent check for the lock tests, sharing no code with the daemon.
 *
 * resident PID: for each file mapping of PID, by its own reading of
 * /proc/PID/maps, mincore() and /proc/PID/pagemap, one line
 *   ino=I resident=BYTES length=BYTES path=P perms=r-xp used=BYTES
 * resident: of the mapping's file range, in the page cache; used: of
 * those, the pages PID maps as the file's pages (present and file-backed
 * in pagemap: not a private copy made on write).
 *
 * resident --file PATH [OFFSET LENGTH]: "resident=BYTES size=BYTES" of
 * the whole file, or of that byte range of it (page-aligned OFFSET). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int whole_file(const char *path, unsigned long long off, unsigned long long want)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long res = 0;
	unsigned char *vec;
	struct stat st;
	size_t n;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		return 1;
	}
	if (want == 0 || off + want > (unsigned long long)st.st_size)
		want = (unsigned long long)st.st_size > off ? (unsigned long long)st.st_size - off : 0;
	if (want == 0) {
		printf("resident=0 size=0\n");
		return 0;
	}
	st.st_size = (off_t)want;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, (off_t)off);
	close(fd);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	n = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
	vec = calloc(n, 1);
	if (!vec || mincore(p, (size_t)st.st_size, vec) < 0) {
		perror("mincore");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		res += vec[i] & 1;
	printf("resident=%llu size=%llu\n", res * (unsigned long long)page, (unsigned long long)st.st_size);
	return 0;
}

int main(int argc, char **argv)
{
	char path[4096], line[8192];
	long page = sysconf(_SC_PAGESIZE);
	FILE *f;
	int pm;

	if (argc == 3 && strcmp(argv[1], "--file") == 0)
		return whole_file(argv[2], 0, 0);
	if (argc == 5 && strcmp(argv[1], "--file") == 0)
		return whole_file(argv[2], strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0));
	if (argc != 2) {
		fprintf(stderr, "usage: %s PID | --file PATH [OFFSET LENGTH]\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	f = fopen(path, "re");
	if (!f) {
		perror(path);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%s/pagemap", argv[1]);
	pm = open(path, O_RDONLY | O_CLOEXEC);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		char perms[8], dev[16], name[4096] = "";
		unsigned long long res = 0, used = 0;
		unsigned char *vec;
		uint64_t *ent;
		size_t len, n;
		void *p;
		int fd;

		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %4095[^\n]", &start, &end, perms, &off, dev, &ino,
			   name) < 6)
			continue;
		if (ino == 0 || name[0] != '/')
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
		ent = calloc(n, sizeof(*ent));
		if (vec && mincore(p, len, vec) == 0) {
			bool have = ent && pm >= 0 &&
				    pread(pm, ent, n * sizeof(*ent), (off_t)(start / (size_t)page * sizeof(*ent))) ==
					    (ssize_t)(n * sizeof(*ent));

			for (size_t i = 0; i < n; i++) {
				res += vec[i] & 1;
				/* bit 63 present, bit 61 file page */
				if (have && (vec[i] & 1) && (ent[i] >> 63 & 1) && (ent[i] >> 61 & 1))
					used++;
			}
		}
		free(vec);
		free(ent);
		munmap(p, len);
		printf("ino=%llu resident=%llu length=%zu path=%s perms=%s used=%llu\n", ino,
		       res * (unsigned long long)page, len, name, perms, used * (unsigned long long)page);
	}
	fclose(f);
	return 0;
}
