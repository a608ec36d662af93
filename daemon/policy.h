/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The INI policy: the main file, its drop-in directory and a
 * unit's [X-ExecGuard] section, parsed from buffers with inih. */
#pragma once

#include <stdio.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum backend_choice {
	BACKEND_AUTO,
	BACKEND_KERNEL,
	BACKEND_LOCK,
	BACKEND_NONE,
};

const char *backend_choice_to_string(enum backend_choice b);
int backend_choice_from_string(const char *s);

/* A byte budget given either as bytes or as a share of RAM. */
struct budget {
	uint64_t bytes;	      /* valid when percent == 0 */
	unsigned percent;     /* 1..100, share of MemTotal */
	bool set;
};

uint64_t budget_resolve(const struct budget *b, uint64_t mem_total);

/* [Daemon] section: process-wide settings. */
struct daemon_settings {
	enum backend_choice backend;
	unsigned rescan_delays_ms[8]; /* looks at a new process after exec */
	size_t n_rescan_delays;
	int receive_buffer;	      /* connector socket SO_RCVBUF(FORCE) */
	unsigned exec_batch_ms;	      /* exec events gathered this long; 0: at once */
	struct budget lock_budget;    /* lock backend: all units together */
	unsigned lock_recheck_sec;    /* lock backend: grow locks this often */
	/* lock backend: a unit keeps the pages of an image none of its
	 * processes maps any more (per-request helpers) this long; 0: not */
	unsigned lock_keep_sec;
	unsigned pressure_stall_ms;   /* PSI "some" stall per window that means pressure */
	unsigned pressure_window_ms;
	unsigned pressure_recover_sec; /* calm time before locking again */
	/* Give back only when the memory left (MemAvailable, or a cgroup's
	 * room under its limit plus its reclaimable file memory) is below
	 * this: bytes, or a percentage of RAM or of the cgroup's limit. */
	struct budget pressure_reserve;
	struct budget prewarm_budget;	/* prewarm: all units' replays together */
	unsigned prewarm_record_sec;	/* prewarm: record this often */
	/* Protect=auto (autoprotect.h): a watched unit is protected when
	 * its text faults per second over the window reach auto_fault_rate
	 * while memory PSI "some" avg10 (the system's or the unit's) is at
	 * least auto_pressure_some percent; undone after auto_calm_sec
	 * without that (0: kept until the daemon stops). */
	unsigned auto_fault_rate;
	unsigned auto_pressure_some;
	unsigned auto_window_sec;
	unsigned auto_interval_sec;
	unsigned auto_calm_sec;
	/* Containers (containers.h): whether an io.execguard.protect
	 * annotation, asked for by execguard-oci-hook, is honoured at all,
	 * and the most one container gets (memory.exec_protect bound and
	 * lock budget; EXEC_PROTECT_LIMIT_MAX: no more than the daemon's own). */
	int container_annotations;
	uint64_t container_protect_max;
};

/* Per-process settings a rule (or a unit's own section) can give. */
struct rule_settings {
	int protect;		 /* -1 unset, 0, 1, PROTECT_AUTO */
	struct budget lock_budget; /* per unit */
	/* Kernel backend: the bound written to the cgroup's
	 * memory.exec_protect; 0 unset (max), EXEC_PROTECT_LIMIT_MAX "max". */
	uint64_t exec_protect_limit;
	/* Record the unit's hot text and read it back at its start: 0
	 * unset (no), PREWARM_NO, PREWARM_YES; zero-initialised settings
	 * say nothing. */
	int prewarm;
	struct budget prewarm_budget; /* per unit replay */
};

enum { PREWARM_NO = 1, PREWARM_YES = 2 };

/* Protect=auto: watched, and protected when it suffers (autoprotect.h). */
#define PROTECT_AUTO 2

#define EXEC_PROTECT_LIMIT_MAX UINT64_MAX

struct rule {
	char *name;	    /* from "[Rule NAME]" */
	char *file;	    /* where it was defined */
	unsigned line;
	char **match_unit;  /* NULL terminated glob lists, NULL = any */
	char **match_cgroup;
	char **match_exe;
	struct rule_settings settings;
};

struct policy_error {
	char *file;
	unsigned line;
	char *message;
};

struct policy {
	struct daemon_settings daemon;
	struct rule *rules;
	size_t n_rules;
	char **files; /* every file read, in order */
	size_t n_files;
	struct policy_error *errors;
	size_t n_errors;
	/* Accepted, but probably not what was meant: said, not refused. */
	struct policy_error *warnings;
	size_t n_warnings;
	char **masked; /* drop-ins hidden by one of the same name before them */
	size_t n_masked;
};

