/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "event-util.h"
#include "log.h"
#include "util.h"

static int source_failed(sd_event_source *s, int r)
{
	const char *name = NULL;

	(void)sd_event_source_get_description(s, &name);
	log_error_errno(r, "cannot arm event source %s: %m; exiting so that the service manager restarts execguardd",
			strna(name));
	(void)sd_event_exit(sd_event_source_get_event(s), r);
	return r;
}

int event_timer_set(sd_event_source *s, uint64_t usec)
{
	int r;

	if (usec == USEC_OFF)
		r = sd_event_source_set_enabled(s, SD_EVENT_OFF);
	else if ((r = sd_event_source_set_time(s, usec)) >= 0)
		r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	return r < 0 ? source_failed(s, r) : 0;
}

int event_source_enable(sd_event_source *s, int enabled)
{
	int r = sd_event_source_set_enabled(s, enabled);

	return r < 0 ? source_failed(s, r) : 0;
}

int event_add_timer(sd_event *e, sd_event_source **ret, const char *name, sd_event_time_handler_t handler,
		    void *userdata)
{
	int r;

	r = sd_event_add_time(e, ret, CLOCK_MONOTONIC, UINT64_MAX, 1000, handler, userdata);
	if (r < 0)
		return log_error_errno(r, "cannot add the %s timer: %m", name);
	(void)sd_event_source_set_description(*ret, name);
	r = sd_event_source_set_enabled(*ret, SD_EVENT_OFF);
	if (r < 0)
		return log_error_errno(r, "cannot set up the %s timer: %m", name);
	return 0;
}

int event_add_defer(sd_event *e, sd_event_source **ret, const char *name, sd_event_handler_t handler,
		    void *userdata)
{
	int r;

	r = sd_event_add_defer(e, ret, handler, userdata);
	if (r < 0)
		return log_error_errno(r, "cannot add the %s source: %m", name);
	(void)sd_event_source_set_description(*ret, name);
	r = sd_event_source_set_enabled(*ret, SD_EVENT_OFF);
	if (r < 0)
		return log_error_errno(r, "cannot set up the %s source: %m", name);
	return 0;
}

uint64_t event_now(sd_event *e)
{
	uint64_t now;

	/* Only fails for a clock the loop does not know: not this one. */
	if (sd_event_now(e, CLOCK_MONOTONIC, &now) < 0)
		now = now_ns() / 1000;
	return now;
}
