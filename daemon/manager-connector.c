/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager's side of the proc connector: the socket, its watch, the
 * ExecBatchMSec batches, overflows (a rescan follows), and a new socket
 * after an error. cnproc.c speaks the protocol. */
#include "cnproc.h"
#include "manager-connector.h"
#include "manager-decide.h"

static int on_connector(sd_event_source *s, int fd, uint32_t revents, void *userdata);

int connector_open(struct manager *m)
{
	_cleanup_close_ int fd = -1;
	const char *ns = cnproc_namespace_refused_self();
	int r;

	if (ns)
		return log_event_errno(LOG_ERR, SYNTHETIC_ERRNO(EOPNOTSUPP), MID_CONNECTOR_FAILED, NULL,
				       "execguardd runs in a %s namespace that is not the initial one: the kernel sends "
				       "proc connector events to no listener there, and every exec would be missed; run it "
				       "in the host's PID and user namespaces (or with Backend=kernel and no MatchExe= rule: "
				       "cgroups are then decided as a whole and no connector is needed)",
				       ns);
	fd = cnproc_open(m->args.receive_buffer ?: m->policy.daemon.receive_buffer);
	if (fd < 0)
		return log_event_errno(LOG_ERR, fd, MID_CONNECTOR_FAILED, NULL, "cannot open the proc connector: %m%s",
				       fd == -EPROTONOSUPPORT ? " (kernel without CONFIG_PROC_EVENTS)" : "");
	r = cnproc_subscribe(fd, m->cn_filtered, m->pin_by_proc_dir);
	if (r < 0)
		return log_event_errno(LOG_ERR, r, MID_CONNECTOR_FAILED, NULL, "cannot subscribe to the proc connector: %m%s",
				       r == -EPERM ? " (needs CAP_NET_ADMIN)" : "");
	r = sd_event_add_io(m->event, &m->cn_source, fd, EPOLLIN, on_connector, m);
	if (r < 0)
		return log_event_errno(LOG_ERR, r, MID_CONNECTOR_FAILED, NULL, "cannot watch the proc connector: %m");
	(void)sd_event_source_set_description(m->cn_source, "proc-connector");
	m->cn_fd = TAKE_FD(fd);
	return 0;
}

int connector_set(struct manager *m, bool on)
{
	int r;

	if (on == (m->cn_fd >= 0 || m->cn_reopen_failures > 0))
		return 0;
	if (!on) {
		m->cn_source = sd_event_source_disable_unref(m->cn_source);
		closep(&m->cn_fd);
		m->cn_fd = -1;
		(void)event_timer_set(m->cn_retry_timer, USEC_OFF);
		(void)event_timer_set(m->cn_batch_timer, USEC_OFF);
		log_info("not listening to the proc connector any more: no rule names executables (MatchExe=) and "
			 "backend %s protects cgroups as a whole", m->backend_ops->name);
		return 0;
	}
	r = connector_open(m);
	if (r < 0)
		return r;
	log_info("listening to the proc connector (%s)",
		 !m->cn_filtered    ? "all events, filtered here: kernel older than 6.6" :
		 m->pin_by_proc_dir ? "exec and exit events only, kernel-side filter" :
				      "exec events only, kernel-side filter; exits from pidfds");
	return 0;
}

/* After a socket error nothing says which events were lost: a new
 * socket, then a rescan once it listens. Retried every second while the
 * kernel refuses, reported once. */
static void connector_reopen(struct manager *m)
{
	m->cn_source = sd_event_source_disable_unref(m->cn_source);
	closep(&m->cn_fd);
	m->status_dirty = true;
	if (connector_open(m) < 0) {
		if (m->cn_reopen_failures++ == 0)
			log_event(LOG_ERR, MID_CONNECTOR_RETRYING, NULL, "proc connector unavailable: retrying every second; processes started "
				  "meanwhile are found by the rescan after it is back");
		(void)event_timer_set(m->cn_retry_timer, event_now(m->event) + 1000000);
		return;
	}
	if (m->cn_reopen_failures)
		log_event(LOG_NOTICE, MID_CONNECTOR_BACK, NULL, "proc connector back after %d failed attempt%s", m->cn_reopen_failures,
			   m->cn_reopen_failures == 1 ? "" : "s");
	m->cn_reopen_failures = 0;
	m->overflow_pending = false;
	m->n_connector_reopens++;
	schedule_full_rescan(m);
}

int on_connector_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	connector_reopen(userdata);
	return 0;
}

