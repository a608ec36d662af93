/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cnproc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cnproc_event ev[8];
	/* A private copy: the decoder must not rely on the buffer's
	 * alignment, and ASan then catches any read past its end. */
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	cnproc_decode(copy, size, ev, 8);
	free(copy);
	return 0;
}
