/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "maps.h"
#include "test.h"
#include "util.h"

static void test_plain(void)
{
	const char *l = "7f1c2a000000-7f1c2a1b8000 r-xp 00028000 fe:01 1054   /usr/lib/x86_64-linux-gnu/libc.so.6\n";
	struct exec_mapping m;

	CHECK_EQ_INT(maps_parse_line(l, strlen(l), &m), 1);
	CHECK_EQ_INT(m.start, 0x7f1c2a000000ULL);
	CHECK_EQ_INT(m.end, 0x7f1c2a1b8000ULL);
	CHECK_EQ_INT(m.offset, 0x28000);
	CHECK_EQ_INT(m.dev_major, 0xfe);
	CHECK_EQ_INT(m.dev_minor, 1);
	CHECK_EQ_INT(m.inode, 1054);
	CHECK_EQ_INT(m.kind, MAPPING_FILE);
	CHECK_STREQ(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	free(m.path);
}

static void test_not_exec(void)
{
	const char *l = "55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]";
	struct exec_mapping m;

	CHECK_EQ_INT(maps_parse_line(l, strlen(l), &m), 0);
}

static void test_odd_paths(void)
{
	static const struct {
		const char *line;
		enum mapping_kind kind;
		const char *path;
	} cases[] = {
		{ "1000-2000 r-xp 00000000 08:01 42 /opt/my app/bin/with  two spaces", MAPPING_FILE,
		  "/opt/my app/bin/with  two spaces" },
		{ "1000-2000 r-xp 00000000 08:01 42 /tmp/new\\012line", MAPPING_FILE, "/tmp/new\nline" },
		{ "1000-2000 r-xp 00000000 08:01 42 /tmp/back\\slash", MAPPING_FILE, "/tmp/back\\slash" },
		{ "1000-2000 r-xp 00000000 08:01 42 /usr/bin/old (deleted)", MAPPING_DELETED, "/usr/bin/old" },
		{ "1000-2000 r-xp 00000000 00:01 7 /memfd:jit (deleted)", MAPPING_MEMFD, "/memfd:jit" },
		{ "1000-2000 r-xp 00000000 00:00 0 ", MAPPING_ANON, NULL },
		{ "1000-2000 rwxp 00000000 00:00 0", MAPPING_ANON, NULL },
		{ "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
		  MAPPING_SPECIAL, "[vsyscall]" },
		{ "1000-2000 r-xp 00000000 08:01 42 /odd/\xff\xfe/name", MAPPING_FILE, "/odd/\xff\xfe/name" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct exec_mapping m;

		CHECK_EQ_INT(maps_parse_line(cases[i].line, strlen(cases[i].line), &m), 1);
		CHECK_EQ_INT(m.kind, cases[i].kind);
		if (cases[i].path)
			CHECK_STREQ(m.path, cases[i].path);
		else
			CHECK(m.path == NULL);
		free(m.path);
	}
}

static void test_malformed(void)
{
	static const char *const bad[] = {
		"",
		"1000",
		"1000-",
		"zz00-2000 r-xp 00000000 08:01 42 /x",
		"2000-1000 r-xp 00000000 08:01 42 /x", /* end before start */
		"1000-2000 r-x",
		"1000-2000 r-xp 0000000g 08:01 42 /x",
		"1000-2000 r-xp 00000000 0801 42 /x",
		"1000-2000 r-xp 00000000 08:01 /x",
		"1000-2000 r?xp 00000000 08:01 42 /x",
		"1000-2000 r-xp 00000000 08:01 42/x",
		"10000000000000000000-2000 r-xp 00000000 08:01 42 /x",
	};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct exec_mapping m = { 0 };
		int r = maps_parse_line(bad[i], strlen(bad[i]), &m);

		if (r != -EINVAL && r != -ERANGE)
			fprintf(stderr, "case %zu: %s\n", i, bad[i]);
		CHECK(r == -EINVAL || r == -ERANGE);
	}
}

static void test_buffer(void)
{
	const char *buf =
		"55d0c0800000-55d0c0828000 r--p 00000000 08:01 100 /usr/bin/bash\n"
		"55d0c0828000-55d0c08f0000 r-xp 00028000 08:01 100 /usr/bin/bash\n"
		"7f0000000000-7f0000100000 r-xp 00000000 08:01 200 /usr/lib/libz.so.1\n"
		"7fff00000000-7fff00002000 r-xp 00000000 00:00 0                  [vdso]\n";
	struct exec_mappings ms = { 0 };

	CHECK_EQ_INT(maps_parse_buffer(buf, strlen(buf), &ms), 0);
	CHECK_EQ_INT(ms.n, 3);
	CHECK_EQ_INT(exec_mappings_file_bytes(&ms), (0x55d0c08f0000 - 0x55d0c0828000) + 0x100000);
	exec_mappings_clear(&ms);
	free(ms.items);
}

/* The same mappings through PROCMAP_QUERY and through the text. */
static void test_self_both_ways(void)
{
	struct exec_mappings a = { 0 }, b = { 0 };
	bool query = true, text = false;
	int fd = open("/proc/self", O_RDONLY | O_DIRECTORY);

	CHECK(fd >= 0);
	CHECK_EQ_INT(maps_read(fd, &query, &a), 0);
	CHECK_EQ_INT(maps_read(fd, &text, &b), 0);
	/* [vsyscall] is no VMA: the text lists it, the ioctl does not. */
	if (b.n && b.items[b.n - 1].kind == MAPPING_SPECIAL && streq_ptr(b.items[b.n - 1].path, "[vsyscall]"))
		free(b.items[--b.n].path);
	CHECK(a.n > 0);
	CHECK_EQ_INT(a.n, b.n);
	for (size_t i = 0; i < a.n && i < b.n; i++) {
		CHECK_EQ_INT(a.items[i].start, b.items[i].start);
		CHECK_EQ_INT(a.items[i].inode, b.items[i].inode);
		CHECK_EQ_INT(a.items[i].kind, b.items[i].kind);
		CHECK(streq_ptr(a.items[i].path, b.items[i].path));
	}
	fprintf(stderr, "PROCMAP_QUERY %s on this kernel\n", query ? "used" : "not available");
	exec_mappings_clear(&a);
	exec_mappings_clear(&b);
	free(a.items);
	free(b.items);
	close(fd);
}

/* A memfd mapped executable shows up as MAPPING_MEMFD both ways. */
static void test_memfd_live(void)
{
	int mfd = memfd_create("exec test", 0), fd;
	struct exec_mappings a = { 0 };
	bool query = true;
	void *p;
	bool found = false;

	CHECK(mfd >= 0);
	CHECK(ftruncate(mfd, 4096) == 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, mfd, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "exec mapping of a memfd refused here (noexec?), skipping that part\n");
		close(mfd);
		return;
	}
	fd = open("/proc/self", O_RDONLY | O_DIRECTORY);
	CHECK_EQ_INT(maps_read(fd, &query, &a), 0);
	for (size_t i = 0; i < a.n; i++)
		if (a.items[i].start == (uint64_t)(uintptr_t)p) {
			found = true;
			CHECK_EQ_INT(a.items[i].kind, MAPPING_MEMFD);
			CHECK_STREQ(a.items[i].path, "/memfd:exec test");
		}
	CHECK(found);
	exec_mappings_clear(&a);
	free(a.items);
	munmap(p, 4096);
	close(fd);
	close(mfd);
}

