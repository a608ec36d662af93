/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguardctl: ask the running execguardd over D-Bus what it protects,
 * explain its decisions, reload it; check a policy without it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <json-c/json.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "bus-stats.h"
#include "bus-names.h"
#include "ctl-containers.h"
#include "ctl-json.h"
#include "ctl-segments.h"
#include "metrics.h"
#include "policy.h"
#include "unit-files.h"
#include "util.h"

/* Exit codes, in execguardctl(1). */
enum {
	EXIT_OK = 0,
	EXIT_FAILED = 1,  /* errors in the policy, reload rejected, no such process */
	EXIT_USAGE = 2,
	EXIT_NO_DAEMON = 3, /* no bus, execguardd not on it, or no answer in time */
};

static bool arg_json;
static uint64_t arg_timeout_usec; /* 0: sd-bus's default (25 s) */
static const char *arg_config; /* NULL: the defaults */
static const char *arg_output; /* metrics: write here, atomically */
static const char *arg_cgroup_root = "/sys/fs/cgroup";
static bool arg_cgroup_root_set;
static const char *arg_cgroup;	   /* segments --cgroup= */
static const char **arg_files;	   /* segments --file=, repeated */
static size_t arg_n_files;

static void help(void)
{
	printf("Usage: execguardctl [OPTIONS] COMMAND\n"
	       "\n"
	       "Inspect and control execguardd, which keeps the program text of chosen\n"
	       "services in memory.\n"
	       "\n"
	       "Commands:\n"
	       "  status                 Backend, counters and every protected unit: protected\n"
	       "                         or why not, processes, text mapped and resident,\n"
	       "                         locked bytes, major faults, breaches; then prewarm:\n"
	       "                         what each unit's record holds and what was read back\n"
	       "  libs                   Executable files the protected processes map, the\n"
	       "                         most shared first\n"
	       "  explain PID            Which policy applies to PID and why\n"
	       "  check-config [UNIT-FILE...]\n"
	       "                         Check the policy files and the [X-ExecGuard] sections\n"
	       "                         of the given unit files or drop-ins (default: every\n"
	       "                         one under /etc, /run and /usr/lib/systemd/system);\n"
	       "                         needs no daemon\n"
	       "  reload                 Reload the policy; prints the errors if it is rejected\n"
	       "  keys                   Every policy key, per section, and what it does\n"
	       "  metrics                The figures of status in the Prometheus text format,\n"
	       "                         for node_exporter's textfile collector\n"
	       "  segments UNIT|PID|--cgroup=PATH [--file=PATH...]\n"
	       "                         For every file the processes map and every file named:\n"
	       "                         its ELF segments (r--, r-x, rw-), their size and how\n"
	       "                         much of them is in the page cache; needs no daemon\n"
	       "\n"
	       "Options:\n"
	       "  -h --help              Show this help\n"
	       "     --version           Show the version\n"
	       "     --json              Print JSON instead of tables\n"
	       "  -c --config=FILE       Policy file for check-config, with only its own drop-ins\n"
	       "                         (default %s and the drop-ins of\n"
	       "                         %s)\n"
	       "     --timeout=SEC       Wait at most SEC seconds for each answer (default 25)\n"
	       "     --output=FILE       metrics: replace FILE atomically (a temporary file in\n"
	       "                         its directory, renamed) instead of printing\n"
	       "     --cgroup-root=DIR   metrics: where to read memory.exec_protect (default\n"
	       "                         /sys/fs/cgroup; execguardd's --cgroup-root);\n"
	       "                         segments: the cgroup2 mount (default: found)\n"
	       "     --cgroup=PATH       segments: the processes of this cgroup2 path (from\n"
	       "                         the root) and of the cgroups below it\n"
	       "     --file=PATH         segments: this file too, mapped or not (what a service\n"
	       "                         runs per request); repeatable\n"
	       "\n"
	       "Exit status: 0 success, 1 failure (errors, rejected reload, no such process),\n"
	       "2 usage, 3 execguardd not reachable or no answer in time. See execguardctl(1).\n",
	       DEFAULT_CONFIG, DEFAULT_DROPIN_DIRS_TEXT);
}

/* Output helpers. Every --json document is built as a json-c tree and
 * printed once: well-formed by construction, whatever the order of the
 * code that fills it. */

/* A string as JSON: names the daemon did not escape (paths of policy
 * files, their errors) get the same \\xNN for bytes that are not UTF-8. */
static struct json_object *json_str(const char *s)
{
	int err;
	_cleanup_free_ char *e = utf8_escape_invalid_text(strempty(s), &err);

	return json_object_new_string(e ?: strempty(s));
}

/* null for "", as for a unit a process is not in. */
static struct json_object *json_str_or_null(const char *s)
{
	return s && *s ? json_str(s) : NULL;
}

/* A figure; null for one the machine cannot give. */
static struct json_object *json_u64(uint64_t v)
{
	return v == STAT_UNKNOWN ? NULL : json_object_new_uint64(v);
}

static void json_put(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

/* Print the document (ctl-json.h) and free it. */
static int json_print(struct json_object *o)
{
	return ctl_json_print(o) < 0 ? EXIT_FAILED : EXIT_OK;
}

static const char *fmt_bytes(uint64_t v, char *buf, size_t size)
{
	static const char units[] = "KMGT";
	double d = (double)v;
	int u = -1;

	if (v == STAT_UNKNOWN) {
		snprintf(buf, size, "-");
		return buf;
	}
	if (v < 1024) {
		snprintf(buf, size, "%lluB", (unsigned long long)v);
		return buf;
	}
	while (d >= 1024 && u < 3) {
		d /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f%c", d, units[u]);
	return buf;
}

static const char *fmt_u64(uint64_t v, char *buf, size_t size)
{
	if (v == STAT_UNKNOWN)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%llu", (unsigned long long)v);
	return buf;
}

/* The bus. */

static int connect_daemon(sd_bus **ret)
{
	int r = sd_bus_open_system(ret);

	if (r < 0) {
		fprintf(stderr, "execguardctl: cannot connect to the system bus: %s\n", STRERROR(r));
		return -EXIT_NO_DAEMON;
	}
	if (arg_timeout_usec)
		(void)sd_bus_set_method_call_timeout(*ret, arg_timeout_usec);
	return 0;
}

/* NoReply is both "timed out" and "went away without answering": who owns
 * the name now tells them apart. */
static bool daemon_on_bus(sd_bus *bus)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	int has = 0;

	if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
			       "NameHasOwner", NULL, &reply, "s", EXECGUARD_BUS_NAME) < 0 ||
	    sd_bus_message_read(reply, "b", &has) < 0)
		return false;
	return has;
}

