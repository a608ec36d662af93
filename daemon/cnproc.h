/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The netlink proc connector: a pure decoder for its datagrams and a
 * thin socket wrapper that subscribes to exec and exit events. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum cnproc_type {
	CNPROC_EXEC,
	CNPROC_EXIT,
	CNPROC_ACK,
	CNPROC_OTHER,
};

struct cnproc_event {
	enum cnproc_type type;
	pid_t pid;  /* thread id */
	pid_t tgid; /* process id */
	uint64_t timestamp_ns; /* CLOCK_MONOTONIC */
	uint32_t err;	       /* for CNPROC_ACK */
};

/* Decode one received datagram, which may hold several netlink messages.
 * Fills up to max events; returns how many, or -EBADMSG for a malformed
 * datagram, -EPROTO for a message that is not from the proc connector. */
int cnproc_decode(const void *buf, size_t len, struct cnproc_event *out, size_t max);

/* Whether "6.12.3-foo" is at least major.minor. */
bool kernel_release_at_least(const char *release, unsigned major, unsigned minor);

/* The kernel sends proc connector events only to listeners in the
 * initial PID and user namespaces, and ignores the subscription of any
 * other silently. NULL when pid_ns and user_ns (the inode numbers of
 * /proc/self/ns/pid and .../user) are the initial ones, else which one
 * is not: "PID", "user". */
const char *cnproc_namespace_refused(uint64_t pid_ns, uint64_t user_ns);
/* The same for this process (NULL when /proc/self/ns cannot tell). */
const char *cnproc_namespace_refused_self(void);

/* Open, bind and size the socket (SO_RCVBUFFORCE, else SO_RCVBUF). */
int cnproc_open(int rcvbuf);

/* Subscribe. With filter (Linux 6.6+) only exec events, and exit events
 * if asked for, are sent to this socket. */
int cnproc_subscribe(int fd, bool filter, bool exits);

/* Receive one datagram from the kernel. -ENOBUFS: events were lost;
 * -EAGAIN: nothing queued; -EPERM: a datagram not sent by the kernel
 * (dropped). */
ssize_t cnproc_receive(int fd, void *buf, size_t size);
