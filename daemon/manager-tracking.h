/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The protected processes (manager-state.h): their entries and pins,
 * the later looks after an exec, the round-robin look at long-running
 * ones. */
#pragma once

#include "manager-state.h"

/* Decides about pid again (a later look found it moved to another
 * cgroup): examine(), passed in by the caller. */
typedef int (*tracked_decide_fn)(struct manager *m, pid_t pid, uint64_t exec_ts);

int track_new(struct manager *m, pid_t pid, struct look *l, struct tracked **ret);
void tracked_update(struct tracked *t, struct look *l, const struct policy_decision *d);
void tracked_queue(struct manager *m, struct tracked *t, unsigned stage, uint64_t base_ns);
void tracked_unqueue(struct manager *m, struct tracked *t);
void tracked_free(struct manager *m, struct tracked *t);
void release_tracked(struct manager *m, struct tracked *t);
int protect_now(struct manager *m, struct tracked *t, struct look *l);
uint64_t remap_interval_usec(const struct manager *m);
/* The later looks that are due (the rescan timer). */
void tracking_run_due(struct manager *m, tracked_decide_fn decide);
/* One round of the look at long-running processes (the remap timer). */
void tracking_remap_round(struct manager *m, tracked_decide_fn decide);

/* Only an exit or the policy drops a protection (see manager-tracking.c). */
bool look_error_is_transient(int r);
/* A look failed: reported once until a process is looked at fine again. */
void report_examine_error(struct manager *m, pid_t pid, int r, const char *tracked_look);
