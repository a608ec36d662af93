/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguardctl segments' pure parts: which files a set of processes maps
 * (each counted once per process, an image when one mapping of it is
 * executable) and each segment's resident bytes from a mincore() vector. */
#include "segments.h"
#include "test.h"
#include "util.h"

static const char maps_a[] =
	"1000-2000 r--p 00000000 08:01 10 /usr/lib/libc.so.6\n"
	"2000-5000 r-xp 00001000 08:01 10 /usr/lib/libc.so.6\n"
	"5000-6000 rw-p 00004000 08:01 10 /usr/lib/libc.so.6\n"
	"7000-8000 r--p 00000000 08:01 20 /usr/lib/locale/locale-archive\n"
	"9000-a000 rw-p 00000000 00:00 0 \n"
	"b000-c000 r-xp 00000000 00:00 0                  [vdso]\n";
static const char maps_b[] =
	"1000-4000 r-xp 00000000 08:01 10 /usr/lib/libc.so.6\n"
	"4000-5000 r--p 00000000 08:01 10 /usr/lib/libc.so.6\n"
	"7000-8000 r--s 00000000 08:01 30 /var/lib/db\n";

static void add(struct seg_files *f, pid_t pid, const char *text)
{
	struct exec_mappings m = { 0 };

	CHECK_EQ_INT(maps_parse_buffer_select(text, strlen(text), MAPS_FILES, &m), 0);
	CHECK_EQ_INT(seg_files_add_process(f, pid, &m), 0);
	exec_mappings_clear(&m);
	free(m.items);
}

static void test_aggregate(void)
{
	_cleanup_(seg_files_done) struct seg_files f = { 0 };
	struct seg_totals t;

	add(&f, 1, maps_a);
	add(&f, 2, maps_b);
	CHECK_EQ_INT(f.n, 3);
	seg_files_sort(&f);
	/* The image first, then data by path. */
	CHECK_STREQ(f.items[0].path, "/usr/lib/libc.so.6");
	CHECK(f.items[0].executable && f.items[0].n_pids == 2);
	CHECK_EQ_INT(f.items[0].prot, MAP_PROT_R | MAP_PROT_W | MAP_PROT_X);
	CHECK_EQ_INT(f.items[0].where_pid, 1);
	CHECK_STREQ(f.items[1].path, "/usr/lib/locale/locale-archive");
	CHECK(!f.items[1].executable && f.items[1].n_pids == 1);
	CHECK_STREQ(f.items[2].path, "/var/lib/db");
	CHECK_EQ_INT(f.items[2].prot, MAP_PROT_R | MAP_PROT_SHARED);
	/* Nothing measured yet: all count as errors. */
	seg_files_totals(&f, &t);
	CHECK_EQ_INT(t.n_errors, 3);
	/* A third process after sorting still counts once per file. */
	add(&f, 3, maps_b);
	CHECK_EQ_INT(f.items[0].n_pids, 3);
	CHECK_EQ_INT(f.items[2].n_pids, 2);
}

static void test_count(void)
{
	struct seg_file f = { .executable = true };
	struct seg_files fs = { .items = &f, .n = 1 };
	struct elf_image img = {
		.n_segments = 3,
		.segments = {
			{ .offset = 0, .filesz = 0x2000, .flags = ELF_SEG_R },
			{ .offset = 0x2000, .filesz = 0x3000, .flags = ELF_SEG_R | ELF_SEG_X },
			{ .offset = 0x5800, .filesz = 0x1000, .flags = ELF_SEG_R | ELF_SEG_W, .relro = true },
		},
	};
	/* 7 pages; the last one (past 0x6800) is cut by the file end. */
	unsigned char vec[7] = { 1, 0, 1, 1, 0, 1, 0 };
	struct seg_totals t;

	seg_file_count(&f, &img, 0, vec, 0x6900, 4096);
	CHECK(f.measured);
	CHECK_EQ_INT(f.file_size, 0x6900);
	CHECK_EQ_INT(f.size, 7 * 4096);
	CHECK_EQ_INT(f.resident, 4 * 4096);
	CHECK_EQ_INT(f.n_segments, 3);
	CHECK_EQ_INT(f.segments[0].size, 0x2000);
	CHECK_EQ_INT(f.segments[0].resident, 0x1000);
	CHECK_EQ_INT(f.segments[1].offset, 0x2000);
	CHECK_EQ_INT(f.segments[1].resident, 0x2000);
	/* 0x5800..0x6800: pages 5 and 6. */
	CHECK_EQ_INT(f.segments[2].offset, 0x5000);
	CHECK_EQ_INT(f.segments[2].size, 0x2000);
	CHECK_EQ_INT(f.segments[2].resident, 0x1000);
	CHECK(f.segments[2].relro);
	seg_files_totals(&fs, &t);
	CHECK_EQ_INT(t.n_images, 1);
	CHECK_EQ_INT(t.size[ELF_SEG_R], 0x2000);
	CHECK_EQ_INT(t.resident[ELF_SEG_R | ELF_SEG_X], 0x2000);
	CHECK_EQ_INT(t.size[ELF_SEG_R | ELF_SEG_W], 0x2000);

	/* Not ELF: no segments, a data file in the totals. */
	seg_file_count(&f, &img, -ENOEXEC, vec, 0x6900, 4096);
	CHECK_EQ_INT(f.n_segments, 0);
	CHECK_EQ_INT(f.resident, 4 * 4096);
	seg_files_totals(&fs, &t);
	CHECK_EQ_INT(t.n_images, 0);
	CHECK_EQ_INT(t.n_data, 1);
}

TEST_MAIN(test_aggregate, test_count)
