/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "policy.h"
#include "test.h"
#include "util.h"

static int parse(struct policy *p, const char *text)
{
	policy_init(p);
	return policy_parse_buffer(p, "test.conf", text, strlen(text));
}

static bool has_error(const struct policy *p, unsigned line, const char *needle)
{
	for (size_t i = 0; i < p->n_errors; i++)
		if (p->errors[i].line == line && strstr(p->errors[i].message, needle))
			return true;
	for (size_t i = 0; i < p->n_errors; i++)
		fprintf(stderr, "  have %s:%u: %s\n", p->errors[i].file, p->errors[i].line,
			p->errors[i].message);
	return false;
}

static void test_good(void)
{
	struct policy p;
	const char *text =
		"# comment\n"
		"; also a comment\n"
		"[Daemon]\n"
		"Backend = kernel\n"
		"RescanDelaysMSec=10, 100 900\n"
		"ExecBatchMSec=0\n"
		"LockBudget=64M\n"
		"  LockRecheckSec=5 ; inline comment\n"
		"\n"
		"[Rule web]\n"
		"MatchUnit=nginx.service *.web.service\n"
		"MatchExe=/usr/sbin/*\n"
		"Protect=yes\n"
		"LockBudget=10%\n"
		"ExecProtectLimit=64M\n"
		"[Rule all]\n"
		"MatchCgroup=/*\n"
		"ExecProtectLimit=max\n";

	CHECK_EQ_INT(parse(&p, text), 0);
	CHECK_EQ_INT(p.daemon.backend, BACKEND_KERNEL);
	CHECK_EQ_INT(p.daemon.n_rescan_delays, 3);
	CHECK_EQ_INT(p.daemon.rescan_delays_ms[2], 900);
	CHECK_EQ_INT(p.daemon.exec_batch_ms, 0);
	CHECK_EQ_INT(p.daemon.lock_budget.bytes, 64 << 20);
	CHECK_EQ_INT(p.daemon.lock_recheck_sec, 5);
	CHECK_EQ_INT(p.n_rules, 2);
	CHECK_STREQ(p.rules[0].name, "web");
	CHECK_EQ_INT(p.rules[0].line, 10);
	CHECK_STREQ(p.rules[0].match_unit[1], "*.web.service");
	CHECK(p.rules[0].match_unit[2] == NULL);
	CHECK_EQ_INT(p.rules[0].settings.protect, 1);
	CHECK_EQ_INT(p.rules[0].settings.lock_budget.percent, 10);
	CHECK_EQ_INT(budget_resolve(&p.rules[0].settings.lock_budget, 1000), 100);
	CHECK(p.rules[0].settings.exec_protect_limit == 64ull << 20);
	CHECK(p.rules[1].settings.exec_protect_limit == EXEC_PROTECT_LIMIT_MAX);
	policy_done(&p);
}

static void test_dependent_keys(void)
{
	struct policy p;

	/* Checked once the file is read, in whatever order the keys come. */
	CHECK_EQ_INT(parse(&p, "[Daemon]\nPressureStallMSec=1500\nPressureWindowMSec=2000\n"), 0);
	CHECK_EQ_INT(p.daemon.pressure_stall_ms, 1500);
	/* The reserve defaults to 1% (of RAM or of a cgroup's limit). */
	CHECK_EQ_INT(p.daemon.pressure_reserve.percent, 1);
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Daemon]\nPressureReserve=64M\n"), 0);
	CHECK(p.daemon.pressure_reserve.bytes == 64ull << 20 && !p.daemon.pressure_reserve.percent);
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Daemon]\nPressureReserve=0\n"), 0);
	CHECK(p.daemon.pressure_reserve.set && !p.daemon.pressure_reserve.bytes);
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Daemon]\nPressureWindowMSec=2000\nPressureStallMSec=1500\n"), 0);
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Daemon]\nPressureWindowMSec=2000\nPressureStallMSec=2000\n"), 1);
	CHECK(has_error(&p, 3, "must be below PressureWindowMSec=2000"));
	policy_done(&p);
}

