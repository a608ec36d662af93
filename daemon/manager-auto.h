/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Protect=auto in the manager (manager-state.h). */
#pragma once

#include "manager-state.h"

struct manager_cgroup_info;

/* A unit's text as last read: bytes, and when (0: never). */
struct text_estimate {
	char *key;
	uint64_t bytes, at_usec;
};

/* The cgroups protected as a whole (manager_foreach_pushed()), passed in. */
typedef int (*auto_foreach_pushed_fn)(struct manager *m,
				      int (*fn)(const struct manager_cgroup_info *c, void *userdata),
				      void *userdata);

/* Decides the processes of a unit again (keyed by key, in cgroup) after
 * the engine changed its mind: passed in by the caller. */
typedef void (*auto_apply_fn)(struct manager *m, const char *key, const char *cgroup);

int auto_setup(struct manager *m);
void auto_free(struct manager *m);
/* After the policy decided about a process of unit (NULL: outside units,
 * keyed by its cgroup): watch the unit when the decision says auto, and
 * protect it when the engine has decided so. */
void auto_on_decision(struct manager *m, const char *unit, const char *cgroup, struct policy_decision *d);
/* Around a reload's scan: units no rule says auto for are forgotten. */
void auto_reload_begin(struct manager *m);
void auto_reload_end(struct manager *m);
/* One round (the auto timer): sample the watched units, decide, log,
 * and apply() each unit the engine protects or releases. */
void auto_round(struct manager *m, auto_apply_fn apply, auto_foreach_pushed_fn foreach_pushed);
