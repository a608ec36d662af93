/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's cache of units' own [X-ExecGuard] sections: found through
 * systemd's FragmentPath and DropInPaths on the system bus (asked
 * asynchronously), read with unit-files.h, cached per unit until systemd
 * reloads. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "message-ids.h"
#include "policy.h"
#include "unit-files.h"

typedef struct sd_bus sd_bus;
struct units;

/* Looks up a unit's own [X-ExecGuard] section: 1 and the settings (and
 * a malloc'ed description of where they came from) when it has one, 0
 * when not, <0 on error, UNIT_SETTINGS_PENDING when the answer is not
 * known yet: then PID (if > 0) is decided again once it is (the
 * answered callback below). units_lookup() is one; tests have their
 * own. It must never block. */
#define UNIT_SETTINGS_PENDING 2
typedef int (*unit_settings_fn)(void *userdata, const char *unit, pid_t pid, uint64_t exec_ts,
				struct rule_settings *ret, char **ret_source);

/* A process whose decision waits for its unit's section. */
struct unit_waiter {
	pid_t pid;
	uint64_t exec_ts; /* as its exec event had it */
};

/* How the cache reports; each is called from its own handlers, never
 * from units_lookup(). */
struct units_callbacks {
	/* A unit's section is known now (or its lookup failed and it is
	 * decided without): the n processes that waited for it are to be
	 * decided. */
	void (*answered)(void *userdata, const char *unit, const struct unit_waiter *waiters, size_t n);
	/* Decisions may have missed an answer (a new connection, systemd
	 * reloaded, too many waiters): decide everything again, soon. */
	void (*rescan)(void *userdata);
};

/* The daemon side: a cache per unit, filled over the bus. */
int units_new(const struct units_callbacks *cb, void *userdata, struct units **ret);
struct units *units_free(struct units *u);

/* The connection to ask systemd on, after each (re)connect; NULL when
 * the bus is gone (uncached units then have no section). A new
 * connection empties the cache and rescans once systemd is seen: a
 * reload may have been missed. */
int units_set_bus(struct units *u, sd_bus *bus);

/* Mark every cached section stale (the Reload method, systemd reloads):
 * each is asked again at its next lookup; answers under way are
 * dropped and their processes found again by a rescan. */
void units_flush(struct units *u);

/* The manager's unit_settings_fn: never blocks. A unit not known yet (or
 * stale since a systemd reload, or whose last lookup failed over 30 s
 * ago) is asked about asynchronously; PID (when > 0) waits in its entry
 * and is handed to the answered callback when the answer comes. */
int units_lookup(void *userdata, const char *unit, pid_t pid, uint64_t exec_ts, struct rule_settings *ret,
		 char **ret_source);

/* For the D-Bus interface: whether lookups work, in a few words. */
const char *units_state(const struct units *u);

typedef int (*units_section_fn)(const char *unit, const struct rule_settings *s, const char *source,
				void *userdata);
/* Every cached unit that has a section. */
int units_foreach_section(struct units *u, units_section_fn fn, void *userdata);
