/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager's side of the proc connector (manager-state.h). */
#pragma once

#include "manager-state.h"

/* A socket, subscribed, watched. Exit events only without pidfds. */
int connector_open(struct manager *m);
/* Listen to it or not: only while processes must be followed
 * (push_needs_processes()). Opened later, the caller rescans /proc. */
int connector_set(struct manager *m, bool on);
int on_connector_retry(sd_event_source *s, uint64_t usec, void *userdata);
int on_connector_batch(sd_event_source *s, uint64_t usec, void *userdata);
