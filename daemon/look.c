/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "cgroup.h"
#include "look.h"
#include "procfs.h"
#include "util.h"

int pidfd_open_pid(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Without pidfds the /proc/PID directory fd is the pin: lookups in it
 * fail once its process is reaped, and a zombie leader still has live
 * threads only while "Threads:" counts more than itself. */
static bool proc_dir_exited(int dir_fd)
{
	char buf[2048];
	_cleanup_close_ int fd = openat(dir_fd, "status", O_RDONLY | O_CLOEXEC);
	struct proc_status st;
	ssize_t n;

	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0)
		return true;
	/* A status we cannot read says nothing: alive as far as we know. */
	return proc_status_parse(buf, (size_t)n, &st) == 0 && proc_status_exited(&st);
}

bool pin_exited(int pin, bool by_proc_dir)
{
	struct pollfd p = { .fd = pin, .events = POLLIN };

	if (by_proc_dir)
		return proc_dir_exited(pin);
	return poll(&p, 1, 0) != 0;
}

void look_done(struct look *l)
{
	closep(&l->pidfd);
	closep(&l->proc_pid_fd);
	free(l->exe);
	free(l->cgroup);
	free(l->unit);
	free(l->unit_source);
}

/* Through a /proc/PID directory fd: bound to that process, so a later
 * process with the same PID cannot answer. */
int look_at(int proc_fd, pid_t pid, struct look *l)
{
	char name[16], buf[4096];
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *big = NULL;
	const char *cg = buf;
	ssize_t n;
	size_t len;
	int r;

	*l = (struct look){ .pid = pid, .pidfd = -1, .proc_pid_fd = -1, .unit_section = { .protect = -1 } };
	snprintf(name, sizeof(name), "%d", (int)pid);
	l->proc_pid_fd = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->proc_pid_fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	/* On the hot path: one read into the stack is all it takes unless
	 * the hierarchy list is long. */
	fd = openat(l->proc_pid_fd, "cgroup", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf));
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	len = (size_t)n;
	if (len == sizeof(buf)) {
		r = read_file_at(l->proc_pid_fd, "cgroup", 1 << 16, &big, &len);
		if (r < 0)
			return r == -ENOENT || r == -ESRCH ? -ESRCH : r;
		cg = big;
	}
	r = cgroup_parse_proc_cgroup(cg, len, &l->cgroup);
	if (r < 0)
		return r;
	/* systemd's own rule on the path we hold: sd_pid_get_unit() would
	 * read /proc/PID/cgroup a second time on the hot path. */
	r = cgroup_path_to_unit(l->cgroup, &l->unit);
	if (r == -ENOMEM)
		return r;
	return 0;
}

int look_cgroup(int proc_fd, pid_t pid, char *buf, size_t size, const char **ret)
{
	char name[32];
	_cleanup_close_ int fd = -1;
	const char *found;
	size_t found_len;
	ssize_t n;
	int r;

	snprintf(name, sizeof(name), "%d/cgroup", (int)pid);
	fd = openat(proc_fd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	n = read(fd, buf, size);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	if ((size_t)n == size)
		return -E2BIG;
	r = cgroup_find_proc_cgroup(buf, (size_t)n, &found, &found_len);
	if (r < 0)
		return r;
	((char *)found)[found_len] = '\0'; /* within buf: the line's newline, or past the text read */
	*ret = found;
	return 0;
}

int look_at_exe(struct look *l)
{
	char exe[4096];
	ssize_t n;

	n = readlinkat(l->proc_pid_fd, "exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return errno == ENOENT ? -ENOENT : errno == ESRCH ? -ESRCH : -errno;
	exe[n] = '\0';
	l->exe = strdup(exe);
	return l->exe ? 0 : -ENOMEM;
}

/* Only when we act on it. The pidfd is opened first; a lookup in the
 * directory fd succeeding afterwards shows its process was still alive
 * then, so the PID had not been reused and the pidfd is that same
 * process. */
int look_pin(struct look *l, bool by_proc_dir, int known_pidfd)
{
	if (known_pidfd >= 0)
		l->pidfd = fcntl(known_pidfd, F_DUPFD_CLOEXEC, 3);
	else if (by_proc_dir)
		return (l->pidfd = fcntl(l->proc_pid_fd, F_DUPFD_CLOEXEC, 3)) < 0 ? -errno : 0;
	else
		l->pidfd = pidfd_open_pid(l->pid);
	if (l->pidfd < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	if (faccessat(l->proc_pid_fd, "cgroup", F_OK, 0) < 0)
		return -ESRCH;
	return 0;
}
