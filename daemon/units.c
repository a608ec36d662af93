/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "hashmap.h"
#include "log.h"
#include "manager.h"
#include "units.h"
#include "util.h"

#define UNIT_FILE_MAX (1 << 20)
#define CACHE_MAX 65536

static const char *skip_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* Whether buf has an [X-ExecGuard] section; the line of its last
 * Protect= (0: none). */
static bool scan_section(const char *buf, size_t len, unsigned *ret_protect_line)
{
	const char *p = buf, *end = buf + len;
	bool in = false, found = false;
	unsigned line = 0;

	*ret_protect_line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *l = skip_blank(p, e);

		line++;
		if (l < e && *l == '[') {
			const char *close = memchr(l, ']', (size_t)(e - l));

			in = close && (size_t)(close - l - 1) == strlen("X-ExecGuard") &&
			     memcmp(l + 1, "X-ExecGuard", strlen("X-ExecGuard")) == 0;
			found |= in;
		} else if (in && (size_t)(e - l) > 7 && memcmp(l, "Protect", 7) == 0 &&
			   *skip_blank(l + 7, e) == '=') {
			*ret_protect_line = line;
		}
		p = nl ? nl + 1 : end;
	}
	return found;
}

unsigned unit_file_protect_line(const char *buf, size_t len)
{
	unsigned line;

	scan_section(buf, len, &line);
	return line;
}

const char **unit_files_order(const char *fragment, char *const *dropins)
{
	size_t n = 0, k = 0;
	const char **v;

	for (char *const *d = dropins; d && *d; d++)
		n++;
	v = calloc(n + 2, sizeof(char *));
	if (!v)
		return NULL;
	if (fragment && *fragment && !streq(fragment, "/dev/null"))
		v[k++] = fragment;
	for (char *const *d = dropins; d && *d; d++)
		/* A drop-in linked to /dev/null masks nothing of ours. */
		if (**d && !streq(*d, "/dev/null"))
			v[k++] = *d;
	return v;
}

int unit_files_merge(const struct unit_file *files, size_t n, struct policy *errors_to,
		     struct rule_settings *ret, char **ret_source)
{
	struct rule_settings merged = { .protect = -1 };
	_cleanup_free_ char *source = NULL;
	const char *last = NULL;
	bool found = false;

	for (size_t i = 0; i < n; i++) {
		struct rule_settings s = { .protect = -1 };
		unsigned line;
		int r;

		if (!scan_section(files[i].buf, files[i].len, &line))
			continue;
		r = policy_parse_unit_buffer(&s, errors_to, files[i].path, files[i].buf, files[i].len);
		if (r < 0)
			return r;
		if (r > 0)
			continue; /* reported; the file counts for nothing */
		found = true;
		last = files[i].path;
		if (s.protect >= 0) {
			free(source);
			source = NULL;
			if (asprintf(&source, "%s:%u", files[i].path, line) < 0)
				return -ENOMEM;
			merged.protect = s.protect;
		}
		if (s.lock_budget.set)
			merged.lock_budget = s.lock_budget;
	}
	if (!found)
		return 0;
	if (!source && !(source = strdup(last)))
		return -ENOMEM;
	*ret = merged;
	*ret_source = TAKE_PTR(source);
	return 1;
}

static int read_unit_file(const char *path, struct policy *errors_to, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	const char *why;
	int r;

	/* Unit files are often symlinks (systemctl link, packaging): follow
	 * them, and judge the file they lead to. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* removed since systemd loaded it */
		return policy_add_error(errors_to, path, 0, "cannot open: %s", strerror(errno)) ?: -errno;
	}
	r = policy_check_file_mode(fd, &why);
	if (r == -EPERM)
		return policy_add_error(errors_to, path, 0, "refused: %s", why) ?: r;
	if (r < 0)
		return r;
	r = read_fd(fd, UNIT_FILE_MAX, ret_buf, ret_len);
	if (r < 0)
		return policy_add_error(errors_to, path, 0, "cannot read: %s", strerror(-r)) ?: r;
	return 1;
}

