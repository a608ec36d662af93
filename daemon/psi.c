/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <systemd/sd-event.h>

#include "event-util.h"
#include "psi.h"
#include "util.h"

struct psi_trigger {
	int fd;
	char *path;
	sd_event_source *source;
	psi_handler_t handler;
	void *userdata;
	unsigned n_events;
	unsigned stall_ms, window_ms;
};

int psi_trigger_format(char *buf, size_t size, enum psi_kind kind, unsigned stall_ms, unsigned window_ms)
{
	int n;

	if (window_ms < PSI_WINDOW_MIN_MS || window_ms > PSI_WINDOW_MAX_MS || stall_ms == 0 ||
	    stall_ms > window_ms)
		return -EINVAL;
	n = snprintf(buf, size, "%s %u %u", kind == PSI_FULL ? "full" : "some", stall_ms * 1000u,
		     window_ms * 1000u);
	if (n < 0 || (size_t)n >= size)
		return -ENOBUFS;
	return 0;
}

static int on_psi(sd_event_source *s, int fd _unused_, uint32_t revents, void *userdata)
{
	struct psi_trigger *t = userdata;

	if (revents & (EPOLLERR | EPOLLHUP)) {
		/* The cgroup is gone or the trigger was torn down. */
		(void)event_source_enable(s, SD_EVENT_OFF);
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

static int write_trigger(int fd, enum psi_kind kind, unsigned stall_ms, unsigned window_ms)
{
	char line[64];
	ssize_t n;
	int r;

	r = psi_trigger_format(line, sizeof(line), kind, stall_ms, window_ms);
	if (r < 0)
		return r;
	/* The terminating NUL is part of what the kernel expects. */
	n = write(fd, line, strlen(line) + 1);
	return n < 0 ? -errno : 0;
}

void psi_unprivileged_window(unsigned stall_ms, unsigned window_ms, unsigned *ret_stall, unsigned *ret_window)
{
	unsigned w = (window_ms + PSI_UNPRIV_WINDOW_MS - 1) / PSI_UNPRIV_WINDOW_MS * PSI_UNPRIV_WINDOW_MS;

	if (w > PSI_WINDOW_MAX_MS)
		w = PSI_WINDOW_MAX_MS;
	*ret_window = w;
	*ret_stall = (unsigned)((unsigned long long)stall_ms * w / window_ms);
	if (*ret_stall == 0)
		*ret_stall = 1;
}

int psi_trigger_new(sd_event *e, int dirfd, const char *path, enum psi_kind kind, unsigned stall_ms,
		    unsigned window_ms, psi_handler_t handler, void *userdata, struct psi_trigger **ret)
{
	struct psi_trigger *t;
	char line[64];
	int r;

	r = psi_trigger_format(line, sizeof(line), kind, stall_ms, window_ms);
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
	r = write_trigger(t->fd, kind, stall_ms, window_ms);
	if (r == -EINVAL && window_ms % PSI_UNPRIV_WINDOW_MS) {
		/* Without CAP_SYS_RESOURCE the kernel takes only windows that
		 * are multiples of 2 s: keep the same share of stall. */
		psi_unprivileged_window(stall_ms, window_ms, &stall_ms, &window_ms);
		r = write_trigger(t->fd, kind, stall_ms, window_ms);
	}
	if (r < 0) {
		psi_trigger_free(t);
		return r;
	}
	t->stall_ms = stall_ms;
	t->window_ms = window_ms;
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

unsigned psi_trigger_window_ms(const struct psi_trigger *t)
{
	return t->window_ms;
}

unsigned psi_trigger_stall_ms(const struct psi_trigger *t)
{
	return t->stall_ms;
}

int psi_parse_avg10(const char *buf, size_t len, enum psi_kind kind, double *ret)
{
	const char *want = kind == PSI_SOME ? "some " : "full ";
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;

		if ((size_t)(le - p) > 11 && memcmp(p, want, 5) == 0 && memcmp(p + 5, "avg10=", 6) == 0) {
			char num[32];
			size_t n = 0;
			char *e;
			double v;

			for (const char *q = p + 11; q < le && *q != ' ' && n < sizeof(num) - 1; q++)
				num[n++] = *q;
			num[n] = '\0';
			/* Digits and one dot only: strtod() would take "inf", "0x1p3". */
			if (n == 0 || strspn(num, "0123456789.") != n)
				return -EINVAL;
			errno = 0;
			v = strtod(num, &e);
			if (errno || *e || v < 0 || v > 100)
				return -EINVAL;
			*ret = v;
			return 0;
		}
		p = le + 1;
	}
	return -EINVAL;
}

int psi_read_avg10(int dirfd, const char *path, enum psi_kind kind, double *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_file_at(dirfd, path, 4096, &buf, &len);
	if (r < 0)
		return r;
	return psi_parse_avg10(buf, len, kind, ret);
}