/* Turn a failed call into a message and an exit code. */
static int call_failed(sd_bus *bus, const char *what, const sd_bus_error *e, int r)
{
	if ((sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) || r == -ETIMEDOUT) && daemon_on_bus(bus)) {
		uint64_t t = 0;

		(void)sd_bus_get_method_call_timeout(bus, &t);
		fprintf(stderr, "execguardctl: execguardd is on the system bus but did not answer %s within %.1f s (busy or stopped? see --timeout=)\n",
			what, (double)t / 1e6);
		return EXIT_NO_DAEMON;
	}
	if (sd_bus_error_has_name(e, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
	    sd_bus_error_has_name(e, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
	    sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) ||
	    sd_bus_error_has_name(e, SD_BUS_ERROR_DISCONNECTED)) {
		fprintf(stderr, "execguardctl: execguardd is not running (no %s on the system bus)\n",
			EXECGUARD_BUS_NAME);
		return EXIT_NO_DAEMON;
	}
	if (sd_bus_error_has_name(e, EXECGUARD_BUS_ERROR_REJECTED)) {
		fprintf(stderr, "%s\n", e->message);
		return EXIT_FAILED;
	}
	if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED)) {
		fprintf(stderr, "execguardctl: %s: permission denied (%s)\n", what,
			strstr(what, "Reload") ? "only root may reload" : strna(e->message));
		return EXIT_FAILED;
	}
	fprintf(stderr, "execguardctl: %s: %s\n", what,
		e && e->message ? e->message : STRERROR(r));
	return EXIT_FAILED;
}

static int call(sd_bus *bus, const char *method, sd_bus_message **reply, const char *types, ...)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	va_list ap;
	int r;

	r = sd_bus_message_new_method_call(bus, &m, EXECGUARD_BUS_NAME, EXECGUARD_BUS_PATH,
					   EXECGUARD_BUS_INTERFACE, method);
	if (r >= 0 && types) {
		va_start(ap, types);
		r = sd_bus_message_appendv(m, types, ap);
		va_end(ap);
	}
	if (r >= 0)
		r = sd_bus_call(bus, m, 0, &e, reply);
	if (r < 0) {
		r = call_failed(bus, method, &e, r);
		sd_bus_error_free(&e);
		return -r;
	}
	return 0;
}

struct props {
	const char *version, *backend, *unit_lookup;
	int dry_run;
	uint32_t processes, cgroups, rules, p50, p99, max;
	uint64_t execs, exits, decisions, overflows, rescans, backend_errors;
	/* Exec to decision, cumulative; none from a daemon without them. */
	struct latency_bucket buckets[LATENCY_EXPORT_BUCKETS];
	size_t n_buckets;
	uint64_t latency_sum;
};

/* LatencyBuckets: a(tt), cumulative, the last +Inf. */
static int read_buckets(sd_bus_message *m, struct props *p)
{
	uint64_t le, count;
	int r;

	r = sd_bus_message_enter_container(m, 'v', "a(tt)");
	if (r >= 0)
		r = sd_bus_message_enter_container(m, 'a', "(tt)");
	while (r >= 0 && (r = sd_bus_message_read(m, "(tt)", &le, &count)) > 0)
		if (p->n_buckets < ELEMENTSOF(p->buckets))
			p->buckets[p->n_buckets++] = (struct latency_bucket){ .le_us = le, .count = count };
	if (r >= 0)
		r = sd_bus_message_exit_container(m);
	if (r >= 0)
		r = sd_bus_message_exit_container(m);
	/* A histogram must end in +Inf: else none. */
	if (p->n_buckets && p->buckets[p->n_buckets - 1].le_us != LATENCY_INF)
		p->n_buckets = 0;
	return r;
}

static int get_props(sd_bus *bus, sd_bus_message **reply, struct props *p)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	const char *name;
	int r;

	r = sd_bus_call_method(bus, EXECGUARD_BUS_NAME, EXECGUARD_BUS_PATH,
			       "org.freedesktop.DBus.Properties", "GetAll", &e, reply, "s",
			       EXECGUARD_BUS_INTERFACE);
	if (r < 0) {
		r = call_failed(bus, "GetAll", &e, r);
		sd_bus_error_free(&e);
		return -r;
	}
	*p = (struct props){ 0 };
	r = sd_bus_message_enter_container(*reply, 'a', "{sv}");
	while (r >= 0 && (r = sd_bus_message_enter_container(*reply, 'e', "sv")) > 0) {
		struct { const char *n; char t; void *v; } map[] = {
			{ "Version", 's', &p->version },	{ "Backend", 's', &p->backend },
			{ "UnitLookup", 's', &p->unit_lookup }, { "DryRun", 'b', &p->dry_run },
			{ "ProcessesProtected", 'u', &p->processes }, { "Rules", 'u', &p->rules },
			{ "CgroupsProtected", 'u', &p->cgroups },
			{ "LatencyP50USec", 'u', &p->p50 },	{ "LatencyP99USec", 'u', &p->p99 },
			{ "LatencyMaxUSec", 'u', &p->max },	{ "ExecEvents", 't', &p->execs },
			{ "ExitEvents", 't', &p->exits },	{ "Decisions", 't', &p->decisions },
			{ "Overflows", 't', &p->overflows },	{ "FullRescans", 't', &p->rescans },
			{ "BackendErrors", 't', &p->backend_errors },
			{ "LatencySumUSec", 't', &p->latency_sum },
		};
		bool done = false;

		r = sd_bus_message_read(*reply, "s", &name);
		if (r >= 0 && streq(name, "LatencyBuckets")) {
			r = read_buckets(*reply, p);
			done = true;
		}
		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(map) && !done; i++)
			if (streq(name, map[i].n)) {
				char sig[2] = { map[i].t, 0 };

				r = sd_bus_message_read(*reply, "v", sig, map[i].v);
				done = true;
			}
		if (r >= 0 && !done)
			r = sd_bus_message_skip(*reply, "v");
		if (r >= 0)
			r = sd_bus_message_exit_container(*reply);
	}
	if (r >= 0)
		r = sd_bus_message_exit_container(*reply);
	if (r < 0) {
		fprintf(stderr, "execguardctl: bad reply from execguardd: %s\n", STRERROR(r));
		return -EXIT_FAILED;
	}
	return 0;
}

static void print_prewarm(sd_bus *bus, struct json_object *root);

/* Protect=auto's phrase in a unit's state ("auto: protected since ...",
 * "auto: watched, not protected (...)"), as JSON; null when not watched. */
