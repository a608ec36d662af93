/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>

#include "maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct exec_mappings m = { 0 };

	maps_parse_buffer((const char *)data, size, &m);
	(void)exec_mappings_file_bytes(&m);
	exec_mappings_clear(&m);
	free(m.items);
	return 0;
}
