/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguardctl metrics: label escaping, family names and types, what is
 * left out when unknown, and a whole small exposition. */
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "metrics.h"
#include "test.h"
#include "util.h"

static const struct metrics_daemon daemon0 = {
	.up = true, .last_success = 1765000000.25,
	.version = "1.0", .backend = "kernel", .processes_protected = 2,
	.exec_events = 10, .exit_events = 3, .decisions = 9, .overflows = 1, .rescans = 2,
	.backend_errors = 0,
};

static char *format(const struct metrics_daemon *d, const struct metrics_unit *u, size_t n)
{
	char *out = NULL;
	size_t len = 0;

	CHECK_EQ_INT(metrics_format(d, u, n, &out, &len), 0);
	CHECK(out && strlen(out) == len);
	return out;
}

static void test_escape(void)
{
	struct metrics_unit u = {
		.unit = "a\\b\"c\nd.service", .reason = "policy", .source = "we\"b",
		.processes = 1, .text_mapped = METRICS_UNKNOWN, .text_resident = METRICS_UNKNOWN,
		.text_locked = METRICS_UNKNOWN, .major_faults = METRICS_UNKNOWN,
		.breaches = METRICS_UNKNOWN, .kept = METRICS_UNKNOWN,
	};
	_cleanup_free_ char *out = format(&daemon0, &u, 1);

	CHECK(out && strstr(out, "execguard_unit_protected{unit=\"a\\\\b\\\"c\\nd.service\",reason=\"policy\",source=\"we\\\"b\"} 0\n"));
	CHECK(out && strstr(out, "execguard_unit_processes{unit=\"a\\\\b\\\"c\\nd.service\"} 1\n"));
	/* No raw newline inside a label: every line starts a comment or a name. */
	for (const char *l = out; l && *l; l = strchr(l, '\n') + 1)
		CHECK(l[0] == '#' || strncmp(l, "execguard_", 10) == 0);
}

/* Counters end in _total, each family has HELP and TYPE once, before
 * its samples, and unknown figures are left out. */
static void test_names(void)
{
	struct metrics_unit u = {
		.unit = "a.service", .reason = "policy", .source = "web", .protected_now = true,
		.processes = 1, .text_mapped = 4096, .text_resident = METRICS_UNKNOWN,
		.text_locked = METRICS_UNKNOWN, .major_faults = 5, .breaches = 0,
		.kept = METRICS_UNKNOWN,
	};
	_cleanup_free_ char *out = format(&daemon0, &u, 1);
	char name[128], type[16], seen[4096] = " ";

	for (const char *l = out; l && *l; l = strchr(l, '\n') + 1) {
		char key[140];

		if (sscanf(l, "# TYPE %127s %15s", name, type) != 2)
			continue;
		snprintf(key, sizeof(key), " %s ", name);
		CHECK(!strstr(seen, key));
		strncat(seen, name, sizeof(seen) - strlen(seen) - 2);
		strcat(seen, " ");
		CHECK(strncmp(name, "execguard_", 10) == 0);
		if (streq(type, "counter"))
			CHECK(strlen(name) > 6 && streq(name + strlen(name) - 6, "_total"));
		else
			CHECK((streq(type, "gauge") || streq(type, "histogram")) && !strstr(name, "_total"));
	}
	CHECK(strstr(seen, " execguard_exec_events_total "));
	CHECK(strstr(seen, " execguard_unit_major_faults_total "));
	CHECK(strstr(seen, " execguard_unit_breaches_total "));
	CHECK(strstr(seen, " execguard_up "));
	CHECK(strstr(seen, " execguard_last_success_timestamp_seconds "));
	CHECK(!strstr(seen, "resident"));
	CHECK(!strstr(seen, "locked"));
	CHECK(!strstr(seen, "bound"));
	CHECK(!strstr(seen, "kept"));
	CHECK(!strstr(seen, "cpu"));
	CHECK(!strstr(seen, "latency"));
}

