/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "maps.h"
#include "procfs.h"
#include "residency.h"
#include "util.h"

#ifndef __NR_openat2
#define __NR_openat2 437
#endif

const char *residency_unlockable_kind(enum mapping_kind k)
{
	switch (k) {
	case MAPPING_FILE:
	case MAPPING_DELETED:
		return NULL;
	case MAPPING_MEMFD:
		return "memfd (shmem): not evicted like file text, not locked by this backend";
	case MAPPING_ANON:
		return "anonymous exec memory (JIT): no file to lock";
	case MAPPING_SPECIAL:
		return "kernel-provided area (vdso and similar): nothing to lock";
	}
	return "unknown mapping kind";
}

/* The path route: resolve without any symlink or magic link at all; the
 * paths in maps are already canonical, so a link means "something else". */
static int open_by_path(const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	fd = syscall(__NR_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	if (errno != ENOSYS)
		return -errno;
	/* Before 5.6: at least never follow the last component. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	return fd >= 0 ? (int)fd : -errno;
}

/* Whether fd is the file of mapping m as the kernel maps it. fstat() of a
 * file on overlayfs (containers, a live system's root) gives the overlay's
 * device and inode, while maps names the real file under it; mapping a
 * page of fd and asking the kernel what it mapped gives the same identity
 * maps gives, on any file system. */
static bool maps_as_mapping(int fd, const struct exec_mapping *m)
{
	struct file_identity id;
	long page = sysconf(_SC_PAGESIZE);
	void *p;
	int r;

	p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return false;
	r = maps_identity_at((uint64_t)(uintptr_t)p, &id);
	munmap(p, (size_t)page);
	return r >= 0 && id.dev_major == m->dev_major && id.dev_minor == m->dev_minor &&
	       id.inode == m->inode;
}

static int check_file(int fd, const struct exec_mapping *m, const char **ret_why)
{
	struct statfs sfs;
	struct stat st;

	if (fstat(fd, &st) < 0) {
		*ret_why = "fstat() failed";
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		*ret_why = "not a regular file";
		return -EBADF;
	}
	if ((major(st.st_dev) != m->dev_major || minor(st.st_dev) != m->dev_minor ||
	     (uint64_t)st.st_ino != m->inode) &&
	    !maps_as_mapping(fd, m)) {
		*ret_why = "device or inode differ from the mapping (file replaced?)";
		return -ESTALE;
	}
	if (fstatfs(fd, &sfs) < 0) {
		*ret_why = "fstatfs() failed";
		return -errno;
	}
	if (sfs.f_type == TMPFS_MAGIC || sfs.f_type == HUGETLBFS_MAGIC || sfs.f_type == RAMFS_MAGIC) {
		*ret_why = "on tmpfs/ramfs/hugetlbfs: shmem pages are swapped, not dropped; not locked";
		return -EMEDIUMTYPE;
	}
	return 0;
}

int residency_open(int proc_pid_fd, const struct exec_mapping *m, const char **ret_why)
{
	_cleanup_close_ int fd = -1;
	const char *why = NULL;
	char name[64];
	int r;

	*ret_why = NULL;
	why = residency_unlockable_kind(m->kind);
	if (why) {
		*ret_why = why;
		return -EMEDIUMTYPE;
	}

	snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, m->start, m->end);
	fd = openat(proc_pid_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0) {
		r = check_file(fd, m, &why);
		if (r >= 0)
			return TAKE_FD(fd);
		if (r == -EMEDIUMTYPE) {
			*ret_why = why;
			return r;
		}
		closep(&fd);
		fd = -1;
	}

	if (m->kind == MAPPING_DELETED || !m->path || m->path[0] != '/') {
		*ret_why = "map_files not available and the path no longer names the mapped file";
		return -ENOENT;
	}
	fd = open_by_path(m->path);
	if (fd < 0) {
		*ret_why = fd == -ELOOP ? "path contains a symlink: not followed" : "cannot open the path";
		return fd;
	}
	r = check_file(fd, m, &why);
	if (r < 0) {
		*ret_why = why;
		return r;
	}
	return TAKE_FD(fd);
}

int residency_open_path(const char *path)
{
	if (!path || path[0] != '/')
		return -EINVAL;
	return open_by_path(path);
}

int residency_map(int fd, uint64_t offset, uint64_t length, void **ret)
{
	void *p;

	if (length == 0 || length > SIZE_MAX || offset > (uint64_t)INT64_MAX)
		return -EINVAL;
	p = mmap(NULL, (size_t)length, PROT_READ, MAP_SHARED, fd, (off_t)offset);
	if (p == MAP_FAILED)
		return -errno;
	/* Not to be inherited or dumped; the pages are file cache anyway. */
	(void)madvise(p, (size_t)length, MADV_DONTFORK);
	(void)madvise(p, (size_t)length, MADV_DONTDUMP);
	*ret = p;
	return 0;
}

void residency_unmap(void *addr, uint64_t length)
{
	if (addr)
		(void)munmap(addr, (size_t)length);
}

int residency_mincore(void *addr, uint64_t length, unsigned char *vec)
{
	if (mincore(addr, (size_t)length, vec) < 0)
		return -errno;
	return 0;
}

/* The system calls themselves: AddressSanitizer replaces mlock() and
 * munlock() with no-ops, and the sanitizer builds run the same tests. */
int residency_lock(void *addr, uint64_t length)
{
	if (syscall(SYS_mlock, addr, (size_t)length) < 0)
		return -errno;
	return 0;
}

int residency_unlock(void *addr, uint64_t length)
{
	if (syscall(SYS_munlock, addr, (size_t)length) < 0)
		return -errno;
	return 0;
}

int residency_mem_total(int proc_fd, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_file_at(proc_fd, "meminfo", 1 << 20, &buf, &len);
	if (r < 0)
		return r;
	return procfs_field_kb(buf, len, "MemTotal", ret);
}
