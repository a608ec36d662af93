/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Containers that asked by annotation: the [Daemon] limits on what they
 * get, the state record, and the table on a cgroup tree made of plain
 * files (cgroup.events, cgroup.procs) with a real sd-event loop: a
 * container is decided at once, looked up for its processes, recorded,
 * kept across a "restart" and forgotten when cgroup.events says empty. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>

#include "containers.h"
#include "policy.h"
#include "test.h"
#include "util.h"

#define ID64 "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"
#define SCOPE "/machine.slice/libpod-" ID64 ".scope"

/* A cgroup path relative to the root fd the test opened. */
static const char *rel(const char *path)
{
	return path + 1;
}

static int parse(struct policy *p, const char *text)
{
	int r = policy_parse_buffer(p, "t.conf", text, strlen(text));

	policy_print_errors(p, stderr);
	return r;
}

static void test_request(void)
{
	struct policy p;
	struct rule_settings s;
	const char *why = NULL;

	policy_init(&p);
	/* defaults: honoured, no cap of its own */
	CHECK_EQ_INT(policy_container_request(&p.daemon, "yes", &s, &why), 0);
	CHECK_EQ_INT(s.protect, 1);
	CHECK(s.exec_protect_limit == EXEC_PROTECT_LIMIT_MAX);
	CHECK(!s.lock_budget.set);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "64M", &s, &why), 0);
	CHECK(s.exec_protect_limit == 64ULL << 20);
	CHECK(s.lock_budget.set && s.lock_budget.bytes == 64ULL << 20);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "no", &s, &why), 0);
	CHECK_EQ_INT(s.protect, 0);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "0", &s, &why), 0);
	CHECK_EQ_INT(s.protect, 0);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "lots", &s, &why), -EINVAL);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "10%", &s, &why), -EINVAL);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "1K", &s, &why), -EINVAL);
	/* the most a container may ask */
	CHECK_EQ_INT(parse(&p, "[Daemon]\nContainerProtectMax=32M\n"), 0);
	CHECK(p.daemon.container_protect_max == 32ULL << 20);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "64M", &s, &why), 1);
	CHECK(s.exec_protect_limit == 32ULL << 20 && s.lock_budget.bytes == 32ULL << 20);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "max", &s, &why), 1);
	CHECK(s.exec_protect_limit == 32ULL << 20);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "yes", &s, &why), 0);
	CHECK(s.exec_protect_limit == 32ULL << 20);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "16M", &s, &why), 0);
	CHECK(s.exec_protect_limit == 16ULL << 20);
	/* not honoured at all */
	CHECK_EQ_INT(parse(&p, "[Daemon]\nContainerAnnotations=no\n"), 0);
	CHECK_EQ_INT(policy_container_request(&p.daemon, "yes", &s, &why), -EPERM);
	CHECK_EQ_INT(s.protect, 0);
	CHECK(why && strstr(why, "ContainerAnnotations=no"));
	/* bad [Daemon] values: file:line */
	CHECK_EQ_INT(parse(&p, "[Daemon]\nContainerProtectMax=lots\nContainerAnnotations=maybe\n"), 2);
	policy_done(&p);
}