static struct json_object *json_auto(const char *state)
{
	const char *p = strstr(state, "auto: "), *end;
	char buf[256];

	if (!p || (p != state && strncmp(p - 2, ", ", 2) != 0))
		return NULL;
	end = strstr(p, " (policy ");
	snprintf(buf, sizeof(buf), "%.*s", (int)(end ? end - p : (ptrdiff_t)strlen(p)), p);
	return json_str(buf);
}

/* One row of ListUnitsEx; the strings point into the reply. */
struct unit_row {
	const char *unit, *cgroup, *backend, *state;
	int protected_now;
	uint32_t processes;
	uint64_t mapped, resident, locked, major_faults, breaches;
	const char *reason, *reason_source;
	uint64_t text_faults;
	const char *text_fault_source;
};

#define UNIT_ROW "(sssbsutttttssts)"

/* The array's next row: 1, 0 at its end, <0 on a bad reply. */
static int read_unit_row(sd_bus_message *reply, struct unit_row *u)
{
	return sd_bus_message_read(reply, UNIT_ROW, &u->unit, &u->cgroup, &u->backend, &u->protected_now,
				   &u->state, &u->processes, &u->mapped, &u->resident, &u->locked,
				   &u->major_faults, &u->breaches, &u->reason, &u->reason_source,
				   &u->text_faults, &u->text_fault_source);
}

/* Text faults in the table: an estimate is marked "~". */
static const char *fmt_text_faults(const struct unit_row *u, char *buf, size_t size)
{
	if (u->text_faults == STAT_UNKNOWN)
		return fmt_u64(u->text_faults, buf, size);
	snprintf(buf, size, "%s%llu", streq(u->text_fault_source, "estimate") ? "~" : "",
		 (unsigned long long)u->text_faults);
	return buf;
}

static struct json_object *json_unit_row(const struct unit_row *u)
{
	struct json_object *o = json_object_new_object();

	json_put(o, "unit", json_str(u->unit));
	json_put(o, "cgroup", json_str(u->cgroup));
	json_put(o, "backend", json_str(u->backend));
	json_put(o, "protected", json_object_new_boolean(u->protected_now));
	json_put(o, "state", json_str(u->state));
	json_put(o, "auto", json_auto(u->state));
	json_put(o, "reason", json_str(u->reason));
	json_put(o, "reason_source", json_str(u->reason_source));
	json_put(o, "processes", json_object_new_uint64(u->processes));
	json_put(o, "text_mapped_bytes", json_u64(u->mapped));
	json_put(o, "text_resident_bytes", json_u64(u->resident));
	json_put(o, "locked_bytes", json_u64(u->locked));
	json_put(o, "major_faults", json_u64(u->major_faults));
	json_put(o, "text_faults", json_u64(u->text_faults));
	json_put(o, "text_fault_source", u->text_faults == STAT_UNKNOWN ? NULL : json_str(u->text_fault_source));
	json_put(o, "breaches", json_u64(u->breaches));
	return o;
}

static struct json_object *json_status(const struct props *p)
{
	struct json_object *o = json_object_new_object();

	json_put(o, "version", json_str(p->version));
	json_put(o, "backend", json_str(p->backend));
	json_put(o, "dry_run", json_object_new_boolean(p->dry_run));
	json_put(o, "processes_protected", json_object_new_uint64(p->processes));
	json_put(o, "cgroups_protected", json_object_new_uint64(p->cgroups));
	json_put(o, "exec_events", json_u64(p->execs));
	json_put(o, "exit_events", json_u64(p->exits));
	json_put(o, "decisions", json_u64(p->decisions));
	json_put(o, "overflows", json_u64(p->overflows));
	json_put(o, "full_rescans", json_u64(p->rescans));
	json_put(o, "backend_errors", json_u64(p->backend_errors));
	json_put(o, "latency_p50_usec", json_object_new_uint64(p->p50));
	json_put(o, "latency_p99_usec", json_object_new_uint64(p->p99));
	json_put(o, "latency_max_usec", json_object_new_uint64(p->max));
	json_put(o, "rules", json_object_new_uint64(p->rules));
	json_put(o, "unit_lookup", json_str(p->unit_lookup));
	if (p->n_buckets) {
		struct json_object *list = json_object_new_array();

		/* Cumulative, as Prometheus has them; the last one's le is null (+Inf). */
		for (size_t i = 0; i < p->n_buckets; i++) {
			struct json_object *b = json_object_new_object();

			json_put(b, "le_usec", json_u64(p->buckets[i].le_us));
			json_put(b, "count", json_object_new_uint64(p->buckets[i].count));
			json_object_array_add(list, b);
		}
		json_put(o, "latency_buckets", list);
		json_put(o, "latency_sum_usec", json_object_new_uint64(p->latency_sum));
	}
	return o;
}

/* A unit's container or pod (ctl-containers.h): a "container" object in
 * --json, null when it is neither. */
static struct json_object *json_container(const struct ctl_container_names *c)
{
	struct json_object *o;

	if (!c->any)
		return NULL;
	o = json_object_new_object();
	json_put(o, "runtime", json_str(c->runtime));
	json_put(o, "id", json_str(c->id));
	json_put(o, "name", json_str(c->name));
	json_put(o, "monitor", json_object_new_boolean(c->monitor));
	json_put(o, "pod_uid", json_str(c->pod_uid));
	json_put(o, "pod_namespace", json_str(c->pod_namespace));
	json_put(o, "pod_name", json_str(c->pod_name));
	json_put(o, "qos", json_str(c->qos));
	json_put(o, "annotation", json_str(c->request));
	return o;
}

static void containers_freep(struct ctl_containers **c)
{
	ctl_containers_free(*c);
}

