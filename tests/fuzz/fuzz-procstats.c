/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The parsers behind execguardctl status (over D-Bus): smaps of a
 * protected process (paths a user chose), memory.stat-style key lines,
 * /proc/PID/stat (a comm a user chose). */
#include <stdint.h>

#include "bus-stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct text_mappings m = { 0 };
	uint64_t v;

	if (smaps_parse_exec((const char *)data, size, &m) >= 0)
		text_mappings_done(&m);
	(void)keyed_value((const char *)data, size, "pgmajfault_exec", &v);
	(void)proc_stat_majflt((const char *)data, size, &v);
	return 0;
}
