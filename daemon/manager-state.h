/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager's state, which manager.c owns and its parts share:
 * manager-decide.c decides (look, policy, act), manager-tracking.c keeps
 * the protected processes and their later looks, manager-connector.c
 * takes exec events from the proc connector, manager-auto.c runs
 * Protect=auto, manager-stats.c counts and reports, manager-view.c is
 * what the D-Bus interface reads. A part never calls manager.c: what it
 * needs is passed in, and manager.c's event handlers call down into the
 * parts. Nothing outside these files includes this header. */
#pragma once

#include <systemd/sd-event.h>

#include "backend.h"
#include "event-util.h"
#include "hashmap.h"
#include "latency.h"
#include "log.h"
#include "look.h"
#include "policy.h"
#include "prewarm.h"
#include "cgroup-watch.h"
#include "unit-events.h"
#include "units.h"
#include "util.h"

struct manager_args {
	const char *config_file;
	const char *const *dropin_dirs; /* policy_load()'s, NULL-terminated */
	bool config_required;	   /* a missing config_file is an error */
	const char *cgroup_root;   /* NULL: find the cgroup2 mount */
	const char *proc_root;	   /* normally "/proc" */
	const char *state_dir;	   /* what must outlive a crash; NULL: none */
	const char *prewarm_dir;   /* prewarm records; NULL: no prewarm */
	int backend_override;	   /* -1 or an enum backend_choice */
	bool dry_run;
	int receive_buffer;	   /* 0: from policy */
};

#define RX_BUFFER_SIZE (64 * 1024)
#define MAX_EVENTS_PER_DATAGRAM 64
#define RESCAN_DEBOUNCE_USEC 10000
#define STATUS_INTERVAL_USEC 1000000

struct tracked {
	struct manager *m;
	pid_t pid;
	int pidfd;		   /* a pidfd, or its /proc/PID dir without pidfd_open */
	char *exe, *cgroup, *unit;
	char *source;		   /* what decided: rule name or unit file */
	const char *source_kind;   /* policy_decision.protect_kind (static) */
	struct rule_settings settings;
	unsigned stage;		   /* next look: index into rescan delays */
	uint64_t due_ns;
	struct tracked *prev, *next; /* in the queue of its stage */
	bool queued;
	bool seen;		   /* mark for the full rescan */
	uint64_t exec_bytes;	   /* file-backed exec mappings, last look */
	sd_event_source *exit_source; /* the pidfd turning readable */
	bool by_auto;		   /* protected by a Protect=auto decision */
};

struct stage_queue {
	struct tracked *head, *tail;
};

struct manager {
	struct manager_args args;
	struct containers *containers; /* annotated containers (containers.h) */
	sd_event *event;
	/* Every source of the loop, each with a description (sd-event's
	 * debug logs name it); tracked processes own their exit sources. */
	sd_event_source *cn_source, *rescan_timer, *full_rescan_timer, *status_timer;
	sd_event_source *signal_sources[4]; /* SIGHUP, SIGTERM, SIGINT, SIGUSR1 */
	sd_event_source *cn_retry_timer; /* reopening the connector after an error */
	sd_event_source *cn_batch_timer; /* ExecBatchMSec: gathering exec events */
	sd_event_source *remap_timer;	 /* new mappings of long-running processes */
	sd_event_source *units_rescan;	 /* the unit lookup asked for a rescan */
	size_t remap_cursor;
	int cn_fd;
	int cn_reopen_failures;
	bool cn_filtered;
	bool systemd;
	bool use_procmap_query;
	bool status_dirty;
	bool overflow_pending; /* lost events; rescan once the queue is empty */
	bool pin_by_proc_dir;  /* no pidfd_open (before 5.3, valgrind 3.19) */

	struct units *units; /* [X-ExecGuard] sections over sd-bus */
	struct bus *bus;     /* the D-Bus interface */
	struct prewarm *prewarm; /* records and replays of hot text, or NULL */
	struct policy policy;
	enum backend_choice backend_choice;
	const struct backend_ops *backend_ops;
	void *backend;
	struct backend_env env;
	int proc_fd;
	int cgroup_root_fd;
	int state_dir_fd;
	char *cgroup_root;

	struct hashmap procs; /* pid -> struct tracked (protected ones only) */
	/* What an exec in a cgroup needs (manager-decide.c): cgroup path
	 * -> enum cgroup_class, cleared whenever a decision may change. */
	struct hashmap classes;
	uint64_t n_class_hits;
	/* Cgroups pushed (manager-push.c): with a backend that protects
	 * cgroups as such, the cgroups told by cgroupfs (cgroup_watch) and
	 * systemd (unit_events) are decided, not the processes in them. */
	bool push;		     /* the backend protects cgroups as such */
	bool push_tree;		     /* every cgroup directory is watched */
	struct hashmap pushed;	     /* path -> struct pushed (wanted, waiting or protected) */
	struct cgroup_watch *cw;     /* inotify on cgroupfs */
	sd_event_source *cw_source;
	sd_event_source *push_retry; /* cgroups held, not in force yet */
	struct unit_events *uw;	     /* units starting and stopping, from systemd */
	size_t n_pushed_now;	     /* protected as a whole now */
	uint64_t n_cgroup_events, n_pushed_protects, n_push_errors;
	uint32_t push_latency_us[256]; /* a cgroup's creation to its protection */
	uint64_t n_push_latency;
	/* Protect=auto (manager-auto.c): the engine, the text fault reader,
	 * the watched units (unit -> struct auto_unit) and their sampling. */
	struct autoprotect *autoprotect;
	struct text_faults *text_faults;
	struct hashmap auto_units;
	struct hashmap auto_estimates; /* key -> struct text_estimate: explicit units' text */
	size_t auto_reads_left;	       /* mappings a round may still read */
	sd_event_source *auto_timer;
	unit_settings_fn unit_settings; /* [X-ExecGuard] of a unit, or NULL */
	void *unit_settings_userdata;
	struct stage_queue stages[ELEMENTSOF(((struct daemon_settings *)0)->rescan_delays_ms)];

	uint64_t n_datagrams, n_exec, n_exit, n_decisions, n_protect_decisions;
	uint64_t n_overflows, n_full_rescans, n_looks, n_gone_early, n_backend_errors;
	uint64_t n_connector_reopens, n_examine_errors;
	/* Wake-ups by the connector socket and by the ExecBatchMSec timer:
	 * the daemon's own count of what batching saves; of the socket's,
	 * those whose events were taken at once (no storm). */
	uint64_t n_connector_wakeups, n_exec_batches, n_connector_at_once;
	uint64_t cn_last_wakeup; /* sd-event's clock, CLOCK_MONOTONIC */
	uint64_t n_unit_waits; /* decisions that waited for systemd's answer */
	int last_examine_error, last_relook_error;
	/* Exec to decision since the start, and the last sample (logged with
	 * the decision). */
	struct latency_histogram latency;
	uint64_t last_latency_us;
	uint8_t rx[RX_BUFFER_SIZE];
};