static void test_golden(void)
{
	struct metrics_daemon d = daemon0;
	struct metrics_unit u[] = {
		{ .unit = "a.service", .reason = "policy", .source = "web", .protected_now = true,
		  .processes = 2, .text_mapped = 8192, .text_resident = 4096, .text_locked = METRICS_UNKNOWN,
		  .major_faults = 7, .breaches = 1, .has_bound = true, .bound_max = true, .kept = 4096 },
		{ .unit = "b.service", .reason = "drop-in", .source = "/etc/systemd/system/b.service",
		  .processes = 0, .text_mapped = METRICS_UNKNOWN, .text_resident = METRICS_UNKNOWN,
		  .text_locked = METRICS_UNKNOWN, .major_faults = METRICS_UNKNOWN,
		  .breaches = METRICS_UNKNOWN, .has_bound = true, .bound = 1048576, .kept = METRICS_UNKNOWN },
	};
	_cleanup_free_ char *out = NULL;

	struct latency_histogram h = { 0 };
	struct latency_bucket b[LATENCY_EXPORT_BUCKETS];

	latency_add(&h, 120);
	latency_add(&h, 900);
	latency_add(&h, 2000);
	latency_export(&h, b);
	d.has_cpu = true;
	d.cpu_seconds = 1.5;
	d.latency = b;
	d.n_latency = ELEMENTSOF(b);
	d.latency_sum_usec = h.sum_us;
	out = format(&d, u, ELEMENTSOF(u));
	CHECK(out && strstr(out,
		"# HELP execguard_up 1 when execguardctl read execguardd's figures, 0 when it could not (then no other figure is given).\n"
		"# TYPE execguard_up gauge\n"
		"execguard_up 1\n"
		"# HELP execguard_last_success_timestamp_seconds Unix time of the last reading of execguardd's figures (kept while the daemon cannot be read).\n"
		"# TYPE execguard_last_success_timestamp_seconds gauge\n"
		"execguard_last_success_timestamp_seconds 1765000000.250\n"));
	CHECK(out && strstr(out,
		"# HELP execguard_exec_events_total Exec events read from the proc connector.\n"
		"# TYPE execguard_exec_events_total counter\n"
		"execguard_exec_events_total 10\n"));
	CHECK(out && strstr(out,
		"execguard_cpu_seconds_total 1.50\n"
		"# HELP execguard_exec_decision_latency_seconds Exec to decision latency since execguardd started.\n"
		"# TYPE execguard_exec_decision_latency_seconds histogram\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"0.00001\"} 0\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"0.000025\"} 0\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"0.00005\"} 0\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"0.0001\"} 0\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"0.00025\"} 1\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"0.0005\"} 1\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"0.001\"} 2\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"0.0025\"} 3\n"));
	CHECK(out && strstr(out,
		"execguard_exec_decision_latency_seconds_bucket{le=\"5\"} 3\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"10\"} 3\n"
		"execguard_exec_decision_latency_seconds_bucket{le=\"+Inf\"} 3\n"
		"execguard_exec_decision_latency_seconds_sum 0.003020\n"
		"execguard_exec_decision_latency_seconds_count 3\n"));
	CHECK(out && strstr(out,
		"execguard_unit_protected{unit=\"a.service\",reason=\"policy\",source=\"web\"} 1\n"
		"execguard_unit_protected{unit=\"b.service\",reason=\"drop-in\",source=\"/etc/systemd/system/b.service\"} 0\n"
		"# HELP execguard_unit_processes Processes of the unit the daemon protects.\n"
		"# TYPE execguard_unit_processes gauge\n"
		"execguard_unit_processes{unit=\"a.service\"} 2\n"
		"execguard_unit_processes{unit=\"b.service\"} 0\n"
		"# HELP execguard_unit_text_mapped_bytes Executable file mappings of the unit's processes.\n"
		"# TYPE execguard_unit_text_mapped_bytes gauge\n"
		"execguard_unit_text_mapped_bytes{unit=\"a.service\"} 8192\n"
		"# HELP execguard_unit_text_resident_bytes"));
	CHECK(out && strstr(out,
		"# TYPE execguard_unit_exec_protect_bound_bytes gauge\n"
		"execguard_unit_exec_protect_bound_bytes{unit=\"a.service\"} +Inf\n"
		"execguard_unit_exec_protect_bound_bytes{unit=\"b.service\"} 1048576\n"));
	CHECK(out && strstr(out, "execguard_unit_exec_protect_usage_bytes{unit=\"a.service\"} 4096\n"));
	CHECK(out && !strstr(out, "execguard_unit_exec_protect_usage_bytes{unit=\"b.service\"}"));
	CHECK(out && strstr(out, "execguard_unit_major_faults_total{unit=\"a.service\"} 7\n"));
	CHECK(out && out[strlen(out) - 1] == '\n');
}

