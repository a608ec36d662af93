/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguardctl segments: residency per ELF segment of the files the
 * processes of a unit, a cgroup or one process map, and of files named
 * besides. Needs no daemon: it reads /proc and the files (segments.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct segments_args {
	const char *target;	 /* a PID or a unit name; NULL with cgroup */
	const char *cgroup;	 /* --cgroup: a cgroup2 path, from the root */
	const char *cgroup_root; /* --cgroup-root, NULL: the cgroup2 mount */
	const char *const *files; /* --file, n_files of them */
	size_t n_files;
	bool json;
};

/* Prints the report; returns execguardctl's exit status: 0, 1 (no such
 * process, unit or cgroup, nothing readable), 2 (usage). */
int ctl_segments(const struct segments_args *a);
