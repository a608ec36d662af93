/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Text major faults per unit, on every kernel: the patched kernel counts
 * them (memory.stat pgmajfault_exec); elsewhere the daemon estimates them
 * from what it can see (see execguardd(8), "TEXT FAULTS"). One reader per
 * daemon; what it keeps per unit is forgotten with the unit. Protect=auto
 * and the metrics read it; nothing else writes it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum text_fault_source {
	TEXT_FAULTS_KERNEL,   /* memory.stat pgmajfault_exec of the unit's cgroup */
	TEXT_FAULTS_ESTIMATE, /* the stock-kernel estimate */
};

/* A counter that only grows, from the unit's first reading on. */
struct text_fault_reading {
	uint64_t faults;
	enum text_fault_source source;
	uint64_t at_usec; /* CLOCK_MONOTONIC of the reading */
};

struct text_faults;

/* cgroup_root_fd: the cgroup2 mount; proc_fd: /proc. Both stay the
 * caller's. */
int text_faults_new(int cgroup_root_fd, int proc_fd, struct text_faults **ret);
struct text_faults *text_faults_free(struct text_faults *tf);

/* The unit's text faults so far (key: the unit; cgroup: its cgroup2 path
 * below the root). -ENOENT when the cgroup is gone, -ENODATA when neither
 * the counter nor the estimate can be had (no memory controller). */
int text_faults_read(struct text_faults *tf, const char *key, const char *cgroup,
		     struct text_fault_reading *ret);
/* The unit is gone, or no longer watched. */
void text_faults_forget(struct text_faults *tf, const char *key);

const char *text_fault_source_to_string(enum text_fault_source s);