/* Text faults: one family, the method as a label, unknown left out; no
 * family at all when no unit has the figure. */
static void test_text_faults(void)
{
	struct metrics_unit u[] = {
		{ .unit = "k.service", .reason = "policy", .source = "web", .text_faults = 5,
		  .text_fault_source = "kernel" },
		{ .unit = "e.service", .reason = "auto", .source = "", .text_faults = 12,
		  .text_fault_source = "estimate" },
		{ .unit = "u.service", .reason = "drop-in", .source = "/x", .text_faults = METRICS_UNKNOWN,
		  .text_fault_source = "" },
	};
	_cleanup_free_ char *out = format(&daemon0, u, ELEMENTSOF(u));
	_cleanup_free_ char *none = format(&daemon0, &u[2], 1);

	CHECK(out && strstr(out,
		"# TYPE execguard_unit_text_major_faults_total counter\n"
		"execguard_unit_text_major_faults_total{unit=\"k.service\",method=\"kernel\"} 5\n"
		"execguard_unit_text_major_faults_total{unit=\"e.service\",method=\"estimate\"} 12\n"
		"# HELP execguard_unit_breaches_total"));
	CHECK(out && strstr(out, "execguard_unit_protected{unit=\"e.service\",reason=\"auto\",source=\"\"} 0\n"));
	CHECK(none && !strstr(none, "text_major_faults"));
}

static void test_write(void)
{
	char dir[] = "/tmp/test-metrics-XXXXXX", path[64], *buf = NULL;
	size_t len;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/x.prom", dir);
	CHECK_EQ_INT(write_file_atomic(path, "a 1\n", 4, 0644), 0);
	CHECK_EQ_INT(write_file_atomic(path, "b 2\n", 4, 0644), 0);
	CHECK_EQ_INT(read_file_at(AT_FDCWD, path, 64, &buf, &len), 0);
	CHECK_STREQ(buf, "b 2\n");
	free(buf);
	CHECK_EQ_INT(write_file_atomic("/nonexistent-dir/x.prom", "a", 1, 0644), -ENOENT);
	CHECK_EQ_INT(unlink(path), 0);
	CHECK_EQ_INT(rmdir(dir), 0); /* no temporary file left behind */
}

/* The daemon could not be read: execguard_up 0 and the last success an
 * earlier run wrote, nothing else (no figure of an earlier run stays). */
