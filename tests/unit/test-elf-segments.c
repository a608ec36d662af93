/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ELF program header parser, fed from images built here byte by byte
 * (64 and 32 bit, both byte orders, broken ones), and the reader on this
 * test's own executable, which must leave the page cache as it found it. */
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-segments.h"
#include "test.h"
#include "util.h"

static void put(uint8_t *p, size_t n, uint64_t v, bool big)
{
	for (size_t i = 0; i < n; i++)
		p[big ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

struct phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz;
};

/* An ELF header and program headers at phoff into buf (zeroed first). */
static size_t build(uint8_t *buf, size_t size, bool is64, bool big, uint64_t phoff, const struct phdr *ph, size_t n,
		    size_t phentsize)
{
	size_t ehsize = is64 ? 64 : 52, ent = phentsize ? phentsize : is64 ? 56 : 32, a = is64 ? 8 : 4;

	memset(buf, 0, size);
	memcpy(buf, ELFMAG, SELFMAG);
	buf[EI_CLASS] = is64 ? ELFCLASS64 : ELFCLASS32;
	buf[EI_DATA] = big ? ELFDATA2MSB : ELFDATA2LSB;
	buf[EI_VERSION] = EV_CURRENT;
	put(buf + 16, 2, ET_DYN, big);
	put(buf + 18, 2, is64 ? EM_X86_64 : EM_PPC, big);
	put(buf + (is64 ? 32 : 28), a, phoff, big);
	put(buf + (is64 ? 52 : 40), 2, ehsize, big);
	put(buf + (is64 ? 54 : 42), 2, ent, big);
	put(buf + (is64 ? 56 : 44), 2, n, big);
	for (size_t i = 0; i < n && phoff + (i + 1) * ent <= size; i++) {
		uint8_t *p = buf + phoff + i * ent;

		put(p, 4, ph[i].type, big);
		if (is64) {
			put(p + 4, 4, ph[i].flags, big);
			put(p + 8, 8, ph[i].offset, big);
			put(p + 16, 8, ph[i].vaddr, big);
			put(p + 32, 8, ph[i].filesz, big);
			put(p + 40, 8, ph[i].memsz, big);
		} else {
			put(p + 4, 4, ph[i].offset, big);
			put(p + 8, 4, ph[i].vaddr, big);
			put(p + 16, 4, ph[i].filesz, big);
			put(p + 20, 4, ph[i].memsz, big);
			put(p + 24, 4, ph[i].flags, big);
		}
	}
	return phoff + n * ent;
}

/* A library as ld -z separate-code lays it out, with relro. */
static const struct phdr lib[] = {
	{ PT_LOAD, PF_R, 0, 0, 0x28000, 0x28000 },
	{ PT_LOAD, PF_R | PF_X, 0x28000, 0x28000, 0x155000, 0x155000 },
	{ PT_LOAD, PF_R, 0x17d000, 0x17d000, 0x4f000, 0x4f000 },
	{ PT_LOAD, PF_R | PF_W, 0x1cc8f0, 0x1cd8f0, 0x6710, 0x13a50 },
	{ PT_DYNAMIC, PF_R | PF_W, 0x1cfbc0, 0x1d0bc0, 0x1e0, 0x1e0 },
	{ PT_GNU_RELRO, PF_R, 0x1cc8f0, 0x1cd8f0, 0x3710, 0x3710 },
	{ PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0 },
};

static void test_layouts(void)
{
	for (int v = 0; v < 4; v++) {
		bool is64 = v & 1, big = v & 2;
		uint8_t buf[1024];
		struct elf_image img;
		size_t end = build(buf, sizeof(buf), is64, big, is64 ? 64 : 52, lib, ELEMENTSOF(lib), 0);
		char f[4];

		CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), 0);
		CHECK_EQ_INT(img.is_64, is64);
		CHECK_EQ_INT(img.big_endian, big);
		CHECK_EQ_INT(img.type, ET_DYN);
		CHECK_EQ_INT(img.n_segments, 4);
		CHECK_STREQ(elf_flags_string(img.segments[0].flags, f), "r--");
		CHECK_STREQ(elf_flags_string(img.segments[1].flags, f), "r-x");
		CHECK_STREQ(elf_flags_string(img.segments[3].flags, f), "rw-");
		CHECK_EQ_INT(img.segments[1].offset, 0x28000);
		CHECK_EQ_INT(img.segments[2].filesz, 0x4f000);
		CHECK_EQ_INT(img.segments[3].memsz, 0x13a50);
		CHECK_EQ_INT(img.segments[3].vaddr, 0x1cd8f0);
		CHECK(!img.segments[0].relro && !img.segments[1].relro && !img.segments[2].relro);
		CHECK(img.segments[3].relro);
	}
}

