/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "backend.h"
#include "bus-containers.h"
#include "bus-status.h"
#include "bus-strings.h"
#include "bus.h"
#include "event-util.h"
#include "latency.h"
#include "log.h"
#include "manager-view.h"
#include "prewarm.h"
#include "units.h"
#include "util.h"

#define RETRY_MIN_USEC (1 * 1000000ULL)
#define RETRY_MAX_USEC (10 * 1000000ULL)
#define CALL_TIMEOUT_USEC (2 * 1000000ULL)

struct bus {
	struct manager *m;	  /* read through manager-view.h */
	struct units *units;
	struct bus_control ctl;	  /* what it may change, through the manager */
	void *userdata;
	sd_event *event;
	sd_bus *bus;
	sd_bus *dead;		  /* disconnected, dropped from a defer source */
	sd_event_source *retry, *drop;
	uint64_t retry_usec;
	bool said_absent;
	struct bus_status status; /* ListUnits/ListLibraries calls being answered */
};

/* Properties. */

static int get_property(sd_bus *bus, const char *path, const char *interface, const char *property,
			sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	const struct policy *p = manager_policy(b->m);
	struct manager_stats st;

	(void)bus;
	(void)path;
	(void)interface;
	(void)error;
	manager_get_stats(b->m, &st);
	if (streq(property, "Version"))
		return sd_bus_message_append(reply, "s", PROJECT_VERSION);
	if (streq(property, "Backend"))
		return sd_bus_message_append(reply, "s", st.backend);
	if (streq(property, "DryRun"))
		return sd_bus_message_append(reply, "b", st.dry_run);
	if (streq(property, "ProcessesProtected"))
		return sd_bus_message_append(reply, "u", (uint32_t)st.processes_protected);
	if (streq(property, "CgroupsProtected"))
		return sd_bus_message_append(reply, "u", (uint32_t)st.cgroups_protected);
	if (streq(property, "ExecEvents"))
		return sd_bus_message_append(reply, "t", st.exec_events);
	if (streq(property, "ExitEvents"))
		return sd_bus_message_append(reply, "t", st.exit_events);
	if (streq(property, "Decisions"))
		return sd_bus_message_append(reply, "t", st.decisions);
	if (streq(property, "Overflows"))
		return sd_bus_message_append(reply, "t", st.overflows);
	if (streq(property, "FullRescans"))
		return sd_bus_message_append(reply, "t", st.full_rescans);
	if (streq(property, "BackendErrors"))
		return sd_bus_message_append(reply, "t", st.backend_errors);
	if (streq(property, "LatencyP50USec"))
		return sd_bus_message_append(reply, "u", st.latency_p50_us);
	if (streq(property, "LatencyP99USec"))
		return sd_bus_message_append(reply, "u", st.latency_p99_us);
	if (streq(property, "LatencyMaxUSec"))
		return sd_bus_message_append(reply, "u", st.latency_max_us);
	if (streq(property, "LatencyBuckets")) {
		struct latency_bucket b[LATENCY_EXPORT_BUCKETS];
		int r = sd_bus_message_open_container(reply, 'a', "(tt)");

		latency_export(st.latency, b);
		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(b); i++)
			r = sd_bus_message_append(reply, "(tt)", b[i].le_us, b[i].count);
		return r < 0 ? r : sd_bus_message_close_container(reply);
	}
	if (streq(property, "LatencySumUSec"))
		return sd_bus_message_append(reply, "t", st.latency->sum_us);
	if (streq(property, "Rules"))
		return sd_bus_message_append(reply, "u", (uint32_t)p->n_rules);
	if (streq(property, "UnitLookup"))
		return sd_bus_message_append(reply, "s", units_state(b->units));
	if (streq(property, "PolicyFiles")) {
		int r = sd_bus_message_open_container(reply, 'a', "s");

		for (size_t i = 0; r >= 0 && i < p->n_files; i++) {
			_cleanup_(bus_names_done) struct bus_names bn = { 0 };
			const char *f = bus_name(&bn, p->files[i]);

			r = bn.err ?: sd_bus_message_append(reply, "s", f);
		}
		return r < 0 ? r : sd_bus_message_close_container(reply);
	}
	return -ENOENT;
}

