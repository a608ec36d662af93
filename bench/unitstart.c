/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A unit's start as systemd does it, timed to its protection, for
 * bench/push-latency.sh: make the cgroup (the real one, and in the fake
 * tree the daemon acts on, files and all at once), start PROGRAM in it,
 * and wait (inotify) until the fake tree's memory.exec_protect says max.
 * Prints the microseconds from the cgroup's creation to that, or
 * "timeout". The child is left running; its PID is printed after. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int put(const char *dir, const char *file, const char *text)
{
	char p[4096];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	f = fopen(p, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int is_max(const char *file)
{
	char buf[32] = "";
	int fd = open(file, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 3 && strncmp(buf, "max", 3) == 0;
}

int main(int argc, char **argv)
{
	char real[2048], fake[2048], staging[2048], file[4096], pid[32];
	double t0;
	int in, wd, timeout_ms = 5000;
	pid_t child;

	if (argc != 5) {
		fprintf(stderr, "usage: %s CGROUP2-DIR FAKE-DIR NAME PROGRAM\n", argv[0]);
		return 2;
	}
	snprintf(real, sizeof(real), "%s/%s", argv[1], argv[3]);
	snprintf(fake, sizeof(fake), "%s/%s", argv[2], argv[3]);
	snprintf(staging, sizeof(staging), "%s/.staging-%s", argv[2], argv[3]);
	snprintf(file, sizeof(file), "%s/memory.exec_protect", fake);
	if (mkdir(staging, 0755) < 0 || put(staging, "memory.exec_protect", "0\n") < 0 ||
	    put(staging, "cgroup.events", "populated 1\nfrozen 0\n") < 0) {
		perror("staging");
		return 1;
	}
	in = inotify_init1(IN_CLOEXEC);
	t0 = now_us();
	if (mkdir(real, 0755) < 0 || rename(staging, fake) < 0) {
		perror("mkdir");
		return 1;
	}
	wd = inotify_add_watch(in, file, IN_MODIFY | IN_CLOSE_WRITE);
	if (wd < 0) {
		perror("inotify");
		return 1;
	}
	child = fork();
	if (child == 0) {
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		if (put(real, "cgroup.procs", pid) < 0)
			_exit(126);
		/* The caller reads our stdout to its end: the long-lived
		 * child must not hold it (nor any other inherited file, such
		 * as a lock the caller runs under) open for its 600 s. */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
			_exit(126);
		for (int fd = STDERR_FILENO + 1; fd < 1024; fd++)
			if (fd != null)
				(void)close(fd);
		execl(argv[4], argv[4], "600", (char *)NULL);
		_exit(127);
	}
	for (;;) {
		char ev[4096];

		if (is_max(file)) {
			printf("%.0f\n%d\n", now_us() - t0, (int)child);
			return 0;
		}
		if (now_us() - t0 > timeout_ms * 1000.0)
			break;
		{
			struct timeval tv = { 0, 100000 };
			fd_set fds;

			FD_ZERO(&fds);
			FD_SET(in, &fds);
			if (select(in + 1, &fds, NULL, NULL, &tv) > 0 && read(in, ev, sizeof(ev)) < 0 && errno != EINTR)
				break;
		}
	}
	printf("timeout\n%d\n", (int)child);
	return 0;
}
