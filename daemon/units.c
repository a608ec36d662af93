/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "hashmap.h"
#include "log.h"
#include "units.h"
#include "util.h"

#define CACHE_MAX 65536

/* The daemon side. Lookups never block the loop: a unit not known yet
 * is asked about with two asynchronous property reads, and the processes
 * whose decision needs the answer wait in its entry, to be decided when
 * it comes (or fails, or times out: then without a section). */

/* A failed lookup (timeout, systemd busy) is asked again after this. */
#define RETRY_AFTER_NSEC (30ULL * 1000000000ULL)
/* Processes waiting on one unit's answer; past this, a rescan after it. */
#define WAITERS_MAX 4096
/* systemd may be slow under load; only this unit's decisions wait. */
#define LOOKUP_TIMEOUT_USEC (10 * 1000000ULL)

struct unit_entry {
	struct units *u;
	char *name;
	/* The answer, once there is one. */
	bool known, has_section, failed;
	bool stale; /* systemd reloaded since: ask again, meanwhile keep it */
	uint64_t asked_ns;
	struct rule_settings settings;
	char *source;
	/* While asking. */
	sd_bus_slot *fragment_slot, *dropins_slot;
	char *fragment;
	char **dropins;
	bool fragment_done, dropins_done, no_unit;
	int error;
	struct unit_waiter *waiters;
	size_t n_waiters;
	bool waiters_lost;
};

struct units {
	struct units_callbacks cb;
	void *userdata;
	sd_bus *bus;
	sd_bus_slot *reloading_slot, *owner_slot;
	struct hashmap cache; /* name -> struct unit_entry */
	bool systemd;	      /* org.freedesktop.systemd1 is on the bus */
	bool said_absent;
	uint64_t n_lookups, n_asked, n_failed;
	size_t n_pending;
	char state[128];
};

static void strv_free_(char **v)
{
	for (char **i = v; i && *i; i++)
		free(*i);
	free(v);
}

static bool entry_pending(const struct unit_entry *e)
{
	return e->fragment_slot || e->dropins_slot;
}

/* Stop asking (the replies, if any, are not wanted any more). */
static void entry_cancel(struct unit_entry *e)
{
	if (entry_pending(e))
		e->u->n_pending--;
	e->fragment_slot = sd_bus_slot_unref(e->fragment_slot);
	e->dropins_slot = sd_bus_slot_unref(e->dropins_slot);
	free(e->fragment);
	e->fragment = NULL;
	strv_free_(e->dropins);
	e->dropins = NULL;
	e->fragment_done = e->dropins_done = e->no_unit = false;
	e->error = 0;
}

static void entry_free(struct unit_entry *e)
{
	if (!e)
		return;
	entry_cancel(e);
	free(e->waiters);
	free(e->name);
	free(e->source);
	free(e);
}

static void schedule_rescan(struct units *u)
{
	u->cb.rescan(u->userdata);
}

/* Drop every entry. Processes waiting on one are seen again by a rescan. */
static void units_drop_all(struct units *u)
{
	struct unit_entry *ue;
	bool waiting = false;
	size_t cursor = 0;

	while ((ue = hashmap_steal(&u->cache, &cursor))) {
		waiting |= ue->n_waiters > 0 || ue->waiters_lost;
		entry_free(ue);
	}
	if (waiting)
		schedule_rescan(u);
}

/* After a systemd reload or a Reload call: every answer may be out of
 * date. Entries stay (status still lists them) and are asked again at
 * their next lookup. */
void units_flush(struct units *u)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&u->cache, &i, e))) {
		struct unit_entry *ue = e->value;

		if (entry_pending(ue)) {
			/* The answer under way may predate the reload. */
			entry_cancel(ue);
			if (ue->n_waiters || ue->waiters_lost)
				schedule_rescan(u);
			ue->n_waiters = 0;
			ue->waiters_lost = false;
		}
		ue->stale = true;
	}
}

static void set_systemd(struct units *u, bool present)
{
	u->systemd = present;
	if (present) {
		u->said_absent = false;
		/* Without a subscriber systemd sends no Reloading signal. */
		sd_bus_call_method_async(u->bus, NULL, "org.freedesktop.systemd1",
					 "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
					 "Subscribe", NULL, NULL, NULL);
		log_event(LOG_INFO, MID_UNIT_LOOKUP, NULL,
			  "systemd is on the bus: units' [X-ExecGuard] sections are read from their files and drop-ins");
	} else if (!u->said_absent) {
		u->said_absent = true;
		log_event(LOG_NOTICE, MID_UNIT_LOOKUP_OFF, NULL,
			  "systemd is not on the system bus: no unit [X-ExecGuard] sections are read, only %s",
			  "the policy files");
	}
}