static int cmd_status(sd_bus *bus)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *pr = NULL, *reply = NULL;
	struct json_object *root = NULL, *units = NULL;
	_cleanup_(containers_freep) struct ctl_containers *ctrs = NULL;
	struct ctl_container_names cn;
	struct props p;
	struct unit_row u;
	int r, n = 0;

	if ((r = get_props(bus, &pr, &p)) < 0 || (r = call(bus, "ListUnitsEx", &reply, NULL)) < 0)
		return -r;
	if (ctl_containers_load(bus, &ctrs) < 0)
		return EXIT_FAILED;
	if (arg_json) {
		root = json_status(&p);
		units = json_object_new_array();
		json_put(root, "units", units);
	} else {
		/* With the kernel backend most protection is of cgroups as a
		 * whole (no process is followed): say both. */
		printf("execguardd %s: backend %s%s, %u cgroup%s protected whole, %u process%s protected, %u rule%s\n",
		       strna(p.version), strna(p.backend), p.dry_run ? " (dry run)" : "", p.cgroups,
		       p.cgroups == 1 ? "" : "s", p.processes, p.processes == 1 ? "" : "es", p.rules,
		       p.rules == 1 ? "" : "s");
		printf("  %llu execs, %llu decisions, %llu overflows, %llu full rescans, %llu backend errors; exec to decision p50 %u us, p99 %u us\n",
		       (unsigned long long)p.execs, (unsigned long long)p.decisions,
		       (unsigned long long)p.overflows, (unsigned long long)p.rescans,
		       (unsigned long long)p.backend_errors, p.p50, p.p99);
		printf("  unit sections: %s\n\n", strna(p.unit_lookup));
		printf("%-32s %-9s %5s %8s %8s %8s %7s %7s %8s  %s\n", "UNIT", "PROTECTED", "PROCS", "MAPPED",
		       "RESIDENT", "LOCKED", "MAJFLT", "TEXTFLT", "BREACHES", "STATE");
	}
	r = sd_bus_message_enter_container(reply, 'a', UNIT_ROW);
	while (r >= 0 && (r = read_unit_row(reply, &u)) > 0) {
		char b1[16], b2[16], b3[16], b4[24], b5[24], b6[24], who[256];

		n++;
		ctl_container_names(ctrs, *u.cgroup ? u.cgroup : NULL, &cn);
		if (arg_json) {
			struct json_object *o = json_unit_row(&u);

			json_put(o, "container", json_container(&cn));
			json_object_array_add(units, o);
			continue;
		}
		printf("%-32s %-9s %5u %8s %8s %8s %7s %7s %8s  %s\n", u.unit, u.protected_now ? "yes" : "no",
		       u.processes, fmt_bytes(u.mapped, b1, sizeof(b1)),
		       fmt_bytes(u.resident, b2, sizeof(b2)), fmt_bytes(u.locked, b3, sizeof(b3)),
		       fmt_u64(u.major_faults, b4, sizeof(b4)), fmt_text_faults(&u, b6, sizeof(b6)),
		       fmt_u64(u.breaches, b5, sizeof(b5)), u.state);
		ctl_container_describe(&cn, who, sizeof(who));
		if (*who)
			printf("  %-30s %s\n", "", who);
	}
	if (r < 0) {
		json_object_put(root);
		fprintf(stderr, "execguardctl: bad reply from execguardd: %s\n", STRERROR(r));
		return EXIT_FAILED;
	}
	if (!arg_json && !n)
		printf("(no unit protected)\n");
	print_prewarm(bus, root);
	return arg_json ? json_print(root) : EXIT_OK;
}

/* Prewarm's table (or the "prewarm" array of --json) after the units:
 * quiet when prewarm is off or the daemon predates it. */
static void print_prewarm(sd_bus *bus, struct json_object *root)
{
	struct json_object *list = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	const char *unit, *state;
	uint64_t rec, files, replayed, planned, replays, changed;
	int64_t at;
	int r, n = 0;

	r = sd_bus_call_method(bus, EXECGUARD_BUS_NAME, EXECGUARD_BUS_PATH, EXECGUARD_BUS_INTERFACE,
			       "ListPrewarm", &e, &reply, "");
	sd_bus_error_free(&e);
	if (root) {
		list = json_object_new_array();
		json_put(root, "prewarm", list);
	}
	if (r >= 0)
		r = sd_bus_message_enter_container(reply, 'a', "(ssttttttx)");
	while (r >= 0 && (r = sd_bus_message_read(reply, "(ssttttttx)", &unit, &state, &rec, &files, &replayed,
						  &planned, &replays, &changed, &at)) > 0) {
		char b1[16], b2[16], b3[16];

		if (list) {
			struct json_object *o = json_object_new_object();

			json_put(o, "unit", json_str(unit));
			json_put(o, "state", json_str(state));
			json_put(o, "recorded_bytes", json_u64(rec));
			json_put(o, "recorded_files", json_u64(files));
			json_put(o, "replayed_bytes", json_u64(replayed));
			json_put(o, "planned_bytes", json_u64(planned));
			json_put(o, "replays", json_u64(replays));
			json_put(o, "invalidated_files", json_u64(changed));
			json_put(o, "recorded_at", json_object_new_int64(at));
			json_object_array_add(list, o);
			continue;
		}
		if (n++ == 0)
			printf("\n%-32s %8s %5s %8s %8s %7s %7s  %s\n", "PREWARM", "RECORDED", "FILES", "READ",
			       "PLANNED", "REPLAYS", "CHANGED", "STATE");
		printf("%-32s %8s %5llu %8s %8s %7llu %7llu  %s\n", unit, fmt_bytes(rec, b1, sizeof(b1)),
		       (unsigned long long)files, fmt_bytes(replayed, b2, sizeof(b2)),
		       fmt_bytes(planned, b3, sizeof(b3)), (unsigned long long)replays,
		       (unsigned long long)changed, state);
	}
}

static int cmd_libs(sd_bus *bus)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	const char *path, *state;
	uint32_t units, procs;
	uint64_t mapped, resident, locked;
	struct json_object *list = NULL;
	int r, n = 0;

	r = call(bus, "ListLibraries", &reply, NULL);
	if (r < 0)
		return -r;
	if (arg_json)
		list = json_object_new_array();
	else
		printf("%5s %5s %8s %8s %8s  %-12s %s\n", "UNITS", "PROCS", "MAPPED", "RESIDENT",
		       "LOCKED", "STATE", "PATH");
	r = sd_bus_message_enter_container(reply, 'a', "(suuttts)");
	while (r >= 0 && (r = sd_bus_message_read(reply, "(suuttts)", &path, &units, &procs, &mapped,
						  &resident, &locked, &state)) > 0) {
		char b1[16], b2[16], b3[16];

		if (list) {
			struct json_object *o = json_object_new_object();

			json_put(o, "path", json_str(path));
			json_put(o, "units", json_object_new_uint64(units));
			json_put(o, "processes", json_object_new_uint64(procs));
			json_put(o, "mapped_bytes", json_u64(mapped));
			json_put(o, "resident_bytes", json_u64(resident));
			json_put(o, "locked_bytes", json_u64(locked));
			json_put(o, "state", json_str(state));
			json_object_array_add(list, o);
		} else {
			n++;
			printf("%5u %5u %8s %8s %8s  %-12s %s\n", units, procs,
			       fmt_bytes(mapped, b1, sizeof(b1)), fmt_bytes(resident, b2, sizeof(b2)),
			       fmt_bytes(locked, b3, sizeof(b3)), state, path);
		}
	}
	if (r < 0) {
		json_object_put(list);
		fprintf(stderr, "execguardctl: bad reply from execguardd: %s\n", STRERROR(r));
		return EXIT_FAILED;
	}
	if (list)
		return json_print(list);
	if (!n)
		printf("(no protected process maps any file)\n");
	return EXIT_OK;
}