static void test_errors(void)
{
	static const struct {
		const char *text;
		unsigned line;
		const char *needle;
	} cases[] = {
		{ "[Nope]\nProtect=yes\n", 1, "unknown section [Nope]" },
		{ "[Daemon]\nBackend=fast\n", 2, "expected auto, kernel, lock or none" },
		{ "[Daemon]\nFrobnicate=1\n", 2, "unknown key Frobnicate in [Daemon]" },
		{ "[Rule a]\nProtect=maybe\n", 2, "expected yes, no or auto" },
		{ "[Rule a]\nProtect=yes\nProtect=no\n", 3, "duplicate key Protect (first set at line 2)" },
		{ "[Rule a]\n[Rule a]\n", 2, "duplicate rule [Rule a]; first defined at test.conf:1" },
		{ "Protect=yes\n", 1, "key outside of a section" },
		{ "[Rule a]\nthis is not a key\n", 2, "expected KEY=VALUE" },
		{ "[Rule a]\nFoo: bar\n", 2, "expected KEY=VALUE" },
		{ "[Rule a]\nMatchCgroup=system.slice\n", 2, "cgroup paths start with '/'" },
		{ "[Rule a]\nLockBudget=12X\n", 2, "bytes (K, M, G, T suffix)" },
		{ "[Rule a]\nLockBudget=101%\n", 2, "percentage of RAM" },
		{ "[Rule a]\nExecProtectLimit=10%\n", 2, "bytes from 4K (K, M, G, T suffix) or max" },
		{ "[Rule a]\nExecProtectLimit=1\n", 2, "bytes from 4K" },
		{ "[Rule a]\nExecProtectLimit=0\n", 2, "bytes from 4K" },
		{ "[Daemon]\nRescanDelaysMSec=100 50\n", 2, "rising delays" },
		{ "[Daemon]\nReceiveBufferBytes=-5\n", 2, "bytes from 65536" },
		{ "[Daemon]\nExecBatchMSec=1001\n", 2, "milliseconds from 0 (at once) to 1000" },
		{ "[Daemon]\nPressureStallMSec=2000\n", 2, "must be below PressureWindowMSec" },
		{ "[Daemon]\n\nPressureReserve=lots\n", 3, "PressureReserve" },
		{ "[Daemon]\nPressureReserve=0.5%\n", 2, "percentage (of RAM, or of a cgroup's memory limit)" },
		{ "[Daemon]\nPressureReserve=101%\n", 2, "bytes (K, M, G, T suffix)" },
		{ "[Rule with space]\n", 1, "NAME without spaces" },
		{ "[Rule a\n", 1, "without closing" },
		{ "\n\n[Rule a]\nMatchUnit=x\nUnknown=1\n", 5, "unknown key Unknown in [Rule a]" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy p;
		int r = parse(&p, cases[i].text);

		if (r < 1)
			fprintf(stderr, "case %zu gave no error\n", i);
		CHECK(r >= 1);
		CHECK(has_error(&p, cases[i].line, cases[i].needle));
		policy_done(&p);
	}
}

static void test_long_line_and_nul(void)
{
	char text[1024];
	struct policy p;

	snprintf(text, sizeof(text), "[Rule a]\nLockBudget=%0400d\nProtect=yes\n", 0);
	CHECK_EQ_INT(parse(&p, text), 1);
	CHECK(has_error(&p, 2, "line too long"));
	/* The rest of the file is still read. */
	CHECK_EQ_INT(p.rules[0].settings.protect, 1);
	policy_done(&p);

	/* An overlong section header (found by the fuzzer). */
	memset(text, 'x', 600);
	text[0] = '[';
	text[599] = ']';
	text[600] = '\0';
	CHECK_EQ_INT(parse(&p, text), 1);
	CHECK(has_error(&p, 1, "line too long"));
	policy_done(&p);

	policy_init(&p);
	CHECK_EQ_INT(policy_parse_buffer(&p, "nul.conf", "[Rule a]\nProtect=y\0es\n", 22), 1);
	CHECK(has_error(&p, 2, "NUL byte"));
	policy_done(&p);
}

static struct policy_decision decide(const struct policy *p, const char *unit, const char *cg,
				     const char *exe, const struct rule_settings *unit_section)
{
	struct policy_input in = { .unit = unit, .cgroup = cg, .exe = exe, .unit_section = unit_section };
	struct policy_decision d;

	policy_decide(p, &in, &d);
	return d;
}

static size_t strv_len(char **v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

/* Match keys: repeated assignments append, an empty one resets; a line
 * of 20 unit names (over Debian's libinih line limit) is read whole, in
 * pieces, with its own line number for errors after it. */
static void test_list_keys(void)
{
	char text[8192], *o = text;
	struct policy p;
	struct policy_decision d;

	o += sprintf(o, "[Rule many]\nMatchUnit=");
	for (int i = 0; i < 20; i++)
		o += sprintf(o, "%sservice-with-a-long-name-number-%02d.service", i ? " " : "", i);
	o += sprintf(o, "\nMatchUnit=extra.service\nProtect=yes\nBogus=1\n");
	CHECK(strlen(text) > 529);
	CHECK_EQ_INT(parse(&p, text), 1);
	CHECK(has_error(&p, 5, "unknown key Bogus"));
	CHECK_EQ_INT(strv_len(p.rules[0].match_unit), 21);
	CHECK_STREQ(p.rules[0].match_unit[0], "service-with-a-long-name-number-00.service");
	CHECK_STREQ(p.rules[0].match_unit[19], "service-with-a-long-name-number-19.service");
	CHECK_STREQ(p.rules[0].match_unit[20], "extra.service");
	d = decide(&p, "service-with-a-long-name-number-13.service", "/system.slice/x.service", "/x", NULL);
	CHECK(d.protect);
	d = decide(&p, "other.service", "/system.slice/other.service", "/x", NULL);
	CHECK(!d.protect);
	policy_done(&p);

	/* An empty assignment resets; scalar keys still may not repeat. */
	CHECK_EQ_INT(parse(&p, "[Rule r]\nMatchExe=/a /b\nMatchExe=\nMatchExe=/c\nProtect=yes\nProtect=no\n"), 1);
	CHECK(has_error(&p, 6, "duplicate key Protect"));
	CHECK_EQ_INT(strv_len(p.rules[0].match_exe), 1);
	CHECK_STREQ(p.rules[0].match_exe[0], "/c");
	policy_done(&p);

	/* An invalid pattern in the middle of a long line: that line. */
	o = text;
	o += sprintf(o, "[Rule c]\n\nMatchCgroup=");
	for (int i = 0; i < 30; i++)
		o += sprintf(o, "%s/system.slice/unit-%02d.service", i ? " " : "", i);
	o += sprintf(o, " relative/x\n");
	CHECK_EQ_INT(parse(&p, text), 1);
	CHECK(has_error(&p, 3, "invalid MatchCgroup=relative/x"));
	policy_done(&p);

	/* Too many patterns in all. */
	o = text + sprintf(text, "[Rule a]\n");
	for (int i = 0; i < 6; i++) {
		o += sprintf(o, "MatchUnit=");
		for (int k = 0; k < 180; k++)
			o += sprintf(o, "u%d ", k);
		o += sprintf(o, "\n");
	}
	CHECK_EQ_INT(parse(&p, text), 1);
	CHECK(has_error(&p, 7, "too many patterns in MatchUnit= of [Rule a]; at most 1024"));
	policy_done(&p);

	/* One pattern longer than a piece can carry; a line past the cap. */
	snprintf(text, sizeof(text), "[Rule a]\nMatchExe=/short /%0400d\nProtect=yes\n", 0);
	CHECK_EQ_INT(parse(&p, text), 1);
	CHECK(has_error(&p, 2, "a pattern of 401 bytes in MatchExe="));
	CHECK_EQ_INT(p.rules[0].settings.protect, 1);
	policy_done(&p);
	{
		size_t big = 20000;
		char *t = malloc(big + 64);

		CHECK(t != NULL);
		if (t) {
			o = t + sprintf(t, "[Rule a]\nMatchUnit=");
			while ((size_t)(o - t) < big)
				o += sprintf(o, "u.service ");
			sprintf(o, "\nProtect=yes\n");
			CHECK_EQ_INT(parse(&p, t), 1);
			CHECK(has_error(&p, 2, "line too long"));
			policy_done(&p);
			free(t);
		}
	}
}

static void test_precedence(void)
{
	struct policy p;
	struct policy_decision d;
	struct rule_settings unit_no = { .protect = 0 }, unit_yes = { .protect = 1 };
	const char *text =
		"[Rule all-services]\n"
		"MatchCgroup=/system.slice/*\n"
		"Protect=yes\n"
		"[Rule not-cron]\n"
		"MatchUnit=cron.service\n"
		"Protect=no\n"
		"[Rule sbin]\n"
		"MatchExe=/usr/sbin/*\n"
		"MatchUnit=*.service\n"
		"LockBudget=1G\n";

	CHECK_EQ_INT(parse(&p, text), 0);
	d = decide(&p, "nginx.service", "/system.slice/nginx.service", "/usr/sbin/nginx", NULL);
	CHECK(d.protect);
	CHECK_STREQ(d.protect_source, "all-services");
	CHECK_EQ_INT(d.n_matched, 2);
	CHECK_EQ_INT(d.settings.lock_budget.bytes, 1ULL << 30);

	/* A later rule overrides an earlier one. */
	d = decide(&p, "cron.service", "/system.slice/cron.service", "/usr/sbin/cron", NULL);
	CHECK(!d.protect);
	CHECK_STREQ(d.protect_source, "not-cron");

	/* Nothing matches: the default is not to protect. */
	d = decide(&p, NULL, "/user.slice/user-1000.slice/session-2.scope", "/usr/bin/vim", NULL);
	CHECK(!d.protect);
	CHECK_STREQ(d.protect_source, "default");

	/* A Match key with no value to compare to does not match. */
	d = decide(&p, NULL, "/init.scope", "/usr/sbin/x", NULL);
	CHECK_EQ_INT(d.n_matched, 0);

	/* The shortcut that skips reading the executable agrees. */
	{
		struct policy_input in = { .unit = "nginx.service", .cgroup = "/system.slice/nginx.service" };

		CHECK(policy_may_protect(&p, &in));
		in.cgroup = "/user.slice/user-1000.slice/session-2.scope";
		in.unit = "session-2.scope";
		CHECK(!policy_may_protect(&p, &in));
		in.unit_section = &unit_yes;
		CHECK(policy_may_protect(&p, &in));
	}

	/* The unit's own section wins over every rule. */
	d = decide(&p, "nginx.service", "/system.slice/nginx.service", "/usr/sbin/nginx", &unit_no);
	CHECK(!d.protect);
	CHECK_STREQ(d.protect_source, "unit file");
	d = decide(&p, "cron.service", "/system.slice/cron.service", "/usr/sbin/cron", &unit_yes);
	CHECK(d.protect);
	policy_done(&p);
}

static void test_unit_section(void)
{
	struct policy errs;
	struct rule_settings s = { .protect = -1 };
	char text[2048];

	/* systemd's sections, long lines and odd syntax there are not ours. */
	snprintf(text, sizeof(text),
		 "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/sh -c '%0300d'\n"
		 "Environment=A=b \\\n  C=d\n"
		 "[X-ExecGuard]\nProtect=yes\nLockBudget=32M\n[Install]\nWantedBy=multi-user.target\n", 0);
	policy_init(&errs);
	CHECK_EQ_INT(policy_parse_unit_buffer(&s, &errs, "u.conf", text, strlen(text)), 0);
	CHECK_EQ_INT(s.protect, 1);
	CHECK_EQ_INT(s.lock_budget.bytes, 32 << 20);
	policy_done(&errs);

	policy_init(&errs);
	s.protect = -1;
	snprintf(text, sizeof(text), "[Service]\nExecStart=/x\n[X-ExecGuard]\nProtect=sometimes\nMatchUnit=x\n");
	CHECK_EQ_INT(policy_parse_unit_buffer(&s, &errs, "u.conf", text, strlen(text)), 2);
	CHECK(has_error(&errs, 4, "expected yes, no or auto"));
	CHECK(has_error(&errs, 5, "unknown key MatchUnit in [X-ExecGuard]; expected Protect, LockBudget, ExecProtectLimit, Prewarm or PrewarmBudget"));
	policy_done(&errs);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	CHECK(fchmod(fd, mode) == 0);
	close(fd);
}

static void test_load_files(void)
{
	char dir[] = "/tmp/execguard-policy-XXXXXX", main_file[256], dropins[256], f[300];
	struct policy p;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(main_file, sizeof(main_file), "%s/execguard.conf", dir);
	snprintf(dropins, sizeof(dropins), "%s/execguard.d", dir);
	CHECK(mkdir(dropins, 0755) == 0);
	write_file(main_file, "[Rule base]\nMatchUnit=*.service\nProtect=yes\n", 0644);
	snprintf(f, sizeof(f), "%s/20-b.conf", dropins);
	write_file(f, "[Rule b]\nMatchUnit=b.service\nProtect=no\n", 0644);
	snprintf(f, sizeof(f), "%s/10-a.conf", dropins);
	write_file(f, "[Rule a]\nMatchUnit=b.service\nProtect=yes\n", 0644);
	snprintf(f, sizeof(f), "%s/ignored.txt", dropins);
	write_file(f, "garbage", 0644);

	policy_init(&p);
	CHECK_EQ_INT(policy_load(&p, main_file, (const char *[]){ dropins, NULL }, false), 0);
	CHECK_EQ_INT(p.n_files, 3);
	CHECK_EQ_INT(p.n_rules, 3);
	/* Lexical order: 10-a before 20-b, so b's "no" wins. */
	CHECK_STREQ(p.rules[1].name, "a");
	CHECK_STREQ(p.rules[2].name, "b");
	{
		struct policy_decision d = decide(&p, "b.service", "/system.slice/b.service", "/x", NULL);

		CHECK(!d.protect);
		CHECK_STREQ(d.protect_source, "b");
	}
	policy_done(&p);

	/* A drop-in others can write is refused, and named. */
	snprintf(f, sizeof(f), "%s/30-open.conf", dropins);
	write_file(f, "[Rule c]\nProtect=yes\n", 0666);
	policy_init(&p);
	CHECK_EQ_INT(policy_load(&p, main_file, (const char *[]){ dropins, NULL }, false), -EINVAL);
	CHECK(has_error(&p, 0, "writable by group or others"));
	CHECK(p.n_errors == 1 && strstr(p.errors[0].file, "30-open.conf"));
	policy_done(&p);
	unlink(f);

	/* A missing main file is an error unless allowed. */
	policy_init(&p);
	CHECK_EQ_INT(policy_load(&p, "/nonexistent/execguard.conf", NULL, false), -EINVAL);
	policy_done(&p);
	policy_init(&p);
	CHECK_EQ_INT(policy_load(&p, "/nonexistent/execguard.conf", NULL, true), 0);
	policy_done(&p);

	snprintf(f, sizeof(f), "rm -rf %s", dir);
	CHECK(system(f) == 0);
}

static bool has_warning(const struct policy *p, const char *file_end, unsigned line, const char *needle)
{
	for (size_t i = 0; i < p->n_warnings; i++) {
		const struct policy_error *w = &p->warnings[i];
		size_t fl = strlen(w->file), el = strlen(file_end);

		if (w->line == line && strstr(w->message, needle) && fl >= el && streq(w->file + fl - el, file_end))
			return true;
	}
	for (size_t i = 0; i < p->n_warnings; i++)
		fprintf(stderr, "  have warning %s:%u: %s\n", p->warnings[i].file, p->warnings[i].line,
			p->warnings[i].message);
	return false;
}

/* Drop-ins as systemd reads its own: /etc, /run, /usr/lib (here three
 * directories of a test), all files by name, a name in an earlier
 * directory masking the same name in later ones, by an empty file or a
 * link to /dev/null; other links followed and their targets judged. */
static void test_dropin_dirs(void)
{
	char dir[] = "/tmp/execguard-dirs-XXXXXX", etc[300], run[300], lib[300], f[400], g[400], main_file[300];
	struct policy p;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(etc, sizeof(etc), "%s/etc", dir);
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(lib, sizeof(lib), "%s/lib", dir);
	snprintf(main_file, sizeof(main_file), "%s/execguard.conf", dir);
	CHECK(mkdir(etc, 0755) == 0 && mkdir(run, 0755) == 0 && mkdir(lib, 0755) == 0);
	write_file(main_file, "# only comments: the defaults\n#[Daemon]\n#Backend=auto\n", 0644);
	/* vendor: 10-vendor and 50-masked-empty, 60-masked-null, 70-shadowed */
	snprintf(f, sizeof(f), "%s/10-vendor.conf", lib);
	write_file(f, "[Rule vendor]\nMatchUnit=v.service\nProtect=yes\n", 0644);
	snprintf(f, sizeof(f), "%s/50-masked-empty.conf", lib);
	write_file(f, "[Rule masked-empty]\nMatchUnit=m.service\nProtect=yes\n", 0644);
	snprintf(f, sizeof(f), "%s/60-masked-null.conf", lib);
	write_file(f, "[Rule masked-null]\nMatchUnit=n.service\nProtect=yes\n", 0644);
	snprintf(f, sizeof(f), "%s/70-shadowed.conf", lib);
	write_file(f, "[Rule lib-70]\nMatchUnit=s.service\nProtect=yes\n", 0644);
	/* runtime: 20-run and 70-shadowed (wins over lib's) */
	snprintf(f, sizeof(f), "%s/20-run.conf", run);
	write_file(f, "[Rule run]\nMatchUnit=r.service\nProtect=yes\n", 0644);
	snprintf(f, sizeof(f), "%s/70-shadowed.conf", run);
	write_file(f, "[Rule run-70]\nMatchUnit=s.service\nProtect=no\n", 0644);
	/* admin: masks with an empty file and a link to /dev/null; 15-linked
	 * is a link to a file elsewhere; 99-empty masks nothing */
	snprintf(f, sizeof(f), "%s/50-masked-empty.conf", etc);
	write_file(f, "", 0644);
	snprintf(f, sizeof(f), "%s/60-masked-null.conf", etc);
	CHECK(symlink("/dev/null", f) == 0);
	snprintf(g, sizeof(g), "%s/linked-target", dir);
	write_file(g, "[Rule linked]\nMatchUnit=l.service\nProtect=yes\n", 0644);
	snprintf(f, sizeof(f), "%s/15-linked.conf", etc);
	CHECK(symlink(g, f) == 0);
	snprintf(f, sizeof(f), "%s/99-empty.conf", etc);
	write_file(f, "\n  \n", 0644);

	policy_init(&p);
	CHECK_EQ_INT(policy_load(&p, main_file, (const char *[]){ etc, run, lib, NULL }, false), 0);
	/* by name: 10-vendor (lib), 15-linked (etc), 20-run (run), 70 from run */
	CHECK_EQ_INT(p.n_rules, 4);
	if (p.n_rules == 4) {
		CHECK_STREQ(p.rules[0].name, "vendor");
		CHECK_STREQ(p.rules[1].name, "linked");
		CHECK_STREQ(p.rules[2].name, "run");
		CHECK_STREQ(p.rules[3].name, "run-70");
	}
	/* masked: the lib files of 50, 60 and 70 */
	CHECK_EQ_INT(p.n_masked, 3);
	for (size_t i = 0; i < p.n_masked; i++)
		CHECK(strstr(p.masked[i], "/lib/") != NULL);
	/* The empty file that masks is not a mistake; the one that masks
	 * nothing is; comments only (the main file) are the defaults. */
	CHECK_EQ_INT(p.n_warnings, 1);
	CHECK(has_warning(&p, "/etc/99-empty.conf", 0, "empty file"));
	policy_done(&p);

	/* A link's target is judged: one others can write is refused. */
	CHECK(chmod(g, 0666) == 0);
	policy_init(&p);
	CHECK_EQ_INT(policy_load(&p, main_file, (const char *[]){ etc, run, lib, NULL }, false), -EINVAL);
	CHECK(has_error(&p, 0, "writable by group or others"));
	policy_done(&p);

	snprintf(f, sizeof(f), "rm -rf %s", dir);
	CHECK(system(f) == 0);
}

/* policy_paths_init: the defaults, or a given file with its own .d only,
 * which must exist. */
static void test_paths(void)
{
	struct policy_paths pp;
	static const char *const defaults[] = { DEFAULT_DROPIN_DIRS };

	CHECK_EQ_INT(policy_paths_init(&pp, NULL), 0);
	CHECK_STREQ(pp.main, DEFAULT_CONFIG);
	CHECK(!pp.given);
	for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
		CHECK_STREQ(pp.dirs[i], defaults[i]);
	CHECK(pp.dirs[ELEMENTSOF(defaults)] == NULL);
	CHECK(strstr(pp.dirs[0], "/etc/") && streq(pp.dirs[1], "/run/execguard.d") && strstr(pp.dirs[2], "/lib/execguard.d"));
	policy_paths_done(&pp);

	CHECK_EQ_INT(policy_paths_init(&pp, "/x/my.conf"), 0);
	CHECK(pp.given);
	CHECK_STREQ(pp.dirs[0], "/x/my.d");
	CHECK(pp.dirs[1] == NULL);
	policy_paths_done(&pp);
	CHECK_EQ_INT(policy_paths_init(&pp, "/x/policy"), 0);
	CHECK_STREQ(pp.dirs[0], "/x/policy.d");
	policy_paths_done(&pp);
}

/* Comments after a value, as inih allows them: '#' or ';' after a blank.
 * The example policy of docs/policy.md (the README's before), as printed. */
static void test_inline_comments(void)
{
	struct policy p;

	CHECK_EQ_INT(parse(&p, "[Daemon]\n"
			       "Backend=auto            # auto | kernel | lock | none\n"
			       "\n"
			       "[Rule web]              # a rule applies when all its Match keys match;\n"
			       "MatchUnit=nginx.service *.web.service     # globs, space separated\n"
			       "MatchCgroup=/system.slice/* ; cgroup2 paths\n"
			       "MatchExe=/opt/a#b/* /opt/c;d\n"
			       "Protect=yes\t# tab before the comment\n"), 0);
	CHECK_EQ_INT(p.daemon.backend, BACKEND_AUTO);
	CHECK_EQ_INT(p.n_rules, 1);
	CHECK_STREQ(p.rules[0].name, "web");
	CHECK_STREQ(p.rules[0].match_unit[0], "nginx.service");
	CHECK_STREQ(p.rules[0].match_unit[1], "*.web.service");
	CHECK(p.rules[0].match_unit[2] == NULL);
	CHECK_STREQ(p.rules[0].match_cgroup[0], "/system.slice/*");
	CHECK(p.rules[0].match_cgroup[1] == NULL);
	/* Without a blank before it, '#' and ';' belong to the pattern. */
	CHECK_STREQ(p.rules[0].match_exe[0], "/opt/a#b/*");
	CHECK_STREQ(p.rules[0].match_exe[1], "/opt/c;d");
	CHECK_EQ_INT(p.rules[0].settings.protect, 1);
	policy_done(&p);

	/* Text after a section header that is not a comment. */
	CHECK_EQ_INT(parse(&p, "[Daemon] Backend=lock\n"), 1);
	CHECK(has_error(&p, 1, "text after ']'"));
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Daemon]# no blank: not a comment\n"), 1);
	CHECK(has_error(&p, 1, "text after ']'"));
	policy_done(&p);
}

/* A policy is text: bytes that are not UTF-8 are refused with file:line,
 * a byte order mark at the start is skipped (as systemd skips it). */
static void test_encoding(void)
{
	struct policy p;
	struct rule_settings s = { .protect = -1 };
	const char *text;

	CHECK_EQ_INT(parse(&p, "[Rule caf\xe9]\nProtect=yes\n"), 1);
	CHECK(has_error(&p, 1, "not valid UTF-8 (byte \\xe9 at column 10)"));
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Rule a]\nMatchExe=/usr/bin/caf\xc3\n"), 1);
	CHECK(has_error(&p, 2, "not valid UTF-8 (byte \\xc3 at column 22)"));
	policy_done(&p);
	/* Valid multi-byte UTF-8 is fine; overlong forms are not. */
	CHECK_EQ_INT(parse(&p, "[Rule a]\nMatchExe=/usr/bin/caf\xc3\xa9\n"), 0);
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Rule a]\nMatchExe=/\xc0\xaf\n"), 1);
	policy_done(&p);
	/* In a comment, whatever the bytes. */
	CHECK_EQ_INT(parse(&p, "# caf\xe9\n[Daemon]\nBackend=none # caf\xe9\n"), 0);
	policy_done(&p);

	CHECK_EQ_INT(parse(&p, "\xef\xbb\xbf" "[Daemon]\nBackend=lock\n"), 0);
	CHECK_EQ_INT(p.daemon.backend, BACKEND_LOCK);
	policy_done(&p);
	/* Only at the start. */
	CHECK_EQ_INT(parse(&p, "[Daemon]\n\xef\xbb\xbf" "Backend=lock\n"), 1);
	CHECK(has_error(&p, 2, "byte order mark (U+FEFF) at column 1"));
	policy_done(&p);
	/* Two (files concatenated), and in a name, where it would never match. */
	CHECK_EQ_INT(parse(&p, "\xef\xbb\xbf\xef\xbb\xbf" "[Daemon]\nBackend=lock\n"), 1);
	CHECK(has_error(&p, 1, "byte order mark (U+FEFF) at column 1"));
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Rule a]\nMatchUnit=a.service\xef\xbb\xbf\n"), 1);
	CHECK(has_error(&p, 2, "byte order mark (U+FEFF) at column 20"));
	policy_done(&p);
	/* Units' sections too. */
	policy_init(&p);
	text = "\xef\xbb\xbf[X-ExecGuard]\nProtect=yes # here\n";
	CHECK_EQ_INT(policy_parse_unit_buffer(&s, &p, "u.conf", text, strlen(text)), 0);
	CHECK_EQ_INT(s.protect, 1);
	/* systemd's sections are systemd's business. */
	text = "[Service]\nX=caf\xe9\n[X-ExecGuard]\nProtect=caf\xe9\n";
	CHECK_EQ_INT(policy_parse_unit_buffer(&s, &p, "u.conf", text, strlen(text)), 1);
	CHECK(has_error(&p, 4, "not valid UTF-8"));
	/* Our section's header is ours to check; systemd's are not. */
	text = "[Service] x\n[X-ExecGuard] Protect=yes\n";
	CHECK_EQ_INT(policy_parse_unit_buffer(&s, &p, "u.conf", text, strlen(text)), 1);
	CHECK(has_error(&p, 2, "text after ']'"));
	policy_done(&p);
}