static void test_record(void)
{
	struct container_entry e = { 0 }, back = { 0 };
	char *text = NULL;

	e.cgroup = (char *)SCOPE;
	e.request = (char *)"64M";
	e.runtime = (char *)"cri-o";
	e.id = (char *)ID64;
	e.name = (char *)"nginx";
	e.pod_uid = (char *)"";
	e.pod_name = (char *)"web-0";
	e.pod_namespace = (char *)"shop";
	CHECK_EQ_INT(container_entry_format(&e, &text), 0);
	CHECK_EQ_INT(container_entry_parse(text, strlen(text), &back), 0);
	CHECK_STREQ(back.cgroup, SCOPE);
	CHECK_STREQ(back.request, "64M");
	CHECK_STREQ(back.runtime, "cri-o");
	CHECK_STREQ(back.name, "nginx");
	CHECK_STREQ(back.pod_uid, "");
	CHECK_STREQ(back.pod_namespace, "shop");
	container_entry_done(&back);
	free(text);
	static const char *const bad[] = {
		"request=yes\n",				 /* no cgroup */
		"cgroup=/a\n",					 /* no request */
		"cgroup=/\nrequest=yes\n",			 /* the root */
		"cgroup=/a/../b\nrequest=yes\n",		 /* .. */
		"cgroup=a\nrequest=yes\n",			 /* relative */
		"cgroup=/a\nrequest=yes\ncolour=red\n",		 /* unknown key */
		"cgroup=/a\ncgroup=/b\nrequest=yes\n",		 /* twice */
		"cgroup=/a\nrequest=yes\nname=two words\n",	 /* a space */
		"cgroup=/a\nrequest=yes\nnoequals\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		if (container_entry_parse(bad[i], strlen(bad[i]), &back) != -EBADMSG) {
			fprintf(stderr, "accepted: %s", bad[i]);
			CHECK(0);
		}
	}
	CHECK(container_label_valid(""));
	CHECK(container_label_valid("web-0.shop_x"));
	CHECK(!container_label_valid("a b"));
	CHECK(!container_label_valid("a\nb"));
	CHECK(!container_label_valid("\xc3\xa9"));
}

