/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "util.h"

void metrics_escape_label(const char *s, FILE *f)
{
	for (; s && *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* HELP and TYPE once per family, before all its samples. */
static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_u64(FILE *f, const char *name, uint64_t v)
{
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

/* name{unit="..."[,namespace=...,pod=...,pod_uid=...,container=...]
 * without the closing brace. */
static void unit_labels(FILE *f, const char *name, const struct metrics_unit *u)
{
	const struct {
		const char *label, *value;
	} k8s[] = {
		{ "namespace", u->namespace_ },
		{ "pod", u->pod },
		{ "pod_uid", u->pod_uid },
		{ "container", u->container },
	};

	fprintf(f, "%s{unit=\"", name);
	metrics_escape_label(u->unit, f);
	fputc('"', f);
	for (size_t i = 0; i < ELEMENTSOF(k8s); i++)
		if (k8s[i].value && *k8s[i].value) {
			fprintf(f, ",%s=\"", k8s[i].label);
			metrics_escape_label(k8s[i].value, f);
			fputc('"', f);
		}
}

static void unit_label(FILE *f, const char *name, const struct metrics_unit *u)
{
	unit_labels(f, name, u);
	fputc('}', f);
}

/* One per-unit family: the units that know the figure, others left out. */
static void unit_family(FILE *f, const char *name, const char *type, const char *help,
			const struct metrics_unit *units, size_t n, size_t offset)
{
	bool any = false;

	for (size_t i = 0; i < n && !any; i++)
		any = *(const uint64_t *)((const char *)&units[i] + offset) != METRICS_UNKNOWN;
	if (!any)
		return;
	family(f, name, type, help);
	for (size_t i = 0; i < n; i++) {
		uint64_t v = *(const uint64_t *)((const char *)&units[i] + offset);

		if (v == METRICS_UNKNOWN)
			continue;
		unit_label(f, name, &units[i]);
		fprintf(f, " %" PRIu64 "\n", v);
	}
}

#define UNIT_FAMILY(f, name, type, help, units, n, field) \
	unit_family(f, name, type, help, units, n, offsetof(struct metrics_unit, field))

/* Text faults carry where they come from: a kernel count and an
 * estimate are not to be summed blindly. */
static void text_fault_family(FILE *f, const struct metrics_unit *units, size_t n)
{
	const char *name = "execguard_unit_text_major_faults_total";
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		const struct metrics_unit *u = &units[i];

		if (u->text_faults == METRICS_UNKNOWN || !u->text_fault_source)
			continue;
		if (!any)
			family(f, name, "counter",
			       "Text major faults of the unit: the patched kernel's pgmajfault_exec "
			       "(method kernel) or execguardd's estimate (method estimate).");
		any = true;
		unit_labels(f, name, u);
		fputs(",method=\"", f);
		metrics_escape_label(u->text_fault_source, f);
		fprintf(f, "\"} %" PRIu64 "\n", u->text_faults);
	}
}

/* A bound in seconds as Prometheus clients write le: shortest decimal. */
static void format_le(uint64_t us, char *buf, size_t size)
{
	size_t l;

	if (us == LATENCY_INF) {
		snprintf(buf, size, "+Inf");
		return;
	}
	snprintf(buf, size, "%.6f", (double)us / 1e6);
	l = strlen(buf);
	while (l > 1 && buf[l - 1] == '0')
		buf[--l] = '\0';
	if (l > 1 && buf[l - 1] == '.')
		buf[--l] = '\0';
}

/* A histogram: cumulative _bucket{le}, ending with +Inf, then _sum and
 * _count (the +Inf bucket's count). */
static void latency_family(FILE *f, const struct metrics_daemon *d)
{
	const char *name = "execguard_exec_decision_latency_seconds";
	char le[32];

	family(f, name, "histogram", "Exec to decision latency since execguardd started.");
	for (size_t i = 0; i < d->n_latency; i++) {
		format_le(d->latency[i].le_us, le, sizeof(le));
		fprintf(f, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, le, d->latency[i].count);
	}
	fprintf(f, "%s_sum %.6f\n", name, (double)d->latency_sum_usec / 1e6);
	fprintf(f, "%s_count %" PRIu64 "\n", name, d->latency[d->n_latency - 1].count);
}

int metrics_last_success(const char *buf, size_t len, double *ret)
{
	static const char key[] = "execguard_last_success_timestamp_seconds ";

	for (const char *l = buf; l && l < buf + len;) {
		const char *nl = memchr(l, '\n', (size_t)(buf + len - l));
		size_t ll = nl ? (size_t)(nl - l) : (size_t)(buf + len - l);

		if (ll > sizeof(key) - 1 && ll < 64 && memcmp(l, key, sizeof(key) - 1) == 0) {
			char num[64], *end;
			double v;

			memcpy(num, l + sizeof(key) - 1, ll - (sizeof(key) - 1));
			num[ll - (sizeof(key) - 1)] = '\0';
			errno = 0;
			v = strtod(num, &end);
			if (!errno && end != num && !*end && v > 0) {
				*ret = v;
				return 0;
			}
		}
		l = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* A family of one sample without labels. */
static void single_family(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	family(f, name, type, help);
	sample_u64(f, name, v);
}

/* Whether execguardd could be read, and when it last was: the only
 * figures given when it could not. */
static void up_families(FILE *f, const struct metrics_daemon *d)
{
	family(f, "execguard_up", "gauge",
	       "1 when execguardctl read execguardd's figures, 0 when it could not (then no other figure is given).");
	fprintf(f, "execguard_up %d\n", d->up ? 1 : 0);
	if (d->last_success > 0) {
		family(f, "execguard_last_success_timestamp_seconds", "gauge",
		       "Unix time of the last reading of execguardd's figures (kept while the daemon cannot be read).");
		fprintf(f, "execguard_last_success_timestamp_seconds %.3f\n", d->last_success);
	}
}

/* The daemon's own figures: what runs, its counters, its CPU time and
 * its latency histogram. */
static void daemon_families(FILE *f, const struct metrics_daemon *d)
{
	family(f, "execguard_info", "gauge", "The running execguardd: version and backend.");
	fputs("execguard_info{version=\"", f);
	metrics_escape_label(d->version, f);
	fputs("\",backend=\"", f);
	metrics_escape_label(d->backend, f);
	fputs("\"} 1\n", f);
	single_family(f, "execguard_processes_protected", "gauge", "Processes the daemon protects now.",
		      d->processes_protected);
	single_family(f, "execguard_exec_events_total", "counter", "Exec events read from the proc connector.",
		      d->exec_events);
	single_family(f, "execguard_exit_events_total", "counter", "Exit events read from the proc connector.",
		      d->exit_events);
	single_family(f, "execguard_decisions_total", "counter", "Policy decisions taken for exec'd processes.",
		      d->decisions);
	single_family(f, "execguard_overflows_total", "counter",
		      "Proc connector overflows (events lost, then a rescan).", d->overflows);
	single_family(f, "execguard_rescans_total", "counter", "Full rescans of /proc.", d->rescans);
	single_family(f, "execguard_backend_errors_total", "counter", "Errors of the protection backend.",
		      d->backend_errors);
	if (d->has_cpu) {
		family(f, "execguard_cpu_seconds_total", "counter", "CPU time of execguardd, user and system.");
		fprintf(f, "execguard_cpu_seconds_total %.2f\n", d->cpu_seconds);
	}
	if (d->n_latency)
		latency_family(f, d);
}

/* Every unit, protected or not, with why (reason) and where that was
 * said (source). */
static void unit_protected_family(FILE *f, const struct metrics_unit *units, size_t n)
{
	if (!n)
		return;
	family(f, "execguard_unit_protected", "gauge",
	       "1 when the unit's text is protected now; reason (what asks for it): policy, drop-in, annotation, auto or default.");
	for (size_t i = 0; i < n; i++) {
		unit_labels(f, "execguard_unit_protected", &units[i]);
		fputs(",reason=\"", f);
		metrics_escape_label(units[i].reason, f);
		fputs("\",source=\"", f);
		metrics_escape_label(units[i].source, f);
		fprintf(f, "\"} %d\n", units[i].protected_now ? 1 : 0);
	}
}

/* The kernel's bound: only units that have one, and max as +Inf (not a
 * number that UNIT_FAMILY could give). */
static void bound_family(FILE *f, const struct metrics_unit *units, size_t n)
{
	bool any_bound = false;

	for (size_t i = 0; i < n; i++)
		any_bound |= units[i].has_bound;
	if (!any_bound)
		return;
	family(f, "execguard_unit_exec_protect_bound_bytes", "gauge",
	       "memory.exec_protect in force for the unit (the smallest up to the root; +Inf for max).");
	for (size_t i = 0; i < n; i++) {
		if (!units[i].has_bound)
			continue;
		unit_label(f, "execguard_unit_exec_protect_bound_bytes", &units[i]);
		if (units[i].bound_max)
			fputs(" +Inf\n", f);
		else
			fprintf(f, " %" PRIu64 "\n", units[i].bound);
	}
}

static void unit_families(FILE *f, const struct metrics_unit *units, size_t n)
{
	unit_protected_family(f, units, n);
	UNIT_FAMILY(f, "execguard_unit_processes", "gauge", "Processes of the unit the daemon protects.",
		    units, n, processes);
	UNIT_FAMILY(f, "execguard_unit_text_mapped_bytes", "gauge", "Executable file mappings of the unit's processes.",
		    units, n, text_mapped);
	UNIT_FAMILY(f, "execguard_unit_text_resident_bytes", "gauge", "Resident part of the unit's text.",
		    units, n, text_resident);
	UNIT_FAMILY(f, "execguard_unit_text_locked_bytes", "gauge", "Text the lock backend holds locked for the unit.",
		    units, n, text_locked);
	UNIT_FAMILY(f, "execguard_unit_major_faults_total", "counter",
		    "Major faults of the unit: text faults (pgmajfault_exec) on the patched kernel, all major faults otherwise.",
		    units, n, major_faults);
	text_fault_family(f, units, n);
	UNIT_FAMILY(f, "execguard_unit_breaches_total", "counter",
		    "Times reclaim took protected text anyway (memory.events exec_protect_breach).",
		    units, n, breaches);
	bound_family(f, units, n);
	UNIT_FAMILY(f, "execguard_unit_exec_protect_usage_bytes", "gauge",
		    "Executable-image pages charged to the unit that its protection covers (memory.stat exec_protect_usage).",
		    units, n, kept);
}

int metrics_format(const struct metrics_daemon *d, const struct metrics_unit *units, size_t n,
		   char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;

	up_families(f, d);
	if (d->up) {
		daemon_families(f, d);
		unit_families(f, units, n);
	}
	if (fclose(f) != 0 || !buf) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}
