/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguard-oci-hook: an OCI hook (oci-hooks(5)) for the createRuntime
 * stage of containers annotated io.execguard.protect. It reads the
 * container's state on stdin, finds its cgroup through its process, and
 * asks execguardd (ProtectCgroup on the system bus) to protect it; the
 * daemon decides. A container start never fails because of it unless
 * --required says so: without the daemon it logs and exits 0. */
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-journal.h>

#include "bus-names.h"
#include "cgroup.h"
#include "container-names.h"
#include "message-ids.h"
#include "oci-state.h"
#include "util.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static bool arg_required;
static uint64_t arg_timeout_usec = 2 * 1000000ULL;
static const char *arg_proc = "/proc";

static void help(void)
{
	printf("Usage: execguard-oci-hook [OPTIONS] < STATE\n"
	       "An OCI hook (createRuntime): asks execguardd to protect the container whose\n"
	       "state (runtime-spec JSON) is on stdin, as its io.execguard.protect annotation\n"
	       "asks (yes, no, max or a size). The daemon decides; see execguard-oci-hook(8).\n\n"
	       "  -r --required       exit 1 (failing the container's start) when the daemon\n"
	       "                      cannot be asked or refuses the request; default: log, exit 0\n"
	       "  -t --timeout=MSEC   wait at most this long for the daemon (default 2000)\n"
	       "     --proc=DIR       /proc to read the container's cgroup from (tests)\n"
	       "  -h --help           this text\n"
	       "     --version        the version\n");
}

static int parse_argv(int argc, char **argv)
{
	enum { ARG_PROC = 0x100, ARG_VERSION };
	static const struct option options[] = {
		{ "required", no_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "proc", required_argument, NULL, ARG_PROC },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "rt:h", options, NULL)) >= 0) {
		switch (c) {
		case 'r':
			arg_required = true;
			break;
		case 't': {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v == 0 || v > 600000) {
				fprintf(stderr, "execguard-oci-hook: --timeout=%s: expected milliseconds from 1 to 600000\n",
					optarg);
				return -EINVAL;
			}
			arg_timeout_usec = v * 1000ULL;
			break;
		}
		case ARG_PROC:
			arg_proc = optarg;
			break;
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("execguard-oci-hook %s\n", PROJECT_VERSION);
			return 0;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "execguard-oci-hook: unexpected argument '%s' (the state comes on stdin)\n", argv[optind]);
		return -EINVAL;
	}
	return 1;
}

/* One line for the journal (MESSAGE_ID, the container's fields) or, where
 * there is no journald, stderr, which the runtime keeps in its log. */
static void _printf_(5, 6) say(int priority, const struct oci_state *s, const char *cgroup, const char *result,
			       const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg)
		return;
	if (access(JOURNAL_SOCKET, F_OK) < 0 ||
	    sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", priority, "MESSAGE_ID=%s", MID_OCI_HOOK,
			    "SYSLOG_IDENTIFIER=execguard-oci-hook", "EXECGUARD_RESULT=%s", result,
			    "EXECGUARD_CGROUP=%s", strempty(cgroup), "EXECGUARD_CONTAINER_ID=%s",
			    s && s->id ? s->id : "", "EXECGUARD_PROTECT_REQUEST=%s",
			    s && s->protect ? s->protect : "", NULL) < 0)
		fprintf(stderr, "execguard-oci-hook: %s\n", msg);
}

/* The cgroup2 path of the container's process. */
static int container_cgroup(pid_t pid, char **ret)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	size_t len;
	int r;

	if (asprintf(&path, "%s/%d/cgroup", arg_proc, (int)pid) < 0)
		return -ENOMEM;
	r = read_file_at(AT_FDCWD, path, 64 * 1024, &buf, &len);
	if (r < 0)
		return r;
	return cgroup_parse_proc_cgroup(buf, len, ret);
}

static int append_name(sd_bus_message *m, const char *key, const char *value)
{
	if (!value || !*value)
		return 0;
	return sd_bus_message_append(m, "{ss}", key, value);
}

/* ProtectCgroup: 1 protected, 0 not (the daemon's decision), <0 it could
 * not be asked (error names why). */