/* Accepted but said: a rule without a Match key applies to everything. */
static void test_warnings(void)
{
	struct policy p;

	CHECK_EQ_INT(parse(&p, "[Rule everything]\nProtect=yes\n[Rule some]\nMatchUnit=a.service\nProtect=yes\n"
			       "[Rule emptied]\nMatchUnit=\nProtect=no\n"), 0);
	CHECK_EQ_INT(p.n_warnings, 2);
	CHECK(has_warning(&p, "test.conf", 1, "[Rule everything] has no MatchUnit=, MatchCgroup= or MatchExe="));
	CHECK(has_warning(&p, "test.conf", 6, "[Rule emptied] has no"));
	policy_done(&p);
}

/* The shipped /etc/execguard.conf sets nothing: every [Daemon] key is in
 * it, commented out at its default, and so is an example rule. With the
 * settings uncommented it parses to the defaults; the vendor drop-in
 * (conf/vendor) is what the package turns on. */
static void test_shipped_conffile(void)
{
	const char *root = getenv("EXECGUARD_SOURCE_ROOT");
	const struct policy_key_info *k;
	_cleanup_free_ char *buf = NULL;
	char path[4096], *text, *o;
	struct policy p, defaults;
	size_t len, n = policy_keys(&k);
	bool in_daemon = false;
	int fd;

	CHECK(root != NULL);
	if (!root)
		return;
	snprintf(path, sizeof(path), "%s/conf/execguard.conf", root);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && read_fd(fd, 1 << 20, &buf, &len) == 0);
	if (fd >= 0)
		close(fd);
	if (!buf)
		return;
	/* As shipped: no section, no key, no warning. */
	CHECK_EQ_INT(parse(&p, buf), 0);
	CHECK_EQ_INT(p.n_rules, 0);
	CHECK_EQ_INT(p.n_warnings, 0);
	policy_done(&p);
	for (size_t i = 0; i < n; i++) {
		char want[64];

		snprintf(want, sizeof(want), "\n#%s=", k[i].key);
		if (streq(k[i].section, "Daemon") && !strstr(buf, want))
			fprintf(stderr, "  conf/execguard.conf lacks #%s=\n", k[i].key);
		CHECK(!streq(k[i].section, "Daemon") || strstr(buf, want));
	}
	/* Uncomment "#[Daemon]" and the "#Key=" lines after it, up to the
	 * example rule. */
	text = o = calloc(1, len + 1);
	CHECK(text != NULL);
	if (!text)
		return;
	for (const char *l = buf; l < buf + len;) {
		const char *nl = memchr(l, '\n', (size_t)(buf + len - l));
		size_t ll = nl ? (size_t)(nl - l + 1) : (size_t)(buf + len - l);

		if (ll >= 7 && !strncmp(l, "#[Rule ", 7))
			in_daemon = false;
		if (ll >= 9 && !strncmp(l, "#[Daemon]", 9))
			in_daemon = true;
		if (in_daemon && l[0] == '#' && (l[1] == '[' || (l[1] >= 'A' && l[1] <= 'Z' && memchr(l, '=', ll)))) {
			l++;
			ll--;
		}
		memcpy(o, l, ll);
		o += ll;
		l += ll;
	}
	CHECK_EQ_INT(parse(&p, text), 0);
	policy_init(&defaults);
	CHECK(p.daemon.backend == defaults.daemon.backend);
	CHECK(p.daemon.n_rescan_delays == defaults.daemon.n_rescan_delays);
	CHECK(memcmp(p.daemon.rescan_delays_ms, defaults.daemon.rescan_delays_ms,
		     defaults.daemon.n_rescan_delays * sizeof(unsigned)) == 0);
	CHECK(p.daemon.receive_buffer == defaults.daemon.receive_buffer);
	CHECK(p.daemon.exec_batch_ms == defaults.daemon.exec_batch_ms);
	CHECK(p.daemon.lock_budget.percent == defaults.daemon.lock_budget.percent &&
	      p.daemon.lock_budget.bytes == defaults.daemon.lock_budget.bytes);
	CHECK(p.daemon.lock_recheck_sec == defaults.daemon.lock_recheck_sec);
	CHECK(p.daemon.pressure_stall_ms == defaults.daemon.pressure_stall_ms);
	CHECK(p.daemon.pressure_window_ms == defaults.daemon.pressure_window_ms);
	CHECK(p.daemon.pressure_recover_sec == defaults.daemon.pressure_recover_sec);
	CHECK(p.daemon.pressure_reserve.percent == defaults.daemon.pressure_reserve.percent &&
	      p.daemon.pressure_reserve.bytes == defaults.daemon.pressure_reserve.bytes);
	CHECK(p.daemon.prewarm_budget.percent == defaults.daemon.prewarm_budget.percent &&
	      p.daemon.prewarm_budget.bytes == defaults.daemon.prewarm_budget.bytes);
	CHECK(p.daemon.prewarm_record_sec == defaults.daemon.prewarm_record_sec);
	CHECK(p.daemon.auto_fault_rate == defaults.daemon.auto_fault_rate);
	CHECK(p.daemon.auto_pressure_some == defaults.daemon.auto_pressure_some);
	CHECK(p.daemon.auto_window_sec == defaults.daemon.auto_window_sec);
	CHECK(p.daemon.auto_interval_sec == defaults.daemon.auto_interval_sec);
	CHECK(p.daemon.auto_calm_sec == defaults.daemon.auto_calm_sec);
	CHECK(p.daemon.container_annotations == defaults.daemon.container_annotations);
	CHECK(p.daemon.container_protect_max == defaults.daemon.container_protect_max);
	policy_done(&defaults);
	policy_done(&p);
	free(text);

	/* The vendor drop-in: one rule, valid, matching what it says. */
	snprintf(path, sizeof(path), "%s/conf/vendor/10-recovery.conf", root);
	policy_init(&p);
	CHECK_EQ_INT(policy_load(&p, path, NULL, false), 0);
	CHECK_EQ_INT(p.n_rules, 1);
	CHECK_EQ_INT(p.n_warnings, 0);
	{
		struct policy_decision d = decide(&p, "ssh.service", "/system.slice/ssh.service", "/usr/sbin/sshd", NULL);

		CHECK(d.protect);
		CHECK_STREQ(d.protect_source, "recovery");
	}
	policy_done(&p);
}