/* The identity of any mapping at an address, from text and live: the
 * lock backend's check for files on overlayfs. */
static void test_identity(void)
{
	const char *text = "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus-daemon\n"
			   "00651000-00652000 rw-p 00051000 08:02 173521 /usr/bin/dbus-daemon\n"
			   "7f0000000000-7f0000001000 r--s 00000000 00:2a 99 /data file\n";
	struct file_identity id = { 0 };
	struct stat st;
	void *p;
	int fd;

	CHECK_EQ_INT(maps_find_identity(text, strlen(text), 0x651000, &id), 0);
	CHECK(id.dev_major == 8 && id.dev_minor == 2 && id.inode == 173521);
	CHECK_EQ_INT(maps_find_identity(text, strlen(text), 0x7f0000000fff, &id), 0);
	CHECK(id.dev_major == 0 && id.dev_minor == 0x2a && id.inode == 99);
	CHECK_EQ_INT(maps_find_identity(text, strlen(text), 0x452000, &id), -ENOENT);
	CHECK_EQ_INT(maps_find_identity(text, strlen(text) - 1, 0x7f0000000000, &id), 0);
	CHECK_EQ_INT(maps_find_identity("garbage\n", 8, 0, &id), -EINVAL);

	/* Live: a file of ours, as fstat() sees it on a plain file system. */
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fstat(fd, &st) == 0);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED);
	CHECK_EQ_INT(maps_identity_at((uint64_t)(uintptr_t)p, &id), 0);
	CHECK_EQ_INT(id.inode, st.st_ino);
	CHECK_EQ_INT(maps_identity_at((uint64_t)(uintptr_t)p + 4096 * 1024 * 1024ULL, &id) < 0, 1);
	munmap(p, 4096);
	close(fd);
}

TEST_MAIN(test_plain, test_not_exec, test_odd_paths, test_malformed, test_buffer,
	  test_self_both_ways, test_memfd_live, test_identity)
