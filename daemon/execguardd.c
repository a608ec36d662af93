/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguardd: keeps the program text of chosen services in memory. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "manager.h"
#include "policy.h"
#include "util.h"

/* systemd's EXIT_NOTCONFIGURED ("6/NOTCONFIGURED" in systemctl status):
 * this machine cannot run execguardd as it is set up, and starting again
 * will not change that. The unit's RestartPreventExitStatus=6 keeps
 * systemd from restarting it in a loop. */
#define EXIT_NOT_CONFIGURED 6

struct options {
	struct manager_args args;
	enum log_target log_target;
	int log_level;
	bool check_only;
	const char *config;	/* --config, NULL: the defaults */
	struct policy_paths paths;
	char *cgroup_mount;	/* found in mountinfo when not given */
};

static void help(void)
{
	printf("Usage: execguardd [OPTIONS]\n"
	       "\n"
	       "Keep the program text and shared-library code of the services chosen by\n"
	       "policy in memory: watch process starts, match them against the policy and\n"
	       "protect them with memory.exec_protect or page locking.\n"
	       "\n"
	       "  -h --help               Show this help\n"
	       "     --version            Show the version\n"
	       "  -c --config=FILE        Policy file (default %s, then the drop-ins of\n"
	       "                          %s);\n"
	       "                          with FILE, only the drop-ins of FILE without .conf plus .d\n"
	       "     --backend=NAME       Override Backend=: auto, kernel, lock or none\n"
	       "  -n --dry-run            Decide and report, change nothing\n"
	       "     --check-config       Parse the policy, print errors as FILE:LINE, exit\n"
	       "     --cgroup-root=DIR    cgroup2 tree to act on (default: found in mountinfo)\n"
	       "     --proc-root=DIR      proc file system (default /proc)\n"
	       "     --state-dir=DIR      Where to remember the cgroups it set, so a restart\n"
	       "                          after a crash can clear them (default /run/execguard)\n"
	       "     --prewarm-dir=DIR    Where the prewarm records of units are kept\n"
	       "                          (default /var/lib/execguard; created when first needed)\n"
	       "     --receive-buffer=BYTES  Proc connector socket buffer (default from policy)\n"
	       "     --log-target=TARGET  auto, journal, stderr or stderr-fields (default auto)\n"
	       "     --log-level=LEVEL    err, warning, notice, info or debug (default info)\n"
	       "  -v --verbose            Same as --log-level=debug\n"
	       "\n"
	       "Signals: SIGHUP reloads the policy, SIGUSR1 logs statistics, SIGTERM stops.\n"
	       "See execguardd(8) and execguard.conf(5).\n",
	       DEFAULT_CONFIG, DEFAULT_DROPIN_DIRS_TEXT);
}

static int parse_log_level(const char *s)
{
	static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(s, names[i]))
			return (int)i;
	return -EINVAL;
}

enum {
	ARG_VERSION = 0x100,
	ARG_BACKEND,
	ARG_CHECK,
	ARG_CGROUP_ROOT,
	ARG_PROC_ROOT,
	ARG_STATE_DIR,
	ARG_PREWARM_DIR,
	ARG_RCVBUF,
	ARG_LOG_TARGET,
	ARG_LOG_LEVEL,
};

/* An option's value: 0, or -EINVAL after saying what is expected. */
static int parse_value(struct options *o, int c, const char *arg)
{
	int r;

	switch (c) {
	case ARG_BACKEND:
		r = backend_choice_from_string(arg);
		if (r < 0) {
			fprintf(stderr, "execguardd: --backend=%s: expected auto, kernel, lock or none\n", arg);
			return -EINVAL;
		}
		o->args.backend_override = r;
		break;
	case ARG_PREWARM_DIR:
		if (arg[0] != '/') {
			fprintf(stderr, "execguardd: --prewarm-dir=%s: expected an absolute path\n", arg);
			return -EINVAL;
		}
		o->args.prewarm_dir = arg;
		break;
	case ARG_RCVBUF: {
		char *end;
		long v = strtol(arg, &end, 10);

		if (*end || v < 4096 || v > (1L << 30)) {
			fprintf(stderr, "execguardd: --receive-buffer=%s: expected bytes from 4096 to 1073741824\n", arg);
			return -EINVAL;
		}
		o->args.receive_buffer = (int)v;
		break;
	}
	case ARG_LOG_TARGET:
		if (streq(arg, "auto"))
			o->log_target = LOG_TARGET_AUTO;
		else if (streq(arg, "journal"))
			o->log_target = LOG_TARGET_JOURNAL;
		else if (streq(arg, "stderr"))
			o->log_target = LOG_TARGET_STDERR;
		else if (streq(arg, "stderr-fields"))
			o->log_target = LOG_TARGET_STDERR_FIELDS;
		else {
			fprintf(stderr, "execguardd: --log-target=%s: expected auto, journal, stderr or stderr-fields\n",
				arg);
			return -EINVAL;
		}
		break;
	case ARG_LOG_LEVEL:
		o->log_level = parse_log_level(arg);
		if (o->log_level < 0) {
			fprintf(stderr, "execguardd: --log-level=%s: expected err, warning, notice, info or debug\n", arg);
			return -EINVAL;
		}
		break;
	}
	return 0;
}

