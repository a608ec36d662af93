/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
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