/* systemd's escaped unit names match as written: backslash is literal. */
static void test_escaped_names(void)
{
	struct policy p;
	struct policy_decision d;

	CHECK_EQ_INT(parse(&p, "[Rule esc]\nMatchUnit=dev-disk-by\\x2duuid-*.swap app\\x2dweb@*.service\nProtect=yes\n"), 0);
	d = decide(&p, "dev-disk-by\\x2duuid-1234.swap", "/system.slice/dev-disk-by\\x2duuid-1234.swap", "/x", NULL);
	CHECK(d.protect);
	d = decide(&p, "app\\x2dweb@1.service", "/system.slice/system-app\\x2dweb.slice/app\\x2dweb@1.service", "/x", NULL);
	CHECK(d.protect);
	d = decide(&p, "appx2dweb@1.service", "/system.slice/appx2dweb@1.service", "/x", NULL);
	CHECK(!d.protect);
	policy_done(&p);
}

/* conf/examples/containers.conf, as execguard.conf(5) EXAMPLES shows it:
 * the cgroup paths Docker, podman and Kubernetes (systemd cgroup driver)
 * create, each under the unit cgroup_path_to_unit() gives it. */
static void test_container_examples(void)
{
	static const struct {
		const char *unit, *cgroup, *rule;
		bool protect;
	} cases[] = {
		{ "docker-0123abcd.scope", "/system.slice/docker-0123abcd.scope", "docker", true },
		{ NULL, "/docker/0123abcd", "docker-cgroupfs", true },
		{ "libpod-0123abcd.scope", "/machine.slice/libpod-0123abcd.scope", "podman", true },
		{ "libpod-0123abcd.scope", "/machine.slice/libpod-0123abcd.scope/container", "podman", true },
		{ "libpod-conmon-0123abcd.scope", "/machine.slice/libpod-conmon-0123abcd.scope", "podman-conmon",
		  false },
		{ "user@1000.service",
		  "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-0123abcd.scope", "podman-rootless",
		  true },
		{ "user@1000.service", "/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service",
		  "default", false },
		{ "cri-containerd-0123abcd.scope",
		  "/kubepods.slice/kubepods-pod1a2b_3c4d.slice/cri-containerd-0123abcd.scope", "k8s-guaranteed",
		  true },
		{ "crio-0123abcd.scope",
		  "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b_3c4d.slice/crio-0123abcd.scope",
		  "k8s-burstable", true },
		{ "cri-containerd-0123abcd.scope",
		  "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1a2b_3c4d.slice/"
		  "cri-containerd-0123abcd.scope",
		  "default", false },
		{ "nginx.service", "/system.slice/nginx.service", "default", false },
	};
	const char *root = getenv("EXECGUARD_SOURCE_ROOT");
	char path[4096];
	struct policy p;

	CHECK(root != NULL);
	if (!root)
		return;
	snprintf(path, sizeof(path), "%s/conf/examples/containers.conf", root);
	policy_init(&p);
	CHECK_EQ_INT(policy_load(&p, path, NULL, false), 0);
	CHECK_EQ_INT(p.n_warnings, 0);
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct policy_decision d = decide(&p, cases[i].unit, cases[i].cgroup, "/usr/bin/x", NULL);
		char *unit = NULL;

		if (d.protect != cases[i].protect || strcmp(d.protect_source, cases[i].rule) != 0)
			fprintf(stderr, "  %s: protect %d by %s\n", cases[i].cgroup, d.protect, d.protect_source);
		CHECK(d.protect == cases[i].protect);
		CHECK_STREQ(d.protect_source, cases[i].rule);
		/* The unit each case names is the one the daemon derives. */
		if (cgroup_path_to_unit(cases[i].cgroup, &unit) == 0)
			CHECK_STREQ(unit, cases[i].unit);
		else
			CHECK(cases[i].unit == NULL);
		free(unit);
	}
	policy_done(&p);
}

