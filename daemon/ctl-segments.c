/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "cgroup.h"
#include "ctl-json.h"
#include "ctl-segments.h"
#include "elf-segments.h"
#include "maps.h"
#include "segments.h"
#include "util.h"

enum { SEG_OK = 0, SEG_FAILED = 1, SEG_USAGE = 2 };

/* "execguardctl: unit U: WHAT" and systemd's message, or the errno's. */
static void bus_error(const char *unit, const char *what, const sd_bus_error *e, int r)
{
	if (e->message) {
		fprintf(stderr, "execguardctl: unit %s: %s%s\n", unit, what, e->message);
	} else {
		errno = -r;
		fprintf(stderr, "execguardctl: unit %s: %s%m\n", unit, what);
	}
}

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
		bus_error(unit, "", &e, r);
		sd_bus_error_free(&e);
		return r;
	}
	r = sd_bus_message_read(reply, "o", &path);
	if (r >= 0)
		r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", path, iface, "ControlGroup", &e, ret);
	if (r < 0)
		bus_error(unit, "no cgroup: ", &e, r);
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
			errno = -r;
			fprintf(stderr, "execguardctl: no cgroup2 mount found (use --cgroup-root=): %m\n");
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
		fprintf(stderr, "execguardctl: %s: %m\n", root);
		return r;
	}
	fd = *rel ? openat(rfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : fcntl(rfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		r = -errno;
		fprintf(stderr, "execguardctl: cgroup %s under %s: %m\n", cgroup, root);
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
		errno = -r;
		fprintf(stderr, "execguardctl: cannot list the processes of %s: %m\n", cg);
		return r;
	}
	*ret_cgroup = TAKE_PTR(cg);
	return 0;
}

/* Output. */

static const char *const perm_names[8] = { "---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx" };

/* Names are bytes; JSON strings are UTF-8: \\xNN for what is not. */
static struct json_object *json_str(const char *s)
{
	int err;
	_cleanup_free_ char *e = s ? utf8_escape_invalid_text(s, &err) : NULL;

	return s ? json_object_new_string(e ?: s) : NULL;
}

static struct json_object *errno_str(int r)
{
	char buf[128];

	errno = -r;
	snprintf(buf, sizeof(buf), "%m");
	return json_object_new_string(buf);
}

static struct json_object *json_file(const struct seg_file *s)
{
	struct json_object *o = json_object_new_object(), *segs;
	char dev[32];

	snprintf(dev, sizeof(dev), "%u:%u", s->dev_major, s->dev_minor);
	json_object_object_add(o, "path", json_str(s->path));
	json_object_object_add(o, "device", json_object_new_string(dev));
	json_object_object_add(o, "inode", json_object_new_uint64(s->inode));
	json_object_object_add(o, "executable", json_object_new_boolean(s->executable));
	json_object_object_add(o, "named", json_object_new_boolean(s->named));
	json_object_object_add(o, "processes", json_object_new_uint64(s->n_pids));
	if (!s->measured) {
		json_object_object_add(o, "error", json_str(s->error_what));
		json_object_object_add(o, "errno", errno_str(s->error));
		return o;
	}
	json_object_object_add(o, "error", NULL);
	json_object_object_add(o, "file_size", json_object_new_uint64(s->file_size));
	json_object_object_add(o, "size", json_object_new_uint64(s->size));
	json_object_object_add(o, "resident", json_object_new_uint64(s->resident));
	json_object_object_add(o, "elf", json_object_new_boolean(s->elf == 0));
	segs = json_object_new_array();
	for (size_t k = 0; k < s->n_segments; k++) {
		const struct seg_segment *g = &s->segments[k];
		struct json_object *so = json_object_new_object();

		json_object_object_add(so, "perms", json_object_new_string(perm_names[g->flags & 7]));
		json_object_object_add(so, "relro", json_object_new_boolean(g->relro));
		json_object_object_add(so, "offset", json_object_new_uint64(g->offset));
		json_object_object_add(so, "size", json_object_new_uint64(g->size));
		json_object_object_add(so, "resident", json_object_new_uint64(g->resident));
		json_object_array_add(segs, so);
	}
	json_object_object_add(o, "segments", segs);
	return o;
}

static int print_json(const struct segments_args *a, const char *cgroup, const pid_t *pids, size_t n_pids,
		      const struct seg_files *f, size_t page_size)
{
	struct json_object *o = json_object_new_object(), *arr, *totals, *by;
	struct seg_totals t;

	json_object_object_add(o, "unit", json_str(a->target && cgroup ? a->target : NULL));
	json_object_object_add(o, "cgroup", json_str(cgroup));
	json_object_object_add(o, "page_size", json_object_new_uint64(page_size));
	arr = json_object_new_array();
	for (size_t i = 0; i < n_pids; i++)
		json_object_array_add(arr, json_object_new_int(pids[i]));
	json_object_object_add(o, "pids", arr);
	arr = json_object_new_array();
	for (size_t i = 0; i < f->n; i++)
		json_object_array_add(arr, json_file(&f->items[i]));
	json_object_object_add(o, "files", arr);
	seg_files_totals(f, &t);
	totals = json_object_new_object();
	json_object_object_add(totals, "images", json_object_new_uint64(t.n_images));
	json_object_object_add(totals, "data_files", json_object_new_uint64(t.n_data));
	json_object_object_add(totals, "errors", json_object_new_uint64(t.n_errors));
	by = json_object_new_object();
	for (unsigned k = 0; k < 8; k++) {
		struct json_object *p;

		if (!t.size[k])
			continue;
		p = json_object_new_object();
		json_object_object_add(p, "size", json_object_new_uint64(t.size[k]));
		json_object_object_add(p, "resident", json_object_new_uint64(t.resident[k]));
		json_object_object_add(by, perm_names[k], p);
	}
	json_object_object_add(totals, "by_perms", by);
	json_object_object_add(o, "totals", totals);
	return ctl_json_print(o) < 0 ? SEG_FAILED : SEG_OK;
}

static unsigned pct(uint64_t part, uint64_t whole)
{
	return whole ? (unsigned)(part * 100 / whole) : 0;
}

static void print_text(const struct seg_files *f)
{
	struct seg_totals t;
	char a[32], b[32];

	for (size_t i = 0; i < f->n; i++) {
		const struct seg_file *s = &f->items[i];
		const char *kind = s->executable ? "image" : s->named ? "named" : "data";

		if (!s->measured) {
			errno = -s->error;
			printf("%s (%zu processes, %s): not measured: %s: %m\n", s->path, s->n_pids, kind,
			       strna(s->error_what));
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
			printf("  %s%-6s offset %#10" PRIx64 " %9s  resident %9s %3u%%\n", perm_names[g->flags & 7],
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
		printf("  %s segments: %s, resident %s %u%%\n", perm_names[k], a, b, pct(t.resident[k], t.size[k]));
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
			errno = -r;
			fprintf(stderr, "execguardctl: cannot read the mappings of %s: %m\n", name);
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
			errno = -r;
			if (r == -EBADF)
				fprintf(stderr, "execguardctl: --file=%s: not a regular file\n", a->files[i]);
			else
				fprintf(stderr, "execguardctl: --file=%s: %m\n", a->files[i]);
			return SEG_FAILED;
		}
	}
	for (size_t i = 0; i < f.n; i++)
		seg_file_measure(&f.items[i], proc_fd);
	seg_files_sort(&f);
	if (a->json)
		return print_json(a, cgroup, pids, n_pids, &f, ps > 0 ? (size_t)ps : 4096);
	print_text(&f);
	return SEG_OK;
}
