/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "cgroup.h"
#include "ctl-segments.h"
#include "elf-segments.h"
#include "maps.h"
#include "segments.h"
#include "util.h"

enum { SEG_OK = 0, SEG_FAILED = 1, SEG_USAGE = 2 };

/* The unit's cgroup as systemd has it (its ControlGroup property). */
static int unit_cgroup(const char *unit, char **ret)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	const char *path = NULL, *dot = strrchr(unit, '.');
	char iface[64];
	int r;

	if (!dot || strlen(dot + 1) == 0 || strlen(dot + 1) > 20)
		return -EINVAL;
	/* "service" -> "org.freedesktop.systemd1.Service" */
	snprintf(iface, sizeof(iface), "org.freedesktop.systemd1.%c%s", dot[1] - 'a' + 'A', dot + 2);
	r = sd_bus_open_system(&bus);
	if (r < 0)
		return r;
	r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			       "org.freedesktop.systemd1.Manager", "GetUnit", &e, &reply, "s", unit);
	if (r < 0) {
		fprintf(stderr, "execguardctl: unit %s: %s\n", unit, e.message ? e.message : strerror(-r));
		sd_bus_error_free(&e);
		return r;
	}
	r = sd_bus_message_read(reply, "o", &path);
	if (r >= 0)
		r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", path, iface, "ControlGroup", &e, ret);
	if (r < 0)
		fprintf(stderr, "execguardctl: unit %s: no cgroup: %s\n", unit, e.message ? e.message : strerror(-r));
	sd_bus_error_free(&e);
	sd_bus_message_unref(reply);
	if (r >= 0 && (!*ret || !**ret)) {
		free(*ret);
		fprintf(stderr, "execguardctl: unit %s has no cgroup (not running?)\n", unit);
		return -ENOENT;
	}
	return r;
}

static int open_cgroup(const char *root, const char *cgroup, int *ret)
{
	_cleanup_free_ char *found = NULL;
	_cleanup_close_ int rfd = -1;
	const char *rel;
	int r, fd;

	if (!root) {
		r = cgroup2_find_mount(NULL, &found);
		if (r < 0) {
			fprintf(stderr, "execguardctl: no cgroup2 mount found (use --cgroup-root=): %s\n", strerror(-r));
			return r;
		}
		root = found;
	}
	r = cgroup_relative(cgroup, &rel);
	if (r < 0) {
		fprintf(stderr, "execguardctl: bad cgroup path '%s'\n", cgroup);
		return r;
	}
	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		r = -errno;
		fprintf(stderr, "execguardctl: %s: %s\n", root, strerror(errno));
		return r;
	}
	fd = *rel ? openat(rfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : fcntl(rfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		r = -errno;
		fprintf(stderr, "execguardctl: cgroup %s under %s: %s\n", cgroup, root, strerror(errno));
		return r;
	}
	*ret = fd;
	return 0;
}

/* The processes to look at, from whichever target was given. */
static int collect_pids(const struct segments_args *a, char **ret_cgroup, pid_t **pids, size_t *n)
{
	_cleanup_free_ char *cg = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	if (a->target) {
		char *end;
		long v = strtol(a->target, &end, 10);

		if (*a->target && !*end) {
			if (v <= 0 || v > INT32_MAX) {
				fprintf(stderr, "execguardctl: bad PID '%s'\n", a->target);
				return -EINVAL;
			}
			*pids = malloc(sizeof(**pids));
			if (!*pids)
				return -ENOMEM;
			(*pids)[0] = (pid_t)v;
			*n = 1;
			return 0;
		}
		r = unit_cgroup(a->target, &cg);
		if (r < 0)
			return r;
	} else if (a->cgroup) {
		cg = strdup(a->cgroup);
		if (!cg)
			return -ENOMEM;
	} else {
		return 0; /* files only */
	}
	r = open_cgroup(a->cgroup_root, cg, &fd);
	if (r < 0)
		return r;
	r = seg_cgroup_pids(fd, pids, n);
	if (r < 0) {
		fprintf(stderr, "execguardctl: cannot list the processes of %s: %s\n", cg, strerror(-r));
		return r;
	}
	*ret_cgroup = TAKE_PTR(cg);
	return 0;
}

