/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <libmount.h>
#include <stdio.h>
#include <systemd/sd-login.h>

#include "cgroup.h"
#include "util.h"

static void tablep(struct libmnt_table **t)
{
	mnt_unref_table(*t);
}

static void iterp(struct libmnt_iter **i)
{
	mnt_free_iter(*i);
}

/* The target of the mount in mountinfo that matches: cgroup2 (the
 * unified location preferred, else the first), or the v1 hierarchy with
 * the memory controller among its super options. */
static int find_cgroup_mount(const char *mountinfo, bool v1_memory, char **ret_path)
{
	_cleanup_(tablep) struct libmnt_table *tb = NULL;
	_cleanup_(iterp) struct libmnt_iter *it = NULL;
	struct libmnt_fs *fs;
	_cleanup_free_ char *best = NULL;
	int r;

	tb = mnt_new_table();
	it = mnt_new_iter(MNT_ITER_FORWARD);
	if (!tb || !it)
		return -ENOMEM;
	r = mnt_table_parse_file(tb, mountinfo ?: "/proc/self/mountinfo");
	if (r < 0)
		return r;
	while (mnt_table_next_fs(tb, it, &fs) == 0) {
		const char *target = mnt_fs_get_target(fs);

		if (!target)
			continue;
		if (v1_memory) {
			const char *opts = mnt_fs_get_fs_options(fs);

			if (mnt_fs_match_fstype(fs, "cgroup") && opts &&
			    mnt_optstr_get_option(opts, "memory", NULL, NULL) == 0)
				return (*ret_path = strdup(target)) ? 0 : -ENOMEM;
			continue;
		}
		if (!mnt_fs_match_fstype(fs, "cgroup2"))
			continue;
		if (!best || streq(target, "/sys/fs/cgroup")) {
			free(best);
			best = strdup(target);
			if (!best)
				return -ENOMEM;
		}
	}
	if (!best)
		return -ENOENT;
	*ret_path = TAKE_PTR(best);
	return 0;
}

int cgroup2_find_mount(const char *mountinfo, char **ret_path)
{
	return find_cgroup_mount(mountinfo, false, ret_path);
}

int cgroup1_find_memory_mount(const char *mountinfo, char **ret_path)
{
	return find_cgroup_mount(mountinfo, true, ret_path);
}

int cgroup_find_proc_cgroup(const char *buf, size_t len, const char **ret, size_t *ret_len)
{
	const char *p = buf, *end = buf + len, *found = NULL;
	size_t found_len = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (l >= 3 && memcmp(p, "0::", 3) == 0) {
			if (found)
				return -EBADMSG;
			found = p + 3;
			found_len = l - 3;
		}
		p += l + 1;
	}
	if (!found)
		return -ENOENT;
	if (found_len == 0 || found[0] != '/' || memchr(found, '\0', found_len))
		return -EBADMSG;
	*ret = found;
	*ret_len = found_len;
	return 0;
}

int cgroup_parse_proc_cgroup(const char *buf, size_t len, char **ret_path)
{
	const char *found;
	size_t found_len;
	int r = cgroup_find_proc_cgroup(buf, len, &found, &found_len);

	if (r < 0)
		return r;
	*ret_path = memdup_str(found, found_len);
	return *ret_path ? 0 : -ENOMEM;
}

static bool has_unit_suffix(const char *name, size_t len)
{
	static const char *const types[] = { ".service", ".scope", ".socket", ".mount",
					     ".swap", ".target", ".timer", ".path", ".device" };

	for (size_t i = 0; i < ELEMENTSOF(types); i++) {
		size_t tl = strlen(types[i]);

		if (len > tl && memcmp(name + len - tl, types[i], tl) == 0)
			return true;
	}
	return false;
}

int cgroup_path_to_unit(const char *path, char **ret_unit)
{
	const char *p = path;

	for (;;) {
		size_t l;

		p += strspn(p, "/");
		if (!*p)
			return -ENXIO;
		l = strcspn(p, "/");
		if (l > 6 && memcmp(p + l - 6, ".slice", 6) == 0) {
			p += l;
			continue;
		}
		if (!has_unit_suffix(p, l))
			return -ENXIO;
		*ret_unit = memdup_str(p, l);
		return *ret_unit ? 0 : -ENOMEM;
	}
}

int cgroup_unit_of(pid_t pid, const char *cgroup_path, bool systemd, char **ret_unit)
{
	if (systemd) {
		int r = sd_pid_get_unit(pid, ret_unit);

		if (r >= 0 || r == -ESRCH)
			return r;
	}
	return cgroup_path_to_unit(cgroup_path, ret_unit);
}

bool cgroup_next_ancestor(const char *path, size_t *len)
{
	const char *p = path + *len;

	p += strspn(p, "/");
	if (!*p)
		return false;
	p += strcspn(p, "/");
	*len = (size_t)(p - path);
	return true;
}

int cgroup_relative(const char *cgroup_path, const char **ret)
{
	const char *p;

	if (cgroup_path[0] != '/')
		return -EINVAL;
	for (p = cgroup_path; *p;) {
		size_t l;

		p += strspn(p, "/");
		l = strcspn(p, "/");
		if ((l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		p += l;
	}
	p = cgroup_path + strspn(cgroup_path, "/");
	*ret = *p ? p : ".";
	return 0;
}

/* Appends the pids in rel/cgroup.procs, and of its children, to *pids. */
static int list_pids(int root_fd, const char *rel, unsigned depth, size_t max, pid_t **pids, size_t *n,
		     size_t *allocated)
{
	_cleanup_free_ char *buf = NULL;
	char path[4096];
	size_t len;
	DIR *d;
	int fd, r;

	if (depth > 8)
		return 0; /* a unit's delegated subtree deeper than this is not listed */
	if (snprintf(path, sizeof(path), "%s/cgroup.procs", rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = read_file_at(root_fd, path, 1 << 20, &buf, &len);
	if (r < 0)
		return r;
	for (char *p = buf, *end; p < buf + len && *n < max; p = end + 1) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v <= 0)
			continue;
		if (*n == *allocated) {
			size_t na = *allocated ? *allocated * 2 : 16;
			pid_t *np = reallocarray(*pids, na, sizeof(pid_t));

			if (!np)
				return -ENOMEM;
			*pids = np;
			*allocated = na;
		}
		(*pids)[(*n)++] = (pid_t)v;
	}
	fd = openat(root_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	for (struct dirent *de; *n < max && (de = readdir(d));) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", rel, de->d_name) >= (int)sizeof(path))
			continue;
		(void)list_pids(root_fd, path, depth + 1, max, pids, n, allocated);
	}
	closedir(d);
	return 0;
}

int cgroup_list_pids(int root_fd, const char *cgroup_path, size_t max, pid_t **ret_pids, size_t *ret_n)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, allocated = 0;
	const char *rel;
	int r;

	*ret_pids = NULL;
	*ret_n = 0;
	r = cgroup_relative(cgroup_path, &rel);
	if (r < 0)
		return r;
	r = list_pids(root_fd, rel, 0, max, &pids, &n, &allocated);
	if (r < 0)
		return r;
	*ret_pids = TAKE_PTR(pids);
	*ret_n = n;
	return 0;
}

char *cgroup_unit_root(const char *cgroup, const char *unit)
{
	size_t ul = strlen(unit);

	for (const char *p = cgroup; (p = strstr(p, unit)); p++)
		if (p > cgroup && p[-1] == '/' && (p[ul] == '/' || p[ul] == '\0'))
			return strndup(cgroup, (size_t)(p - cgroup) + ul);
	return strdup(cgroup);
}
