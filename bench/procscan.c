/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The polling baseline for bench/execstorm.sh: what prelockd does every
 * interval, reading /proc/PID/maps and /proc/PID/cgroup of every process
 * to find the executable mappings. Runs SCANS scans back to back and
 * prints the CPU time of one. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static long scan(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	static char buf[1 << 16];
	long exec_lines = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[300];
		int fd;
		ssize_t n;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cgroup", de->d_name);
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			while (read(fd, buf, sizeof(buf)) > 0)
				;
			close(fd);
		}
		snprintf(path, sizeof(path), "/proc/%s/maps", de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		while ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
			buf[n] = '\0';
			for (char *p = buf; (p = strstr(p, " r-xp ")); p++)
				exec_lines++;
		}
		close(fd);
	}
	closedir(d);
	return exec_lines;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	int scans = argc > 1 ? atoi(argv[1]) : 10;
	long lines = 0, procs = 0;
	double c0, c1;
	DIR *d;
	struct dirent *de;

	if (scans < 1)
		scans = 1;
	d = opendir("/proc");
	while (d && (de = readdir(d)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			procs++;
	if (d)
		closedir(d);
	c0 = cpu_seconds();
	for (int i = 0; i < scans; i++)
		lines = scan();
	c1 = cpu_seconds();
	printf("procscan: %ld processes, %ld exec mappings, %.2f ms CPU per full scan (%d scans)\n",
	       procs, lines, (c1 - c0) * 1000 / scans, scans);
	return 0;
}
