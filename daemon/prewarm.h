/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prewarm: record which text each unit with Prewarm=yes has resident in
 * its exec mappings, and read it back when the unit (or the daemon)
 * starts, before the unit faults it in page by page. Independent of the
 * backend: it only samples mappings and reads files ahead. The record
 * format is prewarm-record.h; this is the sampling, the files in the
 * record directory, and the replay job on the event loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

typedef struct sd_event sd_event;
struct prewarm;

struct prewarm_env {
	sd_event *event;
	int proc_fd;			    /* /proc */
	int cgroup_root_fd;		    /* the cgroup2 tree: units followed as cgroups */
	const char *dir;		    /* the record directory; created when first written */
	const struct daemon_settings *settings; /* stays valid (reloads copy into it) */
};

int prewarm_new(const struct prewarm_env *env, struct prewarm **ret);
/* Samples the running units once more and writes their records. */
struct prewarm *prewarm_free(struct prewarm *p);

/* A process the policy protects, newly tracked: followed if its settings
 * say Prewarm=yes. The first process of a unit (key: the unit, or the
 * cgroup outside units) starts the replay of the unit's record. */
void prewarm_process_start(struct prewarm *p, pid_t pid, int proc_pid_fd, const char *key,
			   const struct rule_settings *s);
/* It exited or is no longer protected; the last one of its unit writes
 * the unit's record. */
void prewarm_process_end(struct prewarm *p, pid_t pid);
/* A unit followed by its cgroup instead (decided as a whole: no process
 * is followed): its processes are listed from cgroup at each round. As
 * for processes, the first start replays its record and the last end
 * writes it; each cgroup of the unit starts and ends once. */
void prewarm_cgroup_start(struct prewarm *p, const char *key, const char *cgroup, const struct rule_settings *s);
void prewarm_cgroup_end(struct prewarm *p, const char *key);
/* The start's scan is done: replay every record in the directory whose
 * unit is not replayed already. */
void prewarm_replay_all(struct prewarm *p);

/* What status shows of one unit. */
struct prewarm_unit_report {
	const char *key;
	const char *state;	  /* static text */
	uint64_t recorded_bytes;  /* in the record as last written or read */
	uint64_t recorded_files;
	uint64_t replayed_bytes;  /* read back (not resident before) by this daemon */
	uint64_t planned_bytes;	  /* what the replays asked for, within budgets */
	uint64_t replays;
	uint64_t invalidated_files; /* changed since recorded: not read */
	int64_t recorded_at;	  /* seconds since the epoch, 0: never */
};

/* Every unit prewarm knows of; a malloc'ed array whose keys point into
 * p (valid until the next call into p). */
int prewarm_report(struct prewarm *p, struct prewarm_unit_report **ret, size_t *ret_n);