/* Explain names the executable: bus_may_see(), the rule of the lists. */
static int may_explain(struct bus *b, sd_bus_message *msg, pid_t pid, sd_bus_error *error)
{
	uid_t uid, owner;
	int r;

	r = bus_caller_uid(msg, &uid);
	if (r < 0)
		return r;
	if (bus_may_see(manager_proc_fd(b->m), uid, pid))
		return 0;
	if (bus_process_owner(manager_proc_fd(b->m), pid, &owner) < 0)
		return sd_bus_error_setf(error, EXECGUARD_BUS_ERROR_NO_PROCESS, "No process %d", (int)pid);
	return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
				 "Process %d is not yours: only root may explain it", (int)pid);
}

static int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct manager_explanation e;
	char section[128];
	uint32_t pid;
	int r;

	r = sd_bus_message_read(msg, "u", &pid);
	if (r < 0)
		return r;
	if (pid == 0 || pid > INT32_MAX)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid PID %u", pid);
	r = may_explain(b, msg, (pid_t)pid, error);
	if (r < 0)
		return r;
	r = manager_explain(b->m, (pid_t)pid, &e);
	if (r == -ESRCH || r == -ENOENT)
		return sd_bus_error_setf(error, EXECGUARD_BUS_ERROR_NO_PROCESS,
					 "No process %u, or it has no cgroup2 path (kernel thread?)", pid);
	if (r < 0)
		return r;
	rule_settings_format(&e.unit_section, section, sizeof(section));
	r = sd_bus_message_new_method_return(msg, &reply);
	if (r >= 0) {
		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const char *unit = bus_name(&bn, strempty(e.unit)), *cgroup = bus_name(&bn, strempty(e.cgroup));
		const char *exe = bus_name(&bn, strempty(e.exe));
		const char *source = bus_name(&bn, strempty(e.decision.protect_source));
		const char *section_source = bus_name(&bn, strempty(e.unit_section_source));
		/* No source but a text: systemd is being asked (execguardctl(1)). */
		const char *sect = bus_name(&bn, e.unit_section_source ? section :
						 e.unit_section_pending ? "not known yet: systemd is being asked" : "");

		r = bn.err ?: sd_bus_message_append(reply, "ssssbbsss", unit, cgroup, exe,
						   manager_backend(b->m, NULL)->name, e.decision.protect,
						   e.tracked, source, sect, section_source);
	}
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(ssus)");
	for (size_t i = 0; r >= 0 && i < e.decision.n_matched; i++) {
		const struct rule *rule = e.decision.matched[i];
		char s[128];

		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const char *name = bus_name(&bn, rule->name), *file = bus_name(&bn, rule->file);

		rule_settings_format(&rule->settings, s, sizeof(s));
		r = bn.err ?: sd_bus_message_append(reply, "(ssus)", name, file, rule->line, s);
	}
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	/* Protect=auto's state for the unit, "" when it is not watched. */
	if (r >= 0)
		r = sd_bus_message_append(reply, "s", e.auto_state);
	manager_explanation_done(&e);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
	return r;
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	const struct policy *p;
	struct policy rejected;
	char summary[128];
	int r;

	r = b->ctl.reload(b->userdata, &rejected);
	if (r < 0) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (!f) {
			policy_done(&rejected);
			return -ENOMEM;
		}
		policy_print_errors(&rejected, f);
		fprintf(f, "%zu error%s; the previous policy stays in force", rejected.n_errors,
			rejected.n_errors == 1 ? "" : "s");
		fclose(f);
		policy_done(&rejected);
		if (!text)
			return -ENOMEM;
		{
			_cleanup_free_ char *escaped = utf8_escape_invalid_text(text, &r);

			if (r < 0) {
				free(text);
				return r;
			}
			r = sd_bus_error_set(error, EXECGUARD_BUS_ERROR_REJECTED, escaped ?: text);
		}
		free(text);
		return r;
	}
	p = manager_policy(b->m);
	snprintf(summary, sizeof(summary), "policy reloaded: %zu rule%s from %zu file%s", p->n_rules,
		 p->n_rules == 1 ? "" : "s", p->n_files, p->n_files == 1 ? "" : "s");
	return sd_bus_reply_method_return(msg, "s", summary);
}

/* Prewarm's figures per unit: bounded (prewarm follows at most a few
 * thousand units), answered at once. Empty when prewarm is off. */
