/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon: manager.c owns the sd-event loop and every source in it
 * (proc connector, signals, timers, watchdog; each stored, described,
 * and its arming checked), the policy, the tracked processes and the
 * backend, and runs the start steps. Its parts (manager-state.h) never
 * call back into it; the D-Bus interface reads it through
 * manager-view.h. */
#pragma once

#include "manager-backend.h"
#include "manager-decide.h"
#include "manager-state.h"
#include "manager-view.h"

int manager_new(const struct manager_args *args, struct manager **ret);
struct manager *manager_free(struct manager *m);
static inline void manager_freep(struct manager **m)
{
	manager_free(*m);
}

/* The whole start, in order: policy, backend, D-Bus interface and unit
 * lookup, connector, capabilities, first scan. */
int manager_start(struct manager *m);
/* Its steps (tests take some); each logs its own failure. */
int manager_load_policy(struct manager *m);
/* manager_pick_backend(): manager-backend.h */
/* The unit lookup and the D-Bus interface, owned by the manager:
 * between picking the backend and the first scan, which already reads
 * units' sections. */
int manager_start_bus(struct manager *m);
int manager_start_events(struct manager *m);
/* manager_drop_privileges(): manager-backend.h */
/* Prewarm (records and replays), when args name its directory. */
int manager_start_prewarm(struct manager *m);
int manager_scan(struct manager *m);
int manager_run(struct manager *m);

/* The unit lookup (tests set their own): see unit_settings_fn. */
void manager_set_unit_settings(struct manager *m, unit_settings_fn fn, void *userdata);
/* Decide about PID now (a unit's section it waited for is known);
 * exec_ts as the exec event had it, 0 when found by a scan. */
void manager_decide_pid(struct manager *m, pid_t pid, uint64_t exec_ts);
/* As SIGHUP. On a rejected policy returns <0 and, if ret_rejected is
 * given, hands over the rejected policy with its errors (policy_done()). */
int manager_reload(struct manager *m, struct policy *ret_rejected);
/* Decide about every process again (after systemd's daemon-reload). */
int manager_rescan(struct manager *m);
