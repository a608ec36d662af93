/* SPDX-License-Identifier: GPL-2.0-or-later */
/* residency_open() on real files, with a fake /proc/PID directory that has
 * no map_files, so that the path route and its checks run: dev/inode
 * compare, no symlink anywhere on the path, regular files only, the kinds
 * that are never locked. Then map, mincore, lock and unlock one page. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "residency.h"
#include "test.h"
#include "util.h"

static char dir[] = "/var/tmp/test-residency.XXXXXX";
static char file[256], fakeproc[256];
static struct stat st;
static bool on_tmpfs;

static struct exec_mapping mapping_for(const char *path, enum mapping_kind kind, uint64_t ino)
{
	return (struct exec_mapping){
		.start = 0x1000,
		.end = 0x2000,
		.inode = ino,
		.dev_major = major(st.st_dev),
		.dev_minor = minor(st.st_dev),
		.kind = kind,
		.path = (char *)path,
	};
}

static int try_open(const char *path, enum mapping_kind kind, uint64_t ino, const char **why)
{
	struct exec_mapping m = mapping_for(path, kind, ino);
	int pfd = open(fakeproc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = residency_open(pfd, &m, why);

	close(pfd);
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : fd;
}

static void test_path_route(void)
{
	const char *why;
	char link[300], sub[300], viasub[320];

	if (on_tmpfs) {
		CHECK_EQ_INT(try_open(file, MAPPING_FILE, st.st_ino, &why), -EMEDIUMTYPE);
		CHECK(why && strstr(why, "tmpfs"));
		return;
	}
	CHECK_EQ_INT(try_open(file, MAPPING_FILE, st.st_ino, &why), 0);
	/* Another inode at that path: not the mapped file. */
	CHECK_EQ_INT(try_open(file, MAPPING_FILE, st.st_ino + 1, &why), -ESTALE);
	CHECK(why && strstr(why, "inode"));
	/* A symlink as the last component, or on the way: never followed. */
	snprintf(link, sizeof(link), "%s/link", dir);
	CHECK(symlink(file, link) == 0);
	CHECK_EQ_INT(try_open(link, MAPPING_FILE, st.st_ino, &why), -ELOOP);
	CHECK(why && strstr(why, "symlink"));
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	CHECK(symlink(".", sub) == 0);
	snprintf(viasub, sizeof(viasub), "%s/sub/text", dir);
	CHECK_EQ_INT(try_open(viasub, MAPPING_FILE, st.st_ino, &why), -ELOOP);
	/* A directory with the right numbers is still not a file. */
	{
		struct stat ds;

		CHECK(stat(dir, &ds) == 0);
		CHECK(try_open(dir, MAPPING_FILE, ds.st_ino, &why) < 0);
	}
	unlink(link);
	unlink(sub);
}

static void test_kinds(void)
{
	const char *why;

	CHECK_EQ_INT(try_open("/memfd:x", MAPPING_MEMFD, 1, &why), -EMEDIUMTYPE);
	CHECK(why && strstr(why, "memfd"));
	CHECK_EQ_INT(try_open(NULL, MAPPING_ANON, 0, &why), -EMEDIUMTYPE);
	CHECK_EQ_INT(try_open("[vdso]", MAPPING_SPECIAL, 0, &why), -EMEDIUMTYPE);
	/* Deleted, and no map_files to reach it: the path is not it. */
	CHECK_EQ_INT(try_open(file, MAPPING_DELETED, st.st_ino, &why), -ENOENT);
	CHECK(why && strstr(why, "map_files"));
	CHECK(residency_unlockable_kind(MAPPING_FILE) == NULL);
	CHECK(residency_unlockable_kind(MAPPING_DELETED) == NULL);
}

static void test_map_lock(void)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec[2] = { 0xff, 0xff };
	void *p = NULL;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK_EQ_INT(residency_map(fd, 0, (uint64_t)page * 2, &p), 0);
	close(fd);
	CHECK(p != NULL);
	CHECK_EQ_INT(residency_mincore(p, (uint64_t)page * 2, vec), 0);
	/* The file was just written: its first page is cached. */
	CHECK(vec[0] & 1);
	CHECK_EQ_INT(residency_lock(p, (uint64_t)page), 0);
	CHECK_EQ_INT(residency_unlock(p, (uint64_t)page), 0);
	residency_unmap(p, (uint64_t)page * 2);
	CHECK_EQ_INT(residency_map(-1, 0, (uint64_t)page, &p), -EBADF);
}

static void setup(void)
{
	struct statfs sfs;
	char buf[8192] = { 1 };
	int fd;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(file, sizeof(file), "%s/text", dir);
	snprintf(fakeproc, sizeof(fakeproc), "%s/proc", dir);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fstat(fd, &st) < 0 ||
	    fstatfs(fd, &sfs) < 0 || mkdir(fakeproc, 0755) < 0) {
		perror("setup");
		exit(1);
	}
	on_tmpfs = sfs.f_type == 0x01021994;
	close(fd);
}

static void teardown(void)
{
	unlink(file);
	rmdir(fakeproc);
	rmdir(dir);
}

TEST_MAIN(setup, test_path_route, test_kinds, test_map_lock, teardown)
