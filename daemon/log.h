/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Structured logging: journald with a MESSAGE_ID per kind of event and
 * EXECGUARD_* fields, or readable lines on stderr. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <syslog.h>

/* Message ids; the catalog (catalog/execguard.catalog) explains each. */
#define MID_STARTED "6f1d3a0c9b5e4d2a8c7b1e0f3a2d4c5b"
#define MID_STOPPING "0e8c2b4a6d1f4e3b9a5c7d8e1f2a3b4c"
#define MID_POLICY_LOADED "a3c5e7f9b1d24f6a8c0e2b4d6f8a1c3e"
#define MID_POLICY_REJECTED "d4e6f8a0c2b44d6e8f0a2c4e6b8d0f2a"
#define MID_BACKEND "5b7d9f1a3c5e4b7d9f1a3c5e7b9d1f3a"
#define MID_PROCESS_PROTECTED "8e0a2c4e6a8c4e0a2c4e6a8c0e2a4c6e"
#define MID_CGROUP_PROTECTED "1c3e5a7c9e1b4c3e5a7c9e1b3d5f7a9c"
#define MID_CGROUP_RELEASED "2d4f6b8d0f2c4d4f6b8d0f2c4e6a8b0d"
#define MID_CGROUP_FAILED "3e5a7c9e1a3d4e5a7c9e1a3d5f7b9c1e"
#define MID_OVERFLOW "4f6b8d0f2b4e4f6b8d0f2b4e6a8c0d2f"

enum log_target {
	LOG_TARGET_AUTO,
	LOG_TARGET_JOURNAL,
	LOG_TARGET_STDERR,
};

struct log_fields {
	const char *unit;
	const char *cgroup;
	const char *exe;
	const char *backend;
	pid_t pid;		 /* 0: none */
	long long bytes;	 /* <0: none */
	long long latency_us;	 /* <0: none */
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

/* log_error() then return r (a negative errno). */
#define log_error_errno(r, ...) ({ log_error(__VA_ARGS__); (r); })