/* A fake cgroup tree under dir: SCOPE with a "container" leaf. */
static void put(int dfd, const char *path, const char *text)
{
	int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

static pid_t decided[16];
static size_t n_decided;

static void on_decide(void *userdata, pid_t pid)
{
	(void)userdata;
	if (n_decided < ELEMENTSOF(decided))
		decided[n_decided++] = pid;
}

static int count(const struct container_entry *e, void *userdata)
{
	(void)e;
	(*(int *)userdata)++;
	return 0;
}

static void run_loop_once(sd_event *e)
{
	/* the inotify event of a write that happened before: ready at once */
	for (int i = 0; i < 4; i++)
		sd_event_run(e, 100000);
}

static void test_table(void)
{
	char root[] = "/tmp/test-containers-XXXXXX", state[] = "/tmp/test-containers-state-XXXXXX";
	struct containers *c = NULL;
	struct policy p;
	sd_event *e = NULL;
	const struct container_entry *ce;
	struct container_labels l = { .runtime = "podman", .id = ID64, .name = "web" };
	struct policy_input in = { 0 };
	char *summary = NULL, cmd[256];
	const char *why = NULL;
	int rfd, sfd, n = 0;

	policy_init(&p);
	CHECK(mkdtemp(root) && mkdtemp(state));
	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	sfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(mkdirat(rfd, "machine.slice", 0755) == 0);
	CHECK(mkdirat(rfd, rel(SCOPE), 0755) == 0);
	CHECK(mkdirat(rfd, rel(SCOPE "/container"), 0755) == 0);
	put(rfd, rel(SCOPE "/cgroup.events"), "populated 1\nfrozen 0\n");
	put(rfd, rel(SCOPE "/cgroup.procs"), "");
	put(rfd, rel(SCOPE "/container/cgroup.procs"), "101\n102\n");
	CHECK(sd_event_new(&e) >= 0);
	CHECK_EQ_INT(containers_new(e, root, rfd, sfd, on_decide, NULL, &c), 0);

	/* bad requests */
	CHECK_EQ_INT(containers_protect(c, &p.daemon, "/", "yes", &l, &summary, &why), -EINVAL);
	CHECK_EQ_INT(containers_protect(c, &p.daemon, "/a/../b", "yes", &l, &summary, &why), -EINVAL);
	CHECK_EQ_INT(containers_protect(c, &p.daemon, SCOPE "/container", "lots", &l, &summary, &why), -EINVAL);
	CHECK_EQ_INT(containers_protect(c, &p.daemon, "/machine.slice/gone.scope", "yes", &l, &summary, &why), -ESRCH);
	free(summary);
	summary = NULL;
	CHECK_EQ_INT(containers_count(c), 0);

	/* the container's process's cgroup: the scope is what is kept */
	CHECK_EQ_INT(containers_protect(c, &p.daemon, SCOPE "/container", "64M", &l, &summary, &why), 1);
	CHECK(summary && strstr(summary, "ExecProtectLimit=67108864"));
	free(summary);
	summary = NULL;
	CHECK_EQ_INT(containers_count(c), 1);
	CHECK_EQ_INT(n_decided, 2);
	CHECK(decided[0] + decided[1] == 203);
	ce = containers_lookup(c, &p.daemon, SCOPE "/container/deeper");
	CHECK(ce != NULL);
	if (ce) {
		CHECK_STREQ(ce->cgroup, SCOPE);
		CHECK_EQ_INT(ce->settings.protect, 1);
		CHECK(strstr(ce->source, "io.execguard.protect=64M") != NULL);
	}
	CHECK(!containers_lookup(c, &p.daemon, "/machine.slice"));
	CHECK(!containers_lookup(c, &p.daemon, "/machine.slice/libpod-other.scope"));
	CHECK(containers_policy_input(c, &p.daemon, SCOPE "/container", &in));
	CHECK_STREQ(in.unit_section_kind, "annotation");
	{
		struct policy_decision d;

		in.cgroup = SCOPE "/container";
		policy_decide(&p, &in, &d);
		CHECK(d.protect);
		CHECK_STREQ(d.protect_kind, "annotation");
		CHECK(d.settings.exec_protect_limit == 64ULL << 20);
	}
	/* a reload with ContainerAnnotations=no: the lookup follows it */
	CHECK_EQ_INT(parse(&p, "[Daemon]\nContainerAnnotations=no\n"), 0);
	ce = containers_lookup(c, &p.daemon, SCOPE "/container");
	CHECK(ce && ce->settings.protect == 0);
	p.daemon.container_annotations = 1;

	/* recorded: a new table (a restart) has it back */
	snprintf(cmd, sizeof(cmd), "grep -q '^cgroup=%s$' %s/containers/c-*", SCOPE, state);
	CHECK_EQ_INT(system(cmd), 0);
	containers_free(c);
	CHECK_EQ_INT(containers_new(e, root, rfd, sfd, on_decide, NULL, &c), 0);
	CHECK_EQ_INT(containers_load(c, &p.daemon), 1);
	containers_foreach(c, count, &n);
	CHECK_EQ_INT(n, 1);
	ce = containers_lookup(c, &p.daemon, SCOPE);
	CHECK(ce && streq(ce->name, "web") && streq(ce->request, "64M"));

	/* a record of a container whose cgroup is gone: dropped at load */
	containers_free(c);
	{
		int fd = openat(sfd, "containers/c-0000000000000001", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		const char *rec = "cgroup=/machine.slice/gone.scope\nrequest=yes\n";

		CHECK(fd >= 0 && write(fd, rec, strlen(rec)) == (ssize_t)strlen(rec));
		close(fd);
	}
	CHECK_EQ_INT(containers_new(e, root, rfd, sfd, on_decide, NULL, &c), 0);
	CHECK_EQ_INT(containers_load(c, &p.daemon), 1);
	CHECK(faccessat(sfd, "containers/c-0000000000000001", F_OK, 0) < 0);

	/* the cgroup empties: forgotten, record removed */
	put(rfd, rel(SCOPE "/cgroup.events"), "populated 0\nfrozen 0\n");
	run_loop_once(e);
	CHECK_EQ_INT(containers_count(c), 0);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls %s/containers)\"", state);
	CHECK_EQ_INT(system(cmd), 0);

	/* asking "no" for a kept container forgets it */
	put(rfd, rel(SCOPE "/cgroup.events"), "populated 1\n");
	CHECK_EQ_INT(containers_protect(c, &p.daemon, SCOPE, "yes", &l, &summary, &why), 1);
	free(summary);
	CHECK_EQ_INT(containers_protect(c, &p.daemon, SCOPE, "no", &l, &summary, &why), 0);
	CHECK(summary && strstr(summary, "not protected"));
	free(summary);
	CHECK_EQ_INT(containers_count(c), 0);

	containers_free(c);
	sd_event_unref(e);
	close(rfd);
	close(sfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", root, state);
	CHECK_EQ_INT(system(cmd), 0);
	policy_done(&p);
}

TEST_MAIN(test_request, test_record, test_table)