/* What Explain answers before its rules, and the container or pod the
 * process is in. */
struct explain {
	unsigned long pid;
	const char *unit, *cgroup, *exe, *backend, *source, *section, *section_source;
	int protect, tracked;
	struct ctl_container_names cn;
	char who[256];
};

/* A PID as explain takes it: decimal, 1 to INT32_MAX. */
static int parse_pid(const char *arg, unsigned long *ret)
{
	unsigned long pid;
	char *end;

	errno = 0;
	pid = strtoul(arg, &end, 10);
	if (errno || *end || !*arg || pid == 0 || pid > INT32_MAX)
		return -EINVAL;
	*ret = pid;
	return 0;
}

/* The container or pod of x->cgroup, for the header. */
static int explain_container(sd_bus *bus, struct explain *x)
{
	_cleanup_(containers_freep) struct ctl_containers *ctrs = NULL;
	int r;

	r = ctl_containers_load(bus, &ctrs);
	if (r < 0)
		return r;
	ctl_container_names(ctrs, x->cgroup, &x->cn);
	ctl_container_describe(&x->cn, x->who, sizeof(x->who));
	return 0;
}

/* The --json document without its rules and Protect=auto state. */
static struct json_object *json_explain(const struct explain *x)
{
	struct json_object *root = json_object_new_object();

	json_put(root, "pid", json_object_new_uint64(x->pid));
	json_put(root, "unit", json_str_or_null(x->unit));
	json_put(root, "cgroup", json_str(x->cgroup));
	json_put(root, "exe", json_str(x->exe));
	json_put(root, "backend", json_str(x->backend));
	json_put(root, "protect", json_object_new_boolean(x->protect));
	json_put(root, "tracked", json_object_new_boolean(x->tracked));
	json_put(root, "decided_by", json_str(x->source));
	json_put(root, "unit_section", *x->section_source ? json_str(x->section) : NULL);
	json_put(root, "unit_section_source", json_str_or_null(x->section_source));
	json_put(root, "unit_section_pending", json_object_new_boolean(!*x->section_source && *x->section));
	json_put(root, "container", json_container(&x->cn));
	return root;
}

/* The text before the rules. */
static void print_explain(const struct explain *x)
{
	printf("PID %lu\n", x->pid);
	if (*x->unit)
		printf("  unit:          %s\n", x->unit);
	else
		printf("  unit:          (none: %s)\n", *x->who ? "a container's cgroup, not a systemd unit" :
								  "not in a systemd unit");
	printf("  cgroup:        %s\n", x->cgroup);
	if (*x->who)
		printf("  container:     %s\n", x->who);
	printf("  executable:    %s\n", x->exe);
	printf("  decision:      %s, decided by %s\n", x->protect ? "protect" : "do not protect", x->source);
	printf("  now:           %s (backend %s)\n",
	       x->tracked ? "tracked as protected" : "not tracked", x->backend);
	if (*x->section_source && strncmp(x->section_source, "annotation ", 11) == 0)
		printf("  container asked: %s, given %s\n", x->section_source,
		       *x->section ? x->section : "nothing");
	else if (*x->section_source)
		printf("  unit section:  [X-ExecGuard] %s at %s\n", *x->section ? x->section : "(empty)",
		       x->section_source);
	else if (*x->section)
		printf("  unit section:  %s\n", x->section); /* being asked */
	else
		printf("  unit section:  none\n");
}

/* The rules that matched, read off the reply into the rules array
 * (--json) or printed as they come. Returns how many were printed, or
 * a negative errno for a bad reply. */
static int explain_rules(sd_bus_message *reply, struct json_object *rules)
{
	const char *name, *file, *settings;
	uint32_t line;
	int r, n = 0;

	r = sd_bus_message_enter_container(reply, 'a', "(ssus)");
	while (r >= 0 && (r = sd_bus_message_read(reply, "(ssus)", &name, &file, &line, &settings)) > 0) {
		if (rules) {
			struct json_object *o = json_object_new_object();

			json_put(o, "name", json_str(name));
			json_put(o, "file", json_str(file));
			json_put(o, "line", json_object_new_uint64(line));
			json_put(o, "settings", json_str(settings));
			json_object_array_add(rules, o);
		} else {
			printf("  %s [Rule %s] at %s:%u%s%s\n", n++ ? "            " : "rules matched:",
			       name, file, line, *settings ? ": " : "", settings);
		}
	}
	if (r < 0)
		return r;
	r = sd_bus_message_exit_container(reply);
	return r < 0 ? r : n;
}

/* Protect=auto's state: added after the rules (an older daemon does not
 * send it); "" when there is none. */
static const char *explain_auto_state(sd_bus_message *reply)
{
	const char *auto_state = "";

	if (sd_bus_message_peek_type(reply, NULL, NULL) > 0 && sd_bus_message_read(reply, "s", &auto_state) < 0)
		auto_state = "";
	return auto_state;
}

static int cmd_explain(sd_bus *bus, const char *arg)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct json_object *root = NULL, *rules = NULL;
	struct explain x = { 0 };
	const char *auto_state;
	int r, n;

	if (parse_pid(arg, &x.pid) < 0) {
		fprintf(stderr, "execguardctl: explain: '%s' is not a PID\n", arg);
		return EXIT_USAGE;
	}
	r = call(bus, "Explain", &reply, "u", (uint32_t)x.pid);
	if (r < 0)
		return -r;
	r = sd_bus_message_read(reply, "ssssbbsss", &x.unit, &x.cgroup, &x.exe, &x.backend, &x.protect,
				&x.tracked, &x.source, &x.section, &x.section_source);
	if (r < 0)
		goto bad;
	if (explain_container(bus, &x) < 0)
		return EXIT_FAILED;
	if (arg_json) {
		root = json_explain(&x);
		rules = json_object_new_array();
		json_put(root, "rules", rules);
	} else {
		print_explain(&x);
	}
	r = n = explain_rules(reply, rules);
	if (r < 0)
		goto bad;
	auto_state = explain_auto_state(reply);
	if (root) {
		json_put(root, "auto", json_str_or_null(auto_state));
		return json_print(root);
	}
	if (!n)
		printf("  rules matched: none\n");
	if (*auto_state)
		printf("  Protect=auto:  %s\n", auto_state);
	return EXIT_OK;
