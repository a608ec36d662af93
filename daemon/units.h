/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A unit's own [X-ExecGuard] section: found through systemd's
 * FragmentPath and DropInPaths on the system bus, read like a policy
 * file (root's, not writable by others), merged in systemd's order (later
 * drop-ins win), cached per unit until systemd reloads. The merging and
 * parsing work on buffers, for the tests and for execguardctl. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

typedef struct sd_bus sd_bus;
struct manager;
struct units;

/* Message ids (catalog/execguard.catalog). */
#define MID_UNIT_SECTION_INVALID "7a41c2e95f3b4d08b6e1a9c3d5f70812"
#define MID_UNIT_LOOKUP "b2d84f1e6a9c4e37a0c5d8e2f4b61a93"

/* One file of a unit, in the order systemd applies them. */
struct unit_file {
	const char *path;
	const char *buf;
	size_t len;
};

/* The files to read for a unit: its fragment (none when empty or
 * "/dev/null", a masked unit) then the drop-ins in the order given, which
 * is systemd's. Returns a NULL terminated list of borrowed pointers
 * (free() only the array) or NULL on ENOMEM. */
const char **unit_files_order(const char *fragment, char *const *dropins);

/* The line of the last Protect= in the [X-ExecGuard] section(s) of buf,
 * 0 if none. */
unsigned unit_file_protect_line(const char *buf, size_t len);

/* Merge the [X-ExecGuard] sections of files[0..n) (later ones win key by
 * key). A file with errors adds them to errors_to and contributes
 * nothing. Returns 1 and *ret when some file has a section, else 0;
 * *ret_source (malloc'ed) says "PATH:LINE" of the Protect= that counts,
 * else the last file with a section. <0 on ENOMEM. */
int unit_files_merge(const struct unit_file *files, size_t n, struct policy *errors_to,
		     struct rule_settings *ret, char **ret_source);

/* Read the files of paths[] (a unit_files_order() list) with the policy
 * files' mode check and merge them. Unreadable or refused files are
 * errors in errors_to. Same returns as unit_files_merge(). */
int unit_files_load(const char *const *paths, struct policy *errors_to, struct rule_settings *ret,
		    char **ret_source);

/* "Protect=yes LockBudget=64M" for reports; "" when nothing is set. */
void rule_settings_format(const struct rule_settings *s, char *buf, size_t size);

/* The daemon side: a cache per unit, filled over the bus. */
int units_new(struct manager *m, struct units **ret);
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
 * and is decided by manager_decide_pid() when the answer comes. */
int units_lookup(void *userdata, const char *unit, pid_t pid, uint64_t exec_ts, struct rule_settings *ret,
		 char **ret_source);

/* For the D-Bus interface: whether lookups work, in a few words. */
const char *units_state(const struct units *u);

typedef int (*units_section_fn)(const char *unit, const struct rule_settings *s, const char *source,
				void *userdata);
/* Every cached unit that has a section. */
int units_foreach_section(struct units *u, units_section_fn fn, void *userdata);
