/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's state: it owns the sd-event loop and every source in it
 * (proc connector, signals, timers, watchdog; each stored, described,
 * and its arming checked), the policy, the tracked processes and the
 * backend. Its parts share manager-internal.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "latency.h"
#include "log.h"
#include "policy.h"

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

struct manager;
typedef struct sd_event sd_event;
struct backend_ops;

/* Looks up a unit's own [X-ExecGuard] section: 1 and the settings (and
 * a malloc'ed description of where they came from) when it has one, 0
 * when not, <0 on error, UNIT_SETTINGS_PENDING when the answer is not
 * known yet: then PID (if > 0) is decided again by manager_decide_pid()
 * once it is. Set by the unit-file module; it must never block. */
#define UNIT_SETTINGS_PENDING 2
typedef int (*unit_settings_fn)(void *userdata, const char *unit, pid_t pid, uint64_t exec_ts,
				struct rule_settings *ret, char **ret_source);

struct manager_process_info {
	pid_t pid;
	const char *exe, *cgroup, *unit;
	const char *source;   /* what decided to protect it */
	const char *source_kind; /* policy_decision.protect_kind */
	uint64_t exec_bytes;  /* file-backed exec mappings at the last look */
};
typedef int (*manager_process_fn)(const struct manager_process_info *p, void *userdata);

struct manager_stats {
	const char *backend;
	bool dry_run;
	size_t processes_protected;
	uint64_t exec_events, exit_events, decisions, overflows, full_rescans, backend_errors;
	/* Estimated from the histogram's buckets (since the start). */
	uint32_t latency_p50_us, latency_p99_us, latency_max_us;
	const struct latency_histogram *latency; /* NULL: none */
};

struct manager_explanation {
	pid_t pid;
	char *exe, *cgroup, *unit;
	struct rule_settings unit_section;
	char *unit_section_source;     /* NULL: the unit has no [X-ExecGuard] */
	struct policy_decision decision; /* rules point into the live policy */
	bool tracked;		       /* protected right now */
	bool unit_section_pending;     /* systemd is being asked: not in the decision */
	char auto_state[256];	       /* Protect=auto: manager_auto_describe(), or "" */
};

int manager_new(const struct manager_args *args, struct manager **ret);
struct manager *manager_free(struct manager *m);
static inline void manager_freep(struct manager **m)
{
	manager_free(*m);
}

/* The whole start, in order: policy, backend, D-Bus interface and unit
 * lookup, connector, capabilities, first scan. */
int manager_start(struct manager *m);
/* Its steps (tests take some); each logs its own failure. */
int manager_load_policy(struct manager *m);
int manager_pick_backend(struct manager *m);
/* The unit lookup and the D-Bus interface, owned by the manager:
 * between picking the backend and the first scan, which already reads
 * units' sections. */
int manager_start_bus(struct manager *m);
int manager_start_events(struct manager *m);
/* Keep only the capabilities the backend needs (after the connector and
 * the bus are set up). */
int manager_drop_privileges(struct manager *m);
/* Prewarm (records and replays), when args name its directory. */
int manager_start_prewarm(struct manager *m);
int manager_scan(struct manager *m);
int manager_run(struct manager *m);

/* What the D-Bus interface and execguardctl use. */
sd_event *manager_event(struct manager *m);
const struct policy *manager_policy(struct manager *m);
const struct backend_ops *manager_backend(struct manager *m, void **ret_state);
/* --dry-run: decide and report, change nothing. */
bool manager_dry_run(const struct manager *m);
/* Prewarm's state, NULL when off. */
struct prewarm *manager_prewarm(struct manager *m);
/* The cgroup2 root and /proc the manager works on (fake trees in tests). */
int manager_cgroup_root_fd(struct manager *m);
int manager_proc_fd(struct manager *m);
/* The text fault reader (textfault.h) Protect=auto and status calls share. */
struct text_faults *manager_text_faults(struct manager *m);
/* Containers that asked by annotation (containers.h); NULL in --dry-run. */
struct containers *manager_containers(struct manager *m);
void manager_set_unit_settings(struct manager *m, unit_settings_fn fn, void *userdata);
/* Handle decoded proc connector events (exec, exit) as they come from
 * the socket; the C test of the core feeds its own. */
struct cnproc_event;
void manager_process_events(struct manager *m, const struct cnproc_event *ev, size_t n);

/* Decide about PID now (a unit's section it waited for is known);
 * exec_ts as the exec event had it, 0 when found by a scan. */
void manager_decide_pid(struct manager *m, pid_t pid, uint64_t exec_ts);
/* As SIGHUP. On a rejected policy returns <0 and, if ret_rejected is
 * given, hands over the rejected policy with its errors (policy_done()). */
int manager_reload(struct manager *m, struct policy *ret_rejected);
/* Decide about every process again (after systemd's daemon-reload). */
int manager_rescan(struct manager *m);
int manager_foreach_process(struct manager *m, manager_process_fn fn, void *userdata);
void manager_get_stats(struct manager *m, struct manager_stats *ret);
/* Which policy applies to pid now, and why; -ESRCH if it is gone. */
int manager_explain(struct manager *m, pid_t pid, struct manager_explanation *ret);
/* Protect=auto: "auto: protected since ..." or "auto: watched, not
 * protected (...)" for a watched unit; 1 protected, 0 not, -ENOENT when
 * it is not watched. */
int manager_auto_describe(struct manager *m, const char *unit, char *buf, size_t size);
/* Whether Protect=auto protects the unit now. */
bool manager_auto_protects(struct manager *m, const char *unit);
/* Each watched unit with its cgroup; stops at a non-zero return. */
int manager_auto_foreach(struct manager *m, int (*fn)(const char *unit, const char *cgroup, void *userdata),
			 void *userdata);
void manager_explanation_done(struct manager_explanation *e);

