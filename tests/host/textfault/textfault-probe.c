/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text-fault reader (daemon/textfault.c) as the daemon runs it, on
 * cgroups named on the command line, for the host test, the cost
 * benchmark and the comparison with the kernel's counter:
 *
 *   textfault-probe [--estimate] [--interval MS] [--count N] [--quiet] CGROUP...
 *
 * Every MS (default 2000) it reads each CGROUP (a cgroup2 path, "/a/b")
 * and prints one line per cgroup:
 *   sample N CGROUP source S faults F kernel K majors M share X windows T/O pages P procs Q
 * (kernel: memory.stat pgmajfault_exec now, "-" without it). --estimate
 * estimates even where the kernel counts. --count rounds (default:
 * until SIGTERM or SIGINT), then
 *   cpu first_usec A usec B wall_usec C percent D
 * the CPU of the first round (A: maps read and files opened), and of the
 * rounds after it (B) over their wall time (C), as percent of one CPU. */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "procfs.h"
#include "textfault.h"
#include "util.h"

static volatile sig_atomic_t stop;

static void on_signal(int s)
{
	(void)s;
	stop = 1;
}

static uint64_t usec_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t cpu_usec(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ULL +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void kernel_counter(int root, const char *cgroup, char *buf, size_t size)
{
	_cleanup_free_ char *stat = NULL;
	const char *rel;
	char path[4096];
	uint64_t v;
	size_t len;

	snprintf(buf, size, "-");
	if (cgroup_relative(cgroup, &rel) < 0)
		return;
	snprintf(path, sizeof(path), "%s%smemory.stat", rel, rel[0] ? "/" : "");
	if (read_file_at(root, path, 1 << 16, &stat, &len) == 0 &&
	    procfs_field_u64(stat, len, "pgmajfault_exec", ' ', &v) == 0)
		snprintf(buf, size, "%" PRIu64, v);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "estimate", no_argument, NULL, 'e' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	_cleanup_free_ char *root_path = NULL;
	_cleanup_close_ int root = -1, proc = -1;
	struct text_faults *tf = NULL;
	uint64_t interval_ms = 2000, count = UINT64_MAX, cpu0 = 0, wall0 = 0, first = 0;
	bool estimate = false, quiet = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "ei:n:qh", opts, NULL)) >= 0) {
		switch (c) {
		case 'e':
			estimate = true;
			break;
		case 'i':
			interval_ms = strtoull(optarg, NULL, 10);
			break;
		case 'n':
			count = strtoull(optarg, NULL, 10);
			break;
		case 'q':
			quiet = true;
			break;
		default:
			fprintf(stderr, "usage: %s [--estimate] [--interval MS] [--count N] [--quiet] CGROUP...\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no cgroup given\n", argv[0]);
		return 2;
	}
	r = cgroup2_find_mount(NULL, &root_path);
	if (r < 0) {
		fprintf(stderr, "no cgroup2 mount: %s\n", strerror(-r));
		return 77;
	}
	root = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || proc < 0 || text_faults_new(root, proc, &tf) < 0) {
		perror("open");
		return 1;
	}
	text_faults_set_min_interval(tf, 0); /* this loop keeps the interval */
	text_faults_set_force_estimate(tf, estimate);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (uint64_t n = 0; n < count && !stop; n++) {
		uint64_t due = usec_now() + interval_ms * 1000;

		for (int i = optind; i < argc; i++) {
			struct text_faults_unit_info info = { 0 };
			struct text_fault_reading rd;
			char kernel[32];

			r = text_faults_read(tf, argv[i], argv[i], &rd);
			if (quiet)
				continue;
			if (r < 0) {
				printf("sample %" PRIu64 " %s error %s\n", n, argv[i], strerror(-r));
				continue;
			}
			(void)text_faults_unit_info(tf, argv[i], &info);
			kernel_counter(root, argv[i], kernel, sizeof(kernel));
			printf("sample %" PRIu64 " %s source %s faults %" PRIu64 " kernel %s majors %" PRIu64
			       " share %.3f windows %" PRIu64 "/%" PRIu64 " pages %" PRIu64 " procs %" PRIu64
			       " evicted %" PRIu64 " came_back %" PRIu64 "\n",
			       n, argv[i], text_fault_source_to_string(rd.source), rd.faults, kernel,
			       info.majors, info.text_share, info.text_windows, info.other_windows,
			       info.pages, info.processes, info.evicted, info.came_back);
		}
		if (n == 0) {
			first = cpu_usec();
			cpu0 = first;
			wall0 = usec_now();
		}
		if (n + 1 < count)
			while (!stop) {
				uint64_t now = usec_now();

				if (now >= due)
					break;
				usleep((useconds_t)(due - now < 100000 ? due - now : 100000));
			}
	}
	{
		uint64_t cpu = cpu_usec() - cpu0, wall = usec_now() - wall0;

		printf("cpu first_usec %" PRIu64 " usec %" PRIu64 " wall_usec %" PRIu64 " percent %.3f\n",
		       first, cpu, wall, wall ? 100.0 * (double)cpu / (double)wall : 0.0);
	}
	text_faults_free(tf);
	return 0;
}
