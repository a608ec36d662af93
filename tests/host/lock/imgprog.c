/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Uses libimg's image the way a program start and a request do: reads
 * the first half of .rodata, every page of relro and of .data, writes
 * the first half of .data (copy on write: those pages become its own
 * anonymous memory), reads a data file it maps PROT_READ only, and
 * touches anonymous memory. Prints where each lies and "ready"; on
 * SIGUSR1 it checks that its memory still holds what it wrote ("memory
 * ok") and exits on SIGTERM.
 * Usage: imgprog DATAFILE */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PG 4096
#define ANON_PAGES 16

const unsigned char *img_ro_at(void);
unsigned char *img_data_at(void);
const unsigned char *img_relro_at(void);
const char *img_relro_name(void);

static volatile sig_atomic_t check;
static unsigned char *anon, *data;

static void on_usr1(int sig)
{
	(void)sig;
	check = 1;
}

static int memory_ok(void)
{
	for (int i = 0; i < DATA_PAGES; i++)
		if (data[i * PG + 1] != (i < DATA_PAGES / 2 ? 2 : 0) || data[i * PG] != 1)
			return 0;
	for (int i = 0; i < ANON_PAGES; i++)
		if (anon[i * PG] != (unsigned char)(i + 7))
			return 0;
	return strcmp(img_relro_name(), "relro") == 0;
}

int main(int argc, char **argv)
{
	volatile unsigned sum = 0;
	const unsigned char *df, *ro = img_ro_at(), *relro = img_relro_at();
	struct stat st;
	int fd;

	if (argc != 2)
		return 2;
	signal(SIGUSR1, on_usr1);
	data = img_data_at();
	for (int i = 0; i < RO_PAGES / 2; i++)
		sum += ro[i * PG];
	for (int i = 0; i < RELRO_PAGES; i++)
		sum += relro[i * PG];
	for (int i = 0; i < DATA_PAGES; i++)
		sum += data[i * PG];
	for (int i = 0; i < DATA_PAGES / 2; i++)
		data[i * PG + 1] = 2;
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		return 1;
	df = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (df == MAP_FAILED)
		return 1;
	for (off_t o = 0; o < st.st_size; o += PG)
		sum += df[o];
	anon = mmap(NULL, ANON_PAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED)
		return 1;
	for (int i = 0; i < ANON_PAGES; i++)
		anon[i * PG] = (unsigned char)(i + 7);
	printf("ro %p %d\nrelro %p %d\ndata %p %d\ndatafile %p %d\nanon %p %d\nready\n", (const void *)ro, RO_PAGES,
	       (const void *)relro, RELRO_PAGES, (void *)data, DATA_PAGES, (const void *)df,
	       (int)((st.st_size + PG - 1) / PG), (void *)anon, ANON_PAGES);
	fflush(stdout);
	for (;;) {
		pause();
		if (check) {
			check = 0;
			printf("memory %s\n", memory_ok() ? "ok" : "changed");
			fflush(stdout);
		}
	}
}
