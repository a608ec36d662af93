/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Drives the lock backend the way the manager does, from commands on
 * stdin, so that host tests can run it on real processes without the
 * proc connector or systemd:
 *
 *   protect PID UNIT [LOCKBUDGET]  protect() with the process's current maps
 *                                  (its whole images, as the manager reads them)
 *   rescan                         protect() again for every known process
 *   recheck                        the re-check timer's work, now
 *   release PID                    release()
 *   reload CONFIG                  reconfigure() with a new [Daemon] section
 *   dump                           backend_lock_dump(), "driver vmlck=BYTES", "end"
 *   describe                       the STATUS= phrase
 *   quit
 *
 * Every command answers "ok" or "error ..." (dump: its lines and "end").
 * A protected process that exits is released, as the manager does; its
 * cgroup is read from /proc/PID/cgroup, the cgroup2 root from mountinfo.
 * Usage: lock-driver [--dry-run] [CONFIG] */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "backend-lock.h"
#include "backend.h"
#include "log.h"
#include "maps.h"
#include "policy.h"
#include "util.h"

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

#define MAX_PROCS 256

struct proc {
	pid_t pid;
	int pidfd, proc_fd;
	char *unit;
	char *cgroup; /* cgroup2 path, from /proc/PID/cgroup */
	struct rule_settings settings;
	sd_event_source *exit_source;
};

static struct {
	sd_event *event;
	struct policy policy;
	struct backend_env env;
	void *backend;
	struct proc procs[MAX_PROCS];
	char line[4096];
	size_t line_len;
	bool use_query;
} d = { .use_query = true };

static void proc_drop(struct proc *p)
{
	if (p->pid == 0)
		return;
	backend_lock_ops.release(d.backend, p->pid);
	p->exit_source = sd_event_source_disable_unref(p->exit_source);
	closep(&p->pidfd);
	closep(&p->proc_fd);
	free(p->unit);
	free(p->cgroup);
	*p = (struct proc){ .pidfd = -1, .proc_fd = -1 };
}

/* The "0::PATH" line of /proc/PID/cgroup, as the manager reads it. */
static char *read_cgroup(int proc_fd)
{
	_cleanup_free_ char *buf = NULL;
	char *l, *nl;

	if (read_file_at(proc_fd, "cgroup", 1 << 16, &buf, NULL) < 0)
		return NULL;
	for (l = buf; l && *l; l = nl) {
		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		if (strncmp(l, "0::", 3) == 0)
			return strdup(l + 3);
	}
	return NULL;
}

