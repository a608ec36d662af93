/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Deciding about processes (manager-state.h): one at a time, all of
 * them, or those of a unit. */
#pragma once

#include "manager-state.h"

struct cnproc_event;

/* Decide about one process and act on the decision. exec_ts is the
 * kernel's exec timestamp, 0 when found by a scan. */
int examine(struct manager *m, pid_t pid, uint64_t exec_ts);
/* Look at every process: at start, after lost events, after reload. */
int scan_all(struct manager *m);
/* A rescan of /proc shortly: events were lost. */
void schedule_full_rescan(struct manager *m);
int on_full_rescan(sd_event_source *s, uint64_t usec, void *userdata);
/* Forget what exec decisions know of cgroups: a decision may change
 * (a reload, a unit's section, systemd reloaded). */
void decide_cache_clear(struct manager *m);
/* Protect=auto changed its mind about a unit: decide its processes
 * again (auto_apply_fn). */
void decide_unit_again(struct manager *m, const char *key, const char *cgroup);
/* Handle decoded proc connector events (exec, exit) as they come from
 * the socket; the C test of the core feeds its own. */
void manager_process_events(struct manager *m, const struct cnproc_event *ev, size_t n);
