/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Prometheus text exposition format (0.0.4) of what execguardctl
 * reads from execguardd: a pure function from the figures to a buffer,
 * so that a test can check names, escaping and the whole text. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "latency.h"

/* A figure the daemon does not know: its sample is left out. */
#define METRICS_UNKNOWN UINT64_MAX

struct metrics_unit {
	const char *unit;
	/* What asks for protection (ListUnitsEx): "policy" (a [Rule]),
	 * "drop-in" (a unit's [X-ExecGuard] section), "annotation" (a
	 * container's io.execguard.protect), "auto" (Protect=auto
	 * decided, or watches it), "default". */
	const char *reason;
	const char *source; /* the rule's name or the unit file; "" unknown */
	bool protected_now;
	uint64_t processes;
	uint64_t text_mapped, text_resident, text_locked; /* bytes */
	uint64_t major_faults, breaches;
	/* Text major faults: the kernel's counter or the daemon's estimate
	 * (text_fault_source "kernel" or "estimate"). */
	uint64_t text_faults;
	const char *text_fault_source;
	/* memory.exec_protect in force (the smallest up to the root) and
	 * exec_protect_usage; has_bound false without the kernel patch. */
	bool has_bound, bound_max;
	uint64_t bound, kept;
	/* Kubernetes' label names, for a unit that is a container or pod
	 * (container-names.h, and the names its annotations gave): NULL or ""
	 * leaves the label out. */
	const char *namespace_, *pod, *pod_uid, *container;
};

struct metrics_daemon {
	/* false: the daemon's figures could not be read; then only
	 * execguard_up 0 and the last success are given, so that a file
	 * left by an earlier run never goes on showing old figures. */
	bool up;
	/* Unix time of the last reading of the daemon's figures: now when
	 * up, else the one an earlier run wrote (metrics_last_success()); 0:
	 * none known, left out. */
	double last_success;
	const char *version, *backend;
	uint64_t processes_protected;
	uint64_t exec_events, exit_events, decisions, overflows, rescans, backend_errors;
	/* Exec to decision since the daemon's start: cumulative buckets, the
	 * last one +Inf (LATENCY_INF); none from a daemon without them. */
	const struct latency_bucket *latency;
	size_t n_latency;
	uint64_t latency_sum_usec;
	bool has_cpu;
	double cpu_seconds;
};

/* The text for d and units[0..n) into a malloc'ed, NUL-terminated *ret. */
int metrics_format(const struct metrics_daemon *d, const struct metrics_unit *units, size_t n,
		   char **ret, size_t *ret_len);

/* execguard_last_success_timestamp_seconds in an exposition written
 * before: 0 and *ret, or -ENOENT. */
int metrics_last_success(const char *buf, size_t len, double *ret);

/* A label value as the format wants it: \\, \" and \n escaped. */
void metrics_escape_label(const char *s, FILE *f);

