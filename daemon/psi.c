/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <systemd/sd-event.h>

#include "psi.h"
#include "util.h"

struct psi_trigger {
	int fd;
	char *path;
	sd_event_source *source;
	psi_handler_t handler;
	void *userdata;
	unsigned n_events;
};

int psi_trigger_format(char *buf, size_t size, unsigned stall_ms, unsigned window_ms)
{
	int n;

	if (window_ms < PSI_WINDOW_MIN_MS || window_ms > PSI_WINDOW_MAX_MS || stall_ms == 0 ||
	    stall_ms > window_ms)
		return -EINVAL;
	n = snprintf(buf, size, "some %u %u", stall_ms * 1000u, window_ms * 1000u);
	if (n < 0 || (size_t)n >= size)
		return -ENOBUFS;
	return 0;
}

static int on_psi(sd_event_source *s, int fd _unused_, uint32_t revents, void *userdata)
{
	struct psi_trigger *t = userdata;

	if (revents & (EPOLLERR | EPOLLHUP)) {
		/* The cgroup is gone or the trigger was torn down. */
		(void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
		return 0;
	}
	if (revents & EPOLLPRI) {
		t->n_events++;
		if (t->handler)
			t->handler(t, t->userdata);
	}
	return 0;
}

struct psi_trigger *psi_trigger_free(struct psi_trigger *t)
{
	if (!t)
		return NULL;
	sd_event_source_disable_unref(t->source);
	closep(&t->fd);
	free(t->path);
	free(t);
	return NULL;
}

int psi_trigger_new(sd_event *e, int dirfd, const char *path, unsigned stall_ms, unsigned window_ms,
		    psi_handler_t handler, void *userdata, struct psi_trigger **ret)
{
	struct psi_trigger *t;
	char line[64];
	ssize_t n;
	int r;

	r = psi_trigger_format(line, sizeof(line), stall_ms, window_ms);
	if (r < 0)
		return r;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->fd = -1;
	t->handler = handler;
	t->userdata = userdata;
	t->path = strdup(path);
	if (!t->path) {
		psi_trigger_free(t);
		return -ENOMEM;
	}
	t->fd = openat(dirfd, path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (t->fd < 0) {
		r = -errno;
		psi_trigger_free(t);
		return r;
	}
	/* The terminating NUL is part of what the kernel expects. */
	n = write(t->fd, line, strlen(line) + 1);
	if (n < 0) {
		r = -errno;
		psi_trigger_free(t);
		return r;
	}
	r = sd_event_add_io(e, &t->source, t->fd, EPOLLPRI, on_psi, t);
	if (r < 0) {
		psi_trigger_free(t);
		return r;
	}
	(void)sd_event_source_set_description(t->source, "psi-memory");
	*ret = t;
	return 0;
}

const char *psi_trigger_path(const struct psi_trigger *t)
{
	return t->path;
}

unsigned psi_trigger_events(const struct psi_trigger *t)
{
	return t->n_events;
}