/* What the policy says about one process, and why. */
struct policy_input {
	const char *unit;   /* NULL when not a systemd unit */
	const char *cgroup; /* cgroup2 path, "/system.slice/x.service" */
	const char *exe;
	const struct rule_settings *unit_section; /* from [X-ExecGuard], or NULL */
	const char *unit_section_source;
	/* What the section is, as protect_kind: NULL "drop-in"; a container's
	 * annotation says "annotation". */
	const char *unit_section_kind;
};

struct policy_decision {
	struct rule_settings settings; /* effective */
	bool protect;		       /* Protect=yes */
	bool watch;		       /* Protect=auto: the manager decides */
	const char *protect_source;    /* rule name, "unit file" or "default" */
	/* Its kind, as metrics and ListUnitsEx name it (a static string):
	 * "policy" (a rule), "drop-in" (a unit's [X-ExecGuard] section) or
	 * "default". */
	const char *protect_kind;
	const struct rule *matched[32];
	size_t n_matched;
};

void policy_init(struct policy *p);
void policy_done(struct policy *p);

/* Parse one file's content into p. Errors are appended to p->errors with
 * file and line; returns the number of new errors or a negative errno. */
int policy_parse_buffer(struct policy *p, const char *file, const char *buf, size_t len);

/* Parse the [X-ExecGuard] section of one unit file or drop-in; other
 * sections are systemd's and ignored. */
int policy_parse_unit_buffer(struct rule_settings *s, struct policy *errors_to,
			     const char *file, const char *buf, size_t len);

/* Read the main file (missing is fine only if allow_missing) and then
 * the *.conf files of the drop-in directories (NULL-terminated, highest
 * priority first, as systemd's /etc, /run, /usr/lib): all of them
 * ordered by file name, a name in an earlier directory hiding (masking)
 * the same name in later ones. A file linked to /dev/null is read as
 * nothing (a mask); other symbolic links are followed. Refuses files
 * that others can write. Returns 0, or -EINVAL when p->errors is
 * non-empty. */
int policy_load(struct policy *p, const char *main_file, const char *const *dropin_dirs, bool allow_missing);

/* Where the policy is read from: the main file and the drop-in
 * directories. config NULL: the defaults (DEFAULT_CONFIG, then the
 * drop-ins in DEFAULT_DROPIN_DIRS); a file given instead has its own
 * drop-ins only, in FILE without ".conf" plus ".d", and must exist. */
struct policy_paths {
	const char *main;
	const char *dirs[4]; /* NULL-terminated */
	bool given;	     /* main named by the caller: missing is an error */
	char *own_dir;
};
int policy_paths_init(struct policy_paths *pp, const char *config);
void policy_paths_done(struct policy_paths *pp);

/* Refuse a config file that anyone but its owner (root or the running
 * user) can write. Returns 0 or -EPERM with a message in *ret_why. */
int policy_check_file_mode(int fd, const char **ret_why);

/* Whether some rule that protects matches the unit and cgroup, the
 * executable aside: if not, the decision is no without reading it. */
bool policy_may_protect(const struct policy *p, const struct policy_input *in);

void policy_decide(const struct policy *p, const struct policy_input *in, struct policy_decision *ret);

/* Whether a rule that names executables (MatchExe=) matches the unit
 * and cgroup: then the processes of one cgroup may be decided apart, and
 * only a look at each tells. Otherwise policy_decide() without an exe is
 * the decision of every process of the cgroup. */
bool policy_exe_matters(const struct policy *p, const struct policy_input *in);
/* Whether any rule names executables. */
bool policy_names_exes(const struct policy *p);
/* Whether a rule may protect cgroups that MatchUnit= does not name (it
 * has no MatchUnit=): cgroups anywhere in the tree can match. */
bool policy_matches_beyond_units(const struct policy *p);
/* A container's io.execguard.protect value (yes, no, max or a size, as
 * Protect= and ExecProtectLimit= take them) as the settings it gets
 * under [Daemon]: a size is its memory.exec_protect bound and its lock
 * budget, each at most ContainerProtectMax=. 1 when the value was cut
 * down to that, 0 when taken as asked; -EPERM under
 * ContainerAnnotations=no, -EINVAL for a bad value, with *ret_why. */
int policy_container_request(const struct daemon_settings *d, const char *value, struct rule_settings *ret,
			     const char **ret_why);

/* Adds an error at file:line (used by the loaders). */
int policy_add_error(struct policy *p, const char *file, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

int policy_add_warning(struct policy *p, const char *file, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Print every policy error as file:line: message; the count. */
size_t policy_print_errors(const struct policy *p, FILE *f);
/* The same for warnings: file:line: warning: message. */
size_t policy_print_warnings(const struct policy *p, FILE *f);

/* The keys the parser accepts, one entry per section that takes it, in
 * the order of the parser's table (execguardctl check-config --list-keys,
 * the docs test). */
struct policy_key_info {
	const char *section; /* "Daemon", "Rule NAME", "X-ExecGuard" */
	const char *key;
	const char *help;
};
size_t policy_keys(const struct policy_key_info **ret);
