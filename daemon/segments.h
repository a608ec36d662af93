/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Residency per ELF segment of the files a set of processes maps (and of
 * files named besides: what a service runs per request and nothing maps
 * between requests): which files (aggregated from their maps, pure), and
 * for each its PT_LOAD segments with the bytes of their file pages in the
 * page cache. Residency is taken with mincore() on our own read-only
 * mapping of the whole file before its headers are read, and the reader
 * drops again what reading them brought in: looking leaves the page
 * cache as it was. execguardctl segments prints it; tests and benches
 * read its JSON. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "elf-segments.h"
#include "maps.h"

struct seg_segment {
	uint32_t flags;	 /* ELF_SEG_* */
	bool relro;	 /* overlaps PT_GNU_RELRO */
	uint64_t offset; /* first file page, in bytes */
	uint64_t size;	 /* its file pages, in bytes (rounded out, cut at EOF) */
	uint64_t resident;
};

struct seg_file {
	char *path;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	bool executable; /* a process maps it executable: an image */
	bool named;	 /* named by the caller, not (only) found mapped */
	size_t n_pids;	 /* processes mapping it */
	unsigned prot;	 /* MAP_PROT_* of all its mappings, or'ed */
	/* Where to open it: a mapping of it and the process that has it. */
	struct exec_mapping where;
	pid_t where_pid;

	/* Measured (seg_file_measure()): */
	bool measured;
	int error;	   /* < 0: not measured; error_what says why */
	const char *error_what;
	uint64_t file_size; /* st_size */
	uint64_t size;	    /* its pages, in bytes (file_size rounded up) */
	uint64_t resident;  /* of the whole file */
	int elf;	   /* 0: ELF; else elf_read()'s error (-ENOEXEC: not ELF) */
	size_t n_segments;
	struct seg_segment segments[ELF_SEGMENTS_MAX];
};

struct seg_files {
	struct seg_file *items;
	size_t n, allocated;
	unsigned generation; /* one per process added */
	unsigned *seen;	     /* per item: generation it was last counted in */
};

void seg_files_done(struct seg_files *f);

/* Add the file mappings (maps.h MAPS_FILES) of one process: files are
 * keyed by device and inode; each counts the process once. Pure. */
int seg_files_add_process(struct seg_files *f, pid_t pid, const struct exec_mappings *m);

/* Add a file by path (mapped or not): named. Opens it to learn its
 * identity. -errno when it cannot be opened or is not a regular file. */
int seg_files_add_path(struct seg_files *f, const char *path);

/* Images first (executable or named), then by path. */
void seg_files_sort(struct seg_files *f);

/* Fill a file's segments from its ELF image and a mincore() vector of the
 * whole file (file_size bytes, page_size pages); a file that is not ELF
 * (elf != 0) gets none. Pure. */
void seg_file_count(struct seg_file *f, const struct elf_image *img, int elf, const unsigned char *vec,
		    uint64_t file_size, size_t page_size);

/* Open (through /proc/PID/map_files when a process maps it, else by path
 * without following symlinks; the device and inode must be the
 * mapping's), take residency, then the headers. proc_fd is the proc root. */
void seg_file_measure(struct seg_file *f, int proc_fd);

/* The processes of a cgroup and of every cgroup below it (cgroup.procs),
 * cgroup_fd a directory of cgroup2. Appends to *pids. */
int seg_cgroup_pids(int cgroup_fd, pid_t **pids, size_t *n);

/* Sums over the images (executable or named files) by segment
 * permissions: index ELF_SEG_* flags (0..7). */
struct seg_totals {
	uint64_t size[8], resident[8];
	size_t n_images, n_data, n_errors;
};
void seg_files_totals(const struct seg_files *f, struct seg_totals *ret);