static void test_prewarm_keys(void)
{
	struct policy p;
	struct policy_decision d;
	struct rule_settings unit_no = { .protect = -1, .prewarm = PREWARM_NO };
	const char *text =
		"[Daemon]\n"
		"PrewarmBudget=1G\n"
		"PrewarmRecordSec=5\n"
		"[Rule web]\n"
		"MatchUnit=*.service\n"
		"Protect=yes\n"
		"Prewarm=yes\n"
		"PrewarmBudget=16M\n"
		"[Rule quiet]\n"
		"MatchUnit=cron.service\n"
		"Prewarm=no\n";

	CHECK_EQ_INT(parse(&p, text), 0);
	CHECK_EQ_INT(p.daemon.prewarm_budget.bytes, 1ULL << 30);
	CHECK_EQ_INT(p.daemon.prewarm_record_sec, 5);
	d = decide(&p, "nginx.service", "/system.slice/nginx.service", "/usr/sbin/nginx", NULL);
	CHECK_EQ_INT(d.settings.prewarm, PREWARM_YES);
	CHECK_EQ_INT(d.settings.prewarm_budget.bytes, 16ULL << 20);
	d = decide(&p, "cron.service", "/system.slice/cron.service", "/usr/sbin/cron", NULL);
	CHECK_EQ_INT(d.settings.prewarm, PREWARM_NO);
	CHECK(d.protect);
	/* The unit's own section wins; one that says nothing keeps the rule's. */
	d = decide(&p, "nginx.service", "/system.slice/nginx.service", "/usr/sbin/nginx", &unit_no);
	CHECK_EQ_INT(d.settings.prewarm, PREWARM_NO);
	unit_no.prewarm = 0;
	d = decide(&p, "nginx.service", "/system.slice/nginx.service", "/usr/sbin/nginx", &unit_no);
	CHECK_EQ_INT(d.settings.prewarm, PREWARM_YES);
	policy_done(&p);

	/* Defaults, and errors. */
	policy_init(&p);
	CHECK_EQ_INT(p.daemon.prewarm_budget.bytes, 128ULL << 20);
	CHECK_EQ_INT(p.daemon.prewarm_record_sec, 300);
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Rule a]\nPrewarm=maybe\n[Daemon]\nPrewarmRecordSec=0\n"), 2);
	CHECK(has_error(&p, 2, "expected yes or no"));
	CHECK(has_error(&p, 4, "seconds from 1 to 86400"));
	policy_done(&p);
}

