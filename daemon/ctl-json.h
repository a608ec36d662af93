/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguardctl's one JSON writer: every --json document is a json-c
 * object printed here, so all commands escape and format alike. */
#pragma once

struct json_object;

/* Print the document on one line to stdout, flush, and free it.
 * 0, or -EIO when it could not be written (said on stderr). */
int ctl_json_print(struct json_object *o);
