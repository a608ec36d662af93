/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Mappings of a process: a pure parser for /proc/PID/maps text and a
 * PROCMAP_QUERY reader (Linux 6.11+) behind one call. By default the
 * executable mappings; also the whole images (every mapping of a file
 * mapped executable: its r-- head, .rodata, relro/.data) or every file
 * mapping. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mapping_kind {
	MAPPING_FILE,	 /* a file on a file system: protectable */
	MAPPING_DELETED, /* its file was unlinked (" (deleted)") */
	MAPPING_MEMFD,	 /* memfd: shmem, not protectable */
	MAPPING_ANON,	 /* anonymous exec memory (JIT) */
	MAPPING_SPECIAL, /* [vdso], [vsyscall] and other named kernel areas */
};

/* exec_mapping.prot bits, as maps shows them ("r-xp"). */
#define MAP_PROT_R 0x1u
#define MAP_PROT_W 0x2u
#define MAP_PROT_X 0x4u
#define MAP_PROT_SHARED 0x8u

struct exec_mapping {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	enum mapping_kind kind;
	unsigned prot; /* MAP_PROT_* */
	char *path; /* unescaped, " (deleted)" removed; NULL for anonymous */
};

struct exec_mappings {
	struct exec_mapping *items;
	size_t n, allocated;
};

const char *mapping_kind_to_string(enum mapping_kind k);

/* Parse one line of /proc/PID/maps (without or with trailing '\n').
 * Returns 1 and fills *ret for an executable mapping, 0 for a line that is
 * valid but not executable, -EINVAL for a malformed line. */
int maps_parse_line(const char *line, size_t len, struct exec_mapping *ret);

/* The same for any mapping: 1 for every valid line. */
int maps_parse_line_any(const char *line, size_t len, struct exec_mapping *ret);

/* Which mappings a reader returns. */
enum maps_select {
	MAPS_EXEC,   /* executable mappings (file, anonymous, special) */
	/* The executable mappings and every other mapping of a file that
	 * one of them maps (same device and inode): the whole program, as
	 * the loader maps it (r-- head, r-x text, .rodata, relro/.data).
	 * Data files and anonymous memory stay out. */
	MAPS_IMAGES,
	MAPS_FILES,  /* every mapping with a path ("/..."), executable or not */
};

/* Parse a whole maps buffer, appending every executable mapping. */
int maps_parse_buffer(const char *buf, size_t len, struct exec_mappings *out);
int maps_parse_buffer_select(const char *buf, size_t len, enum maps_select sel, struct exec_mappings *out);

/* Keep in m (in order) only what MAPS_IMAGES selects from it (pure). */
void exec_mappings_select_images(struct exec_mappings *m);

/* Read the executable mappings of the process whose /proc directory is
 * proc_pid_fd: PROCMAP_QUERY when the kernel has it, else the text. If
 * use_query is non-NULL it caches whether the ioctl works. */
int maps_read(int proc_pid_fd, bool *use_query, struct exec_mappings *out);
/* The same, selecting as sel says; entries in address order. The ioctl
 * serves MAPS_EXEC only (cheaper than the text there, dearer for whole
 * images); *use_query is left as it is for the others. */
int maps_read_select(int proc_pid_fd, bool *use_query, enum maps_select sel, struct exec_mappings *out);

/* A mapped file as maps shows it: for a file on a stacking file system
 * (overlayfs) the real file's device and inode, which differ from what
 * fstat() of it says. */
struct file_identity {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
};

/* The identity of the mapping of this process at addr: PROCMAP_QUERY
 * (6.11+) or the text of /proc/self/maps. */
int maps_identity_at(uint64_t addr, struct file_identity *ret);
/* The same from maps text, any mapping (pure); -ENOENT if none covers addr. */
int maps_find_identity(const char *buf, size_t len, uint64_t addr, struct file_identity *ret);

/* Sum of (end - start) over the file-backed executable entries. */
uint64_t exec_mappings_file_bytes(const struct exec_mappings *m);

/* "r-xp" from prot; buf holds at least 5 bytes. */
const char *map_prot_string(unsigned prot, char buf[static 5]);

void exec_mappings_clear(struct exec_mappings *m);
int exec_mappings_append(struct exec_mappings *m, const struct exec_mapping *item);
