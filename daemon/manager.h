/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's state: it owns the sd-event loop and every source in it
 * (proc connector, signals, timers, watchdog), the policy, the tracked
 * processes and the backend. */
#pragma once

#include <stdbool.h>

#include "log.h"
#include "policy.h"

struct manager_args {
	const char *config_file;
	const char *dropin_dir;
	const char *cgroup_root;   /* NULL: find the cgroup2 mount */
	const char *proc_root;	   /* normally "/proc" */
	int backend_override;	   /* -1 or an enum backend_choice */
	bool dry_run;
	int receive_buffer;	   /* 0: from policy */
};

struct manager;

int manager_new(const struct manager_args *args, struct manager **ret);
struct manager *manager_free(struct manager *m);

/* Steps of a start, in order; each logs its own failure. */
int manager_load_policy(struct manager *m);
int manager_pick_backend(struct manager *m);
int manager_start_events(struct manager *m);
int manager_scan(struct manager *m);
int manager_run(struct manager *m);

/* Print every policy error as file:line: message; the count. */
size_t policy_print_errors(const struct policy *p, FILE *f);