static int on_reloading(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct units *u = userdata;
	int active = 0;

	(void)error;
	if (sd_bus_message_read(msg, "b", &active) < 0)
		return 0;
	if (active)
		return 0; /* act when it has finished */
	log_debug("systemd reloaded: reading units' [X-ExecGuard] sections again");
	units_flush(u);
	schedule_rescan(u);
	return 0;
}

static int on_owner_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct units *u = userdata;
	const char *name, *old, *new;

	(void)error;
	if (sd_bus_message_read(msg, "sss", &name, &old, &new) < 0 || !streq(name, "org.freedesktop.systemd1"))
		return 0;
	set_systemd(u, *new != '\0');
	units_flush(u);
	if (u->systemd)
		schedule_rescan(u);
	return 0;
}

static int on_name_has_owner(sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	struct units *u = userdata;
	int has = 0;

	(void)error;
	if (!sd_bus_message_is_method_error(reply, NULL))
		(void)sd_bus_message_read(reply, "b", &has);
	set_systemd(u, has);
	if (u->systemd && u->n_lookups)
		schedule_rescan(u);
	return 0;
}

int units_set_bus(struct units *u, sd_bus *bus)
{
	int r;

	u->reloading_slot = sd_bus_slot_unref(u->reloading_slot);
	u->owner_slot = sd_bus_slot_unref(u->owner_slot);
	/* Answers under way come over the old connection: drop them all.
	 * Sections read before (or looked up without) this connection may
	 * be stale too: a systemd reload could have passed unseen. */
	units_drop_all(u);
	u->bus = sd_bus_unref(u->bus);
	u->systemd = false;
	if (!bus)
		return 0;
	u->bus = sd_bus_ref(bus);
	r = sd_bus_match_signal_async(bus, &u->reloading_slot, "org.freedesktop.systemd1",
				      "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
				      "Reloading", on_reloading, NULL, u);
	if (r < 0)
		return r;
	r = sd_bus_add_match_async(bus, &u->owner_slot,
				   "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
				   "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
				   "arg0='org.freedesktop.systemd1'",
				   on_owner_changed, NULL, u);
	if (r < 0)
		return r;
	/* Until the answer, lookups find no systemd and decide without
	 * sections; the answer rescans if any lookup happened meanwhile. */
	return sd_bus_call_method_async(bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
					"org.freedesktop.DBus", "NameHasOwner", on_name_has_owner, u, "s",
					"org.freedesktop.systemd1");
}

static bool error_means_no_unit(const sd_bus_error *e)
{
	return sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit") ||
	       sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownObject") ||
	       sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownInterface") ||
	       sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownProperty") ||
	       sd_bus_error_has_name(e, "org.freedesktop.systemd1.LoadFailed");
}

/* The unit's [X-ExecGuard] section from its files, in systemd's order;
 * a broken file is reported (file:line) and ignored. 1: a section. */
static int entry_read_files(struct unit_entry *e, struct rule_settings *s, char **source)
{
	_cleanup_free_ const char **order = unit_files_order(e->fragment, e->dropins);
	struct policy errors;
	int r;

	policy_init(&errors);
	r = order ? unit_files_load(order, &errors, s, source) : -ENOMEM;
	for (size_t i = 0; i < errors.n_errors; i++) {
		const struct policy_error *pe = &errors.errors[i];
		struct log_fields f = LOG_FIELDS_INIT;

		f.unit = e->name;
		if (pe->line)
			log_event(LOG_WARNING, MID_UNIT_SECTION_INVALID, &f, "%s:%u: %s (unit %s; this file is ignored)",
				  pe->file, pe->line, pe->message, e->name);
		else
			log_event(LOG_WARNING, MID_UNIT_SECTION_INVALID, &f, "%s: %s (unit %s; this file is ignored)",
				  pe->file, pe->message, e->name);
	}
	policy_done(&errors);
	return r;
}

/* Both answers are in: read the files, keep the result, decide the
 * processes that waited for it. */
