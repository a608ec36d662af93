/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The figures execguardctl shows per unit and per library, for backends
 * other than lock (which keeps its own): exec file mappings with their
 * size and resident set from /proc/PID/smaps, major faults from the unit
 * cgroup's memory.stat or /proc/PID/stat, breaches from memory.events.
 * Pure parsers over buffers; thin readers take a directory fd. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STAT_UNKNOWN UINT64_MAX

struct text_mapping {
	uint64_t dev, ino, offset;
	uint64_t size, rss; /* bytes */
	char *path;
};

struct text_mappings {
	struct text_mapping *items;
	size_t n;
};

/* Every file-backed executable mapping of an smaps buffer. */
int smaps_parse_exec(const char *buf, size_t len, struct text_mappings *ret);
void text_mappings_done(struct text_mappings *m);

/* majflt (field 12) of /proc/PID/stat text; the comm may hold ") ". */
int proc_stat_majflt(const char *buf, size_t len, uint64_t *ret);

/* Readers. cgroup is a path below cgroup_root_fd ("/system.slice/a"). */
int read_smaps_exec(int proc_fd, pid_t pid, struct text_mappings *ret);
uint64_t read_pid_majflt(int proc_fd, pid_t pid);
/* pgmajfault_exec (patched kernel) else pgmajfault; STAT_UNKNOWN when the
 * cgroup has no memory.stat (memory controller not on cgroup2). */
uint64_t read_cgroup_majflt(int cgroup_root_fd, const char *cgroup, const char **ret_key);
/* memory.events exec_protect, STAT_UNKNOWN without the kernel patch. */
uint64_t read_cgroup_breaches(int cgroup_root_fd, const char *cgroup);
/* 1 when memory.exec_protect is 1 on cgroup and every ancestor below the
 * root; 0 and the first cgroup where it is not (malloc'ed) otherwise;
 * <0 when the file is missing. */
int read_exec_protect_effective(int cgroup_root_fd, const char *cgroup, char **ret_where);
