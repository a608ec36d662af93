/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "container-names.h"
#include "log.h"
#include "util.h"

#define RATE_INTERVAL_NS (5ULL * 1000000000ULL)
#define RATE_BURST 500
#define JOURNAL_SOCKET "/run/systemd/journal/socket"

static bool use_journal, stderr_fields;
static int max_priority = LOG_INFO;
static unsigned long long rate_start;
static unsigned rate_count, rate_dropped;

/* systemd sets JOURNAL_STREAM to the device:inode of the stream it
 * connected to stderr; only then is stderr the journal. */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_setup(enum log_target target, int maxp)
{
	use_journal = target == LOG_TARGET_JOURNAL ||
		      (target == LOG_TARGET_AUTO && stderr_is_journal());
	stderr_fields = target == LOG_TARGET_STDERR_FIELDS;
	max_priority = maxp;
}

bool log_to_journal(void)
{
	return use_journal;
}

int log_max_priority(void)
{
	return max_priority;
}

static bool rate_limited(int priority)
{
	unsigned long long now;

	if (priority < LOG_INFO)
		return false;
	now = now_ns();
	if (now - rate_start > RATE_INTERVAL_NS) {
		if (rate_dropped) {
			unsigned d = rate_dropped;

			rate_dropped = 0;
			rate_start = now;
			rate_count = 0;
			log_event(LOG_NOTICE, NULL, NULL,
				  "%u informational messages were suppressed (more than %u in 5 s)",
				  d, RATE_BURST);
		}
		rate_start = now;
		rate_count = 0;
	}
	if (++rate_count > RATE_BURST) {
		rate_dropped++;
		return true;
	}
	return false;
}

#define MAX_FIELDS 12
#define MAX_EXTRA_FIELDS 8

static void send_journal(int priority, int error, const char *message_id, const struct log_fields *f,
			 const char *msg)
{
	char buf[MAX_FIELDS][96];
	struct iovec iov[MAX_FIELDS + 8 + MAX_EXTRA_FIELDS];
	size_t n = 0, nb = 0;
	_cleanup_free_ char *m = NULL, *unit = NULL, *cgroup = NULL, *exe = NULL, *policy = NULL, *extra = NULL;
	struct container_ref ref;

#define ADD_FIXED(...)                                                         \
	do {                                                                  \
		int _l = snprintf(buf[nb], sizeof(buf[nb]), __VA_ARGS__);     \
		iov[n++] = (struct iovec){ buf[nb], (size_t)_l < sizeof(buf[nb]) ? (size_t)_l : sizeof(buf[nb]) - 1 }; \
		nb++;                                                         \
	} while (0)
#define ADD_STR(var, name, value)                                                  \
	do {                                                                      \
		if ((value) && asprintf(&(var), name "=%s", (value)) >= 0)        \
			iov[n++] = (struct iovec){ (var), strlen(var) };          \
	} while (0)

	if (asprintf(&m, "MESSAGE=%s", msg) < 0)
		return;
	iov[n++] = (struct iovec){ m, strlen(m) };
	ADD_FIXED("PRIORITY=%d", priority);
	ADD_FIXED("SYSLOG_IDENTIFIER=execguardd");
	if (message_id)
		ADD_FIXED("MESSAGE_ID=%s", message_id);
	if (error)
		ADD_FIXED("ERRNO=%d", error);
	if (f) {
		ADD_STR(unit, "EXECGUARD_UNIT", f->unit);
		ADD_STR(cgroup, "EXECGUARD_CGROUP", f->cgroup);
		/* A container's or pod's cgroup names them (container-names.h). */
		if (f->cgroup && container_ref_parse(f->cgroup, &ref)) {
			if (ref.runtime != CONTAINER_RUNTIME_NONE) {
				ADD_FIXED("EXECGUARD_CONTAINER_RUNTIME=%s", container_runtime_to_string(ref.runtime));
				ADD_FIXED("EXECGUARD_CONTAINER_ID=%s", ref.id);
			}
			if (ref.pod != POD_NONE)
				ADD_FIXED("EXECGUARD_POD_UID=%s", ref.pod_uid);
		}
		ADD_STR(exe, "EXECGUARD_EXE", f->exe);
		if (f->backend)
			ADD_FIXED("EXECGUARD_BACKEND=%s", f->backend);
		ADD_STR(policy, "EXECGUARD_POLICY", f->policy);
		if (f->pid > 0)
			ADD_FIXED("EXECGUARD_PID=%d", (int)f->pid);
		if (f->bytes >= 0)
			ADD_FIXED("EXECGUARD_BYTES=%lld", f->bytes);
		if (f->latency_us >= 0)
			ADD_FIXED("EXECGUARD_LATENCY_USEC=%lld", f->latency_us);
		if (f->extra && (extra = strdup(f->extra))) {
			char *save = NULL;
			size_t k = 0;

			for (char *t = strtok_r(extra, " ", &save); t && k < MAX_EXTRA_FIELDS;
			     t = strtok_r(NULL, " ", &save), k++)
				iov[n++] = (struct iovec){ t, strlen(t) };
		}
	}
	/* sd_journal_sendv() drops messages silently when journald's
	 * socket is not there: keep them on stderr then. */
	if (access(JOURNAL_SOCKET, F_OK) < 0 || sd_journal_sendv(iov, (int)n) < 0)
		fprintf(stderr, "execguardd: %s\n", msg);
#undef ADD_FIXED
#undef ADD_STR
}

