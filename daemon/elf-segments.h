/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The loadable segments of an ELF image: a pure parser of the ELF and
 * program headers from a buffer holding the start of the file (32 and 64
 * bit, either byte order), the file pages each segment occupies, and a
 * thin reader that takes the headers from a file descriptor without
 * leaving more of the file in the page cache than was there. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Images with more PT_LOAD entries exist only as curiosities; the usual
 * is 4 (-z separate-code) or 2. */
#define ELF_SEGMENTS_MAX 64

/* p_flags bits, as the ELF format fixes them. */
#define ELF_SEG_X 0x1u
#define ELF_SEG_W 0x2u
#define ELF_SEG_R 0x4u

struct elf_segment {
	uint64_t offset; /* p_offset: where it starts in the file */
	uint64_t filesz; /* p_filesz: bytes backed by the file */
	uint64_t memsz;	 /* p_memsz: bytes in memory (the rest is zero, .bss) */
	uint64_t vaddr;
	uint32_t flags;	 /* ELF_SEG_* */
	/* Part of PT_GNU_RELRO: read-only after relocation (relro). */
	bool relro;
};

struct elf_image {
	bool is_64, big_endian;
	uint16_t type;	  /* ET_EXEC, ET_DYN... */
	uint16_t machine;
	size_t n_segments; /* PT_LOAD entries, in file order */
	struct elf_segment segments[ELF_SEGMENTS_MAX];
};

/* Parse the ELF header and program headers from the first len bytes of
 * a file. Returns 0; -ENOEXEC if it is not ELF (no magic); -EINVAL for
 * a malformed header (bad class, entry size, a segment whose end wraps);
 * -E2BIG for more than ELF_SEGMENTS_MAX loadable segments or more than
 * 65535 headers (PN_XNUM); -ENOBUFS when the program headers end beyond
 * len, with *ret_need (if not NULL) the bytes that would hold them. */
int elf_parse(const void *buf, size_t len, struct elf_image *ret, size_t *ret_need);

/* "r-x" and friends, from ELF_SEG_* flags; buf holds at least 4 bytes. */
const char *elf_flags_string(uint32_t flags, char buf[static 4]);

/* The file pages segment s occupies in a file of file_size bytes:
 * [*ret_first, *ret_first + *ret_count), its file bytes rounded out to
 * pages and cut at the end of the file. */
void elf_segment_pages(const struct elf_segment *s, uint64_t file_size, size_t page_size, uint64_t *ret_first,
		       uint64_t *ret_count);

/* Read the headers of the file open at fd and parse them. The read asks
 * the kernel for no read-ahead on this descriptor, and pages the read
 * brought into the page cache that were not there before are dropped
 * again (those nobody maps), so that looking does not change what it
 * looks at. Returns what elf_parse() returns, or a read error. */
int elf_read(int fd, struct elf_image *ret);
