/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What bus.c (the connection, properties, Explain, Reload) and
 * bus-status.c (ListUnits, ListLibraries) share. */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus.h"

struct bus {
	struct manager *m;
	struct units *units;
	sd_bus *bus;
	sd_bus *dead;		  /* disconnected, dropped from a defer source */
	sd_event_source *retry, *drop;
	uint64_t retry_usec;
	bool said_absent;
	struct status_job *jobs; /* ListUnits/ListLibraries calls being answered */
	size_t n_jobs;
};

/* Names on the bus: cgroup, unit and file names are bytes, and sd-bus
 * refuses a string that is not UTF-8 (one odd name would fail the whole
 * reply). Each is passed through utf8_escape_invalid(); the copies live
 * until the reply is built. */
struct bus_names {
	char *copies[8];
	size_t n;
	int err;
};

/* s as a string sd-bus accepts: s itself, or an escaped copy kept in bn
 * (bn->err set when one cannot be made). */
const char *bus_name(struct bus_names *bn, const char *s);
void bus_names_done(struct bus_names *bn);

/* bus-status.c: the two status methods, answered over several turns of
 * the loop (jobs), and dropping the jobs in flight with the bus. */
int method_list_units(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_units_ex(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int method_list_libraries(sd_bus_message *msg, void *userdata, sd_bus_error *error);
void status_jobs_free(struct bus *b);
