/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "meminfo.h"
#include "procfs.h"
#include "util.h"

/* Each line of buf in turn: [p, le). */
#define FOR_EACH_LINE(p, le, buf, len)                                                    \
	for (const char *p = (buf), *le_end_ = (buf) + (len), *le = NULL; p < le_end_ &&     \
	     ((le = memchr(p, '\n', (size_t)(le_end_ - p))) || (le = le_end_));            \
	     p = le + 1)

int memlimit_parse(const char *buf, size_t len, uint64_t *ret)
{
	return procfs_parse_limit(buf, len, ret);
}

uint64_t mem_headroom(uint64_t limit, uint64_t current, uint64_t reclaimable_file)
{
	uint64_t room;

	if (limit == UINT64_MAX)
		return UINT64_MAX;
	room = limit > current ? limit - current : 0;
	return room > UINT64_MAX - reclaimable_file ? UINT64_MAX - 1 : room + reclaimable_file;
}

static int read_at(int dirfd, const char *path, char **ret, size_t *ret_len)
{
	return read_file_at(dirfd, path, 1 << 16, ret, ret_len);
}

int meminfo_available(int proc_fd, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_at(proc_fd, "meminfo", &buf, &len);
	if (r < 0)
		return r;
	return procfs_field_kb(buf, len, "MemAvailable", ret);
}

static int read_u64_at(int dirfd, const char *path, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_at(dirfd, path, &buf, &len);
	if (r < 0)
		return r;
	return memlimit_parse(buf, len, ret);
}

static int stat_file(int dirfd, const char *path, const char *k1, const char *k2, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	uint64_t a = 0, b = 0;
	size_t len = 0;
	int r;

	r = read_at(dirfd, path, &buf, &len);
	if (r < 0)
		return r;
	r = procfs_field_u64(buf, len, k1, ' ', &a);
	if (r >= 0)
		r = procfs_field_u64(buf, len, k2, ' ', &b);
	if (r < 0)
		return r;
	*ret = a + b;
	return 0;
}

int memcg2_room(int root_fd, const char *rel, uint64_t mem_total, struct memcg_room *ret)
{
	struct memcg_room best = { UINT64_MAX, UINT64_MAX };

	/* Each level below the root, down to the cgroup. */
	for (size_t l = 0; cgroup_next_ancestor(rel, &l);) {
		_cleanup_free_ char *path = strndup(rel, l);
		_cleanup_close_ int fd = -1;
		uint64_t max = UINT64_MAX, high = UINT64_MAX, cur, file, limit;

		if (!path)
			return -ENOMEM;
		fd = openat(root_fd, path + strspn(path, "/"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		(void)read_u64_at(fd, "memory.max", &max);
		(void)read_u64_at(fd, "memory.high", &high);
		limit = max < high ? max : high;
		if (limit < mem_total && read_u64_at(fd, "memory.current", &cur) >= 0 &&
		    stat_file(fd, "memory.stat", "active_file", "inactive_file", &file) >= 0) {
			uint64_t h = mem_headroom(limit, cur, file);

			if (h < best.headroom) {
				best.headroom = h;
				best.limit = limit;
			}
		}
	}
	*ret = best;
	return 0;
}

int memcg1_room(const char *dir, uint64_t mem_total, struct memcg_room *ret)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	uint64_t limit, cur, a, b;
	size_t len = 0;
	int r;

	*ret = (struct memcg_room){ UINT64_MAX, UINT64_MAX };
	if (fd < 0)
		return -errno;
	r = read_at(fd, "memory.stat", &buf, &len);
	if (r < 0)
		return r;
	if (procfs_field_u64(buf, len, "hierarchical_memory_limit", ' ', &limit) < 0 || limit >= mem_total)
		return 0;
	if (procfs_field_u64(buf, len, "total_active_file", ' ', &a) < 0 ||
	    procfs_field_u64(buf, len, "total_inactive_file", ' ', &b) < 0)
		return -EINVAL;
	r = read_u64_at(fd, "memory.usage_in_bytes", &cur);
	if (r < 0)
		return r;
	ret->headroom = mem_headroom(limit, cur, a + b);
	ret->limit = limit;
	return 0;
}

int memcg1_parse_cgroup(const char *buf, size_t len, char **ret)
{
	FOR_EACH_LINE(p, le, buf, len) {
		/* "4:memory:/path"; the controller list may hold several. */
		const char *c1 = memchr(p, ':', (size_t)(le - p)), *c2;
		const char *s;

		if (!c1)
			continue;
		c2 = memchr(c1 + 1, ':', (size_t)(le - c1 - 1));
		if (!c2)
			continue;
		for (s = c1 + 1; s < c2;) {
			const char *e = memchr(s, ',', (size_t)(c2 - s));

			if (!e)
				e = c2;
			if (e - s == 6 && memcmp(s, "memory", 6) == 0) {
				*ret = memdup_str(c2 + 1, (size_t)(le - c2 - 1));
				return *ret ? 0 : -ENOMEM;
			}
			s = e + 1;
		}
	}
	return -ENOENT;
}

int memcg1_dir_of(int proc_pid_fd, char **ret)
{
	_cleanup_free_ char *cg = NULL, *mnt = NULL, *rel = NULL;
	size_t cl = 0;
	int r;

	r = cgroup1_find_memory_mount(NULL, &mnt);
	if (r < 0)
		return r;
	r = read_at(proc_pid_fd, "cgroup", &cg, &cl);
	if (r < 0)
		return r;
	r = memcg1_parse_cgroup(cg, cl, &rel);
	if (r < 0)
		return r;
	if (asprintf(ret, "%s%s", mnt, streq(rel, "/") ? "" : rel) < 0)
		return -ENOMEM;
	return 0;
}
