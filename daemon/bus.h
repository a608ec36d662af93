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
struct policy;
struct units;
struct bus;
typedef struct sd_bus sd_bus;

/* What the interface may change: through the manager, which passes
 * these in. */
struct bus_control {
	/* The Reload method: the policy and units' sections read again; on
	 * a rejected policy <0 and its errors in *ret_rejected. */
	int (*reload)(void *userdata, struct policy *ret_rejected);
	/* A connection (re)established, or NULL: lost or closed. */
	void (*connected)(void *userdata, sd_bus *bus);
};

/* Connects now if it can, else keeps trying in the background: fails
 * only on ENOMEM or an event loop error. Reads m through manager-view.h
 * and u's sections. */
int bus_new(struct manager *m, struct units *u, const struct bus_control *ctl, void *userdata, struct bus **ret);
struct bus *bus_free(struct bus *b);
