/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the D-Bus interface (and execguardctl through it) reads of the
 * manager: figures, the protected processes, explanations. Reading only:
 * the interface's control methods (Reload) go through the callbacks
 * manager.c gave it (bus.h). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

struct manager;
struct latency_histogram;
typedef struct sd_event sd_event;
struct backend_ops;
struct prewarm;
struct text_faults;
struct containers;

struct manager_process_info {
	pid_t pid;
	const char *exe, *cgroup, *unit;
	const char *source;   /* what decided to protect it */
	const char *source_kind; /* policy_decision.protect_kind */
	uint64_t exec_bytes;  /* file-backed exec mappings at the last look */
};
typedef int (*manager_process_fn)(const struct manager_process_info *p, void *userdata);

/* A cgroup protected as a whole (manager-push.c). */
struct manager_cgroup_info {
	const char *cgroup, *unit; /* unit from the path; NULL outside units */
	const char *source;	   /* what decided to protect it */
	const char *source_kind;   /* policy_decision.protect_kind */
	const struct rule_settings *settings;
	bool by_auto;		   /* Protect=auto's engine protects it */
};
typedef int (*manager_cgroup_fn)(const struct manager_cgroup_info *c, void *userdata);

struct manager_stats {
	const char *backend;
	bool dry_run;
	size_t processes_protected;
	size_t cgroups_protected;  /* as a whole: the push path */
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
int manager_foreach_process(struct manager *m, manager_process_fn fn, void *userdata);
/* manager-push.c: each cgroup protected as a whole now; stops at a
 * non-zero return. */
int manager_foreach_pushed(struct manager *m, manager_cgroup_fn fn, void *userdata);
/* manager-stats.c */
void manager_get_stats(struct manager *m, struct manager_stats *ret);
/* Which policy applies to pid now, and why; -ESRCH if it is gone. */
int manager_explain(struct manager *m, pid_t pid, struct manager_explanation *ret);
void manager_explanation_done(struct manager_explanation *e);
/* manager-auto.c: Protect=auto. "auto: protected since ..." or "auto:
 * watched, not protected (...)" for a watched unit; 1 protected, 0 not,
 * -ENOENT when it is not watched. */
int manager_auto_describe(struct manager *m, const char *unit, char *buf, size_t size);
/* Whether Protect=auto protects the unit now. */
bool manager_auto_protects(struct manager *m, const char *unit);
/* Each watched unit with its cgroup; stops at a non-zero return. */
int manager_auto_foreach(struct manager *m, int (*fn)(const char *unit, const char *cgroup, void *userdata),
			 void *userdata);
