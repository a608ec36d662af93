/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prewarm's records on the event loop, with this test's own process as
 * the unit's: the exit of a unit's last process (seen on the exec path)
 * writes nothing there and then, the record is written from prewarm's
 * own source afterwards, and no record write waits for the disk
 * (fsync). fsync() and renameat() are this file's own, counting: the
 * daemon's code is linked in statically and calls these. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "log.h"
#include "policy.h"
#include "prewarm.h"
#include "test.h"
#include "util.h"

static int n_fsync, n_rename;

int fsync(int fd)
{
	n_fsync++;
	return (int)syscall(SYS_fsync, fd);
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	n_rename++;
	return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 0);
}

static char dir[] = "/tmp/execguard-test-prewarm-XXXXXX";

static bool recorded(void)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/records/t.service.prewarm", dir);
	return access(p, F_OK) == 0;
}

static void test_stop_writes_later(void)
{
	struct rule_settings s = { .protect = 1, .prewarm = PREWARM_YES };
	char records[512], self[32];
	struct prewarm *pw = NULL;
	struct policy p;
	sd_event *e = NULL;
	int proc_fd, pid_fd, before;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(records, sizeof(records), "%s/records", dir);
	policy_init(&p);
	p.daemon.prewarm_record_sec = 1;
	CHECK_EQ_INT(sd_event_new(&e), 0);
	proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(self, sizeof(self), "%d", (int)getpid());
	pid_fd = openat(proc_fd, self, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(proc_fd >= 0 && pid_fd >= 0);
	{
		struct prewarm_env env = { .event = e, .proc_fd = proc_fd, .dir = records, .settings = &p.daemon };

		CHECK_EQ_INT(prewarm_new(&env, &pw), 0);
	}
	if (!pw)
		return;
	prewarm_process_start(pw, getpid(), pid_fd, "t.service", &s);
	/* The record timer samples this process and writes the record. */
	for (int i = 0; i < 100 && !recorded(); i++)
		CHECK(sd_event_run(e, 100000) >= 0);
	CHECK(recorded());

	/* The last process ends (a release on the exec path): nothing is
	 * written in that call; the record of the run is, right after. */
	before = n_rename;
	prewarm_process_end(pw, getpid());
	CHECK_EQ_INT(n_rename, before);
	for (int i = 0; i < 10 && n_rename == before; i++)
		CHECK(sd_event_run(e, 100000) >= 0);
	CHECK_EQ_INT(n_rename, before + 1);
	CHECK_EQ_INT(n_fsync, 0);

	prewarm_free(pw);
	sd_event_unref(e);
	close(pid_fd);
	close(proc_fd);
	policy_done(&p);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	}
}

TEST_MAIN(test_stop_writes_later)
