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
	/* The whole images and every file, appended behind what is there. */
	maps_parse_buffer_select((const char *)data, size, MAPS_FILES, &m);
	maps_parse_buffer_select((const char *)data, size, MAPS_IMAGES, &m);
	for (size_t i = 0; i < m.n; i++) {
		char prot[5];

		(void)map_prot_string(m.items[i].prot, prot);
	}
	exec_mappings_clear(&m);
	free(m.items);
	return 0;
}
