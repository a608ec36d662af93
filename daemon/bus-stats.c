/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdio.h>

#include "bus-stats.h"
#include "cgroup.h"
#include "maps.h"
#include "procfs.h"
#include "util.h"

void text_mappings_done(struct text_mappings *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->items[i].path);
	free(m->items);
	*m = (struct text_mappings){ 0 };
}

/* A field of a mapping in smaps ("Rss:   12 kB"): 1 when the line is
 * that field, 0 when it is another, -EINVAL when it is malformed. */
static int kb_field(const char *l, size_t len, const char *key, uint64_t *ret)
{
	int r = procfs_field_kb(l, len, key, ret);

	return r == -ENOENT ? 0 : r < 0 ? -EINVAL : 1;
}

int smaps_parse_exec(const char *buf, size_t len, struct text_mappings *ret)
{
	const char *p = buf, *end = buf + len;
	struct text_mapping *cur = NULL;
	struct text_mappings out = { 0 };

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (l && p[0] >= 'A' && p[0] <= 'Z') {
			/* A field of the mapping above ("Rss:   12 kB"). */
			if (cur && kb_field(p, l, "Size", &cur->size) < 0)
				goto bad;
			if (cur && kb_field(p, l, "Rss", &cur->rss) < 0)
				goto bad;
		} else if (l) {
			struct exec_mapping em = { 0 };
			int r = maps_parse_line(p, l, &em);

			cur = NULL;
			if (r < 0)
				goto bad;
			if (r > 0 && (em.kind == MAPPING_FILE || em.kind == MAPPING_DELETED)) {
				struct text_mapping *n = realloc(out.items, (out.n + 1) * sizeof(*n));

				if (!n) {
					free(em.path);
					text_mappings_done(&out);
					return -ENOMEM;
				}
				out.items = n;
				cur = &out.items[out.n++];
				*cur = (struct text_mapping){
					.dev = ((uint64_t)em.dev_major << 20) | em.dev_minor,
					.ino = em.inode,
					.offset = em.offset,
					.size = em.end - em.start,
					.path = em.path,
				};
			} else {
				free(em.path);
			}
		}
		p = nl ? nl + 1 : end;
	}
	*ret = out;
	return 0;
bad:
	text_mappings_done(&out);
	return -EINVAL;
}

#define STAT_TAIL 512

int proc_stat_majflt(const char *buf, size_t len, uint64_t *ret)
{
	unsigned long long v;
	char tmp[STAT_TAIL];

	if (procfs_stat_tail(buf, len, tmp, sizeof(tmp)) < 0)
		return -EINVAL;
	/* After the comm: state ppid pgrp session tty_nr tpgid flags minflt
	 * cminflt majflt. */
	if (sscanf(tmp, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %llu", &v) != 1)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int proc_pid_file(int proc_fd, pid_t pid, const char *name, size_t max, char **buf, size_t *len)
{
	char path[64];

	snprintf(path, sizeof(path), "%d/%s", (int)pid, name);
	return read_file_at(proc_fd, path, max, buf, len);
}

int read_smaps_exec(int proc_fd, pid_t pid, struct text_mappings *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = proc_pid_file(proc_fd, pid, "smaps", 64 << 20, &buf, &len);
	if (r < 0)
		return r;
	return smaps_parse_exec(buf, len, ret);
}

int proc_stat_cpu_ticks(const char *buf, size_t len, uint64_t *ret)
{
	unsigned long long u, s;
	char tmp[STAT_TAIL];

	if (procfs_stat_tail(buf, len, tmp, sizeof(tmp)) < 0)
		return -EINVAL;
	/* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (sscanf(tmp, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &u, &s) != 2)
		return -EINVAL;
	*ret = u + s;
	return 0;
}

uint64_t read_pid_majflt(int proc_fd, pid_t pid)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	uint64_t v;

	if (proc_pid_file(proc_fd, pid, "stat", 4096, &buf, &len) < 0 ||
	    proc_stat_majflt(buf, len, &v) < 0)
		return STAT_UNKNOWN;
	return v;
}

static int cgroup_file(int cgroup_root_fd, const char *cgroup, const char *name, char **buf, size_t *len)
{
	const char *rel;
	char path[4096];

	if (!cgroup || cgroup_relative(cgroup, &rel) < 0)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/%s", rel, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return read_file_at(cgroup_root_fd, path, 1 << 16, buf, len);
}

uint64_t read_cgroup_majflt(int cgroup_root_fd, const char *cgroup, const char **ret_key)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	uint64_t v;

	if (cgroup_file(cgroup_root_fd, cgroup, "memory.stat", &buf, &len) < 0)
		return STAT_UNKNOWN;
	if (procfs_field_u64(buf, len, "pgmajfault_exec", ' ', &v) == 0) {
		*ret_key = "pgmajfault_exec";
		return v;
	}
	if (procfs_field_u64(buf, len, "pgmajfault", ' ', &v) == 0) {
		*ret_key = "pgmajfault";
		return v;
	}
	return STAT_UNKNOWN;
}

/* The value of key in a "key value" file of cgroup; STAT_UNKNOWN when the
 * file or the key is absent. */
static uint64_t read_cgroup_key(int cgroup_root_fd, const char *cgroup, const char *file,
				const char *key)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	uint64_t v;

	if (cgroup_file(cgroup_root_fd, cgroup, file, &buf, &len) < 0 ||
	    procfs_field_u64(buf, len, key, ' ', &v) < 0)
		return STAT_UNKNOWN;
	return v;
}

uint64_t read_cgroup_breaches(int cgroup_root_fd, const char *cgroup)
{
	return read_cgroup_key(cgroup_root_fd, cgroup, "memory.events", "exec_protect_breach");
}

bool exec_protect_is_off(const char *value)
{
	size_t n = strcspn(value, " \n");

	return n == 1 && value[0] == '0';
}

int read_exec_protect_effective(int cgroup_root_fd, const char *cgroup, uint64_t *ret_bound,
				char **ret_where)
{
	_cleanup_free_ char *copy = NULL;
	uint64_t bound = UINT64_MAX;

	if (!cgroup || cgroup[0] != '/')
		return -EINVAL;
	copy = strdup(cgroup);
	if (!copy)
		return -ENOMEM;
	/* From the top: the first ancestor without it is the answer. */
	for (size_t l = 0; cgroup_next_ancestor(cgroup, &l);) {
		_cleanup_free_ char *buf = NULL;
		uint64_t v;
		size_t len;
		char save;

		save = copy[l];
		copy[l] = '\0';
		if (cgroup_file(cgroup_root_fd, copy, "memory.exec_protect", &buf, &len) < 0)
			return -ENOENT;
		if (exec_protect_is_off(buf)) {
			*ret_where = strdup(copy);
			return *ret_where ? 0 : -ENOMEM;
		}
		if (procfs_parse_limit(buf, len, &v) < 0)
			return -EINVAL;
		if (v < bound)
			bound = v;
		copy[l] = save;
	}
	*ret_bound = bound;
	return 1;
}

uint64_t read_cgroup_exec_usage(int cgroup_root_fd, const char *cgroup)
{
	return read_cgroup_key(cgroup_root_fd, cgroup, "memory.stat", "exec_protect_usage");
}
