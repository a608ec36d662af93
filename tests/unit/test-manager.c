/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's core without root, the connector or a kernel feature: a
 * fake /proc and cgroup tree in a temporary directory, the kernel backend
 * writing the fake memory.exec_protect files, and arrays of connector
 * events fed to manager_process_events() as the socket would deliver
 * them. Processes are pinned by their fake /proc directories (a proc root
 * other than /proc never uses pidfds); a process exits when its status
 * file goes. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "cnproc.h"
#include "manager-auto.h"
#include "manager-decide.h"
#include "manager.h"
#include "test.h"
#include "util.h"

static char root[] = "/tmp/execguard-test-manager-XXXXXX";

/* openat() as glibc's, counting the daemon's opens of a process's
 * mappings ("maps"): its code is linked in and calls this one. */
static unsigned n_maps_opens;
int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (streq(path, "maps"))
		n_maps_opens++;
	return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static void write_at(const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void mkdir_at(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	CHECK(mkdir(p, 0755) == 0);
}

static char *read_at(const char *rel)
{
	static char buf[64];
	char p[512];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return buf;
}

/* A running process PID in CGROUP, running EXE. */
static void fake_process(pid_t pid, const char *cgroup, const char *exe)
{
	char rel[128], text[256], link[512];

	snprintf(rel, sizeof(rel), "proc/%d", (int)pid);
	mkdir_at(rel);
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int)pid);
	snprintf(text, sizeof(text), "0::%s\n", cgroup);
	write_at(rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/status", (int)pid);
	write_at(rel, "Name:\tfake\nState:\tS (sleeping)\nThreads:\t1\n");
	snprintf(link, sizeof(link), "%s/proc/%d/exe", root, (int)pid);
	CHECK(symlink(exe, link) == 0);
}

/* The process exits: its /proc directory goes (the pin, an open fd of
 * that directory, then finds no status file) and scans no longer see it. */
static void fake_exit(pid_t pid)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/proc/%d'", root, (int)pid);
	CHECK(system(cmd) == 0);
}

static void events(struct manager *m, enum cnproc_type type, pid_t pid)
{
	struct cnproc_event ev = { .type = type, .pid = pid, .tgid = pid, .timestamp_ns = now_ns() };

	manager_process_events(m, &ev, 1);
}

static int count_one(const struct manager_process_info *p, void *userdata)
{
	(void)p;
	(*(size_t *)userdata)++;
	return 0;
}

/* What decided to protect PID, as the daemon keeps it. */
static char source_of_pid[256];
static pid_t source_pid;
static int find_source(const struct manager_process_info *p, void *userdata)
{
	(void)userdata;
	if (p->pid == source_pid)
		snprintf(source_of_pid, sizeof(source_of_pid), "%s", p->source ?: "(none)");
	return 0;
}

static const char *source_of(struct manager *m, pid_t pid)
{
	source_pid = pid;
	source_of_pid[0] = '\0';
	manager_foreach_process(m, find_source, NULL);
	return source_of_pid;
}

static size_t tracked(struct manager *m)
{
	size_t n = 0;

	manager_foreach_process(m, count_one, &n);
	return n;
}

/* A stand-in for the asynchronous unit lookup: "late.service" has a
 * section saying Protect=yes, known only once answered. */
static bool answered;
static pid_t waiting_pid;
static int fake_unit_settings(void *userdata, const char *unit, pid_t pid, uint64_t exec_ts,
			      struct rule_settings *ret, char **ret_source)
{
	(void)userdata;
	(void)exec_ts;
	if (!streq(unit, "late.service"))
		return 0;
	if (!answered) {
		waiting_pid = pid;
		return UNIT_SETTINGS_PENDING;
	}
	*ret = (struct rule_settings){ .protect = 1 };
	*ret_source = strdup("late.service.d/x.conf:2");
	return *ret_source ? 1 : -ENOMEM;
}

/* A NOTIFY_SOCKET of the test's own: how many STATUS= lines the
 * daemon sent (sd_notify() reads the variable at each call). */
