/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the manager counts and how it reports it: exec-to-decision
 * latency (a histogram), the stats line (SIGUSR1, at exit), STATUS= for
 * systemd, and the figures the D-Bus interface reads. */
#include <stdio.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>

#include "manager-push.h"
#include "manager-stats.h"
#include "manager-view.h"

void record_latency(struct manager *m, uint64_t exec_ts)
{
	uint64_t now = now_ns();

	m->last_latency_us = now > exec_ts ? (now - exec_ts) / 1000 : 0;
	latency_add(&m->latency, m->last_latency_us);
}

static uint32_t clamp_u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void log_stats(struct manager *m, const char *when)
{
	struct rusage ru;
	uint32_t push_p50, push_max;
	unsigned long long started = 0, stopped = 0;
	size_t push_n;
	double cpu_us;

	getrusage(RUSAGE_SELF, &ru);
	cpu_us = (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
		 (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
	push_latency(m, &push_p50, &push_max, &push_n);
	if (m->uw)
		unit_events_counts(m->uw, &started, &stopped);
	log_event(LOG_NOTICE, MID_STATS, NULL, "stats (%s): exec events %llu, exit events %llu, decisions %llu, protect decisions %llu, later looks %llu, gone before look %llu, overflows %llu, full rescans %llu, backend errors %llu, exec-to-decision p50 %llu us p99 %llu us max %llu us over %llu, cpu %.0f us, maxrss %ld KiB, protected now %zu, connector wake-ups %llu, taken at once %llu, exec batches %llu, waits for unit sections %llu, decided by cgroup %llu, cgroups protected whole %zu, cgroup events %llu, cgroup-to-protection p50 %u us max %u us over %zu, units started %llu stopped %llu (systemd)",
		   when, (unsigned long long)m->n_exec, (unsigned long long)m->n_exit,
		   (unsigned long long)m->n_decisions, (unsigned long long)m->n_protect_decisions,
		   (unsigned long long)m->n_looks, (unsigned long long)m->n_gone_early,
		   (unsigned long long)m->n_overflows, (unsigned long long)m->n_full_rescans,
		   (unsigned long long)m->n_backend_errors, (unsigned long long)latency_quantile(&m->latency, 0.5),
		   (unsigned long long)latency_quantile(&m->latency, 0.99), (unsigned long long)m->latency.max_us,
		   (unsigned long long)m->latency.count,
		   cpu_us, ru.ru_maxrss, m->procs.n_items, (unsigned long long)m->n_connector_wakeups,
		   (unsigned long long)m->n_connector_at_once,
		   (unsigned long long)m->n_exec_batches, (unsigned long long)m->n_unit_waits,
		   (unsigned long long)m->n_class_hits, m->n_pushed_now, (unsigned long long)m->n_cgroup_events,
		   push_p50, push_max, push_n, started, stopped);
}

void update_status(struct manager *m, const char *prefix)
{
	char backend[256];

	m->backend_ops->describe(m->backend, backend, sizeof(backend));
	if (!m->push)
		sd_notifyf(false, "STATUS=%s%sbackend %s%s: %zu processes protected; %s; %llu execs seen, %llu overflows",
			   strempty(prefix), prefix ? " " : "", m->backend_ops->name,
			   m->args.dry_run ? " (dry run)" : "", m->procs.n_items, backend,
			   (unsigned long long)m->n_exec, (unsigned long long)m->n_overflows);
	else
		sd_notifyf(false, "STATUS=%s%sbackend %s%s: %zu cgroups protected whole, %zu processes protected; %s; %llu execs seen%s",
			   strempty(prefix), prefix ? " " : "", m->backend_ops->name,
			   m->args.dry_run ? " (dry run)" : "", m->n_pushed_now, m->procs.n_items, backend,
			   (unsigned long long)m->n_exec, m->cn_fd >= 0 ? "" : " (no proc connector needed)");
	m->status_dirty = false;
}

int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	if (m->status_dirty)
		update_status(m, NULL);
	return event_timer_set(s, usec + STATUS_INTERVAL_USEC);
}

void manager_get_stats(struct manager *m, struct manager_stats *ret)
{
	*ret = (struct manager_stats){
		.backend = m->backend_ops ? m->backend_ops->name : "none",
		.dry_run = m->args.dry_run,
		.processes_protected = m->procs.n_items,
		.cgroups_protected = m->n_pushed_now,
		.exec_events = m->n_exec,
		.exit_events = m->n_exit,
		.decisions = m->n_decisions,
		.overflows = m->n_overflows,
		.full_rescans = m->n_full_rescans,
		.backend_errors = m->n_backend_errors,
	};
	/* Estimates from the histogram's buckets: a property read costs the
	 * same whatever the number of decisions. */
	ret->latency = &m->latency;
	ret->latency_p50_us = clamp_u32(latency_quantile(&m->latency, 0.5));
	ret->latency_p99_us = clamp_u32(latency_quantile(&m->latency, 0.99));
	ret->latency_max_us = clamp_u32(m->latency.max_us);
}

int on_stats(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	(void)s;
	(void)si;
	log_stats(m, "on request");
	if (m->backend_ops->log_stats)
		m->backend_ops->log_stats(m->backend);
	return 0;
}

