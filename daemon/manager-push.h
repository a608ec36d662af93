/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cgroups pushed, processes not chased (manager-state.h): with a backend
 * whose protection belongs to the cgroup, a cgroup that the policy
 * protects whatever its processes run is protected as a whole from when
 * it appears (cgroupfs) or its unit starts (systemd) until no process is
 * left in it or its unit stops. */
#pragma once

#include "manager-state.h"

/* What cgroupfs and systemd report, for cgroup_watch_dispatch() and the
 * unit watcher; userdata is the manager. */
extern const struct cgroup_watch_callbacks push_cgroup_watch_callbacks;
extern const struct unit_events_callbacks push_unit_events_callbacks;

/* Whether the backend protects cgroups as such: then m->push, and the
 * connector only serves the cgroups where a MatchExe= rule matches. */
bool push_possible(const struct manager *m);
/* Whether processes must be followed too (the proc connector): the
 * backend cannot protect cgroups as such, or a rule names executables. */
bool push_needs_processes(const struct manager *m);
/* The retry timer's handler (manager.c owns the source). */
int on_push_retry(sd_event_source *s, uint64_t usec, void *userdata);
/* Sets m->push, and the cgroup watcher when it is. (The unit watcher
 * is made with the bus, before: push_unit_events_callbacks.) */
int push_setup(struct manager *m);
/* Release every pushed cgroup and free the watchers. */
void push_free(struct manager *m);
/* Decide every cgroup of the tree (at start, after a reload, after lost
 * inotify events); what is gone is released. */
int push_scan(struct manager *m);
/* A unit's section is known now: its cgroups are decided again. */
void push_unit_answered(struct manager *m, const char *unit);
/* Protect=auto changed its mind about a unit (or a cgroup outside
 * units): its cgroup and those below are decided again. */
void push_decide_key_again(struct manager *m, const char *key, const char *cgroup);
/* From a cgroup's creation to its protection, over the last 256 (the
 * stats line). */
void push_latency(const struct manager *m, uint32_t *ret_p50, uint32_t *ret_max, size_t *ret_n);
/* A container asked for pid (execguard-oci-hook): its cgroup, and the
 * cgroups below, decided again. */
void push_decide_pid_cgroup(struct manager *m, pid_t pid);
/* Whether cgroup is protected as a whole now. */
bool push_protects(struct manager *m, const char *cgroup);