static void test_protect_auto(void)
{
	struct policy p;
	struct policy_decision d;
	struct rule_settings unit_yes = { .protect = 1 }, unit_auto = { .protect = -1 };
	const char *text =
		"[Daemon]\n"
		"AutoFaultRate=50\n"
		"AutoPressureSome=0\n"
		"AutoWindowSec=10\n"
		"AutoIntervalSec=2\n"
		"AutoCalmSec=0\n"
		"[Rule all]\n"
		"MatchUnit=*.service\n"
		"Protect=auto\n"
		"[Rule db]\n"
		"MatchUnit=db.service\n"
		"Protect=yes\n";

	/* Defaults. */
	policy_init(&p);
	CHECK_EQ_INT(p.daemon.auto_fault_rate, 2);
	CHECK_EQ_INT(p.daemon.auto_pressure_some, 5);
	CHECK_EQ_INT(p.daemon.auto_window_sec, 30);
	CHECK_EQ_INT(p.daemon.auto_interval_sec, 5);
	CHECK_EQ_INT(p.daemon.auto_calm_sec, 600);
	policy_done(&p);

	CHECK_EQ_INT(parse(&p, text), 0);
	CHECK_EQ_INT(p.daemon.auto_fault_rate, 50);
	CHECK_EQ_INT(p.daemon.auto_pressure_some, 0);
	CHECK_EQ_INT(p.daemon.auto_window_sec, 10);
	CHECK_EQ_INT(p.daemon.auto_interval_sec, 2);
	CHECK_EQ_INT(p.daemon.auto_calm_sec, 0);
	CHECK_EQ_INT(p.rules[0].settings.protect, PROTECT_AUTO);
	/* auto is watched, not protected; a later explicit rule wins. */
	d = decide(&p, "web.service", "/system.slice/web.service", "/usr/bin/web", NULL);
	CHECK(!d.protect);
	CHECK(d.watch);
	CHECK_STREQ(d.protect_source, "all");
	d = decide(&p, "db.service", "/system.slice/db.service", "/usr/bin/db", NULL);
	CHECK(d.protect);
	CHECK(!d.watch);
	/* The unit's own section wins both ways. */
	d = decide(&p, "web.service", "/system.slice/web.service", "/usr/bin/web", &unit_yes);
	CHECK(d.protect && !d.watch);
	CHECK_EQ_INT(policy_parse_unit_buffer(&unit_auto, &p, "db.service", "[X-ExecGuard]\nProtect=auto\n",
					      strlen("[X-ExecGuard]\nProtect=auto\n")), 0);
	CHECK_EQ_INT(unit_auto.protect, PROTECT_AUTO);
	d = decide(&p, "db.service", "/system.slice/db.service", "/usr/bin/db", &unit_auto);
	CHECK(!d.protect && d.watch);
	/* A rule that may auto-protect may protect: its executable is read. */
	{
		struct policy_input in = { .unit = "web.service", .cgroup = "/system.slice/web.service" };

		CHECK(policy_may_protect(&p, &in));
	}
	policy_done(&p);

	/* Errors, with file:line. */
	CHECK_EQ_INT(parse(&p, "[Rule a]\nProtect=automatic\n[Daemon]\nAutoFaultRate=0\n"
			       "AutoPressureSome=101\nAutoCalmSec=-1\nAutoWindowSec=1\n"), 5);
	CHECK(has_error(&p, 2, "invalid Protect=automatic; expected yes, no or auto"));
	CHECK(has_error(&p, 4, "text faults per second from 1 to 1000000"));
	CHECK(has_error(&p, 5, "a percentage from 0 (faults alone) to 100"));
	CHECK(has_error(&p, 6, "seconds from 0 (never) to 604800"));
	CHECK(has_error(&p, 7, "seconds from 2 to 3600"));
	policy_done(&p);
	/* The window must hold two samples, whatever the order of the keys. */
	CHECK_EQ_INT(parse(&p, "[Daemon]\nAutoWindowSec=10\nAutoIntervalSec=6\n"), 1);
	CHECK(has_error(&p, 3, "AutoWindowSec=10 must be at least twice AutoIntervalSec=6"));
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Daemon]\nAutoIntervalSec=20\n"), 1);
	CHECK(has_error(&p, 2, "AutoWindowSec=30 must be at least twice AutoIntervalSec=20"));
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Daemon]\nAutoIntervalSec=15\n"), 0);
	policy_done(&p);
}

