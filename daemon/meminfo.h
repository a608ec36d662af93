/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How close memory is to running out, for the lock backend's give-back:
 * the system's MemAvailable (/proc/meminfo), and for a cgroup the room
 * under its tightest limit (cgroup2 memory.max/memory.high of it and its
 * ancestors, or the v1 memory controller's hierarchical limit) plus the
 * file memory in it that reclaim can still take (active_file +
 * inactive_file: locked pages are on the unevictable list and not in
 * there). Page cache being churned keeps these high; an anonymous squeeze
 * (or locked memory) drives them down before an OOM kill. The parsers
 * are pure (procfs.h) and shared with the tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A limit file's content: a number, or "max" (cgroup2) -> UINT64_MAX. */
int memlimit_parse(const char *buf, size_t len, uint64_t *ret);

/* Room before a limit: what is left under it plus reclaimable file
 * memory. UINT64_MAX when limit is UINT64_MAX. */
uint64_t mem_headroom(uint64_t limit, uint64_t current, uint64_t reclaimable_file);

/* MemAvailable of proc_fd's meminfo (the proc root), in bytes. */
int meminfo_available(int proc_fd, uint64_t *ret);

struct memcg_room {
	uint64_t headroom; /* UINT64_MAX: no limit anywhere */
	uint64_t limit;	   /* of the tightest level; UINT64_MAX: none */
};

/* cgroup2: the cgroup at path rel (relative to the cgroup2 root fd) and
 * each ancestor below the root; the tightest level wins. Levels without
 * the memory controller have no limit files and count as unlimited.
 * Limits at or above mem_total count as none. */
int memcg2_room(int root_fd, const char *rel, uint64_t mem_total, struct memcg_room *ret);

/* cgroup v1: the memory controller directory dir (absolute path),
 * hierarchical_memory_limit and total_*_file of its memory.stat. */
int memcg1_room(const char *dir, uint64_t mem_total, struct memcg_room *ret);

/* The v1 memory controller directory of the process whose /proc/PID is
 * proc_pid_fd ("N:memory:/path" in its cgroup file, under the v1 memory
 * mount that libmount finds in /proc/self/mountinfo); -ENOENT when
 * there is none (pure cgroup2 systems). *ret is malloc()ed. */
int memcg1_dir_of(int proc_pid_fd, char **ret);

/* Pure: the memory path in /proc/PID/cgroup text, malloc()ed. */
int memcg1_parse_cgroup(const char *buf, size_t len, char **ret);