int unit_files_load(const char *const *paths, struct policy *errors_to, struct rule_settings *ret,
		    char **ret_source)
{
	struct unit_file *files;
	size_t n = 0, k = 0;
	int r = 0;

	for (const char *const *p = paths; *p; p++)
		n++;
	files = calloc(n ? n : 1, sizeof(*files));
	if (!files)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char *buf = NULL;
		size_t len = 0;

		r = read_unit_file(paths[i], errors_to, &buf, &len);
		if (r == -ENOMEM)
			goto out;
		if (r > 0)
			files[k++] = (struct unit_file){ .path = paths[i], .buf = buf, .len = len };
	}
	r = unit_files_merge(files, k, errors_to, ret, ret_source);
out:
	for (size_t i = 0; i < k; i++)
		free((char *)files[i].buf);
	free(files);
	return r;
}

void rule_settings_format(const struct rule_settings *s, char *buf, size_t size)
{
	size_t l = 0;

	buf[0] = '\0';
	if (s->protect >= 0)
		l += (size_t)snprintf(buf + l, size - l, "Protect=%s", s->protect ? "yes" : "no");
	if (s->lock_budget.set && l < size) {
		if (s->lock_budget.percent)
			snprintf(buf + l, size - l, "%sLockBudget=%u%%", l ? " " : "",
				 s->lock_budget.percent);
		else
			snprintf(buf + l, size - l, "%sLockBudget=%llu", l ? " " : "",
				 (unsigned long long)s->lock_budget.bytes);
	}
}

/* The daemon side. */

struct unit_entry {
	char *name;
	bool has_section;
	struct rule_settings settings;
	char *source;
};

struct units {
	struct manager *m;
	sd_bus *bus;
	sd_bus_slot *reloading_slot, *owner_slot;
	sd_event_source *rescan;
	struct hashmap cache; /* name -> struct unit_entry */
	bool systemd;	      /* org.freedesktop.systemd1 is on the bus */
	bool said_absent;
	uint64_t n_lookups;
	char state[96];
};

static void entry_free(struct unit_entry *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->source);
	free(e);
}

void units_flush(struct units *u)
{
	struct hashmap_entry *e;
	size_t i;

	for (;;) {
		i = 0;
		e = hashmap_next(&u->cache, &i, NULL);
		if (!e)
			break;
		struct unit_entry *ue = e->value;

		hashmap_remove(&u->cache, ue->name);
		entry_free(ue);
	}
}

static void schedule_rescan(struct units *u)
{
	if (u->rescan)
		sd_event_source_set_enabled(u->rescan, SD_EVENT_ONESHOT);
}

static int on_rescan(sd_event_source *s, void *userdata)
{
	struct units *u = userdata;

	(void)s;
	manager_rescan(u->m);
	return 0;
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
		log_event(LOG_NOTICE, MID_UNIT_LOOKUP, NULL,
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

int units_set_bus(struct units *u, sd_bus *bus)
{
	int r, has = 0;

	u->reloading_slot = sd_bus_slot_unref(u->reloading_slot);
	u->owner_slot = sd_bus_slot_unref(u->owner_slot);
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
	{
		_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

		if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
				       "org.freedesktop.DBus", "NameHasOwner", NULL, &reply, "s",
				       "org.freedesktop.systemd1") >= 0)
			sd_bus_message_read(reply, "b", &has);
	}
	set_systemd(u, has);
	/* Sections read before (or looked up without) this connection may
	 * be stale: a systemd reload could have passed unseen. */
	units_flush(u);
	if (u->n_lookups)
		schedule_rescan(u);
	return 0;
}

static int cache_put(struct units *u, const char *unit, bool has, const struct rule_settings *s,
		     const char *source)
{
	struct unit_entry *e;

	if (u->cache.n_items >= CACHE_MAX)
		units_flush(u);
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->name = strdup(unit);
	e->has_section = has;
	if (has)
		e->settings = *s;
	e->source = source ? strdup(source) : NULL;
	if (!e->name || (source && !e->source) || hashmap_put(&u->cache, e->name, e) < 0) {
		entry_free(e);
		return -ENOMEM;
	}
	return 0;
}

static bool error_means_no_unit(const sd_bus_error *e)
{
	return sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit") ||
	       sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownObject") ||
	       sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownInterface") ||
	       sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.UnknownProperty") ||
	       sd_bus_error_has_name(e, "org.freedesktop.systemd1.LoadFailed");
}

static void strv_free_(char **v)
{
	for (char **i = v; i && *i; i++)
		free(*i);
	free(v);
}