bad:
	json_object_put(root);
	fprintf(stderr, "execguardctl: bad reply from execguardd: %s\n", STRERROR(r));
	return EXIT_FAILED;
}

static int cmd_reload(sd_bus *bus)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	const char *summary = NULL;
	int r;

	r = call(bus, "Reload", &reply, NULL);
	if (r < 0)
		return -r;
	if (sd_bus_message_read(reply, "s", &summary) < 0)
		summary = "reloaded";
	if (arg_json) {
		struct json_object *o = json_object_new_object();

		json_put(o, "reloaded", json_object_new_boolean(true));
		json_put(o, "summary", json_str(summary));
		return json_print(o);
	}
	printf("%s\n", summary);
	return EXIT_OK;
}

/* metrics: what status shows, in the Prometheus text format. */

/* The daemon's CPU time: its PID from the bus, its /proc/PID/stat. */
static bool daemon_cpu_seconds(sd_bus *bus, double *ret)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_free_ char *buf = NULL;
	uint32_t pid = 0;
	uint64_t ticks;
	long hz = sysconf(_SC_CLK_TCK);
	char path[32];
	size_t len;

	if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
			       "GetConnectionUnixProcessID", NULL, &reply, "s", EXECGUARD_BUS_NAME) < 0 ||
	    sd_bus_message_read(reply, "u", &pid) < 0 || pid == 0 || hz <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (read_file_at(AT_FDCWD, path, 4096, &buf, &len) < 0 || proc_stat_cpu_ticks(buf, len, &ticks) < 0)
		return false;
	*ret = (double)ticks / (double)hz;
	return true;
}

/* The kernel's bound in force and what it kept, read from cgroupfs: the
 * bus gives them only inside the state text. Left out without the patch. */
static void unit_bound(int cgroup_root_fd, const char *cgroup, struct metrics_unit *u)
{
	_cleanup_free_ char *where = NULL;
	uint64_t bound = 0;

	u->kept = METRICS_UNKNOWN;
	if (cgroup_root_fd < 0 || !cgroup || cgroup[0] != '/')
		return;
	if (read_exec_protect_effective(cgroup_root_fd, cgroup, &bound, &where) < 0)
		return;
	u->has_bound = true;
	/* Off somewhere up the tree: no bound in force. */
	u->bound = where ? 0 : bound;
	u->bound_max = !where && bound == UINT64_MAX;
	u->kept = read_cgroup_exec_usage(cgroup_root_fd, cgroup);
}

/* The units' rows; their strings point into the reply, alive until the end. */
struct metrics_rows {
	struct metrics_unit *u;
	struct ctl_container_names *names; /* the container labels point here */
	size_t n;
};

static void metrics_rows_done(struct metrics_rows *rows)
{
	free(rows->u);
	free(rows->names);
}

/* Kubernetes' labels: namespace, pod (names from the annotations),
 * pod_uid, container (its name, else its short id). The labels point
 * into n: call it once rows.names no longer grows. */
static void metrics_container_labels(struct metrics_unit *u, struct ctl_container_names *n)
{
	if (!n->any)
		return;
	if (!*n->name && strlen(n->id) > 12)
		n->id[12] = '\0';
	u->namespace_ = n->pod_namespace;
	u->pod = n->pod_name;
	u->pod_uid = n->pod_uid;
	u->container = *n->name ? n->name : n->id;
}

/* The text to stdout, or atomically to --output. */
static int metrics_write(const struct metrics_daemon *d, const struct metrics_unit *u, size_t n)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = metrics_format(d, u, n, &text, &len);
	if (r < 0) {
		fprintf(stderr, "execguardctl: metrics: %s\n", STRERROR(r));
		return EXIT_FAILED;
	}
	if (!arg_output) {
		fwrite(text, 1, len, stdout);
		return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
	}
	r = write_file_atomic(arg_output, text, len, 0644);
	if (r < 0) {
		fprintf(stderr, "execguardctl: cannot write %s: %s\n", arg_output, STRERROR(r));
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

/* The daemon could not be read (exit status failed): execguard_up 0, so
 * that the figures of an earlier run do not stay on, with the time of
 * the last success that run wrote. */
static int metrics_down(int failed)
{
	struct metrics_daemon d = { .up = false };
	_cleanup_free_ char *old = NULL;
	size_t len;
	int r;

	if (arg_output && read_file_at(AT_FDCWD, arg_output, 1 << 24, &old, &len) >= 0)
		(void)metrics_last_success(old, len, &d.last_success);
	r = metrics_write(&d, NULL, 0);
	return r == EXIT_OK ? failed : r;
}

static int cmd_metrics(sd_bus *bus)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *pr = NULL, *reply = NULL;
	_cleanup_close_ int cgroup_root_fd = -1;
	struct metrics_rows rows = { 0 };
	_cleanup_(containers_freep) struct ctl_containers *ctrs = NULL;
	struct metrics_daemon d;
	struct timespec now;
	struct unit_row u;
	struct props p;
	int r;

	if (!bus)
		return metrics_down(EXIT_NO_DAEMON);
	if ((r = get_props(bus, &pr, &p)) < 0 || (r = call(bus, "ListUnitsEx", &reply, NULL)) < 0)
		return metrics_down(-r);
	if (ctl_containers_load(bus, &ctrs) < 0)
		return EXIT_FAILED;
	clock_gettime(CLOCK_REALTIME, &now);
	d = (struct metrics_daemon){
		.up = true, .last_success = (double)now.tv_sec + (double)now.tv_nsec / 1e9,
		.version = p.version, .backend = p.backend, .processes_protected = p.processes,
		.exec_events = p.execs, .exit_events = p.exits, .decisions = p.decisions,
		.overflows = p.overflows, .rescans = p.rescans, .backend_errors = p.backend_errors,
		.latency = p.buckets, .n_latency = p.n_buckets, .latency_sum_usec = p.latency_sum,
	};
	d.has_cpu = daemon_cpu_seconds(bus, &d.cpu_seconds);
	if (streq_ptr(p.backend, "kernel"))
		cgroup_root_fd = open(arg_cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	r = sd_bus_message_enter_container(reply, 'a', UNIT_ROW);
	while (r >= 0 && (r = read_unit_row(reply, &u)) > 0) {
		struct metrics_unit *nu = realloc(rows.u, (rows.n + 1) * sizeof(*nu));
		struct ctl_container_names *nn;

		if (!nu) {
			r = -ENOMEM;
			break;
		}
		rows.u = nu;
		nn = realloc(rows.names, (rows.n + 1) * sizeof(*nn));
		if (!nn) {
			r = -ENOMEM;
			break;
		}
		rows.names = nn;
		rows.u[rows.n] = (struct metrics_unit){
			.unit = u.unit,
			.reason = u.reason,
			.source = u.reason_source,
			.protected_now = u.protected_now,
			.processes = u.processes,
			.text_mapped = u.mapped, .text_resident = u.resident, .text_locked = u.locked,
			.major_faults = u.major_faults, .breaches = u.breaches,
			.text_faults = u.text_faults, .text_fault_source = u.text_fault_source,
		};
		unit_bound(cgroup_root_fd, *u.cgroup ? u.cgroup : NULL, &rows.u[rows.n]);
		ctl_container_names(ctrs, *u.cgroup ? u.cgroup : NULL, &rows.names[rows.n]);
		rows.n++;
	}
	if (r < 0) {
		metrics_rows_done(&rows);
		fprintf(stderr, "execguardctl: bad reply from execguardd: %s\n", STRERROR(r));
		return metrics_down(EXIT_FAILED);
	}
	for (size_t i = 0; i < rows.n; i++)
		metrics_container_labels(&rows.u[i], &rows.names[i]);
	r = metrics_write(&d, rows.u, rows.n);
	metrics_rows_done(&rows);
	return r;
}

/* check-config: everything the daemon would read, without it. */

struct paths {
	char **v;
	size_t n;
};

static int paths_add(struct paths *p, const char *path)
{
	char **n = realloc(p->v, (p->n + 2) * sizeof(char *));

	if (!n)
		return -ENOMEM;
	p->v = n;
	p->v[p->n] = strdup(path);
	if (!p->v[p->n])
		return -ENOMEM;
	p->v[++p->n] = NULL;
	return 0;
}

static bool file_has_section(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ char *buf = NULL;
	size_t len;

	return fd >= 0 && read_fd(fd, 1 << 20, &buf, &len) >= 0 && unit_file_has_section(buf, len);
}

static int filter_visible(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Unit files and drop-ins (NAME.d/FILE.conf) under dir with an [X-ExecGuard]. */
static int find_unit_files(const char *dir, struct paths *out)
{
	struct dirent **list = NULL;
	int n = scandir(dir, &list, filter_visible, alphasort), r = 0;

	for (int i = 0; i < n; i++) {
		char path[4096];
		size_t l = strlen(list[i]->d_name);

		if (snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name) < (int)sizeof(path) && r >= 0) {
			if (l > 2 && streq(list[i]->d_name + l - 2, ".d"))
				r = find_unit_files(path, out);
			else if (file_has_section(path))
				r = paths_add(out, path);
		}
		free(list[i]);
	}
	free(list);
	return r;
}

/* errors or warnings as [{file, line, message}]; line null for the file. */
static struct json_object *json_problems(const struct policy_error *e, size_t n)
{
	struct json_object *list = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_put(o, "file", json_str(e[i].file));
		json_put(o, "line", e[i].line ? json_object_new_uint64(e[i].line) : NULL);
		json_put(o, "message", json_str(e[i].message));
		json_object_array_add(list, o);
	}
	return list;
}

