/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Thin I/O wrappers of the lock backend: open the file behind an exec
 * mapping without being fooled by a replaced path or a link, map a file
 * range read-only, ask which pages are resident, lock and unlock runs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "maps.h"

/* Why a mapping is never lockable this way, or NULL when it may be:
 * memfd/shmem, anonymous exec memory, kernel areas. */
const char *residency_unlockable_kind(enum mapping_kind k);

/* Open the file mapped at m in the process whose /proc directory is
 * proc_pid_fd. First /proc/PID/map_files/START-END (the very file the
 * process maps, also when it was deleted or replaced), else by path
 * without following any symlink. Either way the result must be a regular
 * file with the mapping's device and inode. Returns an O_RDONLY fd, or a
 * negative errno with a static reason in *ret_why. -EMEDIUMTYPE means the
 * file is on a file system whose pages are not locked this way (tmpfs,
 * hugetlbfs): reason given. */
int residency_open(int proc_pid_fd, const struct exec_mapping *m, const char **ret_why);

/* Open a regular file by its absolute path without following any
 * symlink (openat2 RESOLVE_NO_SYMLINKS; before 5.6 at least not the last
 * component). O_RDONLY; the caller checks what it opened. */
int residency_open_path(const char *path);

/* Map [offset, offset + length) of fd read-only and shared. */
int residency_map(int fd, uint64_t offset, uint64_t length, void **ret);
void residency_unmap(void *addr, uint64_t length);

/* vec must hold length / page_size bytes. */
int residency_mincore(void *addr, uint64_t length, unsigned char *vec);

int residency_lock(void *addr, uint64_t length);
int residency_unlock(void *addr, uint64_t length);

/* MemTotal of the proc root proc_fd's meminfo, in bytes. */
int residency_mem_total(int proc_fd, uint64_t *ret);
