/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgroupfs tells when a cgroup appears or goes (inotify on mkdir and
 * rmdir works there) and when its cgroup.events changes (populated 0 or
 * 1). One inotify instance over the cgroup2 tree (or a fake one in
 * tests); its fd goes into the caller's event loop, and dispatching it
 * reports through the callbacks passed in. The decoding of inotify
 * records is a pure function over a buffer (tests and the fuzzer). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cgroup_watch;

enum {
	CGROUP_WATCH_DIR = 1 << 0,    /* its child cgroups appearing and going */
	CGROUP_WATCH_EVENTS = 1 << 1, /* its cgroup.events */
};

struct cgroup_watch_callbacks {
	void (*created)(void *userdata, const char *cgroup); /* a child of a watched directory */
	void (*removed)(void *userdata, const char *cgroup);
	void (*events)(void *userdata, const char *cgroup);  /* its cgroup.events changed */
	void (*overflow)(void *userdata);		     /* the queue overflowed: events lost */
};

/* root: where the cgroup2 tree is mounted (paths are taken below it). */
int cgroup_watch_new(const char *root, struct cgroup_watch **ret);
struct cgroup_watch *cgroup_watch_free(struct cgroup_watch *w);
int cgroup_watch_fd(const struct cgroup_watch *w);
/* Watch cgroup ("/system.slice/x.service") for what (CGROUP_WATCH_*);
 * adding what is watched already is a no-op. -ENOENT: no such cgroup;
 * -ENOSPC: fs.inotify.max_user_watches reached. */
int cgroup_watch_add(struct cgroup_watch *w, const char *cgroup, unsigned what);
/* What of cgroup is watched (CGROUP_WATCH_* bits). */
unsigned cgroup_watch_has(const struct cgroup_watch *w, const char *cgroup);
size_t cgroup_watch_count(const struct cgroup_watch *w);
/* Read what is queued and report it; -errno when the fd fails. */
int cgroup_watch_dispatch(struct cgroup_watch *w, const struct cgroup_watch_callbacks *cb, void *userdata);

/* One inotify record, decoded: what happened to name in the watch wd. */
enum cgroup_watch_kind {
	CGROUP_WATCH_CREATED,
	CGROUP_WATCH_REMOVED,
	CGROUP_WATCH_MODIFIED, /* a file changed (cgroup.events) */
	CGROUP_WATCH_IGNORED,  /* the watch is gone (its directory removed) */
	CGROUP_WATCH_OVERFLOW,
	CGROUP_WATCH_OTHER,
};
struct cgroup_watch_record {
	int wd;
	enum cgroup_watch_kind kind;
	const char *name; /* points into the buffer; "" when none */
	size_t name_len;
};
/* Decode the records in buf (what read() on an inotify fd gave): at most
 * max into ret, their count; -EBADMSG for a truncated record. */
int cgroup_watch_decode(const void *buf, size_t len, struct cgroup_watch_record *ret, size_t max);