/* 1: go on; 0: done (help, version); <0: error. */
static int parse_argv(int argc, char **argv, struct options *o)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "config", required_argument, NULL, 'c' },
		{ "backend", required_argument, NULL, ARG_BACKEND },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "check-config", no_argument, NULL, ARG_CHECK },
		{ "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
		{ "proc-root", required_argument, NULL, ARG_PROC_ROOT },
		{ "state-dir", required_argument, NULL, ARG_STATE_DIR },
		{ "prewarm-dir", required_argument, NULL, ARG_PREWARM_DIR },
		{ "receive-buffer", required_argument, NULL, ARG_RCVBUF },
		{ "log-target", required_argument, NULL, ARG_LOG_TARGET },
		{ "log-level", required_argument, NULL, ARG_LOG_LEVEL },
		{ "verbose", no_argument, NULL, 'v' },
		{}
	};
	int c, r;

	while ((c = getopt_long(argc, argv, "hc:nv", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("execguardd %s\n", PROJECT_VERSION);
			return 0;
		case 'c':
			o->config = optarg;
			break;
		case 'n':
			o->args.dry_run = true;
			break;
		case ARG_CHECK:
			o->check_only = true;
			break;
		case ARG_CGROUP_ROOT:
			o->args.cgroup_root = optarg;
			break;
		case ARG_PROC_ROOT:
			o->args.proc_root = optarg;
			break;
		case ARG_STATE_DIR:
			o->args.state_dir = optarg;
			break;
		case ARG_BACKEND:
		case ARG_PREWARM_DIR:
		case ARG_RCVBUF:
		case ARG_LOG_TARGET:
		case ARG_LOG_LEVEL:
			r = parse_value(o, c, optarg);
			if (r < 0)
				return r;
			break;
		case 'v':
			o->log_level = LOG_DEBUG;
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "execguardd: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -EINVAL;
	}
	if (policy_paths_init(&o->paths, o->config) < 0)
		return -ENOMEM;
	o->args.config_file = o->paths.main;
	o->args.dropin_dirs = o->paths.dirs;
	o->args.config_required = o->paths.given;
	return 1;
}

static int check_config(const struct options *o)
{
	struct policy p;
	int r;

	policy_init(&p);
	r = policy_load(&p, o->paths.main, o->paths.dirs, !o->paths.given);
	policy_print_warnings(&p, stderr);
	if (r < 0) {
		size_t n = policy_print_errors(&p, stderr);

		fprintf(stderr, "execguardd: %zu error%s in the policy\n", n, n == 1 ? "" : "s");
	} else {
		printf("policy OK: %zu rule%s from %zu file%s, Backend=%s\n", p.n_rules,
		       p.n_rules == 1 ? "" : "s", p.n_files, p.n_files == 1 ? "" : "s",
		       backend_choice_to_string(p.daemon.backend));
	}
	policy_done(&p);
	return r < 0 ? 1 : 0;
}

/* Where cgroup2 is, unless --cgroup-root said: without it there is
 * nothing to protect with and nothing to find units by. */
static int find_cgroup2(struct options *o)
{
	int r;

	if (o->args.cgroup_root)
		return 0;
	r = cgroup2_find_mount(NULL, &o->cgroup_mount);
	if (r == -ENOENT) {
		log_error("no cgroup2 file system is mounted (looked in /proc/self/mountinfo): execguardd needs the unified cgroup hierarchy (systemd mounts it at /sys/fs/cgroup, or at /sys/fs/cgroup/unified in its hybrid mode)");
		return -EXIT_NOT_CONFIGURED;
	}
	if (r < 0) {
		log_error_errno(r, "cannot read /proc/self/mountinfo: %m");
		return -1;
	}
	o->args.cgroup_root = o->cgroup_mount;
	return 0;
}

static int run(struct options *o)
{
	struct manager *m = NULL;
	int r;

	r = find_cgroup2(o);
	if (r < 0)
		return -r;
	r = manager_new(&o->args, &m);
	if (r >= 0)
		r = manager_start(m);
	if (r >= 0)
		r = manager_run(m);
	manager_free(m);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct options o = {
		.args = {
			.backend_override = -1,
			.state_dir = "/run/execguard",
			.prewarm_dir = "/var/lib/execguard",
		},
		.log_target = LOG_TARGET_AUTO,
		.log_level = LOG_INFO,
	};
	int r;

	r = parse_argv(argc, argv, &o);
	if (r <= 0) {
		policy_paths_done(&o.paths);
		return r < 0 ? 2 : 0;
	}
	log_setup(o.log_target, o.log_level);
	r = o.check_only ? check_config(&o) : run(&o);
	policy_paths_done(&o.paths);
	free(o.cgroup_mount);
	return r;
}
