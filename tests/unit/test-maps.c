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

/* A library as ld.so maps it (-z separate-code: r--, r-x, r--, relro r--,
 * rw-), a data file, anonymous memory and kernel areas. */
static const char images_text[] =
	"55d0c0800000-55d0c0828000 r--p 00000000 08:01 100 /usr/bin/bash\n"
	"55d0c0828000-55d0c08f0000 r-xp 00028000 08:01 100 /usr/bin/bash\n"
	"55d0c08f0000-55d0c0920000 r--p 000f0000 08:01 100 /usr/bin/bash\n"
	"55d0c0920000-55d0c0924000 r--p 0011f000 08:01 100 /usr/bin/bash\n"
	"55d0c0924000-55d0c092d000 rw-p 00123000 08:01 100 /usr/bin/bash\n"
	"55d0c092d000-55d0c0938000 rw-p 00000000 00:00 0 \n"
	"55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                  [heap]\n"
	"7f0000000000-7f0000028000 r--p 00000000 08:01 300 /usr/lib/locale/locale-archive\n"
	"7f1000000000-7f1000002000 rw-s 00000000 08:01 301 /var/lib/app/data.db\n"
	"7f2000000000-7f2000001000 r--p 00000000 08:01 200 /usr/lib/libz.so.1\n"
	"7f2000001000-7f2000010000 r-xp 00001000 08:01 200 /usr/lib/libz.so.1\n"
	"7f2000010000-7f2000012000 r--p 00010000 08:01 200 /usr/lib/libz.so.1\n"
	"7f2000012000-7f2000013000 rw-p 00011000 08:01 200 /usr/lib/libz.so.1\n"
	/* Same inode on another device: another file, not mapped executable. */
	"7f3000000000-7f3000001000 r--p 00000000 08:02 200 /mnt/other\n"
	"7f4000000000-7f4000001000 rwxp 00000000 00:00 0 \n"
	"7fff00000000-7fff00002000 r-xp 00000000 00:00 0                  [vdso]\n"
	"7fff00002000-7fff00004000 r--p 00000000 00:00 0                  [vvar]\n";

static void test_images(void)
{
	struct exec_mappings ms = { 0 };
	char prot[5];

	CHECK_EQ_INT(maps_parse_buffer_select(images_text, strlen(images_text), MAPS_IMAGES, &ms), 0);
	/* bash's 5, libz's 4, the anonymous rwx and [vdso]. */
	CHECK_EQ_INT(ms.n, 11);
	for (size_t i = 0; i < ms.n; i++) {
		const struct exec_mapping *m = &ms.items[i];

		CHECK(m->inode == 100 || m->inode == 200 || (m->prot & MAP_PROT_X));
		CHECK(m->inode != 200 || m->dev_minor == 1);
		CHECK(!m->path || (!strstr(m->path, "locale") && !strstr(m->path, "data.db")));
	}
	CHECK_EQ_INT(ms.items[0].prot, MAP_PROT_R);
	CHECK_STREQ(map_prot_string(ms.items[1].prot, prot), "r-xp");
	CHECK_STREQ(map_prot_string(ms.items[4].prot, prot), "rw-p");
	CHECK_EQ_INT(ms.items[4].offset, 0x123000);
	/* Only executable mappings count as text. */
	CHECK_EQ_INT(exec_mappings_file_bytes(&ms), (0x55d0c08f0000 - 0x55d0c0828000) + 0xf000);
	exec_mappings_clear(&ms);

	CHECK_EQ_INT(maps_parse_buffer_select(images_text, strlen(images_text), MAPS_FILES, &ms), 0);
	/* Every mapping with a path: bash 5, locale, data.db, libz 4, other. */
	CHECK_EQ_INT(ms.n, 12);
	CHECK_STREQ(map_prot_string(ms.items[6].prot, prot), "rw-s");
	exec_mappings_clear(&ms);

	CHECK_EQ_INT(maps_parse_buffer_select(images_text, strlen(images_text), MAPS_EXEC, &ms), 0);
	CHECK_EQ_INT(ms.n, 4);
	exec_mappings_clear(&ms);

	/* Appending to what is there selects only among the new lines. */
	CHECK_EQ_INT(maps_parse_buffer_select(images_text, strlen(images_text), MAPS_FILES, &ms), 0);
	CHECK_EQ_INT(maps_parse_buffer_select(images_text, strlen(images_text), MAPS_IMAGES, &ms), 0);
	CHECK_EQ_INT(ms.n, 12 + 11);
	exec_mappings_clear(&ms);
	free(ms.items);
}