/* Output. */

static void json_str(const char *s)
{
	int err = 0;
	_cleanup_free_ char *esc = s ? utf8_escape_invalid(s, &err) : NULL;
	const unsigned char *p = (const unsigned char *)(esc ? esc : strempty(s));

	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void print_json(const struct segments_args *a, const char *cgroup, const pid_t *pids, size_t n_pids,
		       const struct seg_files *f, size_t page_size)
{
	static const char *const names[8] = { "---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx" };
	struct seg_totals t;

	printf("{\"unit\":");
	json_str(a->target && cgroup ? a->target : NULL);
	printf(",\"cgroup\":");
	json_str(cgroup);
	printf(",\"page_size\":%zu,\"pids\":[", page_size);
	for (size_t i = 0; i < n_pids; i++)
		printf("%s%d", i ? "," : "", (int)pids[i]);
	printf("],\"files\":[");
	for (size_t i = 0; i < f->n; i++) {
		const struct seg_file *s = &f->items[i];

		printf("%s{\"path\":", i ? "," : "");
		json_str(s->path);
		printf(",\"device\":\"%u:%u\",\"inode\":%" PRIu64 ",\"executable\":%s,\"named\":%s,\"processes\":%zu",
		       s->dev_major, s->dev_minor, s->inode, s->executable ? "true" : "false",
		       s->named ? "true" : "false", s->n_pids);
		if (!s->measured) {
			printf(",\"error\":");
			json_str(s->error_what);
			printf(",\"errno\":");
			json_str(strerror(-s->error));
			printf("}");
			continue;
		}
		printf(",\"error\":null,\"file_size\":%" PRIu64 ",\"size\":%" PRIu64 ",\"resident\":%" PRIu64
		       ",\"elf\":%s,\"segments\":[",
		       s->file_size, s->size, s->resident, s->elf == 0 ? "true" : "false");
		for (size_t k = 0; k < s->n_segments; k++) {
			const struct seg_segment *g = &s->segments[k];

			printf("%s{\"perms\":\"%s\",\"relro\":%s,\"offset\":%" PRIu64 ",\"size\":%" PRIu64
			       ",\"resident\":%" PRIu64 "}",
			       k ? "," : "", names[g->flags & 7], g->relro ? "true" : "false", g->offset, g->size,
			       g->resident);
		}
		printf("]}");
	}
	seg_files_totals(f, &t);
	printf("],\"totals\":{\"images\":%zu,\"data_files\":%zu,\"errors\":%zu,\"by_perms\":{", t.n_images,
	       t.n_data, t.n_errors);
	for (unsigned k = 0, first = 1; k < 8; k++) {
		if (!t.size[k])
			continue;
		printf("%s\"%s\":{\"size\":%" PRIu64 ",\"resident\":%" PRIu64 "}", first ? "" : ",", names[k],
		       t.size[k], t.resident[k]);
		first = 0;
	}
	printf("}}}\n");
}

static unsigned pct(uint64_t part, uint64_t whole)
{
	return whole ? (unsigned)(part * 100 / whole) : 0;
}

static void print_text(const struct seg_files *f)
{
	static const char *const names[8] = { "---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx" };
	struct seg_totals t;
	char a[32], b[32];

	for (size_t i = 0; i < f->n; i++) {
		const struct seg_file *s = &f->items[i];
		const char *kind = s->executable ? "image" : s->named ? "named" : "data";

		if (!s->measured) {
			printf("%s (%zu processes, %s): not measured: %s: %s\n", s->path, s->n_pids, kind,
			       strna(s->error_what), strerror(-s->error));
			continue;
		}
		format_bytes(a, sizeof(a), s->file_size);
		format_bytes(b, sizeof(b), s->resident);
		printf("%s (%zu processes, %s%s): %s, resident %s %u%%\n", s->path, s->n_pids, kind,
		       s->elf == 0 ? "" : ", not ELF", a, b, pct(s->resident, s->size));
		for (size_t k = 0; k < s->n_segments; k++) {
			const struct seg_segment *g = &s->segments[k];

			format_bytes(a, sizeof(a), g->size);
			format_bytes(b, sizeof(b), g->resident);
			printf("  %s%-6s offset %#10" PRIx64 " %9s  resident %9s %3u%%\n", names[g->flags & 7],
			       g->relro ? " relro" : "", g->offset, a, b, pct(g->resident, g->size));
		}
	}
	seg_files_totals(f, &t);
	printf("images: %zu, data files: %zu, not measured: %zu\n", t.n_images, t.n_data, t.n_errors);
	for (unsigned k = 0; k < 8; k++) {
		if (!t.size[k])
			continue;
		format_bytes(a, sizeof(a), t.size[k]);
		format_bytes(b, sizeof(b), t.resident[k]);
		printf("  %s segments: %s, resident %s %u%%\n", names[k], a, b, pct(t.resident[k], t.size[k]));
	}
}

int ctl_segments(const struct segments_args *a)
{
	_cleanup_(seg_files_done) struct seg_files f = { 0 };
	_cleanup_free_ pid_t *pids = NULL;
	_cleanup_free_ char *cgroup = NULL;
	_cleanup_close_ int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long ps = sysconf(_SC_PAGESIZE);
	size_t n_pids = 0, n_read = 0;
	bool use_query = true;
	int r;

	if (!a->target && !a->cgroup && a->n_files == 0) {
		fprintf(stderr, "execguardctl: segments wants a UNIT, a PID, --cgroup=PATH or --file=PATH\n");
		return SEG_USAGE;
	}
	if (a->target && a->cgroup) {
		fprintf(stderr, "execguardctl: segments takes a UNIT or PID, or --cgroup=, not both\n");
		return SEG_USAGE;
	}
	if (proc_fd < 0) {
		perror("execguardctl: /proc");
		return SEG_FAILED;
	}
	r = collect_pids(a, &cgroup, &pids, &n_pids);
	if (r < 0)
		return r == -EINVAL ? SEG_USAGE : SEG_FAILED;
	for (size_t i = 0; i < n_pids; i++) {
		struct exec_mappings m = { 0 };
		char name[32];
		int pfd;

		snprintf(name, sizeof(name), "%d", (int)pids[i]);
		pfd = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd < 0) {
			if (a->target && !cgroup) {
				fprintf(stderr, "execguardctl: no process %s\n", name);
				return SEG_FAILED;
			}
			continue; /* exited meanwhile */
		}
		r = maps_read_select(pfd, &use_query, MAPS_FILES, &m);
		close(pfd);
		if (r >= 0) {
			r = seg_files_add_process(&f, pids[i], &m);
			n_read++;
		} else if (a->target && !cgroup) {
			fprintf(stderr, "execguardctl: cannot read the mappings of %s: %s\n", name, strerror(-r));
			exec_mappings_clear(&m);
			free(m.items);
			return SEG_FAILED;
		}
		exec_mappings_clear(&m);
		free(m.items);
		if (r == -ENOMEM)
			return SEG_FAILED;
	}
	if (n_pids > 0 && n_read == 0) {
		fprintf(stderr, "execguardctl: the mappings of none of the %zu processes could be read (root?)\n", n_pids);
		return SEG_FAILED;
	}
	for (size_t i = 0; i < a->n_files; i++) {
		r = seg_files_add_path(&f, a->files[i]);
		if (r < 0) {
			fprintf(stderr, "execguardctl: --file=%s: %s\n", a->files[i],
				r == -EBADF ? "not a regular file" : strerror(-r));
			return SEG_FAILED;
		}
	}
	for (size_t i = 0; i < f.n; i++)
		seg_file_measure(&f.items[i], proc_fd);
	seg_files_sort(&f);
	if (a->json)
		print_json(a, cgroup, pids, n_pids, &f, ps > 0 ? (size_t)ps : 4096);
	else
		print_text(&f);
	return SEG_OK;
}
