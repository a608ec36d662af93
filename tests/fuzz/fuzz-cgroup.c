/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The parsers of cgroup text a process or a user controls: the cgroup2
 * and v1 memory lines of /proc/PID/cgroup (a cgroup name is anyone's
 * to choose under delegation), the unit a path names, the walk over its
 * ancestors, and a limit file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "meminfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	char *path = NULL, *unit = NULL, *v1 = NULL;
	uint64_t v;

	if (cgroup_parse_proc_cgroup(buf, size, &path) >= 0 && path) {
		const char *rel;

		if (cgroup_path_to_unit(path, &unit) >= 0)
			free(unit);
		for (size_t l = 0; cgroup_next_ancestor(path, &l);)
			if (l > strlen(path))
				abort();
		(void)cgroup_relative(path, &rel);
		free(path);
	}
	if (memcg1_parse_cgroup(buf, size, &v1) >= 0)
		free(v1);
	(void)memlimit_parse(buf, size, &v);
	return 0;
}
