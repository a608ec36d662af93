/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What tells the daemon of cgroups and units: inotify records decoded
 * from buffers, the cgroup watcher on a real directory tree (inotify
 * works on any file system, as on cgroupfs), and how the unit watcher
 * reads systemd's unit states and types. */
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-watch.h"
#include "test.h"
#include "unit-events.h"
#include "util.h"

/* One inotify record in buf at *len. */
static void put(char *buf, size_t *len, int wd, uint32_t mask, const char *name)
{
	struct inotify_event ev = { .wd = wd, .mask = mask, .len = name ? 16 : 0 };

	memcpy(buf + *len, &ev, sizeof(ev));
	*len += sizeof(ev);
	if (name) {
		memset(buf + *len, 0, 16);
		memcpy(buf + *len, name, strlen(name));
		*len += 16;
	}
}

static void test_decode(void)
{
	union {
		struct inotify_event ev;
		char b[1024];
	} u;
	struct cgroup_watch_record r[8];
	size_t len = 0;

	put(u.b, &len, 1, IN_CREATE | IN_ISDIR, "x.service");
	put(u.b, &len, 1, IN_DELETE | IN_ISDIR, "y.service");
	put(u.b, &len, 2, IN_MODIFY, NULL);
	put(u.b, &len, 1, IN_CREATE, "a-file"); /* not a cgroup */
	put(u.b, &len, 3, IN_IGNORED, NULL);
	put(u.b, &len, -1, IN_Q_OVERFLOW, NULL);
	put(u.b, &len, 1, IN_MOVED_TO | IN_ISDIR, "z.scope");
	CHECK_EQ_INT(cgroup_watch_decode(u.b, len, r, ELEMENTSOF(r)), 7);
	CHECK_EQ_INT(r[0].kind, CGROUP_WATCH_CREATED);
	CHECK_EQ_INT(r[0].name_len, strlen("x.service"));
	CHECK(strncmp(r[0].name, "x.service", r[0].name_len) == 0);
	CHECK_EQ_INT(r[1].kind, CGROUP_WATCH_REMOVED);
	CHECK_EQ_INT(r[2].kind, CGROUP_WATCH_MODIFIED);
	CHECK_EQ_INT(r[2].wd, 2);
	CHECK_EQ_INT(r[3].kind, CGROUP_WATCH_OTHER);
	CHECK_EQ_INT(r[4].kind, CGROUP_WATCH_IGNORED);
	CHECK_EQ_INT(r[5].kind, CGROUP_WATCH_OVERFLOW);
	CHECK_EQ_INT(r[6].kind, CGROUP_WATCH_CREATED);
	/* Truncated: a header cut short, a name longer than what is left. */
	CHECK_EQ_INT(cgroup_watch_decode(u.b, sizeof(struct inotify_event) - 1, r, 8), -EBADMSG);
	CHECK_EQ_INT(cgroup_watch_decode(u.b, sizeof(struct inotify_event) + 4, r, 8), -EBADMSG);
	CHECK_EQ_INT(cgroup_watch_decode(u.b, 0, r, 8), 0);
}

/* What the callbacks heard, "c:/a/b e:/a r:/a/b " ... */
static char heard[1024];
static void on_created(void *userdata, const char *cg)
{
	(void)userdata;
	snprintf(heard + strlen(heard), sizeof(heard) - strlen(heard), "c:%s ", cg);
}
static void on_removed(void *userdata, const char *cg)
{
	(void)userdata;
	snprintf(heard + strlen(heard), sizeof(heard) - strlen(heard), "r:%s ", cg);
}
static void on_events(void *userdata, const char *cg)
{
	(void)userdata;
	snprintf(heard + strlen(heard), sizeof(heard) - strlen(heard), "e:%s ", cg);
}
static void on_overflow(void *userdata)
{
	(void)userdata;
	strcat(heard, "overflow ");
}
static const struct cgroup_watch_callbacks cb = { on_created, on_removed, on_events, on_overflow };

static void test_watch(void)
{
	char root[] = "/tmp/execguard-test-watch-XXXXXX", p[512];
	struct cgroup_watch *w = NULL;

	CHECK(mkdtemp(root) != NULL);
	snprintf(p, sizeof(p), "%s/a", root);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/a/cgroup.events", root);
	CHECK(close(open(p, O_WRONLY | O_CREAT, 0644)) == 0);
	CHECK_EQ_INT(cgroup_watch_new(root, &w), 0);
	if (!w)
		return;
	CHECK_EQ_INT(cgroup_watch_add(w, "/", CGROUP_WATCH_DIR), 0);
	CHECK_EQ_INT(cgroup_watch_add(w, "/a", CGROUP_WATCH_DIR | CGROUP_WATCH_EVENTS), 0);
	CHECK_EQ_INT(cgroup_watch_add(w, "/a", CGROUP_WATCH_DIR), 0); /* again: nothing new */
	CHECK_EQ_INT(cgroup_watch_count(w), 3);
	CHECK_EQ_INT(cgroup_watch_has(w, "/a"), CGROUP_WATCH_DIR | CGROUP_WATCH_EVENTS);
	CHECK_EQ_INT(cgroup_watch_add(w, "/missing", CGROUP_WATCH_DIR), -ENOENT);
	CHECK_EQ_INT(cgroup_watch_has(w, "/missing"), 0);

	snprintf(p, sizeof(p), "%s/a/b", root);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/a/cgroup.events", root);
	{
		int fd = open(p, O_WRONLY | O_TRUNC);

		CHECK(write(fd, "populated 1\n", 12) == 12);
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/a/b", root);
	CHECK(rmdir(p) == 0);
	CHECK_EQ_INT(cgroup_watch_dispatch(w, &cb, NULL), 0);
	CHECK_STREQ(heard, "c:/a/b e:/a r:/a/b ");

	/* The watched directory itself goes: its parent says so, and its own
	 * watch too (when no parent is watched, that is the only word). */
	heard[0] = '\0';
	snprintf(p, sizeof(p), "rm -rf '%s/a'", root);
	CHECK(system(p) == 0);
	CHECK_EQ_INT(cgroup_watch_dispatch(w, &cb, NULL), 0);
	CHECK(strstr(heard, "r:/a ") != NULL);
	CHECK_EQ_INT(cgroup_watch_has(w, "/a"), 0);
	CHECK_EQ_INT(cgroup_watch_count(w), 1);
	cgroup_watch_free(w);
	CHECK(rmdir(root) == 0);
}

static void test_units(void)
{
	CHECK_EQ_INT(unit_active_state_running("activating"), 1);
	CHECK_EQ_INT(unit_active_state_running("active"), 1);
	CHECK_EQ_INT(unit_active_state_running("reloading"), 1);
	CHECK_EQ_INT(unit_active_state_running("inactive"), 0);
	CHECK_EQ_INT(unit_active_state_running("failed"), 0);
	CHECK_EQ_INT(unit_active_state_running("deactivating"), -1);
	CHECK_EQ_INT(unit_active_state_running(""), -1);
	CHECK_STREQ(unit_cgroup_interface("nginx.service"), "org.freedesktop.systemd1.Service");
	CHECK_STREQ(unit_cgroup_interface("libpod-0123.scope"), "org.freedesktop.systemd1.Scope");
	CHECK_STREQ(unit_cgroup_interface("dbus.socket"), "org.freedesktop.systemd1.Socket");
	CHECK(unit_cgroup_interface("system.slice") == NULL);
	CHECK(unit_cgroup_interface("multi-user.target") == NULL);
	CHECK(unit_cgroup_interface("noextension") == NULL);
}

TEST_MAIN(test_decode, test_watch, test_units)