static int notify_fd = -1;
static void notify_open(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", root);
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	CHECK(notify_fd >= 0);
	CHECK(bind(notify_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(setenv("NOTIFY_SOCKET", sa.sun_path, 1) == 0);
}

static int status_lines(void)
{
	char buf[4096];
	ssize_t n;
	int k = 0;

	while ((n = recv(notify_fd, buf, sizeof(buf) - 1, 0)) > 0) {
		buf[n] = '\0';
		k += strstr(buf, "STATUS=") != NULL;
	}
	return k;
}

static struct manager *start(void)
{
	char conf[512], cg[512], proc[512];
	struct manager_args args;
	struct manager *m = NULL;

	snprintf(conf, sizeof(conf), "%s/execguard.conf", root);
	snprintf(cg, sizeof(cg), "%s/cg", root);
	snprintf(proc, sizeof(proc), "%s/proc", root);
	args = (struct manager_args){
		.config_file = conf,
		.cgroup_root = cg,
		.proc_root = proc,
		.backend_override = -1,
	};
	CHECK_EQ_INT(manager_new(&args, &m), 0);
	if (!m)
		return NULL;
	CHECK_EQ_INT(manager_load_policy(m), 0);
	CHECK_EQ_INT(manager_pick_backend(m), 0);
	CHECK_EQ_INT(manager_scan(m), 0);
	return m;
}

static void setup(void)
{
	CHECK(mkdtemp(root) != NULL);
	mkdir_at("proc");
	mkdir_at("cg");
	mkdir_at("cg/system.slice");
	mkdir_at("cg/system.slice/app.service");
	mkdir_at("cg/system.slice/other.service");
	mkdir_at("cg/system.slice/late.service");
	write_at("cg/system.slice/memory.exec_protect", "0\n");
	write_at("cg/system.slice/app.service/memory.exec_protect", "0\n");
	write_at("cg/system.slice/other.service/memory.exec_protect", "0\n");
	write_at("cg/system.slice/late.service/memory.exec_protect", "0\n");
	write_at("execguard.conf", "[Daemon]\nBackend=kernel\n[Rule app]\nMatchUnit=app.service\nProtect=yes\n");
	CHECK(chmod(root, 0755) == 0);
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/execguard.conf", root);
		CHECK(chmod(p, 0644) == 0);
	}
}

static void test_core(void)
{
	struct manager *m;
	char rel[128];
	int n_status;

	setup();
	log_setup(LOG_TARGET_STDERR, LOG_WARNING);
	/* One process there before the start: found by the scan. */
	fake_process(100, "/system.slice/app.service", "/usr/bin/app");
	m = start();
	if (!m)
		return;
	CHECK_EQ_INT(tracked(m), 1);
	CHECK_STREQ(source_of(m, 100), "app");
	CHECK_STREQ(read_at("cg/system.slice/app.service/memory.exec_protect"), "max");
	CHECK_STREQ(read_at("cg/system.slice/memory.exec_protect"), "max");

	/* An exec in a unit no rule names: decided, not protected. */
	fake_process(101, "/system.slice/other.service", "/usr/bin/other");
	events(m, CNPROC_EXEC, 101);
	CHECK_EQ_INT(tracked(m), 1);
	CHECK_STREQ(read_at("cg/system.slice/other.service/memory.exec_protect"), "0");

	/* An exec whose process is gone before the look: nothing pinned. */
	events(m, CNPROC_EXEC, 102);
	CHECK_EQ_INT(tracked(m), 1);

	/* A second process of the protected unit, then the first exits: the
	 * cgroup stays set until its last protected process is gone. */
	fake_process(103, "/system.slice/app.service", "/usr/bin/app");
	events(m, CNPROC_EXEC, 103);
	CHECK_EQ_INT(tracked(m), 2);
	fake_exit(100);
	events(m, CNPROC_EXIT, 100);
	CHECK_EQ_INT(tracked(m), 1);
	CHECK_STREQ(read_at("cg/system.slice/app.service/memory.exec_protect"), "max");

	/* A look that fails (its cgroup file unreadable: a directory) does
	 * not unprotect the running process; its exit still does. */
	snprintf(rel, sizeof(rel), "%s/proc/103/cgroup", root);
	CHECK(unlink(rel) == 0);
	CHECK(mkdir(rel, 0755) == 0);
	events(m, CNPROC_EXEC, 103);
	CHECK_EQ_INT(tracked(m), 1);
	CHECK_STREQ(read_at("cg/system.slice/app.service/memory.exec_protect"), "max");
	CHECK_EQ_INT(manager_rescan(m), 0); /* nor does a rescan sweep it */
	CHECK_EQ_INT(tracked(m), 1);
	fake_exit(103);
	events(m, CNPROC_EXIT, 103);
	CHECK_EQ_INT(tracked(m), 0);
	CHECK_STREQ(read_at("cg/system.slice/app.service/memory.exec_protect"), "0");
	CHECK_STREQ(read_at("cg/system.slice/memory.exec_protect"), "0");

	/* A unit whose section is still being asked for: the process waits,
	 * nothing else does, and it is decided when the answer comes. */
	manager_set_unit_settings(m, fake_unit_settings, NULL);
	fake_process(104, "/system.slice/late.service", "/usr/bin/late");
	fake_process(105, "/system.slice/app.service", "/usr/bin/app");
	events(m, CNPROC_EXEC, 104);
	events(m, CNPROC_EXEC, 105);
	CHECK_EQ_INT(waiting_pid, 104);
	CHECK_EQ_INT(tracked(m), 1); /* 105 decided, 104 waits */
	CHECK_STREQ(read_at("cg/system.slice/late.service/memory.exec_protect"), "0");
	/* 40 more wait for the same answer. */
	for (pid_t p = 200; p < 240; p++) {
		fake_process(p, "/system.slice/late.service", "/usr/bin/late");
		events(m, CNPROC_EXEC, p);
	}
	answered = true;
	notify_open();
	manager_decide_pid(m, 104, 0);
	n_status = status_lines();
	for (pid_t p = 200; p < 240; p++) {
		manager_decide_pid(m, p, 0);
		n_status += status_lines(); /* a datagram queue holds only a few */
	}
	CHECK_EQ_INT(tracked(m), 42);
	CHECK_STREQ(source_of(m, 104), "late.service.d/x.conf:2");
	CHECK_STREQ(read_at("cg/system.slice/late.service/memory.exec_protect"), "max");
	/* STATUS= goes out with the status timer, once a second at most:
	 * not once per process that waited. */
	CHECK(n_status <= 1);
	unsetenv("NOTIFY_SOCKET");

	manager_free(m);
	/* Stopping releases what it set. */
	CHECK_STREQ(read_at("cg/system.slice/late.service/memory.exec_protect"), "0");
	CHECK_STREQ(read_at("cg/system.slice/app.service/memory.exec_protect"), "0");
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		CHECK(system(cmd) == 0);
	}
}