static void test_down(void)
{
	struct metrics_daemon d = { .up = false };
	struct metrics_unit u = { .unit = "a.service", .reason = "policy", .source = "web", .processes = 1 };
	_cleanup_free_ char *before = format(&daemon0, &u, 1);
	_cleanup_free_ char *never = format(&d, NULL, 0);
	_cleanup_free_ char *down = NULL;
	double t = 0;

	CHECK(before && metrics_last_success(before, strlen(before), &t) == 0);
	CHECK(t == 1765000000.25);
	d.last_success = t;
	down = format(&d, &u, 1);
	CHECK_STREQ(down,
		    "# HELP execguard_up 1 when execguardctl read execguardd's figures, 0 when it could not (then no other figure is given).\n"
		    "# TYPE execguard_up gauge\n"
		    "execguard_up 0\n"
		    "# HELP execguard_last_success_timestamp_seconds Unix time of the last reading of execguardd's figures (kept while the daemon cannot be read).\n"
		    "# TYPE execguard_last_success_timestamp_seconds gauge\n"
		    "execguard_last_success_timestamp_seconds 1765000000.250\n");
	/* Down again: the same time carried on. */
	CHECK(down && metrics_last_success(down, strlen(down), &t) == 0 && t == 1765000000.25);
	CHECK_STREQ(never,
		    "# HELP execguard_up 1 when execguardctl read execguardd's figures, 0 when it could not (then no other figure is given).\n"
		    "# TYPE execguard_up gauge\n"
		    "execguard_up 0\n");
	CHECK(never && metrics_last_success(never, strlen(never), &t) == -ENOENT);
	CHECK(metrics_last_success("x_execguard_last_success_timestamp_seconds 5\n", 44, &t) == -ENOENT);
	CHECK(metrics_last_success("execguard_last_success_timestamp_seconds nope\n", 46, &t) == -ENOENT);
}

/* A unit that is a container of a pod: Kubernetes' label names on every
 * per-unit sample, each escaped; none on a plain unit. */
static void test_container_labels(void)
{
	struct metrics_unit u[2] = {
		{ .unit = "crio-3f2a.scope", .reason = "annotation", .source = "x", .protected_now = true,
		  .processes = 2, .text_mapped = METRICS_UNKNOWN, .text_resident = METRICS_UNKNOWN,
		  .text_locked = METRICS_UNKNOWN, .major_faults = 7, .breaches = METRICS_UNKNOWN,
		  .kept = METRICS_UNKNOWN, .text_faults = 5, .text_fault_source = "kernel",
		  .namespace_ = "shop", .pod = "web-0", .pod_uid = "8c1e", .container = "ng\"inx" },
		{ .unit = "a.service", .reason = "policy", .source = "r", .processes = 1,
		  .text_mapped = METRICS_UNKNOWN, .text_resident = METRICS_UNKNOWN, .text_locked = METRICS_UNKNOWN,
		  .major_faults = 3, .breaches = METRICS_UNKNOWN, .kept = METRICS_UNKNOWN,
		  .text_faults = METRICS_UNKNOWN, .pod = "" },
	};
	_cleanup_free_ char *out = format(&daemon0, u, 2);
	const char *k8s = "{unit=\"crio-3f2a.scope\",namespace=\"shop\",pod=\"web-0\",pod_uid=\"8c1e\",container=\"ng\\\"inx\"";

	CHECK(out && strstr(out, "execguard_unit_protected"));
	if (!out)
		return;
	for (const char *name = "execguard_unit_protected\0execguard_unit_processes\0execguard_unit_major_faults_total\0"
				"execguard_unit_text_major_faults_total\0";
	     *name; name += strlen(name) + 1) {
		char want[512];

		snprintf(want, sizeof(want), "\n%s%s", name, k8s);
		if (!strstr(out, want))
			fprintf(stderr, "missing: %s\n", want + 1);
		CHECK(strstr(out, want));
	}
	CHECK(strstr(out, "execguard_unit_processes{unit=\"a.service\"} 1\n"));
	CHECK(strstr(out, "execguard_unit_text_major_faults_total{unit=\"crio-3f2a.scope\",namespace=\"shop\",pod=\"web-0\",pod_uid=\"8c1e\",container=\"ng\\\"inx\",method=\"kernel\"} 5\n"));
}

TEST_MAIN(test_escape, test_names, test_golden, test_text_faults, test_down, test_write, test_container_labels)
