/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small helpers shared by every execguard module: cleanup attributes,
 * string comparison, bounded reads of /proc-style files. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand an owned pointer or fd out of a _cleanup_ variable. */
#define TAKE_PTR(p)                        \
	({                                 \
		__typeof__(p) _tmp_ = (p); \
		(p) = NULL;                \
		_tmp_;                     \
	})
#define TAKE_FD(fd)                 \
	({                          \
		int _tmp_ = (fd);   \
		(fd) = -1;          \
		_tmp_;              \
	})

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static inline const char *strempty(const char *s)
{
	return s ? s : "";
}

static inline const char *strna(const char *s)
{
	return s ? s : "n/a";
}

/* Read all of fd into a NUL terminated heap buffer, at most max_size. */
int read_fd(int fd, size_t max_size, char **ret_buf, size_t *ret_len);

/* Read a whole (small, /proc or /sys) file relative to dirfd into a NUL
 * terminated heap buffer. At most max_size bytes; -EFBIG beyond. */
int read_file_at(int dirfd, const char *path, size_t max_size, char **ret_buf, size_t *ret_len);

/* Write a short string to a file relative to dirfd, without O_CREAT. */
int write_file_at(int dirfd, const char *path, const char *value);

/* Replace path with buf atomically: a hidden temporary file in the same
 * directory (".NAME.XXXXXX", so that readers globbing *.prom skip it),
 * fsync'ed, given mode, renamed over path. */
int write_file_atomic(const char *path, const char *buf, size_t len, mode_t mode);

/* A fresh DIR stream over the directory dirfd names (its own fd, so
 * the caller's stays open and unmoved). */
int opendir_at(int dirfd, DIR **ret);

/* Parse "yes/no/true/false/1/0/on/off". Returns 1, 0 or -EINVAL. */
int parse_boolean(const char *s);

/* Monotonic clock in nanoseconds (same base as proc connector timestamps). */
unsigned long long now_ns(void);

/* Names (cgroups, units, executables) are bytes; D-Bus strings must be
 * UTF-8. NULL when s is valid UTF-8 without control characters (use it
 * as it is), else a copy in which every byte of an invalid sequence and
 * every control character is written \xNN (as systemd escapes unit
 * names); *ret_err -ENOMEM when that copy could not be made. */
char *utf8_escape_invalid(const char *s, int *ret_err);
/* The same for messages of several lines: newlines and tabs are kept. */
char *utf8_escape_invalid_text(const char *s, int *ret_err);

/* The offset of the first byte of buf[0..len) that is not part of valid
 * UTF-8 (overlong forms and surrogates included), len when all is. */
size_t utf8_invalid_at(const char *buf, size_t len);

/* The text of errno e (either sign), thread-safe (strerror() is not),
 * in a buffer that lives as long as the statement: for messages that are
 * not logged with %m (log_*_errno()), such as a policy error's text. */
#define STRERROR(e) strerror_r(abs(e), (char[128]){}, 128)

/* "12.0M", "512B": bytes with a binary suffix, for messages. */
void format_bytes(char *buf, size_t size, uint64_t v);

/* The n bytes at p as a string: for parsers over buffers that need not
 * end in a NUL (strndup() may look past n for one). NULL on ENOMEM. */
char *memdup_str(const char *p, size_t n);
