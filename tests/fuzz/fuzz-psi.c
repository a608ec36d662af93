/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The PSI text Protect=auto reads: /proc/pressure/memory and a unit's
 * memory.pressure (a delegated cgroup's files are its owner's to shape
 * only through the kernel, but the parser must not trust that). */
#include <stdint.h>
#include <stdlib.h>

#include "psi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	double v;

	if (psi_parse_avg10((const char *)data, size, PSI_SOME, &v) == 0 && !(v >= 0 && v <= 100))
		abort();
	if (psi_parse_avg10((const char *)data, size, PSI_FULL, &v) == 0 && !(v >= 0 && v <= 100))
		abort();
	return 0;
}
