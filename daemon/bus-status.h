/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ListUnits, ListUnitsEx and ListLibraries: the protected processes
 * grouped by unit, their figures read from /proc and cgroupfs within
 * per-call budgets, one unit per turn of the event loop (jobs). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
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

int bus_status_list_units(struct bus_status *b, sd_bus_message *msg, bool ex, sd_bus_error *error);
int bus_status_list_libraries(struct bus_status *b, sd_bus_message *msg, sd_bus_error *error);
/* Drop the calls in flight: with the connection, or at exit. */
void bus_status_done(struct bus_status *b);
