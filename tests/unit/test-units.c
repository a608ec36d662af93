/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A unit's [X-ExecGuard] section: which files, in which order, merged
 * how, with file:line errors; from buffers and from real files. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "unit-files.h"
#include "util.h"

#define F(p, t) { .path = (p), .buf = (t), .len = sizeof(t) - 1 }

static void test_order(void)
{
	char *dropins[] = { "/etc/systemd/system/a.service.d/10-x.conf", "/dev/null",
			    "/run/systemd/system/a.service.d/20-y.conf", NULL };
	const char **v = unit_files_order("/usr/lib/systemd/system/a.service", dropins);

	CHECK(v != NULL);
	CHECK_STREQ(v[0], "/usr/lib/systemd/system/a.service");
	CHECK_STREQ(v[1], "/etc/systemd/system/a.service.d/10-x.conf");
	CHECK_STREQ(v[2], "/run/systemd/system/a.service.d/20-y.conf");
	CHECK(v[3] == NULL);
	free(v);

	/* Masked (fragment /dev/null) or not found (""): drop-ins only. */
	v = unit_files_order("/dev/null", dropins);
	CHECK_STREQ(v[0], "/etc/systemd/system/a.service.d/10-x.conf");
	free(v);
	v = unit_files_order("", NULL);
	CHECK(v && v[0] == NULL);
	free(v);
}

static void test_merge(void)
{
	static const struct unit_file files[] = {
		F("/lib/a.service", "[Unit]\nDescription=A\n[Service]\nExecStart=/bin/a\n"),
		F("/etc/a.service.d/10.conf", "[X-ExecGuard]\nProtect=yes\nLockBudget=64M\n"),
		F("/etc/a.service.d/20.conf", "[Service]\nNice=1\n\n[X-ExecGuard]\n  Protect = no\n"),
	};
	struct rule_settings s;
	char *src = NULL;
	struct policy e;

	policy_init(&e);
	CHECK_EQ_INT(unit_files_merge(files, 1, &e, &s, &src), 0); /* no section */
	CHECK(src == NULL);

	CHECK_EQ_INT(unit_files_merge(files, 2, &e, &s, &src), 1);
	CHECK_EQ_INT(s.protect, 1);
	CHECK(s.lock_budget.set && s.lock_budget.bytes == 64ULL << 20);
	CHECK_STREQ(src, "/etc/a.service.d/10.conf:2");
	free(src);

	/* The later drop-in wins key by key: Protect from 20, budget from 10. */
	CHECK_EQ_INT(unit_files_merge(files, 3, &e, &s, &src), 1);
	CHECK_EQ_INT(s.protect, 0);
	CHECK(s.lock_budget.set);
	CHECK_STREQ(src, "/etc/a.service.d/20.conf:5");
	free(src);
	CHECK_EQ_INT(e.n_errors, 0);
	policy_done(&e);
}

static void test_errors(void)
{
	static const struct unit_file files[] = {
		F("/etc/b.service.d/10.conf", "[X-ExecGuard]\nProtect=yes\n"),
		/* A typo in a later file: reported with file:line, that file is
		 * ignored as a whole, the earlier one still counts. */
		F("/etc/b.service.d/20.conf", "[X-ExecGuard]\nLockBudget=1M\nProtect=perhaps\n"),
		F("/etc/b.service.d/30.conf", "[X-ExecGuard]\nProtekt=yes\n"),
	};
	struct rule_settings s;
	char *src = NULL;
	struct policy e;

	policy_init(&e);
	CHECK_EQ_INT(unit_files_merge(files, 3, &e, &s, &src), 1);
	CHECK_EQ_INT(s.protect, 1);
	CHECK(!s.lock_budget.set);
	CHECK_STREQ(src, "/etc/b.service.d/10.conf:2");
	free(src);
	CHECK_EQ_INT(e.n_errors, 2);
	if (e.n_errors == 2) {
		CHECK_STREQ(e.errors[0].file, "/etc/b.service.d/20.conf");
		CHECK_EQ_INT(e.errors[0].line, 3);
		CHECK(strstr(e.errors[0].message, "Protect=perhaps") != NULL);
		CHECK_EQ_INT(e.errors[1].line, 2);
		CHECK(strstr(e.errors[1].message, "Protekt") != NULL);
	}
	policy_done(&e);
}

static void test_protect_line(void)
{
	static const char t[] = "[Service]\nProtect=yes\n[X-ExecGuard]\n# c\nLockBudget=1%\n\tProtect=1\n"
				"[X-ExecGuardian]\nProtect=no\n";

	CHECK_EQ_INT(unit_file_protect_line(t, sizeof(t) - 1), 6);
	CHECK_EQ_INT(unit_file_protect_line("[Unit]\n", 7), 0);
}

static void test_format(void)
{
	struct rule_settings s = { .protect = 1, .lock_budget = { .percent = 5, .set = true } };
	char buf[64];

	rule_settings_format(&s, buf, sizeof(buf));
	CHECK_STREQ(buf, "Protect=yes LockBudget=5%");
	s = (struct rule_settings){ .protect = -1 };
	rule_settings_format(&s, buf, sizeof(buf));
	CHECK_STREQ(buf, "");
}

/* The file reader: mode check as for policy files; missing files skipped. */
static void test_load(void)
{
	char dir[] = "/tmp/test-units-XXXXXX";
	char good[64], bad[64], gone[64];
	const char *paths[4];
	struct rule_settings s;
	char *src = NULL;
	struct policy e;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(good, sizeof(good), "%s/good.conf", dir);
	snprintf(bad, sizeof(bad), "%s/bad.conf", dir);
	snprintf(gone, sizeof(gone), "%s/gone.conf", dir);
	fd = open(good, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && write(fd, "[X-ExecGuard]\nProtect=yes\n", 26) == 26);
	close(fd);
	fd = open(bad, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && write(fd, "[X-ExecGuard]\nProtect=no\n", 25) == 25);
	close(fd);
	chmod(bad, 0666);
	paths[0] = good;
	paths[1] = gone;
	paths[2] = bad;
	paths[3] = NULL;
	policy_init(&e);
	CHECK_EQ_INT(unit_files_load(paths, &e, &s, &src), 1);
	CHECK_EQ_INT(s.protect, 1);
	CHECK_EQ_INT(e.n_errors, 1);
	if (e.n_errors == 1)
		CHECK(strstr(e.errors[0].message, "writable by group or others") != NULL);
	free(src);
	policy_done(&e);
	unlink(good);
	unlink(bad);
	rmdir(dir);
}

TEST_MAIN(test_order, test_merge, test_errors, test_protect_line, test_format, test_load)
