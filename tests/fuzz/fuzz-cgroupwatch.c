/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The inotify records the cgroup watcher reads from the kernel: decoded
 * from any bytes without reading past them, every name within them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cgroup_watch_record r[64];
	/* A copy of exactly size bytes: the sanitizers see any read past it. */
	uint8_t *buf = malloc(size ? size : 1);
	int n;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	n = cgroup_watch_decode(buf, size, r, 64);
	if (n > 64)
		abort();
	for (int i = 0; i < n; i++)
		if (r[i].name_len && (r[i].name < (const char *)buf || r[i].name + r[i].name_len > (const char *)buf + size))
			abort();
	free(buf);
	return 0;
}
