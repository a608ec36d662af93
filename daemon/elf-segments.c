/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-segments.h"
#include "util.h"

/* Fields are read byte by byte: the buffer has no alignment and the
 * file need not be in the host's byte order. */
static uint64_t get(const uint8_t *p, size_t n, bool big)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
	return v;
}

struct layout {
	size_t ehdr_size, phdr_size;
	size_t e_phoff, e_phentsize, e_phnum, addr; /* offsets in the ELF header; addr: width of Elf_Addr/Off */
	size_t p_type, p_flags, p_offset, p_vaddr, p_filesz, p_memsz;
};

static const struct layout layout64 = {
	.ehdr_size = 64, .phdr_size = 56, .e_phoff = 32, .e_phentsize = 54, .e_phnum = 56, .addr = 8,
	.p_type = 0, .p_flags = 4, .p_offset = 8, .p_vaddr = 16, .p_filesz = 32, .p_memsz = 40,
};

static const struct layout layout32 = {
	.ehdr_size = 52, .phdr_size = 32, .e_phoff = 28, .e_phentsize = 42, .e_phnum = 44, .addr = 4,
	.p_type = 0, .p_flags = 24, .p_offset = 4, .p_vaddr = 8, .p_filesz = 16, .p_memsz = 20,
};

int elf_parse(const void *buf, size_t len, struct elf_image *ret, size_t *ret_need)
{
	const uint8_t *b = buf;
	const struct layout *l;
	uint64_t phoff, phentsize, phnum, relro_start = 0, relro_end = 0;
	struct elf_image img = { 0 };
	bool big;

	if (len < EI_NIDENT || memcmp(b, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	if (b[EI_CLASS] == ELFCLASS64)
		l = &layout64;
	else if (b[EI_CLASS] == ELFCLASS32)
		l = &layout32;
	else
		return -EINVAL;
	if (b[EI_DATA] != ELFDATA2LSB && b[EI_DATA] != ELFDATA2MSB)
		return -EINVAL;
	big = b[EI_DATA] == ELFDATA2MSB;
	if (len < l->ehdr_size) {
		if (ret_need)
			*ret_need = l->ehdr_size;
		return -ENOBUFS;
	}
	img.is_64 = l == &layout64;
	img.big_endian = big;
	img.type = (uint16_t)get(b + 16, 2, big);
	img.machine = (uint16_t)get(b + 18, 2, big);
	phoff = get(b + l->e_phoff, l->addr, big);
	phentsize = get(b + l->e_phentsize, 2, big);
	phnum = get(b + l->e_phnum, 2, big);
	if (phnum == PN_XNUM)
		return -E2BIG; /* the count is in section 0: not for loadable images */
	if (phnum > 0 && phentsize < l->phdr_size)
		return -EINVAL;
	/* phnum and phentsize are 16 bit: no overflow below 2^32 + phoff. */
	if (phoff > UINT64_MAX - phnum * phentsize)
		return -EINVAL;
	if (phoff + phnum * phentsize > len) {
		if (ret_need)
			*ret_need = phoff + phnum * phentsize > SIZE_MAX ? SIZE_MAX : (size_t)(phoff + phnum * phentsize);
		return -ENOBUFS;
	}

	for (uint64_t i = 0; i < phnum; i++) {
		const uint8_t *p = b + phoff + i * phentsize;
		uint32_t type = (uint32_t)get(p + l->p_type, 4, big);
		struct elf_segment s;

		if (type == PT_GNU_RELRO) {
			relro_start = get(p + l->p_vaddr, l->addr, big);
			relro_end = relro_start + get(p + l->p_memsz, l->addr, big);
			if (relro_end < relro_start)
				return -EINVAL;
			continue;
		}
		if (type != PT_LOAD)
			continue;
		s = (struct elf_segment){
			.offset = get(p + l->p_offset, l->addr, big),
			.filesz = get(p + l->p_filesz, l->addr, big),
			.memsz = get(p + l->p_memsz, l->addr, big),
			.vaddr = get(p + l->p_vaddr, l->addr, big),
			.flags = (uint32_t)get(p + l->p_flags, 4, big) & (ELF_SEG_R | ELF_SEG_W | ELF_SEG_X),
		};
		if (s.offset > UINT64_MAX - s.filesz || s.vaddr > UINT64_MAX - s.memsz)
			return -EINVAL;
		if (img.n_segments == ELF_SEGMENTS_MAX)
			return -E2BIG;
		img.segments[img.n_segments++] = s;
	}
	/* RELRO lies inside a writable PT_LOAD (its first part, usually). */
	for (size_t i = 0; i < img.n_segments && relro_end > relro_start; i++) {
		struct elf_segment *s = &img.segments[i];

		s->relro = relro_start < s->vaddr + s->memsz && s->vaddr < relro_end;
	}
	*ret = img;
	return 0;
}

const char *elf_flags_string(uint32_t flags, char buf[static 4])
{
	buf[0] = flags & ELF_SEG_R ? 'r' : '-';
	buf[1] = flags & ELF_SEG_W ? 'w' : '-';
	buf[2] = flags & ELF_SEG_X ? 'x' : '-';
	buf[3] = '\0';
	return buf;
}

void elf_segment_pages(const struct elf_segment *s, uint64_t file_size, size_t page_size, uint64_t *ret_first,
		       uint64_t *ret_count)
{
	uint64_t ps = page_size, first = s->offset / ps, file_pages = file_size / ps + (file_size % ps != 0);
	uint64_t end = s->offset + s->filesz; /* no wrap: elf_parse() refuses it */

	end = end / ps + (end % ps != 0);
	if (end > file_pages)
		end = file_pages;
	*ret_first = first;
	*ret_count = s->filesz == 0 || end <= first ? 0 : end - first;
}

/* Program headers beyond this are not an image we look at. */
#define HEADERS_MAX (1u << 20)

/* Read [0, len) into buf; which of those pages were resident before goes
 * into was (mincore() of a mapping we make: mapping faults nothing in). */
static int read_head(int fd, size_t len, size_t page_size, uint8_t *buf, unsigned char *was, size_t *ret_len)
{
	size_t pages = (len + page_size - 1) / page_size, got = 0;
	void *p;

	p = mmap(NULL, pages * page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (mincore(p, pages * page_size, was) < 0) {
		int r = -errno;

		munmap(p, pages * page_size);
		return r;
	}
	munmap(p, pages * page_size);
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*ret_len = got;
	return 0;
}

/* Drop again the pages our read brought in (runs of pages not resident
 * before); the kernel keeps any that someone maps meanwhile. */
static void drop_new(int fd, size_t len, size_t page_size, const unsigned char *was)
{
	size_t pages = (len + page_size - 1) / page_size;

	for (size_t i = 0; i < pages;) {
		size_t j = i;

		if (was[i] & 1) {
			i++;
			continue;
		}
		while (j < pages && !(was[j] & 1))
			j++;
		(void)posix_fadvise(fd, (off_t)(i * page_size), (off_t)((j - i) * page_size), POSIX_FADV_DONTNEED);
		i = j;
	}
}

int elf_read(int fd, struct elf_image *ret)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t page_size = ps > 0 ? (size_t)ps : 4096, want = page_size, need = 0, got = 0;
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADF;
	if (st.st_size < EI_NIDENT)
		return -ENOEXEC;
	/* Only what is asked for: no read-ahead around it. */
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	for (;;) {
		_cleanup_free_ uint8_t *buf = NULL;
		_cleanup_free_ unsigned char *was = NULL;

		if ((uint64_t)want > (uint64_t)st.st_size)
			want = (size_t)st.st_size;
		buf = malloc(want);
		was = calloc((want + page_size - 1) / page_size, 1);
		if (!buf || !was)
			return -ENOMEM;
		r = read_head(fd, want, page_size, buf, was, &got);
		if (r < 0)
			return r;
		r = elf_parse(buf, got, ret, &need);
		drop_new(fd, want, page_size, was);
		if (r != -ENOBUFS || got < want || need <= want || need > HEADERS_MAX)
			return r == -ENOBUFS ? -EINVAL : r;
		want = (need + page_size - 1) / page_size * page_size;
	}
}