/* The cgroup2 mount (the unified one on hybrid systems). */
static int open_cgroup2(void)
{
	_cleanup_free_ char *buf = NULL;
	char *l, *nl;

	if (read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &buf, NULL) < 0)
		return -1;
	for (l = buf; l && *l; l = nl) {
		char *sep, mnt[4096];

		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		sep = strstr(l, " - cgroup2 ");
		if (!sep || sscanf(l, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		return open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	return -1;
}

static struct proc *proc_find(pid_t pid)
{
	for (size_t i = 0; i < MAX_PROCS; i++)
		if (d.procs[i].pid == pid)
			return &d.procs[i];
	return NULL;
}

static int on_exit_event(sd_event_source *s _unused_, int fd _unused_, uint32_t revents _unused_, void *userdata)
{
	struct proc *p = userdata;

	fprintf(stderr, "lock-driver: pid %d exited, releasing\n", (int)p->pid);
	proc_drop(p);
	return 0;
}

static int protect_one(struct proc *p)
{
	struct exec_mappings maps = { 0 };
	struct protect_target t;
	int r;

	r = maps_read_select(p->proc_fd, &d.use_query, MAPS_IMAGES, &maps);
	if (r < 0) {
		exec_mappings_clear(&maps);
		free(maps.items);
		return r;
	}
	t = (struct protect_target){
		.pid = p->pid,
		.pidfd = p->pidfd,
		.proc_pid_fd = p->proc_fd,
		.unit = p->unit,
		.cgroup = p->cgroup,
		.exe = NULL,
		.maps = &maps,
		.settings = &p->settings,
	};
	r = backend_lock_ops.protect(d.backend, &t);
	exec_mappings_clear(&maps);
	free(maps.items);
	return r;
}

static int cmd_protect(char *args)
{
	char *spid = strtok(args, " "), *unit = strtok(NULL, " "), *budget = strtok(NULL, " ");
	struct proc *p;
	char path[64];
	pid_t pid;
	int r;

	if (!spid || !unit)
		return -EINVAL;
	pid = (pid_t)atoi(spid);
	if (pid <= 0)
		return -EINVAL;
	p = proc_find(pid);
	if (!p) {
		p = proc_find(0);
		if (!p)
			return -ENOSPC;
		*p = (struct proc){ .pid = pid, .pidfd = -1, .proc_fd = -1 };
		p->pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
		snprintf(path, sizeof(path), "/proc/%d", (int)pid);
		p->proc_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		p->unit = strdup(unit);
		if (p->proc_fd >= 0)
			p->cgroup = read_cgroup(p->proc_fd);
		if (p->pidfd < 0 || p->proc_fd < 0 || !p->unit) {
			r = -errno;
			closep(&p->pidfd);
			closep(&p->proc_fd);
			free(p->unit);
			*p = (struct proc){ .pidfd = -1, .proc_fd = -1 };
			return r ? r : -ENOMEM;
		}
		r = sd_event_add_io(d.event, &p->exit_source, p->pidfd, EPOLLIN, on_exit_event, p);
		if (r < 0)
			return r;
	}
	p->settings = (struct rule_settings){ .protect = 1 };
	if (budget) {
		char buf[256];
		int n = snprintf(buf, sizeof(buf), "[X-ExecGuard]\nLockBudget=%s\n", budget);

		r = policy_parse_unit_buffer(&p->settings, &d.policy, "protect", buf, (size_t)n);
		if (r != 0)
			return -EINVAL;
	}
	return protect_one(p);
}

static int load_config(const char *file, struct policy *p)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	policy_init(p);
	if (!file)
		return 0;
	r = read_file_at(AT_FDCWD, file, 1 << 20, &buf, &len);
	if (r < 0)
		return r;
	r = policy_parse_buffer(p, file, buf, len);
	if (r != 0) {
		for (size_t i = 0; i < p->n_errors; i++)
			fprintf(stderr, "%s:%u: %s\n", p->errors[i].file, p->errors[i].line, p->errors[i].message);
		return -EINVAL;
	}
	return 0;
}

static void handle_line(char *l)
{
	char *arg = strchr(l, ' ');
	int r = 0;

	if (arg)
		*arg++ = '\0';
	if (streq(l, "protect")) {
		r = cmd_protect(arg ? arg : (char *)"");
	} else if (streq(l, "rescan")) {
		for (size_t i = 0; i < MAX_PROCS; i++)
			if (d.procs[i].pid) {
				int k = protect_one(&d.procs[i]);

				if (k < 0 && r == 0)
					r = k;
			}
	} else if (streq(l, "recheck")) {
		r = backend_lock_recheck(d.backend);
	} else if (streq(l, "release")) {
		struct proc *p = arg ? proc_find((pid_t)atoi(arg)) : NULL;

		if (p)
			proc_drop(p);
		else
			r = -ESRCH;
	} else if (streq(l, "reload")) {
		struct policy np;

		r = load_config(arg, &np);
		if (r == 0) {
			policy_done(&d.policy);
			d.policy = np;
			d.env.settings = &d.policy.daemon;
			r = backend_lock_ops.reconfigure(d.backend, &d.policy.daemon);
		} else {
			policy_done(&np);
		}
	} else if (streq(l, "dump")) {
		_cleanup_free_ char *st = NULL;
		const char *v;

		r = backend_lock_dump(d.backend, stdout);
		/* The kernel's count of what this process has locked, at the
		 * same moment (nothing runs between): for racy tests. */
		if (read_file_at(AT_FDCWD, "/proc/self/status", 1 << 16, &st, NULL) >= 0 &&
		    (v = strstr(st, "\nVmLck:")))
			printf("driver vmlck=%llu\n", strtoull(v + 8, NULL, 10) * 1024);
		printf("end\n");
		fflush(stdout);
		return;
	} else if (streq(l, "describe")) {
		char buf[256];

		backend_lock_ops.describe(d.backend, buf, sizeof(buf));
		printf("%s\n", buf);
	} else if (streq(l, "quit")) {
		sd_event_exit(d.event, 0);
	} else if (*l) {
		r = -EBADRQC;
	}
	if (r < 0)
		printf("error %s\n", strerror(-r));
	else
		printf("ok\n");
	fflush(stdout);
}

static int on_stdin(sd_event_source *s _unused_, int fd, uint32_t revents _unused_, void *userdata _unused_)
{
	ssize_t n = read(fd, d.line + d.line_len, sizeof(d.line) - 1 - d.line_len);
	char *nl;

	if (n <= 0) {
		sd_event_exit(d.event, 0);
		return 0;
	}
	d.line_len += (size_t)n;
	d.line[d.line_len] = '\0';
	while ((nl = strchr(d.line, '\n'))) {
		size_t used = (size_t)(nl - d.line) + 1;

		*nl = '\0';
		handle_line(d.line);
		memmove(d.line, d.line + used, d.line_len - used + 1);
		d.line_len -= used;
	}
	if (d.line_len == sizeof(d.line) - 1)
		d.line_len = 0; /* an overlong line: drop it */
	return 0;
}

int main(int argc, char **argv)
{
	const char *config = NULL;
	char *reason = NULL;
	int r, i = 1;

	log_setup(LOG_TARGET_STDERR_FIELDS, LOG_DEBUG);
	if (i < argc && streq(argv[i], "--dry-run")) {
		d.env.dry_run = true;
		i++;
	}
	if (i < argc)
		config = argv[i];
	for (size_t k = 0; k < MAX_PROCS; k++)
		d.procs[k] = (struct proc){ .pidfd = -1, .proc_fd = -1 };

	r = load_config(config, &d.policy);
	if (r < 0) {
		fprintf(stderr, "lock-driver: %s: %s\n", strna(config), strerror(-r));
		return 2;
	}
	r = sd_event_default(&d.event);
	if (r < 0)
		return 2;
	d.env.cgroup_root_fd = open_cgroup2();
	d.env.proc_fd = -1;
	d.env.event = d.event;
	d.env.settings = &d.policy.daemon;

	r = backend_lock_ops.probe(&d.env, &reason);
	if (r < 0) {
		printf("skip %s\n", strna(reason));
		return 77;
	}
	r = backend_lock_ops.create(&d.env, &d.backend);
	if (r < 0) {
		fprintf(stderr, "lock-driver: create: %s\n", strerror(-r));
		return 2;
	}
	r = sd_event_add_io(d.event, NULL, STDIN_FILENO, EPOLLIN, on_stdin, NULL);
	if (r < 0)
		return 2;
	printf("ready\n");
	fflush(stdout);
	r = sd_event_loop(d.event);

	for (size_t k = 0; k < MAX_PROCS; k++)
		proc_drop(&d.procs[k]);
	backend_lock_ops.destroy(d.backend);
	closep(&d.env.cgroup_root_fd);
	policy_done(&d.policy);
	sd_event_unref(d.event);
	return r < 0 ? 1 : 0;
}