/* What the push path asks of the policy: whether executables matter for
 * a cgroup, and whether rules reach beyond units. */
static void test_cgroup_level(void)
{
	struct policy p;
	struct policy_input web = { .unit = "web.service", .cgroup = "/system.slice/web.service" };
	struct policy_input db = { .unit = "db.service", .cgroup = "/system.slice/db.service" };
	struct policy_input pod = { .cgroup = "/kubepods.slice/kubepods-pod1.slice" };

	CHECK_EQ_INT(parse(&p, "[Rule web]\nMatchUnit=web.service\nProtect=yes\n"
			       "[Rule db-main]\nMatchUnit=db.service\nMatchExe=/usr/bin/db\nProtect=yes\n"), 0);
	CHECK(!policy_exe_matters(&p, &web));
	CHECK(policy_exe_matters(&p, &db));
	CHECK(policy_names_exes(&p));
	CHECK(!policy_matches_beyond_units(&p));
	policy_done(&p);
	CHECK_EQ_INT(parse(&p, "[Rule web]\nMatchUnit=web.service\nProtect=yes\n"
			       "[Rule pods]\nMatchCgroup=/kubepods.slice/kubepods-pod*\nProtect=yes\n"), 0);
	CHECK(!policy_names_exes(&p));
	CHECK(policy_matches_beyond_units(&p));
	CHECK(!policy_exe_matters(&p, &pod));
	CHECK(policy_may_protect(&p, &pod));
	policy_done(&p);
	/* A rule without MatchUnit= that protects nothing does not reach. */
	CHECK_EQ_INT(parse(&p, "[Rule off]\nMatchCgroup=/x\nProtect=no\n"), 0);
	CHECK(!policy_matches_beyond_units(&p));
	policy_done(&p);
}

TEST_MAIN(test_protect_auto, test_cgroup_level, test_good, test_dependent_keys, test_errors, test_long_line_and_nul, test_precedence, test_unit_section,
	  test_load_files, test_dropin_dirs, test_paths, test_inline_comments, test_encoding, test_warnings,
	  test_shipped_conffile, test_escaped_names, test_list_keys, test_container_examples, test_prewarm_keys)
