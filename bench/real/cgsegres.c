/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-segment page-cache residency of the files a cgroup's processes map
 * executable (issue 36 item 4; bench/rare-path/segres.c does one file).
 *
 *   cgsegres CGROUP_DIR [FILE...]
 *
 * For every process in CGROUP_DIR and the cgroups below it, every file it
 * maps with PROT_EXEC (from /proc/PID/maps), plus each FILE given (images
 * a service runs per request that nothing maps between requests), prints
 * one line per ELF PT_LOAD segment:
 *
 *   PATH FLAGS SIZE_KB RESIDENT_KB
 *
 * FLAGS as in the program header (r-x, r--, rw-). Residency is mincore()
 * over a shared read-only map of the file, taken before the headers are
 * read (reading them makes their page resident). Exit 0; a file that
 * cannot be opened is reported on stderr and skipped. */
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../residency.h"

#define MAXFILES 4096

static char *files[MAXFILES];
static int nfiles;

static void add(const char *path)
{
	for (int i = 0; i < nfiles; i++)
		if (!strcmp(files[i], path))
			return;
	if (nfiles < MAXFILES)
		files[nfiles++] = strdup(path);
}

static void scan_pid(const char *pid)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char perms[8];
		int off = 0;
		/* start-end perms offset dev inode pathname */
		if (sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &off) != 1 || !off)
			continue;
		char *name = line + off;
		name[strcspn(name, "\n")] = 0;
		if (perms[2] == 'x' && name[0] == '/' && !strstr(name, " (deleted)"))
			add(name);
	}
	fclose(f);
}

static void scan_cgroup(const char *dir)
{
	char path[4096], pid[32];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "r");
	if (f) {
		while (fscanf(f, "%31s", pid) == 1)
			scan_pid(pid);
		fclose(f);
	}
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			scan_cgroup(path);
		}
	closedir(d);
}

static void report(const char *file)
{
	struct residency r;
	Elf64_Ehdr eh;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "cgsegres: %s: cannot read\n", file);
		return;
	}
	if (residency_open(&r, fd) || r.len < sizeof(Elf64_Ehdr) || residency_sample(&r)) {
		fprintf(stderr, "cgsegres: %s: cannot read\n", file);
		goto out;
	}
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
		goto out;
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + (off_t)i * sizeof(ph)) != sizeof(ph))
			break;
		if (ph.p_type != PT_LOAD)
			continue;
		size_t page = r.page_size, kib = page / 1024;
		size_t first = ph.p_offset / page, last = (ph.p_offset + ph.p_filesz + page - 1) / page;
		size_t res = residency_count(&r, first, last);
		printf("%s %c%c%c %zu %zu\n", file, ph.p_flags & PF_R ? 'r' : '-', ph.p_flags & PF_W ? 'w' : '-',
		       ph.p_flags & PF_X ? 'x' : '-', (last - first) * kib, res * kib);
	}
out:
	residency_close(&r);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cgsegres CGROUP_DIR [FILE...]\n");
		return 2;
	}
	scan_cgroup(argv[1]);
	for (int i = 2; i < argc; i++)
		add(argv[i]);
	for (int i = 0; i < nfiles; i++)
		report(files[i]);
	return 0;
}