static void entry_complete(struct unit_entry *e)
{
	struct units *u = e->u;
	_cleanup_free_ char *source = NULL, *name = NULL;
	struct rule_settings s = { .protect = -1 };
	struct unit_waiter *waiters;
	size_t n_waiters;
	bool lost;
	int r = 0;

	if (e->error && !e->no_unit) {
		/* A timeout or a busy systemd says nothing about the unit: what
		 * was known before stays (a protected service is not dropped for
		 * it), a unit never seen has no section for now; asked again
		 * after a while rather than at every exec. */
		struct log_fields f = LOG_FIELDS_INIT;

		f.unit = e->name;
		log_event_errno(LOG_NOTICE, e->error, MID_UNIT_LOOKUP, &f,
				"cannot read unit %s's files from systemd: %m; %s, asking again in %llu s", e->name,
			  e->known ? "keeping what was read before" : "deciding without its [X-ExecGuard] section",
			  RETRY_AFTER_NSEC / 1000000000ULL);
		e->failed = true;
		u->n_failed++;
		if (e->known) {
			e->stale = false;
			entry_cancel(e);
			goto decide;
		}
	} else if (!e->no_unit) {
		r = entry_read_files(e, &s, &source);
		if (r < 0) {
			log_error_errno(r, "cannot read the unit files of %s: %m; deciding without its section",
				  e->name);
			e->failed = true;
			u->n_failed++;
		}
	}
	if (!e->error)
		e->failed = false;
	e->known = true;
	e->stale = false;
	e->has_section = r > 0;
	e->settings = r > 0 ? s : (struct rule_settings){ .protect = -1 };
	free(e->source);
	e->source = r > 0 ? TAKE_PTR(source) : NULL;
	entry_cancel(e); /* frees the answers; the slots are done */
decide:
	waiters = TAKE_PTR(e->waiters);
	n_waiters = e->n_waiters;
	lost = e->waiters_lost;
	e->n_waiters = 0;
	e->waiters_lost = false;
	/* Deciding may look this very unit up again (found known now), and
	 * a full cache drops every entry, this one too: the name is copied. */
	name = strdup(e->name);
	if (name)
		u->cb.answered(u->userdata, name, waiters, n_waiters);
	else
		lost = true;
	free(waiters);
	if (lost)
		schedule_rescan(u);
}

static void note_reply_error(struct unit_entry *e, sd_bus_message *reply, const char *what)
{
	const sd_bus_error *err = sd_bus_message_get_error(reply);

	if (error_means_no_unit(err)) {
		e->no_unit = true;
	} else {
		e->error = -sd_bus_message_get_errno(reply) ?: -EIO;
		log_debug("cannot ask systemd about %s (%s): %s", e->name, what,
			  err && err->message ? err->message : STRERROR(e->error));
	}
}

static int on_fragment(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct unit_entry *e = userdata;
	const char *s;

	(void)ret_error;
	e->fragment_slot = sd_bus_slot_unref(e->fragment_slot);
	e->fragment_done = true;
	if (sd_bus_message_is_method_error(reply, NULL))
		note_reply_error(e, reply, "FragmentPath");
	else if (sd_bus_message_read(reply, "v", "s", &s) < 0 || !(e->fragment = strdup(s)))
		e->error = -ENOMEM;
	if (e->dropins_done) {
		e->u->n_pending--;
		entry_complete(e);
	}
	return 0;
}

static int on_dropins(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct unit_entry *e = userdata;
	int r;

	(void)ret_error;
	e->dropins_slot = sd_bus_slot_unref(e->dropins_slot);
	e->dropins_done = true;
	if (sd_bus_message_is_method_error(reply, NULL)) {
		note_reply_error(e, reply, "DropInPaths");
	} else {
		r = sd_bus_message_enter_container(reply, 'v', "as");
		if (r >= 0)
			r = sd_bus_message_read_strv(reply, &e->dropins);
		if (r < 0)
			e->error = r;
	}
	if (e->fragment_done) {
		e->u->n_pending--;
		entry_complete(e);
	}
	return 0;
}

static int ask_property(struct unit_entry *e, const char *path, const char *property,
			sd_bus_message_handler_t handler, sd_bus_slot **slot)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
	int r;

	r = sd_bus_message_new_method_call(e->u->bus, &m, "org.freedesktop.systemd1", path,
					   "org.freedesktop.DBus.Properties", "Get");
	if (r >= 0)
		r = sd_bus_message_append(m, "ss", "org.freedesktop.systemd1.Unit", property);
	if (r >= 0)
		r = sd_bus_call_async(e->u->bus, slot, m, handler, e, LOOKUP_TIMEOUT_USEC);
	return r;
}

