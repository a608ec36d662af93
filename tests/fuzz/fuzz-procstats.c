/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The parsers behind execguardctl status (over D-Bus): smaps of a
 * protected process (paths a user chose), memory.stat-style key lines,
 * /proc/PID/stat (a comm a user chose), and the keyed lines of /proc
 * and cgroupfs files (procfs.h). */
#include <stdint.h>

#include "bus-stats.h"
#include "procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct text_mappings m = { 0 };
	struct proc_status st;
	uint64_t v;

	if (smaps_parse_exec((const char *)data, size, &m) >= 0)
		text_mappings_done(&m);
	(void)procfs_field_u64((const char *)data, size, "pgmajfault_exec", ' ', &v);
	(void)procfs_field_kb((const char *)data, size, "MemAvailable", &v);
	(void)proc_status_parse((const char *)data, size, &st);
	(void)proc_stat_majflt((const char *)data, size, &v);
	return 0;
}
