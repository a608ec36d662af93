/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>

#include "elf-segments.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_image img;
	size_t need = 0;
	char f[4];

	if (elf_parse(data, size, &img, &need) == 0)
		for (size_t i = 0; i < img.n_segments; i++) {
			uint64_t first, count;

			(void)elf_flags_string(img.segments[i].flags, f);
			elf_segment_pages(&img.segments[i], size, 4096, &first, &count);
			if (count && first + count > (size + 4095) / 4096)
				abort();
		}
	return 0;
}
