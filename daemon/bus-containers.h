/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The containers' interface, org.execguard.Containers1, on the daemon's
 * object (bus-containers.c). */
#pragma once

typedef struct sd_bus sd_bus;
struct manager;

int bus_containers_add(sd_bus *bus, struct manager *m);