/* s with control characters as \xNN: a value with a newline must not
 * break the line it is on. */
static const char *escape_controls(char *tmp, size_t size, const char *s)
{
	size_t o = 0;

	for (; *s && o + 5 < size; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			o += (size_t)snprintf(tmp + o, size - o, "\\x%02x", (unsigned char)*s);
		else
			tmp[o++] = *s;
	}
	tmp[o] = '\0';
	return tmp;
}

/* " [MESSAGE_ID=... EXECGUARD_...=... ERRNO=...]", as the journal gets
 * them; values with spaces are quoted the shell's way, control
 * characters written \xNN. */
static void format_fields(char *buf, size_t size, int error, const char *message_id,
			  const struct log_fields *f)
{
	char tmp[4096];
	size_t o = 0;

#define FIELD(...)                                                                           \
	do {                                                                                 \
		if (o < size)                                                                \
			o += (size_t)snprintf(buf + o, size - o, "%s", o ? " " : " [");     \
		if (o < size)                                                                \
			o += (size_t)snprintf(buf + o, size - o, __VA_ARGS__);               \
	} while (0)
	if (message_id)
		FIELD("MESSAGE_ID=%s", message_id);
	if (error)
		FIELD("ERRNO=%d", error);
	if (f) {
		if (f->unit)
			FIELD("EXECGUARD_UNIT='%s'", escape_controls(tmp, sizeof(tmp), f->unit));
		if (f->cgroup) {
			struct container_ref ref;

			FIELD("EXECGUARD_CGROUP='%s'", escape_controls(tmp, sizeof(tmp), f->cgroup));
			if (container_ref_parse(f->cgroup, &ref) && ref.runtime != CONTAINER_RUNTIME_NONE)
				FIELD("EXECGUARD_CONTAINER_RUNTIME=%s EXECGUARD_CONTAINER_ID=%s",
				      container_runtime_to_string(ref.runtime), ref.id);
			if (ref.pod != POD_NONE)
				FIELD("EXECGUARD_POD_UID=%s", ref.pod_uid);
		}
		if (f->exe)
			FIELD("EXECGUARD_EXE='%s'", escape_controls(tmp, sizeof(tmp), f->exe));
		if (f->backend)
			FIELD("EXECGUARD_BACKEND=%s", f->backend);
		if (f->policy)
			FIELD("EXECGUARD_POLICY='%s'", escape_controls(tmp, sizeof(tmp), f->policy));
		if (f->pid > 0)
			FIELD("EXECGUARD_PID=%d", (int)f->pid);
		if (f->bytes >= 0)
			FIELD("EXECGUARD_BYTES=%lld", f->bytes);
		if (f->latency_us >= 0)
			FIELD("EXECGUARD_LATENCY_USEC=%lld", f->latency_us);
		if (f->extra)
			FIELD("%s", escape_controls(tmp, sizeof(tmp), f->extra));
	}
#undef FIELD
	if (o && o < size - 1) {
		buf[o++] = ']';
		buf[o] = '\0';
	} else if (o) {
		buf[size - 2] = ']';
		buf[size - 1] = '\0';
	}
}

/* error: 0, or an errno (either sign, SYNTHETIC_ERRNO_FLAG allowed):
 * errno is set to it while the message is formatted (%m). */
static void log_eventv(int priority, int error, const char *message_id, const struct log_fields *f,
		       const char *fmt, va_list ap)
{
	char msg[2048];
	int saved = errno, e = error < 0 ? -error : error;

	if (priority > max_priority || rate_limited(priority)) {
		errno = saved;
		return;
	}
	errno = e ? e & ~SYNTHETIC_ERRNO_FLAG : saved;
	vsnprintf(msg, sizeof(msg), fmt, ap);

	if (use_journal) {
		send_journal(priority, e && !(e & SYNTHETIC_ERRNO_FLAG) ? e : 0, message_id, f, msg);
	} else {
		static const char *const level[] = { "emerg", "alert", "crit", "error",
						     "warning", "notice", "info", "debug" };

		char fields[8192] = "";

		if (stderr_fields)
			format_fields(fields, sizeof(fields), e && !(e & SYNTHETIC_ERRNO_FLAG) ? e : 0, message_id,
				      f);
		if (priority <= LOG_WARNING)
			fprintf(stderr, "execguardd: %s: %s%s\n", level[priority & 7], msg, fields);
		else
			fprintf(stderr, "execguardd: %s%s\n", msg, fields);
	}
	errno = saved;
}

void log_event(int priority, const char *message_id, const struct log_fields *f,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_eventv(priority, 0, message_id, f, fmt, ap);
	va_end(ap);
}

int log_event_errno(int priority, int error, const char *message_id, const struct log_fields *f,
		    const char *fmt, ...)
{
	int e = (error < 0 ? -error : error) & ~SYNTHETIC_ERRNO_FLAG;
	va_list ap;

	va_start(ap, fmt);
	log_eventv(priority, error, message_id, f, fmt, ap);
	va_end(ap);
	return -e;
}
