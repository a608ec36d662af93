/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A unit's own [X-ExecGuard] section in its files: which files, in
 * systemd's order (fragment, then drop-ins; later ones win key by key),
 * read like policy files (root's, not writable by others). Pure work on
 * buffers plus one reader; used by the daemon and by execguardctl. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

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

/* Whether buf has an [X-ExecGuard] section header (a comment naming it
 * is not one). */
bool unit_file_has_section(const char *buf, size_t len);

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
