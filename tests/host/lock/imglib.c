/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A library with every kind of segment large enough to count pages in:
 * .rodata, relro (an object that needs one relocation, on its first page
 * only) and .data, each page aligned and RO_PAGES, RELRO_PAGES,
 * DATA_PAGES pages long (-D at build time). Every page has a non-zero
 * byte so that nothing moves to .bss. */
#define PG 4096

__attribute__((aligned(PG))) const unsigned char img_ro[RO_PAGES][PG] = { [0 ... RO_PAGES - 1] = { [0] = 1 } };

__attribute__((aligned(PG))) unsigned char img_data[DATA_PAGES][PG] = { [0 ... DATA_PAGES - 1] = { [0] = 1 } };

struct relro {
	const char *name; /* relocated at load: its page is written */
	__attribute__((aligned(PG))) unsigned char blob[RELRO_PAGES][PG];
};

const struct relro img_relro = { "relro", { [0 ... RELRO_PAGES - 1] = { [0] = 1 } } };

/* The program reaches the data through these: were it to name the
 * objects, the linker would copy them into the program (copy relocations)
 * and it would never read the library's pages. */
const unsigned char *img_ro_at(void)
{
	return &img_ro[0][0];
}

unsigned char *img_data_at(void)
{
	return &img_data[0][0];
}

const unsigned char *img_relro_at(void)
{
	return &img_relro.blob[0][0];
}

const char *img_relro_name(void)
{
	return img_relro.name;
}
