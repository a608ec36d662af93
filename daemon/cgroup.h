/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgroup v2: where it is mounted, which cgroup a process is in, which
 * systemd unit that cgroup belongs to. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Find the cgroup2 mount in a mountinfo file (NULL: this process's),
 * using libmount. Unified layouts mount it at /sys/fs/cgroup, hybrid
 * ones at /sys/fs/cgroup/unified; the first is preferred. */
int cgroup2_find_mount(const char *mountinfo, char **ret_path);

/* The cgroup v1 hierarchy with the memory controller, found the same
 * way; -ENOENT on pure cgroup2 systems. */
int cgroup1_find_memory_mount(const char *mountinfo, char **ret_path);

/* From /proc/PID/cgroup text, the cgroup2 ("0::") path. -ENOENT if the
 * process has none, -EBADMSG if the text is ambiguous (a cgroup name
 * with a newline can forge a second line). */
int cgroup_parse_proc_cgroup(const char *buf, size_t len, char **ret_path);
/* The same without a copy: where in buf the path is, and its length. */
int cgroup_find_proc_cgroup(const char *buf, size_t len, const char **ret, size_t *ret_len);

/* The systemd unit a cgroup path belongs to: the first component after
 * the leading slices ("/system.slice/nginx.service/x" -> nginx.service).
 * -ENXIO when the path is not inside a unit. */
int cgroup_path_to_unit(const char *path, char **ret_unit);

/* The unit of a process as systemd sees it: sd_pid_get_unit() when
 * systemd is PID 1, else from the path. Decisions use the path (one read
 * of /proc/PID/cgroup); explain compares the two. */
int cgroup_unit_of(pid_t pid, const char *cgroup_path, bool systemd, char **ret_unit);

/* The one walk over a cgroup's ancestors, top-down and the cgroup
 * itself last: "/a/b" gives "/a", then "/a/b", as lengths of prefixes
 * of path (leading and doubled slashes skipped; works on "a/b" too).
 * Start with *len = 0; false when there is no further level. */
bool cgroup_next_ancestor(const char *path, size_t *len);

/* "/a/b/c" -> "a/b/c": a path usable with openat() on the mount fd.
 * Refuses "." and ".." components. */
int cgroup_relative(const char *cgroup_path, const char **ret);

/* The pids in the cgroup at cgroup_path (from the cgroup2 root fd) and
 * in its descendants down to 8 levels below, at most max of them, in a
 * malloc'ed array (NULL when there are none). -ENOENT: no such cgroup. */
int cgroup_list_pids(int root_fd, const char *cgroup_path, size_t max, pid_t **ret_pids, size_t *ret_n);

/* A unit's own cgroup from the path of one of its cgroups: cut after the
 * component named like the unit ("/s.slice/x.service/sub", "x.service"
 * -> "/s.slice/x.service"); the path itself when none is. malloc'ed. */
char *cgroup_unit_root(const char *cgroup, const char *unit);
