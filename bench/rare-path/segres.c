/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per PT_LOAD segment of an ELF file: its flags, size and how much of it is
 * in the page cache (mincore over a shared read-only map of the file). */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct stat st;
	int fd = open(argv[1], O_RDONLY);
	if (argc < 2 || fd < 0 || fstat(fd, &st))
		return 1;
	unsigned char *p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	size_t pages = (st.st_size + 4095) / 4096;
	unsigned char *vec = malloc(pages);
	/* mincore of a file map reports the page cache; reading the ELF
	 * header below faults its first page in: take the vector first */
	if (mincore(p, st.st_size, vec))
		return 1;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)p;
	Elf64_Phdr *ph = (Elf64_Phdr *)(p + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		size_t first = ph[i].p_offset / 4096, last = (ph[i].p_offset + ph[i].p_filesz + 4095) / 4096;
		size_t res = 0;
		for (size_t pg = first; pg < last && pg < pages; pg++)
			res += vec[pg] & 1;
		printf("SEG %c%c%c size_kb=%zu resident_kb=%zu\n", ph[i].p_flags & PF_R ? 'r' : '-',
		       ph[i].p_flags & PF_W ? 'w' : '-', ph[i].p_flags & PF_X ? 'x' : '-',
		       (last - first) * 4, res * 4);
	}
	return 0;
}
