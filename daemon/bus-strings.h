/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Names on the bus: cgroup, unit and file names are bytes, and sd-bus
 * refuses a string that is not UTF-8 (one odd name would fail the whole
 * reply). Each is passed through utf8_escape_invalid(); the copies live
 * until the reply is built. */
#pragma once

#include <stddef.h>

struct bus_names {
	char *copies[8];
	size_t n;
	int err;
};

/* s as a string sd-bus accepts: s itself, or an escaped copy kept in bn
 * (bn->err set when one cannot be made). */
const char *bus_name(struct bus_names *bn, const char *s);
void bus_names_done(struct bus_names *bn);
