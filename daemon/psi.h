/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A memory PSI trigger (Documentation/accounting/psi.rst) as an sd-event
 * io source: "some|full STALL WINDOW" written to /proc/pressure/memory or
 * a cgroup's memory.pressure; the kernel raises POLLPRI when some (or all
 * non-idle) tasks stalled on memory for STALL within WINDOW. */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct sd_event sd_event;

struct psi_trigger;

enum psi_kind {
	PSI_SOME, /* at least one task stalled */
	PSI_FULL, /* all non-idle tasks stalled at once */
};

typedef void (*psi_handler_t)(struct psi_trigger *t, void *userdata);

/* Kernel limits of a trigger window, in ms. */
#define PSI_WINDOW_MIN_MS 500u
#define PSI_WINDOW_MAX_MS 10000u
/* Without CAP_SYS_RESOURCE a window must be a multiple of this. */
#define PSI_UNPRIV_WINDOW_MS 2000u

/* Format the trigger line; -EINVAL when the values are out of the kernel's
 * range (window 500 ms..10 s, 0 < stall <= window). Pure. */
int psi_trigger_format(char *buf, size_t size, enum psi_kind kind, unsigned stall_ms, unsigned window_ms);

/* The window an unprivileged trigger gets instead: rounded up to a
 * multiple of 2 s, the stall scaled by the same factor. Pure. */
void psi_unprivileged_window(unsigned stall_ms, unsigned window_ms, unsigned *ret_stall, unsigned *ret_window);

/* Open path relative to dirfd (AT_FDCWD for /proc/pressure/memory), write
 * the trigger and watch it on e. handler runs on every event; an error
 * condition on the file (cgroup removed) disables the source. When the
 * kernel refuses the window for lack of CAP_SYS_RESOURCE, the unprivileged
 * window above is used; psi_trigger_window_ms() tells which. */
int psi_trigger_new(sd_event *e, int dirfd, const char *path, enum psi_kind kind, unsigned stall_ms, unsigned window_ms,
		    psi_handler_t handler, void *userdata, struct psi_trigger **ret);
struct psi_trigger *psi_trigger_free(struct psi_trigger *t);

const char *psi_trigger_path(const struct psi_trigger *t);
unsigned psi_trigger_events(const struct psi_trigger *t);
unsigned psi_trigger_window_ms(const struct psi_trigger *t);
unsigned psi_trigger_stall_ms(const struct psi_trigger *t);

/* "some avg10=12.34 avg60=... total=..." (a PSI file's text): the avg10
 * of the line of kind, a percentage. -EINVAL when there is none. Pure. */
int psi_parse_avg10(const char *buf, size_t len, enum psi_kind kind, double *ret);
/* The same read from path relative to dirfd (a cgroup's memory.pressure,
 * or "pressure/memory" under /proc). */
int psi_read_avg10(int dirfd, const char *path, enum psi_kind kind, double *ret);
