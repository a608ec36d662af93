/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The seam between the manager and the ways of protecting text: the
 * kernel's memory.exec_protect, page locking, or nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "maps.h"
#include "policy.h"

typedef struct sd_event sd_event;

struct backend_env {
	int cgroup_root_fd;	 /* the cgroup2 mount, or a fake tree in tests */
	const char *cgroup_root;
	int proc_fd;		 /* /proc */
	bool dry_run;		 /* decide and report, change nothing */
	sd_event *event;	 /* for backends with their own sources */
	const struct daemon_settings *settings;
	int state_dir_fd;	 /* where a backend keeps what must outlive a crash, or -1 */
};

struct protect_target {
	pid_t pid;
	int pidfd;	      /* pins the process: never a reused PID */
	int proc_pid_fd;      /* /proc/PID of that same process */
	const char *unit;     /* NULL if not in a systemd unit */
	const char *cgroup;   /* cgroup2 path relative to the root */
	const char *exe;
	/* Current mappings of its images (maps.h MAPS_IMAGES): executable
	 * ones and the other mappings of the files those map. */
	const struct exec_mappings *maps;
	const struct rule_settings *settings;
};

/* A figure the backend does not keep (the daemon may find it elsewhere). */
#define BACKEND_FIGURE_UNKNOWN UINT64_MAX

/* One unit (or a cgroup outside units) as status shows it: the caller
 * fills key and cgroup, the backend the rest. */
struct backend_unit_report {
	const char *key;    /* the unit, or the cgroup outside units */
	const char *cgroup; /* the unit's cgroup2 path */
	bool protected_now; /* protection is in force now */
	/* Something outside the daemon stands in the way (state says what);
	 * else state is how the backend protects, and the policy is named
	 * after it. */
	bool blocked;
	char state[192];
	uint64_t mapped, resident, locked; /* BACKEND_FIGURE_UNKNOWN: not kept */
};

/* One file the backend handles, for the list of hot libraries. */
struct backend_file_report {
	char *path;
	uint32_t n_units, n_pids;
	uint64_t mapped, resident, locked;
	const char *state; /* static text */
};

struct backend_ops {
	const char *name;
	/* Acts on cgroups only: the manager then neither reads a process's
	 * mappings nor looks at it again after exec. */
	bool cgroup_only;
	/* Decides and reports, changes nothing: "would protect". */
	bool observe_only;
	/* Capabilities it needs beyond CAPS_COMMON (caps.h), as CAP_BIT()s;
	 * the rest are dropped once it is set up. */
	uint64_t capabilities;
	/* 0 when it can work here; else <0 and a reason for a person. */
	int (*probe)(const struct backend_env *env, char **ret_reason);
	int (*create)(const struct backend_env *env, void **ret_state);
	void (*destroy)(void *state);
	/* On the decision to protect, and again on each later look. */
	int (*protect)(void *state, const struct protect_target *t);
	/* The process exited, or the policy no longer protects it. */
	void (*release)(void *state, pid_t pid);
	/* Optional: protect a cgroup as such, whichever processes it has or
	 * gets (the push path, manager-push.c), for backends whose
	 * protection belongs to the cgroup; called again with other
	 * settings, they change. Without these the manager follows
	 * processes. 0: held and in force; 1: held, but its file could not
	 * be written yet (the memory controller not enabled there yet: call
	 * again later); <0: not held. */
	int (*protect_cgroup)(void *state, const char *cgroup, const struct rule_settings *s);
	void (*release_cgroup)(void *state, const char *cgroup);
	/* The daemon settings changed (reload). */
	int (*reconfigure)(void *state, const struct daemon_settings *s);
	/* Optional: the start's scan is done; undo what an earlier run left
	 * behind that the policy no longer wants. */
	void (*scan_done)(void *state);
	/* A short phrase for STATUS=, e.g. "3 cgroups protected". */
	void (*describe)(void *state, char *buf, size_t size);
	/* Optional: log the backend's own figures now (SIGUSR1). */
	void (*log_stats)(void *state);
	/* Status of n units: whether protection is in force and why, and the
	 * figures the backend keeps itself. */
	int (*report_units)(void *state, struct backend_unit_report *units, size_t n);
	/* Optional: the files it handles (malloc'ed array and paths); without
	 * it the daemon reads them from the protected processes. */
	int (*report_files)(void *state, struct backend_file_report **ret, size_t *ret_n);
};

void backend_file_reports_free(struct backend_file_report *f, size_t n);

extern const struct backend_ops backend_kernel_ops;
extern const struct backend_ops backend_none_ops;
/* The lock backend (unpatched kernels) is added by its own module. */
extern const struct backend_ops backend_lock_ops;

const struct backend_ops *backend_ops_for(enum backend_choice c);