static struct json_object *json_strv(char *const *v, size_t n)
{
	struct json_object *list = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(list, json_str(v[i]));
	return list;
}

static int print_check(const struct policy *p, const struct paths *units, size_t n_unit_sections)
{
	if (arg_json) {
		struct json_object *o = json_object_new_object();

		json_put(o, "ok", json_object_new_boolean(!p->n_errors));
		json_put(o, "rules", json_object_new_uint64(p->n_rules));
		json_put(o, "backend", json_str(backend_choice_to_string(p->daemon.backend)));
		json_put(o, "policy_files", json_strv(p->files, p->n_files));
		json_put(o, "masked_files", json_strv(p->masked, p->n_masked));
		json_put(o, "unit_files", json_strv(units->v, units->n));
		json_put(o, "errors", json_problems(p->errors, p->n_errors));
		json_put(o, "warnings", json_problems(p->warnings, p->n_warnings));
		return json_print(o) == EXIT_OK && !p->n_errors ? EXIT_OK : EXIT_FAILED;
	}
	policy_print_warnings(p, stderr);
	if (p->n_errors) {
		size_t n = policy_print_errors(p, stderr);

		fprintf(stderr, "execguardctl: %zu error%s\n", n, n == 1 ? "" : "s");
		return EXIT_FAILED;
	}
	for (size_t i = 0; i < p->n_masked; i++)
		printf("masked: %s\n", p->masked[i]);
	printf("policy OK: %zu rule%s from %zu file%s, Backend=%s; %zu unit file%s with [X-ExecGuard] OK\n",
	       p->n_rules, p->n_rules == 1 ? "" : "s", p->n_files, p->n_files == 1 ? "" : "s",
	       backend_choice_to_string(p->daemon.backend), n_unit_sections, n_unit_sections == 1 ? "" : "s");
	return EXIT_OK;
}

static int cmd_check_config(char **files)
{
	static const char *const dirs[] = { "/etc/systemd/system", "/run/systemd/system",
					    "/usr/lib/systemd/system" };
	struct policy_paths pp;
	struct paths units = { 0 };
	struct policy p;
	size_t n_unit_sections = 0;
	int r;

	policy_init(&p);
	r = policy_paths_init(&pp, arg_config);
	if (r >= 0)
		r = policy_load(&p, pp.main, pp.dirs, !pp.given);
	if (r == -ENOMEM)
		goto oom;
	for (char **f = files; f && *f && r != -ENOMEM; f++)
		r = paths_add(&units, *f);
	for (size_t i = 0; !files[0] && i < ELEMENTSOF(dirs) && r != -ENOMEM; i++)
		r = find_unit_files(dirs[i], &units);
	if (r == -ENOMEM)
		goto oom;
	for (size_t i = 0; i < units.n; i++) {
		const char *one[] = { units.v[i], NULL };
		struct rule_settings s;
		char *source = NULL;
		size_t before = p.n_errors;

		/* Each file on its own: errors name it, whatever the order. */
		r = unit_files_load(one, &p, &s, &source);
		if (r == -ENOMEM)
			goto oom;
		if (r > 0)
			n_unit_sections++;
		else if (p.n_errors == before && access(units.v[i], F_OK) < 0)
			policy_add_error(&p, units.v[i], 0, "cannot open: %s", STRERROR(errno));
		else if (p.n_errors == before && files[0])
			policy_add_warning(&p, units.v[i], 0, "no [X-ExecGuard] section");
		free(source);
	}
	r = print_check(&p, &units, n_unit_sections);
	goto out;
oom:
	fprintf(stderr, "execguardctl: out of memory\n");
	r = EXIT_FAILED;
out:
	for (size_t i = 0; i < units.n; i++)
		free(units.v[i]);
	free(units.v);
	policy_paths_done(&pp);
	policy_done(&p);
	return r;
}

