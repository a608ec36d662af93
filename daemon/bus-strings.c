/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "bus-strings.h"
#include "util.h"

const char *bus_name(struct bus_names *bn, const char *s)
{
	int err;
	char *e = utf8_escape_invalid(s, &err);

	if (err < 0 || (e && bn->n == ELEMENTSOF(bn->copies))) {
		free(e);
		bn->err = -ENOMEM;
		return "";
	}
	if (!e)
		return s;
	bn->copies[bn->n++] = e;
	return e;
}

void bus_names_done(struct bus_names *bn)
{
	for (size_t i = 0; i < bn->n; i++)
		free(bn->copies[i]);
	bn->n = 0;
}