static void test_errors(void)
{
	uint8_t buf[4096];
	struct elf_image img;
	size_t need = 0, end;
	struct phdr many[ELF_SEGMENTS_MAX + 1];

	CHECK_EQ_INT(elf_parse("#!/bin/sh\n", 10, &img, NULL), -ENOEXEC);
	CHECK_EQ_INT(elf_parse("", 0, &img, NULL), -ENOEXEC);
	CHECK_EQ_INT(elf_parse("\177ELF", 4, &img, NULL), -ENOEXEC); /* shorter than e_ident */

	end = build(buf, sizeof(buf), true, false, 64, lib, ELEMENTSOF(lib), 0);
	/* Cut in the program headers: how much is needed is said. */
	CHECK_EQ_INT(elf_parse(buf, end - 1, &img, &need), -ENOBUFS);
	CHECK_EQ_INT(need, end);
	CHECK_EQ_INT(elf_parse(buf, 40, &img, &need), -ENOBUFS);
	CHECK_EQ_INT(need, 64);
	/* Program headers far out (they may be anywhere). */
	end = build(buf, sizeof(buf), true, false, 3000, lib, 2, 0);
	CHECK_EQ_INT(elf_parse(buf, 2048, &img, &need), -ENOBUFS);
	CHECK_EQ_INT(need, 3000 + 2 * 56);
	CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), 0);
	CHECK_EQ_INT(img.n_segments, 2);

	/* Bad class, byte order, entry size. */
	end = build(buf, sizeof(buf), true, false, 64, lib, ELEMENTSOF(lib), 0);
	buf[EI_CLASS] = 3;
	CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), -EINVAL);
	buf[EI_CLASS] = ELFCLASS64;
	buf[EI_DATA] = 0;
	CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), -EINVAL);
	end = build(buf, sizeof(buf), true, false, 64, lib, ELEMENTSOF(lib), 40);
	CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), -EINVAL);
	/* A larger entry size than the struct is fine (future fields). */
	end = build(buf, sizeof(buf), true, false, 64, lib, ELEMENTSOF(lib), 64);
	CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), 0);
	CHECK_EQ_INT(img.n_segments, 4);
	CHECK_EQ_INT(img.segments[2].offset, 0x17d000);

	/* PN_XNUM: the count lives elsewhere; not an image to look at. */
	end = build(buf, sizeof(buf), true, false, 64, lib, 1, 0);
	put(buf + 56, 2, PN_XNUM, false);
	CHECK_EQ_INT(elf_parse(buf, sizeof(buf), &img, NULL), -E2BIG);

	/* Too many loadable segments. */
	for (size_t i = 0; i < ELEMENTSOF(many); i++)
		many[i] = (struct phdr){ PT_LOAD, PF_R, i * 4096, i * 4096, 4096, 4096 };
	end = build(buf, sizeof(buf), false, false, 52, many, ELEMENTSOF(many), 0);
	CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), -E2BIG);
	end = build(buf, sizeof(buf), false, false, 52, many, ELF_SEGMENTS_MAX, 0);
	CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), 0);
	CHECK_EQ_INT(img.n_segments, ELF_SEGMENTS_MAX);

	/* A segment whose end wraps. */
	{
		struct phdr w = { PT_LOAD, PF_R, UINT64_MAX - 10, 0, 100, 100 };

		end = build(buf, sizeof(buf), true, false, 64, &w, 1, 0);
		CHECK_EQ_INT(elf_parse(buf, end, &img, NULL), -EINVAL);
	}
	/* No program headers at all (a relocatable object): no segments. */
	end = build(buf, sizeof(buf), true, true, 0, NULL, 0, 0);
	CHECK_EQ_INT(elf_parse(buf, 64, &img, NULL), 0);
	CHECK_EQ_INT(img.n_segments, 0);
}