static int method_list_prewarm(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_free_ struct prewarm_unit_report *reps = NULL;
	size_t n = 0;
	int r;

	(void)error;
	r = prewarm_report(manager_prewarm(b->m), &reps, &n);
	if (r < 0)
		return r;
	r = sd_bus_message_new_method_return(msg, &reply);
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(ssttttttx)");
	for (size_t i = 0; r >= 0 && i < n; i++) {
		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const char *key = bus_name(&bn, reps[i].key);

		r = bn.err ?: sd_bus_message_append(reply, "(ssttttttx)", key, strna(reps[i].state),
						   reps[i].recorded_bytes, reps[i].recorded_files,
						   reps[i].replayed_bytes, reps[i].planned_bytes, reps[i].replays,
						   reps[i].invalidated_files, reps[i].recorded_at);
	}
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	if (r < 0)
		return r;
	return sd_bus_send(NULL, reply, NULL);
}

static int method_list_units(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;

	return bus_status_list_units(&b->status, msg, false, error);
}

static int method_list_units_ex(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;

	return bus_status_list_units(&b->status, msg, true, error);
}

static int method_list_libraries(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;

	return bus_status_list_libraries(&b->status, msg, error);
}

#define PROP(name, sig) SD_BUS_PROPERTY(name, sig, get_property, 0, 0)

