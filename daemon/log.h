/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Structured logging: journald with a MESSAGE_ID per kind of event and
 * EXECGUARD_* fields, or readable lines on stderr. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <syslog.h>

#include "message-ids.h"


enum log_target {
	LOG_TARGET_AUTO,
	LOG_TARGET_JOURNAL,
	LOG_TARGET_STDERR,
	/* stderr, each line followed by its structured fields:
	 * " [MESSAGE_ID=... EXECGUARD_PID=... ERRNO=...]" (tests, scripts). */
	LOG_TARGET_STDERR_FIELDS,
};

struct log_fields {
	const char *unit;
	const char *cgroup;
	const char *exe;
	const char *backend;
	const char *policy;	 /* the rule or unit file that decided */
	pid_t pid;		 /* 0: none */
	long long bytes;	 /* <0: none */
	long long latency_us;	 /* <0: none */
	/* More fields, "EXECGUARD_A=1 EXECGUARD_B=2": space-separated, values
	 * without spaces (Protect=auto's evidence); NULL: none. */
	const char *extra;
};

#define LOG_FIELDS_INIT { .bytes = -1, .latency_us = -1 }

void log_setup(enum log_target target, int max_priority);
bool log_to_journal(void);
int log_max_priority(void);

/* A structured event. Info and debug events are rate limited so that an
 * exec storm cannot flood the journal; the number dropped is reported. */
void log_event(int priority, const char *message_id, const struct log_fields *f,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define log_error(...) log_event(LOG_ERR, NULL, NULL, __VA_ARGS__)
#define log_warning(...) log_event(LOG_WARNING, NULL, NULL, __VA_ARGS__)
#define log_notice(...) log_event(LOG_NOTICE, NULL, NULL, __VA_ARGS__)
#define log_info(...) log_event(LOG_INFO, NULL, NULL, __VA_ARGS__)
#define log_debug(...) log_event(LOG_DEBUG, NULL, NULL, __VA_ARGS__)

/* As systemd's: log with errno set to the error, so that %m names it, and
 * ERRNO= in the journal entry; returns -|error|, to be returned in turn.
 * SYNTHETIC_ERRNO(E): the error is ours to report, not a failed call's
 * (no ERRNO= field). */
#define SYNTHETIC_ERRNO_FLAG (1 << 30)
#define SYNTHETIC_ERRNO(e) (SYNTHETIC_ERRNO_FLAG | (e))
int log_event_errno(int priority, int error, const char *message_id, const struct log_fields *f,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define log_error_errno(error, ...) log_event_errno(LOG_ERR, (error), NULL, NULL, __VA_ARGS__)
#define log_warning_errno(error, ...) log_event_errno(LOG_WARNING, (error), NULL, NULL, __VA_ARGS__)
#define log_notice_errno(error, ...) log_event_errno(LOG_NOTICE, (error), NULL, NULL, __VA_ARGS__)
#define log_info_errno(error, ...) log_event_errno(LOG_INFO, (error), NULL, NULL, __VA_ARGS__)
#define log_debug_errno(error, ...) log_event_errno(LOG_DEBUG, (error), NULL, NULL, __VA_ARGS__)
