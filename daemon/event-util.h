/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sd-event helpers every part of the daemon shares: arming a one-shot
 * timer, switching a source on or off, a named timer, the loop's clock.
 * A source that cannot be armed or switched leaves the daemon deaf or
 * stuck, so a failure is logged with the source's name and ends the
 * loop with the error: systemd restarting the daemon is better than a
 * silent gap. */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

/* event_timer_set()'s "off". */
#define USEC_OFF UINT64_MAX

/* Fire once at usec (CLOCK_MONOTONIC), or off with USEC_OFF. */
int event_timer_set(sd_event_source *s, uint64_t usec);
/* sd_event_source_set_enabled(), checked as above. */
int event_source_enable(sd_event_source *s, int enabled);
/* A disabled one-shot CLOCK_MONOTONIC timer named for sd-event's logs. */
int event_add_timer(sd_event *e, sd_event_source **ret, const char *name, sd_event_time_handler_t handler,
		    void *userdata);
/* A disabled defer source named for sd-event's logs. */
int event_add_defer(sd_event *e, sd_event_source **ret, const char *name, sd_event_handler_t handler,
		    void *userdata);
/* The loop's CLOCK_MONOTONIC now, in microseconds. */
uint64_t event_now(sd_event *e);