static int ask_daemon(const struct oci_state *s, const char *cgroup, char **ret_summary, sd_bus_error *error)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
	struct container_ref ref;
	const char *summary;
	int protect, r;

	container_ref_parse(cgroup, &ref);
	r = sd_bus_open_system(&bus);
	if (r < 0)
		return r;
	r = sd_bus_message_new_method_call(bus, &m, EXECGUARD_BUS_NAME, EXECGUARD_BUS_PATH,
					   EXECGUARD_BUS_CONTAINERS_INTERFACE, "ProtectCgroup");
	if (r >= 0)
		r = sd_bus_message_append(m, "ss", cgroup, s->protect);
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'a', "{ss}");
	if (r >= 0)
		r = append_name(m, "runtime", container_runtime_to_string(ref.runtime));
	if (r >= 0)
		r = append_name(m, "id", s->id);
	if (r >= 0)
		r = append_name(m, "name", s->container_name);
	if (r >= 0)
		r = append_name(m, "pod_uid", s->pod_uid);
	if (r >= 0)
		r = append_name(m, "pod_name", s->pod_name);
	if (r >= 0)
		r = append_name(m, "pod_namespace", s->pod_namespace);
	if (r >= 0)
		r = sd_bus_message_close_container(m);
	if (r < 0)
		return r;
	r = sd_bus_call(bus, m, arg_timeout_usec, error, &reply);
	if (r < 0)
		return r;
	r = sd_bus_message_read(reply, "bs", &protect, &summary);
	if (r < 0)
		return r;
	*ret_summary = strdup(summary);
	return protect ? 1 : 0;
}

static int run(void)
{
	_cleanup_(oci_state_done) struct oci_state s = { 0 };
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	_cleanup_free_ char *buf = NULL, *cgroup = NULL, *summary = NULL;
	const char *why = NULL;
	size_t len;
	int r;

	r = read_fd(STDIN_FILENO, OCI_STATE_MAX, &buf, &len);
	if (r < 0) {
		say(LOG_ERR, NULL, NULL, "bad-state", "cannot read the container's state on stdin: %s", STRERROR(r));
		return r;
	}
	r = oci_state_parse(buf, len, &s, &why);
	if (r < 0) {
		say(LOG_ERR, NULL, NULL, "bad-state", "the state on stdin is not usable: %s", why);
		return r;
	}
	/* hooks.d runs it only for annotated containers; anyone else asks nothing */
	if (!s.protect) {
		say(LOG_DEBUG, &s, NULL, "not-asked", "container %s has no %s annotation: nothing to ask", s.id,
		    OCI_ANNOTATION_PROTECT);
		return 0;
	}
	r = container_cgroup(s.pid, &cgroup);
	if (r < 0) {
		say(LOG_ERR, &s, NULL, "no-cgroup", "container %s: no cgroup2 path for its process %d: %s", s.id,
		    (int)s.pid, STRERROR(r));
		return r;
	}
	r = ask_daemon(&s, cgroup, &summary, &error);
	if (r < 0) {
		bool absent = sd_bus_error_has_name(&error, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
			      sd_bus_error_has_name(&error, SD_BUS_ERROR_NAME_HAS_NO_OWNER) || r == -ENOENT ||
			      r == -ECONNREFUSED;

		say(absent ? LOG_WARNING : LOG_ERR, &s, cgroup, absent ? "no-daemon" : "failed",
		    "container %s (%s) not protected: %s%s%s", s.id, cgroup,
		    absent ? "execguardd is not running (or no system bus)" : "execguardd refused or failed: ",
		    absent ? "" : error.message ?: STRERROR(r), absent && !arg_required ? "; the container starts anyway" : "");
		return r;
	}
	say(LOG_INFO, &s, cgroup, r ? "protected" : "not-protected", "%s", summary ?: "asked");
	return 0;
}

int main(int argc, char **argv)
{
	int r = parse_argv(argc, argv);

	if (r <= 0)
		return r < 0 ? 2 : 0;
	r = run();
	/* The container's start is the runtime's business unless told otherwise. */
	return r < 0 && arg_required ? 1 : 0;
}
