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
/* The last reading of the unit, without sampling: -ENOENT when it has
 * none. */
int text_faults_last(struct text_faults *tf, const char *key, struct text_fault_reading *ret);
/* The unit is gone, or no longer watched. */
void text_faults_forget(struct text_faults *tf, const char *key);
/* Forget the units not sampled in the idle_usec before now_usec
 * (CLOCK_MONOTONIC): readers that come and go (status calls) leave
 * nothing behind. A unit read again later starts again, as a counter
 * reset. */
void text_faults_prune(struct text_faults *tf, uint64_t now_usec, uint64_t idle_usec);

const char *text_fault_source_to_string(enum text_fault_source s);

/* Below: additions for the daemon's callers, the tests, the fuzzer and
 * the benchmark. The declarations above are the contract. */

/* text_faults_read() samples a unit at most this often; in between it
 * answers the last reading (its at_usec says when). */
#define TEXT_FAULTS_MIN_INTERVAL_USEC (2 * 1000000ULL)

/* Estimate even where the kernel counts (to compare the two). */
void text_faults_set_force_estimate(struct text_faults *tf, bool force);
/* Another minimum interval (benchmarks); 0 samples on every call. */
void text_faults_set_min_interval(struct text_faults *tf, uint64_t usec);

struct text_faults_unit_info {
	uint64_t ranges, pages;	     /* file ranges and pages watched with mincore() */
	uint64_t processes;	     /* in the unit's cgroup at the last sample */
	uint64_t majors;	     /* all major faults seen so far (the estimate's base) */
	uint64_t text_windows, other_windows; /* read-around windows that came back */
	uint64_t evicted, came_back; /* pages of watched ranges, so far */
	double text_share;	     /* the share of major faults counted as text now */
	bool majors_from_memcg;	     /* memory.stat pgmajfault, else /proc/PID/stat */
};
/* What the estimate of a unit rests on (after a text_faults_read()). */
int text_faults_unit_info(struct text_faults *tf, const char *key, struct text_faults_unit_info *ret);

/* The pure parts, over buffers and arrays: the unit test and the fuzzer
 * call these. */

/* A process at one sample: majflt and starttime of /proc/PID/stat. */
struct text_faults_proc {
	int pid;
	uint64_t start_ticks, majflt;
};
/* majflt (field 12) and starttime (field 22) of /proc/PID/stat text. */
int text_faults_parse_stat(const char *buf, size_t len, uint64_t *ret_majflt, uint64_t *ret_start);
/* The major faults taken between two samples of a unit's processes, each
 * array sorted by pid: a process in both (same pid and start) adds what
 * it grew; a process started at or after before_ticks (clock ticks since
 * boot, as starttime) adds all of its own; one that was there before but
 * not seen (moved in; the first sample) adds nothing, nor does one that
 * exited (what it took since the last sample is lost). before_ticks
 * UINT64_MAX: there was no earlier sample. */
uint64_t text_faults_proc_delta(const struct text_faults_proc *before, size_t n_before,
				uint64_t before_ticks, const struct text_faults_proc *now,
				size_t n_now);

/* A file mapping of a maps line. */
struct text_faults_range {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	bool exec;
	char *path; /* malloc'ed; NULL when the line has none */
};
/* One line of /proc/PID/maps: 1 and the range for a readable file-backed
 * mapping (inode not 0, not memfd or a kernel area), 0 for any other
 * valid line, -EINVAL for a malformed one. */
int text_faults_parse_maps_line(const char *line, size_t len, struct text_faults_range *ret);

/* Pages read around one major fault (the default read-ahead, 128 KiB). */
#define TEXT_FAULTS_WINDOW_PAGES 32
struct text_faults_residency_delta {
	uint64_t evicted, came_back, windows;
};
/* bits: the pages resident at the last look (bit i of word i/64); vec:
 * mincore() now (bit 0 of each byte). Counts what left and what came
 * back, and the fewest read-around windows of window_pages that cover
 * what came back; then bits := now. */
void text_faults_residency_step(uint64_t *bits, const unsigned char *vec, size_t n_pages,
				size_t window_pages, struct text_faults_residency_delta *ret);

/* The estimate of one unit as it goes. */
struct text_faults_estimate {
	double share;  /* text share of major faults, from read-around evidence */
	double carry;  /* fraction not yet counted */
	uint64_t faults;
};
#define TEXT_FAULTS_ESTIMATE_INIT { .share = 1.0 }
/* One interval: majors major faults of the unit, text_windows and
 * other_windows read-around windows of its exec and its other file
 * mappings that came back. The text share follows the windows when
 * there are any, else stays; the counter grows by majors * share. */
uint64_t text_faults_estimate_step(struct text_faults_estimate *e, uint64_t majors,
				   uint64_t text_windows, uint64_t other_windows);