/* The number of datagrams taken, or -1 when the socket was replaced. */
static int connector_drain(struct manager *m, int fd)
{
	struct cnproc_event ev[MAX_EVENTS_PER_DATAGRAM];
	int round;

	/* Drain what is queued, but let other sources run between bursts. */
	for (round = 0; round < 1024; round++) {
		ssize_t n = cnproc_receive(fd, m->rx, sizeof(m->rx));
		int k;

		if (n == -EAGAIN || n == -EINTR) {
			/* Netlink reports ENOBUFS once per congestion and drops
			 * silently until the queue has run empty, which is now:
			 * only a rescan from here on sees every lost process. */
			if (n == -EAGAIN && m->overflow_pending) {
				m->overflow_pending = false;
				schedule_full_rescan(m);
			}
			return round;
		}
		if (n == -ENOBUFS) {
			if (m->n_overflows++ == 0 || m->n_overflows % 100 == 0)
				log_event(LOG_WARNING, MID_OVERFLOW, NULL,
					  "proc connector overflow: events lost (%llu times so far); rescanning /proc",
					  (unsigned long long)m->n_overflows);
			m->overflow_pending = true;
			m->status_dirty = true;
			continue;
		}
		if (n == -EPERM)
			continue; /* not from the kernel: ignore */
		if (n < 0) {
			log_event_errno(LOG_ERR, (int)n, MID_CONNECTOR_FAILED, NULL, "proc connector receive failed: %m; opening a new socket and rescanning");
			connector_reopen(m);
			return -1;
		}
		m->n_datagrams++;
		k = cnproc_decode(m->rx, (size_t)n, ev, ELEMENTSOF(ev));
		if (k < 0) {
			log_debug_errno(k, "malformed proc connector datagram: %m");
			continue;
		}
		manager_process_events(m, ev, (size_t)k);
	}
	return round;
}

static int arm_batch_timer(struct manager *m)
{
	uint64_t usec = (uint64_t)m->policy.daemon.exec_batch_ms * 1000;

	if (!usec)
		return -EINVAL;
	return event_timer_set(m->cn_batch_timer, event_now(m->event) + usec);
}

/* While events keep coming, the socket stays unwatched and this timer
 * takes them every ExecBatchMSec: one wake-up per batch. A batch that
 * finds nothing goes back to watching the socket. */
int on_connector_batch(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	int n;

	(void)s;
	(void)usec;
	if (!m->cn_source)
		return 0; /* reopening: the rescan after it sees everything */
	m->n_exec_batches++;
	n = connector_drain(m, m->cn_fd);
	if (n < 0)
		return 0; /* a new socket, watched */
	if (n == 0 || arm_batch_timer(m) < 0)
		(void)event_source_enable(m->cn_source, SD_EVENT_ON);
	return 0;
}

/* A storm: this wake-up came within ExecBatchMSec of the last one, or
 * the one before found more than one datagram waiting. */
static bool connector_storm(struct manager *m, uint64_t now, int taken)
{
	uint64_t window = (uint64_t)m->policy.daemon.exec_batch_ms * 1000;

	if (!window)
		return false;
	if (taken > 1)
		return true;
	return m->cn_last_wakeup && now - m->cn_last_wakeup < window;
}

/* The socket unwatched, the batch timer armed: false if not both. */
static bool connector_gather(struct manager *m, sd_event_source *s)
{
	return arm_batch_timer(m) >= 0 && event_source_enable(s, SD_EVENT_OFF) >= 0;
}

/* Execs that come one at a time are looked at on the socket's wake-up:
 * a batch there would cost a timer, a second wake-up and a re-watch for
 * each. In a storm (events closer than ExecBatchMSec) the socket is
 * unwatched and the batch timer takes the events every ExecBatchMSec in
 * one go: fewer wake-ups, and a process that exited meanwhile costs one
 * failed open instead of a pin, a watch and a release. */
static int on_connector(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;
	uint64_t now = event_now(m->event);
	int taken;

	if (revents & (EPOLLERR | EPOLLHUP) && !(revents & EPOLLIN)) {
		log_event(LOG_ERR, MID_CONNECTOR_FAILED, NULL, "proc connector socket failed (poll events 0x%x); opening a new socket and rescanning",
			  revents);
		connector_reopen(m);
		return 0;
	}
	m->n_connector_wakeups++;
	if (connector_storm(m, now, 0) && connector_gather(m, s)) {
		m->cn_last_wakeup = now;
		return 0;
	}
	/* At once, or no timer: take the events now rather than lose them. */
	m->cn_last_wakeup = now;
	m->n_connector_at_once++;
	taken = connector_drain(m, fd);
	/* Several waiting: a burst has begun, gather what follows. */
	if (taken > 0 && connector_storm(m, now, taken))
		(void)connector_gather(m, s);
	return 0;
}
