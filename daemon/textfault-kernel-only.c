/* SPDX-License-Identifier: GPL-2.0-or-later */
/* TEMPORARY stand-in for textfault.c (owned by the text-faults work of
 * issue 14, part 1), so that Protect=auto builds and runs before that is
 * merged: only the patched kernel's counter, memory.stat pgmajfault_exec;
 * -ENODATA on every other kernel (no estimate here). Dropped at merge. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>

#include "cgroup.h"
#include "procfs.h"
#include "textfault.h"
#include "util.h"

struct text_faults {
	int cgroup_root_fd;
};

int text_faults_new(int cgroup_root_fd, int proc_fd, struct text_faults **ret)
{
	struct text_faults *tf = calloc(1, sizeof(*tf));

	(void)proc_fd;
	if (!tf)
		return -ENOMEM;
	tf->cgroup_root_fd = cgroup_root_fd;
	*ret = tf;
	return 0;
}

struct text_faults *text_faults_free(struct text_faults *tf)
{
	free(tf);
	return NULL;
}

int text_faults_read(struct text_faults *tf, const char *key, const char *cgroup, struct text_fault_reading *ret)
{
	_cleanup_free_ char *buf = NULL;
	const char *rel;
	char path[4096];
	size_t len;
	uint64_t v;
	int r;

	(void)key;
	if (!cgroup || cgroup_relative(cgroup, &rel) < 0)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/memory.stat", rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = read_file_at(tf->cgroup_root_fd, path, 1 << 16, &buf, &len);
	if (r == -ENOENT) {
		/* No cgroup, or a cgroup without the memory controller. */
		snprintf(path, sizeof(path), "%s", rel[0] ? rel : ".");
		return faccessat(tf->cgroup_root_fd, path, F_OK, 0) < 0 ? -ENOENT : -ENODATA;
	}
	if (r < 0)
		return r;
	if (procfs_field_u64(buf, len, "pgmajfault_exec", ' ', &v) < 0)
		return -ENODATA; /* a stock kernel: the estimate is textfault.c's */
	*ret = (struct text_fault_reading){
		.faults = v,
		.source = TEXT_FAULTS_KERNEL,
		.at_usec = now_ns() / 1000,
	};
	return 0;
}

void text_faults_forget(struct text_faults *tf, const char *key)
{
	(void)tf;
	(void)key;
}

const char *text_fault_source_to_string(enum text_fault_source s)
{
	return s == TEXT_FAULTS_KERNEL ? "kernel" : s == TEXT_FAULTS_ESTIMATE ? "estimate" : "invalid";
}
