// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kinsn: a qemu TCG plugin that counts the guest's executed instructions
 * by where they run: in named ranges of kernel text (an object file's
 * functions, e.g. mm/vmscan.o), elsewhere in the kernel, or in user space.
 * Each time the guest enters the marker function (its entry address), the
 * counts so far are appended to the output file as one line, so a guest
 * script brackets what it measures by calling it (for bench/reclaim-cost.sh:
 * drop_caches_sysctl_handler, entered by each write to drop_caches).
 *
 * An instruction count does not depend on how busy the host is, which the
 * guest's clock under TCG does. Counters are added inline without atomics:
 * run the guest with one CPU.
 *
 * With profile=FILE, it also counts by the kernel block each instruction's
 * block starts at, and at exit writes "ADDRESS COUNT" lines to FILE, for
 * a profile by function (a block is attributed to the function it starts
 * in: see bench/kinsn/profile.py).
 *
 * qemu -plugin kinsn.so,ranges=FILE,out=FILE,marker=0xADDR[,profile=FILE]
 * FILE of ranges: "NAME START END" a line, addresses in hex, END exclusive.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_RANGES 32
/* x86-64: the kernel's half of the address space */
#define KERNEL_START 0xffff800000000000ULL

struct range {
	char name[48];
	uint64_t start, end;
};

static struct range ranges[MAX_RANGES];
static int nr_ranges;
/* one counter per range, then "kernel" (the rest of it), then "user" */
static uint64_t counts[MAX_RANGES + 2];
static uint64_t marker;
static FILE *out;
static uint64_t nr_marks;

/* profile=: a counter per kernel block start address, open addressing */
#define PROFILE_SLOTS (1U << 20)
struct block {
	uint64_t vaddr;
	uint64_t count;
};
static struct block *blocks;
static const char *profile_path;

static uint64_t *block_counter(uint64_t vaddr)
{
	uint32_t i = (uint32_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 44);

	for (uint32_t n = 0; n < PROFILE_SLOTS; n++, i = (i + 1) % PROFILE_SLOTS) {
		if (blocks[i].vaddr == vaddr)
			return &blocks[i].count;
		if (!blocks[i].vaddr) {
			blocks[i].vaddr = vaddr;
			return &blocks[i].count;
		}
	}
	return NULL;
}

static int bucket_of(uint64_t vaddr)
{
	if (vaddr < KERNEL_START)
		return nr_ranges + 1;
	for (int i = 0; i < nr_ranges; i++)
		if (vaddr >= ranges[i].start && vaddr < ranges[i].end)
			return i;
	return nr_ranges;
}

static void write_counts(const char *what)
{
	fprintf(out, "%s %" PRIu64, what, nr_marks++);
	for (int i = 0; i < nr_ranges; i++)
		fprintf(out, " %s=%" PRIu64, ranges[i].name, counts[i]);
	fprintf(out, " kernel=%" PRIu64 " user=%" PRIu64 "\n",
		counts[nr_ranges], counts[nr_ranges + 1]);
	fflush(out);
}

static void on_marker(unsigned int vcpu_index, void *udata)
{
	(void)vcpu_index;
	(void)udata;
	write_counts("MARK");
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);

	(void)id;
	/* a block is counted whole where it starts: blocks end at branches,
	 * so one that starts in a function ends in it */
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &counts[bucket_of(vaddr)],
						 qemu_plugin_tb_n_insns(tb));
	if (blocks && vaddr >= KERNEL_START) {
		uint64_t *c = block_counter(vaddr);

		if (c)
			qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
								 c, qemu_plugin_tb_n_insns(tb));
	}
	if (vaddr == marker)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_marker,
						     QEMU_PLUGIN_CB_NO_REGS, NULL);
}

static void on_qemu_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	write_counts("EXIT");
	fclose(out);
	if (blocks) {
		FILE *f = fopen(profile_path, "w");

		if (!f)
			return;
		for (uint32_t i = 0; i < PROFILE_SLOTS; i++)
			if (blocks[i].count)
				fprintf(f, "%" PRIx64 " %" PRIu64 "\n", blocks[i].vaddr,
					blocks[i].count);
		fclose(f);
	}
}

static int read_ranges(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct range *r = &ranges[nr_ranges];

		if (nr_ranges == MAX_RANGES ||
		    sscanf(line, "%47s %" SCNx64 " %" SCNx64, r->name, &r->start,
			   &r->end) != 3 || r->end <= r->start) {
			fclose(f);
			return -1;
		}
		nr_ranges++;
	}
	fclose(f);
	return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info, int argc,
					   char **argv)
{
	const char *ranges_path = NULL, *out_path = NULL;

	(void)info;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "ranges=", 7))
			ranges_path = argv[i] + 7;
		else if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
		else if (!strncmp(argv[i], "profile=", 8))
			profile_path = argv[i] + 8;
		else if (!strncmp(argv[i], "marker=", 7))
			marker = strtoull(argv[i] + 7, NULL, 16);
		else {
			fprintf(stderr, "kinsn: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!ranges_path || !out_path || !marker) {
		fprintf(stderr, "kinsn: needs ranges=FILE,out=FILE,marker=0xADDR\n");
		return -1;
	}
	if (read_ranges(ranges_path)) {
		fprintf(stderr, "kinsn: %s: bad or too many ranges\n", ranges_path);
		return -1;
	}
	out = fopen(out_path, "w");
	if (!out) {
		perror(out_path);
		return -1;
	}
	if (profile_path) {
		blocks = calloc(PROFILE_SLOTS, sizeof(*blocks));
		if (!blocks)
			return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
	return 0;
}
