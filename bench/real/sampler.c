/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Samples counters with timestamps for bench/real, so that slow requests
 * can be lined up with the service's text major faults.
 *
 *   sampler INTERVAL_MS OUT NAME=PATH...
 *
 * Every INTERVAL_MS until SIGTERM, reads each PATH and appends to OUT the
 * lines "T NAME KEY VALUE" (T: CLOCK_REALTIME seconds) of every value
 * that changed since the sample before (all of them the first time).
 * PATH formats: "key value" lines (memory.stat, memory.events, vmstat);
 * a single value (memory.current; KEY "value"); PSI ("some avg10=...
 * total=N": KEYs some_total, full_total); /proc/stat (its first line:
 * KEYs user, nice, system, idle, iowait, irq, softirq); /proc/PID/stat
 * (KEYs utime, stime, in clock ticks). A file that cannot be read (a
 * cgroup gone) is skipped for that sample. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXKEYS 512

struct src {
	const char *name, *path;
	int nkeys;
	char *keys[MAXKEYS];
	long long vals[MAXKEYS];
};

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

static void put(struct src *s, FILE *out, double t, const char *key, long long v)
{
	for (int i = 0; i < s->nkeys; i++)
		if (!strcmp(s->keys[i], key)) {
			if (s->vals[i] != v)
				fprintf(out, "%.3f %s %s %lld\n", t, s->name, key, v);
			s->vals[i] = v;
			return;
		}
	if (s->nkeys == MAXKEYS)
		return;
	s->keys[s->nkeys] = strdup(key);
	s->vals[s->nkeys++] = v;
	fprintf(out, "%.3f %s %s %lld\n", t, s->name, key, v);
}

static void parse(struct src *s, FILE *out, double t, char *buf)
{
	static const char *cpu[] = { "user", "nice", "system", "idle", "iowait", "irq", "softirq" };
	char key[128];
	long long v;
	if (!strcmp(s->path, "/proc/stat")) {
		char *p = buf + 3;
		for (int i = 0; i < 7; i++)
			put(s, out, t, cpu[i], strtoll(p, &p, 10));
	} else if (!strncmp(s->path, "/proc/", 6) && strstr(s->path, "/stat") &&
		   strchr(buf, ')')) {
		/* /proc/PID/stat: fields 14 and 15 after the ")" of comm */
		char *p = strrchr(buf, ')') + 2;
		for (int f = 3; f < 14 && p; f++)
			p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
		if (p) {
			put(s, out, t, "utime", strtoll(p, &p, 10));
			put(s, out, t, "stime", strtoll(p, &p, 10));
		}
	} else if (!strncmp(buf, "some ", 5)) {
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
			char *tot = strstr(line, "total=");
			if (tot) {
				snprintf(key, sizeof(key), "%.4s_total", line);
				put(s, out, t, key, strtoll(tot + 6, NULL, 10));
			}
		}
	} else if (sscanf(buf, "%127s %lld", key, &v) == 2) {
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
			if (sscanf(line, "%127s %lld", key, &v) == 2)
				put(s, out, t, key, v);
	} else if (sscanf(buf, "%lld", &v) == 1) {
		put(s, out, t, "value", v);
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: sampler INTERVAL_MS OUT NAME=PATH...\n");
		return 2;
	}
	long ms = atol(argv[1]);
	FILE *out = fopen(argv[2], "a");
	if (!out || ms <= 0) {
		perror("sampler");
		return 1;
	}
	int n = argc - 3;
	struct src *srcs = calloc(n, sizeof(*srcs));
	for (int i = 0; i < n; i++) {
		char *eq = strchr(argv[i + 3], '=');
		if (!eq) {
			fprintf(stderr, "sampler: %s: not NAME=PATH\n", argv[i + 3]);
			return 2;
		}
		*eq = 0;
		srcs[i].name = argv[i + 3];
		srcs[i].path = eq + 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	static char buf[1 << 16];
	while (!stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		double t = ts.tv_sec + ts.tv_nsec / 1e9;
		for (int i = 0; i < n; i++) {
			int fd = open(srcs[i].path, O_RDONLY);
			if (fd < 0)
				continue;
			ssize_t len = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (len <= 0)
				continue;
			buf[len] = 0;
			parse(&srcs[i], out, t, buf);
		}
		fflush(out);
		struct timespec d = { ms / 1000, (ms % 1000) * 1000000 };
		nanosleep(&d, NULL);
	}
	fclose(out);
	return 0;
}
