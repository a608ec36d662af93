/* SPDX-License-Identifier: GPL-2.0-or-later */
/* systemd tells when a unit starts and stops, and where its cgroup is:
 * the PropertiesChanged signals of units (ActiveState), which systemd
 * sends to subscribers (units.c subscribes). A unit seen starting is
 * asked for its ControlGroup once; the watcher reports through the
 * callbacks passed in and keeps nothing else. (Not UnitRemoved: a
 * daemon-reload unloads and loads every unit, running ones too.) */
#pragma once

#include <stdbool.h>

typedef struct sd_bus sd_bus;
struct unit_events;

struct unit_events_callbacks {
	/* The unit is starting or running; its cgroup ("/system.slice/x.service"). */
	void (*started)(void *userdata, const char *unit, const char *cgroup);
	/* It stopped (inactive, failed). */
	void (*stopped)(void *userdata, const char *unit);
};

int unit_events_new(const struct unit_events_callbacks *cb, void *userdata, struct unit_events **ret);
struct unit_events *unit_events_free(struct unit_events *w);
/* The connection to listen on, after each (re)connect; NULL when gone. */
int unit_events_set_bus(struct unit_events *w, sd_bus *bus);
/* Units started and stopped as reported so far. */
void unit_events_counts(const struct unit_events *w, unsigned long long *started, unsigned long long *stopped);

/* What an ActiveState says: 1 starting or running (activating, active,
 * reloading), 0 stopped (inactive, failed), -1 neither (deactivating,
 * maintenance, unknown). */
int unit_active_state_running(const char *active_state);
/* The D-Bus interface whose ControlGroup a unit of this name has (its
 * type: service, scope, socket, mount, swap), NULL for types without
 * processes of their own (slices, targets, devices, timers...). */
const char *unit_cgroup_interface(const char *unit);