static void test_pages(void)
{
	static const struct {
		uint64_t offset, filesz, file_size;
		uint64_t first, count;
	} rows[] = {
		{ 0, 0x28000, 0x200000, 0, 0x28 },
		{ 0x1cc8f0, 0x6711, 0x1d4000, 0x1cc, 0x8 }, /* mid-page both ends: rounded out */
		{ 0x1000, 0, 0x200000, 1, 0 },		    /* .bss only */
		{ 0x1000, 0x3000, 0x2800, 1, 2 },	    /* cut at the end of the file */
		{ 0x5000, 0x1000, 0x2000, 5, 0 },	    /* beyond the end */
		{ 0x1fff, 2, 0x10000, 1, 2 },		    /* two bytes across a page boundary */
	};

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		struct elf_segment s = { .offset = rows[i].offset, .filesz = rows[i].filesz };
		uint64_t first, count;

		elf_segment_pages(&s, rows[i].file_size, 4096, &first, &count);
		CHECK_EQ_INT(first, rows[i].first);
		CHECK_EQ_INT(count, rows[i].count);
	}
}

/* The reader on a real executable (a copy of ours, on a disk file system
 * so that its pages can be dropped): it finds the loadable segments and
 * leaves the header page out of the page cache when it was out before. */
static void test_read_real(void)
{
	char tmpl[] = "/var/tmp/test-elf-XXXXXX";
	_cleanup_free_ char *exe = NULL;
	struct elf_image img;
	size_t len = 0, n_exec = 0;
	unsigned char vec = 0;
	void *p;
	int fd, out;

	CHECK(read_file_at(AT_FDCWD, "/proc/self/exe", 64 << 20, &exe, &len) == 0);
	out = mkstemp(tmpl);
	CHECK(out >= 0);
	if (out < 0)
		return;
	CHECK(write(out, exe, len) == (ssize_t)len);
	CHECK(fsync(out) == 0);
	close(out);
	fd = open(tmpl, O_RDONLY | O_CLOEXEC);
	unlink(tmpl);
	CHECK(fd >= 0);
	CHECK_EQ_INT(elf_read(fd, &img), 0);
	CHECK(img.n_segments >= 2);
	for (size_t i = 0; i < img.n_segments; i++)
		n_exec += !!(img.segments[i].flags & ELF_SEG_X);
	CHECK_EQ_INT(n_exec, 1);

	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED);
	CHECK(mincore(p, 4096, &vec) == 0);
	if (vec & 1) {
		fprintf(stderr, "this file system keeps dropped pages (tmpfs?): residency part skipped\n");
	} else {
		CHECK_EQ_INT(elf_read(fd, &img), 0);
		CHECK(mincore(p, 4096, &vec) == 0);
		CHECK_EQ_INT(vec & 1, 0);
	}
	munmap(p, 4096);
	close(fd);

	/* Not ELF, and not a regular file. */
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	CHECK_EQ_INT(elf_read(fd, &img), -ENOEXEC);
	close(fd);
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_EQ_INT(elf_read(fd, &img), -EBADF);
	close(fd);
}

TEST_MAIN(test_layouts, test_errors, test_pages, test_read_real)
