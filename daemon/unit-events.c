/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <systemd/sd-bus.h>

#include "hashmap.h"
#include "log.h"
#include "unit-events.h"
#include "util.h"

/* systemd may be slow under load; a start is reported when it answers. */
#define ASK_TIMEOUT_USEC (10 * 1000000ULL)

/* A unit seen starting whose cgroup is being asked for. */
struct uw_ask {
	struct unit_events *w;
	char *unit;
	sd_bus_slot *slot;
};

struct unit_events {
	struct unit_events_callbacks cb;
	void *userdata;
	sd_bus *bus;
	sd_bus_slot *changed_slot;
	struct hashmap asks; /* unit -> struct uw_ask */
	unsigned long long n_started, n_stopped;
};

int unit_active_state_running(const char *s)
{
	if (streq(s, "activating") || streq(s, "active") || streq(s, "reloading"))
		return 1;
	if (streq(s, "inactive") || streq(s, "failed"))
		return 0;
	return -1;
}

const char *unit_cgroup_interface(const char *unit)
{
	static const struct {
		const char *suffix, *interface;
	} types[] = {
		{ ".service", "org.freedesktop.systemd1.Service" },
		{ ".scope", "org.freedesktop.systemd1.Scope" },
		{ ".socket", "org.freedesktop.systemd1.Socket" },
		{ ".mount", "org.freedesktop.systemd1.Mount" },
		{ ".swap", "org.freedesktop.systemd1.Swap" },
	};
	const char *dot = strrchr(unit, '.');

	for (size_t i = 0; dot && i < ELEMENTSOF(types); i++)
		if (streq(dot, types[i].suffix))
			return types[i].interface;
	return NULL;
}

static void ask_free(struct uw_ask *a)
{
	if (!a)
		return;
	sd_bus_slot_unref(a->slot);
	free(a->unit);
	free(a);
}

static void asks_drop(struct unit_events *w)
{
	struct uw_ask *a;
	size_t cursor = 0;

	while ((a = hashmap_steal(&w->asks, &cursor)))
		ask_free(a);
}

static int on_cgroup(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct uw_ask *a = userdata;
	struct unit_events *w = a->w;
	const char *cgroup = NULL;

	(void)ret_error;
	hashmap_remove(&w->asks, a->unit);
	if (sd_bus_message_is_method_error(reply, NULL))
		log_debug("cannot ask systemd for the cgroup of %s: %s", a->unit,
			  sd_bus_message_get_error(reply)->message ?: "error");
	else if (sd_bus_message_read(reply, "v", "s", &cgroup) >= 0 && cgroup && cgroup[0] == '/') {
		w->n_started++;
		w->cb.started(w->userdata, a->unit, cgroup);
	}
	ask_free(a);
	return 0;
}

static void ask_cgroup(struct unit_events *w, const char *unit, const char *path)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
	const char *interface = unit_cgroup_interface(unit);
	struct uw_ask *a;
	int r;

	if (!interface || hashmap_get(&w->asks, unit))
		return;
	a = calloc(1, sizeof(*a));
	if (!a || !(a->unit = strdup(unit))) {
		ask_free(a);
		return;
	}
	a->w = w;
	r = sd_bus_message_new_method_call(w->bus, &m, "org.freedesktop.systemd1", path,
					   "org.freedesktop.DBus.Properties", "Get");
	if (r >= 0)
		r = sd_bus_message_append(m, "ss", interface, "ControlGroup");
	if (r >= 0)
		r = sd_bus_call_async(w->bus, &a->slot, m, on_cgroup, a, ASK_TIMEOUT_USEC);
	if (r >= 0)
		r = hashmap_put(&w->asks, a->unit, a);
	if (r < 0) {
		log_debug_errno(r, "cannot ask systemd for the cgroup of %s: %m", unit);
		ask_free(a);
	}
}

static void unit_stopped(struct unit_events *w, const char *unit)
{
	ask_free(hashmap_remove(&w->asks, unit));
	w->n_stopped++;
	w->cb.stopped(w->userdata, unit);
}

/* PropertiesChanged of org.freedesktop.systemd1.Unit on a unit's path:
 * only ActiveState counts. */
static int on_changed(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error)
{
	struct unit_events *w = userdata;
	_cleanup_free_ char *unit = NULL;
	const char *interface, *path = sd_bus_message_get_path(msg);
	int r;

	(void)ret_error;
	if (!path || sd_bus_path_decode(path, "/org/freedesktop/systemd1/unit", &unit) <= 0)
		return 0;
	r = sd_bus_message_read(msg, "s", &interface);
	if (r < 0 || !streq(interface, "org.freedesktop.systemd1.Unit"))
		return 0;
	r = sd_bus_message_enter_container(msg, 'a', "{sv}");
	while (r > 0 && (r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
		const char *name, *state;

		r = sd_bus_message_read(msg, "s", &name);
		if (r >= 0 && streq(name, "ActiveState") && sd_bus_message_read(msg, "v", "s", &state) >= 0) {
			int running = unit_active_state_running(state);

			if (running > 0)
				ask_cgroup(w, unit, path);
			else if (running == 0)
				unit_stopped(w, unit);
			return 0;
		}
		if (r >= 0)
			r = sd_bus_message_skip(msg, "v");
		if (r >= 0)
			r = sd_bus_message_exit_container(msg);
	}
	return 0;
}

int unit_events_set_bus(struct unit_events *w, sd_bus *bus)
{
	int r;

	w->changed_slot = sd_bus_slot_unref(w->changed_slot);
	asks_drop(w); /* answers under way come over the old connection */
	w->bus = sd_bus_unref(w->bus);
	if (!bus)
		return 0;
	w->bus = sd_bus_ref(bus);
	r = sd_bus_add_match_async(bus, &w->changed_slot,
				   "type='signal',sender='org.freedesktop.systemd1',"
				   "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
				   "arg0='org.freedesktop.systemd1.Unit',path_namespace='/org/freedesktop/systemd1/unit'",
				   on_changed, NULL, w);
	return r;
}

int unit_events_new(const struct unit_events_callbacks *cb, void *userdata, struct unit_events **ret)
{
	struct unit_events *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->cb = *cb;
	w->userdata = userdata;
	hashmap_init(&w->asks, hash_string, equal_string);
	*ret = w;
	return 0;
}

struct unit_events *unit_events_free(struct unit_events *w)
{
	if (!w)
		return NULL;
	unit_events_set_bus(w, NULL);
	hashmap_done(&w->asks);
	free(w);
	return NULL;
}

void unit_events_counts(const struct unit_events *w, unsigned long long *started, unsigned long long *stopped)
{
	*started = w->n_started;
	*stopped = w->n_stopped;
}
