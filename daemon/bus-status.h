/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ListUnits, ListUnitsEx and ListLibraries: the protected processes
 * grouped by unit, their figures read from /proc and cgroupfs within
 * per-call budgets, one unit per turn of the event loop (jobs). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

struct manager;
struct units;
struct status_job;

struct bus_status {
	sd_event *event;
	struct manager *m;	 /* read through manager-view.h */
	struct units *units;	 /* units' own sections (units.h) */
	struct status_job *jobs; /* calls being answered */
	size_t n_jobs;
};

/* The one rule for what names a process's executable, libraries, unit
 * and files, for every method (ListUnits, ListLibraries, Explain): root
 * sees every process, any other caller its own. */
bool bus_may_see(int proc_fd, uid_t viewer, pid_t pid);
/* The owner of pid under the proc root; -ESRCH: no such process. */
int bus_process_owner(int proc_fd, pid_t pid, uid_t *ret);
/* The caller's effective uid (its uid where that is not known). */
int bus_caller_uid(sd_bus_message *msg, uid_t *ret);

int bus_status_list_units(struct bus_status *b, sd_bus_message *msg, bool ex, sd_bus_error *error);
int bus_status_list_libraries(struct bus_status *b, sd_bus_message *msg, sd_bus_error *error);
/* Drop the calls in flight: with the connection, or at exit. */
void bus_status_done(struct bus_status *b);
