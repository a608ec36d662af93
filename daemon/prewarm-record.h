/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The prewarm record of one unit: which ranges of which files its
 * processes had resident in their exec mappings, each file named by
 * path and identified by device, inode, size and mtime, each range with
 * a heat (how many samples saw it resident). Pure functions over
 * buffers: the text format (parse, format), turning a per-page heat map
 * into ranges, and the replay plan (hottest first within a budget). The
 * daemon's I/O around them is in prewarm.c. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PREWARM_RECORD_VERSION 1
/* Bounds a record must keep; the parser refuses anything larger, the
 * formatter drops the coldest ranges to fit. */
#define PREWARM_RECORD_MAX_BYTES (1024 * 1024)
#define PREWARM_RECORD_MAX_FILES 1024
#define PREWARM_RECORD_MAX_RANGES 16384 /* all files together */

struct prewarm_range {
	uint64_t offset, length; /* bytes */
	uint32_t heat;		 /* samples that saw it resident, >= 1 */
};

struct prewarm_file {
	uint32_t dev_major, dev_minor;
	uint64_t inode, size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	char *path; /* absolute */
	struct prewarm_range *ranges; /* sorted by offset, disjoint */
	size_t n_ranges;
};

struct prewarm_record {
	char *unit;	   /* the unit, or the cgroup outside units */
	int64_t time;	   /* when written, seconds since the epoch */
	struct prewarm_file *files;
	size_t n_files;
};

void prewarm_record_done(struct prewarm_record *r);
void prewarm_file_done(struct prewarm_file *f);
/* Sum of all range lengths. */
uint64_t prewarm_record_bytes(const struct prewarm_record *r);
size_t prewarm_record_n_ranges(const struct prewarm_record *r);

/* Parse a whole record. 0 and *ret filled, or -EINVAL (bad or truncated)
 * / -E2BIG (over the bounds) with a static reason and the line number in
 * *ret_why and *ret_line. *ret is untouched on failure. */
int prewarm_record_parse(const char *buf, size_t len, struct prewarm_record *ret, const char **ret_why,
			 unsigned *ret_line);

/* The text of r, malloc'ed. Ranges beyond the bounds (the coldest) are
 * left out; -EINVAL for a record the parser would refuse (ranges out of
 * order or past the file's size, a relative path). */
int prewarm_record_format(const struct prewarm_record *r, char **ret_buf, size_t *ret_len);

/* Ranges from a per-page heat map (0: never resident): runs of pages
 * with heat, joined across gaps of at most gap_pages cold pages (one
 * request instead of two; the gap is read too), each with the highest
 * heat in it. The last page may be partial: ranges end at file_size.
 * Appends to *ranges; <0 on ENOMEM. */
int prewarm_ranges_from_heat(const uint8_t *heat, size_t n_pages, uint64_t page_size, uint64_t file_size,
			     size_t gap_pages, struct prewarm_range **ranges, size_t *n_ranges);

/* One read of the replay plan: range index of file index. */
struct prewarm_step {
	size_t file, range;
};

/* Order every range of r hottest first (then by file, then by offset,
 * so that requests stay sequential within a heat) and keep those that
 * fit within budget bytes (a range that does not fit is skipped, a
 * smaller one after it may still fit). Returns the number of steps in
 * *ret (malloc'ed) and the bytes planned; <0 on ENOMEM. */
int prewarm_plan(const struct prewarm_record *r, uint64_t budget, struct prewarm_step **ret, size_t *ret_n,
		 uint64_t *ret_bytes);

/* A key (unit name or cgroup path) as a file name: [A-Za-z0-9_.:@-]
 * kept, every other byte %XX, "%2E" for a leading dot; ".prewarm"
 * appended. -ENAMETOOLONG past 255 bytes. */
int prewarm_record_filename(const char *key, char *buf, size_t size);