/* --file=, repeatable: one more file for segments. */
static int add_file(const char *path)
{
	const char **nf = realloc(arg_files, (arg_n_files + 1) * sizeof(*nf));

	if (!nf)
		return -ENOMEM;
	arg_files = nf;
	arg_files[arg_n_files++] = path;
	return 0;
}

/* --timeout=SEC: seconds, fractions allowed; never 0, which would be
 * sd-bus's default. */
static int parse_timeout(const char *s)
{
	char *end = NULL;
	double sec;

	errno = 0;
	sec = strtod(s, &end);
	if (errno || end == s || *end || !(sec > 0) || sec > 86400) {
		fprintf(stderr, "execguardctl: --timeout=%s: want seconds, more than 0 and at most 86400\n", s);
		return -EINVAL;
	}
	arg_timeout_usec = (uint64_t)(sec * 1e6);
	if (!arg_timeout_usec)
		arg_timeout_usec = 1;
	return 0;
}

/* 1: go on; 0: done; <0: usage error. */
static int parse_argv(int argc, char **argv)
{
	enum { ARG_VERSION = 0x100, ARG_JSON, ARG_TIMEOUT, ARG_OUTPUT, ARG_CGROUP_ROOT, ARG_CGROUP, ARG_FILE };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "json", no_argument, NULL, ARG_JSON },
		{ "config", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, ARG_TIMEOUT },
		{ "output", required_argument, NULL, ARG_OUTPUT },
		{ "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
		{ "cgroup", required_argument, NULL, ARG_CGROUP },
		{ "file", required_argument, NULL, ARG_FILE },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "hc:", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("execguardctl %s\n", PROJECT_VERSION);
			return 0;
		case ARG_JSON:
			arg_json = true;
			break;
		case 'c':
			arg_config = optarg;
			break;
		case ARG_OUTPUT:
			if (!*optarg) {
				fprintf(stderr, "execguardctl: --output= wants a file\n");
				return -EINVAL;
			}
			arg_output = optarg;
			break;
		case ARG_CGROUP_ROOT:
			arg_cgroup_root = optarg;
			arg_cgroup_root_set = true;
			break;
		case ARG_CGROUP:
			if (optarg[0] != '/') {
				fprintf(stderr, "execguardctl: --cgroup=%s: want a cgroup2 path from the root, /...\n", optarg);
				return -EINVAL;
			}
			arg_cgroup = optarg;
			break;
		case ARG_FILE:
			if (add_file(optarg) < 0)
				return -ENOMEM;
			break;
		case ARG_TIMEOUT:
			if (parse_timeout(optarg) < 0)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "execguardctl: a command is needed: status, libs, metrics, segments, explain PID, check-config, reload or keys (see --help)\n");
		return -EINVAL;
	}
	return 1;
}

/* keys: what the parser accepts, from its own table. */
static int cmd_keys(void)
{
	const struct policy_key_info *k;
	size_t n = policy_keys(&k);
	struct json_object *list = arg_json ? json_object_new_array() : NULL;

	for (size_t i = 0; i < n; i++) {
		if (list) {
			struct json_object *o = json_object_new_object();

			json_put(o, "section", json_str(k[i].section));
			json_put(o, "key", json_str(k[i].key));
			json_put(o, "help", json_str(k[i].help));
			json_object_array_add(list, o);
		} else {
			printf("[%s] %s= %s\n", k[i].section, k[i].key, k[i].help);
		}
	}
	return list ? json_print(list) : EXIT_OK;
}

static int dispatch(int argc, char **argv)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	const char *verb = argv[0];
	int want = streq(verb, "explain") ? 2 : 1, r;

	if ((arg_cgroup || arg_n_files) && !streq(verb, "segments")) {
		fprintf(stderr, "execguardctl: --cgroup= and --file= are for segments only\n");
		return EXIT_USAGE;
	}
	if (streq(verb, "segments")) {
		struct segments_args sa = {
			.target = argc > 1 ? argv[1] : NULL,
			.cgroup = arg_cgroup,
			.cgroup_root = arg_cgroup_root_set ? arg_cgroup_root : NULL,
			.files = arg_files,
			.n_files = arg_n_files,
			.json = arg_json,
		};

		if (argc > 2 || arg_output) {
			fprintf(stderr, "execguardctl: segments takes one UNIT or PID (or --cgroup=) and --file= (see --help)\n");
			return EXIT_USAGE;
		}
		return ctl_segments(&sa);
	}
	if (streq(verb, "check-config"))
		return cmd_check_config(argv + 1);
	if (streq(verb, "keys")) {
		if (argc != 1) {
			fprintf(stderr, "execguardctl: keys takes no arguments\n");
			return EXIT_USAGE;
		}
		return cmd_keys();
	}
	if (!streq(verb, "status") && !streq(verb, "libs") && !streq(verb, "explain") &&
	    !streq(verb, "reload") && !streq(verb, "metrics")) {
		fprintf(stderr, "execguardctl: unknown command '%s' (see --help)\n", verb);
		return EXIT_USAGE;
	}
	if (argc != want) {
		fprintf(stderr, "execguardctl: %s takes %s\n", verb, want == 2 ? "one PID" : "no arguments");
		return EXIT_USAGE;
	}
	/* Said rather than ignored: a script would wait for what never comes. */
	if (streq(verb, "metrics") && arg_json) {
		fprintf(stderr, "execguardctl: metrics has no --json: it prints the Prometheus text format\n");
		return EXIT_USAGE;
	}
	if (!streq(verb, "metrics") && arg_output) {
		fprintf(stderr, "execguardctl: --output= is for metrics only\n");
		return EXIT_USAGE;
	}
	r = connect_daemon(&bus);
	/* metrics says execguard_up 0 rather than nothing. */
	if (streq(verb, "metrics"))
		return cmd_metrics(r < 0 ? NULL : bus);
	if (r < 0)
		return -r;
	if (streq(verb, "status"))
		return cmd_status(bus);
	if (streq(verb, "libs"))
		return cmd_libs(bus);
	if (streq(verb, "explain"))
		return cmd_explain(bus, argv[1]);
	return cmd_reload(bus);
}

int main(int argc, char **argv)
{
	int r = parse_argv(argc, argv);

	if (r <= 0)
		return r < 0 ? EXIT_USAGE : EXIT_OK;
	return dispatch(argc - optind, argv + optind);
}
