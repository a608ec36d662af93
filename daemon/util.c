/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <strings.h>
#include <time.h>

#include "util.h"

int read_fd(int fd, size_t max_size, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 4096, len = 0;

	buf = malloc(size + 1);
	if (!buf)
		return -ENOMEM;

	for (;;) {
		ssize_t n;

		if (len == size) {
			char *nbuf;

			if (size >= max_size)
				return -EFBIG;
			size = size * 2 > max_size ? max_size : size * 2;
			nbuf = realloc(buf, size + 1);
			if (!nbuf)
				return -ENOMEM;
			buf = nbuf;
		}
		n = read(fd, buf + len, size - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int read_file_at(int dirfd, const char *path, size_t max_size, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return read_fd(fd, max_size, ret_buf, ret_len);
}

int write_file_at(int dirfd, const char *path, const char *value)
{
	_cleanup_close_ int fd = -1;
	size_t len = strlen(value);
	struct stat st;
	ssize_t n;

	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	/* pwrite: the same for cgroup files, and a syscall tests can fail
	 * on its own (strace --inject) without touching the log's write(). */
	n = pwrite(fd, value, len, 0);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	/* A test's tree of plain files: "0" over "max" must not leave "0ax".
	 * cgroupfs files show size 0 and are never cut; only after a
	 * successful write, so that a failed one changes nothing. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > (off_t)len &&
	    ftruncate(fd, (off_t)len) < 0)
		return -errno;
	return 0;
}

int parse_boolean(const char *s)
{
	static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
	static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

	for (size_t i = 0; i < ELEMENTSOF(yes); i++)
		if (strcasecmp(s, yes[i]) == 0)
			return 1;
	for (size_t i = 0; i < ELEMENTSOF(no); i++)
		if (strcasecmp(s, no[i]) == 0)
			return 0;
	return -EINVAL;
}

unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

int opendir_at(int dirfd, DIR **ret)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int r = -errno;

		close(fd);
		return r;
	}
	*ret = d;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (1-4), 0 when invalid:
 * overlong forms, surrogates and code points past U+10FFFF included. */
static size_t utf8_sequence_len(const unsigned char *p)
{
	uint32_t cp;
	size_t n, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0; /* also stops at the terminating NUL */
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

size_t utf8_invalid_at(const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = 0;

	while (i < len) {
		unsigned char seq[4] = { 0 };
		size_t n = len - i < 4 ? len - i : 4, l;

		/* A copy ends in NULs, so a sequence cut by the end fails. */
		memcpy(seq, p + i, n);
		l = p[i] ? utf8_sequence_len(seq) : 1;
		if (l == 0 || l > n)
			return i;
		i += l;
	}
	return len;
}

static bool needs_escape(const unsigned char *p, bool text, size_t *len)
{
	*len = utf8_sequence_len(p);
	if (text && (*p == '\n' || *p == '\t'))
		return false;
	return *len == 0 || (*len == 1 && (*p < 0x20 || *p == 0x7f));
}

static char *escape(const char *s, bool text, int *ret_err)
{
	const unsigned char *p;
	size_t len, extra = 0;
	char *out, *o;

	*ret_err = 0;
	if (!s)
		return NULL;
	for (p = (const unsigned char *)s; *p; p += len ? len : 1)
		if (needs_escape(p, text, &len))
			extra += 3;
	if (!extra)
		return NULL;
	out = malloc(strlen(s) + extra + 1);
	if (!out) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	o = out;
	for (p = (const unsigned char *)s; *p;) {
		if (needs_escape(p, text, &len)) {
			o += sprintf(o, "\\x%02x", *p);
			p++;
			continue;
		}
		memcpy(o, p, len);
		o += len;
		p += len;
	}
	*o = '\0';
	return out;
}

char *utf8_escape_invalid(const char *s, int *ret_err)
{
	return escape(s, false, ret_err);
}

char *utf8_escape_invalid_text(const char *s, int *ret_err)
{
	return escape(s, true, ret_err);
}

void format_bytes(char *buf, size_t size, uint64_t v)
{
	static const char *const suffix[] = { "B", "K", "M", "G", "T" };
	size_t i = 0;
	double d = (double)v;

	while (d >= 1024 && i < ELEMENTSOF(suffix) - 1) {
		d /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, size, "%" PRIu64 "B", v);
	else
		snprintf(buf, size, "%.1f%s", d, suffix[i]);
}

char *memdup_str(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

int write_file_atomic(const char *path, const char *buf, size_t len, mode_t mode)
{
	_cleanup_free_ char *tmp = NULL;
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path + 1) : 0, fd, r = 0;

	if (!*path || (slash && !slash[1]))
		return -EINVAL;
	if (asprintf(&tmp, "%.*s.%s.XXXXXX", dirlen, path, slash ? slash + 1 : path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < len && r == 0;) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	/* mkostemp makes 0600; readers such as node_exporter run as another user. */
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		(void)unlink(tmp);
	return r;
}