/* A cgroup as cgroupfs makes one: its files there the moment it
 * appears (made aside, renamed into place). */
static void make_cgroup(const char *rel, bool populated)
{
	char tmp[512], dst[512];

	snprintf(tmp, sizeof(tmp), "staging");
	mkdir_at(tmp);
	write_at("staging/memory.exec_protect", "0\n");
	write_at("staging/cgroup.events", populated ? "populated 1\nfrozen 0\n" : "populated 0\nfrozen 0\n");
	snprintf(tmp, sizeof(tmp), "%s/staging", root);
	snprintf(dst, sizeof(dst), "%s/cg/%s", root, rel);
	CHECK(rename(tmp, dst) == 0);
}

static const char *value(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "cg/%s/memory.exec_protect", rel);
	return read_at(p);
}

/* Runs the loop until the cgroup's file says want, for at most 5 s. */
static bool loop_until(struct manager *m, const char *rel, const char *want)
{
	for (int i = 0; i < 50; i++) {
		const char *v = value(rel);

		if (v && streq(v, want))
			return true;
		CHECK(sd_event_run(manager_event(m), 100000) >= 0);
	}
	return false;
}

/* Unit rules with the kernel backend: cgroups are decided as a whole,
 * nothing per exec, no connector. */
static void test_push(void)
{
	char conf[512], cg[512], proc[512], cmd[600];
	struct manager_stats st;
	struct manager_args args;
	struct manager *m = NULL;

	strcpy(root, "/tmp/execguard-test-manager-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	CHECK(chmod(root, 0755) == 0);
	mkdir_at("proc");
	mkdir_at("cg");
	make_cgroup("system.slice", true);
	make_cgroup("system.slice/web.service", true);
	make_cgroup("system.slice/idle.service", false);
	write_at("execguard.conf", "[Daemon]\nBackend=kernel\n[Rule web]\nMatchUnit=web.service late.service idle.service\n"
				    "Protect=yes\n");
	snprintf(conf, sizeof(conf), "%s/execguard.conf", root);
	CHECK(chmod(conf, 0644) == 0);
	snprintf(cg, sizeof(cg), "%s/cg", root);
	snprintf(proc, sizeof(proc), "%s/proc", root);
	args = (struct manager_args){ .config_file = conf, .cgroup_root = cg, .proc_root = proc, .backend_override = -1 };
	CHECK_EQ_INT(manager_new(&args, &m), 0);
	if (!m)
		return;
	CHECK_EQ_INT(manager_load_policy(m), 0);
	CHECK_EQ_INT(manager_pick_backend(m), 0);
	/* No rule names executables: the connector is not opened (this test
	 * has no privilege for it) and no process is looked at. */
	CHECK_EQ_INT(manager_start_events(m), 0);
	CHECK_EQ_INT(manager_scan(m), 0);
	CHECK_STREQ(value("system.slice/web.service"), "max");
	CHECK_STREQ(value("system.slice"), "max");
	/* Found empty by the scan: protected once populated. */
	CHECK_STREQ(value("system.slice/idle.service"), "0");

	/* A unit's cgroup appears: protected at once; a cgroup made inside
	 * it later is protected too (the kernel wants every level set). */
	make_cgroup("system.slice/late.service", false);
	CHECK(loop_until(m, "system.slice/late.service", "max"));
	make_cgroup("system.slice/late.service/worker", true);
	CHECK(loop_until(m, "system.slice/late.service/worker", "max"));
	/* One no rule names: left alone. */
	make_cgroup("system.slice/other.service", true);
	write_at("cg/system.slice/idle.service/cgroup.events", "populated 1\nfrozen 0\n");
	CHECK(loop_until(m, "system.slice/idle.service", "max"));
	CHECK_STREQ(value("system.slice/other.service"), "0");

	/* Made before its memory controller is enabled (a container's own
	 * cgroup: the file comes a moment later): protected once it is there. */
	mkdir_at("cg/system.slice/late.service/ctr");
	CHECK(sd_event_run(manager_event(m), 50000) >= 0);
	write_at("cg/system.slice/late.service/ctr/memory.exec_protect", "0\n");
	CHECK(loop_until(m, "system.slice/late.service/ctr", "max"));

	/* Its processes gone (cgroup.events: populated 0): released. */
	write_at("cg/system.slice/late.service/worker/cgroup.events", "populated 0\nfrozen 0\n");
	CHECK(loop_until(m, "system.slice/late.service/worker", "0"));
	CHECK_STREQ(value("system.slice/late.service"), "max");
	manager_get_stats(m, &st);
	CHECK_EQ_INT(st.cgroups_protected, 4); /* web, idle, late, late/ctr */
	CHECK_EQ_INT(st.processes_protected, 0);
	CHECK_EQ_INT(st.exec_events, 0);

	manager_free(m);
	CHECK_STREQ(value("system.slice/web.service"), "0");
	CHECK_STREQ(value("system.slice/late.service"), "0");
	CHECK_STREQ(value("system.slice"), "0");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
}

static void no_apply(struct manager *m, const char *key, const char *cgroup)
{
	(void)m, (void)key, (void)cgroup;
}

/* A Protect=auto round runs in the event loop: however many processes
 * explicit rules protect, it reads a bounded number of their mappings
 * (it read every one, unbounded, before). */
static void test_auto_round_bounded(void)
{
	struct manager *m;
	char cmd[600];

	strcpy(root, "/tmp/execguard-test-manager-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	CHECK(chmod(root, 0755) == 0);
	mkdir_at("proc");
	mkdir_at("cg");
	mkdir_at("cg/system.slice");
	mkdir_at("cg/system.slice/app.service");
	mkdir_at("cg/system.slice/auto.service");
	write_at("cg/system.slice/memory.exec_protect", "0\n");
	write_at("cg/system.slice/app.service/memory.exec_protect", "0\n");
	write_at("execguard.conf", "[Daemon]\nBackend=kernel\n[Rule app]\nMatchUnit=app.service\nProtect=yes\n"
				    "[Rule auto]\nMatchUnit=auto.service\nProtect=auto\n");
	snprintf(cmd, sizeof(cmd), "%s/execguard.conf", root);
	CHECK(chmod(cmd, 0644) == 0);
	for (pid_t p = 1000; p < 1300; p++)
		fake_process(p, "/system.slice/app.service", "/usr/bin/app");
	fake_process(1300, "/system.slice/auto.service", "/usr/bin/auto");
	m = start();
	if (!m)
		return;
	CHECK_EQ_INT(tracked(m), 300);
	n_maps_opens = 0;
	auto_round(m, no_apply, manager_foreach_pushed);
	CHECK(n_maps_opens <= 64);
	manager_free(m);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
}

TEST_MAIN(test_core, test_push, test_auto_round_bounded)
