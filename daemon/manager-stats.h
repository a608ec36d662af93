/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the manager counts and how it reports it (manager-state.h). */
#pragma once

#include "manager-state.h"

void record_latency(struct manager *m, uint64_t exec_ts);
void log_stats(struct manager *m, const char *when);
/* STATUS= now; else it goes out with the status timer, once a second at
 * most, when status_dirty says something changed. */
void update_status(struct manager *m, const char *prefix);
int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata);
int on_stats(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata);