/* Mapped executable once, every other mapping of that file joins. */
static void test_select_images_table(void)
{
	static const struct {
		unsigned prot;
		uint64_t ino;
		uint32_t minor;
		enum mapping_kind kind;
		bool keep;
	} rows[] = {
		{ MAP_PROT_R, 7, 1, MAPPING_FILE, true },
		{ MAP_PROT_R | MAP_PROT_X, 7, 1, MAPPING_FILE, true },
		{ MAP_PROT_R, 7, 2, MAPPING_FILE, false },   /* other device */
		{ MAP_PROT_R, 8, 1, MAPPING_FILE, false },   /* data file */
		{ MAP_PROT_R | MAP_PROT_W, 9, 1, MAPPING_DELETED, true },
		{ MAP_PROT_X, 9, 1, MAPPING_DELETED, true }, /* deleted image */
		{ MAP_PROT_R, 10, 0, MAPPING_MEMFD, false }, /* shmem: not an image */
		{ MAP_PROT_X, 10, 0, MAPPING_MEMFD, true },  /* kept for the report */
	};
	struct exec_mappings ms = { 0 };
	size_t k = 0;

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		struct exec_mapping m = {
			.start = i * 0x1000, .end = i * 0x1000 + 0x1000, .inode = rows[i].ino,
			.dev_major = 8, .dev_minor = rows[i].minor, .kind = rows[i].kind, .prot = rows[i].prot,
			.path = strdup("/x"),
		};

		CHECK_EQ_INT(exec_mappings_append(&ms, &m), 0);
	}
	exec_mappings_select_images(&ms);
	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		if (!rows[i].keep)
			continue;
		CHECK(k < ms.n);
		if (k < ms.n)
			CHECK_EQ_INT(ms.items[k].start, i * 0x1000);
		k++;
	}
	CHECK_EQ_INT(ms.n, k);
	exec_mappings_clear(&ms);
	free(ms.items);
}

/* This test's own images: its libc is several mappings, all of them
 * taken; no data-only file sneaks in. Whole images are read from the
 * text whatever the caller's PROCMAP_QUERY setting, which stays. */
static void test_self_images(void)
{
	struct exec_mappings a = { 0 }, b = { 0 };
	bool query = true, text = false;
	int fd = open("/proc/self", O_RDONLY | O_DIRECTORY);
	int data = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	void *p, *dp;
	size_t libc = 0, libc_x = 0;
	bool saw_data = false;
	int dfd;
	char tmpl[] = "/var/tmp/test-maps-XXXXXX";

	/* A file mapped for data only, beside. */
	dfd = mkstemp(tmpl);
	CHECK(dfd >= 0 && ftruncate(dfd, 8192) == 0);
	unlink(tmpl);
	dp = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, dfd, 0);
	CHECK(dp != MAP_FAILED);
	/* Our own executable mapped once more, read-only: part of its
	 * image, as any mapping of a file mapped executable. */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, data, 0);
	CHECK(p != MAP_FAILED);

	CHECK_EQ_INT(maps_read_select(fd, &query, MAPS_IMAGES, &a), 0);
	CHECK(query);
	CHECK_EQ_INT(maps_read_select(fd, &text, MAPS_IMAGES, &b), 0);
	CHECK_EQ_INT(a.n, b.n);
	for (size_t i = 0; i < a.n && i < b.n; i++) {
		CHECK_EQ_INT(a.items[i].start, b.items[i].start);
		CHECK_EQ_INT(a.items[i].prot, b.items[i].prot);
		CHECK_EQ_INT(a.items[i].inode, b.items[i].inode);
		CHECK(streq_ptr(a.items[i].path, b.items[i].path));
	}
	for (size_t i = 0; i < a.n; i++) {
		if (a.items[i].start == (uint64_t)(uintptr_t)dp)
			saw_data = true;
		if (a.items[i].path && strstr(a.items[i].path, "/libc.so")) {
			libc++;
			libc_x += !!(a.items[i].prot & MAP_PROT_X);
		}
	}
	CHECK(!saw_data);
	/* Our own executable is mapped executable: the extra read-only
	 * shared mapping of it made above is part of its image. */
	{
		bool saw_extra = false;

		for (size_t i = 0; i < a.n; i++)
			saw_extra |= a.items[i].start == (uint64_t)(uintptr_t)p;
		CHECK(saw_extra);
	}
	fprintf(stderr, "libc: %zu mappings, %zu executable\n", libc, libc_x);
	CHECK(libc_x == 1 && libc >= 2);
	exec_mappings_clear(&a);
	exec_mappings_clear(&b);
	free(a.items);
	free(b.items);
	munmap(dp, 8192);
	munmap(p, 4096);
	close(dfd);
	close(data);
	close(fd);
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

TEST_MAIN(test_plain, test_not_exec, test_odd_paths, test_malformed, test_buffer, test_images,
	  test_select_images_table, test_self_images, test_self_both_ways, test_memfd_live, test_identity)
