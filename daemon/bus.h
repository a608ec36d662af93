/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguardd on the system bus: the name org.execguard.Manager1, the
 * object /org/execguard/Manager1 with the interface of the same name
 * (properties, ListUnits, ListLibraries, Explain, Reload), and the
 * connection the unit lookup uses. Without a bus the daemon works on;
 * it reconnects when the bus comes (back). */
#pragma once

#include "bus-names.h"
#include "message-ids.h"


struct manager;
struct units;
struct bus;

/* Connects now if it can, else keeps trying in the background: fails
 * only on ENOMEM or an event loop error. */
int bus_new(struct manager *m, struct units *u, struct bus **ret);
struct bus *bus_free(struct bus *b);
