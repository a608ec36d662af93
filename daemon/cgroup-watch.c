/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/inotify.h>

#include "cgroup-watch.h"
#include "hashmap.h"
#include "util.h"

/* One inotify watch: on a cgroup's directory, or on its cgroup.events. */
struct cw_watch {
	int wd;
	unsigned what; /* CGROUP_WATCH_DIR or CGROUP_WATCH_EVENTS */
	struct cw_cgroup *c;
};

struct cw_cgroup {
	char *path;
	struct cw_watch *dir, *events;
};

struct cgroup_watch {
	int fd;
	char *root;
	struct hashmap by_wd;	/* wd -> struct cw_watch */
	struct hashmap by_path; /* path -> struct cw_cgroup */
	size_t n_watches;
};

int cgroup_watch_decode(const void *buf, size_t len, struct cgroup_watch_record *ret, size_t max)
{
	const char *p = buf;
	size_t n = 0;

	while (len > 0 && n < max) {
		struct inotify_event ev;
		struct cgroup_watch_record *r = &ret[n];

		if (len < sizeof(ev))
			return -EBADMSG;
		memcpy(&ev, p, sizeof(ev));
		if (ev.len > len - sizeof(ev))
			return -EBADMSG;
		*r = (struct cgroup_watch_record){ .wd = ev.wd, .kind = CGROUP_WATCH_OTHER, .name = "" };
		if (ev.len) {
			r->name = p + sizeof(ev);
			r->name_len = strnlen(r->name, ev.len);
		}
		if (ev.mask & IN_Q_OVERFLOW)
			r->kind = CGROUP_WATCH_OVERFLOW;
		else if (ev.mask & IN_IGNORED)
			r->kind = CGROUP_WATCH_IGNORED;
		else if ((ev.mask & IN_ISDIR) && (ev.mask & (IN_CREATE | IN_MOVED_TO)) && r->name_len)
			r->kind = CGROUP_WATCH_CREATED;
		else if ((ev.mask & IN_ISDIR) && (ev.mask & (IN_DELETE | IN_MOVED_FROM)) && r->name_len)
			r->kind = CGROUP_WATCH_REMOVED;
		else if (ev.mask & IN_MODIFY)
			r->kind = CGROUP_WATCH_MODIFIED;
		p += sizeof(ev) + ev.len;
		len -= sizeof(ev) + ev.len;
		n++;
	}
	return (int)n;
}

int cgroup_watch_new(const char *root, struct cgroup_watch **ret)
{
	struct cgroup_watch *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	hashmap_init(&w->by_wd, hash_int, equal_int);
	hashmap_init(&w->by_path, hash_string, equal_string);
	w->root = strdup(root);
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (!w->root || w->fd < 0) {
		int r = w->root ? -errno : -ENOMEM;

		cgroup_watch_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

static void cgroup_free(struct cw_cgroup *c)
{
	if (!c)
		return;
	free(c->dir);
	free(c->events);
	free(c->path);
	free(c);
}

struct cgroup_watch *cgroup_watch_free(struct cgroup_watch *w)
{
	struct cw_cgroup *c;
	size_t cursor = 0;

	if (!w)
		return NULL;
	while ((c = hashmap_steal(&w->by_path, &cursor)))
		cgroup_free(c);
	hashmap_done(&w->by_path);
	hashmap_done(&w->by_wd);
	closep(&w->fd);
	free(w->root);
	free(w);
	return NULL;
}

int cgroup_watch_fd(const struct cgroup_watch *w)
{
	return w->fd;
}

size_t cgroup_watch_count(const struct cgroup_watch *w)
{
	return w->n_watches;
}

unsigned cgroup_watch_has(const struct cgroup_watch *w, const char *cgroup)
{
	const struct cw_cgroup *c = hashmap_get(&w->by_path, cgroup);

	return c ? (c->dir ? CGROUP_WATCH_DIR : 0) | (c->events ? CGROUP_WATCH_EVENTS : 0) : 0;
}

static struct cw_cgroup *cgroup_get(struct cgroup_watch *w, const char *cgroup)
{
	struct cw_cgroup *c = hashmap_get(&w->by_path, cgroup);

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(cgroup)) || hashmap_put(&w->by_path, c->path, c) < 0) {
		cgroup_free(c);
		return NULL;
	}
	return c;
}

