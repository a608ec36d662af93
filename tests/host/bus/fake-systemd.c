/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A stand-in for systemd on a private test bus: owns
 * org.freedesktop.systemd1, answers FragmentPath and DropInPaths of any
 * unit from a directory (DIR/NAME, DIR/NAME.d/ *.conf), and on SIGHUP
 * sends Reloading(true) and Reloading(false) as daemon-reload does.
 * The test's own method FakeUnitState(unit, state, cgroup) plays a unit
 * starting or stopping: the unit's ControlGroup becomes cgroup and its
 * PropertiesChanged signal says ActiveState=state, as systemd sends it
 * to subscribers.
 * Usage: fake-systemd DIR (bus from DBUS_SYSTEM_BUS_ADDRESS). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

static const char *dir;

/* Units FakeUnitState() told of, and their cgroups. */
static struct {
	char unit[256], cgroup[512];
} known[64];
static size_t n_known;

static char *unit_of(const char *path)
{
	char *name = NULL;

	if (sd_bus_path_decode(path, "/org/freedesktop/systemd1/unit", &name) <= 0)
		return NULL;
	return name;
}

static int get_fragment(sd_bus *bus, const char *path, const char *interface, const char *property,
			sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	char *name = unit_of(path), f[4096] = "";
	int r;

	(void)bus, (void)interface, (void)property, (void)userdata, (void)error;
	if (name) {
		snprintf(f, sizeof(f), "%s/%s", dir, name);
		if (access(f, F_OK) < 0)
			f[0] = '\0';
	}
	r = sd_bus_message_append(reply, "s", f);
	free(name);
	return r;
}

static int conf_filter(const struct dirent *d)
{
	size_t l = strlen(d->d_name);

	return l > 5 && strcmp(d->d_name + l - 5, ".conf") == 0;
}

static int get_dropins(sd_bus *bus, const char *path, const char *interface, const char *property,
		       sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	char *name = unit_of(path), d[4096];
	struct dirent **list = NULL;
	int n = 0, r;

	(void)bus, (void)interface, (void)property, (void)userdata, (void)error;
	r = sd_bus_message_open_container(reply, 'a', "s");
	if (name) {
		snprintf(d, sizeof(d), "%s/%s.d", dir, name);
		n = scandir(d, &list, conf_filter, alphasort);
	}
	for (int i = 0; i < n; i++) {
		char f[8192];

		snprintf(f, sizeof(f), "%s/%s", d, list[i]->d_name);
		if (r >= 0)
			r = sd_bus_message_append(reply, "s", f);
		free(list[i]);
	}
	free(list);
	free(name);
	return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int find_unit(sd_bus *bus, const char *path, const char *interface, void *userdata,
		     void **ret_found, sd_bus_error *error)
{
	char *name = unit_of(path);

	(void)bus, (void)interface, (void)error;
	if (!name)
		return 0;
	free(name);
	*ret_found = userdata;
	return 1;
}

static int get_cgroup(sd_bus *bus, const char *path, const char *interface, const char *property,
		      sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	char *name = unit_of(path);
	const char *cg = "";

	(void)bus, (void)interface, (void)property, (void)userdata, (void)error;
	for (size_t i = 0; name && i < n_known; i++)
		if (strcmp(known[i].unit, name) == 0)
			cg = known[i].cgroup;
	free(name);
	return sd_bus_message_append(reply, "s", cg);
}

static int method_fake_unit_state(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	sd_bus_message *sig = NULL;
	const char *unit, *state, *cgroup;
	char *path = NULL;
	size_t i;
	int r;

	(void)userdata, (void)error;
	r = sd_bus_message_read(m, "sss", &unit, &state, &cgroup);
	if (r < 0)
		return r;
	for (i = 0; i < n_known && strcmp(known[i].unit, unit) != 0; i++)
		;
	if (i == n_known && n_known < sizeof(known) / sizeof(known[0]))
		n_known++;
	if (i < n_known) {
		snprintf(known[i].unit, sizeof(known[i].unit), "%s", unit);
		snprintf(known[i].cgroup, sizeof(known[i].cgroup), "%s", cgroup);
	}
	r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path);
	if (r >= 0)
		r = sd_bus_message_new_signal(sd_bus_message_get_bus(m), &sig, path, "org.freedesktop.DBus.Properties",
					      "PropertiesChanged");
	if (r >= 0)
		r = sd_bus_message_append(sig, "sa{sv}as", "org.freedesktop.systemd1.Unit", 1, "ActiveState", "s", state, 0);
	if (r >= 0)
		r = sd_bus_send(NULL, sig, NULL);
	sd_bus_message_unref(sig);
	free(path);
	if (r < 0)
		return r;
	fprintf(stderr, "fake-systemd: %s %s in %s\n", unit, state, cgroup);
	return sd_bus_reply_method_return(m, NULL);
}

