/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The figures execguardctl shows per unit and per library, for backends
 * other than lock (which keeps its own): exec file mappings with their
 * size and resident set from /proc/PID/smaps, major faults from the unit
 * cgroup's memory.stat or /proc/PID/stat, breaches from memory.events.
 * Pure parsers over buffers; thin readers take a directory fd. */
#pragma once

#include <stdbool.h>
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
/* memory.events exec_protect_breach, STAT_UNKNOWN without the kernel patch. */
uint64_t read_cgroup_breaches(int cgroup_root_fd, const char *cgroup);
/* A memory.exec_protect value is off only when it is 0; otherwise it is
 * a bound in bytes or "max". */
bool exec_protect_is_off(const char *value);
/* 1 when memory.exec_protect is on for cgroup and every ancestor below
 * the root, with the effective bound (the smallest; UINT64_MAX for max);
 * 0 and the first cgroup where it is off (malloc'ed) otherwise; <0 when
 * the file is missing or unreadable. */
int read_exec_protect_effective(int cgroup_root_fd, const char *cgroup, uint64_t *ret_bound,
				char **ret_where);
/* memory.stat exec_protect_usage: the executable-image pages charged to the
 * cgroup and its subtree (what its protection covers, up to the bound);
 * STAT_UNKNOWN when absent. */
uint64_t read_cgroup_exec_usage(int cgroup_root_fd, const char *cgroup);
/* utime + stime (fields 14 and 15) of /proc/PID/stat text, in clock ticks. */
int proc_stat_cpu_ticks(const char *buf, size_t len, uint64_t *ret);