int units_lookup(void *userdata, const char *unit, struct rule_settings *ret, char **ret_source)
{
	struct units *u = userdata;
	struct unit_entry *e;
	_cleanup_free_ char *path = NULL, *fragment = NULL, *source = NULL;
	_cleanup_free_ const char **order = NULL;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	struct rule_settings s = { .protect = -1 };
	struct policy errors;
	char **dropins = NULL;
	int r;

	u->n_lookups++;
	e = hashmap_get(&u->cache, unit);
	if (e) {
		if (!e->has_section)
			return 0;
		if (e->source && !(*ret_source = strdup(e->source)))
			return -ENOMEM;
		*ret = e->settings;
		return 1;
	}
	if (!u->bus || !u->systemd)
		return 0;
	r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path);
	if (r < 0)
		return r;
	r = sd_bus_get_property_string(u->bus, "org.freedesktop.systemd1", path,
				       "org.freedesktop.systemd1.Unit", "FragmentPath", &error, &fragment);
	if (r >= 0)
		r = sd_bus_get_property_strv(u->bus, "org.freedesktop.systemd1", path,
					     "org.freedesktop.systemd1.Unit", "DropInPaths", &error,
					     &dropins);
	if (r < 0) {
		bool none = error_means_no_unit(&error);

		log_debug("cannot ask systemd about %s: %s", unit, error.message ?: strerror(-r));
		sd_bus_error_free(&error);
		/* No such unit: remember. Anything else (timeout, the bus went
		 * away): ask again next time. */
		return none ? cache_put(u, unit, false, NULL, NULL) : 0;
	}
	order = unit_files_order(fragment, dropins);
	if (!order) {
		strv_free_(dropins);
		return -ENOMEM;
	}
	policy_init(&errors);
	r = unit_files_load(order, &errors, &s, &source);
	for (size_t i = 0; i < errors.n_errors; i++) {
		const struct policy_error *pe = &errors.errors[i];
		struct log_fields f = LOG_FIELDS_INIT;

		f.unit = unit;
		if (pe->line)
			log_event(LOG_WARNING, MID_UNIT_SECTION_INVALID, &f, "%s:%u: %s (unit %s; this file is ignored)",
				  pe->file, pe->line, pe->message, unit);
		else
			log_event(LOG_WARNING, MID_UNIT_SECTION_INVALID, &f, "%s: %s (unit %s; this file is ignored)",
				  pe->file, pe->message, unit);
	}
	policy_done(&errors);
	strv_free_(dropins);
	if (r < 0)
		return r;
	r = cache_put(u, unit, r > 0, &s, source);
	if (r < 0)
		return r;
	e = hashmap_get(&u->cache, unit);
	if (!e || !e->has_section)
		return 0;
	*ret = s;
	*ret_source = TAKE_PTR(source);
	return 1;
}

const char *units_state(const struct units *u)
{
	struct units *w = (struct units *)u;

	if (!u->bus)
		snprintf(w->state, sizeof(w->state), "no system bus");
	else if (!u->systemd)
		snprintf(w->state, sizeof(w->state), "systemd not on the bus");
	else
		snprintf(w->state, sizeof(w->state), "systemd (%zu units cached)", u->cache.n_items);
	return u->state;
}

int units_foreach_section(struct units *u, units_section_fn fn, void *userdata)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&u->cache, &i, e))) {
		const struct unit_entry *ue = e->value;
		int r;

		if (!ue->has_section)
			continue;
		r = fn(ue->name, &ue->settings, ue->source, userdata);
		if (r != 0)
			return r;
	}
	return 0;
}

int units_new(struct manager *m, struct units **ret)
{
	struct units *u = calloc(1, sizeof(*u));
	int r;

	if (!u)
		return -ENOMEM;
	u->m = m;
	hashmap_init(&u->cache, hash_string, equal_string);
	r = sd_event_add_defer(manager_event(m), &u->rescan, on_rescan, u);
	if (r < 0) {
		units_free(u);
		return r;
	}
	sd_event_source_set_enabled(u->rescan, SD_EVENT_OFF);
	manager_set_unit_settings(m, units_lookup, u);
	*ret = u;
	return 0;
}

struct units *units_free(struct units *u)
{
	if (!u)
		return NULL;
	units_set_bus(u, NULL);
	units_flush(u);
	hashmap_done(&u->cache);
	sd_event_source_unref(u->rescan);
	free(u);
	return NULL;
}