static int method_subscribe(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
	(void)userdata, (void)error;
	return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable unit_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("FragmentPath", "s", get_fragment, 0, 0),
	SD_BUS_PROPERTY("DropInPaths", "as", get_dropins, 0, 0),
	SD_BUS_VTABLE_END
};

static const sd_bus_vtable cgroup_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("ControlGroup", "s", get_cgroup, 0, 0),
	SD_BUS_VTABLE_END
};

static const sd_bus_vtable manager_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("Subscribe", "", "", method_subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("FakeUnitState", "sss", "", method_fake_unit_state, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_SIGNAL("Reloading", "b", 0),
	SD_BUS_VTABLE_END
};

static int on_hup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	sd_bus *bus = userdata;

	(void)s, (void)si;
	sd_bus_emit_signal(bus, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
			   "Reloading", "b", 1);
	sd_bus_emit_signal(bus, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
			   "Reloading", "b", 0);
	fprintf(stderr, "fake-systemd: reloaded\n");
	return 0;
}

static int on_term(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	(void)si, (void)userdata;
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

int main(int argc, char **argv)
{
	sd_event *e = NULL;
	sd_bus *bus = NULL;
	sigset_t mask;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: fake-systemd DIR\n");
		return 2;
	}
	dir = argv[1];
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if ((r = sd_event_default(&e)) < 0 || (r = sd_bus_open_system(&bus)) < 0 ||
	    (r = sd_bus_add_fallback_vtable(bus, NULL, "/org/freedesktop/systemd1/unit",
					    "org.freedesktop.systemd1.Unit", unit_vtable, find_unit,
					    NULL)) < 0 ||
	    (r = sd_bus_add_fallback_vtable(bus, NULL, "/org/freedesktop/systemd1/unit",
					    "org.freedesktop.systemd1.Service", cgroup_vtable, find_unit, NULL)) < 0 ||
	    (r = sd_bus_add_fallback_vtable(bus, NULL, "/org/freedesktop/systemd1/unit",
					    "org.freedesktop.systemd1.Scope", cgroup_vtable, find_unit, NULL)) < 0 ||
	    (r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1",
					  "org.freedesktop.systemd1.Manager", manager_vtable, NULL)) < 0 ||
	    (r = sd_bus_request_name(bus, "org.freedesktop.systemd1", 0)) < 0 ||
	    (r = sd_bus_attach_event(bus, e, 0)) < 0 ||
	    (r = sd_event_add_signal(e, NULL, SIGHUP, on_hup, bus)) < 0 ||
	    (r = sd_event_add_signal(e, NULL, SIGTERM, on_term, NULL)) < 0) {
		fprintf(stderr, "fake-systemd: %s\n", strerror(-r));
		return 1;
	}
	fprintf(stderr, "fake-systemd: ready\n");
	r = sd_event_loop(e);
	sd_bus_flush_close_unref(bus);
	sd_event_unref(e);
	return r < 0 ? 1 : 0;
}
