/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs a fuzz target over every file of its corpus, so the corpus is an
 * ordinary test in every build (and under the sanitizers). */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	struct dirent **list;
	int n, done = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
		return 2;
	}
	n = scandir(argv[1], &list, NULL, alphasort);
	if (n < 0) {
		perror(argv[1]);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		char *buf = NULL;
		size_t len;

		if (list[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", argv[1], list[i]->d_name);
			if (read_file_at(AT_FDCWD, path, 16 << 20, &buf, &len) < 0) {
				perror(path);
				return 1;
			}
			LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
			free(buf);
			done++;
		}
		free(list[i]);
	}
	free(list);
	printf("%d inputs replayed from %s\n", done, argv[1]);
	return done > 0 ? 0 : 1;
}
