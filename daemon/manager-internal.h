/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager's state and what its parts share: manager.c decides
 * (look, policy, act) and runs the start steps, manager-connector.c
 * takes exec events from the proc connector, manager-tracking.c keeps
 * the protected processes and their later looks, manager-stats.c counts
 * and reports. Nothing outside these files includes this header. */
#pragma once

#include <systemd/sd-event.h>

#include "backend.h"
#include "hashmap.h"
#include "latency.h"
#include "look.h"
#include "manager.h"
#include "prewarm.h"
#include "util.h"

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
	uint64_t auto_text_bytes;  /* Protect=auto's budget: its text, read once (kernel backend) */
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
	/* Protect=auto (manager-auto.c): the engine, the text fault reader,
	 * the watched units (unit -> struct auto_unit) and their sampling. */
	struct autoprotect *autoprotect;
	struct text_faults *text_faults;
	struct hashmap auto_units;
	sd_event_source *auto_timer;
	unit_settings_fn unit_settings; /* [X-ExecGuard] of a unit, or NULL */
	void *unit_settings_userdata;
	struct stage_queue stages[ELEMENTSOF(((struct daemon_settings *)0)->rescan_delays_ms)];

	uint64_t n_datagrams, n_exec, n_exit, n_decisions, n_protect_decisions;
	uint64_t n_overflows, n_full_rescans, n_looks, n_gone_early, n_backend_errors;
	uint64_t n_connector_reopens, n_examine_errors;
	/* Wake-ups by the connector socket and by the ExecBatchMSec timer:
	 * the daemon's own count of what batching saves. */
	uint64_t n_connector_wakeups, n_exec_batches;
	uint64_t n_unit_waits; /* decisions that waited for systemd's answer */
	int last_examine_error, last_relook_error;
	/* Exec to decision since the start, and the last sample (logged with
	 * the decision). */
	struct latency_histogram latency;
	uint64_t last_latency_us;
	uint8_t rx[RX_BUFFER_SIZE];
};

/* manager.c */
/* Decide about one process and act on the decision. exec_ts is the
 * kernel's exec timestamp, 0 when found by a scan. */
int examine(struct manager *m, pid_t pid, uint64_t exec_ts);
/* Only an exit or the policy drops a protection (see manager.c). */
bool look_error_is_transient(int r);
void report_examine_error(struct manager *m, pid_t pid, int r, const char *tracked_look);
/* A rescan of /proc shortly: events were lost. */
void schedule_full_rescan(struct manager *m);
/* Set a timer source to fire once at usec (CLOCK_MONOTONIC), or switch
 * it off with USEC_OFF. A failure is logged and ends the loop: a daemon
 * whose timer cannot fire stops hearing or deciding, and systemd
 * restarting it is better than a silent gap. */
#define USEC_OFF UINT64_MAX
int manager_timer_set(struct manager *m, sd_event_source *s, uint64_t usec);
/* sd_event_source_set_enabled(), a failure handled as above. */
int manager_source_enable(struct manager *m, sd_event_source *s, int enabled);
/* A disabled one-shot CLOCK_MONOTONIC timer named for sd-event's logs. */
int manager_add_timer(struct manager *m, sd_event_source **ret, const char *name,
		      sd_event_time_handler_t handler);
/* The loop's CLOCK_MONOTONIC now, in microseconds. */
uint64_t manager_now(struct manager *m);

/* manager-connector.c */
/* A socket, subscribed, watched. Exit events only without pidfds. */
int connector_open(struct manager *m);
int on_connector_retry(sd_event_source *s, uint64_t usec, void *userdata);
int on_connector_batch(sd_event_source *s, uint64_t usec, void *userdata);

/* manager-tracking.c */
int track_new(struct manager *m, pid_t pid, struct look *l, struct tracked **ret);
void tracked_update(struct tracked *t, struct look *l, const struct policy_decision *d);
void tracked_queue(struct manager *m, struct tracked *t, unsigned stage, uint64_t base_ns);
void tracked_unqueue(struct manager *m, struct tracked *t);
void tracked_free(struct manager *m, struct tracked *t);
void release_tracked(struct manager *m, struct tracked *t);
int protect_now(struct manager *m, struct tracked *t, struct look *l);
uint64_t remap_interval_usec(const struct manager *m);
int on_remap_timer(sd_event_source *s, uint64_t usec, void *userdata);
int on_rescan_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* manager-auto.c */
int auto_setup(struct manager *m);
void auto_free(struct manager *m);
/* After the policy decided about a process of unit (NULL: outside units,
 * keyed by its cgroup): watch the unit when the decision says auto, and
 * protect it when the engine has decided so. */
void auto_on_decision(struct manager *m, const char *unit, const char *cgroup, struct policy_decision *d);
/* Around a reload's scan: units no rule says auto for are forgotten. */
void auto_reload_begin(struct manager *m);
void auto_reload_end(struct manager *m);
int on_auto_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* manager-stats.c */
void record_latency(struct manager *m, uint64_t exec_ts);
void log_stats(struct manager *m, const char *when);
void update_status(struct manager *m, const char *prefix);
int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata);
int on_stats(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata);