static const sd_bus_vtable manager_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("Version", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	PROP("Backend", "s"),
	PROP("DryRun", "b"),
	PROP("ProcessesProtected", "u"),
	PROP("CgroupsProtected", "u"),
	PROP("ExecEvents", "t"),
	PROP("ExitEvents", "t"),
	PROP("Decisions", "t"),
	PROP("Overflows", "t"),
	PROP("FullRescans", "t"),
	PROP("BackendErrors", "t"),
	PROP("LatencyP50USec", "u"),
	PROP("LatencyP99USec", "u"),
	PROP("LatencyMaxUSec", "u"),
	PROP("LatencyBuckets", "a(tt)"),
	PROP("LatencySumUSec", "t"),
	PROP("Rules", "u"),
	PROP("PolicyFiles", "as"),
	PROP("UnitLookup", "s"),
	SD_BUS_METHOD_WITH_NAMES("ListUnits", "", , "a(sssbsuttttt)",
				 SD_BUS_PARAM(units), method_list_units, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ListUnitsEx", "", , "a(sssbsutttttssts)", SD_BUS_PARAM(units),
				 method_list_units_ex, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ListLibraries", "", , "a(suuttts)", SD_BUS_PARAM(libraries),
				 method_list_libraries, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ListPrewarm", "", , "a(ssttttttx)", SD_BUS_PARAM(units),
				 method_list_prewarm, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("Explain", "u", SD_BUS_PARAM(pid), "ssssbbsssa(ssus)s",
				 SD_BUS_PARAM(unit) SD_BUS_PARAM(cgroup) SD_BUS_PARAM(exe)
					 SD_BUS_PARAM(backend) SD_BUS_PARAM(protect)
					 SD_BUS_PARAM(tracked) SD_BUS_PARAM(decided_by)
					 SD_BUS_PARAM(unit_section) SD_BUS_PARAM(unit_section_source)
					 SD_BUS_PARAM(rules) SD_BUS_PARAM(auto_state),
				 method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
	/* No UNPRIVILEGED flag: sd-bus asks for CAP_SYS_ADMIN. */
	SD_BUS_METHOD_WITH_NAMES("Reload", "", , "s", SD_BUS_PARAM(summary), method_reload, 0),
	SD_BUS_VTABLE_END
};

/* The connection and its life. */

static int bus_connect(struct bus *b);

static void arm_retry(struct bus *b)
{
	(void)event_timer_set(b->retry, event_now(b->event) + b->retry_usec);
	b->retry_usec = b->retry_usec * 2 > RETRY_MAX_USEC ? RETRY_MAX_USEC : b->retry_usec * 2;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct bus *b = userdata;

	(void)s;
	(void)usec;
	if (bus_connect(b) < 0)
		arm_retry(b);
	return 0;
}

static int on_drop(sd_event_source *s, void *userdata)
{
	struct bus *b = userdata;

	(void)s;
	if (b->dead) {
		sd_bus_detach_event(b->dead);
		sd_bus_close(b->dead);
		b->dead = sd_bus_unref(b->dead);
	}
	return 0;
}

static int on_filter(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;

	(void)error;
	if (!sd_bus_message_is_signal(msg, "org.freedesktop.DBus.Local", "Disconnected") || !b->bus)
		return 0;
	log_event(LOG_WARNING, MID_BUS_LOST, NULL,
		  "lost the system bus: protection goes on, without the D-Bus interface and new unit lookups; reconnecting");
	b->ctl.connected(b->userdata, NULL);
	b->dead = TAKE_PTR(b->bus);
	(void)event_source_enable(b->drop, SD_EVENT_ONESHOT);
	b->retry_usec = RETRY_MIN_USEC;
	b->said_absent = true;
	arm_retry(b);
	return 0;
}

static int on_name(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	const sd_bus_error *e = sd_bus_message_get_error(msg);

	(void)userdata;
	(void)error;
	if (e)
		log_event(LOG_ERR, MID_BUS, NULL,
			  "cannot own %s on the system bus: %s (another execguardd? bus policy %s not installed?)",
			  EXECGUARD_BUS_NAME, e->message ?: e->name, "org.execguard.Manager1.conf");
	else
		log_event(LOG_INFO, MID_BUS_NAME, NULL, "on the system bus as %s", EXECGUARD_BUS_NAME);
	return 0;
}

static int bus_open(struct bus *b, sd_bus **ret)
{
	_cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
	int r;

	r = sd_bus_open_system_with_description(&bus, "execguardd");
	if (r < 0)
		return r;
	sd_bus_set_method_call_timeout(bus, CALL_TIMEOUT_USEC);
	if ((r = sd_bus_add_filter(bus, NULL, on_filter, b)) < 0 ||
	    (r = sd_bus_add_object_vtable(bus, NULL, EXECGUARD_BUS_PATH, EXECGUARD_BUS_INTERFACE,
					  manager_vtable, b)) < 0 ||
	    (r = bus_containers_add(bus, b->m)) < 0 ||
	    (r = sd_bus_request_name_async(bus, NULL, EXECGUARD_BUS_NAME, 0, on_name, b)) < 0 ||
	    (r = sd_bus_attach_event(bus, b->event, SD_EVENT_PRIORITY_NORMAL)) < 0)
		return r;
	*ret = TAKE_PTR(bus);
	return 0;
}

static int bus_connect(struct bus *b)
{
	int r;

	r = bus_open(b, &b->bus);
	if (r < 0) {
		if (!b->said_absent) {
			b->said_absent = true;
			log_event_errno(LOG_NOTICE, r, MID_BUS, NULL,
					"no system bus (%m): working without the D-Bus interface and unit [X-ExecGuard] lookups; retrying in the background");
		}
		return r;
	}
	if (b->said_absent)
		log_event(LOG_NOTICE, MID_BUS_BACK, NULL, "connected to the system bus again");
	b->said_absent = false;
	b->retry_usec = RETRY_MIN_USEC;
	b->ctl.connected(b->userdata, b->bus);
	return 0;
}

int bus_new(struct manager *m, struct units *u, const struct bus_control *ctl, void *userdata, struct bus **ret)
{
	struct bus *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	b->m = m;
	b->units = u;
	b->ctl = *ctl;
	b->userdata = userdata;
	b->event = manager_event(m);
	b->status = (struct bus_status){ .event = b->event, .m = m, .units = u };
	b->retry_usec = RETRY_MIN_USEC;
	r = event_add_timer(b->event, &b->retry, "bus-retry", on_retry, b);
	if (r >= 0)
		r = event_add_defer(b->event, &b->drop, "bus-drop", on_drop, b);
	if (r < 0) {
		bus_free(b);
		return r;
	}
	if (bus_connect(b) < 0)
		arm_retry(b);
	*ret = b;
	return 0;
}

struct bus *bus_free(struct bus *b)
{
	if (!b)
		return NULL;
	bus_status_done(&b->status);
	if (b->bus)
		b->ctl.connected(b->userdata, NULL);
	if (b->bus) {
		sd_bus_detach_event(b->bus);
		b->bus = sd_bus_flush_close_unref(b->bus);
	}
	on_drop(NULL, b);
	sd_event_source_unref(b->retry);
	sd_event_source_unref(b->drop);
	free(b);
	return NULL;
}
