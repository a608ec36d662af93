/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The prewarm record parser on arbitrary bytes; what it accepts must
 * format again and parse back to the same content. */
#include <stdint.h>
#include <stdlib.h>

#include "prewarm-record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prewarm_record r = { 0 }, again = { 0 };
	struct prewarm_step *steps = NULL;
	size_t n_steps, len;
	uint64_t bytes;
	const char *why;
	unsigned line;
	char *buf = NULL;

	if (prewarm_record_parse((const char *)data, size, &r, &why, &line) < 0)
		return 0;
	if (prewarm_plan(&r, UINT64_MAX / 2, &steps, &n_steps, &bytes) >= 0) {
		if (n_steps != prewarm_record_n_ranges(&r) || bytes != prewarm_record_bytes(&r))
			abort();
		free(steps);
	}
	if (prewarm_record_format(&r, &buf, &len) >= 0) {
		if (prewarm_record_parse(buf, len, &again, &why, &line) < 0)
			abort();
		if (again.n_files != r.n_files || prewarm_record_bytes(&again) != prewarm_record_bytes(&r))
			abort();
		prewarm_record_done(&again);
		free(buf);
	}
	prewarm_record_done(&r);
	return 0;
}