static int entry_ask(struct unit_entry *e)
{
	_cleanup_free_ char *path = NULL;
	int r;

	r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", e->name, &path);
	if (r >= 0)
		r = ask_property(e, path, "FragmentPath", on_fragment, &e->fragment_slot);
	if (r >= 0)
		r = ask_property(e, path, "DropInPaths", on_dropins, &e->dropins_slot);
	if (r < 0) {
		e->fragment_slot = sd_bus_slot_unref(e->fragment_slot);
		e->dropins_slot = sd_bus_slot_unref(e->dropins_slot);
		return r;
	}
	e->asked_ns = now_ns();
	e->u->n_asked++;
	e->u->n_pending++;
	return 0;
}

static int entry_wait(struct unit_entry *e, pid_t pid, uint64_t exec_ts)
{
	struct unit_waiter *w;

	if (pid <= 0)
		return 0;
	for (size_t i = 0; i < e->n_waiters; i++)
		if (e->waiters[i].pid == pid)
			return 0;
	if (e->n_waiters >= WAITERS_MAX) {
		e->waiters_lost = true;
		return 0;
	}
	w = realloc(e->waiters, (e->n_waiters + 1) * sizeof(*w));
	if (!w) {
		e->waiters_lost = true;
		return -ENOMEM;
	}
	e->waiters = w;
	e->waiters[e->n_waiters++] = (struct unit_waiter){ pid, exec_ts };
	return 0;
}

static struct unit_entry *entry_get(struct units *u, const char *unit)
{
	struct unit_entry *e = hashmap_get(&u->cache, unit);

	if (e)
		return e;
	if (u->cache.n_items >= CACHE_MAX)
		units_drop_all(u);
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->u = u;
	e->name = strdup(unit);
	e->settings.protect = -1;
	if (!e->name || hashmap_put(&u->cache, e->name, e) < 0) {
		entry_free(e);
		return NULL;
	}
	return e;
}

static bool entry_current(const struct unit_entry *e)
{
	return e->known && !e->stale && !(e->failed && now_ns() - e->asked_ns >= RETRY_AFTER_NSEC);
}

static int entry_answer(const struct unit_entry *e, struct rule_settings *ret, char **ret_source)
{
	if (!e->has_section)
		return 0;
	if (e->source && !(*ret_source = strdup(e->source)))
		return -ENOMEM;
	*ret = e->settings;
	return 1;
}

int units_lookup(void *userdata, const char *unit, pid_t pid, uint64_t exec_ts, struct rule_settings *ret,
		 char **ret_source)
{
	struct units *u = userdata;
	struct unit_entry *e;
	int r;

	u->n_lookups++;
	e = hashmap_get(&u->cache, unit);
	if (e && entry_current(e))
		return entry_answer(e, ret, ret_source);
	if (!u->bus || !u->systemd)
		return e && e->known ? entry_answer(e, ret, ret_source) : 0;
	e = entry_get(u, unit);
	if (!e)
		return -ENOMEM;
	if (!entry_pending(e)) {
		r = entry_ask(e);
		if (r < 0) {
			log_debug_errno(r, "cannot ask systemd about %s: %m", unit);
			return e->known ? entry_answer(e, ret, ret_source) : 0;
		}
	}
	r = entry_wait(e, pid, exec_ts);
	if (r < 0)
		return r;
	return UNIT_SETTINGS_PENDING;
}

const char *units_state(const struct units *u)
{
	struct units *w = (struct units *)u;

	if (!u->bus)
		snprintf(w->state, sizeof(w->state), "no system bus");
	else if (!u->systemd)
		snprintf(w->state, sizeof(w->state), "systemd not on the bus");
	else
		snprintf(w->state, sizeof(w->state), "systemd (%zu units cached, %zu being asked, %llu failed)",
			 u->cache.n_items, u->n_pending, (unsigned long long)u->n_failed);
	return u->state;
}

int units_foreach_section(struct units *u, units_section_fn fn, void *userdata)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&u->cache, &i, e))) {
		const struct unit_entry *ue = e->value;
		int r;

		if (!ue->known || !ue->has_section)
			continue;
		r = fn(ue->name, &ue->settings, ue->source, userdata);
		if (r != 0)
			return r;
	}
	return 0;
}

int units_new(const struct units_callbacks *cb, void *userdata, struct units **ret)
{
	struct units *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->cb = *cb;
	u->userdata = userdata;
	hashmap_init(&u->cache, hash_string, equal_string);
	*ret = u;
	return 0;
}

struct units *units_free(struct units *u)
{
	if (!u)
		return NULL;
	units_set_bus(u, NULL);
	units_drop_all(u);
	hashmap_done(&u->cache);
	free(u);
	return NULL;
}