static int watch_one(struct cgroup_watch *w, struct cw_cgroup *c, unsigned what)
{
	struct cw_watch **slot = what == CGROUP_WATCH_DIR ? &c->dir : &c->events;
	uint32_t mask = what == CGROUP_WATCH_DIR ?
				IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW :
				IN_MODIFY | IN_DONT_FOLLOW;
	char path[PATH_MAX];
	struct cw_watch *x;
	int wd;

	if (*slot)
		return 0;
	if (snprintf(path, sizeof(path), "%s%s%s", w->root, streq(c->path, "/") ? "" : c->path,
		     what == CGROUP_WATCH_DIR ? "" : "/cgroup.events") >= (int)sizeof(path))
		return -ENAMETOOLONG;
	wd = inotify_add_watch(w->fd, path, mask);
	if (wd < 0)
		return -errno;
	/* The same inode watched again (a name that came back): the kernel
	 * returns the existing wd; it belongs to this path now. */
	x = hashmap_get(&w->by_wd, INT_TO_KEY(wd));
	if (x) {
		if (x->what == CGROUP_WATCH_DIR)
			x->c->dir = NULL;
		else
			x->c->events = NULL;
		hashmap_remove(&w->by_wd, INT_TO_KEY(wd));
		w->n_watches--;
	} else {
		x = calloc(1, sizeof(*x));
		if (!x) {
			(void)inotify_rm_watch(w->fd, wd);
			return -ENOMEM;
		}
	}
	*x = (struct cw_watch){ .wd = wd, .what = what, .c = c };
	if (hashmap_put(&w->by_wd, INT_TO_KEY(wd), x) < 0) {
		(void)inotify_rm_watch(w->fd, wd);
		free(x);
		return -ENOMEM;
	}
	*slot = x;
	w->n_watches++;
	return 0;
}

int cgroup_watch_add(struct cgroup_watch *w, const char *cgroup, unsigned what)
{
	struct cw_cgroup *c = cgroup_get(w, cgroup);
	int r = 0;

	if (!c)
		return -ENOMEM;
	if (what & CGROUP_WATCH_DIR)
		r = watch_one(w, c, CGROUP_WATCH_DIR);
	if (r >= 0 && (what & CGROUP_WATCH_EVENTS))
		r = watch_one(w, c, CGROUP_WATCH_EVENTS);
	if (!c->dir && !c->events) {
		hashmap_remove(&w->by_path, c->path);
		cgroup_free(c);
	}
	return r;
}

/* The kernel dropped the watch (its directory or file is gone). */
static void watch_gone(struct cgroup_watch *w, int wd)
{
	struct cw_watch *x = hashmap_remove(&w->by_wd, INT_TO_KEY(wd));
	struct cw_cgroup *c;

	if (!x)
		return;
	c = x->c;
	if (x->what == CGROUP_WATCH_DIR)
		c->dir = NULL;
	else
		c->events = NULL;
	free(x);
	w->n_watches--;
	if (!c->dir && !c->events) {
		hashmap_remove(&w->by_path, c->path);
		cgroup_free(c);
	}
}

static void report(struct cgroup_watch *w, const struct cgroup_watch_record *r,
		   const struct cgroup_watch_callbacks *cb, void *userdata)
{
	struct cw_watch *x = hashmap_get(&w->by_wd, INT_TO_KEY(r->wd));
	char path[PATH_MAX];

	if (r->kind == CGROUP_WATCH_OVERFLOW) {
		cb->overflow(userdata);
		return;
	}
	if (r->kind == CGROUP_WATCH_IGNORED) {
		/* Its directory is gone (the parent's watch, if any, says so
		 * too: the callback takes a second report as a no-op). */
		_cleanup_free_ char *gone = x && x->what == CGROUP_WATCH_DIR ? strdup(x->c->path) : NULL;

		watch_gone(w, r->wd);
		if (gone)
			cb->removed(userdata, gone);
		return;
	}
	if (!x)
		return;
	if (r->kind == CGROUP_WATCH_MODIFIED && x->what == CGROUP_WATCH_EVENTS) {
		cb->events(userdata, x->c->path);
		return;
	}
	if ((r->kind != CGROUP_WATCH_CREATED && r->kind != CGROUP_WATCH_REMOVED) || x->what != CGROUP_WATCH_DIR)
		return;
	if (snprintf(path, sizeof(path), "%s/%.*s", streq(x->c->path, "/") ? "" : x->c->path, (int)r->name_len,
		     r->name) >= (int)sizeof(path))
		return;
	if (r->kind == CGROUP_WATCH_CREATED)
		cb->created(userdata, path);
	else
		cb->removed(userdata, path);
}

int cgroup_watch_dispatch(struct cgroup_watch *w, const struct cgroup_watch_callbacks *cb, void *userdata)
{
	/* Aligned for struct inotify_event, room for many records. */
	union {
		struct inotify_event ev;
		char buf[16384];
	} u;
	struct cgroup_watch_record recs[sizeof(u.buf) / sizeof(struct inotify_event)];

	for (int round = 0; round < 64; round++) {
		ssize_t n = read(w->fd, u.buf, sizeof(u.buf));
		int k;

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		k = cgroup_watch_decode(u.buf, (size_t)n, recs, ELEMENTSOF(recs));
		if (k < 0)
			return k;
		for (int i = 0; i < k; i++)
			report(w, &recs[i], cb, userdata);
	}
	return 0;
}
