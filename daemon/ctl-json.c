/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>

#include "ctl-json.h"

int ctl_json_print(struct json_object *o)
{
	/* NOSLASHESCAPE: paths and unit names read as they are. */
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	int r = 0;

	if (!text || puts(text) < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "execguardctl: cannot write the JSON document\n");
		r = -EIO;
	}
	json_object_put(o);
	return r;
}
