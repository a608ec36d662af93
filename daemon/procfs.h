/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Keyed lines of /proc and cgroupfs files ("MemTotal:   12 kB",
 * "file 4096", "State:\tS (sleeping)"): one pure parser for all of them,
 * over buffers that need not end in a NUL. Readers open the files
 * relative to a root fd they are given, so tests point them at a tree. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of the first line "KEY<sep>VALUE", blanks after sep and at
 * the end skipped: [*ret_value, *ret_value + *ret_len). A key is whole:
 * "Mem" does not match "MemFree:". -ENOENT when there is no such line. */
int procfs_field(const char *buf, size_t len, const char *key, char sep, const char **ret_value,
		 size_t *ret_len);

/* A decimal value: "file 4096" (sep ' '), "Threads:\t3" (sep ':').
 * -EINVAL unless the value is digits only, -ERANGE over 64 bits. */
int procfs_field_u64(const char *buf, size_t len, const char *key, char sep, uint64_t *ret);

/* A whole span of decimal digits ("4096" of a one-number file). */
int procfs_parse_u64(const char *s, size_t n, uint64_t *ret);

/* A cgroup limit file's value: a number of bytes, or "max" (UINT64_MAX);
 * trailing blanks and newline allowed. */
int procfs_parse_limit(const char *buf, size_t len, uint64_t *ret);

/* "KEY:   N kB" (meminfo, smaps, status), in bytes. */
int procfs_field_kb(const char *buf, size_t len, const char *key, uint64_t *ret_bytes);

/* The fields of /proc/PID/stat text after the comm (which may hold
 * ") "), NUL-terminated into out (cut at size - 1): the text after the
 * last ')'. -EINVAL without one. */
int procfs_stat_tail(const char *buf, size_t len, char *out, size_t size);

/* What the daemon reads in /proc/PID/status. */
struct proc_status {
	char state;	  /* 'R', 'S', 'Z'... */
	uint64_t threads; /* 0 when the kernel did not say */
	uint64_t cap_eff; /* effective capabilities */
	bool has_cap_eff;
};

/* -ENOENT without a State: line, -EINVAL when a field is malformed. */
int proc_status_parse(const char *buf, size_t len, struct proc_status *ret);

/* The process has exited: a zombie (or dead) whose threads are gone
 * too. A zombie leader with live threads still runs. */
bool proc_status_exited(const struct proc_status *s);
