/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Looking at one process through its /proc/PID directory fd: its
 * cgroup and unit, its executable, and a pin (a pidfd, or that
 * directory where there are no pidfds) that a reused PID cannot fool. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy.h"

struct look {
	pid_t pid;
	int pidfd;
	int proc_pid_fd;
	char *exe, *cgroup, *unit;
	/* The unit's own section, when it has one: a decision may point
	 * into it, so it lives as long as the look. */
	struct rule_settings unit_section;
	char *unit_source;
};

#define LOOK_INIT { .pidfd = -1, .proc_pid_fd = -1 }

void look_done(struct look *l);

/* Read pid's cgroup and unit under the proc root proc_fd. 0 on success,
 * -ESRCH when it is gone (normal), -ENOENT for processes without a
 * cgroup2 path, other -errno on failure. l is set up even on failure:
 * look_done() it. */
int look_at(int proc_fd, pid_t pid, struct look *l);

/* Only the cgroup2 path of pid, into buf (one read of /proc/PID/cgroup,
 * nothing kept open): *ret points into buf. -ESRCH: gone; -ENOENT: no
 * cgroup2 path; -E2BIG: longer than buf (look_at() reads any length). */
int look_cgroup(int proc_fd, pid_t pid, char *buf, size_t size, const char **ret);

/* Its executable, only when a rule looks at it. -ENOENT: a kernel
 * thread. */
int look_at_exe(struct look *l);

/* Pin the process looked at: a dup of known_pidfd when it is tracked
 * already, else a new pidfd, or (by_proc_dir) its /proc directory. */
int look_pin(struct look *l, bool by_proc_dir, int known_pidfd);

/* The process behind a pin has exited (or the pin is bad). */
bool pin_exited(int pin, bool by_proc_dir);

/* pidfd_open(2); -1 with errno set. */
int pidfd_open_pid(pid_t pid);
